"""Tests of the brute-force oracle itself (no fasttie here).

* hand-worked tiny examples with exact fractions;
* distinct multiset permutations vs full labelled enumeration (itertools.permutations);
* the fast exact path vs the literal average of ``plain_metric``;
* seed 000's closed forms (P/R/F1 at 1 <= k <= N, AP at ALL, nDCG@k exp2) on small cases;
* scikit-learn where its convention matches: ``average_precision_score`` on tie-free data
  (AP with denominator R, which at k = ALL is every denominator), ``ndcg_score`` /
  ``dcg_score`` with ``ignore_ties=False`` (McSherry-Najork tie averaging, linear gain,
  1/log2(1+i) discount, all-zero rows score 0 = empty="zero").
"""

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.metrics import average_precision_score, dcg_score, ndcg_score

import seed000
from oracle import (
    AP_DENOMINATORS,
    GAINS,
    TIE_MODES,
    canonical_name,
    count_orderings,
    distinct_permutations,
    expand_metrics,
    grades_from_csr,
    grades_from_labels,
    hamming_distances,
    oracle_evaluate,
    oracle_query,
    oracle_query_exact,
    oracle_query_literal,
    orderings,
    plain_metric,
)

ALL_METRICS = [
    "AP", "AP@1", "AP@2", "AP@3", "AP@5", "AP@9",
    "WAP", "WAP@1", "WAP@2", "WAP@3", "WAP@9",
    "nDCG", "nDCG@1", "nDCG@3", "nDCG@9", "DCG", "DCG@2", "DCG@9",
    "P@1", "P@3", "P@9", "R@1", "R@3", "R@9", "F1@2", "F1@9",
    "RR", "RR@1", "RR@3", "Rprec", "ACG@1", "ACG@3", "ACG@9",
    "P(radius=0)", "P(radius=1)", "P(radius=5)", "R(radius=0)", "R(radius=2)",
]


def q(d, g, metric, **kw):
    """Exact oracle value of one metric of one query."""
    return oracle_query(d, g, metric, exact=True, **kw)[canonical_name(metric)]


# ------------------------------------------------------------------------------------------
# hand-worked examples
# ------------------------------------------------------------------------------------------
def test_hand_binary_example():
    # ties: {0}, {1, 2}, {3}; orderings of the ranked grades: [1,0,1,0] and [1,1,0,0]
    d, g = [0, 1, 1, 2], [1, 0, 1, 0]
    assert sorted(set(orderings(d, g))) == [(1, 0, 1, 0), (1, 1, 0, 0)]
    assert q(d, g, "AP") == F(11, 12)  # mean of 5/6 and 1
    assert q(d, g, "AP@2", ap_denominator="retrieved") == 1  # 1/1 and 2/2
    assert q(d, g, "AP@2", ap_denominator="total") == F(3, 4)  # 1/2 and 2/2
    assert q(d, g, "AP@2", ap_denominator="min") == F(3, 4)
    assert q(d, g, "AP@1", ap_denominator="min") == 1
    assert q(d, g, "P@2") == F(3, 4)
    assert q(d, g, "P@5") == F(2, 5)  # k > N divides by k asked
    assert q(d, g, "R@2") == F(3, 4)
    assert q(d, g, "R@7") == 1
    assert q(d, g, "F1@2") == F(3, 4)  # 2 * 3/2 / (2 + 2)
    assert q(d, g, "F1@6") == F(1, 2)  # 2 * 2 / (6 + 2)
    assert q(d, g, "RR") == 1
    assert q(d, g, "Rprec") == F(3, 4)
    assert q(d, g, "ACG@3") == F(2, 3)
    assert q(d, g, "P(radius=1)") == F(2, 3)
    assert q(d, g, "R(radius=0)") == F(1, 2)
    assert q(d, g, "P(radius=9)") == F(1, 2)
    # binary grades: WAP == AP, exp2 gain == linear gain
    for den in AP_DENOMINATORS:
        for k in ("", "@1", "@2", "@3"):
            assert q(d, g, "WAP" + k, ap_denominator=den) == q(d, g, "AP" + k, ap_denominator=den)
    assert q(d, g, "DCG", gain="exp2") == pytest.approx(q(d, g, "DCG", gain="linear"), abs=0, rel=1e-15)
    # fixed orders
    assert q(d, g, "AP", ties="optimistic") == 1
    assert q(d, g, "AP", ties="pessimistic") == F(5, 6)
    assert q(d, g, "AP", ties="stable") == F(5, 6)  # index order puts index 1 (grade 0) first


