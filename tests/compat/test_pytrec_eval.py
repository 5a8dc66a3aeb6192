"""fasttie.compat.pytrec_eval against pytrec-eval-terrier itself: the same keys and values on
random judgments and runs with tied scores, unjudged and missing queries, grades -1..3, both
relevance levels and -J; the helpers; and what ties="average" changes (the tie-averaged values
under the same keys, equal to fasttie.trec.evaluate's)."""

import io
import math

import numpy as np
import pytest

import fasttie as ft
import fasttie.compat.pytrec_eval as compat

pytrec_eval = pytest.importorskip("pytrec_eval")

# every measure but the interpolated precisions, where trec_eval 9 (inside pytrec_eval) and
# trec_eval 10 (fasttie) round the recall levels differently (test_iprec_rounding_is_trec_eval_10s)
MEASURES = {"map", "map_cut", "ndcg", "ndcg_cut", "P", "recall", "recip_rank", "Rprec", "bpref", "gm_map",
            "gm_bpref", "num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "set_P",
            "set_recall", "set_F", "set_map", "set_relative_P", "success", "infAP", "relative_P"}
# trec_eval's own measures (fasttie.trec.evaluate's alone; pytrec_eval has no unj, and prints
# relstring as 0.0); pytrec_eval reads no utility coefficients and crashes on G's gains
OWN_MEASURES = {"Rprec_mult", "utility", "binG", "G", "ndcg_rel", "Rndcg"}
# cutoffs given (pytrec_eval keeps one parameter list per measure: not beside the plain names)
CUT_MEASURES = {"P.1,3,7", "ndcg_cut.2,4", "success.2", "map_cut.1,1000", "recall.3", "relative_P.2",
                "Rprec_mult.0.35,5,1"}


def random_case(seed):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(rng.integers(1, 12)):
        docs = [f"d{i}" for i in rng.choice(60, rng.integers(1, 40), replace=False)]
        if rng.random() < 0.85:
            judged = rng.choice(docs + [f"x{i}" for i in range(5)], rng.integers(0, 20))
            qrels[f"q{q}"] = {d: int(rng.integers(-1, 4)) for d in judged}
        if rng.random() < 0.9:
            scores = rng.integers(0, 6, len(docs)) / 2.0  # many ties
            run[f"q{q}"] = dict(zip(docs, scores.tolist()))
    return qrels, run


def assert_same(ours, theirs):
    theirs = {q: {m: v for m, v in values.items() if m != "runid"} for q, values in theirs.items()}
    assert list(ours) == sorted(ours) and set(ours) == set(theirs)
    for qid, values in theirs.items():
        assert set(ours[qid]) == set(values), qid
        for measure, value in values.items():
            assert ours[qid][measure] == pytest.approx(value, rel=1e-12, abs=1e-12), (qid, measure)


@pytest.mark.parametrize("seed", range(60))
def test_same_keys_and_values_as_pytrec_eval(seed):
    qrels, run = random_case(seed)
    level, judged_only = (1, False) if seed % 3 else (2, seed % 2 == 0)
    for measures in (MEASURES, CUT_MEASURES, OWN_MEASURES):
        ours = compat.RelevanceEvaluator(qrels, measures, level, judged_only).evaluate(run)
        theirs = pytrec_eval.RelevanceEvaluator(qrels, measures, level, judged_only).evaluate(run)
        assert_same(ours, theirs)
    ours = compat.RelevanceEvaluator(qrels, MEASURES, level, judged_only).evaluate(run)
    for measure in ("map", "P_10", "num_ret", "gm_map"):
        if ours:
            values = [v[measure] for v in ours.values()]
            assert compat.compute_aggregated_measure(measure, values) == pytest.approx(
                pytrec_eval.compute_aggregated_measure(measure, values), rel=1e-12)


@pytest.mark.parametrize("nickname", ["official", "set"])
def test_nicknames(nickname):
    qrels, run = random_case(7)
    skip = {"iprec_at_recall"}  # trec_eval 9's rounding
    ours = compat.RelevanceEvaluator(qrels, {nickname}).evaluate(run)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {nickname}).evaluate(run)
    theirs = {q: {m: v for m, v in d.items() if not any(m.startswith(s) for s in skip)} for q, d in theirs.items()}
    ours = {q: {m: v for m, v in d.items() if not m.startswith("iprec")} for q, d in ours.items()}
    assert_same(ours, theirs)


