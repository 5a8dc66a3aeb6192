"""fasttie.evaluate against the brute-force oracle (tests/oracle.py) and independent references.

Tolerance: fasttie returns float64, the oracle exact Fractions (DCG/nDCG: exact mean gains times
float discounts); agreement is required to rel 1e-12 / abs 1e-12.

* ``test_random_cases``: seeded random small cases (1..8 bits, <= 10 database items, graded
  ties, cutoffs inside ties and past the end, singleton ties, empty queries, every code encoding
  and relevance form), every metric x ap_denominator x gain x empty policy, one tie mode per
  test item.
* hand-picked edge cases (one big tie, all singletons, k > N, radius past the code length).
* seed 000's closed forms (AP at ALL, nDCG@k exp2) on 20 queries x 500 items, 8..16 bits.
* scikit-learn ``ndcg_score(ignore_ties=False)`` (linear gain, McSherry-Najork tie averaging,
  all-zero rows count 0 = empty="zero"); ``average_precision_score`` on tie-free lists only.
* fixed-order modes on medium lists (the oracle evaluates one ordering at any size).
"""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, ndcg_score

import seed000
from helpers import Case, compare_result, encode_codes, make_case, metric_list, relevance_from_dense
from oracle import (
    AP_DENOMINATORS,
    EMPTY_POLICIES,
    GAINS,
    TIE_MODES,
    grades_from_labels,
    hamming_distances,
    oracle_evaluate,
)

ft = pytest.importorskip("fasttie")

N_RANDOM_CASES = 200
N_QUICK_CASES = 50  # the quick tier (pytest -m "not slow") checks the first 50 seeds; CI all 200


def run(case, names, **opts):
    return ft.evaluate(case.queries, case.database, **case.kwargs, metrics=names, **opts)


def check_all_options(case, ties, names=None, empties=EMPTY_POLICIES):
    names = case.metrics if names is None else names
    has_empty = bool((case.grades.max(axis=1, initial=0) == 0).any())
    for den in AP_DENOMINATORS:
        for gain in GAINS:
            for empty in empties:
                opts = dict(ties=ties, ap_denominator=den, gain=gain, empty=empty)
                if empty == "error" and has_empty:
                    with pytest.raises(ValueError):
                        run(case, names, **opts)
                    continue
                res = run(case, names, **opts)
                compare_result(res, case, names, **opts)


@pytest.mark.parametrize("ties", TIE_MODES)
@pytest.mark.parametrize(
    "seed", [pytest.param(seed, marks=pytest.mark.slow if seed >= N_QUICK_CASES else ()) for seed in range(N_RANDOM_CASES)]
)
def test_random_cases(seed, ties):
    check_all_options(make_case(seed), ties)


@pytest.mark.parametrize("ties", TIE_MODES)
@pytest.mark.parametrize("seed", range(40))
def test_dcg_stops_at_its_deepest_cutoff(seed, ties):
    """Without whole-list (n)DCG the discount table stops at the shallowest (n)DCG cutoff kept
    (scoring.dcg_depth): the metrics at deeper cutoffs and the whole-list ones must not notice
    that DCG is no longer counted past it."""
    case = make_case(seed)
    shallowest = min(int(n.split("@")[1]) for n in case.metrics if n.startswith(("nDCG@", "DCG@")))
    names = [n for n in case.metrics if n not in ("nDCG", "DCG")
             and not (n.startswith(("nDCG@", "DCG@")) and int(n.split("@")[1]) > shallowest)]
    check_all_options(case, ties, names, empties=("zero",))


@pytest.mark.parametrize("seed", range(40))
def test_random_cases_larger_grades(seed):
    # grades up to 9: exp2 gain 511 (would wrap in uint8), big WAP/ACG values
    case = make_case(10_000 + seed, kinds=("csr_graded", "scipy"), max_grade=9, max_db=8)
    for ties in TIE_MODES:
        check_all_options(case, ties, empties=("zero",))


@pytest.mark.parametrize("seed", range(30))
def test_random_cases_binary_larger_db(seed):
    # binary relevance keeps enumeration small for bigger ties: up to 16 items, C(n, r) orderings
    case = make_case(20_000 + seed, kinds=("class", "csr_binary"), max_db=16, max_bits=5, max_orderings=6000)
    for ties in TIE_MODES:
        check_all_options(case, ties, empties=("zero", "skip"))


