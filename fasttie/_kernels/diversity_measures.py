"""Every ndeval measure of a block of queries: one walk over each query's run, one greedy ideal.

A query's run is reduced to three vectors over its ranks r = 1..depth and one sum:

    gain[r]   alpha-gain of the document at rank r: the sum over its subtopics s of
              (1 - alpha)^(documents with s ranked above it)
    pairs[r]  relevant (document, subtopic) pairs at rank r
    new[r]    subtopics first covered at rank r
    AP sum    sum over subtopics s of AP_s (precision_s at each rank holding an s-document,
              summed, over the judged documents relevant to s)

A fixed order gives their values (:func:`_fixed_run`, ndeval's loops; driver
:func:`diversity_queries`); ``ties="average"`` their expectations over the orders inside ties
(``diversity_ties.average_run``; driver ``diversity_ties.average_queries``). Two drivers, so a
call compiles only the walk it uses (the tie walk inlined beside the fixed one doubled
alpha_ndcg's cold first call). Every ndeval measure is a fixed weighting of these vectors, so
both go through the same sums below (:func:`query_sums`):

    cut[RUN_DCG, c]   sum_{r <= k} gain[r] / log2(1 + r)        (alpha-DCG, unnormalised)
    cut[RUN_ERR, c]   sum_{r <= k} gain[r] / r                  (ERR-IA, unnormalised)
    cut[PAIRS, c]     sum_{r <= k} pairs[r]                     (P-IA numerator)
    cut[COVERED, c]   sum_{r <= k} new[r]                       (subtopic recall numerator)
    nrbp[RUN_NRBP, b] sum_r gain[r] beta_b^(r - 1), whole run   (NRBP, unnormalised)

and the same DCG, ERR and NRBP sums of ndeval's greedy ideal (IDEAL_*), which no tie order
changes. ``scalars`` holds the number of subtopics with a relevant document (S) and the AP
sum. The facade (``fasttie.diversity``) divides.
"""

import numpy as np
from numba import types

from ._jit import jit
from .filled import filled
from .address import caller_of, declare
from .alpha_ndcg import decay, gain, greedy_gains, run_top
from .popcount import popcount64

RUN_DCG, IDEAL_DCG, RUN_ERR, IDEAL_ERR, PAIRS, COVERED = range(6)
N_CUT = 6
N_SUBTOPICS, AP_SUM = range(2)
N_SCALARS = 2
RUN_NRBP, IDEAL_NRBP = range(2)
# options, a bit mask: walk the whole run (NRBP, AP_IA), the greedy ideal (normalised
# measures), the whole greedy ideal (nNRBP), tie-average the run, sum AP over subtopics
FULL_RUN, IDEAL, FULL_IDEAL, AVERAGE, WANT_AP = 1, 2, 4, 8, 16

_ONE = np.uint64(1)


