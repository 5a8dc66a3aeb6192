"""spread=True: the standard deviation of each metric over uniformly random tie orders, held to
an enumeration of every tie order (exact fractions where the metric is rational), to a Monte
Carlo estimate on longer lists, and to its own closed forms for long ties."""

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fasttie as ft
from fasttie._kernels import tie_spread as kernels
from fasttie.finalize.values import read_only


# ---------------------------------------------------------------- the oracle: one fixed order


def _dcg(gains, k):
    return math.fsum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))


def metric_value(name, k, grades, gains, n_relevant, ideal_gains, level=1, denominator="total"):
    """The metric of one fixed order, written from its definition (Fractions where rational).

    grades / gains: of the ranked items in rank order; n_relevant: R (missing items too);
    ideal_gains: every positive gain of the query (missing items too)."""
    n = len(grades)
    rel = [1 if g >= level else 0 for g in grades]
    cut = n if k is None else min(k, n)
    hits = sum(rel[:cut])
    if name == "P":
        return Fraction(hits, k)
    if name == "R":
        return Fraction(hits, n_relevant) if n_relevant else Fraction(0)
    if name == "F1":
        return Fraction(2 * hits, k + n_relevant) if hits else Fraction(0)
    if name == "Hits":
        return Fraction(hits)
    if name == "Success":
        return Fraction(int(hits > 0))
    if name == "ACG":
        return Fraction(sum(Fraction(g) for g in grades[:cut])) / k
    if name == "DCG":
        return _dcg(gains, cut)
    if name == "nDCG":
        ideal = _dcg(sorted(ideal_gains, reverse=True), len(ideal_gains) if k is None else k)
        return _dcg(gains, cut) / ideal if ideal > 0 else 0.0
    if name == "RR":
        first = next((i for i in range(cut) if rel[i]), None)
        return Fraction(0) if first is None else Fraction(1, first + 1)
    if name == "Rprec":
        return Fraction(sum(rel[: min(n_relevant, n)]), n_relevant) if n_relevant else Fraction(0)
    if name == "AP":
        total, seen = Fraction(0), 0
        for i in range(cut):
            if rel[i]:
                seen += 1
                total += Fraction(seen, i + 1)
        if not n_relevant:
            return Fraction(0)
        if denominator == "retrieved":  # the relevant items in the top k (the list's, for the whole list)
            return total / hits if hits else Fraction(0)
        den = n_relevant if denominator == "total" or k is None else min(k, n_relevant)
        return total / den
    raise AssertionError(name)


def tie_orders(scores_desc_groups):
    """Every order of the items that keeps each tie in place: lists of item indices."""
    per_tie = [list(itertools.permutations(group)) for group in scores_desc_groups]
    for combo in itertools.product(*per_tie):
        yield [i for part in combo for i in part]


def oracle(name, k, groups, grades, gains, n_relevant, ideal_gains, **kw):
    """(mean, std) of the metric over every tie order (exact where rational)."""
    values = [metric_value(name, k, [grades[i] for i in order], [gains[i] for i in order], n_relevant, ideal_gains,
                           **kw) for order in tie_orders(groups)]
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return float(mean), math.sqrt(var)


def groups_by_score(scores):
    """Item indices grouped by equal score, highest first."""
    out = {}
    for i, s in enumerate(scores):
        out.setdefault(-s, []).append(i)
    return [out[key] for key in sorted(out)]


LIST_METRICS = [("P", 1), ("P", 3), ("P", 5), ("P", 9), ("R", 2), ("R", 4), ("F1", 3), ("Hits", 2), ("Success", 2),
                ("ACG", 3), ("DCG", 2), ("DCG", 4), ("nDCG", 3), ("nDCG", None), ("DCG", None), ("RR", None), ("RR", 2),
                ("RR", 4), ("AP", None), ("AP", 2), ("AP", 3), ("AP", 5), ("Rprec", None)]


def _name(base, k):
    return base if k is None else f"{base}@{k}"


def _lists(seed, n_queries=6):
    rng = np.random.default_rng(seed)
    y_true, y_pred, sizes = [], [], []
    for _ in range(n_queries):
        n = int(rng.integers(2, 8))
        sizes.append(n)
        y_true += rng.choice([0, 0, 1, 2, 3], n).tolist()
        y_pred += rng.integers(0, 3, n).astype(float).tolist()  # few distinct scores: long ties
    return np.array(y_true, dtype=float), np.array(y_pred), np.array(sizes)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("denominator", ["total", "min", "retrieved"])
@pytest.mark.parametrize("gain", ["linear", "exp2"])
def test_ranked_lists_match_every_tie_order(seed, denominator, gain):
    y_true, y_pred, sizes = _lists(seed)
    unretrieved = [[1.0] if q % 3 == 0 else [] for q in range(len(sizes))]
    names = [_name(b, k) for b, k in LIST_METRICS]
    res = ft.rank_evaluate(y_true, y_pred, group=sizes, metrics=names, ties="average", gain=gain,
                           ap_denominator=denominator, unretrieved=unretrieved, spread=True)
    offsets = np.r_[0, np.cumsum(sizes)]
    for q in range(len(sizes)):
        grades = y_true[offsets[q]:offsets[q + 1]].tolist()
        gains = [g if gain == "linear" else 2.0 ** g - 1 for g in grades]
        extra = unretrieved[q]
        n_relevant = sum(g >= 1 for g in grades + extra)
        ideal = [g for g in gains + [g if gain == "linear" else 2.0 ** g - 1 for g in extra] if g > 0]
        groups = groups_by_score(y_pred[offsets[q]:offsets[q + 1]].tolist())
        for (base, k), name in zip(LIST_METRICS, names):
            mean, std = oracle(base, k, groups, grades, gains, n_relevant, ideal, denominator=denominator)
            assert res.per_query[name][q] == pytest.approx(mean, abs=1e-12), (name, q)
            assert res.tie_std[name][q] == pytest.approx(std, abs=1e-12), (name, q, grades, groups)
    for name in names:
        var = np.sum(res.tie_std[name] ** 2)
        assert res.mean_tie_std[name] == pytest.approx(math.sqrt(var) / len(sizes), abs=1e-15)


