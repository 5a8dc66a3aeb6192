"""Variance of a metric's numerator over uniformly random orders inside ties (docs/ties.md, "How
far a metric moves with the tie order").

Every tie is an independent uniformly random permutation of its items over its ranks, so a
query's variance is the sum of its ties' variances. Per tie (n items after s others, r relevant,
the first m of its ranks inside the cutoff):

* hits@k and gain sums@k: a linear permutation statistic, Var = m (n - m) / (n (n - 1)) * SS,
  SS the centred sum of squares of the items' values (relevance 0/1, or gains);
* DCG@k: Var = SS / (n - 1) * sum over the tie's ranks of (a - mean a)^2, a the discount of a
  rank inside the cutoff and 0 past it;
* the AP numerator: pair and triple sums over the tie's ranks, linear in m by running sums
  (or O(1) from harmonic sums for long ties, see :func:`_ap_tie_closed`);
* the WAP numerator: given the tie's relevant ranks, a linear permutation statistic of its
  relevant grades, so Var = g_mean^2 Var(AP term with beta / g_mean before) + SS / (r - 1) E[Q]
  (:func:`_wap_tie`), and WAP@k over the relevant items retrieved (WAP_RET) the mixture below
  over x with a random x-subset of the grades (:func:`_wap_cut_tie`);
* RR: the explicit distribution of the first relevant rank inside the first tie holding one;
* AP@k over the relevant items retrieved (AP_RET): hits@k divides the numerator, so given the
  number x of the cut tie's relevant items inside the top k, the ties before it and the cut
  tie's top part (a tie of its j ranks inside the cutoff holding x relevant items) give the
  conditional mean and variance of AP@k, and the law of total variance sums them over the
  hypergeometric x (:func:`_ap_cut_tie`). Only the ``_retrieved`` kernels compile it, and only
  the ``_wap`` ones the WAP code (:data:`SPREAD_VARIANTS`).

The kernels return each query's expectation and variance per (kind, cutoff); the facade turns
them into the standard deviation of the metric (the metric divided by its numerator's
expectation is the order-free denominator).
"""

import math

import numpy as np

from ._jit import jit, jit_variants
from .filled import filled, filled_rows
from .tie_math import harmonic_diff, hypergeometric_weights, shifted_harmonic

HITS, GAINS, DCG, AP, RR, RPREC, AP_RET, WAP, WAP_RET = 0, 1, 2, 3, 4, 5, 6, 7, 8

# ties of at most this many items (DCG: ranks inside the cutoff) are summed rank by rank, without
# cancellation; longer ones take the closed forms, unless these may have lost more than
# _CLOSED_TOLERANCE (relative) of the variance by cancellation and the tie has at most
# _DIRECT_MAX items (see docs/ties.md, "How far a metric moves with the tie order")
DIRECT_LIMIT = 64
_DIRECT_MAX = 1 << 16
_CLOSED_TOLERANCE = 1e-6
_EPS = 2.0 ** -52


@jit
def _two_sum(a, b):
    """(a + b rounded, its rounding error): Knuth's TwoSum."""
    t = a + b
    bb = t - a
    return t, (a - (t - bb)) + (b - bb)


@jit
def discount_tables(n):
    """Prefix sums of the discounts 1/log2(1 + i) and their squares, i = 1..n, in double-double
    (hi, lo): a tie's discount sums are differences of nearly equal prefixes deep in the list.

    Returns
    -------
    ndarray of float64, shape (4, n + 1)
        D hi, D lo, D2 hi, D2 lo (index 0 is the empty prefix).
    """
    out = filled_rows(np.empty((4, n + 1), dtype=np.float64), 0.0)
    hi1 = 0.0
    lo1 = 0.0
    hi2 = 0.0
    lo2 = 0.0
    for i in range(1, n + 1):
        a = 1.0 / math.log2(1.0 + i)
        hi1, e = _two_sum(hi1, a)
        lo1 += e
        hi2, e = _two_sum(hi2, a * a)
        lo2 += e
        out[0, i] = hi1
        out[1, i] = lo1
        out[2, i] = hi2
        out[3, i] = lo2
    return out


@jit
def _trigamma_diff(t, j):
    """sum_{p=1..j} 1 / (t + p)^2 (t, j >= 0 integers)."""
    if j <= 64 or t < 64:
        s = 0.0
        for p in range(j, 0, -1):  # small terms first
            s += 1.0 / ((t + p) * (t + p))
        return s
    return _trigamma(t + 1.0) - _trigamma(t + j + 1.0)


@jit
def _trigamma(z):
    """psi_1(z) for z >= 64 by its asymptotic series (error below 1e-25 there)."""
    iz = 1.0 / z
    iz2 = iz * iz
    return iz + iz2 / 2.0 + iz * iz2 * (1.0 / 6.0 - iz2 * (1.0 / 30.0 - iz2 * (1.0 / 42.0 - iz2 / 30.0)))


@jit
def _pair_probabilities(n, r):
    """(p1, q1, p, q): chances that one, two others of the tie's other ranks are relevant given
    one (p1, q1) or two (p, q) relevant ranks: falling factorial ratios, 0 where undefined."""
    p1 = (r - 1.0) / (n - 1.0) if n > 1 else 0.0
    q1 = (r - 1.0) * (r - 2.0) / ((n - 1.0) * (n - 2.0)) if n > 2 else 0.0
    p = (r - 2.0) / (n - 2.0) if n > 2 else 0.0
    q = (r - 2.0) * (r - 3.0) / ((n - 2.0) * (n - 3.0)) if n > 3 else 0.0
    return p1, q1, p, q