def test_hand_cut_tie_ratio_of_expectations_is_wrong():
    # one tie of 3, one relevant item; the relevant item is at rank 1, 2 or 3
    d, g = [0, 0, 0], [0, 1, 0]
    assert q(d, g, "AP@2", ap_denominator="retrieved") == F(1, 2)  # (1 + 1/2 + 0) / 3
    # ratio of expectations E[S]/E[hits] = (1/2) / (2/3) = 3/4: not the tie-aware value
    assert q(d, g, "AP@2", ap_denominator="retrieved") != F(3, 4)
    assert q(d, g, "AP@2", ap_denominator="total") == F(1, 2)
    assert q(d, g, "AP@2", ap_denominator="min") == F(1, 2)
    assert q(d, g, "AP") == F(11, 18)  # (1 + 1/2 + 1/3) / 3
    assert q(d, g, "RR") == F(11, 18)
    assert q(d, g, "RR@2") == F(1, 2)
    assert q(d, g, "RR@1") == F(1, 3)
    assert q(d, g, "P@1") == F(1, 3)
    assert q(d, g, "Rprec") == F(1, 3)
    assert float(q(d, g, "nDCG@1")) == pytest.approx(1 / 3, rel=1e-15)
    dcg2 = (1 + 1 / math.log2(3)) / 3
    assert float(q(d, g, "nDCG@2")) == pytest.approx(dcg2, rel=1e-15)
    assert q(d, g, "RR", ties="stable") == F(1, 2)


def test_hand_graded_example():
    d, g = [0, 0], [2, 1]  # orderings (2, 1), (1, 2)
    l3 = math.log2(3)
    assert q(d, g, "DCG", gain="exp2") == pytest.approx(2 + 2 / l3, rel=1e-15)
    assert q(d, g, "DCG", gain="linear") == pytest.approx(1.5 + 1.5 / l3, rel=1e-15)
    assert q(d, g, "nDCG", gain="exp2") == pytest.approx((2 + 2 / l3) / (3 + 1 / l3), rel=1e-15)
    assert q(d, g, "nDCG@1", gain="exp2") == pytest.approx(2 / 3, rel=1e-15)
    assert q(d, g, "nDCG@1", gain="linear") == pytest.approx(3 / 4, rel=1e-15)
    # WAP: (2,1): CG 2,3 -> W = 2 + 3/2 = 7/2 -> 7/4 ; (1,2): CG 1,3 -> W = 1 + 3/2 -> 5/4
    assert q(d, g, "WAP") == F(3, 2)  # > 1: WAP is not bounded by 1 with grades > 1
    assert q(d, g, "WAP@1", ap_denominator="retrieved") == F(3, 2)
    assert q(d, g, "WAP@1", ap_denominator="total") == F(3, 4)
    assert q(d, g, "WAP@1", ap_denominator="min") == F(3, 2)
    assert q(d, g, "ACG@1") == F(3, 2)
    assert q(d, g, "ACG@3") == 1  # (2 + 1) / 3, k asked
    assert q(d, g, "WAP", ties="optimistic") == F(7, 4)
    assert q(d, g, "WAP", ties="pessimistic") == F(5, 4)
    assert q(d, g, "WAP", ties="stable") == F(7, 4)
    assert q(d, g, "AP") == 1


def test_hand_stable_mode():
    # stable argsort of [1, 0, 1] is [1, 0, 2] -> grades (0, 1, 2)
    d, g = [1, 0, 1], [1, 0, 2]
    assert list(orderings(d, g, "stable")) == [(0, 1, 2)]
    assert list(orderings(d, g, "optimistic")) == [(0, 2, 1)]
    assert list(orderings(d, g, "pessimistic")) == [(0, 1, 2)]
    assert q(d, g, "AP", ties="stable") == F(7, 12)  # (1/2 + 2/3) / 2
    assert q(d, g, "AP", ties="optimistic") == F(7, 12)
    assert q(d, g, "WAP", ties="stable") == F(3, 4)  # (1/2 + 3/3) / 2
    assert q(d, g, "WAP", ties="optimistic") == 1  # (2/2 + 3/3) / 2
    assert q(d, g, "WAP", ties="average") == F(7, 8)
    assert q(d, g, "RR@1", ties="optimistic") == 0