@jit(inline="always")
def _fixed_run(masks, scores, run_keys, start, stop, depth, alpha, want_ap, relevant, gain_out, pairs_out,
               new_out, sort):
    """The run's vectors in its fixed order (score descending, then run key ascending), as
    ndeval's computeDCG / computePrecision / computeSTRecall / computeMAP loops; returns the
    AP sum (0 unless want_ap).

    Parameters
    ----------
    masks : (n_rows, n_words) uint64, read-only
        Subtopic bits of every judged or retrieved document.
    scores : (n_rows,) float64, read-only
        Run scores; -inf = not retrieved.
    run_keys : (n_rows,) int64, read-only
        Equal scores rank by key ascending.
    start, stop : int
        The query's rows, start..stop-1.
    depth : int
        Ranks wanted.
    alpha : float
        ndeval's alpha, in [0, 1].
    want_ap : bool
        Sum AP over the subtopics.
    relevant : (n_words * 64,) int64
        Judged relevant documents per subtopic (read with want_ap).
    gain_out : (>= depth,) float64
        Written: alpha-gain at ranks 1..depth (0 past the retrieved documents).
    pairs_out : (>= depth,) float64
        Written: relevant (document, subtopic) pairs at each rank.
    new_out : (>= depth,) float64
        Written: subtopics first covered at each rank.
    sort : uint64
        Address of :func:`.radix_sort.sort_keys_into` (:func:`.alpha_ndcg.run_top` sorts deep cutoffs).

    Returns
    -------
    float64
        The AP sum (0 unless want_ap).
    """
    factor = 1.0 - alpha
    n_words = masks.shape[1]
    n_subtopics = n_words * 64
    weights = filled(np.empty(n_subtopics, dtype=np.float64), 1.0)
    covered = filled(np.empty(n_words, dtype=np.uint64), 0)
    count = filled(np.empty(n_subtopics, dtype=np.int64), 0)
    total = filled(np.empty(n_subtopics, dtype=np.float64), 0.0)
    top = run_top(scores, run_keys, start, stop, depth, sort)
    for r in range(top.shape[0]):
        row = top[r]
        gain_out[r] = gain(masks, row, weights)
        decay(masks, row, weights, factor)
        pairs = 0
        new = 0
        for w in range(n_words):
            m = masks[row, w]
            pairs += np.int64(popcount64(m))
            new += np.int64(popcount64(m & ~covered[w]))
            covered[w] |= m
            if want_ap:
                while m:
                    low = m & (~m + _ONE)
                    s = w * 64 + np.int64(popcount64(low - _ONE))
                    count[s] += 1
                    total[s] += count[s] / (r + 1.0)
                    m ^= low
        pairs_out[r] = pairs
        new_out[r] = new
    for r in range(top.shape[0], depth):
        gain_out[r] = 0.0
        pairs_out[r] = 0.0
        new_out[r] = 0.0
    return ap_ia_sum(total, relevant) if want_ap else 0.0


@jit(inline="always")
def ap_ia_sum(ap_numerators, relevant):
    """sum over the subtopics s with a relevant document of ap_numerators[s] / relevant[s]: the
    AP_IA numerator, in subtopic order, of the fixed-order walk and of the tie walk
    (``diversity_ties.average_run``) alike."""
    ap = 0.0
    for s in range(ap_numerators.shape[0]):
        if relevant[s] > 0:
            ap += ap_numerators[s] / relevant[s]
    return ap


@jit
def _cutoff_sums(gains, depth, cutoffs, discount, dcg_out, err_out):
    """DCG and ERR sums of gains[:depth] at each cutoff (ascending; past depth, the total): the
    prefix sums of gains[r] * discount[r] and of gains[r] / (r + 1)."""
    # ranks past the last cutoff count for no sum (and discount may end there)
    n = min(depth, cutoffs[cutoffs.shape[0] - 1])
    weighted = np.empty(n, dtype=np.float64)
    for r in range(n):
        weighted[r] = gains[r] * discount[r]
    _prefix_sums(weighted, n, cutoffs, dcg_out)
    for r in range(n):
        weighted[r] = gains[r] / (r + 1.0)
    _prefix_sums(weighted, n, cutoffs, err_out)


@jit
def _prefix_sums(values, depth, cutoffs, out):
    """sum of values[:min(k, depth)] at each cutoff k (ascending): the running sum read at each
    cutoff (past depth, the total)."""
    total = 0.0
    c = 0
    n_cutoffs = cutoffs.shape[0]
    for r in range(depth):
        while c < n_cutoffs and cutoffs[c] <= r:
            out[c] = total
            c += 1
        if c == n_cutoffs:
            break
        total += values[r]
    while c < n_cutoffs:
        out[c] = total
        c += 1


@jit
def _nrbp_sums(gains, depth, betas, out):
    """sum_r gains[r] beta^r (r from 0) for each beta, as ndeval's computeNRBP."""
    for b in range(betas.shape[0]):
        total = 0.0
        weight = 1.0
        for r in range(depth):
            total += gains[r] * weight
            weight *= betas[b]
        out[b] = total


