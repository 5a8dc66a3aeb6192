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
def trec_tie_keys(chars, score, offsets, keys):
    """keys[i] = 1 + the rank of row i's id among the ids of its tie, ascending (0 for a row
    tied with no other), where each query's rows are in rank order (scores non-increasing);
    returns False, keys unfinished, when a query's scores rise somewhere.

    chars : (n, width) uint32, each row's id as code points, zero-padded (a numpy str array)
    score : (n,) float64; offsets : (n_queries + 1,) int64, rows of query q offsets[q]:offsets[q + 1]
    keys : (n,) int64, written
    """
    n_queries = offsets.shape[0] - 1
    for q in range(n_queries):
        for i in range(offsets[q] + 1, offsets[q + 1]):
            if score[i] > score[i - 1]:
                return False
    order = np.empty(0, dtype=np.int64)
    for q in range(n_queries):
        start = offsets[q]
        while start < offsets[q + 1]:
            stop = start + 1
            while stop < offsets[q + 1] and score[stop] == score[start]:
                stop += 1
            size = stop - start
            if size == 1:
                keys[start] = 0
            else:
                if order.shape[0] < 2 * size:  # room for a merge sort's scratch too
                    order = np.empty(2 * size, dtype=np.int64)
                _sort_rows(chars, start, size, order)
                for p in range(size):
                    keys[order[p]] = p + 1
            start = stop
    return True


@jit(inline="always")
def _sort_rows(chars, start, size, order):
    """order[:size] = rows start..start+size-1 sorted by id: insertion sort for a short tie, a
    merge sort past 32 rows."""
    if size > 32:
        rows = np.arange(start, start + size)
        _merge_sort(chars, rows, order[size : 2 * size])
        order[:size] = rows
        return
    for p in range(size):
        row = start + p
        q = p
        while q > 0 and _less(chars, row, order[q - 1]):
            order[q] = order[q - 1]
            q -= 1
        order[q] = row


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