@jit
def _ap_tie_direct(s, n, r, m, before):
    """(E, Var) of X = sum over the tie's relevant ranks x <= m of (before + relevant up to x in the
    tie) / (s + x), rank by rank over the tie's n ranks.

    With Z_x the relevance of tie rank x, a = x - 1 and alpha = before + 1,
    X = sum_x w_x Z_x (alpha + Y_x), Y_x the relevant ranks before x. E[Z_x (alpha + Y_x)^2] and
    E[Z_x Z_x' (alpha + Y_x)(alpha + Y_x')] (x < x') are hypergeometric moments of the counts
    before x and between x and x'; the pair term is A(x') + a C(x'), summed over x < x' by two
    running sums. Where the cutoff takes at least half of the tie, the variance takes the
    weights less their mean c over the n ranks: that moves X by c (alpha r + r (r - 1) / 2), the
    same for every order, and leaves E[X'^2] and E[X']^2 small where a long tie deep in the list
    has nearly equal weights (no cancellation).
    """
    alpha = before + 1.0
    pi1 = r / n
    pi2 = r * (r - 1.0) / (n * (n - 1.0)) if n > 1 else 0.0
    p1, q1, p, q = _pair_probabilities(n, r)
    # centring over the tie's n ranks helps where the cutoff takes most of it; where it takes
    # less than half, the n - m constant weights past the cutoff would cancel instead
    centre = harmonic_diff(s, m) / n if 2 * m >= n else 0.0
    last = n if 2 * m >= n else m
    mean = 0.0
    shifted_mean = 0.0
    diagonal = 0.0
    pairs = 0.0
    s0 = 0.0  # sum of w_x over x < x'
    s1 = 0.0  # sum of (x - 1) w_x over x < x'
    for x in range(1, last + 1):
        a = x - 1.0
        if x <= m:
            w0 = 1.0 / (s + x)
            mean += w0 * (alpha + p1 * a)
            w = w0 - centre
        else:
            w = -centre
        shifted_mean += w * (alpha + p1 * a)
        diagonal += w * w * (alpha * alpha + (2.0 * alpha + 1.0) * p1 * a + q1 * a * (a - 1.0))
        big_a = alpha * (alpha + 1.0) + p * alpha * (x - 2.0)
        big_c = p * (alpha + 2.0) + q * (x - 3.0)
        pairs += w * (big_a * s0 + big_c * s1)
        s0 += w
        s1 += a * w
    shifted_mean *= pi1
    return pi1 * mean, max(pi1 * diagonal + 2.0 * pi2 * pairs - shifted_mean * shifted_mean, 0.0)


@jit
def _ap_tie_closed(s, n, r, m, before):
    """:func:`_ap_tie_direct` in O(1), and a bound on the rounding error of its variance: the sums
    over ranks reduce to h = sum w, l = sum (x-1) w, sum (m-x) w = (m-1) h - l and h2 = sum w^2
    by x w_x = 1 - s w_x, the pair sums to P00 = (h^2 - h2) / 2 and those. Deep in the list, and
    for long ties, these terms are far larger than the variance they leave: the bound is 8 eps
    times the sum of their absolute values (h, l, h2 are accurate to a few eps)."""
    alpha = before + 1.0
    pi1 = r / n
    pi2 = r * (r - 1.0) / (n * (n - 1.0)) if n > 1 else 0.0
    p1, q1, p, q = _pair_probabilities(n, r)
    c = s + 1.0
    h = harmonic_diff(s, m)
    ell = shifted_harmonic(s, m, h)
    h2 = _trigamma_diff(s, m)
    m1 = (m - 1.0) * h - ell
    p00 = (h * h - h2) / 2.0
    p01 = m1 - s * p00
    p10 = ell - c * p00
    p11 = m * (m - 1.0) / 2.0 - s * ell - c * m1 + s * c * p00
    mean = pi1 * (alpha * h + p1 * ell)
    diagonal = alpha * alpha * h2 + (2.0 * alpha + 1.0) * p1 * (h - c * h2) + q1 * (
        m - (2.0 * c + 1.0) * h + c * (c + 1.0) * h2)
    pairs = alpha * (alpha + 1.0) * p00 + p * alpha * (p01 - 2.0 * p00) + p * (alpha + 2.0) * p10 + q * (
        p11 - 3.0 * p10)
    # the same sums with every term's absolute value
    a01 = m1 + s * p00
    a10 = ell + c * p00
    a11 = m * (m - 1.0) / 2.0 + s * ell + c * m1 + s * c * p00
    size = pi1 * (alpha * alpha * h2 + (2.0 * alpha + 1.0) * p1 * (h + c * h2) + q1 * (
        m + (2.0 * c + 1.0) * h + c * (c + 1.0) * h2)) + 2.0 * pi2 * (
        alpha * (alpha + 1.0) * p00 + p * alpha * (a01 + 2.0 * p00) + p * (alpha + 2.0) * a10 + q * (
            a11 + 3.0 * a10)) + mean * mean
    return mean, max(pi1 * diagonal + 2.0 * pi2 * pairs - mean * mean, 0.0), 8.0 * _EPS * size


