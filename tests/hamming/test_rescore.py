"""fasttie.rescore_evaluate: Hamming candidates + float rescoring, checked against enumeration of
every choice of the tied candidates (tests/oracle_rescore.py), against a plain numpy pipeline
for ties="stable", and against faiss IndexFlatIP for the float ground truth."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
import oracle_rescore as oracle

METRICS = ["P@1", "P@3", "R@2", "nDCG@2", "nDCG@4", "DCG@3", "AP@3", "AP", "RR", "RR@2", "Success@1", "Success@3",
           "NN-recall@1", "NN-recall@3"]
_BASES = {"NN-recall": "NN-recall"}


def _split(name):
    base, _, k = name.partition("@")
    return base, (int(k) if k else None)


def _fitting(metrics, n_db):
    """The metrics without an NN-recall@k of k > n_db (a ValueError)."""
    return [m for m in metrics if not (m.startswith("NN") and int(m.split("@")[1]) > n_db)]


def random_case(rng, n_db=None, relevance=None):
    n_db = n_db or int(rng.integers(2, 9))
    n_bits = int(rng.integers(3, 6))
    n_queries = int(rng.integers(1, 4))
    q_codes = rng.integers(0, 2, (n_queries, n_bits))
    db_codes = rng.integers(0, 2, (n_db, n_bits))
    dim = int(rng.integers(1, 4))
    # small integers: exact inner products, with ties in stage 2 too
    q_vec = rng.integers(-2, 3, (n_queries, dim)).astype(np.float64)
    db_vec = rng.integers(-2, 3, (n_db, dim)).astype(np.float64)
    relevance = relevance or rng.choice(["class", "multihot", "qrels"])
    if relevance == "class":
        ql, dl = rng.integers(0, 3, n_queries), rng.integers(0, 3, n_db)
        grades = (ql[:, None] == dl[None, :]).astype(int)
        labels = dict(query_labels=ql, db_labels=dl)
    elif relevance == "multihot":
        ql, dl = rng.integers(0, 2, (n_queries, 3)), rng.integers(0, 2, (n_db, 3))
        grades = ql @ dl.T
        labels = dict(query_labels=ql, db_labels=dl)
    else:
        grades = rng.integers(0, 4, (n_queries, n_db)) * (rng.random((n_queries, n_db)) < 0.5)
        indptr = np.concatenate([[0], np.cumsum((grades > 0).sum(axis=1))])
        indices = np.concatenate([np.flatnonzero(row) for row in grades]).astype(np.int64)
        values = np.concatenate([row[row > 0] for row in grades]).astype(np.int64)
        labels = dict(qrels=(indptr, indices, values))
    return q_codes, db_codes, q_vec, db_vec, grades, labels


def oracle_values(q_codes, db_codes, q_vec, db_vec, grades, candidates, metrics, stable=False, **options):
    """{metric: [per-query (mean, min, max, std)]}."""
    out = {name: [] for name in metrics}
    for i in range(len(q_codes)):
        distances = oracle.hamming(q_codes[i], db_codes)
        scores = [float(np.dot(q_vec[i], row)) for row in db_vec]
        truth = oracle.truth_ids(scores, len(scores))
        for name in metrics:
            base, k = _split(name)
            values = oracle.query_values(base, k, distances, scores, list(grades[i]), truth, candidates, stable,
                                         **({} if base == "NN-recall" else options))
            out[name].append(oracle.summary(values))
    return out


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["exp2", "linear"]), st.sampled_from(["total", "min"]))
def test_average_is_the_mean_over_every_choice_of_tied_candidates(seed, gain, ap_denominator):
    rng = np.random.default_rng(seed)
    q_codes, db_codes, q_vec, db_vec, grades, labels = random_case(rng)
    candidates = int(rng.integers(1, len(db_codes) + 2))
    metrics = _fitting(METRICS, len(db_codes))
    res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=candidates, metrics=metrics, gain=gain,
                              ap_denominator=ap_denominator, **labels)
    want = oracle_values(q_codes, db_codes, q_vec, db_vec, grades, candidates, metrics, gain_kind=gain,
                         ap_denominator=ap_denominator)
    for name in metrics:
        expected = [float(v[0]) for v in want[name]]
        np.testing.assert_allclose(res.per_query[name], expected, rtol=0, atol=1e-12, err_msg=name)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_stable_takes_the_first_tied_items_in_index_order(seed):
    rng = np.random.default_rng(seed)
    q_codes, db_codes, q_vec, db_vec, grades, labels = random_case(rng)
    candidates = int(rng.integers(1, len(db_codes) + 1))
    metrics = _fitting(METRICS, len(db_codes))
    res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=candidates, metrics=metrics,
                              ties="stable", **labels)
    want = oracle_values(q_codes, db_codes, q_vec, db_vec, grades, candidates, metrics, stable=True)
    for name in metrics:
        np.testing.assert_allclose(res.per_query[name], [float(v[0]) for v in want[name]], rtol=0, atol=1e-12,
                                   err_msg=name)


def _ndcg(ranked_grades, all_grades, k):
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = float(np.sum((2.0 ** ranked_grades[:k] - 1) * disc[: len(ranked_grades[:k])]))
    ideal = np.sort(all_grades)[::-1][:k]
    idcg = float(np.sum((2.0 ** ideal - 1) * disc[: len(ideal)]))
    return dcg / idcg if idcg else 0.0


def test_stable_matches_a_plain_numpy_pipeline_on_random_data():
    rng = np.random.default_rng(7)
    n_q, n_db, n_bits, dim = 40, 3000, 64, 16
    q_vec = rng.standard_normal((n_q, dim))
    db_vec = rng.standard_normal((n_db, dim))
    proj = rng.standard_normal((dim, n_bits))
    q_codes, db_codes = (q_vec @ proj > 0), (db_vec @ proj > 0)
    ql, dl = rng.integers(0, 5, n_q), rng.integers(0, 5, n_db)
    res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=[30, 100], metrics=["nDCG@10", "P@10"],
                              query_labels=ql, db_labels=dl, ties="stable")
    qw, dw = ft.pack_codes(q_codes).words, ft.pack_codes(db_codes).words
    for c in (30, 100):
        nd, p = [], []
        for i in range(n_q):
            dist = np.bitwise_count(qw[i] ^ dw).sum(axis=1)
            cand = np.argsort(dist, kind="stable")[:c]
            order = cand[np.argsort(-(db_vec[cand] @ q_vec[i]), kind="stable")]
            g = (dl[order] == ql[i]).astype(float)
            nd.append(_ndcg(g, (dl == ql[i]).astype(float), 10))
            p.append(g[:10].sum() / 10)
        np.testing.assert_allclose(res[c].per_query["nDCG@10"], nd, rtol=0, atol=1e-12)
        np.testing.assert_allclose(res[c].per_query["P@10"], p, rtol=0, atol=1e-12)


def test_monte_carlo_of_random_tie_choices_agrees_with_the_average():
    rng = np.random.default_rng(3)
    n_db, n_bits, dim = 400, 8, 8  # 8 bits: large ties at every cut
    q_vec = rng.standard_normal((3, dim))
    db_vec = rng.standard_normal((n_db, dim))
    proj = rng.standard_normal((dim, n_bits))
    q_codes, db_codes = q_vec @ proj > 0, db_vec @ proj > 0
    ql, dl = rng.integers(0, 4, 3), rng.integers(0, 4, n_db)
    metrics = ["nDCG@10", "AP@10", "RR", "Success@3", "NN-recall@10", "R@5"]
    res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=40, metrics=metrics, query_labels=ql,
                              db_labels=dl)
    grades = (ql[:, None] == dl[None, :]).astype(int)
    for i in range(3):
        distances = [int(x) for x in (q_codes[i] != db_codes).sum(axis=1)]
        scores = list(db_vec @ q_vec[i])
        truth = oracle.truth_ids(scores, 10)
        order = sorted(range(n_db), key=lambda j: (distances[j], j))
        cut = distances[order[39]]
        sure = [j for j in range(n_db) if distances[j] < cut]
        tied = [j for j in range(n_db) if distances[j] == cut]
        assert len(tied) > 40 - len(sure) > 0  # the cut falls inside a tie
        for name in metrics:
            base, k = _split(name)
            draws = []
            for _ in range(2000):
                chosen = rng.choice(tied, 40 - len(sure), replace=False)
                ids = oracle.ranked(sure + [int(j) for j in chosen], scores)
                draws.append(float(oracle.plain(base, k, ids, list(grades[i]), truth)))
            se = np.std(draws) / math.sqrt(len(draws))
            assert abs(np.mean(draws) - res.per_query[name][i]) <= 4 * se + 1e-12, (name, i)


def test_nn_recall_against_faiss_flat_ip():
    faiss = pytest.importorskip("faiss")
    rng = np.random.default_rng(11)
    q_vec = rng.standard_normal((20, 32)).astype(np.float32)
    db_vec = rng.standard_normal((2000, 32)).astype(np.float32)
    q_codes, db_codes = q_vec > 0, db_vec > 0
    res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=100, metrics=["NN-recall@10"],
                              ties="stable")
    index = faiss.IndexFlatIP(32)
    index.add(db_vec)
    _, truth = index.search(q_vec, 10)
    qw, dw = ft.pack_codes(q_codes).words, ft.pack_codes(db_codes).words
    want = []
    for i in range(20):
        dist = np.bitwise_count(qw[i] ^ dw).sum(axis=1)
        cand = np.argsort(dist, kind="stable")[:100]
        top = cand[np.argsort(-(db_vec[cand].astype(np.float64) @ q_vec[i].astype(np.float64)), kind="stable")][:10]
        want.append(len(set(top) & set(truth[i])) / 10)
    np.testing.assert_allclose(res.per_query["NN-recall@10"], want, rtol=0, atol=1e-12)


def test_a_sweep_equals_separate_calls_and_threads_do_not_change_results():
    rng = np.random.default_rng(5)
    q_codes, db_codes = rng.integers(0, 2, (9, 16)), rng.integers(0, 2, (500, 16))
    q_vec, db_vec = rng.standard_normal((9, 8)).astype(np.float32), rng.standard_normal((500, 8)).astype(np.float32)
    ql, dl = rng.integers(0, 3, 9), rng.integers(0, 3, 500)
    metrics = ["nDCG@10", "AP", "RR", "NN-recall@5"]
    sweep = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=[10, 50, 200], metrics=metrics,
                                query_labels=ql, db_labels=dl, n_threads=3)
    for c in (10, 50, 200):
        one = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=c, metrics=metrics, query_labels=ql,
                                  db_labels=dl, n_threads=1)
        for name in metrics:
            np.testing.assert_array_equal(sweep[c].per_query[name], one.per_query[name])
    assert list(sweep.curve("nDCG@10")) == [sweep[c].mean["nDCG@10"] for c in (10, 50, 200)]


def test_keys_follow_the_names_as_asked():
    rng = np.random.default_rng(1)
    q_codes, db_codes, q_vec, db_vec, grades, labels = random_case(rng, n_db=6, relevance="class")
    res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=3, metrics=["ndcg@[2,3]", "mrr",
                              "nn_recall@2"], **labels)
    assert list(res.mean) == ["ndcg@2", "ndcg@3", "mrr", "nn_recall@2"]
    assert res.mean["nDCG@2"] == res.mean["ndcg@2"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(candidates=0), "candidates"),
    (dict(candidates=2.5), "candidates"),
    (dict(metrics=["Rprec"]), "metrics"),
    (dict(metrics=["bogus@3"]), "bogus"),
    (dict(ties="random"), "ties"),
    (dict(ap_denominator="retrieved"), "ap_denominator"),
    (dict(empty="one"), "empty"),
    (dict(query_vectors=np.zeros((2, 3), dtype=np.int64)), "query_vectors"),
    (dict(query_vectors=np.zeros((2, 5))), "dimensions"),
])
def test_bad_input_names_the_argument(kwargs, match):
    rng = np.random.default_rng(0)
    args = dict(query_codes=rng.integers(0, 2, (2, 8)), db_codes=rng.integers(0, 2, (6, 8)),
                query_vectors=np.zeros((2, 3)), db_vectors=np.zeros((6, 3)), candidates=3, metrics=["P@2"],
                query_labels=np.array([0, 1]), db_labels=np.arange(6) % 2)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        ft.rescore_evaluate(**args)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["total", "min"]))
def test_spread_is_the_std_and_range_over_every_choice(seed, ap_denominator):
    rng = np.random.default_rng(seed)
    q_codes, db_codes, q_vec, db_vec, grades, labels = random_case(rng)
    candidates = int(rng.integers(1, len(db_codes) + 2))
    metrics = _fitting(METRICS, len(db_codes))
    res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=candidates, metrics=metrics, spread=True,
                              ap_denominator=ap_denominator, **labels)
    want = oracle_values(q_codes, db_codes, q_vec, db_vec, grades, candidates, metrics, ap_denominator=ap_denominator)
    for name in metrics:
        got = {"mean": res.per_query[name], "min": res.tie_min[name], "max": res.tie_max[name],
               "std": res.tie_std[name]}
        for t, field_name in enumerate(("mean", "min", "max", "std")):
            expected = [float(v[t]) for v in want[name]]
            np.testing.assert_allclose(got[field_name], expected, rtol=0, atol=1e-9 if field_name == "std" else 1e-12,
                                       err_msg=f"{name} {field_name}")
        np.testing.assert_allclose(res.mean_tie_min[name], np.mean(res.tie_min[name]), rtol=0, atol=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["optimistic", "pessimistic"]))
def test_optimistic_and_pessimistic_are_the_best_and_worst_choice(seed, ties):
    rng = np.random.default_rng(seed)
    q_codes, db_codes, q_vec, db_vec, grades, labels = random_case(rng)
    candidates = int(rng.integers(1, len(db_codes) + 1))
    metrics = _fitting(METRICS, len(db_codes))
    res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=candidates, metrics=metrics, ties=ties,
                              **labels)
    want = oracle_values(q_codes, db_codes, q_vec, db_vec, grades, candidates, metrics)
    for name in metrics:
        expected = [float(v[2] if ties == "optimistic" else v[1]) for v in want[name]]
        np.testing.assert_allclose(res.per_query[name], expected, rtol=0, atol=1e-12, err_msg=name)


def test_larger_ties_spread_against_enumeration():
    """Ties of up to 12 items with 3..9 places: the capped states of the walk are reached."""
    rng = np.random.default_rng(21)
    for _ in range(6):
        n_db = 14
        q_codes = np.zeros((1, 4), dtype=int)
        db_codes = np.zeros((n_db, 4), dtype=int)
        db_codes[:, 0] = rng.random(n_db) < 0.85  # most items at distance 1
        q_vec = rng.integers(-3, 4, (1, 2)).astype(float)
        db_vec = rng.integers(-3, 4, (n_db, 2)).astype(float)
        ql, dl = np.array([1]), rng.integers(0, 2, n_db)
        grades = (dl[None, :] == ql[:, None]).astype(int)
        metrics = ["P@3", "nDCG@4", "AP@3", "RR", "Success@2", "NN-recall@3", "AP"]
        for c in (4, 7, 10):
            res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=c, metrics=metrics, spread=True,
                                      query_labels=ql, db_labels=dl)
            want = oracle_values(q_codes, db_codes, q_vec, db_vec, grades, c, metrics)
            for name in metrics:
                mean, low, high, std = want[name][0]
                assert abs(res.per_query[name][0] - float(mean)) < 1e-12, name
                assert abs(res.tie_min[name][0] - float(low)) < 1e-12, name
                assert abs(res.tie_max[name][0] - float(high)) < 1e-12, name
                assert abs(res.tie_std[name][0] - std) < 1e-9, name


def test_min_oversampling_reads_the_sweep():
    rng = np.random.default_rng(8)
    q_codes, db_codes = rng.integers(0, 2, (5, 8)), rng.integers(0, 2, (300, 8))
    q_vec, db_vec = rng.standard_normal((5, 6)), rng.standard_normal((300, 6))
    sweep = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=[5, 10, 20, 40, 300],
                                metrics=["NN-recall@5"], spread=True)
    low, mean = sweep.curve("NN-recall@5", "min"), sweep.curve("NN-recall@5")
    assert low[-1] == mean[-1] == 1.0  # the whole database: the exact float top 5
    target = float(low[2])
    want = min(c for c, v in zip(sweep.candidates, low) if v >= target) / 5
    assert ft.min_oversampling(sweep, "NN-recall@5", target) == want
    want = min(c for c, v in zip(sweep.candidates, mean) if v >= target) / 5
    assert ft.min_oversampling(sweep, "NN-recall@5", target, ties="average") == want
    assert ft.min_oversampling(sweep, "NN-recall@5", 1.1) is None
    plain = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=[5, 10], metrics=["NN-recall@5"])
    with pytest.raises(ValueError, match="spread=True"):
        ft.min_oversampling(plain, "NN-recall@5", 0.5)


def test_queries_without_a_relevant_item_follow_empty():
    rng = np.random.default_rng(4)
    q_codes, db_codes = rng.integers(0, 2, (3, 8)), rng.integers(0, 2, (40, 8))
    q_vec, db_vec = rng.standard_normal((3, 4)), rng.standard_normal((40, 4))
    ql, dl = np.array([0, 1, 7]), rng.integers(0, 2, 40)  # class 7: nothing relevant
    metrics = ["nDCG@5", "RR", "NN-recall@5"]
    zero = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=10, metrics=metrics, query_labels=ql,
                               db_labels=dl)
    skip = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=10, metrics=metrics, query_labels=ql,
                               db_labels=dl, empty="skip")
    assert zero.n_empty == skip.n_empty == 1
    assert zero.per_query["nDCG@5"][2] == 0 and np.isnan(skip.per_query["nDCG@5"][2])
    assert skip.mean["RR"] == pytest.approx(zero.per_query["RR"][:2].mean(), abs=1e-15)
    np.testing.assert_array_equal(skip.per_query["NN-recall@5"], zero.per_query["NN-recall@5"])  # never empty


def test_codes_wider_than_64_bits_match_the_oracle():
    rng = np.random.default_rng(12)
    q_vec, db_vec = rng.standard_normal((4, 200)), rng.standard_normal((60, 200))
    q_codes, db_codes = q_vec > 0, db_vec > 0
    ql, dl = rng.integers(0, 3, 4), rng.integers(0, 3, 60)
    grades = (ql[:, None] == dl[None, :]).astype(int)
    metrics = ["P@3", "nDCG@5", "RR", "NN-recall@5"]
    res = ft.rescore_evaluate(q_codes, db_codes, q_vec, db_vec, candidates=7, metrics=metrics, query_labels=ql,
                              db_labels=dl, ties="stable")
    want = oracle_values(q_codes, db_codes, q_vec, db_vec, grades, 7, metrics, stable=True)
    for name in metrics:
        np.testing.assert_allclose(res.per_query[name], [float(v[0]) for v in want[name]], rtol=0, atol=1e-12)