def test_hand_empty_policies():
    d, g = [0, 1, 1], [0, 0, 0]
    names = ["AP", "AP@2", "WAP@2", "nDCG@2", "DCG@2", "P@2", "R@2", "F1@2", "RR", "RR@1",
             "Rprec", "ACG@2", "P(radius=1)", "R(radius=1)"]
    zero = oracle_query(d, g, names, empty="zero")
    assert all(v == 0 for v in zero.values())
    skip = oracle_query(d, g, names, empty="skip")
    assert all(math.isnan(v) for v in skip.values())
    one = oracle_query(d, g, names, empty="one")
    natural = {"DCG@2", "P@2", "F1@2", "ACG@2", "P(radius=1)"}
    assert {n for n, v in one.items() if v == 0} == natural
    assert {n for n, v in one.items() if v == 1} == set(names) - natural
    with pytest.raises(ValueError):
        oracle_query(d, g, names, empty="error")


def test_oracle_evaluate_means_and_empty():
    dist = [[0, 1, 1], [0, 0, 2], [1, 1, 1]]
    grades = [[1, 0, 1], [0, 0, 0], [0, 2, 0]]
    mean, per, n_empty = oracle_evaluate(dist, grades, ["AP", "P@1"], empty="zero")
    assert n_empty == 1
    ap0 = float(q(dist[0], grades[0], "AP"))
    ap2 = float(q(dist[2], grades[2], "AP"))
    assert per["AP"].tolist() == [ap0, 0.0, ap2]
    assert mean["AP"] == pytest.approx((ap0 + ap2) / 3, rel=1e-15)
    mean, per, _ = oracle_evaluate(dist, grades, ["AP"], empty="skip")
    assert math.isnan(per["AP"][1])
    assert mean["AP"] == pytest.approx((ap0 + ap2) / 2, rel=1e-15)
    mean, per, _ = oracle_evaluate(dist, grades, ["AP", "P@1"], empty="one")
    assert per["AP"][1] == 1 and per["P@1"][1] == 0
    with pytest.raises(ValueError):
        oracle_evaluate(dist, grades, ["AP"], empty="error")
    mean, _, n_empty = oracle_evaluate([dist[1]], [grades[1]], ["AP"], empty="skip")
    assert n_empty == 1 and math.isnan(mean["AP"])


def test_metric_names():
    assert canonical_name("mAP@5") == "AP@5"
    assert canonical_name("map@5") == "AP@5"
    assert canonical_name("ndcg@3") == "nDCG@3"
    assert canonical_name("precision@2") == "P@2"
    assert canonical_name("recall@2") == "R@2"
    assert canonical_name("mrr") == "RR"
    assert canonical_name("AP@ALL") == "AP"
    assert canonical_name("P(radius=2)") == "P(radius=2)"
    assert [s.name for s in expand_metrics(["P@[1,10,100]", "AP"])] == ["P@1", "P@10", "P@100", "AP"]


# ------------------------------------------------------------------------------------------
# enumeration
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("items", [[], [0], [1, 1], [0, 1, 0], [2, 0, 2, 1], [3, 3, 0, 0, 1, 1], [0, 1, 2, 3, 4]])
def test_distinct_permutations(items):
    got = distinct_permutations(items)
    assert len(got) == len(set(got))
    assert set(got) == set(itertools.permutations(items))


def _random_case(rng, n_max=7, max_grade=3, max_orderings=720, labelled=False):
    while True:
        n = int(rng.integers(1, n_max + 1))
        d = rng.integers(0, int(rng.integers(1, 5)), n)
        g = rng.integers(0, max_grade + 1, n) * (rng.random(n) < rng.uniform(0.2, 0.9))
        if g.any() and count_orderings(d, g, labelled=labelled) <= max_orderings:
            return d.tolist(), g.tolist()


@pytest.mark.parametrize("seed", range(12))
def test_distinct_equals_labelled_enumeration(seed):
    rng = np.random.default_rng(1000 + seed)
    d, g = _random_case(rng, n_max=6, labelled=True)
    exact = oracle_query_exact(d, g, ALL_METRICS)
    labelled = oracle_query_exact(d, g, ALL_METRICS, labelled=True)
    assert labelled.keys() == exact.keys()
    for key, v in exact.items():
        if isinstance(v, float):
            assert labelled[key] == pytest.approx(v, rel=1e-13, abs=1e-15), key
        else:
            assert labelled[key] == v, key
    # and the literal average over labelled permutations, for a few metrics
    for m in ("AP@3", "WAP@3", "RR@3", "nDCG@3"):
        for den in AP_DENOMINATORS:
            lit = oracle_query_literal(d, g, m, labelled=True, ap_denominator=den)
            assert lit == pytest.approx(exact[(canonical_name(m), den, "exp2")], rel=1e-13)