@jit(inline="always")
def query_start(masks, lo, hi, cutoffs, options, want_ap, scalars_row):
    """Per query, before the run walk (fixed or averaged): the subtopic counts (into
    scalars_row[N_SUBTOPICS] and, with want_ap, ``relevant``), the depth the run is walked to and
    its gains / pairs / new-subtopic scratch."""
    relevant = filled(np.empty(masks.shape[1] * 64, dtype=np.int64), 0)
    scalars_row[N_SUBTOPICS] = _query_subtopics(masks, lo, hi, want_ap, relevant)
    depth = hi - lo if options & FULL_RUN else min(cutoffs[cutoffs.shape[0] - 1], hi - lo)
    gains = np.empty(depth, dtype=np.float64)
    pairs = np.empty(depth, dtype=np.float64)
    new = np.empty(depth, dtype=np.float64)
    return relevant, depth, gains, pairs, new


@jit
def _query_subtopics(masks, start, stop, want_ap, relevant):
    """Number of subtopics with a relevant document among rows start..stop-1; with want_ap,
    relevant[s] (zeros on entry) counts the documents relevant to subtopic s."""
    n_words = masks.shape[1]
    union = filled(np.empty(n_words, dtype=np.uint64), 0)
    for i in range(start, stop):
        for w in range(n_words):
            m = masks[i, w]
            union[w] |= m
            if want_ap:
                while m:
                    low = m & (~m + _ONE)
                    relevant[w * 64 + np.int64(popcount64(low - _ONE))] += 1
                    m ^= low
    n_relevant_subtopics = 0
    for w in range(n_words):
        n_relevant_subtopics += np.int64(popcount64(union[w]))
    return n_relevant_subtopics


@jit
def query_sums(masks, ideal_keys, start, stop, gains, pairs, new, cutoffs, alpha, betas, discount, options, cut,
                nrbp):
    """The run's cutoff and NRBP sums from its vectors (gains, pairs, new, of the run's depth),
    then ndeval's greedy ideal and its sums: rows cut (N_CUT, n_cutoffs) and nrbp (2, n_betas)
    of one query.

    Parameters
    ----------
    masks : (n_rows, n_words) uint64, read-only
        Subtopic bits of every judged or retrieved document.
    ideal_keys : (n_rows,) int64, read-only
        Equal greedy gains pick the greatest key (ndeval: docno).
    start, stop : int
        The query's rows, start..stop-1.
    gains : (depth,) float64
        The run's alpha-gain per rank.
    pairs : (depth,) float64
        Relevant pairs per rank.
    new : (depth,) float64
        Newly covered subtopics per rank.
    cutoffs : (n_cutoffs,) int64, read-only
        Cutoffs, ascending, >= 1.
    alpha : float
        ndeval's alpha, in [0, 1].
    betas : (n_betas,) float64, read-only
        NRBP's patience values.
    discount : (>= min(max cutoff, rows),) float64, read-only
        discount[r] = 1 / log2(r + 2).
    options : int
        Bit mask of FULL_RUN, IDEAL, FULL_IDEAL, WANT_AP.
    cut : (N_CUT, n_cutoffs) float64
        Written: the query's cutoff sums, run and ideal.
    nrbp : (2, n_betas) float64
        Written: the query's NRBP sums, run and ideal (0 unless FULL_RUN / FULL_IDEAL).
    """
    depth = gains.shape[0]
    _cutoff_sums(gains, depth, cutoffs, discount, cut[RUN_DCG], cut[RUN_ERR])
    _prefix_sums(pairs, depth, cutoffs, cut[PAIRS])
    _prefix_sums(new, depth, cutoffs, cut[COVERED])
    if options & FULL_RUN:
        _nrbp_sums(gains, depth, betas, nrbp[RUN_NRBP])
    else:
        for b in range(betas.shape[0]):
            nrbp[RUN_NRBP, b] = 0.0

    n_rows = stop - start
    ideal_depth = n_rows if options & FULL_IDEAL else min(cutoffs[cutoffs.shape[0] - 1], n_rows)
    ideal = filled(np.empty(ideal_depth, dtype=np.float64), 0.0)
    if options & IDEAL:
        greedy_gains(masks, ideal_keys, start, stop, ideal_depth, alpha, ideal)
    _cutoff_sums(ideal, ideal_depth, cutoffs, discount, cut[IDEAL_DCG], cut[IDEAL_ERR])
    if options & FULL_IDEAL:
        _nrbp_sums(ideal, ideal_depth, betas, nrbp[IDEAL_NRBP])
    else:
        for b in range(betas.shape[0]):
            nrbp[IDEAL_NRBP, b] = 0.0


