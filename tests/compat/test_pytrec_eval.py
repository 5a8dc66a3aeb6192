"""fasttie.compat.pytrec_eval against pytrec-eval-terrier itself: the same keys, values and
order on random judgments and runs with tied scores, unjudged, missing and empty queries, grades
-1..3, both relevance levels and -J; pytrec_eval's spellings of measures and their parameters,
repeats and nicknames; its argument types; the helpers; and what ties="average" changes (the
tie-averaged values under the same keys, equal to fasttie.trec.evaluate's)."""

import io
import math

import numpy as np
import pytest

import fasttie as ft
import fasttie.compat.pytrec_eval as compat

pytrec_eval = pytest.importorskip("pytrec_eval")

MEASURES = {"map", "map_cut", "ndcg", "ndcg_cut", "P", "recall", "recip_rank", "Rprec", "bpref", "gm_map",
            "gm_bpref", "num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "set_P",
            "set_recall", "set_F", "set_map", "set_relative_P", "success", "infAP", "relative_P", "iprec_at_recall",
            "11pt_avg"}
CUT_MEASURES = {"P.1,3,7", "ndcg_cut.2,4", "success.2", "map_cut.1,1000", "recall.3", "relative_P.2",
                "iprec_at_recall.0.3,0.7", "set_F.0.5", "Rprec_mult.0.35,5,1"}
# trec_eval's own measures (pytrec_eval has no unj, and prints relstring as 0.0); pytrec_eval
# reads no utility coefficients and crashes on G's gains: tested without parameters
OWN_MEASURES = {"Rprec_mult", "utility", "binG", "G", "ndcg_rel", "Rndcg"}
BEIR = {"map_cut.1,3,5,10", "ndcg_cut.1,3,5,10", "recall.1,3,5,10", "P.1,3,5,10"}  # BEIR's EvaluateRetrieval


def random_case(seed):
    """Judgments and a run with many ties, queries in a random order; some judgments and
    rankings empty. The run's first judged query has a ranking and a judgment >= 0: before
    such a query pytrec_eval reads trec_eval's uninitialised cache (test_empty_ranking_first)."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in rng.permutation(int(rng.integers(1, 12))):
        docs = [f"d{i}" for i in rng.choice(60, rng.integers(1, 40), replace=False)]
        if rng.random() < 0.85:
            judged = rng.choice(docs + [f"x{i}" for i in range(5)], rng.integers(0, 20))
            qrels[f"q{q}"] = {d: int(rng.integers(-1, 4)) for d in judged}
        if rng.random() < 0.9:
            scores = rng.integers(0, 6, len(docs)) / 2.0  # many ties
            run[f"q{q}"] = dict(zip(docs, scores.tolist())) if rng.random() < 0.85 else {}
    first = next((q for q in run if qrels.get(q)), None)
    if first is not None:
        run[first] = run[first] or {"d1": 1.0}
        if max(qrels[first].values()) < 0:
            qrels[first]["d1"] = 1
    return qrels, run


def assert_same(ours, theirs):
    """The same queries and measures in the same order, and the same values (NaN where NaN)."""
    theirs = {q: {m: v for m, v in values.items() if m != "runid"} for q, values in theirs.items()}
    assert list(ours) == list(theirs)
    for qid, values in theirs.items():
        assert list(ours[qid]) == list(values), qid
        for measure, value in values.items():
            assert ours[qid][measure] == pytest.approx(value, rel=1e-12, abs=1e-12, nan_ok=True), (qid, measure)


@pytest.mark.parametrize("seed", range(60))
def test_same_keys_values_and_order_as_pytrec_eval(seed):
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


@pytest.mark.parametrize("seed", range(40))
def test_interpolated_precision_is_trec_eval_9s(seed):
    """Long rankings with many relevant documents, where trec_eval 9's recall levels ((long)
    (l R + 0.9), pytrec_eval) and 10.0's ((long) (l R + 0.5), fasttie.trec.evaluate) part."""
    rng = np.random.default_rng(1000 + seed)
    qrels, run = {}, {}
    for q in range(20):
        docs = [f"d{i}" for i in range(int(rng.integers(1, 80)))]
        qrels[f"q{q}"] = {d: int(rng.integers(0, 3)) for d in docs if rng.random() < 0.6}
        run[f"q{q}"] = {d: float(rng.integers(0, 30)) for d in docs if rng.random() < 0.8} or {"d0": 1.0}
    measures = {"iprec_at_recall", "11pt_avg"}
    assert_same(compat.RelevanceEvaluator(qrels, measures).evaluate(run),
                pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run))


