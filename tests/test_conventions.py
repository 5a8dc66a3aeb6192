"""``convention=``: one word for the options that give a library's value (issue 39, item 3).

Each preset is compared with the library it names, on the library's own call, over seeded random
cases (tests skip where the library is not installed):

* LightGBM and XGBoost: their ranking eval metrics (ndcg@k, map@k) on fixed scores: LightGBM
  trains one round whose objective returns zero gradients (the tree adds 0 to ``init_score``),
  XGBoost trains zero rounds (the prediction is ``base_margin``). Both order ties stably: tied
  integer scores.
* scikit-learn: ``ndcg_score`` and ``dcg_score`` (tie-averaged) with ties; ``average_precision_score`` on tie-free
  scores only (it ranks tied scores as one threshold).
* torchmetrics: the functional retrieval metrics, nDCG with ties (tie-averaged), the others on
  tie-free scores (``torch.topk`` decides their tie order); AP, P, R and RR also on scores of both
  signs (torchmetrics zeroes the target of an item scored <= 0 there, and so does the preset).
* ranx on tie-free runs; trec_eval (through pytrec_eval) and ir_measures with ties, in trec_eval's
  order (``doc_ids``).
* pytorch-metric-learning: ``AccuracyCalculator.get_accuracy`` with a k-NN of our own on
  continuous (tie-free) embeddings.
* sentence-transformers, DeepHash and HashNet need a model or are not packages: numpy
  re-implementations of their code are the oracles (sources cited at each), with ties where the
  oracle's order is reproducible (``argsort(kind="stable")`` against ``ties="stable"``).
"""

import importlib.util
import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest

import fasttie as ft
from fasttie.conventions import CONVENTIONS, convention_options
from helpers import ExactKnn

N_CASES = 20


