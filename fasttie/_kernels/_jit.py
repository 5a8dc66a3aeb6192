"""The one place where jit options live.

``cache=True`` keeps the warm first call short. ``FASTTIE_NO_CACHE=1`` turns caching off
(for example to inspect the assembly of a freshly compiled kernel). No ``fastmath``: metric
accumulators must be exact float64 arithmetic.
"""

import os

import numba

CACHE = os.environ.get("FASTTIE_NO_CACHE", "") not in ("1", "true", "yes")


def jit(fn=None, **options):
    """Serial nopython kernel with the project's options."""
    options = {"nogil": True, "cache": CACHE, **options}
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)


def pjit(fn=None, **options):
    """Parallel (``prange``) kernel with the project's options."""
    return jit(fn, parallel=True, **options)