def test_iprec_rounding_is_trec_eval_10s():
    """trec_eval 10.0 starts recall level l at relevant item (long)(l R + 0.5), trec_eval 9 (in
    pytrec_eval) at (long)(l R + 0.9): with R = 2 and one relevant item found at rank 3, levels
    0.6 and 0.7 differ; every other level agrees."""
    qrels = {"q1": {"d1": 1, "d3": 2}}
    run = {"q1": {"d4": 1.0, "d2": 0.5, "d1": 0.5}}
    ours = compat.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(run)["q1"]
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(run)["q1"]
    differ = {k for k in theirs if not math.isclose(ours[k], theirs[k])}
    assert differ == {"iprec_at_recall_0.60", "iprec_at_recall_0.70"} and ours["iprec_at_recall_0.60"] == 1 / 3


def test_average_ties_are_fasttie_trec_evaluate_under_the_same_keys():
    qrels, run = random_case(11)
    ours = compat.RelevanceEvaluator(qrels, {"map", "ndcg_cut.10", "P.5", "gm_map"}, ties="average").evaluate(run)
    kept = {q: d for q, d in run.items() if qrels.get(q)}
    expected = ft.trec.evaluate({q: qrels[q] for q in kept}, kept, ["AP", "nDCG@10", "P@5", "GMAP"], ties="average")
    for i, qid in enumerate(expected.query_ids):
        assert ours[qid]["map"] == expected.per_query["AP"][i]
        assert ours[qid]["ndcg_cut_10"] == expected.per_query["nDCG@10"][i]
        assert ours[qid]["gm_map"] == math.log(max(expected.per_query["GMAP"][i], 1e-5))
    trec = compat.RelevanceEvaluator(qrels, {"map"}).evaluate(run)
    assert any(trec[q]["map"] != ours[q]["map"] for q in ours)  # the tie order mattered somewhere


def test_parse_qrel_and_run_and_empty_cases():
    qrels = compat.parse_qrel(io.StringIO("q1 0 d1 1\nq1 0 d2 0\n\nq2 0 d1 2\n"))
    run = compat.parse_run(io.StringIO("q1 Q0 d1 1 2.5 r\nq1 Q0 d2 2 2.5 r\nq3 Q0 d1 1 1 r\n"))
    assert qrels == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}} and run == {"q1": {"d1": 2.5, "d2": 2.5}, "q3": {"d1": 1.0}}
    assert qrels == pytrec_eval.parse_qrel(io.StringIO("q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n"))  # no blank line
    with pytest.raises(ValueError, match="line 2: document 'd1' judged twice for query 'q1'"):
        compat.parse_qrel(io.StringIO("q1 0 d1 1\nq1 0 d1 0\n"))
    with pytest.raises(ValueError, match="run line 1: expected"):
        compat.parse_run(io.StringIO("q1 Q0 d1 1 2.5\n"))
    evaluator = compat.RelevanceEvaluator(qrels, {"map"})
    assert evaluator.evaluate({"q9": {"d1": 1.0}}) == {} == pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(
        {"q9": {"d1": 1.0}})
    assert compat.RelevanceEvaluator({"q1": {}}, {"map"}).evaluate({"q1": {"d1": 1.0}}) == {}


@pytest.mark.parametrize("measures, match", [
    ({"relstring"}, "does not compute"), ({"unj"}, "unknown measure 'unj'"), ({"mapp"}, "unknown measure 'mapp'"),
    ({"P.x"}, "cutoffs are positive integers"), ({"iprec_at_recall.0.55"}, "levels"), ("map", "set of names"),
])
def test_bad_measures(measures, match):
    with pytest.raises((ValueError, TypeError), match=match):
        compat.RelevanceEvaluator({"q1": {"d1": 1}}, measures)


def test_supported_names():
    assert compat.supported_measures <= set(pytrec_eval.supported_measures)
    for nickname, members in compat.supported_nicknames.items():
        assert members <= set(pytrec_eval.supported_nicknames[nickname])
