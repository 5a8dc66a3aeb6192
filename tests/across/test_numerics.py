"""Numerical accuracy of the closed forms' primitives and of deep, wide ties (docs/ties.md, section 7),
against 40-digit mpmath and scipy."""

from fractions import Fraction
from math import comb

import mpmath
import numpy as np
import pytest
from scipy.stats import hypergeom

from fasttie._kernels.finalize import AP_NUM, AP_RET, DCG, HITS, N_QUANTITIES, N_SCALARS, RR, finalize_ties_optional
from fasttie._kernels.tie_math import first_relevant_rr, harmonic_diff, hypergeometric_weights, shifted_harmonic
from fasttie.finalize.values import discount_table, read_only

mpmath.mp.dps = 40


def mp_dh(t, j):
    return mpmath.harmonic(t + j) - mpmath.harmonic(t)


@pytest.mark.parametrize("t", [0, 1, 5, 31, 32, 33, 100, 10**4, 10**6, 10**9])
@pytest.mark.parametrize("j", [1, 2, 31, 32, 33, 64, 1000, 10**5])
def test_harmonic_diff_relative_accuracy(t, j):
    exact = mp_dh(t, j)
    assert abs(harmonic_diff(t, j) - exact) / exact < 4e-16
    exact_l = j - (t + 1) * exact  # sum (p-1)/(t+p)
    got_l = shifted_harmonic(t, j, harmonic_diff(t, j))
    if j > 1:
        assert abs(got_l - exact_l) / exact_l < 1e-14


@pytest.mark.parametrize(
    "n, r, j",
    [(10, 3, 4), (50, 50, 20), (50, 0, 20), (1000, 10, 999), (10**5, 3000, 40000), (10**6, 10**5, 5 * 10**5)],
)
def test_hypergeometric_walk_matches_scipy(n, r, j):
    weights = np.zeros(min(r, j) + 1)
    lo, hi, total, x_min = hypergeometric_weights(n, r, j, weights)
    xs = np.arange(lo, hi + 1)
    pmf = weights[xs - x_min] / total
    ref = hypergeom(n, r, j).pmf(xs)
    big = ref > 1e-12
    np.testing.assert_allclose(pmf[big], ref[big], rtol=1e-8)
    assert hypergeom(n, r, j).pmf(np.arange(x_min, lo)).sum() < 1e-15
    assert hypergeom(n, r, j).pmf(np.arange(hi + 1, min(r, j) + 1)).sum() < 1e-15


def exact_rr(t, n, r, limit):
    total = Fraction(0)
    for p in range(1, min(n - r + 1, limit) + 1):
        total += Fraction(comb(n - p, r - 1), comb(n, r)) / (t + p)
    return total


@pytest.mark.parametrize("t, n, r", [(0, 1, 1), (0, 5, 1), (3, 7, 2), (10, 40, 7), (0, 60, 60), (1000, 200, 3)])
@pytest.mark.parametrize("limit", [1, 3, 10**9])
def test_first_relevant_rr_exact(t, n, r, limit):
    assert first_relevant_rr(t, n, r, limit) == pytest.approx(float(exact_rr(t, n, r, limit)), rel=1e-14)


def _finalize(ties, cutoffs, gains=(0.0, 1.0)):
    tie_n = np.array([n for n, _ in ties], dtype=np.int64)
    tie_r = np.array([r for _, r in ties], dtype=np.int64)
    total = int(tie_r.sum())
    out = np.zeros((N_QUANTITIES, len(cutoffs)))
    scalars = np.zeros(N_SCALARS)
    cutoffs = np.array(cutoffs, dtype=np.int64)
    # the plan's tables read-only, as every caller passes them (one compiled signature: test_warmup)
    tables = [read_only(a) for a in (cutoffs, np.full(len(cutoffs), np.log(0.8)),
                                     discount_table(int(min(cutoffs.max(), tie_n.sum()))))]
    finalize_ties_optional(  # the kernel with the expected ratios (need_ratio)
        tie_n, tie_r, tie_n - tie_r, tie_r.astype(float), tie_r * gains[1], 0, int((tie_n - tie_r).sum()),
        np.array([gains[1]]), np.array([total]), *tables, True, 0, out, scalars,
    )
    return out