def _hamming_case(seed, multihot):
    rng = np.random.default_rng(seed)
    n_bits = 3
    q = rng.choice([-1, 1], (3, n_bits))
    db = rng.choice([-1, 1], (7, n_bits))
    if multihot:
        ql, dl = rng.integers(0, 2, (3, 3)), rng.integers(0, 2, (7, 3))
        grades = (ql @ dl.T)
    else:
        ql, dl = rng.integers(0, 2, 3), rng.integers(0, 2, 7)
        grades = (ql[:, None] == dl[None, :]).astype(int)
    distances = (q[:, None, :] != db[None, :, :]).sum(axis=2)
    return q, db, ql, dl, grades, distances


HAMMING_METRICS = [("P", 1), ("P", 3), ("P", 8), ("R", 2), ("F1", 4), ("ACG", 3), ("DCG", 2), ("nDCG", 3),
                   ("nDCG", None), ("RR", None), ("RR", 2), ("AP", None), ("AP", 1), ("AP", 3), ("AP", 5), ("AP", 7),
                   ("AP", 9), ("Rprec", None)]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("multihot", [False, True])
@pytest.mark.parametrize("denominator", ["total", "min", "retrieved"])
def test_hamming_matches_every_tie_order(seed, multihot, denominator):
    q, db, ql, dl, grades, distances = _hamming_case(seed, multihot)
    names = [_name(b, k) for b, k in HAMMING_METRICS]
    res = ft.evaluate(q, db, ql, dl, metrics=names, ap_denominator=denominator, spread=True)
    for i in range(len(q)):
        g = grades[i].tolist()
        gains = [2.0 ** x - 1 for x in g]
        groups = groups_by_score((-distances[i]).tolist())
        n_relevant = sum(x >= 1 for x in g)
        for (base, k), name in zip(HAMMING_METRICS, names):
            mean, std = oracle(base, k, groups, g, gains, n_relevant, [x for x in gains if x > 0],
                               denominator=denominator)
            assert res.per_query[name][i] == pytest.approx(mean, abs=1e-12), (name, i)
            assert res.tie_std[name][i] == pytest.approx(std, abs=1e-12), (name, i, g, groups)


def _ap_retrieved_oracle(grades, scores, unretrieved, k):
    """(mean, std) of AP@k over the relevant items retrieved, over every order inside ties."""
    n_relevant = sum(g >= 1 for g in grades) + unretrieved
    return oracle("AP", k, groups_by_score(scores), grades, grades, n_relevant, [], denominator="retrieved")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2)), min_size=1, max_size=7), st.integers(0, 2),
       st.sampled_from(["zero", "one", "skip"]))
def test_ap_over_retrieved_matches_every_tie_order(rows, unretrieved, empty):
    """AP@k over the relevant items retrieved, every cutoff from 1 to past the list's end, on
    random lists with few scores (long ties), some relevant items missing from the list."""
    grades = [float(g) for g, _ in rows]
    scores = [float(x) for _, x in rows]
    names = [f"AP@{k}" for k in range(1, len(rows) + 2)]
    res = ft.rank_evaluate(grades, scores, metrics=names, ap_denominator="retrieved", empty=empty,
                           unretrieved=[[1.0] * unretrieved], spread=True)
    empty_query = sum(grades) + unretrieved == 0
    for k, name in enumerate(names, start=1):
        mean, std = _ap_retrieved_oracle(grades, scores, unretrieved, k)
        if empty_query and empty == "skip":
            assert np.isnan(res.per_query[name][0]) and np.isnan(res.tie_std[name][0])
            continue
        if not (empty_query and empty == "one"):
            assert res.per_query[name][0] == pytest.approx(mean, abs=1e-12), name
        assert res.tie_std[name][0] == pytest.approx(std, abs=1e-12), (name, grades, scores)


@pytest.mark.parametrize("grades, scores, unretrieved", [
    ([0, 0, 0, 0], [1, 1, 0, 0], 0),  # no relevant item
    ([0, 0, 0, 0], [1, 1, 0, 0], 2),  # relevant items outside the list only
    ([1, 1, 1, 1], [1, 1, 1, 0], 0),  # relevant items only
    ([0, 0, 0, 1, 1], [2, 2, 2, 1, 1], 0),  # relevant only past the cutoffs 1..3
    ([0, 1, 0, 0, 1, 1], [3, 3, 3, 3, 1, 1], 1),  # a relevant item in a tie cut at 1..3, the rest past
    ([1, 1, 0, 1, 0], [2, 2, 2, 2, 2], 0),  # one tie: cut at every k
])
def test_ap_over_retrieved_edge_queries(grades, scores, unretrieved):
    names = [f"AP@{k}" for k in range(1, len(grades) + 3)]
    res = ft.rank_evaluate(np.array(grades, dtype=float), np.array(scores, dtype=float), metrics=names,
                           ap_denominator="retrieved", unretrieved=[[1.0] * unretrieved], spread=True)
    for k, name in enumerate(names, start=1):
        mean, std = _ap_retrieved_oracle(grades, scores, unretrieved, k)
        assert res.per_query[name][0] == pytest.approx(mean, abs=1e-12), name
        assert res.tie_std[name][0] == pytest.approx(std, abs=1e-12), name
        assert res.tie_min[name][0] - 1e-12 <= res.per_query[name][0] <= res.tie_max[name][0] + 1e-12
        if res.tie_min[name][0] == res.tie_max[name][0]:
            assert res.tie_std[name][0] == 0.0, name