# ------------------------------------------------------------------------------------------
# hand-picked edge cases
# ------------------------------------------------------------------------------------------
def _case_from(dist_bits_q, dist_bits_x, grades, names, fmt="pm1_int8", desc=""):
    q = encode_codes(np.asarray(dist_bits_q), fmt)
    x = encode_codes(np.asarray(dist_bits_x), fmt)
    grades = np.asarray(grades, dtype=np.int64)
    return Case(q, x, dict(relevance=relevance_from_dense(grades, "scipy")), hamming_distances(q, x), grades,
                names, desc)


EDGE_NAMES = ["AP", "WAP", "nDCG", "DCG", "RR", "Rprec"] + [
    f"{m}@{k}" for k in (1, 2, 3, 5, 8, 9, 20) for m in ("AP", "WAP", "nDCG", "DCG", "P", "R", "F1", "RR", "ACG")
] + ["P(radius=0)", "P(radius=1)", "P(radius=3)", "P(radius=40)", "R(radius=0)", "R(radius=2)", "R(radius=40)"]


def edge_cases():
    out = []
    # one big tie: every database code identical
    x = np.zeros((8, 3), dtype=int)
    q = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1]])
    g = np.array([[0, 2, 0, 1, 0, 0, 3, 0], [1, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]])
    out.append(_case_from(q, x, g, EDGE_NAMES, desc="one big tie"))
    # all singletons: distances 0..7 (database code j has j leading ones), query zeros
    x = np.tril(np.ones((8, 8), dtype=int), -1)  # row j has j ones
    q = np.zeros((2, 8), dtype=int)
    g = np.array([[0, 0, 1, 0, 2, 0, 0, 1], [3, 0, 0, 0, 0, 0, 0, 0]])
    out.append(_case_from(q, x, g, EDGE_NAMES, fmt="bool", desc="all singletons"))
    # single database item, single bit
    out.append(_case_from([[1], [0]], [[1]], [[1], [0]], EDGE_NAMES, fmt="01_uint8", desc="N=1"))
    # relevant items only in the last tie, cutoffs before it
    x = np.array([[0, 0], [0, 0], [0, 1], [0, 1], [1, 1], [1, 1], [1, 1]])
    q = np.array([[0, 0]])
    g = np.array([[0, 0, 0, 0, 1, 0, 2]])
    out.append(_case_from(q, x, g, EDGE_NAMES, fmt="pm1_float32", desc="relevant last"))
    return out


@pytest.mark.parametrize("case", edge_cases(), ids=lambda c: c.desc)
@pytest.mark.parametrize("ties", TIE_MODES)
def test_edge_cases(case, ties):
    check_all_options(case, ties)


def test_aliases_and_list_form():
    case = make_case(12345)
    n = case.n_db
    requested = ["mAP@2", "map@3", "ndcg@2", "precision@[1,2,30]", "recall@2", "mrr", "AP@ALL", "nDCG@ALL"]
    canonical = ["AP@2", "AP@3", "nDCG@2", "P@1", "P@2", "P@30", "R@2", "RR", "AP", "nDCG"]
    res = run(case, requested)
    # keyed as asked, lists item by item in the caller's spelling; the canonical names find them too
    asked = ["mAP@2", "map@3", "ndcg@2", "precision@1", "precision@2", "precision@30", "recall@2", "mrr", "AP@ALL",
             "nDCG@ALL"]
    assert list(res.mean) == asked == list(res.per_query)
    assert all(name in res.mean and name in res.per_query for name in canonical)
    compare_result(res, case, canonical, ties="average", ap_denominator="retrieved", gain="exp2", empty="zero")
    assert n >= 1
    assert isinstance(res.to_dict(), dict)


