"""Shared test configuration: a reproducible hypothesis profile, a numba cache folder per
kernel source state, and the ``slow`` marker of the quick tier (``pytest -m "not slow"``).

Profiles: "ci" (default; derandomized, no deadline, modest example counts) and "dev" (random,
more examples).  Pick one with HYPOTHESIS_PROFILE=dev.
"""

import hashlib
import importlib.util
import os
import pathlib
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))  # `import oracle`, `import seed000`, `import helpers`
# an installed fasttie wins; otherwise the source tree next to tests/
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _kernel_cache_dir():
    """A numba cache folder keyed by a hash of every kernel source. numba checks only the
    timestamp of a kernel's own file, so an edited callee in another file would leave stale
    machine code in use; a new folder per source state makes that impossible in the suite."""
    kernels = pathlib.Path(importlib.util.find_spec("fasttie").origin).parent / "_kernels"
    digest = hashlib.sha256()
    for path in sorted(kernels.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return os.path.join(tempfile.gettempdir(), f"fasttie-test-kernels-{digest.hexdigest()[:16]}")


# before numba is imported (it reads the variable once); a caller's own choice wins
os.environ.setdefault("NUMBA_CACHE_DIR", _kernel_cache_dir())
# no NVIDIA device: the GPU kernels run in numba-cuda's simulator (tests/hamming/test_gpu.py)
if not any(os.path.exists(f"/dev/nvidia{i}") for i in range(8)):
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# The quick tier leaves these out; CI runs everything. Files by their path under tests/
# (basenames repeat across the folders), tests by function name. Each takes seconds to minutes
# on a 2-core machine: numba-cuda's simulator, cold compiles in fresh processes, several
# processes (Dask clusters, torch.distributed), every docs example in a subprocess, ranx
# compiling its own kernels, and the widest random searches against brute-force enumeration
# (the quick tier keeps the narrower oracle checks of every measure).
SLOW_FILES = {"hamming/test_gpu.py", "across/test_signatures.py", "across/test_docs.py", "test_dask.py",
              "test_warmup.py", "across/test_cache_fallback.py", "test_torch.py", "test_torchmetrics.py",
              "across/test_properties.py", "across/test_numerics.py", "across/test_diversity_ties.py",
              "measures/test_grade_order_bounds.py"}
SLOW_TESTS = {"test_ranx_on_tie_free_lists", "test_fixed_order_tie_free", "test_ranx_objects", "test_ranx_tie_free",
              "test_bit_sliced_loop_is_avx512", "test_the_gpu_path_gives_the_cpu_values", "test_bench_script_runs",
              "test_large_tie_against_an_exact_reference", "test_monte_carlo_hamming",
              "test_monte_carlo_on_a_longer_list", "test_one_wide_tie_against_its_arrangements"}
TESTS = pathlib.Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = pathlib.Path(item.path).resolve()
        under = path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else None
        if under in SLOW_FILES or getattr(item, "originalname", item.name) in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