@jit
def _rr_tie(s, n, r, limit):
    """(E, Var) of the reciprocal rank when the first relevant item is in this tie (n items after
    s others, r >= 1 relevant), counting it only at tie ranks <= limit (0 past them)."""
    p_max = min(n - r + 1, limit)
    if p_max <= 0:
        return 0.0, 0.0
    w = r / n
    mean = 0.0
    mass = 0.0
    for p in range(1, p_max + 1):  # P(first relevant at tie rank p) = C(n-p, r-1) / C(n, r)
        mean += w / (s + p)
        mass += w
        w *= (n - p - r + 1.0) / (n - p) if p < n else 0.0
    w = r / n
    var = 0.0
    for p in range(1, p_max + 1):
        d = 1.0 / (s + p) - mean
        var += w * d * d
        w *= (n - p - r + 1.0) / (n - p) if p < n else 0.0
    if p_max < n - r + 1:  # the first relevant item past the cutoff: RR = 0
        var += max(1.0 - mass, 0.0) * mean * mean
    return mean, var


@jit
def _discount_spread(s, n, m, tables, direct):
    """(sum of the discounts of the tie's first m ranks, sum over its n ranks of (a - mean a)^2,
    a bound on the absolute error of the latter) with a the discount inside the cutoff and 0
    past it: rank by rank where ``direct``, else from the double-double prefix tables."""
    if not direct:
        total = (tables[0, s + m] - tables[0, s]) + (tables[1, s + m] - tables[1, s])
        squares = (tables[2, s + m] - tables[2, s]) + (tables[3, s + m] - tables[3, s])
        # S2 - S1^2 / n loses about eps * S2 (S1 and S2 themselves are accurate to a few eps)
        return total, max(squares - total * total / n, 0.0), 4.0 * _EPS * squares
    total = 0.0
    for j in range(m, 0, -1):
        total += 1.0 / math.log2(1.0 + s + j)
    mean = total / n
    spread = (n - m) * mean * mean
    for j in range(1, m + 1):
        d = 1.0 / math.log2(1.0 + s + j) - mean
        spread += d * d
    return total, spread, 0.0


def _tie_term_kernel(weighted):
    """:func:`_tie_term`, and with ``weighted`` ``_tie_term_wap``, which also takes WAP columns
    (:func:`_wap_tie`): one source, two kernels (:func:`._jit.jit_variants`)."""

    def _tie_term(kind, s, n, m, r, before, gain_sum, gain_square, tables, direct, grade_before, grade_sum,
                  grade_square):
        """(E, Var, bound on the absolute error of Var) of one tie's part of a numerator.

        Parameters
        ----------
        kind : int64
            HITS, GAINS, DCG, AP, RPREC, and WAP in ``_tie_term_wap``.
        s : int64
            Items before the tie.
        n : int64
            Items in the tie.
        m : int64
            Ranks of the tie inside the cutoff.
        r : int64
            Relevant items in the tie.
        before : int64
            Relevant items before the tie (AP).
        gain_sum : float64
            Sum of the tie's gains.
        gain_square : float64
            Centred sum of squares of the tie's gains.
        tables : (4, depth + 1) float64, read-only
            Double-double discount prefix sums (DCG).
        direct : bool
            Sum rank by rank instead of the closed forms.
        grade_before : float64
            Sum of the values before the tie (WAP).
        grade_sum, grade_square : float64
            Sum and centred sum of squares of the relevant items' values (WAP; the other items
            count 0).

        Returns
        -------
        E, Var, bound : float64
            Expectation, variance and a bound on the variance's absolute error.
        """
        if kind == HITS or kind == RPREC:
            v = (m * (n - m) / (n * (n - 1.0))) * (r * (n - r) / n) if n > 1 else 0.0
            return m * (r / n), v, 0.0
        if kind == GAINS:
            v = (m * (n - m) / (n * (n - 1.0))) * gain_square if n > 1 else 0.0
            return m * (gain_sum / n), v, 0.0
        if kind == DCG:
            if gain_sum == 0.0:
                return 0.0, 0.0, 0.0
            total, spread, lost = _discount_spread(s, n, m, tables, direct or m > tables.shape[1] - 1 - s)
            if n == 1:
                return gain_sum * total, 0.0, 0.0
            return gain_sum / n * total, gain_square / (n - 1.0) * spread, gain_square / (n - 1.0) * lost
        if weighted:  # a closure constant: the other kernel neither compiles nor links _wap_tie
            if kind == WAP:
                return _wap_tie(s, n, r, m, grade_before, grade_sum, grade_square, direct)
        # AP
        if r == 0:
            return 0.0, 0.0, 0.0
        if direct:
            e, v = _ap_tie_direct(s, n, r, m, float(before))
            lost = 0.0
        else:
            e, v, lost = _ap_tie_closed(s, n, r, m, float(before))
        if r == n:  # a tie of relevant items only has one value; its E[X^2] - E[X]^2 is rounding
            return e, 0.0, 0.0
        return e, v, lost

    return _tie_term


_tie_term, _tie_term_wap = jit_variants(_tie_term_kernel, {"": (False,), "_wap": (True,)})