def mp_ap_numerator(ties, k):
    """E[sum rel_i hits@i / i] over the top k, by the precision kernel of docs/ties.md in 40-digit arithmetic."""
    total, t, hits = mpmath.mpf(0), 0, 0
    for n, r in ties:
        j = min(n, k - t)
        if j <= 0:
            break
        dh = mp_dh(t, j)
        lh = j - (t + 1) * dh
        alpha = mpmath.mpf(r * hits + r) / n
        beta = mpmath.mpf((r - 1) * r) / (n * (n - 1)) if n > 1 else 0
        total += alpha * dh + beta * lh
        t += n
        hits += r
    return total


def test_deep_tie_ap_matches_40_digits():
    # 900 relevant items in a tie of 1000 that comes after a 10**6-item tie without relevance
    ties = [(10**6, 0), (1000, 900), (5000, 50)]
    n_all = sum(n for n, _ in ties)
    out = _finalize(ties, [10**6 + 500, n_all])
    exact = mp_ap_numerator(ties, n_all) / 950
    assert abs(out[AP_NUM, 1] / 950 - exact) / exact < 1e-13
    exact_k = mp_ap_numerator(ties, 10**6 + 500)
    assert abs(out[AP_NUM, 0] - exact_k) / exact_k < 1e-13
    assert out[HITS, 0] == pytest.approx(450.0, rel=1e-15)


def mp_ap_retrieved(ties, k):
    """E[AP numerator / hits@k] by explicit conditioning on the cut tie, 40 digits."""
    t, hits, c = 0, 0, 0
    while t + ties[c][0] < k:
        t, hits, c = t + ties[c][0], hits + ties[c][1], c + 1
    before = mp_ap_numerator(ties[:c], t)
    n, r = ties[c]
    j = k - t
    value = mpmath.mpf(0)
    for x in range(max(0, j - (n - r)), min(r, j) + 1):
        if hits + x == 0:
            continue
        weight = mpmath.binomial(r, x) * mpmath.binomial(n - r, j - x) / mpmath.binomial(n, j)
        dh = mp_dh(t, j)
        lh = j - (t + 1) * dh
        alpha = mpmath.mpf(x * (hits + 1)) / j
        beta = mpmath.mpf(x * (x - 1)) / (j * (j - 1)) if j > 1 else 0
        value += weight * (before + alpha * dh + beta * lh) / (hits + x)
    return value


@pytest.mark.parametrize(
    "ties, k",
    [([(20, 3), (100000, 4000)], 60000), ([(5, 5), (3, 0), (1000, 10)], 500), ([(1, 0), (2000, 1)], 7)],
)
def test_ap_retrieved_matches_40_digits(ties, k):
    out = _finalize(ties, [k])
    exact = mp_ap_retrieved(ties, k)
    assert abs(out[AP_RET, 0] - exact) / exact < 1e-12


def test_rr_and_dcg_in_a_wide_tie():
    ties = [(100, 0), (10**5, 2)]
    out = _finalize(ties, [10**5 + 100])
    exact_rr = sum(
        mpmath.mpf(comb(10**5 - p, 1)) / comb(10**5, 2) / (100 + p) for p in range(1, 10**5)
    )
    assert abs(out[RR, 0] - exact_rr) / exact_rr < 1e-13
    exact_dcg = mpmath.mpf(2) / 10**5 * mpmath.fsum(1 / mpmath.log(1 + i, 2) for i in range(101, 10**5 + 101))
    assert abs(out[DCG, 0] - exact_dcg) / exact_dcg < 1e-12
