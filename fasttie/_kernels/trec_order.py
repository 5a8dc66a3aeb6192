"""trec_eval's order inside ties: documents of equal score by document id, per tie.

Only the order inside each tie matters, so each tie (a few rows, usually) is sorted on its own
instead of sorting every tied document id of the run as one string array.
"""

import numpy as np

from ._jit import jit


@jit(inline="always")
def _less(chars, a, b):
    """Whether row a's id sorts before row b's (code point order, as C's strcmp on UTF-8)."""
    for c in range(chars.shape[1]):
        if chars[a, c] != chars[b, c]:
            return chars[a, c] < chars[b, c]
    return False


@jit
def ranks_in_ties(chars, tie_starts, keys):
    """keys[i] = 1 + the rank of row i's id among the ids of its tie, ascending.

    chars : (n, width) uint32, each row's id as code points, zero-padded (a numpy str array)
    tie_starts : (m + 1,) int64, rows of tie t are tie_starts[t]:tie_starts[t + 1]
    keys : (n,) int64, written
    """
    n_ties = tie_starts.shape[0] - 1
    longest = 0
    for t in range(n_ties):
        longest = max(longest, tie_starts[t + 1] - tie_starts[t])
    order = np.empty(longest, dtype=np.int64)
    for t in range(n_ties):
        start = tie_starts[t]
        size = tie_starts[t + 1] - start
        if size > 32:  # a long tie: a merge sort of its rows
            rows = np.arange(start, start + size)
            _merge_sort(chars, rows, order[:size])
            for p in range(size):
                keys[rows[p]] = p + 1
            continue
        for p in range(size):  # insertion sort: ties are short
            row = start + p
            q = p
            while q > 0 and _less(chars, row, order[q - 1]):
                order[q] = order[q - 1]
                q -= 1
            order[q] = row
        for p in range(size):
            keys[order[p]] = p + 1


@jit
def _merge_sort(chars, rows, scratch):
    """Sort ``rows`` in place by id (bottom-up merge sort; ``scratch`` as long as rows)."""
    size = rows.shape[0]
    width = 1
    while width < size:
        for lo in range(0, size, 2 * width):
            mid = min(lo + width, size)
            hi = min(lo + 2 * width, size)
            i, j, out = lo, mid, lo
            while i < mid and j < hi:
                if _less(chars, rows[j], rows[i]):
                    scratch[out] = rows[j]
                    j += 1
                else:
                    scratch[out] = rows[i]
                    i += 1
                out += 1
            while i < mid:
                scratch[out] = rows[i]
                i += 1
                out += 1
            while j < hi:
                scratch[out] = rows[j]
                j += 1
                out += 1
        rows[:] = scratch[:size]
        width *= 2