@jit
def _ap_mixture(s, j, before, mean_before, var_before, weights, lo, hi, total, x_min, direct):
    """(E, Var, bound on the rounding error of Var) of :func:`_ap_cut_tie` from the hypergeometric
    weights of x = lo..hi (``weights[x - x_min] / total``), each x's tie of j ranks summed rank by
    rank where ``direct``, else by the closed forms."""
    conditional = np.empty(hi - lo + 1, dtype=np.float64)  # E[AP@k | x]
    mean = 0.0
    within = 0.0
    lost = 0.0
    for x in range(lo, hi + 1):
        hits = before + x
        conditional[x - lo] = 0.0
        if hits == 0:  # AP@k = 0: no relevant item in the top k
            continue
        p = weights[x - x_min] / total
        e = 0.0
        v = 0.0
        bound = 0.0
        if x > 0 and direct:
            e, v = _ap_tie_direct(s, j, x, j, float(before))
        elif x > 0:
            e, v, bound = _ap_tie_closed(s, j, x, j, float(before))
        if x == j:  # all relevant: one arrangement; its E[X^2] - E[X]^2 is rounding
            v = 0.0
            bound = 0.0
        conditional[x - lo] = (mean_before + e) / hits
        mean += p * conditional[x - lo]
        within += p * (var_before + v) / (hits * hits)
        lost += p * bound / (hits * hits)
    between = 0.0
    for x in range(lo, hi + 1):
        d = conditional[x - lo] - mean
        between += weights[x - x_min] / total * d * d
    return mean, within + between, lost


@jit
def _ap_cut_tie(s, n, r, j, before, mean_before, var_before, direct_limit):
    """(E, Var) of AP@k over the relevant items retrieved, k cutting a tie after j of its n ranks.

    The tie follows s items, ``before`` of them relevant, whose AP numerator has mean
    ``mean_before`` and variance ``var_before`` over their orders. Given the number x of the tie's
    relevant items among its first j ranks (hypergeometric), AP@k = (A + X) / (before + x) with a
    fixed denominator: A the numerator of the ties before, independent of the cut tie, and X
    that of the tie's first j ranks, which hold the x relevant items in a uniformly random
    arrangement, so X is the numerator of a whole tie of j items with x relevant. By the law of
    total variance, Var = sum_x P(x) (var_before + Var X_x) / (before + x)^2 + sum_x P(x)
    (mu_x - E)^2 with mu_x = (mean_before + E X_x) / (before + x): two sums of positive terms
    (AP@k = 0 where before + x = 0). Ties past ``direct_limit`` ranks take the closed forms, and
    are summed again rank by rank where the rounding bound of those passes _CLOSED_TOLERANCE of
    the variance (up to _DIRECT_MAX ranks).
    """
    if r == 0:
        if before == 0:
            return 0.0, 0.0
        return mean_before / before, var_before / (before * before)
    weights = np.empty(min(r, j) + 1, dtype=np.float64)
    lo, hi, total, x_min = hypergeometric_weights(n, r, j, weights)
    mean, var, lost = _ap_mixture(s, j, before, mean_before, var_before, weights, lo, hi, total, x_min,
                                  j <= direct_limit)
    if lost > _CLOSED_TOLERANCE * var and j <= _DIRECT_MAX:
        mean, var, _ = _ap_mixture(s, j, before, mean_before, var_before, weights, lo, hi, total, x_min,
                                   np.bool_(True))
    return mean, var


@jit
def _rank_sums(s, m, direct):
    """(sum w^2, sum a w^2, sum_{x<x'} w w', sum_{x<x'} a w w', and bounds on the absolute errors of
    the last three) over a tie's first m ranks after s items, w = 1 / (s + x), a = x - 1: positive
    terms summed rank by rank where ``direct`` (O(m), no error to speak of), else in O(1) by
    a w = 1 - (s + 1) w from h, l (section 7) and sum w^2, which cancel about log10(s / m) digits
    deep in the list (8 eps times the sizes of the terms bounds that)."""
    if not direct:
        c = s + 1.0
        h = harmonic_diff(s, m)
        ell = shifted_harmonic(s, m, h)
        h2 = _trigamma_diff(s, m)
        p00 = (h * h - h2) / 2.0
        return (h2, h - c * h2, p00, ell - c * p00, 8.0 * _EPS * (h + c * h2), 8.0 * _EPS * (h * h + h2),
                8.0 * _EPS * (ell + c * (h * h + h2)))
    s2 = 0.0
    s2a = 0.0
    p00 = 0.0
    p10 = 0.0
    run0 = 0.0  # sum of w over the ranks before
    run1 = 0.0  # sum of a w over the ranks before
    for x in range(1, m + 1):
        a = x - 1.0
        w = 1.0 / (s + x)
        s2 += w * w
        s2a += a * w * w
        p00 += w * run0
        p10 += w * run1
        run0 += w
        run1 += a * w
    return s2, s2a, p00, p10, 0.0, 0.0, 0.0


@jit
def _order_spread(n, r, sums, e0, v0, lost0):
    """(E[Q], a bound on its rounding error) of a tie of n items, r relevant (docs/ties.md, "WAP"):
    Q = sum_l (Omega_l - mean)^2
    over the relevant ranks l = 1..r in rank order, Omega_l = the sum of the weights of the l-th
    relevant rank and those after it; ``sums`` from :func:`_rank_sums` (the weights inside the
    cutoff), e0 and v0 the mean and variance of sum_l l w_{p_l} (the AP term with nothing
    relevant before), lost0 the bound on v0's error. E[sum_l Omega_l^2] = E[sum_{l, l'} min(l, l') w_{p_l} w_{p_l'}] is a
    hypergeometric sum over one and two relevant ranks."""
    if r < 2:
        return 0.0, 0.0
    s2, s2a, p00, p10, lost_s2a, lost_p00, lost_p10 = sums
    pi1 = r / n
    pi2 = r * (r - 1.0) / (n * (n - 1.0))
    p1, _, p, _ = _pair_probabilities(n, r)
    squares = pi1 * (s2 + p1 * s2a) + 2.0 * pi2 * (p00 + p * p10)
    second = (v0 + e0 * e0) / r
    lost = pi1 * p1 * lost_s2a + 2.0 * pi2 * (lost_p00 + p * lost_p10) + lost0 / r + 4.0 * _EPS * (squares + second)
    return max(squares - second, 0.0), lost