# the drivers (this module's and diversity_ties.average_queries) call query_sums through its address
# (:mod:`.address`): a cold call compiles the driver while a helper compiles query_sums
_READ_INTS, _READ_FLOATS = (types.Array(dtype, 1, "C", readonly=True) for dtype in (types.int64, types.float64))
QUERY_SUMS_ARGS = (types.Array(types.uint64, 2, "C", readonly=True), _READ_INTS, types.int64, types.int64,
                   types.float64[::1], types.float64[::1], types.float64[::1], _READ_INTS, types.float64, _READ_FLOATS,
                   _READ_FLOATS, types.int64, types.float64[:, ::1], types.float64[:, ::1])
declare(query_sums, QUERY_SUMS_ARGS)
call_query_sums = caller_of(QUERY_SUMS_ARGS, "query_sums")


@jit
def diversity_queries(masks, scores, run_keys, ideal_keys, offsets, cutoffs, alpha, betas, discount, options, cut,
                      scalars, nrbp, start, stop, sums, sort):
    """Every run and ideal sum of queries start..stop-1 (rows offsets[q]..offsets[q+1]) in the
    run's fixed order (see the module docstring); ``diversity_ties.average_queries`` is the
    same over the orders inside ties.

    Parameters
    ----------
    masks : (n_rows, n_words) uint64, read-only
        Subtopic bits of every judged or retrieved document.
    scores : (n_rows,) float64, read-only
        Run scores; -inf = not retrieved.
    run_keys : (n_rows,) int64, read-only
        Equal scores rank by key ascending.
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
        Bit mask of FULL_RUN, IDEAL, FULL_IDEAL, WANT_AP.
    cut : (n_queries, N_CUT, n_cutoffs) float64
        Written: cutoff sums, rows start..stop-1.
    scalars : (n_queries, N_SCALARS) float64
        Written: subtopic count and AP sum, rows start..stop-1.
    nrbp : (n_queries, 2, n_betas) float64
        Written: NRBP sums, rows start..stop-1.
    start, stop : int
        The queries of this block, start..stop-1; each query writes only its own rows.
    sums : uint64
        Address of :func:`query_sums` (:mod:`.address`), which is not compiled into this kernel.
    sort : uint64
        Address of :func:`.radix_sort.sort_keys_into` (deep cutoffs sort the run), neither.
    """
    want_ap = (options & WANT_AP) != 0
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        relevant, depth, gains, pairs, new = query_start(masks, lo, hi, cutoffs, options, want_ap, scalars[q])
        scalars[q, AP_SUM] = _fixed_run(masks, scores, run_keys, lo, hi, depth, alpha, want_ap, relevant, gains,
                                        pairs, new, sort)
        call_query_sums(sums, (masks, ideal_keys, np.int64(lo), np.int64(hi), gains, pairs, new, cutoffs,
                               np.float64(alpha), betas, discount, np.int64(options), cut[q], nrbp[q]))
