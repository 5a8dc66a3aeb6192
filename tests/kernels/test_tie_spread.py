"""The WAP terms of fasttie._kernels.tie_spread alone: a tie's part of the WAP numerator and the
hypergeometric mixture of WAP@k over the relevant items retrieved, against enumeration of every
order of a tie (Fractions) and, for long ties deep in the list, against an independent exact
formula (sums over the coincidence patterns of positions, itself checked against enumeration)."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from fasttie._kernels import tie_spread as kernels
from fasttie.finalize.values import read_only


def _moments(values):
    mean = sum(values) / len(values)
    return mean, sum((v - mean) ** 2 for v in values) / len(values)


def tie_part_by_enumeration(s, n, grades, m, beta):
    """(E, Var) of X = sum over tie ranks x <= m of [g_x > 0] (beta + grades up to x) / (s + x), over
    every order of the tie's items (``grades`` the positive ones, n - len(grades) zeros)."""
    items = list(grades) + [0] * (n - len(grades))
    values = []
    for order in itertools.permutations(items):
        cumulative, x = Fraction(beta), Fraction(0)
        for rank, g in enumerate(order[:m], start=1):
            cumulative += g
            if g > 0:
                x += cumulative / (s + rank)
        values.append(x)
    return _moments(values)


def _falling(n, k):
    return math.prod(range(n - k + 1, n + 1)) if n >= k else 0


def tie_part_by_patterns(s, n, grades, m, beta):
    """(E, Var) of the same X, exact, from sums over the coincidence patterns of positions.

    X = T1 + T2, T1 = sum_x w_x (beta z_x + g_x), T2 = sum_{y<x} w_x z_x g_y; the expectation of a
    product of item values at distinct positions is a sum over distinct items over n (n-1)...:
    written from P1 = sum g, P2 = sum g^2, r (z g = g: the zeros are the non-relevant items)."""
    r = len(grades)
    w = [Fraction(1, s + x) if x <= m else Fraction(0) for x in range(1, n + 1)]
    p1, p2, beta = Fraction(sum(grades)), Fraction(sum(g * g for g in grades)), Fraction(beta)
    f2, f3, f4 = (_falling(n, k) or 1 for k in (2, 3, 4))
    sw, sw2 = sum(w), sum(v * v for v in w)
    lin = sum(a * v for a, v in enumerate(w))  # sum (x - 1) w_x
    q1 = sum(a * v * v for a, v in enumerate(w))
    q2 = sum(a * (a - 1) * v * v for a, v in enumerate(w))
    a2 = (sw * sw - sw2) / 2
    m1, run = Fraction(0), Fraction(0)  # sum_{x<x'} (x - 1) w_x w_x'
    for a, v in enumerate(w):
        m1 += v * run
        run += a * v
    sh, sh2 = beta * r + p1, beta * beta * r + 2 * beta * p1 + p2  # sums of h = beta z + g and h^2
    pairs = p1 * p1 - p2  # sum over ordered pairs of distinct items of g g'
    mean = sw * sh / n + lin * (r - 1) * p1 / f2
    t11 = sw2 * sh2 / n + (sw * sw - sw2) * (sh * sh - sh2) / f2
    t12 = (q1 * (beta * (r - 1) * p1 + pairs) / f2 + a2 * (beta * (r - 1) * p1 + (r - 1) * p2) / f2
           + (sw * lin - q1 - a2) * (beta * (r - 1) * (r - 2) * p1 + (r - 2) * pairs) / f3)
    t22 = (q1 * (r - 1) * p2 / f2 + q2 * (r - 2) * pairs / f3 + 2 * m1 * (r - 2) * pairs / f3
           + 2 * m1 * (r - 1) * (r - 2) * p2 / f3 + (lin * lin - q1 - q2 - 4 * m1) * (r - 2) * (r - 3) * pairs / f4)
    return mean, t11 + 2 * t12 + t22 - mean * mean


def _kernel_tie(s, n, grades, m, beta, direct):
    g = np.asarray(grades, dtype=np.float64)
    squares = float(((g - g.mean()) ** 2).sum()) if len(g) else 0.0
    return kernels._wap_tie(s, n, len(grades), m, float(beta), float(g.sum()), squares, direct)


def test_the_oracle_on_a_hand_example():
    # grades 2, 1, 0 tied at ranks 1-3: the six orders give W = 7/2, 3, 5/2, 2, 2, 3/2 (2, then 1 + 3/2, ...)
    mean, var = tie_part_by_enumeration(0, 3, [2, 1], 3, 0)
    assert (mean, var) == (Fraction(29, 12), Fraction(65, 144))
    assert tie_part_by_patterns(0, 3, [2, 1], 3, 0) == (mean, var)