@jit
def _ap_term(s, n, r, m, before, direct):
    """(E, Var, rounding bound) of the AP term of a tie (``before`` may be fractional), rank by rank
    where ``direct``, else by the closed forms; Var 0 where every item is relevant."""
    if direct:
        e, v = _ap_tie_direct(s, n, r, m, before)
        lost = 0.0
    else:
        e, v, lost = _ap_tie_closed(s, n, r, m, before)
    if r == n:
        return e, 0.0, 0.0
    return e, v, lost


@jit
def _wap_tie(s, n, r, m, grade_before, grade_sum, grade_square, direct):
    """(E, Var, rounding bound) of a tie's part of the WAP numerator, X = sum over its ranks x <= m
    of w_x Z_x (beta + G_x + g_x): the relevant items' grades (sum ``grade_sum``, centred sum of
    squares ``grade_square``) uniformly permuted with the tie's zeros, beta = ``grade_before``.

    The relevant ranks and the order of the grades on them are independent. Given the ranks
    p_1 < ... < p_r, E[X | ranks] = g_mean (AP term with beta / g_mean relevant before) and X is
    a linear permutation statistic of the grades on the weights Omega_l (sum of w_{p_l'} over
    l' >= l), variance grade_square / (r - 1) times Q (:func:`_order_spread`). So
    Var X = g_mean^2 Var AP(beta / g_mean) + grade_square / (r - 1) E[Q]: the AP term's precise
    sums, and a sum of positive terms."""
    if r == 0:
        return 0.0, 0.0, 0.0
    g_mean = grade_sum / r
    e, v, lost = _ap_term(s, n, r, m, grade_before / g_mean, direct)
    mean = g_mean * e
    var = g_mean * g_mean * v
    lost *= g_mean * g_mean
    if r >= 2 and grade_square > 0.0:
        e0, v0, lost0 = _ap_term(s, n, r, m, 0.0, direct)
        coefficient = grade_square / (r - 1.0)
        spread, lost_q = _order_spread(n, r, _rank_sums(s, m, direct), e0, v0, lost0)
        var += coefficient * spread
        lost += coefficient * lost_q
    return mean, var, lost


@jit
def _wap_mixture(s, j, before, grade_before, r, grade_sum, grade_square, mean_before, var_before, weights, lo, hi,
                 total, x_min, direct):
    """:func:`_ap_mixture` for WAP: (E, Var, rounding bound) of :func:`_wap_cut_tie`."""
    conditional = np.empty(hi - lo + 1, dtype=np.float64)  # E[WAP@k | x]
    g_mean = grade_sum / r
    pool = grade_square / (r - 1.0) if r > 1 else 0.0  # the relevant grades' sample variance
    dh = harmonic_diff(s, j)
    lh = shifted_harmonic(s, j, dh)
    sums = _rank_sums(s, j if r > 1 and grade_square > 0.0 else 0, direct)
    mean = 0.0
    within = 0.0
    lost = 0.0
    for x in range(lo, hi + 1):
        hits = before + x
        conditional[x - lo] = 0.0
        if hits == 0:  # WAP@k = 0: no relevant item in the top k
            continue
        p = weights[x - x_min] / total
        e = 0.0
        v = 0.0
        bound = 0.0
        if x > 0:
            # the top part: a tie of j ranks holding a uniformly random x-subset of the relevant
            # grades; given the subset, :func:`_wap_tie`; over subsets, E[mean grade] = g_mean,
            # Var(subset sum) = x (r - x) / r * pool, E[subset's centred squares] = (x - 1) pool
            e1, v1, b1 = _ap_term(s, j, x, j, grade_before / g_mean, direct)
            e = g_mean * e1
            v = g_mean * g_mean * v1
            bound = g_mean * g_mean * b1
            if pool > 0.0:
                sum_var = x * (r - x) / r * pool
                e0, v0, b0 = _ap_term(s, j, x, j, 0.0, direct)
                spread, lost_q = _order_spread(j, x, sums, e0, v0, b0)
                v += sum_var / (x * x) * v0 + pool * spread
                bound += sum_var / (x * x) * b0 + pool * lost_q
                slope = dh / j + (lh * (x - 1.0) / (j * (j - 1.0)) if j > 1 else 0.0)  # d E[X] / d subset sum
                v += slope * slope * sum_var
        conditional[x - lo] = (mean_before + e) / hits
        mean += p * conditional[x - lo]
        within += p * (var_before + v) / (hits * hits)
        lost += p * bound / (hits * hits)
    between = 0.0
    for x in range(lo, hi + 1):
        d = conditional[x - lo] - mean
        between += weights[x - x_min] / total * d * d
    return mean, within + between, lost


@jit
def _wap_cut_tie(s, n, r, j, before, grade_before, grade_sum, grade_square, mean_before, var_before,
                 direct_limit):
    """(E, Var) of WAP@k over the relevant items retrieved, k cutting a tie after j of its n ranks:
    :func:`_ap_cut_tie` with the WAP numerator, whose top part given x holds a uniformly random
    x-subset of the tie's relevant grades (:func:`_wap_mixture`)."""
    if r == 0:
        if before == 0:
            return 0.0, 0.0
        return mean_before / before, var_before / (before * before)
    weights = np.empty(min(r, j) + 1, dtype=np.float64)
    lo, hi, total, x_min = hypergeometric_weights(n, r, j, weights)
    mean, var, lost = _wap_mixture(s, j, before, grade_before, r, grade_sum, grade_square, mean_before, var_before,
                                   weights, lo, hi, total, x_min, j <= direct_limit)
    if lost > _CLOSED_TOLERANCE * var and j <= _DIRECT_MAX:
        mean, var, _ = _wap_mixture(s, j, before, grade_before, r, grade_sum, grade_square, mean_before,
                                    var_before, weights, lo, hi, total, x_min, np.bool_(True))
    return mean, var


