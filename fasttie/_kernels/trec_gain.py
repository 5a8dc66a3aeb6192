"""trec_eval's experimental gain measures binG, ndcg_rel, Rndcg and G, and expected counts at
per-query cutoffs (Rprec_mult, unj), exact over the orders inside ties where a closed form exists.

Notation: a tie of n items starts after rank t; d(i) = 1 / log2(i + 1) is the discount of
rank i (1-based). The ideal is every judged document's gain, sorted descending (trec_eval's
gain levels walked from the highest).

* binG (m_binG.c): each relevant retrieved item adds 1 / log2(2 + non-relevant items above it),
  over R. A relevant item of a tie with m non-relevant items, B non-relevant before the tie, has
  x of them above it with x uniform on 0..m (its place among itself and the m), so the tie adds
  r / (m + 1) sum_{x=0..m} 1 / log2(2 + B + x).
* ndcg_rel (m_ndcg_rel.c): at each retrieved item of positive gain, DCG@i / IDCG@i; the
  relevant items not retrieved each add DCG@N / IDCG; over the number of positive ideal gains.
  With r+ positive items of gain sum G+ in a tie of gain sum G, the item at rank t + p is
  positive with probability r+/n, its own gain averages G+/n, and a positive item at p with an
  item at p' != p gives E[1{g_p > 0} g_p'] = (r+ G - G+) / (n (n - 1)). So
  E[1{g_p > 0} DCG@(t+p)] = (r+/n) DCG_T@t + (G+/n) d(t+p) + (r+ G - G+)/(n(n-1)) sum_{p'<p} d(t+p'),
  linear in the gains: exact when no gain is negative (trec_eval's ``sum > 0`` test is then a
  fixed fact of the list).
* Rndcg (m_Rndcg.c): the mean of DCG@min(i, N) / IDCG@i over the ranks i where the ideal gain
  changes, down to its first gain <= 0, plus DCG@N / IDCG at the end of the list when the ideal
  runs out more than one rank before it: fixed ranks, so DCG_T (each rank the mean gain of its
  tie) gives the exact average.
* G (m_G.c): item i adds gain_i / log2(2 + C(i) - S(i)), C(i) the sum of max(1, ideal gain) and
  S(i) the gain of the ranks <= i, over the positive ideal gains. S(i) is the sum of a random
  subset of its tie's gains: no closed form, so one order only (fixed, optimistic, pessimistic).
* Counts at per-query cutoffs k: E[flagged items in the top k] = F_<c + (k - t) f_c / n_c.

A fixed order is walked as ties of one item, each in trec_eval's order of operations, so the
trec order gives trec_eval's values to the last bit. Optimistic / pessimistic: higher / lower
grades first inside ties, then walked as a fixed order.

Serial, nogil, no global state: thread safe.
"""

import math

import numpy as np

from ._jit import jit
from .modes import AVERAGE, FIXED, OPTIMISTIC, PESSIMISTIC
from .radix_sort import argsort_descending
from .score_ties import rank_order, run_end


@jit(inline="always")
def _ranked(scores, keys, grades, mode):
    """Rows in rank order, and the mode the walk takes: AVERAGE keeps its ties; optimistic /
    pessimistic sort each run of equal scores by grade (descending / ascending) and become a
    fixed order."""
    order = rank_order(scores, keys, mode)
    if mode != OPTIMISTIC and mode != PESSIMISTIC:
        return order, mode
    start = 0
    while start < order.shape[0]:
        stop = run_end(scores, order, start, AVERAGE)
        run = order[start:stop].copy()
        run_grades = grades[run]
        by_grade = argsort_descending(run_grades if mode == OPTIMISTIC else -run_grades)
        order[start:stop] = run[by_grade]
        start = stop
    return order, FIXED