SMALL_TIES = [(0, 4, [1, 2], 4, 0), (3, 5, [1, 3, 2], 3, 4), (2, 6, [2, 2, 1, 3], 6, 1), (0, 5, [1, 1, 1, 1, 1], 5, 0),
              (1, 4, [3], 2, 2), (5, 6, [1, 2, 3, 4], 4, 7), (0, 3, [2, 1, 1], 2, 0), (7, 6, [4, 1], 6, 3)]


@pytest.mark.parametrize("s, n, grades, m, beta", SMALL_TIES)
def test_tie_part_against_every_order(s, n, grades, m, beta):
    exact = tie_part_by_enumeration(s, n, grades, m, beta)
    assert tie_part_by_patterns(s, n, grades, m, beta) == exact
    for direct in (True, False):
        e, v, _ = _kernel_tie(s, n, grades, m, beta, direct)
        assert e == pytest.approx(float(exact[0]), abs=1e-13, rel=1e-13)
        assert v == pytest.approx(float(exact[1]), abs=1e-13, rel=1e-12)


def test_a_planted_wrong_formula_fails():
    """The grade-order term is needed: without it (the AP term alone, scaled by the mean grade)
    the variance of a graded tie is wrong."""
    s, n, grades, m, beta = 2, 6, [2, 2, 1, 3], 6, 1
    exact = float(tie_part_by_enumeration(s, n, grades, m, beta)[1])
    g = np.asarray(grades, dtype=np.float64)
    _, planted, _ = kernels._wap_tie(s, n, len(grades), m, float(beta), float(g.sum()), 0.0, True)
    assert abs(planted - exact) > 1e-3 * exact


@pytest.mark.parametrize("s, n, m, seed", [(1000, 120, 120, 0), (100_000, 110, 110, 1), (100_000, 120, 50, 2),
                                           (1_000_000, 90, 90, 3), (50, 100, 80, 4), (300_000, 90, 60, 5)])
def test_long_ties_deep_in_the_list_against_exact_sums(s, n, m, seed):
    """Rank by rank: to 1e-12 of the variance (the AP term's centring, positive grade-order sums);
    the closed forms within the rounding bound they return (which sends a tie back to the walk)."""
    rng = np.random.default_rng(seed)
    r = int(rng.integers(2, n))
    grades = rng.integers(1, 5, r).tolist()
    beta = int(rng.integers(0, 3 * s + 1))
    mean, var = (float(v) for v in tie_part_by_patterns(s, n, grades, m, beta))
    e, v, _ = _kernel_tie(s, n, grades, m, beta, True)
    assert e == pytest.approx(mean, rel=1e-14) and v == pytest.approx(var, rel=1e-12)
    e, v, lost = _kernel_tie(s, n, grades, m, beta, False)
    assert e == pytest.approx(mean, rel=1e-14) and abs(v - var) <= lost + 1e-15 * var


# ------------------------------------------- WAP@k over the relevant items retrieved, one cut tie


def cut_tie_by_enumeration(s, n, grades, j, before_grades):
    """(E, Var) of WAP@k = W_k / hits@k with ``before_grades`` at ranks 1..s (a fixed order) and a
    tie of n items (``grades`` positive, the rest 0) at ranks s+1..s+n, k = s + j."""
    items = list(grades) + [0] * (n - len(grades))
    values = []
    for order in itertools.permutations(items):
        ranked = list(before_grades) + list(order[:j])
        cumulative, total, hits = 0, Fraction(0), 0
        for rank, g in enumerate(ranked, start=1):
            cumulative += g
            if g > 0:
                hits += 1
                total += Fraction(cumulative, rank)
        values.append(total / hits if hits else Fraction(0))
    return _moments(values)


def _kernel_cut(s, n, grades, j, before_grades, direct_limit, grade_square=None):
    cumulative, mean_before, hits = 0, 0.0, 0
    for rank, g in enumerate(before_grades, start=1):
        cumulative += g
        if g > 0:
            hits += 1
            mean_before += cumulative / rank
    g = np.asarray(grades, dtype=np.float64)
    squares = float(((g - g.mean()) ** 2).sum()) if grade_square is None else grade_square
    return kernels._wap_cut_tie(s, n, len(grades), j, hits, float(cumulative), float(g.sum()), squares,
                                mean_before, 0.0, direct_limit)


CUT_TIES = [(2, 5, [1, 3], 2, [0, 2]), (3, 6, [2, 1, 3], 4, [1, 0, 0]), (0, 5, [1, 2, 2], 3, []),
            (1, 6, [3, 1, 2, 1], 1, [0]), (4, 5, [2, 1, 4, 1], 2, [0, 0, 0, 0]), (2, 6, [1, 2, 3, 4, 2], 5, [2, 1])]