@pytest.mark.parametrize("seed", range(40))
def test_fast_path_equals_literal_average(seed):
    rng = np.random.default_rng(seed)
    d, g = _random_case(rng, n_max=7, max_orderings=300)
    metrics = ALL_METRICS[:: 1 + seed % 3]
    for ties in TIE_MODES:
        exact = oracle_query_exact(d, g, metrics, ties=ties)
        for m in metrics:
            for den in AP_DENOMINATORS:
                for gain in GAINS:
                    lit = oracle_query_literal(d, g, m, ties=ties, ap_denominator=den, gain=gain)
                    v = exact[(canonical_name(m), den, gain)]
                    if isinstance(v, float):
                        assert lit == pytest.approx(v, rel=1e-13, abs=1e-15), (m, den, gain, ties)
                    else:
                        assert lit == v, (m, den, gain, ties)


@pytest.mark.parametrize("seed", range(30))
def test_fixed_modes_bracket_average_and_match_definitions(seed):
    rng = np.random.default_rng(500 + seed)
    d, g = _random_case(rng)
    n = len(g)
    # optimistic / pessimistic are the best / worst orderings for metrics monotone in
    # "higher grades earlier"; AP@k and WAP@k with denominator "retrieved" are not monotone
    monotone = ["AP", "WAP", "nDCG", "DCG", "RR", "Rprec", "P@2", "R@2", "F1@2", "ACG@2", "RR@2", "nDCG@2"]
    monotone += [f"{m}@{k}" for m in ("AP", "WAP") for k in (1, 2, 3)]
    for den in ("total", "min"):
        vals = {t: oracle_query(d, g, monotone, ties=t, ap_denominator=den, exact=True) for t in TIE_MODES}
        allv = [oracle_query_literal(d, g, m, ties="average", ap_denominator=den) for m in monotone]
        for m, avg in zip(monotone, allv):
            name = canonical_name(m)
            lo, hi = vals["pessimistic"][name], vals["optimistic"][name]
            tol = 1e-12 if isinstance(avg, float) else 0
            assert lo - tol <= vals["average"][name] <= hi + tol, (m, den)
            assert lo - tol <= vals["stable"][name] <= hi + tol, (m, den)
            # every single ordering lies between them as well
            for o in itertools.islice(orderings(d, g), 50):
                v = plain_metric(o, m, ap_denominator=den)
                assert lo - tol <= v <= hi + tol
    # stable: the plain metric on np.argsort(kind="stable")
    order = np.argsort(np.asarray(d), kind="stable")
    ranked = [g[i] for i in order]
    for m in ("AP@3", "WAP@2", "RR", "nDCG@2"):
        assert q(d, g, m, ties="stable") == plain_metric(ranked, m)
    assert len(list(orderings(d, g, "average"))) == count_orderings(d, g)
    assert len(list(orderings(d, g, "average", labelled=True))) == count_orderings(d, g, labelled=True) or n > 7


# ------------------------------------------------------------------------------------------
# seed 000 closed forms (independent reference written by someone else)
# ------------------------------------------------------------------------------------------
def _seed_case(rng, n_q, n_db, n_bits, n_labels):
    qH = rng.choice([-1, 1], size=(n_q, n_bits))
    rH = rng.choice([-1, 1], size=(n_db, n_bits))
    qL = (rng.random((n_q, n_labels)) < 0.35).astype(np.int64)
    rL = (rng.random((n_db, n_labels)) < 0.35).astype(np.int64)
    return qH, rH, qL, rL