@jit
def bing_rankings(offsets, scores, relevant, keys, grades, mode, out, start, stop):
    """Sum of binG's terms of queries start..stop-1 (the caller divides by R).

    Rows of query q are offsets[q]:offsets[q + 1] of scores (float64), relevant (bool), keys
    (int64 tie-break for FIXED, or empty: row order) and grades (float64, for the optimistic and
    pessimistic orders); mode as in :mod:`.modes`. out : (n_queries,) float64.
    """
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        order, walk = _ranked(scores[lo:hi], keys[lo:hi], grades[lo:hi], mode)
        total = 0.0
        nonrel_before = np.int64(0)
        first = 0
        while first < hi - lo:
            last = run_end(scores[lo:hi], order, first, walk)
            r = np.int64(0)
            for p in range(first, last):
                r += 1 if relevant[lo + order[p]] else 0
            m = last - first - r
            if r > 0:
                acc = 0.0
                for x in range(m + 1):
                    acc += 1.0 / math.log2(float(2 + nonrel_before + x))
                total += r / (m + 1.0) * acc
            nonrel_before += m
            first = last
        out[q] = total


@jit(inline="always")
def _expected_gains(scores, order, gains, walk, lo, expected):
    """Each rank's gain averaged over its tie (the gain itself in a fixed order)."""
    first = 0
    while first < order.shape[0]:
        last = run_end(scores, order, first, walk)
        total = 0.0
        for p in range(first, last):
            total += gains[lo + order[p]]
        for p in range(first, last):
            expected[p] = total / (last - first)
        first = last


@jit
def ndcg_rel_rankings(offsets, scores, gains, keys, grades, ideal_offsets, ideal, mode, out, start, stop):
    """ndcg_rel of queries start..stop-1 (0 where trec_eval's sum is not positive).

    Arrays as in :func:`bing_rankings`, with gains (float64, trec_eval's gain of each row, 0 for
    an unjudged one) instead of relevant; ideal[ideal_offsets[q]:ideal_offsets[q + 1]] holds
    query q's judged gains sorted descending. No gain may be negative under AVERAGE.
    """
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        n_rows = hi - lo
        order, walk = _ranked(scores[lo:hi], keys[lo:hi], grades[lo:hi], mode)
        top = ideal[ideal_offsets[q]:ideal_offsets[q + 1]]
        n_positive = 0
        while n_positive < top.shape[0] and top[n_positive] > 0.0:
            n_positive += 1
        ideal_dcg = 0.0
        dcg = 0.0  # expected DCG of the ranks before the current tie
        total = 0.0
        positive_retrieved = 0
        first = 0
        while first < n_rows:
            last = run_end(scores[lo:hi], order, first, walk)
            n = last - first
            r_pos = 0
            g_pos = 0.0
            g_all = 0.0
            for p in range(first, last):
                gain = gains[lo + order[p]]
                g_all += gain
                if gain > 0.0:
                    r_pos += 1
                    g_pos += gain
            positive_retrieved += r_pos
            pair = (r_pos * g_all - g_pos) / (n * (n - 1.0)) if n > 1 else 0.0
            above = 0.0  # sum of the discounts of the tie's ranks above p
            tie_dcg = dcg
            for p in range(first, last):
                if p < n_positive:
                    ideal_dcg += top[p] / math.log2(p + 2.0)
                if r_pos > 0:
                    term = r_pos / n * dcg + g_pos / n / math.log2(p + 2.0) + pair * above
                    total += term / ideal_dcg
                above += 1.0 / math.log2(p + 2.0)
                tie_dcg += g_all / n / math.log2(p + 2.0)
            dcg = tie_dcg
            first = last
        for p in range(n_rows, n_positive):
            ideal_dcg += top[p] / math.log2(p + 2.0)
        if n_positive == 0:  # trec_eval's 0 * 0 / 0 fails its sum > 0 test
            out[q] = 0.0
            continue
        total += (n_positive - positive_retrieved) * dcg / ideal_dcg
        out[q] = total / n_positive if total > 0.0 else 0.0


