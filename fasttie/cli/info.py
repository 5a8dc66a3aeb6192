"""``fasttie info`` and ``fasttie warmup``: versions, threads, the compile cache."""

from __future__ import annotations

import importlib.util
import os
import time

import fasttie

from .._kernels._jit import CACHE
from .._kernels.cpu import bitsliced_pass, host_has_avx512
from ..parallel import available_threads
from ..warmup import cache_status, warmup

def warmup_command(args) -> int:

    started = time.perf_counter()
    seconds = warmup(progress=None if args.quiet else lambda name, t: print(f"{name:<28} {t:6.2f} s", flush=True))
    print(f"fasttie warmup: {len(seconds)} calls in {time.perf_counter() - started:.1f} s; kernels cached")
    return 0


def info_command(args) -> int:
    import platform

    import llvmlite
    import llvmlite.binding as llvm
    import numba
    import numpy


    features = llvm.get_host_cpu_features()
    used = [f for f in ("popcnt", "avx2", "avx512f", "avx512vpopcntdq") if features.get(f)]
    print(f"fasttie {fasttie.__version__}")
    print(f"python {platform.python_version()}, numpy {numpy.__version__}, numba {numba.__version__}, llvmlite {llvmlite.__version__}")
    print(f"cpu {llvm.get_host_cpu_name()}, features used: {', '.join(used) or 'none (software popcount)'}")

    forced = os.environ.get("FASTTIE_KERNEL", "").strip()
    pass_name = "bit-sliced (AVX-512)" if bitsliced_pass() else "portable"
    print(f"histogram pass up to 64 bits: {pass_name}"
          + (f" (FASTTIE_KERNEL={forced})" if forced else " (from the CPU's features; FASTTIE_KERNEL forces one)")
          + ("" if host_has_avx512() or not bitsliced_pass() else "; this CPU has no AVX-512: slower"))

    print(f"threads per call {available_threads()} (FASTTIE_NUM_THREADS or usable CPUs; serial nogil kernels on a "
          "thread pool)")
    where = numba.config.CACHE_DIR or f"beside the package ({os.path.join(os.path.dirname(fasttie.__file__), '**', '__pycache__')})"
    print(f"compile cache: {where}" + ("" if CACHE else " (off: FASTTIE_NO_CACHE)"))

    states = cache_status()
    print("kernels: " + ", ".join(f"{door} {state}" for door, state in states.items())
          + ("" if set(states.values()) == {"cached"} else " ('fasttie warmup' compiles and caches them all)"))
    optional = []
    for module, purpose in (("matplotlib", "plots"), ("pandas", "Result.to_frame"), ("scipy", "compare t-test"),
                            ("sklearn", "demo --dataset digits"), ("tqdm", "progress bars"),
                            ("dask", "fasttie.dask"), ("distributed", "Dask clusters"), ("zarr", "zarr shards"),
                            ("numba_cuda", "device='cuda'")):
        version = _version(module)
        optional.append(f"{_DISTRIBUTIONS.get(module, module)} {version or 'missing'} ({purpose})")
    print("optional: " + ", ".join(optional))
    return 0


_DISTRIBUTIONS = {"sklearn": "scikit-learn", "numba_cuda": "numba-cuda"}  # import name -> pip name


def _version(module):
    if importlib.util.find_spec(module) is None:
        return None
    from importlib import metadata

    try:
        return metadata.version(_DISTRIBUTIONS.get(module, module))
    except metadata.PackageNotFoundError:
        return "installed"