def test_ap_over_retrieved_long_cut_ties_closed_forms_against_direct_sums():
    """Cutoffs inside distance buckets of up to ~40,000 items: the hypergeometric mixture with the
    closed forms for cut ties past DIRECT_LIMIT ranks against rank-by-rank sums everywhere."""
    rng = np.random.default_rng(12)
    q, db = rng.choice([-1, 1], (4, 16)), rng.choice([-1, 1], (200_000, 16))
    stats = ft.tie_stats(q, db, rng.integers(0, 3, 4), rng.integers(0, 3, 200_000))
    cutoffs = read_only(np.array([50, 1000, 5000, 40_000, 150_000, 300_000], dtype=np.int64))
    kinds = read_only(np.full(len(cutoffs), kernels.AP_RET, dtype=np.int64))
    gains = read_only(np.array([0.0, 1.0]))
    tables = read_only(np.zeros((4, 1)))
    out = []
    for limit in (kernels.DIRECT_LIMIT, 10**9):
        means, variances = np.zeros((4, len(kinds))), np.zeros((4, len(kinds)))
        kernels.hamming_spread_retrieved(stats.counts, gains, kinds, cutoffs, tables, limit, means, variances, 0, 4)
        out.append((means, variances))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-9)
    res = ft.evaluate(q, db, rng.integers(0, 3, 4), rng.integers(0, 3, 200_000), metrics=["AP@5000"], spread=True)
    assert np.all(res.tie_std["AP@5000"] > 0)


def test_monte_carlo_ap_over_retrieved():
    """AP@k over the relevant items retrieved on 600 12-bit codes: 100,000 random tie orders of
    one query, within 5 standard errors, k inside a tie."""
    rng = np.random.default_rng(6)
    q, db = rng.choice([-1, 1], (2, 12)), rng.choice([-1, 1], (600, 12))
    ql, dl = rng.integers(0, 4, 2), rng.integers(0, 4, 600)
    names = ["AP@50", "AP@200"]
    res = ft.evaluate(q, db, ql, dl, metrics=names, spread=True)
    dist, rel = (q[0] != db).sum(axis=1), (dl == ql[0]).astype(float)
    assert {np.sort(dist)[k - 1] for k in (50, 200)} & {np.sort(dist)[k] for k in (50, 200)}  # a tie is cut
    samples = {name: [] for name in names}
    for _ in range(10):
        r = rel[np.argsort(dist + rng.random((10_000, len(db))), axis=1)]
        hits = np.cumsum(r, axis=1)
        prec = np.cumsum(r * hits / np.arange(1, len(db) + 1), axis=1)
        for name in names:
            k = int(name[3:])
            samples[name].append(np.divide(prec[:, k - 1], hits[:, k - 1], out=np.zeros(10_000),
                                           where=hits[:, k - 1] > 0))
    for name in names:
        x = np.concatenate(samples[name])
        m4 = np.mean((x - x.mean()) ** 4)
        se_var = math.sqrt(max(m4 - x.var() ** 2, 0) / len(x))
        assert abs(res.tie_std[name][0] ** 2 - x.var()) <= 5 * se_var, name
        assert abs(res.per_query[name][0] - x.mean()) <= 5 * x.std() / math.sqrt(len(x)), name


def _hypergeometric_tie_cases():
    rng = np.random.default_rng(7)
    for _ in range(40):
        n = int(rng.integers(1, 9))
        r = int(rng.integers(0, n + 1))
        yield int(rng.integers(0, 40)), n, r, int(rng.integers(1, n + 1)), int(rng.integers(0, 6))


@pytest.mark.parametrize("s, n, r, m, before", list(_hypergeometric_tie_cases()))
def test_ap_tie_direct_and_closed_forms_match_enumeration(s, n, r, m, before):
    """The AP numerator of one tie, both ways, against every placement of its relevant items."""
    values = []
    for chosen in itertools.combinations(range(1, n + 1), r):
        values.append(sum(Fraction(before + j + 1, s + x) for j, x in enumerate(chosen) if x <= m))
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    for kernel in (kernels._ap_tie_direct, kernels._ap_tie_closed):
        e, v = kernel(s, n, r, m, before)[:2]
        assert e == pytest.approx(float(mean), rel=1e-12, abs=1e-15)
        assert v == pytest.approx(float(var), rel=1e-9, abs=1e-13)