@pytest.mark.parametrize("seed", range(20))
def test_seed000_P_R_F1_formula_matches_oracle(seed):
    rng = np.random.default_rng(seed)
    n_db = int(rng.integers(2, 9))
    qH, rH, qL, rL = _seed_case(rng, 4, n_db, int(rng.integers(2, 5)), 3)
    D = hamming_distances(qH, rH)
    G = grades_from_labels(qL, rL)
    assert np.array_equal(D, seed000.hamming(qH, rH))
    assert np.array_equal(G > 0, seed000.sim_mat(qL, rL) > 0)
    for k in range(1, n_db + 1):
        P, Rk, F1 = seed000.P_R_F1_tie(qH, rH, qL, rL, k=k, per_query=True)
        for qi in range(4):
            if not G[qi].any() or count_orderings(D[qi], G[qi] > 0) > 5000:
                continue
            o = oracle_query(D[qi], (G[qi] > 0).astype(int), [f"P@{k}", f"R@{k}", f"F1@{k}"], exact=True)
            assert P[qi] == pytest.approx(float(o[f"P@{k}"]), rel=1e-13, abs=1e-15)
            assert Rk[qi] == pytest.approx(float(o[f"R@{k}"]), rel=1e-13, abs=1e-15)
            assert F1[qi] == pytest.approx(float(o[f"F1@{k}"]), rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("seed", range(20))
def test_seed000_AP_all_and_nDCG_match_oracle(seed):
    rng = np.random.default_rng(100 + seed)
    n_db = int(rng.integers(2, 9))
    qH, rH, qL, rL = _seed_case(rng, 4, n_db, int(rng.integers(2, 5)), 4)
    D = seed000.hamming(qH, rH)
    G = grades_from_labels(qL, rL)  # graded: shared labels
    ks = list(range(1, n_db + 3))
    ap = seed000.multi_mAP_tie_all(D, G > 0, per_query=True)
    nd = seed000.multi_nDCG_tie(D, G, k=ks, per_query=True)
    for qi in range(4):
        if count_orderings(D[qi], G[qi]) > 5000:
            continue
        o = oracle_query(D[qi], G[qi], ["AP"] + [f"nDCG@{k}" for k in ks], gain="exp2", empty="zero")
        assert ap[qi] == pytest.approx(o["AP"], rel=1e-13, abs=1e-15)
        for j, k in enumerate(ks):
            assert nd[qi, j] == pytest.approx(o[f"nDCG@{k}"], rel=1e-12, abs=1e-15)


# ------------------------------------------------------------------------------------------
# scikit-learn
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_sklearn_average_precision_tie_free(seed):
    # average_precision_score is not tie-aware: only tie-free scores.  Its AP divides by R,
    # which at k = ALL equals every ap_denominator.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 10))
    d = rng.permutation(n) * 2 + 1  # distinct distances
    y = (rng.random(n) < 0.4).astype(int)
    y[rng.integers(n)] = 1
    sk = average_precision_score(y, -d)
    for den in AP_DENOMINATORS:
        for ties in TIE_MODES:
            assert q(d, y, "AP", ties=ties, ap_denominator=den) == pytest.approx(sk, rel=1e-13)


@pytest.mark.parametrize("seed", range(20))
def test_sklearn_ndcg_tie_averaged(seed):
    # sklearn ndcg_score(ignore_ties=False): McSherry-Najork tie averaging, gain = y_true
    # (= our "linear"), discount 1/log2(1+i), IDCG from y_true sorted, all-zero rows score 0
    # (our empty="zero"), mean over all rows.
    rng = np.random.default_rng(seed)
    n_q, n = 5, int(rng.integers(2, 9))
    dist = rng.integers(0, 4, (n_q, n))
    grades = rng.integers(0, 4, (n_q, n)) * (rng.random((n_q, n)) < 0.5)
    grades[0] = 0  # one empty row
    for k in (1, 2, 3, n, n + 2):
        kk = min(k, n)  # sklearn's k > n behaves as n
        sk_rows = [ndcg_score(grades[i:i + 1], -dist[i:i + 1], k=kk) for i in range(n_q)]
        sk_dcg = dcg_score(grades[1:], -dist[1:], k=kk)
        mean, per, _ = oracle_evaluate(dist, grades, [f"nDCG@{k}", f"DCG@{k}"], gain="linear", empty="zero")
        assert per[f"nDCG@{k}"] == pytest.approx(sk_rows, rel=1e-12, abs=1e-15)
        assert mean[f"nDCG@{k}"] == pytest.approx(ndcg_score(grades, -dist, k=kk), rel=1e-12)
        assert np.mean(per[f"DCG@{k}"][1:]) == pytest.approx(sk_dcg, rel=1e-12)


# ------------------------------------------------------------------------------------------
# input helpers
# ------------------------------------------------------------------------------------------
def test_hamming_and_grades_helpers():
    rng = np.random.default_rng(7)
    qb = rng.integers(0, 2, (5, 11))
    xb = rng.integers(0, 2, (9, 11))
    ref = np.rint(cdist(qb, xb, "hamming") * 11).astype(int)
    assert np.array_equal(hamming_distances(qb, xb), ref)
    assert np.array_equal(hamming_distances(qb * 2 - 1, xb.astype(bool)), ref)
    assert np.array_equal(seed000.hamming(seed000.to_pm1(qb), seed000.to_pm1(xb)), ref)
    ql = rng.integers(0, 2, (5, 4))
    xl = rng.integers(0, 2, (9, 4))
    assert np.array_equal(grades_from_labels(ql, xl), ql @ xl.T)
    assert np.array_equal(grades_from_labels(np.array([0, 1]), np.array([1, 1, 0])), [[0, 0, 1], [1, 1, 0]])
    dense = grades_from_csr([0, 2, 2, 3], [1, 4, 0], [3, 1, 2], 5)
    assert dense.tolist() == [[0, 3, 0, 0, 1], [0, 0, 0, 0, 0], [2, 0, 0, 0, 0]]
