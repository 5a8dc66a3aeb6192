"""Arrays filled with one value, allocated by np.empty.

numba compiles np.zeros, np.ones and np.full once per kind of array (dtype and dimensions) in
each process, on top of the np.empty of that kind that they call: 0.1-0.2 s each of a cold
first call. So kernels allocate with np.empty only, whose kinds every kernel shares, and fill
here (tests/across/test_signatures.py checks it); LLVM turns the loop into the memset that
np.zeros would have made.
"""

from ._jit import jit

__all__ = ["filled", "filled_rows"]


@jit(inline="always")
def filled(array, value):
    """``array`` (1-D) with every element set to ``value``, returned:
    ``filled(np.empty(n, dtype=np.int64), 0)`` for ``np.zeros(n, dtype=np.int64)``."""
    for i in range(array.shape[0]):
        array[i] = value
    return array


@jit(inline="always")
def filled_rows(array, value):
    """:func:`filled` of a 2-D array."""
    for r in range(array.shape[0]):
        for c in range(array.shape[1]):
            array[r, c] = value
    return array
