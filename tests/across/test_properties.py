"""Property tests of fasttie.evaluate (hypothesis; profile "ci" in conftest.py is derandomized).

* tie-aware ("average") results do not depend on database order (codes and labels permuted
  together); no mode depends on the order of bit columns; per-query results follow the
  order of the queries;
* without ties all four tie modes equal the plain metric of the sorted list (oracle);
* bounds implied by the definitions: AP, nDCG, P, R, F1, RR, Rprec, radius metrics in [0, 1];
  WAP and ACG in [0, max grade] (CG@i / i <= max grade; WAP exceeds 1 with multi-hot grades);
  0 <= DCG@k <= IDCG@k;
* optimistic >= average >= pessimistic (and stable in between) for metrics monotone in
  "higher grades earlier" (not AP@k / WAP@k with denominator "retrieved", which are not);
* empty-query policies; k > N conventions; the three AP denominators coincide at k = ALL;
* bitwise identical results with n_threads=1 and n_threads=2;
* fasttie vs the oracle on hypothesis-drawn small cases.
"""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from helpers import CODE_FORMATS, encode_codes, relevance_from_dense
from oracle import (
    AP_DENOMINATORS,
    EMPTY_POLICIES,
    GAINS,
    TIE_MODES,
    count_orderings,
    grades_from_labels,
    hamming_distances,
    oracle_evaluate,
)

ft = pytest.importorskip("fasttie")

NAMES = ["AP", "WAP", "nDCG", "DCG", "RR", "Rprec"] + [
    f"{m}@{k}" for k in (1, 2, 3, 5, 13) for m in ("AP", "WAP", "nDCG", "DCG", "P", "R", "F1", "RR", "ACG")
] + ["P(radius=0)", "P(radius=2)", "R(radius=1)", "R(radius=3)"]
UNIT_INTERVAL = ("AP", "nDCG", "P", "R", "F1", "RR", "Rprec")
MONOTONE = ["AP", "WAP", "nDCG", "DCG", "RR", "Rprec"] + [
    f"{m}@{k}" for k in (1, 2, 3, 5, 13) for m in ("nDCG", "DCG", "P", "R", "F1", "RR", "ACG")
]


def kind_of(name):
    return name.split("@")[0].split("(")[0]


# ------------------------------------------------------------------------------------------
# strategies
# ------------------------------------------------------------------------------------------
@st.composite
def problems(draw, max_bits=6, max_db=12, max_q=4):
    """Codes (0/1 bits) + labels (class ids or multi-hot) as drawn by hypothesis."""
    n_bits = draw(st.integers(1, max_bits))
    n_db = draw(st.integers(1, max_db))
    n_q = draw(st.integers(1, max_q))
    bits = st.integers(0, 1)
    q = np.array(draw(st.lists(st.lists(bits, min_size=n_bits, max_size=n_bits), min_size=n_q, max_size=n_q)))
    x = np.array(draw(st.lists(st.lists(bits, min_size=n_bits, max_size=n_bits), min_size=n_db, max_size=n_db)))
    if draw(st.booleans()):
        n_cls = draw(st.integers(1, 3))
        ql = np.array(draw(st.lists(st.integers(0, n_cls), min_size=n_q, max_size=n_q)))
        xl = np.array(draw(st.lists(st.integers(0, n_cls - 1), min_size=n_db, max_size=n_db)))
    else:
        n_lab = draw(st.integers(2, 4))  # one column is rejected (a likely column of class ids)
        ql = np.array(draw(st.lists(st.lists(bits, min_size=n_lab, max_size=n_lab), min_size=n_q, max_size=n_q)))
        xl = np.array(draw(st.lists(st.lists(bits, min_size=n_lab, max_size=n_lab), min_size=n_db, max_size=n_db)))
    fmt = draw(st.sampled_from(CODE_FORMATS))
    return encode_codes(q, fmt), encode_codes(x, fmt), ql, xl


options = st.fixed_dictionaries({
    "ties": st.sampled_from(TIE_MODES),
    "ap_denominator": st.sampled_from(AP_DENOMINATORS),
    "gain": st.sampled_from(GAINS),
    "empty": st.sampled_from(("zero", "skip", "one")),
})


def evaluate(p, **kw):
    q, x, ql, xl = p
    return ft.evaluate(q, x, ql, xl, metrics=NAMES, **kw)


