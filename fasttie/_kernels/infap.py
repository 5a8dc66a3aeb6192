"""infAP (inferred AP, Yilmaz & Aslam 2006, as trec_eval computes it), exact over the orders inside ties.

A judgment pool is sampled: a retrieved document is relevant, judged non-relevant, in the pool
but not judged (trec_eval's qrels relevance -1), or outside the pool. A relevant document at
0-based rank j, with R relevant, N judged non-relevant and U pooled-unjudged documents above it
(P = R + N + U pooled), adds (trec_eval's m_infAP.c, eps = 1e-5)

    1/(j+1) + (j/(j+1)) (P/j) (R + eps) / (R + N + 2 eps)  =  (1 + P f(R, N)) / (j + 1)

and infAP is the sum over the relevant documents divided by all relevant documents of the query.

Inside a tie of m items after b others (R0, N0, P0 of them before it), holding r relevant, n
judged non-relevant, u pooled-unjudged and x unpooled items, a given relevant item sits at
offset t, uniform on 0..m-1, below a uniform t-subset of the other m - 1 items. Of those t,
J are judged (hypergeometric: a = r - 1 + n judged among m - 1), A of the J relevant
(hypergeometric: r - 1 among a) and the t - J others pooled with mean (t - J) rho, rho =
u / (u + x). f depends on (A, J) only and P is linear in t given J, so with
F(J) = E[f(R0 + A, N0 + J - A) | J], S0(J) = sum_t w_t H(J | t), S1(J) = sum_t w_t t H(J | t) and
w_t = 1 / (b + t + 1):

    E[term] = (1/m) [ sum_t w_t + sum_J F(J) ((P0 + J (1 - rho)) S0(J) + rho S1(J)) ]

and the tie adds r E[term]: O(m a + a r) a tie (docs/ties.md, "infAP"). A one-item tie takes
trec_eval's own expression, so fixed orders agree with it to the last bit.

Serial, nogil, no global state: thread safe.
"""

import numpy as np

from ._jit import jit
from .modes import AVERAGE, FIXED, OPTIMISTIC
from .score_ties import _rank_order, run_end
from .tie_math import hypergeometric_weights

INFAP_EPSILON = 1e-5  # trec_eval's INFAP_EPSILON
RELEVANT, NONRELEVANT, POOLED, UNPOOLED = 0, 1, 2, 3  # judgment states of a retrieved item


@jit(inline="always")
def _single(j, rel_above, nonrel_above, pooled_above):
    """trec_eval's term of a relevant item at 0-based rank j, in its order of operations."""
    if j == 0:
        return 1.0
    fj = float(j)
    return 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (pooled_above / fj) * (
        (rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2.0 * INFAP_EPSILON))


@jit
def _tie_sum(b, m, r, n, u, rel0, nonrel0, pooled0, weights, f_of, s0, s1):
    """E[sum of the infAP terms of the r relevant items of a tie] (see the module docstring);
    the scratch arrays hold at least r - 1 + n + 1 entries."""
    if r == 0:
        return 0.0
    if m == 1:
        return _single(b, float(rel0), float(nonrel0), float(pooled0))
    a = r - 1 + n  # judged items among the other m - 1
    rest = m - 1 - a  # pooled-unjudged and unpooled among them
    rho = u / rest if rest > 0 else 0.0
    for j in range(a + 1):  # F(J): relevant among the J judged ones above
        lo, hi, total, x_min = hypergeometric_weights(a, r - 1, j, weights)
        acc = 0.0
        for x in range(lo, hi + 1):
            rel = rel0 + x
            nonrel = nonrel0 + j - x
            acc += weights[x - x_min] * ((rel + INFAP_EPSILON) / (rel + nonrel + 2.0 * INFAP_EPSILON))
        f_of[j] = acc / total
        s0[j] = 0.0
        s1[j] = 0.0
    harmonic = 0.0
    for t in range(m):  # judged items J among the t above, weighted by 1 / rank
        w = 1.0 / (b + t + 1.0)
        harmonic += w
        lo, hi, total, x_min = hypergeometric_weights(m - 1, a, t, weights)
        for j in range(lo, hi + 1):
            h = weights[j - x_min] / total * w
            s0[j] += h
            s1[j] += h * t
    acc = harmonic
    for j in range(a + 1):
        acc += f_of[j] * ((pooled0 + j * (1.0 - rho)) * s0[j] + rho * s1[j])
    return r * acc / m


@jit(inline="always")
def _query_infap(scores, states, keys, mode):
    """Sum of the infAP terms of one query's ranked list (states: RELEVANT, ... per row)."""
    n_rows = scores.shape[0]
    order = _rank_order(scores, keys, mode)
    weights = np.empty(n_rows + 1, dtype=np.float64)  # scratch for a tie as wide as the list
    f_of = np.empty(n_rows + 1, dtype=np.float64)
    s0 = np.empty(n_rows + 1, dtype=np.float64)
    s1 = np.empty(n_rows + 1, dtype=np.float64)
    count = np.zeros(4, dtype=np.int64)
    total = 0.0
    b = np.int64(0)
    rel0 = np.int64(0)
    nonrel0 = np.int64(0)
    pooled0 = np.int64(0)
    start = 0
    while start < n_rows:
        stop = run_end(scores, order, start, mode)
        for state in range(4):
            count[state] = 0
        for p in range(start, stop):
            count[states[order[p]]] += 1
        r = count[RELEVANT]
        n = count[NONRELEVANT]
        u = count[POOLED]
        m = stop - start
        if mode == AVERAGE or mode == FIXED:
            total += _tie_sum(b, m, r, n, u, rel0, nonrel0, pooled0, weights, f_of, s0, s1)
        elif r > 0:  # optimistic / pessimistic: the relevant items first / last, in a tie of their own
            before = b if mode == OPTIMISTIC else b + m - r
            rest = np.int64(0) if mode == OPTIMISTIC else n + u
            judged_rest = np.int64(0) if mode == OPTIMISTIC else n
            total += _tie_sum(before, r, r, np.int64(0), np.int64(0), rel0, nonrel0 + judged_rest, pooled0 + rest,
                              weights, f_of, s0, s1)
        b += m
        rel0 += r
        nonrel0 += n
        pooled0 += r + n + u
        start = stop
    return total


@jit
def infap_rankings(offsets, scores, states, keys, mode, out, start, stop):
    """Sum of the infAP terms of queries start..stop-1 of a grouped ranked list.

    Rows of query q are offsets[q]:offsets[q + 1] of scores (float64), states (int8: RELEVANT,
    NONRELEVANT, POOLED or UNPOOLED) and keys (int64 tie-break for FIXED, or empty: row order);
    mode as in score_ties (AVERAGE, OPTIMISTIC, PESSIMISTIC, FIXED). out : (n_queries,) float64,
    the sums; the caller divides by each query's relevant count.
    """
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        out[q] = _query_infap(scores[lo:hi], states[lo:hi], keys[lo:hi], mode)
