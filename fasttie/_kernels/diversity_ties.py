"""ndeval's run-side quantities averaged over every order inside ties (docs/ties.md, section 8).

The run is cut into ties (equal scores, in rank order). For one tie of n documents after a
earlier ranks, a subtopic s with t of its documents in the tie and m before it:

* each rank a + j (j = 0..n-1) of the tie holds one of the t documents with probability t/n,
  and, given that, the number X of the other t - 1 ones among the j ranks before it is
  hypergeometric (j draws from n - 1 items, t - 1 marked): the expected alpha-gain of s at
  that rank is (t/n) (1-alpha)^m E[(1-alpha)^X];
* s is first covered inside the tie (m = 0) by rank a + j + 1 with probability
  1 - C(n-t, j+1) / C(n, j+1);
* its AP numerator grows by the precision kernel of docs/ties.md section 4, K(a, n; n, t, t, m).

Every measure of ``diversity_measures`` is a fixed weighting of the per-rank vectors, so their
expectations give the tie-aware values exactly. Subtopics with the same t in a tie share one
hypergeometric walk: the cost of a tie is O(min(n, depth) x min(t, L)) per distinct t, where
L is the power beyond which (1-alpha)^x < 1e-20 (the pmf is kept for x <= L only, and the
states it keeps are exact: they never depend on higher ones).
"""

import math

import numpy as np

from ._jit import jit
from .filled import filled
from .diversity_measures import AP_SUM, WANT_AP, ap_ia_sum, call_query_sums, query_start
from .finalize import precision_kernel
from .popcount import popcount64
from .radix_sort import descending_through
from .tie_math import harmonic_diff, shifted_harmonic

_ONE = np.uint64(1)
_NEGLIGIBLE = 1e-20  # (1 - alpha)^x below this is dropped from E[(1 - alpha)^X]


@jit(inline="always")
def _add_expected_weights(n, t, depth, factor, powers, top_power, coef, out, a, pmf):
    """out[a + j] += coef * E[factor^X_j] for j < depth, X_j ~ Hypergeometric(n - 1 items,
    t - 1 marked, j draws); the pmf is kept for x <= top_power (powers[x] = factor^x).

    Parameters
    ----------
    n : int64
        Items in the tie.
    t : int64
        The tie's documents with the subtopic.
    depth : int
        Ranks of the tie inside the depth.
    factor : float
        1 - alpha.
    powers : (top_power + 1,) float64
        powers[x] = factor^x.
    top_power : int
        Largest x whose power is kept.
    coef : float
        Weight of the subtopic group (t x weight / n).
    out : (>= a + depth,) float64
        Expected gains; out[a..a + depth - 1] are added to.
    a : int64
        Items before the tie.
    pmf : (top_power + 1,) float64
        Scratch: the hypergeometric pmf.
    """
    marked = t - 1
    if marked == 0 or factor == 1.0:
        for j in range(depth):
            out[a + j] += coef
        return
    top = min(marked, top_power)
    pmf[0] = 1.0
    for x in range(1, top + 1):
        pmf[x] = 0.0
    pool = n - 1
    for j in range(depth):
        e = 0.0
        for x in range(min(top, j) + 1):
            e += pmf[x] * powers[x]
        out[a + j] += coef * e
        if j < pool:  # draw rank j's item: left items, marked - x of them marked
            left = float(pool - j)
            for x in range(min(top, j + 1), 0, -1):
                pmf[x] = (pmf[x] * (left - (marked - x)) + pmf[x - 1] * (marked - x + 1)) / left
            pmf[0] = pmf[0] * (left - marked) / left