def test_trec_eval_10s_rounding_stays_in_fasttie_trec():
    """With R = 2 and one relevant document found at rank 3, level 0.6 starts at relevant
    document (long) (0.6 x 2 + 0.9) = 2 in trec_eval 9 (pytrec_eval, this module) and at
    (long) (0.6 x 2 + 0.5) = 1 in trec_eval 10.0 (fasttie.trec.evaluate)."""
    qrels = {"q1": {"d1": 1, "d3": 2}}
    run = {"q1": {"d4": 1.0, "d2": 0.5, "d1": 0.5}}
    ours = compat.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(run)
    assert ours == pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(run)
    assert ours["q1"]["iprec_at_recall_0.60"] == 0.0
    assert ft.trec.evaluate(qrels, run, ["IPrec@0.6"]).mean == {"IPrec@0.6": 1 / 3}


def test_empty_ranking():
    """A judged query with an empty ranking is evaluated, every measure as pytrec_eval gives it."""
    qrels = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d1": 1, "d5": 1, "d6": 0, "d7": 2, "d8": -1}}
    run = {"q1": {"d1": 1.0}, "q2": {}}
    for measures in (compat.supported_measures, CUT_MEASURES, {"map"}):
        for level in (1, 2, 3):
            ours = compat.RelevanceEvaluator(qrels, measures, level).evaluate(run)
            assert_same(ours, pytrec_eval.RelevanceEvaluator(qrels, measures, level).evaluate(run))
    ours = compat.RelevanceEvaluator(qrels, {"map", "num_rel", "num_ret", "gm_map"}).evaluate(run)["q2"]
    assert ours == {"num_ret": 0.0, "num_rel": 3.0, "map": 0.0, "gm_map": math.log(1e-5)}


def test_empty_ranking_first():
    """An empty ranking before every non-empty one: pytrec_eval reads trec_eval's uninitialised
    cache (its first measure 0, the others as if nothing were relevant, or a crash); this module
    gives the values of an empty ranking wherever it stands. BEIR's measures agree either way."""
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 1, "d5": 1}, "q3": {"d4": 1}}
    run = {"q2": {}, "q3": {}, "q1": {"d1": 1.0, "d2": 0.5}}
    for measures in (BEIR, {"ndcg", "recip_rank", "Rprec", "set_P"}):
        ours = compat.RelevanceEvaluator(qrels, measures).evaluate(run)
        assert_same(ours, pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run))
    later = {"q1": run["q1"], "q2": {}, "q3": {}}
    measures = {"num_rel", "gm_map", "iprec_at_recall"}
    first = compat.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert list(first) == list(run)
    assert_same({q: first[q] for q in later}, compat.RelevanceEvaluator(qrels, measures).evaluate(later))
    assert_same(compat.RelevanceEvaluator(qrels, measures).evaluate(later),
                pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(later))


def _beir_average(module, qrels, results):
    """BEIR's EvaluateRetrieval.evaluate: each query's own id popped from its results, then the
    mean over the queries pytrec_eval returns."""
    results = {q: {d: s for d, s in docs.items() if d != q} for q, docs in results.items()}
    scores = module.RelevanceEvaluator(qrels, BEIR).evaluate(results)
    return {key: sum(values[key] for values in scores.values()) / len(scores) for key in ("ndcg_cut_10", "map_cut_10",
                                                                                        "recall_10", "P_10")}


def test_beir_averages_count_the_empty_ranking():
    qrels = {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 1}, "q3": {"d9": 2, "d8": 1}}
    results = {"q1": {"d1": 0.9, "q1": 0.99, "d4": 0.5}, "q2": {"q2": 1.0}, "q3": {"d8": 0.7, "d9": 0.6, "d5": 0.1}}
    ours, theirs = _beir_average(compat, qrels, results), _beir_average(pytrec_eval, qrels, results)
    assert ours == pytest.approx(theirs, rel=1e-12)
    assert ours["ndcg_cut_10"] < 2 / 3  # q2 counts, with 0


