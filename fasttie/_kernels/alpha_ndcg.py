"""alpha-DCG@k of a run and of ndeval's greedy ideal ordering, parallel over queries.

A document is a row of subtopic bit masks: uint64 words, bit j of word w = subtopic 64 w + j.
The gain of a document is the sum, over its subtopics in ascending order, of the subtopic's
current weight (1 - alpha)^(documents with that subtopic already ranked): the same float64
additions in the same order as ndeval's ``currentScore += subtopicGain[j]``, so the greedy's
ties (compared with ``==``) fall exactly as ndeval's, for every alpha.

Work per query: the run's top k by selection (no full sort for small k) and at most k greedy
picks, each one pass over the documents that have a relevant subtopic (copied into contiguous
arrays first); a pick recomputes only the gains of documents sharing a subtopic with the
picked one (the others are unchanged, so their cached gains equal a fresh recomputation bit
for bit). The greedy stops early once the best remaining gain is 0.
"""

import numpy as np

from ._jit import jit
from .popcount import popcount64
from .radix_sort import argsort_ascending, argsort_descending

_ONE = np.uint64(1)
_SELECTION_DEPTH = 64  # deeper than this, the run is ranked by two stable sorts instead


@jit
def _gain(masks, row, weights):
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
def _decay(masks, row, weights, factor):
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
def _run_top(scores, keys, start, stop, depth):
    """Rows of the (at most) depth best-ranked retrieved documents of one query, in rank order.

    Rows scored -inf are judged but not retrieved and never ranked."""
    if depth > _SELECTION_DEPTH:
        rows = np.empty(stop - start, dtype=np.int64)
        n = 0
        for i in range(start, stop):
            if scores[i] != -np.inf:
                rows[n] = i
                n += 1
        rows = rows[:n]
        by_key = rows[argsort_ascending(keys[rows])]
        ranked = by_key[argsort_descending(scores[by_key])]
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
    """_decay for a mask held in a 1-D array."""
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


@jit
def _fill_cutoffs(cumulative, depth, cutoffs, out):
    for c in range(cutoffs.shape[0]):
        out[c] = cumulative[min(cutoffs[c], depth)]


@jit(inline="always")
def alpha_dcg_query(masks, scores, run_keys, ideal_keys, start, stop, cutoffs, alpha, discount, dcg, idcg):
    """alpha-DCG of the run and of the greedy ideal of one query at each cutoff.

    Parameters
    ----------
    masks : (n_rows, n_words) uint64, subtopic bits of every judged or retrieved document
    scores : (n_rows,) float64, run scores; -inf = not retrieved
    run_keys : (n_rows,) int64, equal scores rank by key ascending
    ideal_keys : (n_rows,) int64, equal greedy gains pick the greatest key (ndeval: docno)
    start, stop : rows of the query
    cutoffs : (n_cutoffs,) int64, ascending, >= 1
    alpha : float, redundancy penalty in [0, 1]
    discount : (>= depth,) float64, discount[r] = 1 / log2(r + 2)
    dcg, idcg : (n_cutoffs,) float64 outputs
    """
    depth = min(cutoffs[cutoffs.shape[0] - 1], stop - start)
    factor = 1.0 - alpha
    n_subtopics = masks.shape[1] * 64
    cumulative = np.zeros(depth + 1)

    # the run, in rank order
    weights = np.ones(n_subtopics)
    top = _run_top(scores, run_keys, start, stop, depth)
    for r in range(top.shape[0]):
        gain = _gain(masks, top[r], weights)
        _decay(masks, top[r], weights, factor)
        cumulative[r + 1] = cumulative[r] + gain * discount[r]
    for r in range(top.shape[0], depth):
        cumulative[r + 1] = cumulative[r]
    _fill_cutoffs(cumulative, depth, cutoffs, dcg)

    # the greedy ideal over every judged document with a relevant subtopic; the candidates'
    # masks, keys and gains are copied into contiguous arrays, and a picked candidate is
    # swapped out (ties are broken by key, never by position)
    # element loops, never slice assignments: each of those compiles numba's shape-error formatting
    for u in range(weights.shape[0]):
        weights[u] = 1.0
    n_words = masks.shape[1]
    cand_masks = np.empty((stop - start, n_words), dtype=np.uint64)
    cand_keys = np.empty(stop - start, dtype=np.int64)
    cand_rows = np.empty(stop - start, dtype=np.int64)  # gains read the input's rows (one signature of _gain)
    gains = np.empty(stop - start)
    n = 0
    for i in range(start, stop):
        for w in range(n_words):
            if masks[i, w]:
                for v in range(n_words):
                    cand_masks[n, v] = masks[i, v]
                cand_keys[n] = ideal_keys[i]
                cand_rows[n] = i
                gains[n] = _gain(masks, i, weights)
                n += 1
                break
    best = _best(gains, cand_keys, np.int64(n))
    picked = np.empty(n_words, dtype=np.uint64)
    cumulative[0] = 0.0
    r = 0
    while r < depth and n > 0 and gains[best] > 0.0:
        # gains never grow, so once the best is 0 every later ideal gain is 0 too
        cumulative[r + 1] = cumulative[r] + gains[best] * discount[r]
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
                    gains[c] = _gain(masks, cand_rows[c], weights)
                    break
        best = _best(gains, cand_keys, np.int64(n))
    for i in range(r, depth):
        cumulative[i + 1] = cumulative[i]
    _fill_cutoffs(cumulative, depth, cutoffs, idcg)


@jit
def alpha_dcg_queries(masks, scores, run_keys, ideal_keys, offsets, cutoffs, alpha, discount, dcg, idcg, start, stop):
    """Run and ideal alpha-DCG of queries start..stop-1 at every cutoff; row q of dcg / idcg is
    query q. Each query writes only its own rows."""
    for q in range(start, stop):
        alpha_dcg_query(masks, scores, run_keys, ideal_keys, offsets[q], offsets[q + 1], cutoffs, alpha,
                        discount, dcg[q], idcg[q])
