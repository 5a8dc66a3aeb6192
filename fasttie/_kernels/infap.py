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
from .filled import filled
from .modes import AVERAGE, FIXED, OPTIMISTIC
from .score_ties import rank_order, run_end
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
    the scratch arrays hold at least r - 1 + n + 1 entries.

    Parameters
    ----------
    b : int64
        Items before the tie.
    m : int64
        Items in the tie.
    r : int64
        Relevant items in the tie.
    n : int64
        Judged non-relevant items in the tie.
    u : int64
        Pooled-unjudged items in the tie (the other m - r - n are unpooled).
    rel0 : int64
        Relevant items before the tie (R0).
    nonrel0 : int64
        Judged non-relevant items before the tie (N0).
    pooled0 : int64
        Pooled items before the tie (P0).
    weights : (>= m,) float64
        Scratch: hypergeometric weights.
    f_of : (>= r + n,) float64
        Scratch: F(J).
    s0 : (>= r + n,) float64
        Scratch: S0(J).
    s1 : (>= r + n,) float64
        Scratch: S1(J).

    Returns
    -------
    float64
        The expected sum of the tie's terms.
    """
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
    order = rank_order(scores, keys, mode)
    weights = np.empty(n_rows + 1, dtype=np.float64)  # scratch for a tie as wide as the list
    f_of = np.empty(n_rows + 1, dtype=np.float64)
    s0 = np.empty(n_rows + 1, dtype=np.float64)
    s1 = np.empty(n_rows + 1, dtype=np.float64)
    count = filled(np.empty(4, dtype=np.int64), 0)
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


INFAP_EXTREME_STATES = 50_000_000  # largest (r + 1)(n + 1)(u + 1) one tie's extreme may walk


@jit
def _tie_extreme(b, r, n, u, x, rel0, nonrel0, pooled0, maximize, best):
    """The highest (``maximize``) or lowest sum of the infAP terms of a tie's r relevant items
    over its orders. An unpooled item above a relevant one only raises its rank, which lowers its
    term: the x unpooled items go last for the highest sum, first for the lowest. The others
    interact (a pooled item above raises P and the rank), so a walk over (a, j, v), the relevant,
    judged non-relevant and pooled-unjudged items placed so far, keeps the best sum of each
    state: O(r n u). ``best`` holds at least (n + 1) (u + 1) entries per layer, two layers.

    Parameters
    ----------
    b : int64
        Items before the tie.
    r : int64
        Relevant items in the tie.
    n : int64
        Judged non-relevant items in the tie.
    u : int64
        Pooled-unjudged items in the tie.
    x : int64
        Unpooled items in the tie.
    rel0 : int64
        Relevant items before the tie.
    nonrel0 : int64
        Judged non-relevant items before the tie.
    pooled0 : int64
        Pooled items before the tie.
    maximize : bool
        The highest sum (else the lowest).
    best : (>= 2 (n + 1) (u + 1),) float64
        Scratch: two layers of the walk.

    Returns
    -------
    float64
        The extreme sum of the tie's terms.
    """
    if r == 0:
        return 0.0
    first = b if maximize else b + x
    width = (n + 1) * (u + 1)
    for a in range(r + 1):
        layer = (a % 2) * width
        below = ((a + 1) % 2) * width
        for j in range(n + 1):
            for v in range(u + 1):
                at = layer + j * (u + 1) + v
                if a == 0 and j == 0 and v == 0:
                    best[at] = 0.0
                    continue
                value = -np.inf if maximize else np.inf
                if a > 0:  # the last item placed is relevant: its term at rank first + a - 1 + j + v
                    before = below + j * (u + 1) + v
                    term = _single(first + a - 1 + j + v, float(rel0 + a - 1), float(nonrel0 + j),
                                   float(pooled0 + a - 1 + j + v))
                    value = best[before] + term
                if j > 0:
                    other = best[layer + (j - 1) * (u + 1) + v]
                    value = max(value, other) if maximize else min(value, other)
                if v > 0:
                    other = best[at - 1]
                    value = max(value, other) if maximize else min(value, other)
                best[at] = value
    return best[(r % 2) * width + n * (u + 1) + u]


@jit
def infap_extremes(offsets, scores, states, maximize, out, start, stop):
    """The highest (``maximize``) or lowest sum of the infAP terms over the orders inside ties,
    queries start..stop-1 (arrays as in :func:`infap_rankings`, keys unused); NaN for a query
    with a tie past :data:`INFAP_EXTREME_STATES`."""
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        order = rank_order(scores[lo:hi], offsets[:0], AVERAGE)
        count = filled(np.empty(4, dtype=np.int64), 0)
        best = np.empty(0, dtype=np.float64)
        total = 0.0
        b = np.int64(0)
        rel0 = np.int64(0)
        nonrel0 = np.int64(0)
        pooled0 = np.int64(0)
        first = 0
        while first < hi - lo:
            last = run_end(scores[lo:hi], order, first, AVERAGE)
            count[:] = 0
            for p in range(first, last):
                count[states[lo + order[p]]] += 1
            r, n, u, x = count[RELEVANT], count[NONRELEVANT], count[POOLED], count[UNPOOLED]
            if r > 0 and (r + 1) * (n + 1) * (u + 1) > INFAP_EXTREME_STATES:
                total = np.nan
                break
            if best.shape[0] < 2 * (n + 1) * (u + 1):
                best = np.empty(2 * (n + 1) * (u + 1), dtype=np.float64)
            total += _tie_extreme(b, r, n, u, x, rel0, nonrel0, pooled0, maximize, best)
            b += last - first
            rel0 += r
            nonrel0 += n
            pooled0 += r + n + u
            first = last
        out[q] = total