@jit(inline="always")
def average_run(masks, scores, start, stop, depth, alpha, want_ap, relevant, gain_out, pairs_out, new_out, sort):
    """Expected alpha-gain, relevant (document, subtopic) pairs and newly covered subtopics at
    each rank 1..depth over the orders inside ties, and the expected sum over subtopics of
    AP_s = (sum over s's documents of precision_s at their rank) / relevant[s] (when want_ap;
    the whole run is walked then, and depth must cover it).

    Parameters
    ----------
    masks : (n_rows, n_words) uint64, subtopic bits
    scores : (n_rows,) float64, -inf = not retrieved
    start, stop : rows of the query
    depth : ranks wanted
    alpha : float in [0, 1]
    want_ap : bool
    relevant : (n_words * 64,) int64, judged relevant documents per subtopic
    gain_out, pairs_out, new_out : (>= depth,) float64 outputs
    sort : uint64, the address of :func:`.radix_sort.sort_keys_into`
    """
    factor = 1.0 - alpha
    n_words = masks.shape[1]
    n_subtopics = n_words * 64
    n_retrieved = 0
    for i in range(start, stop):
        if scores[i] != -np.inf:
            n_retrieved += 1
    rows = np.empty(n_retrieved, dtype=np.int64)
    ranked_scores = np.empty(n_retrieved, dtype=np.float64)
    c = 0
    for i in range(start, stop):
        if scores[i] != -np.inf:
            rows[c] = i
            ranked_scores[c] = scores[i]
            c += 1
    order = descending_through(ranked_scores, sort)
    for r in range(depth):
        gain_out[r] = 0.0
        pairs_out[r] = 0.0
        new_out[r] = 0.0

    if factor == 0.0:
        top_power = 0
    elif factor == 1.0:
        top_power = n_retrieved
    else:
        top_power = min(n_retrieved, int(math.log(_NEGLIGIBLE) / math.log(factor)) + 1)
    powers = np.empty(top_power + 1, dtype=np.float64)
    powers[0] = 1.0
    for x in range(1, top_power + 1):
        powers[x] = powers[x - 1] * factor
    pmf = np.empty(top_power + 1, dtype=np.float64)

    weights = filled(np.empty(n_subtopics, dtype=np.float64), 1.0)  # (1 - alpha)^(documents with s before the tie)
    seen = filled(np.empty(n_subtopics, dtype=np.int64), 0)  # documents with s before the tie
    in_tie = filled(np.empty(n_subtopics, dtype=np.int64), 0)
    touched = np.empty(n_subtopics, dtype=np.int64)
    ap_num = filled(np.empty(n_subtopics, dtype=np.float64), 0.0)
    # sum of the weights of the subtopics with t documents in the tie
    weight_by_t = filled(np.empty(n_retrieved + 1, dtype=np.float64), 0.0)
    first_by_t = filled(np.empty(n_retrieved + 1, dtype=np.int64), 0)  # of them, those not covered before the tie
    listed = filled(np.empty(n_retrieved + 1, dtype=np.bool_), False)
    t_values = np.empty(n_retrieved + 1, dtype=np.int64)

    last = n_retrieved if want_ap else min(depth, n_retrieved)
    a = np.int64(0)  # typed: a literal 0 would compile the harmonic sums a second time
    while a < last:
        b = a + 1
        while b < n_retrieved and ranked_scores[order[b]] == ranked_scores[order[a]]:
            b += 1
        n = b - a
        n_touched = 0
        pairs = 0
        for i in range(a, b):
            row = rows[order[i]]
            for w in range(n_words):
                m = masks[row, w]
                while m:
                    low = m & (~m + _ONE)
                    s = w * 64 + np.int64(popcount64(low - _ONE))
                    if in_tie[s] == 0:
                        touched[n_touched] = s
                        n_touched += 1
                    in_tie[s] += 1
                    pairs += 1
                    m ^= low
        inside = min(n, depth - a)  # ranks of the tie within the depth
        if inside > 0 and n_touched > 0:
            share = pairs / n
            for j in range(inside):
                pairs_out[a + j] += share
            n_t = 0
            for u in range(n_touched):
                s = touched[u]
                t = in_tie[s]
                if not listed[t]:
                    listed[t] = True
                    t_values[n_t] = t
                    n_t += 1
                weight_by_t[t] += weights[s]
                if seen[s] == 0:
                    first_by_t[t] += 1
            for v in range(n_t):
                t = t_values[v]
                coef = t * weight_by_t[t] / n
                if coef != 0.0:
                    _add_expected_weights(n, t, inside, factor, powers, top_power, coef, gain_out, a, pmf)
                if first_by_t[t] > 0:
                    # P(none of the t in the tie's first j ranks) = C(n - t, j) / C(n, j)
                    none = 1.0
                    for j in range(inside):
                        after = none * (n - t - j) / (n - j) if n - t - j > 0 else 0.0
                        new_out[a + j] += first_by_t[t] * (none - after)
                        none = after
                        if none == 0.0:
                            break
                listed[t] = False
                weight_by_t[t] = 0.0
                first_by_t[t] = 0
        if want_ap and n_touched > 0:
            dh = harmonic_diff(a, n)
            lh = shifted_harmonic(a, n, dh)
            for u in range(n_touched):
                s = touched[u]
                t = float(in_tie[s])
                ap_num[s] += precision_kernel(float(n), t, t, float(seen[s]), dh, lh)
        for u in range(n_touched):
            s = touched[u]
            for _ in range(in_tie[s]):  # one product per document, as a fixed order decays
                weights[s] *= factor
            seen[s] += in_tie[s]
            in_tie[s] = 0
        a = b

    return ap_ia_sum(ap_num, relevant) if want_ap else 0.0