def test_unjudged_queries_and_empty_judgments():
    """Left out, as pytrec_eval leaves them out: a run query without judgments, and one whose
    judgments are an empty dict; a run of such queries gives {}."""
    qrels = {"q1": {"d1": 1}, "q2": {}, "q3": {"d2": 0}}
    run = {"q9": {"d1": 1.0}, "q2": {"d1": 1.0}, "q3": {"d2": 0.5}, "q1": {}, "q4": {}}
    for r in (run, {"q9": {"d1": 1.0}, "q2": {"d1": 1.0}}, {}):
        assert_same(compat.RelevanceEvaluator(qrels, {"map", "P.1"}).evaluate(r),
                    pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.1"}).evaluate(r))
    assert list(compat.RelevanceEvaluator(qrels, {"map"}).evaluate(run)) == ["q3", "q1"]
    assert compat.RelevanceEvaluator(qrels, set()).evaluate(run) == {"q3": {}, "q1": {}}


@pytest.mark.parametrize("measures", [
    {"P", "P.5"}, {"P.5", "P_10"}, {"P_5,10"}, {"P.100,20,3"}, {"ndcg_cut_10"}, {"ndcg_cut_10", "ndcg_cut"},
    {"iprec_at_recall_0.10"}, {"iprec_at_recall.0.5,0.20"}, {"iprec_at_recall.1", "iprec_at_recall"},
    {"P_5abc"}, {"P.1.5"}, {"P.5,"}, {"map.5"}, {"set_F.0.5"}, {"set_F.2", "set_F"}, {"success.1,5", "success"},
    {"official", "P.5"}, {"official"}, {"set_P", "num_q", "recall.5", "P.3", "map"}, ["map", "map"], {"runid", "map"},
    {"all_trec"}, set(),
], ids=str)
def test_spellings_and_repeats(measures):
    qrels, run = random_case(3)
    ours = compat.RelevanceEvaluator(qrels, measures).evaluate(run)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    if "all_trec" in measures:  # less the measures fasttie does not compute
        theirs = {q: {m: v for m, v in d.items() if not m.startswith(compat._NOT_COMPUTED)}
                  for q, d in theirs.items()}
    assert_same(ours, theirs)


@pytest.mark.parametrize("nickname", ["official", "set"])
def test_nicknames(nickname):
    qrels, run = random_case(7)
    ours = compat.RelevanceEvaluator(qrels, {nickname}).evaluate(run)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {nickname}).evaluate(run)
    assert_same(ours, theirs)


def test_average_ties_are_fasttie_trec_evaluate_under_the_same_keys():
    qrels, run = random_case(11)
    ours = compat.RelevanceEvaluator(qrels, {"map", "ndcg_cut.10", "P.5", "gm_map"}, ties="average").evaluate(run)
    kept = {q: d for q, d in run.items() if qrels.get(q) and d}
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
    ({"prefs_simp"}, "does not compute"), ({"mapp"}, "unknown measure 'mapp'"), ({"P.x"}, "unknown measure 'P.x'"), ({"P."}, "unknown measure"),
    ({"map", 5}, "must be strings"), ("map", "set of names"), (None, "set of names"),
])
def test_bad_measures_as_pytrec_eval(measures, match):
    """What pytrec_eval refuses with ValueError or TypeError, refused with the same kind."""
    with pytest.raises((ValueError, TypeError)):
        pytrec_eval.RelevanceEvaluator({"q1": {"d1": 1}}, measures)
    with pytest.raises((ValueError, TypeError), match=match):
        compat.RelevanceEvaluator({"q1": {"d1": 1}}, measures)


@pytest.mark.parametrize("measures, match", [
    ({"relstring"}, "does not compute"), ({"unj"}, "unknown measure 'unj'"),
    ({"P.0"}, "cutoffs must be positive"), ({"P.5", "P.05"}, "given twice"),
    ({"iprec_at_recall.0.1", "iprec_at_recall.0.10"}, "given twice"),
    ({"iprec_at_recall.1.5"}, "recall levels from 0 to 1"), ({"ndcg.1"}, "takes no parameters"),
    ({"11pt_avg.0.5"}, "takes no parameters"),
])
def test_refused_where_pytrec_eval_is_not_matched(measures, match):
    """Measures fasttie does not compute, parameters on which pytrec_eval aborts the process
    (trec_eval refuses them), and recall levels above 1 (pytrec_eval's iprec_at_recall.1.5 gives
    iprec_at_recall_1.50, 0: a recall never reached)."""
    with pytest.raises(ValueError, match=match):
        compat.RelevanceEvaluator({"q1": {"d1": 1}}, measures)