def _ap_tie_high_precision(s, n, r, m, before):
    """The variance of one tie's AP numerator in 40-digit arithmetic (the uncentred sums)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):
        mp = mpmath.mpf
        alpha, pi1, pi2 = mp(before + 1), mp(r) / n, mp(r * (r - 1)) / (n * (n - 1))
        p1, q1 = mp(r - 1) / (n - 1), mp((r - 1) * (r - 2)) / ((n - 1) * (n - 2))
        p, q = mp(r - 2) / (n - 2), mp((r - 2) * (r - 3)) / ((n - 2) * (n - 3))
        mean = diagonal = pairs = s0 = s1 = mp(0)
        for x in range(1, m + 1):
            w, a = mp(1) / (s + x), mp(x - 1)
            mean += w * (alpha + p1 * a)
            diagonal += w * w * (alpha ** 2 + (2 * alpha + 1) * p1 * a + q1 * a * (a - 1))
            pairs += w * ((alpha * (alpha + 1) + p * alpha * (x - 2)) * s0 + (p * (alpha + 2) + q * (x - 3)) * s1)
            s0, s1 = s0 + w, s1 + a * w
        mean *= pi1
        return float(mean), float(pi1 * diagonal + 2 * pi2 * pairs - mean ** 2)


LONG_TIES = [(0, 5000, 40, 5000, 0), (100, 6000, 3000, 4500, 17), (20000, 5000, 7, 5000, 3),
             (500000, 8000, 2000, 8000, 1000), (500000, 8000, 2000, 7000, 1000), (100000, 3000, 1000, 3000, 50000)]


@pytest.mark.parametrize("s, n, r, m, before", LONG_TIES)
def test_long_ties_against_high_precision(s, n, r, m, before):
    """The rank-by-rank sums (centred weights) keep 11 digits deep in the list; the closed forms
    stay within the rounding bound they return, which decides when to sum rank by rank."""
    mean, var = _ap_tie_high_precision(s, n, r, m, before)
    e, v = kernels._ap_tie_direct(s, n, r, m, before)
    assert e == pytest.approx(mean, rel=1e-13) and v == pytest.approx(var, rel=1e-11)
    e, v, lost = kernels._ap_tie_closed(s, n, r, m, before)
    assert e == pytest.approx(mean, rel=1e-12) and abs(v - var) <= lost


@pytest.mark.parametrize("seed", range(3))
def test_closed_form_bound_on_random_long_ties(seed):
    """The closed forms' rounding bound holds on random long ties, cut or whole, at any depth."""
    rng = np.random.default_rng(seed)
    for _ in range(4):
        n = int(rng.integers(65, 3000))
        s = int(10 ** rng.uniform(0, 6)) if rng.random() < 0.7 else int(rng.integers(0, 50))
        r, before = int(rng.integers(1, n)), int(rng.integers(0, s // 4 + 1))
        m = n if rng.random() < 0.5 else int(rng.integers(1, n + 1))
        mean, var = _ap_tie_high_precision(s, n, r, m, before)
        e, v, lost = kernels._ap_tie_closed(s, n, r, m, before)
        assert abs(v - var) <= lost + 1e-15 * var, (s, n, r, m, before)


def test_discount_spread_of_long_ties():
    tables = kernels.discount_tables(600000)
    for s, n, m in [(0, 6000, 6000), (100, 9000, 5000), (500000, 8000, 8000)]:
        t1, d1, _ = kernels._discount_spread(s, n, m, tables, True)
        t2, d2, lost = kernels._discount_spread(s, n, m, tables, False)
        assert t2 == pytest.approx(t1, rel=1e-13)
        assert abs(d2 - d1) <= lost  # the bound that decides when to sum rank by rank


def test_long_hamming_ties_closed_forms_against_direct_sums():
    """A database whose distance buckets hold up to ~40,000 items: the spread with the closed forms
    for ties past DIRECT_LIMIT (and rank-by-rank sums where their rounding bound asks for them)
    against rank-by-rank sums everywhere: within the 1e-6 of the variance that the bound
    guarantees, and in fact within 1e-9."""
    rng = np.random.default_rng(11)
    q, db = rng.choice([-1, 1], (4, 16)), rng.choice([-1, 1], (200_000, 16))
    stats = ft.tie_stats(q, db, rng.integers(0, 3, 4), rng.integers(0, 3, 200_000))
    # read-only, as fasttie.finalize.spread passes them: the kernel keeps its one compiled signature
    kinds = read_only(np.array([kernels.AP, kernels.DCG, kernels.RR, kernels.HITS], dtype=np.int64))
    cutoffs = read_only(np.array([0, 0, 0, 100_000], dtype=np.int64))
    gains = read_only(np.array([0.0, 1.0]))
    tables = read_only(kernels.discount_tables(200_000))
    out = []
    for limit in (kernels.DIRECT_LIMIT, 10**9):
        means, variances = np.zeros((4, 4)), np.zeros((4, 4))
        kernels.hamming_spread(stats.counts, gains, kinds, cutoffs, tables, limit, means, variances, 0, 4)
        out.append((means, variances))
    assert stats.counts.sum(axis=2).max() > kernels.DIRECT_LIMIT
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-9)


def test_monte_carlo_on_a_longer_list():
    """100,000 random tie orders of a 60-item list with long ties, within 5 standard errors."""
    rng = np.random.default_rng(3)
    n = 60
    y_true = rng.choice([0, 0, 0, 1, 2], n).astype(float)
    y_pred = rng.integers(0, 5, n).astype(float)
    names = ["P@10", "R@25", "nDCG@10", "nDCG", "DCG@30", "ACG@20", "RR", "RR@5", "AP", "AP@20", "Rprec"]
    res = ft.rank_evaluate(y_true, y_pred, metrics=names, gain="exp2", spread=True)
    n_draws = 100_000
    order = np.argsort(-y_pred, kind="stable")
    keys = -y_pred[order]
    draws = rng.random((n_draws, n))
    ranked = order[np.lexsort((draws, np.broadcast_to(keys, (n_draws, n))), axis=1)]  # random order in each tie
    grades = y_true[ranked]
    rel = (grades >= 1).astype(float)
    gains = 2.0 ** grades - 1
    disc = 1 / np.log2(np.arange(2, n + 2))
    total_rel = rel[0].sum()
    ideal = np.cumsum(np.sort(2.0 ** y_true - 1)[::-1] * disc)
    hits = np.cumsum(rel, axis=1)
    first = np.argmax(rel > 0, axis=1) + 1
    prec_at_rel = np.cumsum(rel * hits / np.arange(1, n + 1), axis=1)
    samples = {
        "P@10": hits[:, 9] / 10, "R@25": hits[:, 24] / total_rel, "nDCG@10": (gains * disc)[:, :10].sum(1) / ideal[9],
        "nDCG": (gains * disc).sum(1) / ideal[-1], "DCG@30": (gains * disc)[:, :30].sum(1),
        "ACG@20": grades[:, :20].sum(1) / 20, "RR": 1 / first, "RR@5": np.where(first <= 5, 1 / first, 0.0),
        "AP": prec_at_rel[:, -1] / total_rel, "AP@20": prec_at_rel[:, 19] / total_rel,
        "Rprec": hits[:, int(total_rel) - 1] / total_rel,
    }
    for name in names:
        x = samples[name]
        sample_std = x.std()
        # the sample variance's standard error: sqrt((m4 - var^2) / n)
        m4 = np.mean((x - x.mean()) ** 4)
        se_var = math.sqrt(max(m4 - sample_std ** 4, 0) / n_draws)
        assert abs(res.tie_std[name][0] ** 2 - sample_std ** 2) <= 5 * se_var + 1e-15, name
        assert abs(res.mean[name] - x.mean()) <= 5 * sample_std / math.sqrt(n_draws) + 1e-15, name


def test_monte_carlo_hamming():
    """evaluate on 4 queries x 600 12-bit codes: 100,000 random orders of one query's ties, within
    5 standard errors."""
    rng = np.random.default_rng(5)
    q = rng.choice([-1, 1], (4, 12))
    db = rng.choice([-1, 1], (600, 12))
    ql, dl = rng.integers(0, 4, 4), rng.integers(0, 4, 600)
    names = ["AP", "nDCG@100", "P@50", "RR", "AP@200", "nDCG"]
    res = ft.evaluate(q, db, ql, dl, metrics=names, ap_denominator="total", spread=True)
    i = 0
    dist = (q[i] != db).sum(axis=1)
    rel = (dl == ql[i]).astype(float)
    n = len(db)
    total = rel.sum()
    disc = 1 / np.log2(np.arange(2, n + 2))
    samples = {name: [] for name in names}
    for _ in range(10):  # 10 batches of 10,000 orders
        ranked = np.argsort(dist + rng.random((10_000, n)), axis=1)  # distance first, random inside ties
        r = rel[ranked]
        hits = np.cumsum(r, axis=1)
        prec = np.cumsum(r * hits / np.arange(1, n + 1), axis=1)
        samples["AP"].append(prec[:, -1] / total)
        samples["nDCG@100"].append((r[:, :100] * disc[:100]).sum(1) / disc[: int(min(total, 100))].sum())
        samples["nDCG"].append((r * disc).sum(1) / disc[: int(total)].sum())
        samples["P@50"].append(hits[:, 49] / 50)
        samples["RR"].append(1 / (np.argmax(r > 0, axis=1) + 1))
        samples["AP@200"].append(prec[:, 199] / total)
    for name in names:
        x = np.concatenate(samples[name])
        m4 = np.mean((x - x.mean()) ** 4)
        se_var = math.sqrt(max(m4 - x.var() ** 2, 0) / len(x))
        assert abs(res.tie_std[name][i] ** 2 - x.var()) <= 5 * se_var + 1e-15, name
        assert abs(res.per_query[name][i] - x.mean()) <= 5 * x.std() / math.sqrt(len(x)) + 1e-15, name


def test_refusals_name_the_metric_and_the_option():
    y_true, y_pred, sizes = _lists(0)
    with pytest.raises(ValueError, match="ERR@10.*Bpref|Bpref.*ERR@10"):
        ft.rank_evaluate(y_true, y_pred, group=sizes, metrics=["AP", "ERR@10", "Bpref"], spread=True)
    with pytest.raises(ValueError, match="no exact method for GMAP@5:"):
        ft.rank_evaluate(y_true, y_pred, group=sizes, metrics=["AP@5", "GMAP@5"], ap_denominator="retrieved",
                         spread=True)
    with pytest.raises(ValueError, match="ties"):
        ft.rank_evaluate(y_true, y_pred, group=sizes, metrics=["AP"], ties="stable", spread=True)
    q, db, ql, dl, _, _ = _hamming_case(0, False)
    with pytest.raises(ValueError, match="no exact method for GMAP@3:.*docs/ties.md"):
        ft.evaluate(q, db, ql, dl, metrics=["AP@3", "WAP@3", "GMAP@3"], spread=True)  # the Hamming default: retrieved
    with pytest.raises(ValueError, match="GMAP:"):
        ft.evaluate(q, db, ql, dl, metrics=["WAP@3", "GMAP"], ap_denominator="total", spread=True)
    with pytest.raises(ValueError, match="ties"):
        ft.evaluate(q, db, ql, dl, metrics=["AP"], ties="optimistic", spread=True)
    with pytest.raises(ValueError, match="skip_missed"):
        ft.evaluate(q, db, ql, dl, metrics=["AP"], empty="skip_missed", spread=True)
    with pytest.raises(ValueError, match="spread"):
        ft.evaluate(q, db, ql, dl, metrics=["AP"], spread="yes")


def test_skipped_queries_and_counts():
    """NaN where a query is skipped, left out of the mean's std; counts are sums."""
    y_true = np.array([0, 0, 0, 1, 0, 1.0])
    y_pred = np.array([1, 1, 0, 1, 1, 0.0])
    res = ft.rank_evaluate(y_true, y_pred, group=[3, 3], metrics=["AP", "NumRelRet@1", "NumRet"], empty="skip",
                           spread=True)
    # query 2: AP is (1 + 2/3) / 2 or (1/2 + 2/3) / 2 with equal chance
    assert np.isnan(res.tie_std["AP"][0]) and res.tie_std["AP"][1] == pytest.approx(0.125)
    assert res.mean_tie_std["AP"] == pytest.approx(0.125)
    assert res.tie_std["NumRelRet@1"][1] == pytest.approx(0.5)
    assert res.tie_std["NumRet"].tolist()[1] == 0.0


def test_radius_metrics_do_not_move_and_keys_follow_the_names_asked():
    q, db, ql, dl, _, _ = _hamming_case(1, False)
    res = ft.evaluate(q, db, ql, dl, metrics=["mAP", "P(radius=1)", "ndcg@3"], spread=True)
    assert list(res.tie_std) == ["mAP", "P(radius=1)", "ndcg@3"]
    assert res.tie_std["AP"] is res.tie_std["mAP"]
    assert (res.tie_std["P(radius=1)"] == 0).all()


def test_thread_count_does_not_change_the_spread():
    rng = np.random.default_rng(2)
    q, db = rng.choice([-1, 1], (40, 12)), rng.choice([-1, 1], (5000, 12))
    ql, dl = rng.integers(0, 4, 40), rng.integers(0, 4, 5000)
    names = ["AP", "nDCG@50", "RR", "P@10"]
    one = ft.evaluate(q, db, ql, dl, metrics=names, spread=True, n_threads=1)
    two = ft.evaluate(q, db, ql, dl, metrics=names, spread=True, n_threads=2)
    for name in names:
        np.testing.assert_array_equal(one.tie_std[name], two.tie_std[name])
    y_true, y_pred = rng.integers(0, 3, (50, 40)).astype(float), rng.integers(0, 4, (50, 40)).astype(float)
    a = ft.rank_evaluate(y_true, y_pred, metrics=names, spread=True, n_threads=1)
    b = ft.rank_evaluate(y_true, y_pred, metrics=names, spread=True, n_threads=2)
    for name in names:
        np.testing.assert_array_equal(a.tie_std[name], b.tie_std[name])


def test_trec_door_and_the_result_round_trip():
    qrels = {"q1": {"d1": 1, "d3": 1}, "q2": {"d2": 2}}
    run = {"q1": {"d1": 0.5, "d2": 0.5, "d4": 0.1}, "q2": {"d1": 0.3, "d2": 0.3, "d3": 0.3}}
    res = ft.trec.evaluate(qrels, run, ["recip_rank", "P.1"], ties="average", spread=True)
    assert res.tie_std["recip_rank"][0] == pytest.approx(0.25)  # RR is 1 or 1/2
    assert res.tie_std["P_1"][1] == pytest.approx(math.sqrt(2) / 3)  # Bernoulli(1/3)
    back = ft.Result.from_json(res.to_json())
    assert back.mean_tie_std == res.mean_tie_std
    np.testing.assert_array_equal(back.tie_std["P_1"], res.tie_std["P_1"])
    with pytest.raises(ValueError, match="ties"):
        ft.trec.evaluate(qrels, run, ["recip_rank"], spread=True)  # the default: trec_eval's order


def test_command_line_prints_mean_and_spread(tmp_path, capsys):
    """fasttie evaluate --spread: 'mean ± std' in the table, the library's numbers; trec --spread
    in the JSON; --spread with a fixed tie order is a usage error."""
    from fasttie import cli

    rng = np.random.default_rng(4)
    paths = {}
    for name, array in {"q": rng.choice([-1, 1], (10, 8)), "db": rng.choice([-1, 1], (200, 8)),
                        "ql": rng.integers(0, 3, 10), "dl": rng.integers(0, 3, 200)}.items():
        paths[name] = str(tmp_path / f"{name}.npy")
        np.save(paths[name], array)
    expected = ft.evaluate(np.load(paths["q"]), np.load(paths["db"]), np.load(paths["ql"]), np.load(paths["dl"]),
                           metrics=["AP", "P@5"], ap_denominator="total", spread=True)
    assert cli.main(["evaluate", "--queries", paths["q"], "--database", paths["db"], "--query-labels", paths["ql"],
                     "--db-labels", paths["dl"], "-m", "AP", "P@5", "--ap-denominator", "total", "--spread"]) == 0
    out = capsys.readouterr().out
    for name in ("AP", "P@5"):
        assert f"{expected.mean[name]:.4f} ± {expected.mean_tie_std[name]:.2g}" in out
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d3 1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 0.5 r\nq1 Q0 d2 2 0.5 r\nq1 Q0 d4 3 0.1 r\n")
    assert cli.main(["trec", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "recip_rank", "--ties", "average",
                     "--spread", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mean_tie_std"] == {"recip_rank": 0.25}
    assert cli.main(["trec", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "recip_rank", "--spread"]) == 2
    assert "ties" in capsys.readouterr().err


# ---------------------------------------------------------------- WAP and WAP@k (Hamming rankings)


def wap_value(grades, k, denominator):
    """WAP@k of one fixed order (grades in rank order, grade > 0 relevant), from its definition."""
    n_relevant = sum(g > 0 for g in grades)
    cut = len(grades) if k is None else min(k, len(grades))
    cumulative, total, hits = 0, Fraction(0), 0
    for rank, g in enumerate(grades[:cut], start=1):
        cumulative += g
        if g > 0:
            hits += 1
            total += Fraction(cumulative, rank)
    if not n_relevant:
        return Fraction(0)
    if denominator == "retrieved":
        return total / hits if hits else Fraction(0)
    return total / (n_relevant if denominator == "total" or k is None else min(k, n_relevant))


def wap_oracle(groups, grades, k, denominator):
    """(mean, variance) of WAP@k over every tie order, Fractions."""
    values = [wap_value([grades[i] for i in order], k, denominator) for order in tie_orders(groups)]
    mean = sum(values) / len(values)
    return mean, sum((v - mean) ** 2 for v in values) / len(values)


def test_wap_oracle_on_a_hand_example():
    # grades 2, 1, 0 tied at ranks 1-3, then a relevant item of grade 1 at rank 4; WAP over R = 3.
    # Orders (W): 210 -> 2 + 3/2 + 4/4 = 9/2; 201 -> 2 + 1 + 1 = 4; 120 -> 1 + 3/2 + 1 = 7/2;
    # 102 -> 1 + 1 + 1 = 3; 021 -> 1 + 1 + 1 = 3; 012 -> 1/2 + 1 + 1 = 5/2: W/3
    mean, var = wap_oracle([[0, 1, 2], [3]], [2, 1, 0, 1], None, "total")
    assert mean == Fraction(41, 36)
    assert var == (Fraction(81 + 64 + 49 + 36 + 36 + 25, 4 * 6) - Fraction(41, 12) ** 2) / 9


def _check_wap(q, db, ql, dl, ks, denominator):
    names = ["WAP" if k is None else f"WAP@{k}" for k in ks]
    res = ft.evaluate(q, db, ql, dl, metrics=names, ap_denominator=denominator, spread=True)
    grades = np.asarray(ql) @ np.asarray(dl).T
    distances = (np.asarray(q)[:, None, :] != np.asarray(db)[None, :, :]).sum(axis=2)
    variances = {name: Fraction(0) for name in names}
    for i in range(len(q)):
        groups = groups_by_score((-distances[i]).tolist())
        for k, name in zip(ks, names):
            mean, var = wap_oracle(groups, grades[i].tolist(), k, denominator)
            assert res.per_query[name][i] == pytest.approx(float(mean), abs=1e-12), (name, i)
            assert res.tie_std[name][i] == pytest.approx(math.sqrt(var), abs=1e-12), (name, i, grades[i], groups)
            variances[name] += var
    for name in names:
        assert res.mean_tie_std[name] == pytest.approx(math.sqrt(variances[name]) / len(q), abs=1e-14)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("denominator", ["total", "min", "retrieved"])
def test_wap_matches_every_tie_order(seed, denominator):
    """Multi-hot labels (graded ties); cutoffs inside and at the end of ties and past the list."""
    rng = np.random.default_rng(seed)
    q, db = rng.choice([-1, 1], (3, 3)), rng.choice([-1, 1], (7, 3))
    ql, dl = rng.integers(0, 2, (3, 4)), rng.integers(0, 2, (7, 4))
    _check_wap(q, db, ql, dl, [None, 1, 2, 3, 4, 5, 6, 7, 9], denominator)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_db=st.integers(1, 7), n_bits=st.integers(1, 4), n_labels=st.integers(2, 4),
       k=st.integers(1, 9), denominator=st.sampled_from(["total", "min", "retrieved"]))
def test_wap_random_cases(seed, n_db, n_bits, n_labels, k, denominator):
    rng = np.random.default_rng(seed)
    q, db = rng.choice([-1, 1], (2, n_bits)), rng.choice([-1, 1], (n_db, n_bits))
    ql, dl = rng.integers(0, 2, (2, n_labels)), rng.integers(0, 2, (n_db, n_labels))
    _check_wap(q, db, ql, dl, [None, k], denominator)


def test_wap_monte_carlo_on_long_graded_ties():
    """Ties of hundreds of codes (the closed forms and the cut tie's mixture over long ties): the
    standard deviation within sampling error of shuffled orders."""
    rng = np.random.default_rng(3)
    q, db = rng.choice([-1, 1], (2, 4)), rng.choice([-1, 1], (3000, 4))
    ql, dl = rng.integers(0, 2, (2, 5)), (rng.random((3000, 5)) < 0.3).astype(int)
    names = ["WAP", "WAP@1000"]
    res = ft.evaluate(q, db, ql, dl, metrics=names, ap_denominator="retrieved", spread=True)
    grades = ql @ dl.T
    distances = (q[:, None, :] != db[None, :, :]).sum(axis=2)
    for i in range(2):
        samples = {name: [] for name in names}
        for _ in range(400):
            order = np.lexsort((rng.random(3000), distances[i]))
            g = grades[i][order].astype(float)
            cumulative = np.cumsum(g)
            terms = np.where(g > 0, cumulative / np.arange(1, 3001), 0.0)
            for name, k in (("WAP", 3000), ("WAP@1000", 1000)):
                samples[name].append(terms[:k].sum() / max((g[:k] > 0).sum(), 1))
        for name in names:
            std = np.std(samples[name])
            assert res.per_query[name][i] == pytest.approx(np.mean(samples[name]), abs=4 * std / math.sqrt(400) + 1e-12)
            assert res.tie_std[name][i] == pytest.approx(std, rel=0.2)


# ---------------------------------------------------------------- GMAP: not a function of AP's moments


def _ap_distribution(ties, n_relevant):
    """{AP: probability} of a ranked list of ties (items, relevant) over every tie order, AP over
    ``n_relevant`` (the list's relevant items and the unretrieved ones), Fractions."""
    per_tie = [list(itertools.combinations(range(n), r)) for n, r in ties]
    total = math.prod(len(c) for c in per_tie)
    out = {}
    for combo in itertools.product(*per_tie):
        start, hits, numerator = 0, 0, Fraction(0)
        for (n, _), positions in zip(ties, combo):
            for p in positions:
                hits += 1
                numerator += Fraction(hits, start + p + 1)
            start += n
        value = numerator / n_relevant
        out[value] = out.get(value, 0) + Fraction(1, total)
    return out


def _sqrt_decimal(value, digits=60):
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = digits
        return (Decimal(value.numerator) / Decimal(value.denominator)).sqrt()


# docs/ties.md, section 9 ("GMAP"): ranks 1, 2 non-relevant, 3 relevant, then a tie
# of two items holding one relevant (A: ranks 5-6 after one non-relevant item; B: ranks 4-5, then
# two non-relevant items and a second such tie at ranks 8-9), with 6 (A) and 10 (B) relevant items
# unretrieved
GMAP_A = (((1, 0), (1, 0), (1, 1), (1, 0), (2, 1)), 8)
GMAP_B = (((1, 0), (1, 0), (1, 1), (2, 1), (1, 0), (1, 0), (2, 1)), 13)


def test_gmap_variance_is_not_a_function_of_the_moments_of_ap():
    """Equal mean and variance of AP, different E[sqrt(AP)]: with a second query of AP 1 (no ties),
    GMAP = sqrt(AP) of the first, whose variance E[AP] - E[sqrt(AP)]^2 differs."""
    laws = [_ap_distribution(*case) for case in (GMAP_A, GMAP_B)]
    means = [sum(v * p for v, p in law.items()) for law in laws]
    variances = [sum((v - m) ** 2 * p for v, p in law.items()) for law, m in zip(laws, means)]
    assert means == [Fraction(7, 80)] * 2 and variances == [Fraction(1, 57600)] * 2
    assert len(laws[0]) == 2 and len(laws[1]) == 4 and min(min(law) for law in laws) > Fraction(1, 10**5)
    roots = [sum(_sqrt_decimal(p * p) * _sqrt_decimal(v) for v, p in law.items()) for law in laws]  # E[sqrt(AP)]
    assert abs(roots[0] - roots[1]) > 3e-8  # 0.2957200850... and 0.2957200549..., 60 digits each
    gmap_variances = [float(_sqrt_decimal(m) ** 2 - r * r) for m, r in zip(means, roots)]
    assert gmap_variances[0] == pytest.approx(4.96313e-5, rel=1e-5)
    assert gmap_variances[1] == pytest.approx(4.96491e-5, rel=1e-5)
    # fasttie's own mean and tie std of AP agree for the two lists, and GMAP stays refused
    for ties, n_relevant in (GMAP_A, GMAP_B):
        scores, y_true = [], []
        for position, (n, r) in enumerate(ties):
            scores += [-float(position)] * n
            y_true += [1.0] * r + [0.0] * (n - r)
        unretrieved = [[1.0] * (n_relevant - int(sum(y_true)))]
        res = ft.rank_evaluate(y_true, scores, metrics=["AP"], unretrieved=unretrieved, spread=True)
        assert res.mean["AP"] == pytest.approx(7 / 80, abs=1e-15)
        assert res.tie_std["AP"][0] == pytest.approx(1 / 240, abs=1e-15)
        with pytest.raises(ValueError, match="GMAP.*docs/ties.md"):
            ft.rank_evaluate(y_true, scores, metrics=["GMAP"], unretrieved=unretrieved, spread=True)


@pytest.mark.parametrize("columns, suffix", [((kernels.AP, kernels.DCG, kernels.RR), ""),
                                             ((kernels.AP_RET, kernels.HITS), "_retrieved"),
                                             ((kernels.WAP, kernels.AP), "_wap"),
                                             ((kernels.WAP_RET, kernels.AP), "_retrieved_wap"),
                                             ((kernels.WAP, kernels.AP_RET), "_retrieved_wap")])
def test_a_call_runs_the_spread_variant_its_columns_need(columns, suffix):
    """Only calls with WAP columns compile the WAP code, only those with AP@k or WAP@k over the
    retrieved relevant items the hypergeometric mixtures; every column's kind is in its variant."""
    from fasttie.finalize.spread import _kernel

    variants = (kernels.hamming_spread, kernels.hamming_spread_retrieved, kernels.hamming_spread_wap,
                kernels.hamming_spread_retrieved_wap)
    chosen = _kernel(np.array(columns, dtype=np.int64), variants)
    assert chosen.py_func.__name__ == "hamming_spread" + suffix
