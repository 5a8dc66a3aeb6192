"""The ndeval engine's shared pieces: subtopic bit masks, alpha-gains, the run's top and ndeval's
greedy ideal ordering (the per-query drivers are in ``diversity_measures.py``).

A document is a row of subtopic bit masks: uint64 words, bit j of word w = subtopic 64 w + j.
The gain of a document is the sum, over its subtopics in ascending order, of the subtopic's
current weight (1 - alpha)^(documents with that subtopic already ranked): the same float64
additions in the same order as ndeval's ``currentScore += subtopicGain[j]``, so the greedy's
ties (compared with ``==``) fall exactly as ndeval's, for every alpha.

Work per query: the run's top k by selection (no full sort for small k, ``run_top``) and at
most k greedy picks, each one pass over the documents that have a relevant subtopic (copied into contiguous
arrays first); a pick recomputes only the gains of documents sharing a subtopic with the
picked one (the others are unchanged, so their cached gains equal a fresh recomputation bit
for bit). The greedy stops early once the best remaining gain is 0.
"""

import numpy as np

from ._jit import jit
from .filled import filled
from .popcount import popcount64
from .radix_sort import argsort_ascending, ascending_through, descending_through

_ONE = np.uint64(1)
_SELECTION_DEPTH = 64  # deeper than this, the run is ranked by two stable sorts instead


@jit
def gain(masks, row, weights):
    """Sum of the weights of the document's subtopics, in ascending subtopic order."""
    total = 0.0
    for w in range(masks.shape[1]):
        m = masks[row, w]
        while m:
            low = m & (~m + _ONE)
            total += weights[w * 64 + np.int64(popcount64(low - _ONE))]
            m ^= low
    return total


@jit
def decay(masks, row, weights, factor):
    """Multiply the weight of each of the document's subtopics by 1 - alpha."""
    for w in range(masks.shape[1]):
        m = masks[row, w]
        while m:
            low = m & (~m + _ONE)
            weights[w * 64 + np.int64(popcount64(low - _ONE))] *= factor
            m ^= low


@jit
def _before(scores, keys, a, b):
    """Whether row a ranks before row b: score descending, then key ascending."""
    return scores[a] > scores[b] or (scores[a] == scores[b] and keys[a] < keys[b])


@jit(inline="always")
def run_top(scores, keys, start, stop, depth, sort):
    """Rows of the (at most) depth best-ranked retrieved documents of one query, in rank order.

    Rows scored -inf are judged but not retrieved and never ranked. Deep cutoffs sort, by the
    radix sort at address ``sort`` (:func:`.radix_sort.sort_keys_into`)."""
    if depth > _SELECTION_DEPTH:
        rows = np.empty(stop - start, dtype=np.int64)
        n = 0
        for i in range(start, stop):
            if scores[i] != -np.inf:
                rows[n] = i
                n += 1
        rows = rows[:n]
        by_key = rows[ascending_through(keys[rows], sort)]
        ranked = by_key[descending_through(scores[by_key], sort)]
        return ranked[: min(depth, n)]
    top = np.empty(depth, dtype=np.int64)
    count = 0
    for i in range(start, stop):
        if scores[i] == -np.inf:
            continue
        if count == depth:
            if not _before(scores, keys, i, top[depth - 1]):
                continue
            pos = depth - 1
        else:
            pos = count
            count += 1
        while pos > 0 and _before(scores, keys, i, top[pos - 1]):
            top[pos] = top[pos - 1]
            pos -= 1
        top[pos] = i
    return top[:count]


@jit
def _decay_mask(mask, weights, factor):
    """decay for a mask held in a 1-D array."""
    for w in range(mask.shape[0]):
        m = mask[w]
        while m:
            low = m & (~m + _ONE)
            weights[w * 64 + np.int64(popcount64(low - _ONE))] *= factor
            m ^= low


