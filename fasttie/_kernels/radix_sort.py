"""Stable argsorts by least-significant-digit radix sort over order-preserving uint64 keys.

numba's ``np.argsort`` is a generic quicksort/mergesort: on the 1,000-document lists of
learning to rank the radix sort is about 2.5x faster, stable for free, and one implementation
serves every sort of the ranked-list kernels (each numba sort instantiation adds about a
second to the cold compile). Very short lists go to an insertion sort.
"""

import numpy as np

from ._jit import jit

_DIGIT_BITS = 8
_BUCKETS = 1 << _DIGIT_BITS
_DIGITS = 64 // _DIGIT_BITS
_INSERTION = 32  # up to this length an insertion sort beats the bucket tables
_SIGN = np.uint64(1) << np.uint64(63)


@jit(inline="always")
def _descending_float_keys(values):
    """uint64 keys whose ascending order is the float64 values' descending order (-0.0 == 0.0)."""
    raw = (values + 0.0).view(np.uint64)  # + 0.0 turns -0.0 into 0.0
    keys = np.empty(values.shape[0], dtype=np.uint64)
    for i in range(values.shape[0]):
        u = raw[i]
        ascending = ~u if u & _SIGN else u | _SIGN
        keys[i] = ~ascending
    return keys


@jit
def _ascending_int_keys(values):
    """uint64 keys in the ascending order of the int64 values."""
    keys = np.empty(values.shape[0], dtype=np.uint64)
    for i in range(values.shape[0]):
        keys[i] = np.uint64(values[i]) ^ _SIGN
    return keys


@jit
def _argsort_keys(keys):
    """Stable ascending argsort of uint64 keys (the array is reordered in place)."""
    n = keys.shape[0]
    index = np.arange(n)
    if n <= _INSERTION:
        for i in range(1, n):
            key = keys[i]
            row = index[i]
            j = i - 1
            while j >= 0 and keys[j] > key:
                keys[j + 1] = keys[j]
                index[j + 1] = index[j]
                j -= 1
            keys[j + 1] = key
            index[j + 1] = row
        return index
    mask = np.uint64(_BUCKETS - 1)
    count = np.zeros((_DIGITS, _BUCKETS), dtype=np.int64)
    for i in range(n):  # every digit's histogram in one read of the keys
        key = keys[i]
        for d in range(_DIGITS):
            count[d, (key >> np.uint64(d * _DIGIT_BITS)) & mask] += 1
    spare_keys = np.empty_like(keys)
    spare_index = np.empty_like(index)
    for d in range(_DIGITS):
        bits = np.uint64(d * _DIGIT_BITS)
        at_digit = count[d]
        if at_digit[(keys[0] >> bits) & mask] == n:  # every key has this digit: nothing moves
            continue
        total = 0
        for c in range(_BUCKETS):
            size = at_digit[c]
            at_digit[c] = total
            total += size
        for i in range(n):
            digit = (keys[i] >> bits) & mask
            at = at_digit[digit]
            at_digit[digit] = at + 1
            spare_keys[at] = keys[i]
            spare_index[at] = index[i]
        keys, spare_keys = spare_keys, keys
        index, spare_index = spare_index, index
    return index


@jit
def argsort_descending(values):
    """Indices that sort finite float64 ``values`` descending; equal values keep their order."""
    return _argsort_keys(_descending_float_keys(values))


@jit
def argsort_ascending(values):
    """Indices that sort int64 ``values`` ascending; equal values keep their order."""
    return _argsort_keys(_ascending_int_keys(values))