def assert_results_close(a, b, rtol=1e-12, atol=1e-12, perm=None):
    assert set(a.per_query) == set(b.per_query)
    for m in a.per_query:
        want = b.per_query[m] if perm is None else b.per_query[m][perm]
        np.testing.assert_allclose(a.per_query[m], want, rtol=rtol, atol=atol, err_msg=m)
        if perm is None:
            assert (math.isnan(a.mean[m]) and math.isnan(b.mean[m])) or \
                a.mean[m] == pytest.approx(b.mean[m], rel=rtol, abs=atol), m


# ------------------------------------------------------------------------------------------
# invariances
# ------------------------------------------------------------------------------------------
@settings(max_examples=60)
@given(problems(), st.randoms(use_true_random=False), options)
def test_average_invariant_under_database_permutation(p, rnd, opts):
    q, x, ql, xl = p
    perm = list(range(x.shape[0]))
    rnd.shuffle(perm)
    opts = dict(opts, ties="average")
    a = evaluate(p, **opts)
    b = evaluate((q, x[perm], ql, xl[perm]), **opts)
    assert_results_close(a, b)


@settings(max_examples=60)
@given(problems(), st.randoms(use_true_random=False), options)
def test_invariant_under_bit_permutation_and_query_order(p, rnd, opts):
    q, x, ql, xl = p
    cols = list(range(q.shape[1]))
    rnd.shuffle(cols)
    a = evaluate(p, **opts)
    b = evaluate((q[:, cols], x[:, cols], ql, xl), **opts)
    assert_results_close(a, b, rtol=0, atol=0)  # identical distances: identical results
    rows = list(range(q.shape[0]))
    rnd.shuffle(rows)
    c = evaluate((q[rows], x, ql[rows], xl), **opts)
    assert_results_close(c, a, perm=rows)


@settings(max_examples=40)
@given(
    n_bits=st.integers(1, 10),
    data=st.data(),
    opts=options,
)
def test_no_ties_all_modes_equal_plain_metric(n_bits, data, opts):
    # every database item at a distinct distance from the (shared) query code; queries differ
    # only by their relevance rows
    n_db = data.draw(st.integers(1, n_bits + 1))
    dists = data.draw(st.permutations(range(n_bits + 1)))[:n_db]
    n_q = data.draw(st.integers(1, 3))
    q_bits = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n_bits, max_size=n_bits)))
    x_bits = np.repeat(q_bits[None, :], n_db, axis=0)
    for j, d in enumerate(dists):
        cols = data.draw(st.permutations(range(n_bits)))[:d]
        x_bits[j, cols] ^= 1
    queries = np.repeat(q_bits[None, :], n_q, axis=0)
    grades = np.array(data.draw(st.lists(st.lists(st.integers(0, 3), min_size=n_db, max_size=n_db),
                                         min_size=n_q, max_size=n_q)))
    dist = hamming_distances(queries, x_bits)
    assert all(len(set(row.tolist())) == n_db for row in dist)
    rel = relevance_from_dense(grades, "scipy")
    results = {t: ft.evaluate(queries, x_bits, relevance=rel, metrics=NAMES, **dict(opts, ties=t)) for t in TIE_MODES}
    _, per, _ = oracle_evaluate(dist, grades, NAMES, **dict(opts, ties="stable"))
    for t, res in results.items():
        for m in NAMES:
            np.testing.assert_allclose(res.per_query[m], per[m], rtol=1e-12, atol=1e-12, err_msg=f"{m} {t}")


# ------------------------------------------------------------------------------------------
# bounds and orderings of modes
# ------------------------------------------------------------------------------------------
@settings(max_examples=80)
@given(problems(max_bits=5, max_db=15), options)
def test_bounds(p, opts):
    q, x, ql, xl = p
    opts = dict(opts, empty=opts["empty"] if opts["empty"] != "skip" else "zero")
    res = ft.evaluate(q, x, ql, xl, metrics=NAMES, **opts)
    grades = grades_from_labels(ql, xl)
    max_grade = grades.max(axis=1, initial=0)
    for m, vals in res.per_query.items():
        kind = kind_of(m)
        assert vals.shape == (q.shape[0],)
        assert np.all(np.isfinite(vals)), m
        assert np.all(vals >= 0), m
        if kind in UNIT_INTERVAL:
            assert np.all(vals <= 1 + 1e-12), m
        elif kind in ("WAP", "ACG"):
            assert np.all(vals <= np.maximum(max_grade, opts["empty"] == "one") * (1 + 1e-12)), m
        assert (min(vals) - 1e-12 <= res.mean[m] <= max(vals) + 1e-12), m
    # nDCG@k = DCG@k / IDCG@k with IDCG@k from the grades sorted descending
    n = x.shape[0]
    for k in (2, 5, n):
        k_e = min(k, n)
        top = -np.sort(-grades, axis=1)[:, :k_e].astype(np.float64)
        gains = np.exp2(top) - 1 if opts["gain"] == "exp2" else top
        idcg = (gains / np.log2(np.arange(2, k_e + 2))).sum(axis=1)
        nd = res.per_query["nDCG" if k == n else f"nDCG@{k}"]
        dc = res.per_query["DCG" if k == n else f"DCG@{k}"]
        ne = idcg > 0
        np.testing.assert_allclose(dc[ne], nd[ne] * idcg[ne], rtol=1e-12, atol=1e-12)
        assert np.all(dc[~ne] == 0)


