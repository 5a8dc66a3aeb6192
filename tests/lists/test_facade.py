"""rank_evaluate(): ranked lists through the shared finalizer, against the brute-force oracle
(fed from scores), scikit-learn, and the worked examples of seeds 001 and 002."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import dcg_score, ndcg_score

import fasttie as ft
from helpers import tie_orders
from oracle import oracle_evaluate

RANK_METRICS = ["AP", "AP@3", "nDCG", "nDCG@2", "DCG@4", "P@1", "P@5", "R@3", "F1@2", "RR", "RR@2",
                "Rprec", "ACG@3"]


def _random_lists(seed, n_queries=4, max_docs=8, max_grade=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_docs + 1, n_queries)
    grades = rng.integers(0, max_grade + 1, sizes.sum()) * (rng.random(sizes.sum()) < 0.6)
    scores = rng.integers(0, 3, sizes.sum()) / 2.0  # few distinct scores: many ties
    return sizes, grades, scores


def _split(values, sizes):
    return np.split(values, np.cumsum(sizes)[:-1])


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("ties", ["average", "stable", "optimistic", "pessimistic"])
def test_against_oracle(seed, ties):
    sizes, grades, scores = _random_lists(seed)
    # the oracle ranks by ascending distance: a dense rank of -score keeps ties and input order
    distances = [np.unique(-s, return_inverse=True)[1] for s in _split(scores, sizes)]
    per_grades = _split(grades, sizes)
    for den in ("total", "retrieved", "min"):
        for gain in ("linear", "exp2"):
            for empty in ("zero", "skip", "one"):
                res = ft.rank_evaluate(grades, scores, sizes, metrics=RANK_METRICS, ties=ties, ap_denominator=den,
                                       gain=gain, empty=empty)
                mean, per_query, n_empty = oracle_evaluate(distances, per_grades, RANK_METRICS, ties=ties,
                                                           ap_denominator=den, gain=gain, empty=empty)
                assert res.n_empty == n_empty
                for name in RANK_METRICS:
                    np.testing.assert_allclose(res.per_query[name], per_query[name], rtol=1e-12, atol=1e-12,
                                               err_msg=f"{name} {ties} {den} {gain} {empty}")


# no whole-list (n)DCG: the discount table stops at DCG@4 (scoring.dcg_depth), deeper columns
# (AP, P@5, R@9, Rprec) must not notice that DCG is no longer counted there
SHALLOW_DCG_METRICS = ["AP", "nDCG@2", "DCG@4", "P@5", "R@9", "Rprec", "RR"]


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("ties", ["average", "stable", "optimistic", "pessimistic"])
def test_dcg_stops_at_its_deepest_cutoff(seed, ties):
    sizes, grades, scores = _random_lists(seed, max_docs=12)
    distances = [np.unique(-s, return_inverse=True)[1] for s in _split(scores, sizes)]
    for gain in ("linear", "exp2"):
        res = ft.rank_evaluate(grades, scores, sizes, metrics=SHALLOW_DCG_METRICS, ties=ties, gain=gain, empty="zero")
        _, per_query, _ = oracle_evaluate(distances, _split(grades, sizes), SHALLOW_DCG_METRICS, ties=ties,
                                          ap_denominator="total", gain=gain, empty="zero")
        for name in SHALLOW_DCG_METRICS:
            np.testing.assert_allclose(res.per_query[name], per_query[name], rtol=1e-12, atol=1e-12,
                                       err_msg=f"{name} {ties} {gain}")


@pytest.mark.parametrize("seed", range(20))
def test_sklearn_tie_averaged_ndcg_and_dcg(seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, 4, (6, 12)).astype(float)
    y_true[:, 0] = 1  # no all-zero rows: sklearn and fasttie agree on them anyway, keep it simple
    y_score = rng.integers(0, 4, (6, 12)).astype(float)
    for k in (1, 3, 12, None):
        res = ft.rank_evaluate(y_true, y_score, metrics=[f"nDCG@{k}" if k else "nDCG", f"DCG@{k}" if k else "DCG"])
        nd = list(res.per_query.values())[0]
        dc = list(res.per_query.values())[1]
        for i in range(6):
            assert nd[i] == pytest.approx(ndcg_score(y_true[i:i + 1], y_score[i:i + 1], k=k, ignore_ties=False), rel=1e-12)
            assert dc[i] == pytest.approx(dcg_score(y_true[i:i + 1], y_score[i:i + 1], k=k, ignore_ties=False), rel=1e-12)
        assert res.mean[f"nDCG@{k}" if k else "nDCG"] == pytest.approx(
            ndcg_score(y_true, y_score, k=k, ignore_ties=False), rel=1e-12)


@pytest.mark.parametrize("values", [(0, 0.5, 1.5, 3), (0, 1, 5000), (0, 1, 2, 3)])
def test_ideal_dcg_any_grades(values):
    """The ideal runs come from a histogram for small integer grades and from a sort
    otherwise: both against scikit-learn and against a numpy ideal with unretrieved grades."""
    rng = np.random.default_rng(len(values))
    y_true = rng.choice(values, (5, 9)).astype(float)
    y_true[:, 0] = values[-1]
    y_score = rng.integers(0, 4, (5, 9)).astype(float)
    res = ft.rank_evaluate(y_true, y_score, metrics=["nDCG", "nDCG@3", "DCG@9"])
    for i in range(5):
        assert res.per_query["nDCG"][i] == pytest.approx(ndcg_score(y_true[i:i + 1], y_score[i:i + 1], ignore_ties=False), rel=1e-12)
        assert res.per_query["nDCG@3"][i] == pytest.approx(ndcg_score(y_true[i:i + 1], y_score[i:i + 1], k=3, ignore_ties=False), rel=1e-12)
    missing = [np.array(values[1:]) for _ in range(5)]
    res = ft.rank_evaluate(y_true, y_score, metrics=["nDCG", "DCG@9"], unretrieved=missing)
    for i in range(5):
        everything = np.sort(np.concatenate([y_true[i], missing[i]]))[::-1]
        ideal = np.sum(everything / np.log2(np.arange(2, len(everything) + 2)))
        assert res.per_query["nDCG"][i] == pytest.approx(res.per_query["DCG@9"][i] / ideal, rel=1e-12)


def test_seed_001_matchzoo_examples():
    assert ft.rank_evaluate([1, 0, 0, 0], [0.2, 0.3, 0.7, 1.0], metrics="mrr").mean["RR"] == 0.25
    assert ft.rank_evaluate([0, 0, 0, 1], [0.2, 0.4, 0.3, 0.1], metrics="P@4").mean["P@4"] == 0.25
    assert ft.rank_evaluate([0, 1, 0, 0], [0.1, 0.6, 0.2, 0.3], metrics="map").mean["AP"] == 1.0
    # matchzoo's DCG: 2**rel - 1 gain and the natural log
    res = ft.rank_evaluate([0, 1, 2, 0], [0.4, 0.2, 0.5, 0.7], metrics=["DCG@3", "nDCG@2"], gain="exp2",
                           log_base=math.e)
    assert round(res.mean["DCG@3"], 2) == 2.73
    assert round(res.mean["nDCG@2"], 4) == 0.5213
    # seed 001's "AveragePrecision" is the mean of P@1..P@n, not IR AP: ([0, 1], [0.1, 0.6]) -> 0.75
    precisions = ft.rank_evaluate([0, 1], [0.1, 0.6], metrics=["P@1", "P@2"]).mean
    assert np.mean(list(precisions.values())) == 0.75
    assert ft.rank_evaluate([0, 1], [0.1, 0.6], metrics="AP").mean["AP"] == 1.0


def test_seed_002_torch_example():
    scores = [0, 0.1, 0.3, 0.4, 0.5]
    labels = [0, 1, 1, 0, 1]
    res = ft.rank_evaluate(labels, scores, metrics=["nDCG@5", "DCG@5"])
    assert res.mean["DCG@5"] == pytest.approx(1 + 1 / math.log2(4) + 1 / math.log2(5))
    assert res.mean["nDCG@5"] == pytest.approx(res.mean["DCG@5"] / (1 + 1 / math.log2(3) + 1 / math.log2(4)))
    # the seed's torch code starts positions at 2 (weights 1/log2(rank + 2)): its number is the DCG of
    # the lists shifted by one rank, which fasttie reproduces with a leading non-relevant document
    shifted = ft.rank_evaluate([0] + labels, [1.0] + scores, metrics="DCG@6").mean["DCG@6"]
    ideal = ft.rank_evaluate([0, 1, 1, 1, 0, 0], [6, 5, 4, 3, 2, 1], metrics="DCG@6").mean["DCG@6"]
    torch_value = (1 / math.log2(3) + 1 / math.log2(5) + 1 / math.log2(6)) / (
        1 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5))
    assert shifted / ideal == pytest.approx(torch_value)
    assert round(torch_value, 4) == 0.9275


def test_group_qid_and_2d_agree():
    sizes, grades, scores = _random_lists(3, n_queries=5, max_docs=6)
    sizes = np.full(5, 6)
    grades = np.random.default_rng(0).integers(0, 3, 30)
    scores = np.random.default_rng(1).integers(0, 4, 30).astype(float)
    by_group = ft.rank_evaluate(grades, scores, sizes, metrics=RANK_METRICS)
    by_2d = ft.rank_evaluate(grades.reshape(5, 6), scores.reshape(5, 6), metrics=RANK_METRICS)
    qid = np.repeat(["q3", "q1", "q4", "q0", "q2"], 6)
    shuffle = np.random.default_rng(2).permutation(30)
    by_qid = ft.rank_evaluate(grades[shuffle], scores[shuffle], qid=qid[shuffle], metrics=RANK_METRICS)
    assert by_qid.query_ids == ["q0", "q1", "q2", "q3", "q4"]
    position = [by_qid.query_ids.index(q) for q in ["q3", "q1", "q4", "q0", "q2"]]
    for name in RANK_METRICS:
        np.testing.assert_array_equal(by_group.per_query[name], by_2d.per_query[name])
        np.testing.assert_allclose(by_group.per_query[name], by_qid.per_query[name][position], rtol=1e-15)


def test_relevance_level_and_unretrieved():
    # grades 1 are not relevant at level 2, but still gain in DCG
    res = ft.rank_evaluate([1, 2, 0], [3, 2, 1], metrics=["RR", "AP", "DCG@3"], relevance_level=2)
    assert res.mean["RR"] == 0.5 and res.mean["AP"] == 0.5
    assert res.mean["DCG@3"] == pytest.approx(1 + 2 / math.log2(3))
    # a relevant document missing from the run counts in R and in the ideal DCG
    res = ft.rank_evaluate([1, 0], [2, 1], metrics=["AP", "R@2", "Rprec", "nDCG"], unretrieved=[[1]])
    assert res.mean["AP"] == 0.5 and res.mean["R@2"] == 0.5 and res.mean["Rprec"] == 0.5
    assert res.mean["nDCG"] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_trec_ties_order_by_docno_descending():
    res = ft.rank_evaluate([1, 0, 0], [1.0, 1.0, 1.0], metrics="RR", ties="trec", doc_ids=["a", "c", "b"])
    assert res.mean["RR"] == 1 / 3  # c, b, a


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        (([1, 0], [0.5, np.nan]), {}, ValueError, "NaN or infinite"),
        (([1, 0], [0.5, np.inf]), {}, ValueError, "NaN or infinite"),
        (([1, -1], [0.5, 0.2]), {}, ValueError, ">= 0"),
        (([1, 0], [0.5]), {}, ValueError, "shape"),
        (([1, 0, 1], [0.5, 0.2, 0.1], [2, 2]), {}, ValueError, "sum to 4"),
        (([1, 0, 1], [0.5, 0.2, 0.1], [3, 0]), {}, ValueError, ">= 1"),
        (([], []), {}, ValueError, "empty"),
        (([1, 0], [0.5, 0.2]), {"metrics": "P@0"}, ValueError, ">= 1"),
        (([1, 0], [0.5, 0.2]), {"metrics": "P(radius=2)"}, ValueError, "Hamming"),
        (([1, 0], [0.5, 0.2]), {"ties": "trec"}, ValueError, "doc_ids"),
        (([1, 0], [0.5, 0.2]), {"log_base": 1}, ValueError, "log_base"),
        (([1, 0], [0.5, 0.2]), {"relevance_level": 0}, ValueError, "relevance_level"),
        (([1, 0], [0.5, 0.2]), {"qid": [1, 2], "group": [1, 1]}, ValueError, "not both"),
        (([0, 0], [0.5, 0.2]), {"empty": "error"}, ValueError, "no relevant"),
        ((["a", "b"], [0.5, 0.2]), {}, TypeError, "numeric"),
    ],
)
def test_rank_errors(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        ft.rank_evaluate(*args, **kwargs)


def test_threads_bitwise_identical():
    sizes, grades, scores = _random_lists(11, n_queries=300, max_docs=50)
    one = ft.rank_evaluate(grades, scores, sizes, metrics=RANK_METRICS, n_threads=1)
    two = ft.rank_evaluate(grades, scores, sizes, metrics=RANK_METRICS, n_threads=2)
    for name in RANK_METRICS:
        assert one.per_query[name].tobytes() == two.per_query[name].tobytes()


@pytest.mark.parametrize("seed", range(5))
def test_ranx_on_tie_free_lists(seed):
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 30, 20)
    grades = rng.integers(0, 4, sizes.sum()) * (rng.random(sizes.sum()) < 0.5)
    scores = rng.permutation(sizes.sum()).astype(float)  # distinct: no ties, ranx is exact
    qrels, run, row = {}, {}, 0
    for q, size in enumerate(sizes):
        docs = [f"d{i}" for i in range(size)]
        qrels[f"q{q:03d}"] = {d: int(g) for d, g in zip(docs, grades[row:row + size]) if g > 0} or {"none": 1}
        run[f"q{q:03d}"] = {d: float(s) for d, s in zip(docs, scores[row:row + size])}
        row += size
    keep = [q for q in range(len(sizes)) if grades[np.r_[0, np.cumsum(sizes)][q]:np.cumsum(sizes)[q]].any()]
    names = {"ndcg@5": "nDCG@5", "ndcg": "nDCG", "map": "AP", "map@5": "AP@5", "mrr": "RR", "precision@5": "P@5",
             "recall@5": "R@5", "r-precision": "Rprec"}
    expected = ranx.evaluate(ranx.Qrels({f"q{q:03d}": qrels[f"q{q:03d}"] for q in keep}),
                             ranx.Run({f"q{q:03d}": run[f"q{q:03d}"] for q in keep}), list(names), return_mean=False)
    res = ft.rank_evaluate(grades, scores, sizes, metrics=list(names.values()))
    for ranx_name, name in names.items():
        np.testing.assert_allclose(res.per_query[name][keep], expected[ranx_name], rtol=1e-9, atol=1e-12,
                                   err_msg=name)


# every quantity of the finalizer, those that tell judged from unjudged rows included
FIXED_ORDER_METRICS = ["AP", "AP@3", "nDCG", "nDCG@2", "DCG@4", "P@1", "P@5", "R@3", "RR", "RR@2", "Rprec", "Bpref",
                       "Judged@3", "Judged@10", "RBP(p=0.8)", "RBP(p=0.5)@3", "RBP(p=0.7, rel=2)@4",
                       "RBPResid(p=0.8)", "RBPResid(p=0.5)@3", "IPrec@0.3", "11pt", "NumRelRet",
                       "NumNonRelJudgedRet", "Success@2", "ACG@3"]


@pytest.mark.parametrize("seed", range(40))
def test_fixed_order_walks_only_listed_rows(seed):
    # distinct scores: every tie mode is the same order, so the fixed-order finalizer (rows with a
    # grade or a judgment only) must give the one-row ties of the tie walk ("optimistic") their values
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 14, 5)
    n = int(sizes.sum())
    judged = rng.random(n) < 0.5
    grades = np.where(judged, rng.integers(0, 4, n), 0).astype(float)  # an unjudged row has no grade
    scores = rng.permutation(n).astype(float)
    unretrieved = [list(rng.integers(0, 4, rng.integers(0, 3))) for _ in sizes]  # judged, not ranked
    level = int(rng.integers(1, 3))
    kwargs = dict(metrics=FIXED_ORDER_METRICS, judged=judged, unretrieved=unretrieved, relevance_level=level,
                  empty="zero")
    for gain in ("linear", "exp2"):
        walked = ft.rank_evaluate(grades, scores, sizes, ties="optimistic", gain=gain, **kwargs)
        for ties, extra in (("stable", {}), ("trec", {"doc_ids": np.arange(n)})):
            fixed = ft.rank_evaluate(grades, scores, sizes, ties=ties, gain=gain, **extra, **kwargs)
            for name in walked.per_query:
                np.testing.assert_allclose(fixed.per_query[name], walked.per_query[name], rtol=1e-13, atol=1e-13,
                                           err_msg=f"{name} {ties} {gain}")


def _graded_list_values(grades, missing, level, gain, k):
    """nDCG@k, DCG@k, ACG@k, P@k, R@k, AP of one fixed order of ``grades`` (floats), the judged
    ``missing`` documents counting in R and in the ideal DCG; None for the values of an empty query."""
    gains = (np.exp2(grades) - 1.0) if gain == "exp2" else np.asarray(grades, dtype=float)
    ideal_gains = np.sort(np.concatenate([gains, (np.exp2(missing) - 1.0) if gain == "exp2" else missing]))[::-1]
    discount = 1.0 / np.log2(np.arange(2, len(ideal_gains) + 2))
    top = min(k, len(grades))
    dcg = float(np.sum(gains[:top] * discount[:top]))
    idcg = float(np.sum(ideal_gains[:k] * discount[: min(k, len(ideal_gains))]))
    relevant = np.asarray(grades) >= level
    n_relevant = int(relevant.sum() + (np.asarray(missing) >= level).sum())
    hits = np.cumsum(relevant)
    ap = float(np.sum(hits[relevant] / (np.flatnonzero(relevant) + 1))) / n_relevant if n_relevant else None
    return {f"nDCG@{k}": dcg / idcg if idcg > 0 else None, f"DCG@{k}": dcg, f"ACG@{k}": float(np.sum(grades[:top])) / k,
            f"P@{k}": hits[top - 1] / k, f"R@{k}": hits[top - 1] / n_relevant if n_relevant else None, "AP": ap}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fractional_grades_with_unretrieved_documents(data):
    """Non-integer grades beside judged documents missing from the ranking: every tie mode
    against the plain metric averaged over every order inside ties (the ideal DCG, R and the
    empty count take the missing documents too)."""
    n = data.draw(st.integers(1, 6))
    grade_values = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 0.25])
    grades = np.array(data.draw(st.lists(grade_values, min_size=n, max_size=n)))
    scores = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=float)
    missing = np.array(data.draw(st.lists(grade_values, max_size=3)))
    level = data.draw(st.sampled_from([0.5, 1.0, 2.0]))
    gain = data.draw(st.sampled_from(["linear", "exp2"]))
    k = data.draw(st.integers(1, 7))
    names = [f"nDCG@{k}", f"DCG@{k}", f"ACG@{k}", f"P@{k}", f"R@{k}", "AP"]
    for ties in ("average", "stable", "optimistic", "pessimistic"):
        res = ft.rank_evaluate(grades, scores, metrics=names, ties=ties, gain=gain, relevance_level=level,
                               unretrieved=[missing], empty="skip")
        if ties in ("optimistic", "pessimistic"):  # each tie by grade, higher (lower) first: one order
            sign = -1 if ties == "optimistic" else 1
            orders = [sorted(range(n), key=lambda i: (-scores[i], sign * grades[i]))]
        else:
            orders = list(tie_orders(list(scores), ties))
        values = [_graded_list_values(grades[list(order)], missing, level, gain, k) for order in orders]
        positive = bool((grades > 0).any() or (missing > 0).any())  # else empty for the graded metrics
        relevant = bool((grades >= level).any() or (missing >= level).any())  # else for the binary ones
        for name in names:
            kept = positive if name.split("@")[0] in ("nDCG", "DCG", "ACG") else relevant  # empty="skip"
            expected = math.fsum(v[name] for v in values) / len(values) if kept else math.nan
            assert res.per_query[name][0] == pytest.approx(expected, rel=1e-12, abs=1e-12, nan_ok=True), (name, ties)
        assert res.n_empty == int(not (positive and relevant)), ties


def test_fractional_grades_with_unretrieved_documents_examples():
    """The reproductions of issue 35: a fractional grade in the ranking and an integer one
    missing from it took the wrong ideal DCG."""
    res = ft.rank_evaluate([3.0, 0.5], [2.0, 1.0], metrics=["DCG@1", "nDCG", "ACG@1"], unretrieved=[np.array([0.0])])
    assert res.mean == pytest.approx({"DCG@1": 3.0, "nDCG": 1.0, "ACG@1": 3.0}) and res.n_empty == 0
    ideal = 3.0 + 1.0 / math.log2(3) + 0.5 / math.log2(4)
    dcg = 3.0 + 0.5 / math.log2(3)
    for ties in ("average", "stable", "optimistic", "pessimistic"):
        res = ft.rank_evaluate([3.0, 0.5], [2.0, 1.0], metrics=["nDCG"], unretrieved=[np.array([1.0])], ties=ties)
        assert res.mean["nDCG"] == pytest.approx(dcg / ideal, rel=1e-14)


def test_min_denominator_takes_k_as_asked():
    """ap_denominator="min" divides by min(k, R) with k as asked (Spark's meanAveragePrecisionAt,
    Kaggle's apk), also where the list is shorter than k and relevant documents are missing
    from it; the whole list divides by R, so AP is not AP@N here (docs/ties.md, section 5); under
    the other denominators it is."""
    numerator = 1 + 2 / 3  # relevant at ranks 1 and 3
    metrics = ["AP@10", "AP@2", "AP", "AP@3"]
    res = ft.rank_evaluate([1, 0, 1], [3.0, 2.0, 1.0], metrics=metrics, ap_denominator="min",
                           unretrieved=[[1, 1]])  # R = 4 > N = 3
    assert res.mean["AP@10"] == pytest.approx(numerator / 4)
    assert res.mean["AP@2"] == pytest.approx(1 / 2)
    assert res.mean["AP"] == pytest.approx(numerator / 4)
    assert res.mean["AP@3"] == pytest.approx(numerator / 3)  # AP@N: min(N, R) = N
    for denominator, want in (("total", numerator / 4), ("retrieved", numerator / 2)):
        res = ft.rank_evaluate([1, 0, 1], [3.0, 2.0, 1.0], metrics=metrics, ap_denominator=denominator,
                               unretrieved=[[1, 1]])
        assert res.mean["AP"] == res.mean["AP@3"] == pytest.approx(want), denominator


def test_trec_ties_refuse_a_repeated_document():
    """ties="trec" orders equal scores by document id: a document listed twice in one query is
    refused, as trec_eval and fasttie.trec.evaluate refuse it, naming the id, query and rows."""
    with pytest.raises(ValueError, match=r"doc_ids repeats 'c' within query 1 \(rows 2 and 3\)"):
        ft.rank_evaluate([1, 0, 1, 0], [1, 1, 2, 3], [2, 2], ties="trec", doc_ids=["a", "b", "c", "c"])
    with pytest.raises(ValueError, match=r"doc_ids repeats 7 within query 'y' \(rows 1 and 3\)"):
        ft.rank_evaluate([1, 0, 1, 0], [1, 1, 2, 3], qid=["x", "y", "x", "y"], ties="trec", doc_ids=[5, 7, 7, 7])
    # the same id in two queries is fine
    res = ft.rank_evaluate([1, 0, 1, 0], [1, 1, 2, 3], [2, 2], ties="trec", doc_ids=["a", "b", "a", "b"])
    assert res.per_query["RR"].tolist() == [0.5, 0.5]  # equal scores: the greater id first


def test_huge_finite_scores_are_not_an_overflow():
    """Finite scores whose sum overflows are fine (the finiteness check sums them first: no
    RuntimeWarning, an error under the suite's -W error); NaN and infinity are still refused."""
    assert ft.rank_evaluate([1, 0], [1e308, 1e308], metrics=["RR"]).mean == {"RR": 0.75}
    assert ft.lambdarank([1, 0], [1e308, 1e308])[0].shape == (2,)
    with pytest.raises(ValueError, match="y_pred has a NaN or infinite score at row 1"):
        ft.rank_evaluate([1, 0], [1e308, np.inf])
    with pytest.raises(ValueError, match=r"y_true must be finite and >= 0; row 0 is -1.0"):
        ft.rank_evaluate([-1, 1e308], [1.0, 2.0])