@jit
def rndcg_rankings(offsets, scores, gains, keys, grades, ideal_offsets, ideal, mode, out, start, stop):
    """Rndcg of queries start..stop-1 (arrays as in :func:`ndcg_rel_rankings`; negative gains
    allowed); NaN where no rank qualifies (trec_eval's 0 / 0). The caller sets the queries
    without a relevant document (trec_eval: 0)."""
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        n_rows = hi - lo
        order, walk = _ranked(scores[lo:hi], keys[lo:hi], grades[lo:hi], mode)
        expected = np.empty(n_rows, dtype=np.float64)
        _expected_gains(scores[lo:hi], order, gains, walk, lo, expected)
        top = ideal[ideal_offsets[q]:ideal_offsets[q + 1]]
        total = 0.0
        points = 0
        dcg = 0.0
        ideal_dcg = 0.0
        previous = top[0] if top.shape[0] > 0 else 0.0
        i = 0
        while True:  # the ideal's ranks down to its first gain <= 0
            gain = top[i] if i < top.shape[0] else 0.0
            if gain != previous and ideal_dcg > 0.0:
                total += dcg / ideal_dcg
                points += 1
            previous = gain
            if gain <= 0.0:
                break
            if i < n_rows:
                dcg += expected[i] / math.log2(i + 2.0)
            ideal_dcg += gain / math.log2(i + 2.0)
            i += 1
        if i + 1 < n_rows:  # the ideal ran out inside the list: one more point at its end
            for p in range(i, n_rows):
                dcg += expected[p] / math.log2(p + 2.0)
            if ideal_dcg > 0.0:
                total += dcg / ideal_dcg
                points += 1
        out[q] = total / points if points > 0 else np.nan


@jit
def g_rankings(offsets, scores, gains, keys, grades, ideal_offsets, ideal, mode, out, start, stop):
    """G of queries start..stop-1 in one order (mode FIXED, OPTIMISTIC or PESSIMISTIC; arrays as
    in :func:`ndcg_rel_rankings`)."""
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        order, _ = _ranked(scores[lo:hi], keys[lo:hi], grades[lo:hi], mode)
        top = ideal[ideal_offsets[q]:ideal_offsets[q + 1]]
        sum_results = 0.0
        sum_cost = 0.0
        total = 0.0
        for i in range(hi - lo):
            gain = gains[lo + order[i]]
            sum_results += gain
            ideal_gain = top[i] if i < top.shape[0] else 0.0
            sum_cost += ideal_gain if ideal_gain >= 1.0 else 1.0
            if gain != 0.0:
                total += gain / math.log2(2.0 + sum_cost - sum_results)
        sum_ideal = 0.0
        for i in range(top.shape[0]):
            if top[i] > 0.0:
                sum_ideal += top[i]
        out[q] = total / sum_ideal if sum_ideal > 0.0 else 0.0


@jit
def counts_at_rankings(offsets, scores, flags, keys, grades, mode, cutoffs, out, start, stop):
    """Expected number of flagged rows in the top k, for each query's cutoffs.

    Arrays as in :func:`bing_rankings`, flags (bool) instead of relevant; cutoffs :
    (n_queries, n_cutoffs) int64, k >= 0 (past the list: every flagged row); out : same shape,
    float64.
    """
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        order, walk = _ranked(scores[lo:hi], keys[lo:hi], grades[lo:hi], mode)
        for c in range(cutoffs.shape[1]):
            out[q, c] = 0.0
        before = 0.0
        first = 0
        while first < hi - lo:
            last = run_end(scores[lo:hi], order, first, walk)
            f = 0
            for p in range(first, last):
                f += 1 if flags[lo + order[p]] else 0
            for c in range(cutoffs.shape[1]):
                k = cutoffs[q, c]
                if first < k <= last:  # the tie holding rank k: its first k - first ranks
                    out[q, c] = before + (k - first) * f / (last - first)
            before += f
            first = last
        for c in range(cutoffs.shape[1]):
            if cutoffs[q, c] > hi - lo:
                out[q, c] = before