# the spread kernels' variants: AP_RET / WAP_RET columns (``retrieved``: the hypergeometric mixtures
# of :func:`_ap_cut_tie`, :func:`_wap_cut_tie`), WAP and WAP_RET columns (``weighted``: :func:`_wap_tie`,
# :func:`_wap_cut_tie`); a call compiles the variant its columns need, not the WAP code for AP@k
SPREAD_VARIANTS = {"": (False, False), "_retrieved": (True, False), "_wap": (False, True),
                   "_retrieved_wap": (True, True)}


def _query_spread_kernel(retrieved, weighted):
    """:func:`query_spread` and its variants (:data:`SPREAD_VARIANTS`): with ``retrieved`` it also
    takes AP_RET columns (:func:`_ap_cut_tie`), with ``weighted`` WAP columns, with both WAP_RET
    ones: one source, four kernels (:func:`._jit.jit_variants`). The callees are picked by the
    flags inside the kernels (numba prunes the other branch), not bound in the closure: numba keys
    a closure's cache entry by its pickled variables, and a kernel's pickle names its file's path,
    which differs in every copy of the environment."""

    def query_spread(sizes, relevant, gain_sums, gain_squares, grade_sums, grade_squares, n_ties, total_relevant, kinds,
                     cutoffs, tables, direct_limit, means, variances, q):
        """Expectation and variance of each (kind, cutoff) numerator of one query, from its ties in
        rank order (``sizes`` > 0 items, ``relevant`` of them relevant, gain sum and centred sum of
        squares of the gains), into ``means[q]`` and ``variances[q]``. A cutoff of 0 is the whole list.

        Ties longer than ``direct_limit`` take the closed forms first; those whose rounding bound is
        then above _CLOSED_TOLERANCE of the query's variance (shared among them) are summed again
        rank by rank, up to _DIRECT_MAX items.

        Parameters
        ----------
        sizes : (>= n_ties,) int64
            Items per tie, rank order.
        relevant : (>= n_ties,) int64
            Relevant items per tie.
        gain_sums : (>= n_ties,) float64
            Gain sum per tie.
        gain_squares : (>= n_ties,) float64
            Centred sum of squares of the gains per tie.
        grade_sums, grade_squares : (>= n_ties,) float64
            Sum and centred sum of squares of the relevant items' values per tie (WAP, whose
            values are the grades; the other items count 0).
        n_ties : int
            Ties of the query.
        total_relevant : int64
            R, relevant items of the query (also those outside the list).
        kinds : (n_kinds,) int64, read-only
            Numerator per column: HITS, GAINS, DCG, AP, RR or RPREC; WAP in the ``_wap`` kernels;
            AP_RET in the ``_retrieved`` ones, WAP_RET in ``_retrieved_wap``: AP@k and WAP@k over the
            relevant items retrieved, whose mean and variance it writes, not their numerators'.
        cutoffs : (n_kinds,) int64, read-only
            Cutoff per column; 0: the whole list (not read for RPREC).
        tables : (4, depth + 1) float64, read-only
            Double-double prefix sums of the discounts and their squares (a 4 x 1 stand-in when no DCG
            column looks past DIRECT_LIMIT ranks).
        direct_limit : int
            Ties up to this long are summed rank by rank (DIRECT_LIMIT).
        means : (n_queries, n_kinds) float64
            Written: row q, the expectations.
        variances : (n_queries, n_kinds) float64
            Written: row q, the variances.
        q : int
            The query's row.
        """
        n_items = 0
        for t in range(n_ties):
            n_items += sizes[t]
        lost = filled(np.empty(n_ties, dtype=np.float64), 0.0)
        for i in range(len(kinds)):
            kind = kinds[i]
            if kind == RPREC:
                limit = min(total_relevant, n_items)
            elif cutoffs[i] > 0:
                limit = min(cutoffs[i], n_items)
            else:
                limit = n_items
            over_hits = False
            cut = -1
            cut_start = np.int64(0)
            cutoff = limit
            if retrieved:
                if kind == AP_RET or kind == WAP_RET:  # the numerator up to the tie the cutoff cuts (if
                    over_hits = True                    # any), then _ap_cut_tie / _wap_cut_tie
                    kind = AP if kind == AP_RET else WAP
                    for t in range(n_ties):
                        if cut_start + sizes[t] > limit:
                            cut = t
                            limit = cut_start
                            break
                        cut_start += sizes[t]
            mean = 0.0
            var = 0.0
            total_lost = 0.0
            n_closed = 0
            s = np.int64(0)  # typed: a literal 0 would compile each callee once more for it
            before = np.int64(0)
            grade_before = 0.0
            for t in range(n_ties):
                n = sizes[t]
                lost[t] = 0.0
                if n == 0:
                    continue
                if s >= limit:
                    break
                m = min(n, limit - s)
                r = relevant[t]
                if kind == RR:
                    if r > 0:
                        mean, var = _rr_tie(s, n, r, limit - s)
                        break
                else:
                    direct = (m if kind == DCG else n) <= direct_limit
                    e, v, lost[t] = (_tie_term_wap if weighted else _tie_term)(
                        kind, s, n, m, r, before, gain_sums[t], gain_squares[t], tables, direct, grade_before,
                        grade_sums[t], grade_squares[t])
                    mean += e
                    var += v
                    total_lost += lost[t]
                    n_closed += lost[t] > 0.0
                s += n
                before += r
                grade_before += grade_sums[t]
            hits = before  # relevant items before the limit (the redo below walks ``before`` again)
            grades_hit = grade_before
            if total_lost > _CLOSED_TOLERANCE * var:  # the ties that may have lost too much, rank by rank
                threshold = _CLOSED_TOLERANCE * var / n_closed
                s = np.int64(0)
                before = np.int64(0)
                grade_before = 0.0
                for t in range(n_ties):
                    n = sizes[t]
                    if s >= limit:
                        break
                    m = min(n, limit - s)
                    if lost[t] > threshold and (m if kind == DCG else n) <= _DIRECT_MAX:
                        e, v, _ = (_tie_term_wap if weighted else _tie_term)(
                            kind, s, n, m, relevant[t], before, gain_sums[t], gain_squares[t], tables,
                            np.bool_(False), grade_before, grade_sums[t], grade_squares[t])
                        e2, v2, _ = (_tie_term_wap if weighted else _tie_term)(
                            kind, s, n, m, relevant[t], before, gain_sums[t], gain_squares[t], tables,
                            np.bool_(True), grade_before, grade_sums[t], grade_squares[t])
                        var += v2 - v
                    s += n
                    before += relevant[t]
                    grade_before += grade_sums[t]
            if retrieved:
                if over_hits:
                    wap_cut = False
                    if weighted:  # a closure constant: the other kernels neither compile nor link _wap_cut_tie
                        wap_cut = cut >= 0 and kind == WAP
                        if wap_cut:
                            mean, var = _wap_cut_tie(cut_start, sizes[cut], relevant[cut], cutoff - cut_start,
                                                     hits, grades_hit, grade_sums[cut], grade_squares[cut], mean,
                                                     max(var, 0.0), direct_limit)
                    if wap_cut:
                        pass  # WAP@k's mixture above
                    elif cut >= 0:
                        mean, var = _ap_cut_tie(cut_start, sizes[cut], relevant[cut], cutoff - cut_start, hits, mean,
                                                max(var, 0.0), direct_limit)
                    elif hits > 0:
                        mean /= hits
                        var /= hits * hits
            means[q, i] = mean
            variances[q, i] = max(var, 0.0)

    return query_spread