@jit
def average_queries(masks, scores, run_keys, ideal_keys, offsets, cutoffs, alpha, betas, discount, options, cut,
                    scalars, nrbp, start, stop, sums, sort):
    """``diversity_measures.diversity_queries`` with the run's vectors averaged over the
    orders inside ties (run_keys is not read): a kernel of its own, so a fixed-order call never
    compiles the tie walk.

    Parameters
    ----------
    masks : (n_rows, n_words) uint64, read-only
        Subtopic bits of every judged or retrieved document.
    scores : (n_rows,) float64, read-only
        Run scores; -inf = not retrieved.
    run_keys : (n_rows,) int64, read-only
        Not read (one signature with diversity_queries).
    ideal_keys : (n_rows,) int64, read-only
        Equal greedy gains pick the greatest key (ndeval: docno).
    offsets : (n_queries + 1,) int64, read-only
        Query q's rows are offsets[q]:offsets[q + 1].
    cutoffs : (n_cutoffs,) int64, read-only
        Cutoffs, ascending, >= 1.
    alpha : float
        ndeval's alpha, in [0, 1].
    betas : (n_betas,) float64, read-only
        NRBP's patience values.
    discount : (>= min(max cutoff, rows),) float64, read-only
        discount[r] = 1 / log2(r + 2).
    options : int
        Bit mask of FULL_RUN, IDEAL, FULL_IDEAL, AVERAGE, WANT_AP.
    cut : (n_queries, N_CUT, n_cutoffs) float64
        Written: cutoff sums, rows start..stop-1.
    scalars : (n_queries, N_SCALARS) float64
        Written: subtopic count and expected AP sum, rows start..stop-1.
    nrbp : (n_queries, 2, n_betas) float64
        Written: NRBP sums, rows start..stop-1.
    start, stop : int
        The queries of this block, start..stop-1; each query writes only its own rows.
    sums : uint64
        Address of :func:`.diversity_measures.query_sums` (:mod:`.address`).
    sort : uint64
        Address of :func:`.radix_sort.sort_keys_into` (each run's order).
    """
    want_ap = (options & WANT_AP) != 0
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        relevant, depth, gains, pairs, new = query_start(masks, lo, hi, cutoffs, options, want_ap, scalars[q])
        scalars[q, AP_SUM] = average_run(masks, scores, lo, hi, depth, alpha, want_ap, relevant, gains, pairs, new,
                                         sort)
        call_query_sums(sums, (masks, ideal_keys, np.int64(lo), np.int64(hi), gains, pairs, new, cutoffs,
                               np.float64(alpha), betas, discount, np.int64(options), cut[q], nrbp[q]))