@jit
def _best(gains, keys, n):
    """Index of the largest of gains[:n], the greatest key among equal gains (-1 if n == 0)."""
    best = -1
    for c in range(n):
        if best == -1 or gains[c] > gains[best] or (gains[c] == gains[best] and keys[c] > keys[best]):
            best = c
    return best


@jit
def pack_subtopics(y_true, masks, start, stop):
    """masks[i] = bits of row i of a 0/1 uint8 matrix (bit j of word w = column 64 w + j), for
    rows start..stop-1."""
    for i in range(start, stop):
        for w in range(masks.shape[1]):
            word = np.uint64(0)
            for j in range(min(64, y_true.shape[1] - 64 * w)):
                if y_true[i, 64 * w + j]:
                    word |= _ONE << np.uint64(j)
            masks[i, w] = word


@jit
def first_duplicate(keys, offsets):
    """First row (in key order) whose key repeats within its query, or -1."""
    for q in range(offsets.shape[0] - 1):
        local = keys[offsets[q]:offsets[q + 1]].copy()  # the sort takes writable arrays
        local = local[argsort_ascending(local)]
        for i in range(1, local.shape[0]):
            if local[i] == local[i - 1]:
                for row in range(offsets[q], offsets[q + 1]):
                    if keys[row] == local[i]:
                        return row
    return -1


@jit(inline="always")
def greedy_gains(masks, ideal_keys, start, stop, depth, alpha, gains_out):
    """ndeval's greedy ideal of one query: the gains of its first ``depth`` picks.

    Every document of rows start..stop-1 with a relevant subtopic is a candidate; each rank
    takes the largest gain given the picks before it, ties to the greatest key (ndeval: docno).
    Writes gains_out[:depth] (0 once the best gain is 0: gains never grow, so every later
    ideal gain is 0 too) and returns the number of positive gains.

    Parameters
    ----------
    masks : (n_rows, n_words) uint64, subtopic bits
    ideal_keys : (n_rows,) int64, equal gains pick the greatest key
    start, stop : rows of the query
    depth : picks wanted (<= gains_out.shape[0])
    alpha : float, redundancy penalty in [0, 1]
    gains_out : (>= depth,) float64 output
    """
    factor = 1.0 - alpha
    n_words = masks.shape[1]
    weights = filled(np.empty(n_words * 64, dtype=np.float64), 1.0)
    # the candidates' masks, keys and gains are copied into contiguous arrays, and a picked
    # candidate is swapped out (ties are broken by key, never by position); element loops,
    # never slice assignments: each of those compiles numba's shape-error formatting
    cand_masks = np.empty((stop - start, n_words), dtype=np.uint64)
    cand_keys = np.empty(stop - start, dtype=np.int64)
    cand_rows = np.empty(stop - start, dtype=np.int64)  # gains read the input's rows (one signature of gain)
    gains = np.empty(stop - start, dtype=np.float64)
    n = 0
    for i in range(start, stop):
        for w in range(n_words):
            if masks[i, w]:
                for v in range(n_words):
                    cand_masks[n, v] = masks[i, v]
                cand_keys[n] = ideal_keys[i]
                cand_rows[n] = i
                gains[n] = gain(masks, i, weights)
                n += 1
                break
    best = _best(gains, cand_keys, np.int64(n))
    picked = np.empty(n_words, dtype=np.uint64)
    r = 0
    while r < depth and n > 0 and gains[best] > 0.0:
        gains_out[r] = gains[best]
        r += 1
        n -= 1
        for w in range(n_words):
            picked[w] = cand_masks[best, w]
            cand_masks[best, w] = cand_masks[n, w]
        cand_keys[best] = cand_keys[n]
        cand_rows[best] = cand_rows[n]
        gains[best] = gains[n]
        _decay_mask(picked, weights, factor)
        for c in range(n):
            for w in range(n_words):
                if cand_masks[c, w] & picked[w]:
                    gains[c] = gain(masks, cand_rows[c], weights)
                    break
        best = _best(gains, cand_keys, np.int64(n))
    positive = r
    while r < depth:
        gains_out[r] = 0.0
        r += 1
    return positive