def _lists(seed, tied, max_size=12, n_queries=(3, 16)):
    """Random ranked lists: group sizes, grades 0..3 (some queries without a relevant one) and
    scores, integers 1..5 (ties) or a random permutation (tie-free), all > 0."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, rng.integers(*n_queries))
    n = int(sizes.sum())
    grades = rng.integers(0, 4, n) * (rng.random(n) < rng.uniform(0.2, 0.7))
    scores = rng.integers(1, 6, n).astype(np.float64) if tied else rng.permutation(n) + 1.0
    return sizes, grades, scores


def _split(values, sizes):
    return np.split(np.asarray(values), np.cumsum(sizes)[:-1])


# --- the keyword ------------------------------------------------------------------------------------


def test_unknown_or_misplaced_conventions_are_errors_that_say_what_to_do():
    with pytest.raises(ValueError, match="did you mean 'lightgbm'.*known: trec_eval"):
        ft.rank_evaluate([1, 0], [0.5, 0.1], metrics="AP", convention="LightGMB")
    with pytest.raises(ValueError, match="known:") as error:
        ft.rank_evaluate([1, 0], [0.5, 0.1], metrics="AP", convention="nothing")
    assert "did you mean" not in str(error.value)
    with pytest.raises(TypeError, match="convention"):
        ft.rank_evaluate([1, 0], [0.5, 0.1], metrics="AP", convention=3)
    with pytest.raises(ValueError, match="fasttie.rank_evaluate"):  # a learning-to-rank library at the Hamming door
        ft.evaluate([[1, 1]], [[1, -1]], [0], [0], convention="lightgbm")
    with pytest.raises(ValueError, match="fasttie.evaluate"):  # a hashing protocol at the ranked-list door
        ft.rank_evaluate([1, 0], [0.5, 0.1], metrics="AP", convention="hashnet")
    # an error about an option the preset set says so
    with pytest.raises(ValueError, match="convention='trec_eval' sets ties='trec': .*doc_ids"):
        ft.rank_evaluate([1, 0], [0.5, 0.1], metrics="AP", convention="trec_eval")
    with pytest.raises(ValueError, match="^ties='trec' orders equal scores by document id"):
        ft.rank_evaluate([1, 0], [0.5, 0.1], metrics="AP", convention="sklearn", ties="trec")


def test_signatures_show_convention_and_keep_their_defaults():
    for door, defaults in ((ft.rank_evaluate, {"ties": "average", "gain": "linear", "ap_denominator": "total"}),
                           (ft.evaluate, {"ties": "average", "gain": "exp2", "ap_denominator": "retrieved"})):
        parameters = inspect.signature(door).parameters
        assert parameters["convention"].default is None
        assert parameters["convention"].kind is inspect.Parameter.KEYWORD_ONLY
        assert {name: parameters[name].default for name in defaults} == defaults
        assert "convention : str, optional" in door.__doc__


@pytest.mark.parametrize("convention", [c for c in CONVENTIONS if CONVENTIONS[c].lists is not None])
def test_a_preset_is_its_options_and_an_explicit_keyword_wins(convention):
    sizes, grades, scores = _lists(7, tied=True)
    doc_ids = np.arange(len(grades))
    metrics = ["AP@3", "nDCG@5", "P@3", "RR"]
    options = convention_options(convention, "lists")
    preset = ft.rank_evaluate(grades, scores, sizes, metrics=metrics, convention=convention, doc_ids=doc_ids)
    spelt = ft.rank_evaluate(grades, scores, sizes, metrics=metrics, doc_ids=doc_ids, **options)
    np.testing.assert_equal(preset.per_query, spelt.per_query)
    for name, other in (("ties", "optimistic"), ("empty", "error" if options["empty"] != "error" else "zero"),
                        ("gain", "exp2" if options["gain"] == "linear" else "linear")):
        call = dict(metrics=metrics, doc_ids=doc_ids)
        if name == "empty":  # this case has queries without relevant documents: the explicit policy raises
            with pytest.raises(ValueError, match="empty"):
                ft.rank_evaluate(grades, scores, sizes, convention=convention, empty=other, **call)
            continue
        overridden = ft.rank_evaluate(grades, scores, sizes, convention=convention, **{name: other}, **call)
        wanted = ft.rank_evaluate(grades, scores, sizes, **{**options, name: other}, **call)
        np.testing.assert_equal(overridden.per_query, wanted.per_query)
        assert any(not np.array_equal(overridden.per_query[m], preset.per_query[m]) for m in metrics), name


# --- LightGBM and XGBoost ---------------------------------------------------------------------------


def _lightgbm_metrics(lgb, sizes, grades, scores, ks):
    """LightGBM's own ndcg@k and map@k of fixed scores: one round of zero gradients keeps the
    prediction at init_score, and the validation metrics are evaluated on it."""
    features = np.random.default_rng(0).random((len(grades), 2))
    data = lgb.Dataset(features, grades, group=sizes, init_score=scores, free_raw_data=False)
    record = {}
    lgb.train({"objective": lambda preds, _: (np.zeros(len(preds)), np.ones(len(preds))),
               "metric": ["ndcg", "map"], "eval_at": list(ks), "verbose": -1, "min_data_in_leaf": 1},
              data, num_boost_round=1, valid_sets=[data], valid_names=["v"],
              callbacks=[lgb.record_evaluation(record)])
    return {name: values[0] for name, values in record["v"].items()}


def test_lightgbm_ndcg_and_map_at_k():
    lgb = pytest.importorskip("lightgbm")
    ks = (1, 3, 5, 20)
    for seed in range(N_CASES):
        sizes, grades, scores = _lists(seed, tied=True)
        theirs = _lightgbm_metrics(lgb, sizes, grades, scores, ks)
        ours = ft.rank_evaluate(grades, scores, sizes, metrics=[f"nDCG@{k}" for k in ks] + [f"AP@{k}" for k in ks],
                                convention="lightgbm").mean
        for k in ks:
            assert ours[f"nDCG@{k}"] == pytest.approx(theirs[f"ndcg@{k}"], abs=1e-12), (seed, k)
            assert ours[f"AP@{k}"] == pytest.approx(theirs[f"map@{k}"], abs=1e-12), (seed, k)
    # the trap: fasttie's defaults are not LightGBM's
    default = ft.rank_evaluate(grades, scores, sizes, metrics=["nDCG@5"]).mean["nDCG@5"]
    assert default != pytest.approx(theirs["ndcg@5"], abs=1e-6)


def _xgboost_metric(xgb, sizes, grades, scores, metric):
    """XGBoost's own eval metric of fixed scores: zero rounds, the prediction is base_margin."""
    data = xgb.DMatrix(np.random.default_rng(0).random((len(grades), 2)), label=grades, base_margin=scores)
    data.set_group(sizes)
    booster = xgb.train({"objective": "rank:ndcg", "eval_metric": metric}, data, num_boost_round=0)
    return float(booster.eval(data).rsplit(":", 1)[1])


def test_xgboost_ndcg_and_map_at_k():
    xgb = pytest.importorskip("xgboost")
    for seed in range(N_CASES):
        sizes, grades, scores = _lists(seed, tied=True)
        for k in (1, 3, 5, 20):
            ours = ft.rank_evaluate(grades, scores, sizes, metrics=[f"nDCG@{k}", f"AP@{k}"], convention="xgboost").mean
            # XGBoost prints its metrics with %g-like precision
            assert ours[f"nDCG@{k}"] == pytest.approx(_xgboost_metric(xgb, sizes, grades, scores, f"ndcg@{k}"),
                                                      abs=1e-6), (seed, k)
            # map takes binary labels only: relevant is grade >= 1, the preset's relevance level
            assert ours[f"AP@{k}"] == pytest.approx(
                _xgboost_metric(xgb, sizes, (grades > 0).astype(float), scores, f"map@{k}"), abs=1e-6), (seed, k)
        minus = ft.rank_evaluate(grades, scores, sizes, metrics=["nDCG@5"], convention="xgboost", empty="zero")
        assert minus.mean["nDCG@5"] == pytest.approx(_xgboost_metric(xgb, sizes, grades, scores, "ndcg@5-"), abs=1e-6)


# --- scikit-learn -----------------------------------------------------------------------------------


