"""trec_eval's order inside ties: documents of equal score by document id, per tie.

Only the order inside each tie matters, so each tie (a few rows, usually) is sorted on its own
instead of sorting every tied document id of the run as one string array.
"""

import numpy as np

from ._jit import jit

__all__ = ["trec_tie_keys"]


@jit
def _less(chars, a, b):
    """Whether row a's id sorts before row b's (code point order, as C's strcmp on UTF-8)."""
    for c in range(chars.shape[1]):
        if chars[a, c] != chars[b, c]:
            return chars[a, c] < chars[b, c]
    return False


@jit
def trec_tie_keys(chars, score, ranked, offsets, keys):
    """keys[i] = 1 + the rank of row i's id among the ids of its tie, ascending (0 for a row
    tied with no other).

    chars : (n, width) uint32, each row's id as code points, zero-padded (a numpy str array)
    score : (n,) float64; ranked : (n,) int64, each query's rows in rank order (score descending,
    equal scores in any order); offsets : (n_queries + 1,) int64,
    rows of query q offsets[q]:offsets[q + 1]
    keys : (n,) int64, written
    """
    n_queries = offsets.shape[0] - 1
    order = np.empty(16, dtype=np.int64)
    for q in range(n_queries):
        lo, hi = offsets[q], offsets[q + 1]
        rows = ranked[lo:hi]
        start = 0
        while start < hi - lo:
            stop = start + 1
            while stop < hi - lo and score[rows[stop]] == score[rows[start]]:
                stop += 1
            size = stop - start
            if size == 1:
                keys[rows[start]] = 0
            else:
                if order.shape[0] < size:
                    order = np.empty(2 * size, dtype=np.int64)
                for p in range(size):
                    order[p] = rows[start + p]
                # Shell sort (gaps 1, 4, 13, 40, ...): insertion sort on the short ties that are
                # the rule, no quadratic time on a long one, and little code to compile
                gap = 1
                while gap < size // 3:
                    gap = 3 * gap + 1
                while gap > 0:
                    for p in range(gap, size):
                        row = order[p]
                        j = p
                        while j >= gap and _less(chars, row, order[j - gap]):
                            order[j] = order[j - gap]
                            j -= gap
                        order[j] = row
                    gap //= 3
                for p in range(size):
                    keys[order[p]] = p + 1
            start = stop