@pytest.mark.parametrize("keyword, value", [
    ("relevance_level", 0), ("relevance_level", 1.0), ("relevance_level", "1"), ("relevance_level", None),
    ("relevance_level", 2**40), ("judged_docs_only_flag", 1.0), ("judged_docs_only_flag", "x"),
    ("judged_docs_only_flag", None),
])
def test_argument_types_as_pytrec_eval(keyword, value):
    qrels = {"q1": {"d1": 1}}
    with pytest.raises(TypeError):
        pytrec_eval.RelevanceEvaluator(qrels, {"map"}, **{keyword: value})
    with pytest.raises(TypeError, match=keyword):
        compat.RelevanceEvaluator(qrels, {"map"}, **{keyword: value})


def test_integer_arguments_as_pytrec_eval():
    qrels, run = random_case(5)
    for level, flag in ((True, 2), (np.int64(2), np.int64(1)), (3, True)):
        assert_same(compat.RelevanceEvaluator(qrels, {"map", "num_ret"}, level, flag).evaluate(run),
                    pytrec_eval.RelevanceEvaluator(qrels, {"map", "num_ret"}, level, flag).evaluate(run))


def test_supported_names():
    assert compat.supported_measures <= set(pytrec_eval.supported_measures)
    for nickname, members in compat.supported_nicknames.items():
        assert members <= set(pytrec_eval.supported_nicknames[nickname])


@pytest.mark.parametrize("seed", range(40))
def test_any_recall_level_as_pytrec_eval(seed):
    """iprec_at_recall at levels other than the eleven (0.25, 0.333, drawn ones), with the eleven
    and 11pt_avg beside them: the same keys (trec_eval's %3.2f), values and order."""
    qrels, run = random_case(seed)
    rng = np.random.default_rng(seed)
    levels = {f"{x:.3f}".rstrip("0") for x in rng.random(int(rng.integers(1, 6)))} | {"0.25", "0.333"}
    levels = {level for level in levels if level not in ("0.", "1.")}
    levels = sorted(levels, key=float)
    levels = [level for i, level in enumerate(levels) if i == 0 or float(level) != float(levels[i - 1])]
    for measures in ({"iprec_at_recall." + ",".join(levels)}, {"iprec_at_recall_" + levels[0], "iprec_at_recall",
                                                               "11pt_avg", "map"}):
        assert_same(compat.RelevanceEvaluator(qrels, measures).evaluate(run),
                    pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run))


@pytest.mark.parametrize("measures", [
    {"iprec_at_recall.0.25,0.33"}, {"iprec_at_recall.1"}, {"iprec_at_recall.0.005"}, {"iprec_at_recall.0.331,0.334"},
    {"iprec_at_recall_0.25", "iprec_at_recall"}, {"iprec_at_recall.0.999,0.001,0.5"},
], ids=str)
def test_recall_level_keys_as_pytrec_eval(measures):
    """Keys as trec_eval prints them (0.333 -> iprec_at_recall_0.33, 1 -> _1.00, 0.005 -> _0.01);
    0.331 and 0.334 print alike, and the key holds 0.334's value: 300 relevant documents, so that
    level 0.331 starts at the (long) (99.3 + 0.9) = 100th and 0.334 at the 101st, behind a
    non-relevant one (an empty ranking too: NaN where the level starts at document 0, at 0.005
    for R = 3 and not for R = 300)."""
    qrels = {"q1": {f"r{i}": 1 for i in range(300)} | {"n": 0}, "q2": {"a": 1, "b": 1, "c": 2}, "q3": {"a": 1}}
    docs = [f"r{i}" for i in range(100)] + ["n"] + [f"r{i}" for i in range(100, 300)]
    run = {"q1": {doc: 1000.0 - i for i, doc in enumerate(docs)}, "q2": {}, "q3": {"a": 1.0, "z": 2.0}}
    ours = compat.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert_same(ours, pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run))
    if "iprec_at_recall.0.331,0.334" in measures:
        values = ft.trec.evaluate(qrels, run, ["IPrec(trec_eval=9)@0.331", "IPrec(trec_eval=9)@0.334"],
                                  ties="trec").per_query
        assert values["IPrec(trec_eval=9)@0.331"][0] == 1.0 > values["IPrec(trec_eval=9)@0.334"][0]
        assert ours["q1"] == {"iprec_at_recall_0.33": values["IPrec(trec_eval=9)@0.334"][0]}