@settings(max_examples=60)
@given(problems(max_bits=4, max_db=12), st.sampled_from(("total", "min")), st.sampled_from(GAINS))
def test_fixed_modes_bracket_average(p, den, gain):
    q, x, ql, xl = p
    opts = dict(ap_denominator=den, gain=gain)
    res = {t: ft.evaluate(q, x, ql, xl, metrics=MONOTONE + ["AP@3", "WAP@3"], ties=t, **opts) for t in TIE_MODES}
    for m in res["average"].per_query:
        lo, hi = res["pessimistic"].per_query[m], res["optimistic"].per_query[m]
        tol = 1e-12 * np.maximum(1, np.abs(hi))
        for t in ("average", "stable"):
            v = res[t].per_query[m]
            assert np.all(lo - tol <= v) and np.all(v <= hi + tol), (m, t)


# ------------------------------------------------------------------------------------------
# conventions
# ------------------------------------------------------------------------------------------
@settings(max_examples=40)
@given(problems(max_bits=4, max_db=8), options, st.integers(1, 6))
def test_cutoff_conventions(p, opts, extra):
    q, x, ql, xl = p
    n = x.shape[0]
    ks = [n, n + extra]
    names = ["AP", "WAP", "nDCG", "DCG", "RR"] + [f"{m}@{k}" for k in ks for m in
                                                  ("AP", "WAP", "nDCG", "DCG", "RR", "P", "R", "F1", "ACG")]
    res = ft.evaluate(q, x, ql, xl, metrics=names, **opts)
    per = res.per_query
    close = dict(rtol=1e-12, atol=1e-12)
    for m in ("AP", "WAP", "nDCG", "DCG", "RR"):
        np.testing.assert_allclose(per[f"{m}@{n + extra}"], per[m], **close, err_msg=m)
        np.testing.assert_allclose(per[f"{m}@{n}"], per[m], **close, err_msg=m)
    np.testing.assert_allclose(per[f"R@{n + extra}"], per[f"R@{n}"], **close)
    # P, F1, ACG divide by the k asked
    if opts["empty"] != "skip":
        grades = grades_from_labels(ql, xl)
        R = (grades > 0).sum(axis=1)
        empty = R == 0
        scale = n / (n + extra)
        np.testing.assert_allclose(per[f"P@{n + extra}"], per[f"P@{n}"] * scale, **close)
        np.testing.assert_allclose(per[f"ACG@{n + extra}"], per[f"ACG@{n}"] * scale, **close)
        f1 = np.where(empty, 0, 2 * R / (n + extra + R))
        np.testing.assert_allclose(per[f"F1@{n + extra}"], f1, **close)
    # all three AP denominators coincide at k = ALL
    for den in AP_DENOMINATORS:
        other = ft.evaluate(q, x, ql, xl, metrics=["AP", "WAP", f"AP@{n}", f"WAP@{n + extra}"],
                            **dict(opts, ap_denominator=den))
        for m in other.per_query:
            np.testing.assert_allclose(other.per_query[m], per[m.replace(f"@{n + extra}", "").replace(f"@{n}", "")],
                                       **close, err_msg=f"{m} {den}")