@pytest.mark.parametrize("s, n, grades, j, before_grades", CUT_TIES)
def test_cut_tie_against_every_order(s, n, grades, j, before_grades):
    mean, var = cut_tie_by_enumeration(s, n, grades, j, before_grades)
    for direct_limit in (64, 0):  # rank by rank, and the closed forms (sent back to the walk where they lose)
        e, v = _kernel_cut(s, n, grades, j, before_grades, direct_limit)
        assert e == pytest.approx(float(mean), abs=1e-13) and v == pytest.approx(float(var), abs=1e-13)
    # planted: the cut tie's top part holding a fixed multiset (no spread of the grade subset) is wrong
    _, planted = _kernel_cut(s, n, grades, j, before_grades, 64, grade_square=0.0)
    assert abs(planted - float(var)) > 1e-4 * float(var)


def test_long_cut_tie_closed_forms_against_the_walk():
    rng = np.random.default_rng(7)
    grades = rng.integers(1, 6, 70).tolist()
    for s, j in ((200_000, 150), (5_000, 90), (40, 300)):
        direct = _kernel_cut(s, 400, grades, j, [], 10**9)
        closed = _kernel_cut(s, 400, grades, j, [], 0)
        assert closed[0] == pytest.approx(direct[0], rel=1e-13) and closed[1] == pytest.approx(direct[1], rel=1e-9)


def test_list_kernel_takes_wap_columns():
    """The ranked-list kernel: WAP over the relevant rows' values (the others count 0), as the
    Hamming kernel; no door sends WAP to it yet (WAP is a Hamming metric)."""
    grades = np.array([0.0, 2.0, 1.0, 0.0, 3.0, 1.0, 0.0])
    scores = np.array([3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0])
    kinds = read_only(np.array([kernels.WAP, kernels.WAP_RET, kernels.WAP_RET], dtype=np.int64))
    cutoffs = read_only(np.array([0, 3, 6], dtype=np.int64))
    means, variances = np.zeros((1, 3)), np.zeros((1, 3))
    kernels.list_spread_retrieved_wap(read_only(np.array([0, 7], dtype=np.int64)), read_only(scores), read_only(grades),
                                      read_only((grades > 0).astype(np.int64)), read_only(np.zeros(1, dtype=np.int64)),
                                      kinds, cutoffs, read_only(np.zeros((4, 1))), kernels.DIRECT_LIMIT, means, variances, 0, 1)
    values = {3: [], 6: [], 0: []}
    for a in itertools.permutations([2, 1, 0]):
        for b in itertools.permutations([3, 1, 0]):
            ranked = [0, *a, *b]
            for k in values:
                cumulative, total, hits = 0, Fraction(0), 0
                for rank, g in enumerate(ranked[: k or None], start=1):
                    cumulative += g
                    if g > 0:
                        hits += 1
                        total += Fraction(cumulative, rank)
                values[k].append(total if k == 0 else (total / hits if hits else Fraction(0)))
    for column, k in enumerate((0, 3, 6)):
        mean, var = _moments(values[k])
        assert means[0, column] == pytest.approx(float(mean), abs=1e-13)
        assert variances[0, column] == pytest.approx(float(var), abs=1e-13)


def test_long_graded_hamming_ties_closed_forms_against_direct_sums():
    """Distance buckets of up to ~40,000 codes with graded items (multi-hot labels): WAP and
    WAP@k with the closed forms past DIRECT_LIMIT (walked again where their rounding bound asks)
    against rank-by-rank sums everywhere, within the 1e-6 of the variance the bound guarantees."""
    import fasttie as ft

    rng = np.random.default_rng(11)
    q, db = rng.choice([-1, 1], (4, 16)), rng.choice([-1, 1], (200_000, 16))
    stats = ft.tie_stats(q, db, rng.integers(0, 2, (4, 6)), (rng.random((200_000, 6)) < 0.3).astype(np.uint8))
    counts = stats.counts
    kinds = read_only(np.array([kernels.WAP, kernels.WAP_RET, kernels.WAP_RET, kernels.WAP], dtype=np.int64))
    cutoffs = read_only(np.array([0, 1000, 50_000, 20_000], dtype=np.int64))
    grades = read_only(np.arange(counts.shape[2], dtype=np.float64))
    out = []
    for limit in (kernels.DIRECT_LIMIT, 10**9):
        means, variances = np.zeros((4, 4)), np.zeros((4, 4))
        kernels.hamming_spread_retrieved_wap(counts, grades, kinds, cutoffs, read_only(np.zeros((4, 1))), limit, means, variances, 0, 4)
        out.append((means, variances))
    assert counts.sum(axis=2).max() > 10_000 and counts.shape[2] > 2
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-6)  # in fact 1e-9 or better here