def test_relevance_forms_agree():
    rng = np.random.default_rng(3)
    q_bits = rng.integers(0, 2, (5, 4))
    x_bits = rng.integers(0, 2, (9, 4))
    q_lab = (rng.random((5, 3)) < 0.5).astype(np.int64)
    x_lab = (rng.random((9, 3)) < 0.5).astype(np.int64)
    grades = grades_from_labels(q_lab, x_lab)
    names = ["AP@3", "nDCG@4", "WAP@5", "ACG@2", "RR"]
    ref = ft.evaluate(q_bits, x_bits, q_lab, x_lab, metrics=names)
    for kind in ("csr_graded", "scipy"):
        other = ft.evaluate(q_bits, x_bits, relevance=relevance_from_dense(grades, kind), metrics=names)
        for m in names:
            np.testing.assert_allclose(other.per_query[m], ref.per_query[m], rtol=1e-13, atol=1e-15)
    # binary: class ids vs CSR without grades
    q_cls = rng.integers(0, 3, 5)
    x_cls = rng.integers(0, 3, 9)
    ref = ft.evaluate(q_bits, x_bits, q_cls, x_cls, metrics=names)
    bin_grades = grades_from_labels(q_cls, x_cls)
    other = ft.evaluate(q_bits, x_bits, relevance=relevance_from_dense(bin_grades, "csr_binary"), metrics=names)
    for m in names:
        np.testing.assert_allclose(other.per_query[m], ref.per_query[m], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("fmt", ["pm1_int8", "pm1_int64", "pm1_float32", "01_uint8", "01_int32", "bool"])
def test_code_encodings_agree(fmt):
    rng = np.random.default_rng(11)
    q_bits = rng.integers(0, 2, (4, 7))
    x_bits = rng.integers(0, 2, (10, 7))
    q_cls = rng.integers(0, 2, 4)
    x_cls = rng.integers(0, 2, 10)
    names = ["AP", "AP@3", "nDCG@5", "P@4", "P(radius=2)"]
    res = ft.evaluate(encode_codes(q_bits, fmt), encode_codes(x_bits, fmt), q_cls, x_cls, metrics=names)
    mean, per, _ = oracle_evaluate(hamming_distances(q_bits, x_bits), grades_from_labels(q_cls, x_cls), names)
    for m in names:
        np.testing.assert_allclose(res.per_query[m], per[m], rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------
# fixed-order modes on medium lists: the oracle needs one ordering only
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ties", ["optimistic", "pessimistic", "stable"])
def test_fixed_modes_medium(seed, ties):
    rng = np.random.default_rng(700 + seed)
    n_q, n_db, n_bits = 4, int(rng.integers(30, 80)), int(rng.integers(3, 7))
    q_bits = rng.integers(0, 2, (n_q, n_bits))
    x_bits = rng.integers(0, 2, (n_db, n_bits))
    grades = (rng.random((n_q, n_db)) < 0.3) * rng.integers(1, 4, (n_q, n_db))
    case = Case(q_bits, x_bits, dict(relevance=relevance_from_dense(grades, "scipy")),
                hamming_distances(q_bits, x_bits), grades, metric_list(rng, n_db, n_bits, n_cut=5),
                f"medium seed={seed}")
    for den in AP_DENOMINATORS:
        for gain in GAINS:
            opts = dict(ties=ties, ap_denominator=den, gain=gain, empty="zero")
            compare_result(run(case, case.metrics, **opts), case, case.metrics, **opts)


# ------------------------------------------------------------------------------------------
# seed 000 at larger sizes
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_seed000_large(seed):
    rng = np.random.default_rng(900 + seed)
    n_q, n_db = 20, 500
    n_bits = int(rng.integers(8, 17))
    q_pm = rng.choice(np.array([-1, 1], dtype=np.int8), size=(n_q, n_bits))
    x_pm = rng.choice(np.array([-1, 1], dtype=np.int8), size=(n_db, n_bits))
    n_lab = 5
    q_lab = (rng.random((n_q, n_lab)) < 0.25).astype(np.uint8)
    x_lab = (rng.random((n_db, n_lab)) < 0.25).astype(np.uint8)
    q_lab[0] = 0  # one empty query
    D = seed000.hamming(q_pm, x_pm)
    G = grades_from_labels(q_lab, x_lab)
    ks = [1, 7, 50, 100, 333, 500, 777]
    ap = seed000.multi_mAP_tie_all(D, G > 0, per_query=True)
    nd = seed000.multi_nDCG_tie(D, G, k=ks, per_query=True)  # ks ascending already
    names = ["AP"] + [f"nDCG@{k}" for k in ks] + ["nDCG"]
    for den in AP_DENOMINATORS:  # AP at ALL: every denominator is R
        res = ft.evaluate(q_pm, x_pm, q_lab, x_lab, metrics=names, gain="exp2", ap_denominator=den,
                          empty="zero")
        np.testing.assert_allclose(res.per_query["AP"], ap, rtol=1e-10, atol=1e-12)
        assert res.mean["AP"] == pytest.approx(ap.mean(), rel=1e-10)
        for j, k in enumerate(ks):
            np.testing.assert_allclose(res.per_query[f"nDCG@{k}"], nd[:, j], rtol=1e-10, atol=1e-12)
            assert res.mean[f"nDCG@{k}"] == pytest.approx(nd[:, j].mean(), rel=1e-10)
        np.testing.assert_allclose(res.per_query["nDCG"], nd[:, ks.index(500)], rtol=1e-10, atol=1e-12)
        assert res.n_empty == int((G.sum(axis=1) == 0).sum())
    # binary relevance from class ids
    q_cls = rng.integers(0, 4, n_q)
    x_cls = rng.integers(0, 4, n_db)
    S = grades_from_labels(q_cls, x_cls)
    ap = seed000.multi_mAP_tie_all(D, S, per_query=True)
    res = ft.evaluate(q_pm, x_pm, q_cls, x_cls, metrics=["AP"])
    np.testing.assert_allclose(res.per_query["AP"], ap, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------
# scikit-learn
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_sklearn_ndcg(seed):
    rng = np.random.default_rng(300 + seed)
    n_q, n_db, n_bits = 12, int(rng.integers(2, 200)), int(rng.integers(2, 9))  # sklearn needs n_db >= 2
    q_bits = rng.integers(0, 2, (n_q, n_bits))
    x_bits = rng.integers(0, 2, (n_db, n_bits))
    grades = (rng.random((n_q, n_db)) < 0.2) * rng.integers(1, 5, (n_q, n_db))
    grades[:2] = 0  # all-zero rows: sklearn scores them 0 and keeps them in the mean
    dist = hamming_distances(q_bits, x_bits)
    ks = sorted({1, 2, 5, n_db, n_db + 3, int(rng.integers(1, n_db + 1))})
    names = [f"nDCG@{k}" for k in ks] + ["nDCG"]
    res = ft.evaluate(q_bits, x_bits, relevance=relevance_from_dense(grades, "scipy"), metrics=names,
                      gain="linear", ties="average", empty="zero")
    for k in ks:
        kk = min(k, n_db)
        sk = ndcg_score(grades, -dist, k=kk, ignore_ties=False)
        assert res.mean[f"nDCG@{k}"] == pytest.approx(sk, rel=1e-12, abs=1e-14)
        sk_rows = [ndcg_score(grades[i:i + 1], -dist[i:i + 1], k=kk) for i in range(n_q)]
        np.testing.assert_allclose(res.per_query[f"nDCG@{k}"], sk_rows, rtol=1e-12, atol=1e-14)
    assert res.mean["nDCG"] == pytest.approx(ndcg_score(grades, -dist), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("seed", range(10))
def test_sklearn_average_precision_tie_free(seed):
    # tie-free lists: database item j differs from the query in d_j bits, d_j distinct
    rng = np.random.default_rng(seed)
    n_bits = int(rng.integers(3, 12))
    n_db = int(rng.integers(2, n_bits + 2))
    dists = rng.choice(n_bits + 1, size=n_db, replace=False)
    q_bits = rng.integers(0, 2, (1, n_bits))
    x_bits = np.repeat(q_bits, n_db, axis=0)
    for j, d in enumerate(dists):
        flip = rng.choice(n_bits, size=d, replace=False)
        x_bits[j, flip] ^= 1
    y = (rng.random(n_db) < 0.4).astype(np.int64)
    y[rng.integers(n_db)] = 1
    assert np.array_equal(hamming_distances(q_bits, x_bits)[0], dists)
    sk = average_precision_score(y, -dists)
    for ties in TIE_MODES:
        for den in AP_DENOMINATORS:
            res = ft.evaluate(q_bits, x_bits, relevance=relevance_from_dense(y[None, :], "csr_binary"),
                              metrics=["AP", f"AP@{n_db}", f"AP@{n_db + 5}"], ties=ties, ap_denominator=den)
            for m in res.per_query:
                assert res.per_query[m][0] == pytest.approx(sk, rel=1e-12), (m, ties, den)