query_spread, query_spread_retrieved, query_spread_wap, query_spread_retrieved_wap = jit_variants(
    _query_spread_kernel, SPREAD_VARIANTS)


def _hamming_spread_kernel(retrieved, weighted):
    """:func:`hamming_spread` and its variants (:data:`SPREAD_VARIANTS`), each calling the
    :func:`query_spread` variant of the same flags: one source, four kernels
    (:func:`._jit.jit_variants`)."""

    def hamming_spread(hist, gains, kinds, cutoffs, tables, direct_limit, means, variances, lo, hi):
        """:func:`query_spread` of queries lo..hi-1 of Hamming counts ``hist[q, d, grade]``: every
        distance is a tie, grade > 0 relevant.

        Parameters
        ----------
        hist : (n_queries, n_bits + 1, n_grades) int64
            Counts by (distance, grade).
        gains : (n_grades,) float64, read-only
            Value of each grade: its gain, or the grade itself for grade sums.
        kinds : (n_kinds,) int64, read-only
            Numerator per column: HITS, GAINS, DCG, AP, RR or RPREC, and those of the kernel's
            variant (:func:`query_spread`).
        cutoffs : (n_kinds,) int64, read-only
            Cutoff per column; 0: the whole list (not read for RPREC).
        tables : (4, depth + 1) float64, read-only
            Double-double prefix sums of the discounts and their squares (a 4 x 1 stand-in when no DCG
            column looks past DIRECT_LIMIT ranks).
        direct_limit : int
            Ties up to this long are summed rank by rank (DIRECT_LIMIT).
        means : (n_queries, n_kinds) float64
            Written: expectation of each column's numerator, rows lo..hi-1.
        variances : (n_queries, n_kinds) float64
            Written: its variance, rows lo..hi-1.
        lo, hi : int
            The queries of this block, lo..hi-1.
        """
        n_d = hist.shape[1]
        n_g = hist.shape[2]
        # two allocations, not six: each filled() is typed again where it is inlined
        counts = filled(np.empty(2 * n_d, dtype=np.int64), 0)
        sizes, relevant = counts[:n_d], counts[n_d:]
        sums = filled(np.empty(4 * n_d, dtype=np.float64), 0.0)
        gain_sums, gain_squares = sums[:n_d], sums[n_d:2 * n_d]
        grade_sums, grade_squares = sums[2 * n_d:3 * n_d], sums[3 * n_d:]
        for q in range(lo, hi):
            total_relevant = np.int64(0)
            for d in range(n_d):
                n = 0
                r = 0
                g_sum = 0.0
                for g in range(n_g):
                    n += hist[q, d, g]
                    g_sum += hist[q, d, g] * gains[g]
                    if g > 0:
                        r += hist[q, d, g]
                squares = 0.0
                r_sum = 0.0
                r_squares = 0.0
                if n > 0:
                    mean = g_sum / n
                    for g in range(n_g):
                        squares += hist[q, d, g] * (gains[g] - mean) * (gains[g] - mean)
                    if r > 0:
                        for g in range(1, n_g):
                            r_sum += hist[q, d, g] * gains[g]
                        r_mean = r_sum / r
                        for g in range(1, n_g):
                            r_squares += hist[q, d, g] * (gains[g] - r_mean) * (gains[g] - r_mean)
                grade_sums[d] = r_sum
                grade_squares[d] = r_squares
                sizes[d] = n
                relevant[d] = r
                gain_sums[d] = g_sum
                gain_squares[d] = squares
                total_relevant += r
            ((query_spread_retrieved_wap if weighted else query_spread_retrieved) if retrieved
             else (query_spread_wap if weighted else query_spread))(
                sizes, relevant, gain_sums, gain_squares, grade_sums, grade_squares, n_d, total_relevant, kinds,
                cutoffs, tables, direct_limit, means, variances, q)

    return hamming_spread


