"""Shared test configuration: a reproducible hypothesis profile.

Profiles: "ci" (default; derandomized, no deadline, modest example counts) and "dev" (random,
more examples).  Pick one with HYPOTHESIS_PROFILE=dev.
"""

import hashlib
import importlib.util
import os
import pathlib
import sys
import tempfile

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
# no NVIDIA device: the GPU kernels run in numba-cuda's simulator (tests/test_cuda.py)
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