def test_sklearn_ndcg_and_dcg_score_with_ties_and_average_precision_tie_free():
    metrics = pytest.importorskip("sklearn.metrics")
    for seed in range(N_CASES):
        rng = np.random.default_rng(seed)
        n_queries, n_docs = rng.integers(2, 10), rng.integers(2, 12)
        grades = rng.integers(0, 4, (n_queries, n_docs)) * (rng.random((n_queries, n_docs)) < 0.5)
        tied = rng.integers(0, 4, (n_queries, n_docs)).astype(float)
        for k in (1, 3, None):
            name = "nDCG" if k is None else f"nDCG@{k}"
            ours = ft.rank_evaluate(grades, tied, metrics=[name], convention="sklearn")
            theirs = [metrics.ndcg_score(grades[i:i + 1], tied[i:i + 1], k=k) for i in range(n_queries)]
            np.testing.assert_allclose(ours.per_query[name], theirs, rtol=0, atol=1e-12)
            assert ours.mean[name] == pytest.approx(metrics.ndcg_score(grades, tied, k=k), abs=1e-12)
            dcg = "DCG" if k is None else f"DCG@{k}"
            ours = ft.rank_evaluate(grades, tied, metrics=[dcg], convention="sklearn").mean[dcg]
            assert ours == pytest.approx(metrics.dcg_score(grades, tied, k=k), abs=1e-12)
        tie_free = rng.random((n_queries, n_docs))
        ours = ft.rank_evaluate(grades, tie_free, metrics=["AP"], convention="sklearn").per_query["AP"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a row without positives: "No positive class found in y_true"
            theirs = [metrics.average_precision_score(grades[i] >= 1, tie_free[i]) for i in range(n_queries)]
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


# --- torchmetrics -----------------------------------------------------------------------------------


def test_torchmetrics_functional_retrieval_metrics():
    torch = pytest.importorskip("torch")
    retrieval = pytest.importorskip("torchmetrics.functional.retrieval")
    k = 4
    for seed in range(N_CASES):
        for tied in (True, False):
            sizes, grades, scores = _lists(seed, tied=tied)
            names = ["nDCG@4", "nDCG"] + ([] if tied else ["AP@4", "AP", "P@4", "P@15", "R@4", "RR@4", "Rprec",
                                                             "Success@4"])
            ours = ft.rank_evaluate(grades, scores, sizes, metrics=names, convention="torchmetrics").per_query
            for i, (g, s) in enumerate(zip(_split(grades, sizes), _split(scores, sizes))):
                preds, target = torch.tensor(s), torch.tensor(g)
                binary = target >= 1
                theirs = {"nDCG@4": retrieval.retrieval_normalized_dcg(preds, target, top_k=k),
                          "nDCG": retrieval.retrieval_normalized_dcg(preds, target)}
                if not tied:
                    theirs.update({
                        "AP@4": retrieval.retrieval_average_precision(preds, binary, top_k=k),
                        "AP": retrieval.retrieval_average_precision(preds, binary),
                        "P@4": retrieval.retrieval_precision(preds, binary, top_k=k),
                        "P@15": retrieval.retrieval_precision(preds, binary, top_k=15),
                        "R@4": retrieval.retrieval_recall(preds, binary, top_k=k),
                        "RR@4": retrieval.retrieval_reciprocal_rank(preds, binary, top_k=k),
                        "Rprec": retrieval.retrieval_r_precision(preds, binary),
                        "Success@4": retrieval.retrieval_hit_rate(preds, binary, top_k=k)})
                for name, value in theirs.items():  # torchmetrics computes nDCG and AP in float32
                    assert ours[name][i] == pytest.approx(float(value), abs=1e-6), (seed, tied, name, i)


_FLOORED_CUTOFFS = (1, 3, 5, 15, None)  # None: torchmetrics' top_k=None, the whole list (fasttie's bare name)


def _signed_lists(seed):
    """Tie-free scores of both signs per query (a permutation shifted down, an exact 0 in most
    queries), grades 0..3; query 0 has relevant rows all scored <= 0, query 1 none relevant."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 13, rng.integers(3, 16))
    sizes[:2] = np.maximum(sizes[:2], 2)
    scores = np.concatenate([rng.permutation(size) - rng.integers(0, size + 1) for size in sizes]).astype(np.float64)
    grades = rng.integers(0, 4, len(scores)) * (rng.random(len(scores)) < rng.uniform(0.3, 0.7))
    first, second = _split(np.arange(len(scores)), sizes)[:2]
    scores[first] -= scores[first].max()  # all <= 0, the top one exactly 0
    grades[first[0]] = 2
    grades[second] = 0
    return sizes, grades, scores


def _torchmetrics_floored(retrieval, preds, binary, k):
    """torchmetrics' AP, P, R, RR at top_k=k of one query, named as fasttie names them."""
    at = "" if k is None else f"@{k}"
    return {f"AP{at}": retrieval.retrieval_average_precision(preds, binary, top_k=k),
            f"P{at}": retrieval.retrieval_precision(preds, binary, top_k=k),
            f"R{at}": retrieval.retrieval_recall(preds, binary, top_k=k),
            f"RR{at}": retrieval.retrieval_reciprocal_rank(preds, binary, top_k=k)}


def test_torchmetrics_zeroes_ap_p_r_rr_at_items_scored_at_most_zero():
    # torchmetrics >= 1.7.4: AP, P, R and RR zero the target of items scored <= 0 (R over the
    # full R; 0 for a query whose relevant items all score <= 0); nDCG, Rprec, hit rate rank
    # every row. The preset's score floor applies the rule in one call with the other metrics.
    torch = pytest.importorskip("torch")
    retrieval = pytest.importorskip("torchmetrics.functional.retrieval")
    floored = [f"{base}{'' if k is None else f'@{k}'}" for k in _FLOORED_CUTOFFS for base in ("AP", "P", "R", "RR")]
    names = ["nDCG@4", "Rprec", "Success@4", *floored]
    differs = 0  # values that the rule changes: the cases exercise it
    for seed in range(N_CASES):
        sizes, grades, scores = _signed_lists(seed)
        ours = ft.rank_evaluate(grades, scores, sizes, metrics=names, convention="torchmetrics")
        unfloored = ft.rank_evaluate(grades, scores, sizes, metrics=names, **{
            **convention_options("torchmetrics", "lists"), "score_floor": None}).per_query
        no_relevant = np.array([not (g >= 1).any() for g in _split(grades, sizes)])
        assert ours.n_empty == no_relevant.sum() and no_relevant[1] and not no_relevant[0]
        for i, (g, s) in enumerate(zip(_split(grades, sizes), _split(scores, sizes))):
            preds, target = torch.tensor(s), torch.tensor(g)
            binary = target >= 1
            theirs = {"nDCG@4": retrieval.retrieval_normalized_dcg(preds, target, top_k=4),
                      "Rprec": retrieval.retrieval_r_precision(preds, binary),
                      "Success@4": retrieval.retrieval_hit_rate(preds, binary, top_k=4)}
            for k in _FLOORED_CUTOFFS:
                theirs.update(_torchmetrics_floored(retrieval, preds, binary, k))
            for name, value in theirs.items():  # torchmetrics computes in float32
                assert ours.per_query[name][i] == pytest.approx(float(value), abs=1e-6), (seed, name, i)
                differs += abs(unfloored[name][i] - float(value)) > 1e-6
        # rows in any order under qid, and empty="skip": the same values, NaN only without a relevant row
        shuffle = np.random.default_rng(seed).permutation(len(grades))
        qid = np.repeat(np.arange(len(sizes)), sizes)[shuffle]
        skipped = ft.rank_evaluate(grades[shuffle], scores[shuffle], qid=qid, metrics=names, convention="torchmetrics",
                                   empty="skip")
        for name in names:
            np.testing.assert_array_equal(np.isnan(skipped.per_query[name]), no_relevant, err_msg=name)
            np.testing.assert_array_equal(skipped.per_query[name][~no_relevant], ours.per_query[name][~no_relevant])
        assert ours.settings["score_floor"] == {"at_most": 0.0, "metrics": floored}
    assert differs > N_CASES


def test_torchmetrics_score_floor_with_the_callers_unretrieved():
    # judged documents missing from the ranking are, for torchmetrics, items below every score:
    # appended with score -1000 (zeroed for AP, P, R, RR; in recall's denominator). P over the
    # whole list divides by the list's length, which the appended items change: left out.
    torch = pytest.importorskip("torch")
    retrieval = pytest.importorskip("torchmetrics.functional.retrieval")
    floored = [name for name in (f"{base}{'' if k is None else f'@{k}'}" for k in _FLOORED_CUTOFFS
                                 for base in ("AP", "P", "R", "RR")) if name != "P"]
    others = ["nDCG@4", "Rprec", "Success@4"]
    for seed in range(N_CASES):
        sizes, grades, scores = _signed_lists(seed)
        rng = np.random.default_rng(seed + 1000)
        unretrieved = [rng.integers(0, 3, rng.integers(0, 4)) for _ in sizes]
        ours = ft.rank_evaluate(grades, scores, sizes, metrics=floored + others, convention="torchmetrics",
                                unretrieved=unretrieved)
        options = {**convention_options("torchmetrics", "lists"), "score_floor": None}
        untouched = ft.rank_evaluate(grades, scores, sizes, metrics=others, unretrieved=unretrieved, **options)
        for name in others:
            np.testing.assert_array_equal(ours.per_query[name], untouched.per_query[name])
        for i, (g, s) in enumerate(zip(_split(grades, sizes), _split(scores, sizes))):
            preds = torch.tensor(np.concatenate([s, np.full(len(unretrieved[i]), -1000.0)]))
            binary = torch.tensor(np.concatenate([g, unretrieved[i]]) >= 1)
            for k in _FLOORED_CUTOFFS:
                for name, value in _torchmetrics_floored(retrieval, preds, binary, k).items():
                    if name in floored:
                        assert ours.per_query[name][i] == pytest.approx(float(value), abs=1e-6), (seed, name, i)
    # 2-D input: every row a query
    grades, scores = np.array([[1, 0, 2, 0], [0, 1, 0, 0]]), np.array([[0.5, -1.0, 0.0, 2.0], [3.0, -2.0, 1.0, 0.0]])
    two_d = ft.rank_evaluate(grades, scores, metrics=["R@2", "AP", "Rprec"], convention="torchmetrics",
                             unretrieved=[[1], []])
    np.testing.assert_array_equal(two_d.per_query["R@2"], [1 / 3, 0.0])  # 1 of 3 relevant; the only one at -2
    np.testing.assert_array_equal(two_d.per_query["AP"], [0.5, 0.0])  # the one hit retrieved, at rank 2
    np.testing.assert_array_equal(two_d.per_query["Rprec"], [2 / 3, 0.0])  # top 3: 2.0, 0.5, 0.0 (grades 0, 1, 2)


# --- ranx, trec_eval, ir_measures -------------------------------------------------------------------


def _qrels_run(sizes, grades, scores):
    """The lists as qrels and run dicts (every ranked document judged), and zero-padded doc ids
    (so that trec_eval's string order and fasttie's agree)."""
    doc_ids = np.array([f"d{i:04d}" for i in range(len(grades))])
    qrels, run = {}, {}
    for q, (ids, g, s) in enumerate(zip(_split(doc_ids, sizes), _split(grades, sizes), _split(scores, sizes))):
        qrels[f"q{q:03d}"] = {d: int(x) for d, x in zip(ids, g)}
        run[f"q{q:03d}"] = {d: float(x) for d, x in zip(ids, s)}
    return qrels, run, doc_ids


def test_ranx_tie_free():
    ranx = pytest.importorskip("ranx")
    names = {"map@5": "AP@5", "map": "AP", "ndcg@5": "nDCG@5", "precision@5": "P@5", "recall@5": "R@5",
             "mrr@5": "RR@5", "r-precision": "Rprec"}
    for seed in range(N_CASES):
        sizes, grades, scores = _lists(seed, tied=False)
        qrels, run, _ = _qrels_run(sizes, grades, scores)
        ranx_run = ranx.Run(run)
        ranx.evaluate(ranx.Qrels(qrels), ranx_run, list(names), return_mean=False, make_comparable=True)
        ours = ft.rank_evaluate(grades, scores, sizes, metrics=list(names.values()), convention="ranx").per_query
        for theirs_name, name in names.items():
            theirs = [float(ranx_run.scores[theirs_name][q]) for q in sorted(run)]
            np.testing.assert_allclose(ours[name], theirs, rtol=0, atol=1e-12, err_msg=f"{seed} {name}")


def test_trec_eval_through_pytrec_eval_and_ir_measures_with_ties():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ir_measures = pytest.importorskip("ir_measures")
    trec_names = {"map": "AP", "map_cut_5": "AP@5", "ndcg_cut_5": "nDCG@5", "P_5": "P@5", "recip_rank": "RR",
                  "Rprec": "Rprec"}
    measures = {ir_measures.AP: "AP", ir_measures.AP @ 5: "AP@5", ir_measures.nDCG @ 5: "nDCG@5",
                ir_measures.P @ 5: "P@5", ir_measures.RR: "RR", ir_measures.Rprec: "Rprec"}
    for seed in range(N_CASES):
        sizes, grades, scores = _lists(seed, tied=True)
        qrels, run, doc_ids = _qrels_run(sizes, grades, scores)
        queries = sorted(run)
        trec = pytrec_eval.RelevanceEvaluator(qrels, set(trec_names)).evaluate(run)
        ours = ft.rank_evaluate(grades, scores, sizes, metrics=list(trec_names.values()), convention="trec_eval",
                                doc_ids=doc_ids).per_query
        for theirs_name, name in trec_names.items():
            np.testing.assert_allclose(ours[name], [trec[q][theirs_name] for q in queries], rtol=0, atol=1e-12,
                                       err_msg=f"trec_eval {seed} {name}")
        values = {(m.query_id, measures[m.measure]): m.value
                  for m in ir_measures.iter_calc(list(measures), qrels, run)}
        ours = ft.rank_evaluate(grades, scores, sizes, metrics=list(measures.values()), convention="ir_measures",
                                doc_ids=doc_ids).per_query
        for name in measures.values():
            np.testing.assert_allclose(ours[name], [values[q, name] for q in queries], rtol=0, atol=1e-12,
                                       err_msg=f"ir_measures {seed} {name}")


# --- pytorch-metric-learning ------------------------------------------------------------------------


def test_pytorch_metric_learning_accuracy_calculator():
    torch = pytest.importorskip("torch")
    calculator = pytest.importorskip("pytorch_metric_learning.utils.accuracy_calculator")
    knn = ExactKnn(torch)

    include = ("mean_average_precision", "r_precision", "precision_at_1", "mean_reciprocal_rank")
    for seed in range(N_CASES):
        rng = np.random.default_rng(seed)
        n_query, n_ref = rng.integers(2, 12), rng.integers(5, 30)
        query, reference = rng.normal(size=(n_query, 3)), rng.normal(size=(n_ref, 3))  # tie-free distances
        query_labels, reference_labels = rng.integers(0, 6, n_query), rng.integers(0, 4, n_ref)  # 4, 5: lone
        for k, names in ((None, ["AP", "Rprec", "P@1", "RR"]), (3, ["AP@3"])):
            accuracy = calculator.AccuracyCalculator(
                include=include if k is None else ("mean_average_precision",), k=k, knn_func=knn,
                device=torch.device("cpu")).get_accuracy(query, query_labels, reference, reference_labels)
            relevant = (query_labels[:, None] == reference_labels[None, :]).astype(float)
            scores = -knn.distances.numpy()
            ours = ft.rank_evaluate(relevant, scores, metrics=names, convention="pytorch_metric_learning").mean
            if not (relevant.sum(axis=1) > 0).any():
                assert all(np.isnan(ours[name]) for name in names)
                continue
            pairs = [("AP@3", "mean_average_precision")] if k else [
                ("AP", "mean_average_precision"), ("Rprec", "r_precision"), ("P@1", "precision_at_1"),
                ("RR", "mean_reciprocal_rank")]
            for name, theirs in pairs:  # its MRR is float32 (a float index), the rest float64
                assert ours[name] == pytest.approx(accuracy[theirs], abs=1e-7 if name == "RR" else 1e-12), (seed, name)


# --- sentence-transformers (formula oracle) ---------------------------------------------------------


def _sentence_transformers_metrics(relevant, scores, k):
    """InformationRetrievalEvaluator.compute_metrics re-done in numpy (UKPLab/sentence-transformers,
    sentence_transformers/evaluation/InformationRetrievalEvaluator.py, compute_metrics; read at commit
    07e52166af57bfabe6db72d5ece925681c9c3ea4): queries without relevant documents are dropped in
    __init__; hits sorted by score descending; accuracy@k is a hit in the top k, precision@k
    divides by k, recall@k by |relevant|, MRR@k is 1/rank of the first hit in the top k, nDCG@k is
    binary DCG over the ideal [1] * |relevant| cut at k (1/log2(rank + 1)), map@k sums the
    precision at each hit in the top k over min(k, |relevant|)."""
    out = {name: [] for name in ("accuracy", "precision", "recall", "mrr", "ndcg", "map")}
    for rel, score in zip(relevant, scores):
        n_rel = int(rel.sum())
        if n_rel == 0:
            continue
        top = rel[np.argsort(-score, kind="stable")][:k]
        hit_ranks = np.flatnonzero(top) + 1
        out["accuracy"].append(float(len(hit_ranks) > 0))
        out["precision"].append(len(hit_ranks) / k)
        out["recall"].append(len(hit_ranks) / n_rel)
        out["mrr"].append(1 / hit_ranks[0] if len(hit_ranks) else 0.0)
        dcg = np.sum(1 / np.log2(hit_ranks + 1))
        out["ndcg"].append(dcg / np.sum(1 / np.log2(np.arange(1, min(n_rel, k) + 1) + 1)))
        out["map"].append(np.sum(np.arange(1, len(hit_ranks) + 1) / hit_ranks) / min(k, n_rel))
    return {name: np.mean(values) for name, values in out.items()}


def test_sentence_transformers_information_retrieval_evaluator_formulas():
    names = {"accuracy": "Success@{k}", "precision": "P@{k}", "recall": "R@{k}", "mrr": "RR@{k}",
             "ndcg": "nDCG@{k}", "map": "AP@{k}"}
    for seed in range(N_CASES):
        rng = np.random.default_rng(seed)
        n_queries, n_docs = rng.integers(2, 10), rng.integers(3, 25)
        relevant = (rng.random((n_queries, n_docs)) < 0.2).astype(float)
        relevant[0, :] = 0  # a query without relevant documents: dropped by the evaluator
        relevant[1, 0] = 1
        scores = rng.random((n_queries, n_docs))  # tie-free (ties: the test below)
        for k in (1, 3, 10):
            theirs = _sentence_transformers_metrics(relevant, scores, k)
            ours = ft.rank_evaluate(relevant, scores, metrics=[name.format(k=k) for name in names.values()],
                                    convention="sentence_transformers",
                                    doc_ids=np.tile(np.arange(n_docs), n_queries)).mean
            for theirs_name, name in names.items():
                assert ours[name.format(k=k)] == pytest.approx(theirs[theirs_name], abs=1e-12), (seed, k, name)


def _sentence_transformers_ranked(queries, k_values):
    """sentence-transformers 6.2.0's InformationRetrievalEvaluator in plain Python
    (sentence_transformers/sentence_transformer/evaluation/information_retrieval.py, read in the
    6.2.0 wheel): each query's hits are (score, corpus_id) pairs sorted by the key
    (-score, corpus_id), so equal scores go by corpus id ascending in Python's order (strings by
    code point: "d10" before "d7"); compute_all_metrics keeps the first max_k under that same
    order (its topk reselects the ties at the cut by it), which compute_metrics sorts again and
    cuts at each k <= max_k: the full sort cut at k is the same list. Queries without relevant
    documents are dropped at construction. ``queries``: per query (scores, corpus_ids, relevant set)."""
    out = {(name, k): [] for name in ("accuracy", "precision", "recall", "mrr", "ndcg", "map") for k in k_values}
    for scores, corpus_ids, relevant in queries:
        if not relevant:
            continue
        top_hits = sorted(zip(scores, corpus_ids), key=lambda hit: (-hit[0], hit[1]))
        for k in k_values:
            hits = [corpus_id in relevant for _, corpus_id in top_hits[:k]]
            out["accuracy", k].append(float(any(hits)))
            out["precision", k].append(sum(hits) / k)
            out["recall", k].append(sum(hits) / len(relevant))
            out["mrr", k].append(next((1 / (rank + 1) for rank, hit in enumerate(hits) if hit), 0.0))
            dcg = sum(1 / np.log2(rank + 2) for rank, hit in enumerate(hits) if hit)
            out["ndcg", k].append(dcg / sum(1 / np.log2(rank + 2) for rank in range(min(len(relevant), k))))
            found = [n / (rank + 1) for n, rank in enumerate((r for r, hit in enumerate(hits) if hit), 1)]
            out["map", k].append(sum(found) / min(k, len(relevant)))
    return {key: float(np.mean(values)) for key, values in out.items()}


def test_sentence_transformers_tie_order_by_corpus_id():
    """The preset reproduces sentence-transformers 6.2's order inside ties (corpus id ascending,
    given as doc_ids) exactly, on tied scores and rows in any order; the input order does not."""
    names = {"accuracy": "Success@{k}", "precision": "P@{k}", "recall": "R@{k}", "mrr": "RR@{k}",
             "ndcg": "nDCG@{k}", "map": "AP@{k}"}
    k_values = (1, 2, 3, 5, 10)
    metrics = [name.format(k=k) for k in k_values for name in names.values()]
    differs = 0
    for seed in range(N_CASES):
        rng = np.random.default_rng(seed)
        queries, y_true, y_pred, qid, doc_ids = [], [], [], [], []
        for q in range(int(rng.integers(2, 8))):
            n_docs = int(rng.integers(1, 16))
            corpus_ids = [f"d{i}" for i in rng.permutation(40)[:n_docs]] if seed % 2 else \
                [int(i) for i in rng.permutation(40)[:n_docs]]  # string ids (by code point) or ints
            scores = rng.choice([0.25, 0.5, 0.75], n_docs).tolist()  # many ties
            relevant = {c for c in corpus_ids if rng.random() < 0.3}
            queries.append((scores, corpus_ids, relevant))
            y_true += [float(c in relevant) for c in corpus_ids]
            y_pred += scores
            qid += [q] * n_docs
            doc_ids += corpus_ids
        if all(not relevant for _, _, relevant in queries):
            continue
        theirs = _sentence_transformers_ranked(queries, k_values)
        ours = ft.rank_evaluate(y_true, y_pred, qid=qid, doc_ids=doc_ids, metrics=metrics,
                                convention="sentence_transformers").mean
        for (name, k), value in theirs.items():
            assert ours[names[name].format(k=k)] == pytest.approx(value, abs=1e-12), (seed, name, k)
        stable = ft.rank_evaluate(y_true, y_pred, qid=qid, metrics=metrics, convention="sentence_transformers",
                                  ties="stable").mean
        differs += stable != ours
    assert differs > N_CASES // 2  # the row order (here random) is not the library's
    with pytest.raises(ValueError, match="convention='sentence_transformers' sets ties='pyndeval': .*doc_ids"):
        ft.rank_evaluate([1, 0], [0.5, 0.5], metrics="AP", convention="sentence_transformers")
    # doc ids ascending inside a tie: "b" before "c" (trec_eval's order is the reverse)
    assert ft.rank_evaluate([0, 1], [0.5, 0.5], metrics="RR", ties="pyndeval", doc_ids=["c", "b"]).mean["RR"] == 1.0
    assert ft.rank_evaluate([0, 1], [0.5, 0.5], metrics="RR", ties="trec", doc_ids=["c", "b"]).mean["RR"] == 0.5


# --- DeepHash and HashNet (numpy oracles of their code) ---------------------------------------------


def _codes(seed):
    rng = np.random.default_rng(seed)
    n_query, n_db, n_bits, n_classes = rng.integers(2, 10), rng.integers(10, 60), rng.integers(4, 17), 4
    query_codes = rng.choice([-1.0, 1.0], (n_query, n_bits))
    db_codes = rng.choice([-1.0, 1.0], (n_db, n_bits))
    query_labels = (rng.random((n_query, n_classes)) < 0.3).astype(float)  # multi-hot; some rows empty
    db_labels = (rng.random((n_db, n_classes)) < 0.3).astype(float)
    return query_codes, db_codes, query_labels, db_labels


def _calc_top_map(rB, qB, retrievalL, queryL, topk):
    """DeepHash-pytorch's CalcTopMap (swuxyj/DeepHash-pytorch, utils/tools.py) with np.argsort's
    stable kind in place of its default (numpy's default sort orders ties by no rule it states: on
    numpy 2.4 with 15 to 5000 items it differed from the stable order on every one of 150 random
    queries measured): relevant = a shared label; per query the mean over the hits in the top k of
    hits-so-far / rank; a query without a hit adds 0; divided by the number of queries."""
    total = 0.0
    for i in range(len(queryL)):
        relevant = (queryL[i] @ retrievalL.T > 0).astype(np.float64)
        hamming = 0.5 * (rB.shape[1] - rB @ qB[i])
        top = relevant[np.argsort(hamming, kind="stable")][:topk]
        ranks = np.flatnonzero(top == 1) + 1.0
        if len(ranks):
            total += np.mean(np.arange(1, len(ranks) + 1) / ranks)
    return total / len(queryL)


def _hashnet_map(database_code, validation_code, database_labels, validation_labels, R):
    """HashNet's mean_average_precision (thuml/HashNet, pytorch/src/test.py) with a stable argsort:
    ranks by inner product descending; relevant = a shared label; AP over the hits in the top R;
    queries without a hit there are left out of the mean."""
    ids = np.argsort(-(database_code @ validation_code.T), axis=0, kind="stable")
    aps = []
    for i in range(len(validation_code)):
        label = validation_labels[i].copy()
        label[label == 0] = -1
        match = np.sum(database_labels[ids[:R, i]] == label, axis=1) > 0
        if match.sum():
            aps.append(np.sum(np.cumsum(match) / np.arange(1, R + 1) * match) / match.sum())
    return np.mean(aps) if aps else float("nan")


@pytest.mark.parametrize("convention", ["deephash", "hashnet"])
def test_hashing_protocols_against_their_code(convention):
    for seed in range(N_CASES):
        query_codes, db_codes, query_labels, db_labels = _codes(seed)
        for k in (1, 5, len(db_codes)):
            if convention == "deephash":
                theirs = _calc_top_map(db_codes, query_codes, db_labels, query_labels, k)
            else:
                theirs = _hashnet_map(db_codes, query_codes, db_labels, query_labels, k)
            # ties="stable" overrides the preset's "average" to meet the oracle's stable order
            ours = ft.evaluate(query_codes, db_codes, query_labels, db_labels, metrics=[f"AP@{k}"],
                               convention=convention, ties="stable").mean[f"AP@{k}"]
            np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12, err_msg=f"{seed} {k}")