hamming_spread, hamming_spread_retrieved, hamming_spread_wap, hamming_spread_retrieved_wap = jit_variants(
    _hamming_spread_kernel, SPREAD_VARIANTS)


def _list_spread_kernel(retrieved, weighted):
    """:func:`list_spread` and its variants (:data:`SPREAD_VARIANTS`), each calling the
    :func:`query_spread` variant of the same flags: one source, four kernels
    (:func:`._jit.jit_variants`)."""

    def list_spread(offsets, scores, gains, is_relevant, extra_relevant, kinds, cutoffs, tables, direct_limit, means,
                    variances, lo, hi):
        """:func:`query_spread` of queries lo..hi-1 of scored lists: rows offsets[q]..offsets[q+1]-1,
        ranked by score descending, equal scores a tie; ``extra_relevant[q]`` relevant items missing
        from the list count in R.

        Parameters
        ----------
        offsets : (n_queries + 1,) int64, read-only
            Query q's rows are offsets[q]:offsets[q + 1].
        scores : (n_rows,) float64, read-only
            Scores, higher ranks first.
        gains : (n_rows,) float64, read-only
            Value of each row: its gain, or its grade for grade sums.
        is_relevant : (n_rows,) int64, read-only
            1 for a relevant row, else 0.
        extra_relevant : (n_queries,) int64, read-only
            Relevant items missing from each list.
        kinds : (n_kinds,) int64, read-only
            Numerator per column: HITS, GAINS, DCG, AP, RR or RPREC, and those of the kernel's
            variant (:func:`query_spread`).
        cutoffs : (n_kinds,) int64, read-only
            Cutoff per column; 0: the whole list (not read for RPREC).
        tables : (4, depth + 1) float64, read-only
            Double-double prefix sums of the discounts and their squares (a 4 x 1 stand-in when no DCG
            column looks past DIRECT_LIMIT ranks).
        direct_limit : int
            Ties up to this long are summed rank by rank (DIRECT_LIMIT).
        means : (n_queries, n_kinds) float64
            Written: expectation of each column's numerator, rows lo..hi-1.
        variances : (n_queries, n_kinds) float64
            Written: its variance, rows lo..hi-1.
        lo, hi : int
            The queries of this block, lo..hi-1.
        """
        for q in range(lo, hi):
            a = offsets[q]
            n_rows = offsets[q + 1] - a
            order = np.argsort(-scores[a : a + n_rows], kind="mergesort")
            # two allocations, not six: each filled() is typed again where it is inlined
            counts = filled(np.empty(2 * n_rows, dtype=np.int64), 0)
            sizes, relevant = counts[:n_rows], counts[n_rows:]
            sums = filled(np.empty(4 * n_rows, dtype=np.float64), 0.0)
            gain_sums, gain_squares = sums[:n_rows], sums[n_rows:2 * n_rows]
            grade_sums, grade_squares = sums[2 * n_rows:3 * n_rows], sums[3 * n_rows:]
            n_ties = 0
            total_relevant = extra_relevant[q]
            start = 0
            while start < n_rows:
                stop = start + 1
                while stop < n_rows and scores[a + order[stop]] == scores[a + order[start]]:
                    stop += 1
                r = 0
                g_sum = 0.0
                for i in range(start, stop):
                    g_sum += gains[a + order[i]]
                    r += is_relevant[a + order[i]]
                mean = g_sum / (stop - start)
                squares = 0.0
                for i in range(start, stop):
                    d = gains[a + order[i]] - mean
                    squares += d * d
                r_sum = 0.0
                for i in range(start, stop):
                    r_sum += gains[a + order[i]] * is_relevant[a + order[i]]
                r_squares = 0.0
                if r > 0:
                    for i in range(start, stop):
                        d = gains[a + order[i]] - r_sum / r
                        r_squares += d * d * is_relevant[a + order[i]]
                grade_sums[n_ties] = r_sum
                grade_squares[n_ties] = r_squares
                sizes[n_ties] = stop - start
                relevant[n_ties] = r
                gain_sums[n_ties] = g_sum
                gain_squares[n_ties] = squares
                total_relevant += r
                n_ties += 1
                start = stop
            ((query_spread_retrieved_wap if weighted else query_spread_retrieved) if retrieved
             else (query_spread_wap if weighted else query_spread))(
                sizes, relevant, gain_sums, gain_squares, grade_sums, grade_squares, n_ties, total_relevant, kinds,
                cutoffs, tables, direct_limit, means, variances, q)

    return list_spread


list_spread, list_spread_retrieved, list_spread_wap, list_spread_retrieved_wap = jit_variants(
    _list_spread_kernel, SPREAD_VARIANTS)