@settings(max_examples=40)
@given(problems(max_bits=4, max_db=8), st.sampled_from(TIE_MODES))
def test_empty_policies(p, ties):
    q, x, ql, xl = p
    grades = grades_from_labels(ql, xl)
    empty_rows = grades.max(axis=1, initial=0) == 0
    names = NAMES
    res = {e: ft.evaluate(q, x, ql, xl, metrics=names, ties=ties, empty=e) for e in ("zero", "skip", "one")}
    for e, r in res.items():
        assert r.n_empty == int(empty_rows.sum()) and r.n_queries == q.shape[0]
    undefined = {"AP", "WAP", "nDCG", "R", "RR", "Rprec"}
    for m in names:
        z, s, o = (res[e].per_query[m] for e in ("zero", "skip", "one"))
        assert np.all(z[empty_rows] == 0), m
        assert np.all(np.isnan(s[empty_rows])), m
        want_one = 1.0 if kind_of(m) in undefined else 0.0
        assert np.all(o[empty_rows] == want_one), m
        ne = ~empty_rows
        np.testing.assert_array_equal(z[ne], s[ne], err_msg=m)
        np.testing.assert_array_equal(z[ne], o[ne], err_msg=m)
        if ne.any():
            assert res["skip"].mean[m] == pytest.approx(float(np.mean(z[ne])), rel=1e-12, abs=1e-15)
        else:
            assert math.isnan(res["skip"].mean[m])
        assert res["zero"].mean[m] == pytest.approx(float(np.mean(z)), rel=1e-12, abs=1e-15)
        assert res["one"].mean[m] == pytest.approx(float(np.mean(o)), rel=1e-12, abs=1e-15)
    if empty_rows.any():
        with pytest.raises(ValueError):
            ft.evaluate(q, x, ql, xl, metrics=names, ties=ties, empty="error")
    else:
        r = ft.evaluate(q, x, ql, xl, metrics=names, ties=ties, empty="error")
        for m in names:
            np.testing.assert_array_equal(r.per_query[m], res["zero"].per_query[m])


# ------------------------------------------------------------------------------------------
# threads
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", TIE_MODES)
def test_threads_bitwise_identical(ties):
    rng = np.random.default_rng(42)
    n_q, n_db, n_bits = 67, 1500, 12
    q = rng.integers(0, 2, (n_q, n_bits))
    x = rng.integers(0, 2, (n_db, n_bits))
    ql = (rng.random((n_q, 5)) < 0.2).astype(np.uint8)
    xl = (rng.random((n_db, 5)) < 0.2).astype(np.uint8)
    names = NAMES + ["AP@100", "nDCG@100", "WAP@1000", "RR@700"]
    for den in AP_DENOMINATORS:
        for empty in ("zero", "skip"):
            a = ft.evaluate(q, x, ql, xl, metrics=names, ties=ties, ap_denominator=den, empty=empty, n_threads=1)
            b = ft.evaluate(q, x, ql, xl, metrics=names, ties=ties, ap_denominator=den, empty=empty, n_threads=2)
            for m in names:
                np.testing.assert_array_equal(a.per_query[m], b.per_query[m], err_msg=m)
                assert a.mean[m] == b.mean[m] or (math.isnan(a.mean[m]) and math.isnan(b.mean[m])), m


# ------------------------------------------------------------------------------------------
# oracle on hypothesis-drawn cases (shrinks to a minimal failing case)
# ------------------------------------------------------------------------------------------
@settings(max_examples=300)
@given(problems(max_bits=5, max_db=9, max_q=3), options, st.sampled_from(EMPTY_POLICIES))
def test_matches_oracle_hypothesis(p, opts, empty):
    q, x, ql, xl = p
    dist = hamming_distances(q, x)
    grades = grades_from_labels(ql, xl)
    assume(all(count_orderings(dist[i], grades[i]) <= 3000 for i in range(len(dist))))
    opts = dict(opts, empty=empty)
    if empty == "error" and (grades.max(axis=1, initial=0) == 0).any():
        with pytest.raises(ValueError):
            evaluate(p, **opts)
        return
    res = evaluate(p, **opts)
    mean, per, n_empty = oracle_evaluate(dist, grades, NAMES, **opts)
    assert res.n_empty == n_empty
    for m in NAMES:
        np.testing.assert_allclose(res.per_query[m], per[m], rtol=1e-12, atol=1e-12,
                                   err_msg=f"{m} {opts} distances={dist.tolist()} grades={grades.tolist()}")
        if math.isnan(mean[m]):
            assert math.isnan(res.mean[m]), m
        else:
            assert res.mean[m] == pytest.approx(mean[m], rel=1e-12, abs=1e-12), m