def test_the_docs_table_is_the_presets():
    page = (Path(__file__).resolve().parents[1] / "docs" / "metrics.md").read_text()
    rows = {line.split("|")[1].strip().strip('`"'): [cell.strip() for cell in line.split("|")[2:-1]]
            for line in page.splitlines() if line.startswith('| `"')}
    assert set(rows) == set(CONVENTIONS)
    ap_words = {"total": "R", "min": "min(k, R)", "retrieved": "hits in the top k"}
    empty_words = {"zero": "0", "one": "1", "skip": "left out", "skip_missed": "left out when nothing relevant"}
    for name, (door, ties, gain, ap, empty, *_) in rows.items():
        preset = CONVENTIONS[name].lists or CONVENTIONS[name].hamming
        assert door == ("`rank_evaluate`" if CONVENTIONS[name].lists else "`evaluate`"), name
        assert ties.startswith(f'`"{preset["ties"]}"`') and gain == f'`"{preset["gain"]}"`', name
        assert ap.startswith(ap_words[preset["ap_denominator"]]), name
        assert empty.startswith(empty_words[preset["empty"]]), name


def test_the_other_hamming_doors_take_the_convention():
    """fasttie.dask.evaluate, fasttie.torch.evaluate_distributed and torchmetrics' HammingRetrieval
    take convention= as ft.evaluate does: the preset fills the options not passed."""
    rng = np.random.default_rng(7)
    queries, database = rng.integers(0, 2, (6, 16)), rng.integers(0, 2, (40, 16))
    query_labels, db_labels = rng.integers(0, 3, 6), rng.integers(0, 3, 40)
    metrics = ["AP@10", "nDCG@10"]
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, convention="hashnet")
    explicit = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics,
                           **convention_options("hashnet", "hamming"))
    np.testing.assert_array_equal(expected.per_query["AP@10"], explicit.per_query["AP@10"])
    if importlib.util.find_spec("dask") is not None:
        import fasttie.dask

        got = fasttie.dask.evaluate(queries, database, query_labels, db_labels, metrics=metrics, convention="hashnet")
        assert got.mean == expected.mean
    if importlib.util.find_spec("torch") is not None:
        import fasttie.torch

        assert "convention" in inspect.signature(fasttie.torch.evaluate_distributed).parameters
    if importlib.util.find_spec("torchmetrics") is not None:
        import torch

        from fasttie.torchmetrics import HammingRetrieval

        metric = HammingRetrieval(torch.as_tensor(queries), torch.as_tensor(query_labels), metrics=metrics,
                                  convention="hashnet")
        metric.update(torch.as_tensor(database), torch.as_tensor(db_labels))
        got = metric.compute()
        assert {name: float(value) for name, value in got.items()} == expected.mean
