"""fasttie.trec.join: the join of a run with its judgments as trec_eval makes it, and trec_eval's
options that change results: ``-M`` (``max_retrieved``) and ``-J`` (``judged_only``).

trec_eval 10.0 (form_res_rels.c) sorts each query's documents by score, descending, then by
docno, descending, keeps the first ``-M`` of them, and then, with ``-J``, drops those without a
judgment of grade >= 0 (not in the qrels, or judged with a negative grade), the others moving
up. fasttie is checked against:

* pytrec_eval (trec_eval 9's code) with ``judged_docs_only_flag=True`` for ``judged_only``;
  pytrec_eval has no ``-M``;
* a run cut by hand in trec_eval's order (a sort written here), evaluated without the option,
  in every tie mode: ``max_retrieved`` is a property of the input, the same cut whatever
  ``ties`` is, and ties are then resolved among the documents kept;
* the trec_eval reference json has no ``-M`` / ``-J`` configuration
  (tests/conformance/test_trec_conformance.py would run it if it had).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from fasttie import trec
from fasttie.trec.join import first_in_trec_order

TIE_MODES = ("trec", "average", "stable", "optimistic", "pessimistic", "pyndeval")
# fasttie metric -> pytrec_eval measure
PYTREC = {"AP": "map", "AP@10": "map_cut_10", "P@5": "P_5", "R@10": "recall_10", "nDCG": "ndcg",
          "nDCG@10": "ndcg_cut_10", "RR": "recip_rank", "Rprec": "Rprec", "Bpref": "bpref",
          "NumRet": "num_ret", "NumRelRet": "num_rel_ret", "NumRel": "num_rel", "Success@5": "success_5",
          "infAP": "infAP", "NumNonRelJudgedRet": "num_nonrel_judged_ret"}
METRICS = list(PYTREC)
ORDER_FREE = [m for m in METRICS if m not in ("RR",)]  # metrics of a fixed order used with every tie mode

_PYTREC_SCRIPT = """
import json, sys
import pytrec_eval
qrels, run, measures, judged_only = json.load(sys.stdin)
evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(measures), judged_docs_only_flag=judged_only)
json.dump(evaluator.evaluate(run), sys.stdout)
"""


def pytrec_values(qrels, run, names, *, judged_only=False):
    """pytrec_eval's per-query values {qid: {measure: value}}, in a fresh process with a time
    limit (pytrec_eval 0.5.11 can hang in a process that created another evaluator)."""
    pytest.importorskip("pytrec_eval")
    payload = json.dumps([qrels, run, sorted({PYTREC[n] for n in names}), judged_only])
    done = subprocess.run([sys.executable, "-c", _PYTREC_SCRIPT], input=payload, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def random_case(seed, n_queries=30):
    """Runs with many ties, unjudged documents, negative grades, relevant documents never
    retrieved; docnos of several lengths so that string order differs from numeric order."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for i in range(n_queries):
        pool = [f"d{x}" for x in rng.integers(0, 10 ** rng.integers(1, 4), 80)]
        qrels[f"q{i}"] = {str(d): int(rng.integers(-1, 4)) for d in rng.choice(pool, rng.integers(1, 30))}
        run[f"q{i}"] = {str(d): float(rng.integers(0, 5)) / 4 for d in rng.choice(pool, rng.integers(1, 50))}
    return qrels, run


def cut_by_hand(run, n):
    """trec_eval's -M: per query, sort by score descending, then docno descending, keep n."""
    out = {}
    for qid, docs in run.items():
        ranked = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)[:n]
        kept = {d for d, _ in ranked}
        out[qid] = {d: s for d, s in docs.items() if d in kept}  # input order among the kept
    return out


def judged_by_hand(qrels, run):
    """trec_eval's -J: drop documents without a judgment of grade >= 0."""
    return {qid: {d: s for d, s in docs.items() if qrels.get(qid, {}).get(d, -1) >= 0} for qid, docs in run.items()}


def assert_same(got, expected):
    assert got.query_ids == expected.query_ids
    assert list(got.per_query) == list(expected.per_query)
    for name in got.per_query:
        np.testing.assert_array_equal(got.per_query[name], expected.per_query[name], err_msg=name)
        assert got.mean[name] == expected.mean[name] or (np.isnan(got.mean[name]) and np.isnan(expected.mean[name]))


# --------------------------------------------------------------------------------------------
# -J


@pytest.mark.parametrize("seed", range(4))
def test_judged_only_matches_pytrec_eval(seed):
    qrels, run = random_case(seed)
    reference = pytrec_values(qrels, run, METRICS, judged_only=True)
    result = trec.evaluate(qrels, run, METRICS, judged_only=True)
    # pytrec_eval leaves out a query with no judged document retrieved; fasttie keeps it (empty)
    kept = [i for i, q in enumerate(result.query_ids) if q in reference]
    assert len(kept) >= len(result.query_ids) - 3
    for name in METRICS:
        expected = np.array([reference[result.query_ids[i]][PYTREC[name]] for i in kept])
        np.testing.assert_allclose(result.per_query[name][kept], expected, rtol=0, atol=1e-12, err_msg=name)
    plain = trec.evaluate(qrels, run, METRICS)
    assert plain.mean["NumRet"] > result.mean["NumRet"], "the case should retrieve unjudged documents"


@pytest.mark.parametrize("ties", TIE_MODES)
def test_judged_only_is_filtering_the_run(ties):
    qrels, run = random_case(11)
    names = METRICS if ties != "average" else ORDER_FREE + ["RR"]
    got = trec.evaluate(qrels, run, names, ties=ties, judged_only=True)
    expected = trec.evaluate(qrels, judged_by_hand(qrels, run), names, ties=ties)
    # a query left without documents stays in the evaluation with an empty ranking
    assert set(expected.query_ids) <= set(got.query_ids)
    rows = [got.query_ids.index(q) for q in expected.query_ids]
    for name in names:
        np.testing.assert_array_equal(got.per_query[name][rows], expected.per_query[name], err_msg=name)


def test_judged_only_query_without_judged_documents():
    qrels = {"q1": {"a": 1, "b": -1}, "q2": {"c": 1}}
    run = {"q1": {"x": 3.0, "b": 2.0}, "q2": {"c": 1.0}}  # b: negative grade, unjudged for -J
    result = trec.evaluate(qrels, run, ["AP", "NumRet", "NumRel"], judged_only=True)
    assert result.query_ids == ["q1", "q2"]
    assert result.per_query["NumRet"].tolist() == [0.0, 1.0]
    assert result.per_query["NumRel"].tolist() == [1.0, 1.0]
    assert result.per_query["AP"].tolist() == [0.0, 1.0]
    assert result.settings["judged_only"] is True and result.settings["max_retrieved"] is None


def judged_only_name(name):
    """ir_measures' per-metric -J: ``P@5`` -> ``P(judged_only=True)@5``."""
    base, at, cutoff = name.partition("@")
    return f"{base}(judged_only=True){at}{cutoff}"


@pytest.mark.parametrize("seed", [20, 22])  # pytrec_eval 0.5.11 itself crashes (SIGSEGV) on case 21
def test_per_metric_judged_only_matches_pytrec_eval(seed):
    """ir_measures' ``P(judged_only=True)@5`` is pytrec_eval's judged_docs_only_flag for that
    measure alone: in one call beside the plain measures, each side matches its pytrec_eval run."""
    qrels, run = random_case(seed)
    names = [judged_only_name(n) for n in METRICS]
    result = trec.evaluate(qrels, run, names + METRICS)
    for judged_only, shown in ((True, names), (False, METRICS)):
        reference = pytrec_values(qrels, run, METRICS, judged_only=judged_only)
        kept = [i for i, q in enumerate(result.query_ids) if q in reference]
        assert len(kept) >= len(result.query_ids) - 3
        for name, shown_name in zip(METRICS, shown):
            expected = np.array([reference[result.query_ids[i]][PYTREC[name]] for i in kept])
            np.testing.assert_allclose(result.per_query[shown_name][kept], expected, rtol=0, atol=1e-12,
                                       err_msg=shown_name)


@pytest.mark.parametrize("ties", TIE_MODES)
def test_per_metric_judged_only_equals_the_call_option(ties):
    qrels, run = random_case(12)
    names = METRICS if ties != "average" else ORDER_FREE + ["RR"]
    got = trec.evaluate(qrels, run, [judged_only_name(n) for n in names] + ["nDCG@5"], ties=ties)
    expected = trec.evaluate(qrels, run, names, ties=ties, judged_only=True)
    assert got.query_ids == expected.query_ids
    for name in names:
        np.testing.assert_array_equal(got.per_query[judged_only_name(name)], expected.per_query[name], err_msg=name)
    assert got.mean["NumRet(judged_only=True)"] < trec.evaluate(qrels, run, ["NumRet"]).mean["NumRet"]


# --------------------------------------------------------------------------------------------
# -M


@pytest.mark.parametrize("n", [1, 3, 10])
@pytest.mark.parametrize("ties", TIE_MODES)
def test_max_retrieved_is_the_cut_in_trec_order(ties, n):
    qrels, run = random_case(5)
    names = METRICS + ["P@10", "nDCG@3"]
    got = trec.evaluate(qrels, run, names, ties=ties, max_retrieved=n)
    expected = trec.evaluate(qrels, cut_by_hand(run, n), names, ties=ties)
    assert_same(got, expected)
    assert got.settings["max_retrieved"] == n
    assert np.all(got.per_query["NumRet"] <= n)


def test_max_retrieved_against_pytrec_eval_on_the_cut_run():
    qrels, run = random_case(7)
    reference = pytrec_values(qrels, cut_by_hand(run, 5), METRICS)
    result = trec.evaluate(qrels, run, METRICS, max_retrieved=5)
    assert result.query_ids == sorted(reference)
    for name in METRICS:
        expected = np.array([reference[q][PYTREC[name]] for q in result.query_ids])
        np.testing.assert_allclose(result.per_query[name], expected, rtol=0, atol=1e-12, err_msg=name)


def test_max_retrieved_then_judged_only():
    """trec_eval cuts first, then drops unjudged documents: the judged among the first N, not
    the first N judged."""
    qrels, run = random_case(3)
    got = trec.evaluate(qrels, run, METRICS, max_retrieved=8, judged_only=True)
    by_hand = judged_by_hand(qrels, cut_by_hand(run, 8))
    reference = pytrec_values(qrels, by_hand, METRICS)
    expected = trec.evaluate(qrels, by_hand, METRICS)
    rows = [got.query_ids.index(q) for q in expected.query_ids]
    for name in METRICS:
        np.testing.assert_array_equal(got.per_query[name][rows], expected.per_query[name], err_msg=name)
        values = np.array([reference[q][PYTREC[name]] for q in expected.query_ids])
        np.testing.assert_allclose(expected.per_query[name], values, rtol=0, atol=1e-12, err_msg=name)
    assert not np.array_equal(got.per_query["NumRet"],
                              trec.evaluate(qrels, judged_by_hand(qrels, run), METRICS, max_retrieved=8).per_query["NumRet"])


def test_max_retrieved_inside_a_tie():
    """Four documents tie; -M 2 keeps the two greatest docnos (trec_eval's order), whatever
    the tie mode; the relevant 'a' and 'b' are cut off, so they count in R but not retrieved."""
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "z": 0}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "z": 2.0}}
    names = ["P@3", "R@3", "RR", "NumRet", "NumRelRet"]
    # trec_eval's order z, d, c, b, a: -M 3 keeps z, d, c
    trec_order = trec.evaluate(qrels, run, names, max_retrieved=3)
    assert trec_order.mean == {"P@3": 1 / 3, "R@3": 1 / 3, "RR": 1 / 3, "NumRet": 3.0, "NumRelRet": 1.0}
    # average: z first, then d and c in either order: RR = (1/2 + 1/3) / 2
    average = trec.evaluate(qrels, run, names, max_retrieved=3, ties="average")
    assert average.mean["RR"] == pytest.approx((1 / 2 + 1 / 3) / 2, abs=1e-15)
    assert average.mean["P@3"] == pytest.approx(1 / 3, abs=1e-15) and average.mean["NumRelRet"] == 1.0
    # without the cut, average mode would see a, b, c, d in the tie: RR = E[1 / (1 + first relevant)]
    uncut = trec.evaluate(qrels, run, ["RR"], ties="average").mean["RR"]
    assert uncut == pytest.approx((3 / 4) / 2 + (1 / 4) / 3, abs=1e-15)
    optimistic = trec.evaluate(qrels, run, names, max_retrieved=3, ties="optimistic")
    pessimistic = trec.evaluate(qrels, run, names, max_retrieved=3, ties="pessimistic")
    assert optimistic.mean["RR"] == 1 / 2 and pessimistic.mean["RR"] == 1 / 3
    # stable: input order among the kept documents (c before d)
    assert trec.evaluate(qrels, run, ["RR"], max_retrieved=3, ties="stable").mean["RR"] == 1 / 2


def test_max_retrieved_keeps_rows_in_input_order():
    run = trec.Run.from_dict({"q": {"a": 1.0, "b": 3.0, "c": 1.0, "d": 2.0}, "p": {"x": 1.0}})
    cut = first_in_trec_order(run, 2)
    docno, score = cut.query("q")
    assert docno.tolist() == ["b", "d"] and score.tolist() == [3.0, 2.0]
    assert cut.query("p")[0].tolist() == ["x"]
    assert first_in_trec_order(run, 4) is run
    tie = first_in_trec_order(trec.Run.from_dict({"q": {"d10": 1.0, "d9": 1.0, "d2": 1.0}}), 2)
    assert tie.query("q")[0].tolist() == ["d9", "d2"]  # string order: d9 > d2 > d10
    zeros = first_in_trec_order(trec.Run.from_dict({"q": {"a": 0.0, "b": -0.0, "c": 1.0, "d": -1.0}}), 2)
    assert zeros.query("q")[0].tolist() == ["b", "c"]  # -0.0 ties with 0.0 (C's ==): b > a


def test_option_errors():
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1.0}}
    for bad in (0, -1):
        with pytest.raises(ValueError, match=r"max_retrieved must be >= 1"):
            trec.evaluate(qrels, run, ["AP"], max_retrieved=bad)
    for bad in (1.5, "10", True):
        with pytest.raises(TypeError, match=r"max_retrieved must be a positive integer or None"):
            trec.evaluate(qrels, run, ["AP"], max_retrieved=bad)
    with pytest.raises(TypeError, match=r"judged_only must be True or False"):
        trec.align(qrels, run, judged_only="yes")
    assert trec.evaluate(qrels, run, ["AP"], max_retrieved=np.int64(1)).mean == {"AP": 1.0}


def test_options_reach_the_diversity_measures():
    """alpha-nDCG is computed on the same cut and filtered ranking."""
    qrels = trec.Qrels.from_arrays(["q"] * 4, ["d1", "d1", "d2", "d3"], [1, 1, 1, 1], ["1", "2", "1", "3"])
    run = {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0, "x": 2.5}}
    for options, by_hand in (({"max_retrieved": 2}, {"q": {"d1": 3.0, "x": 2.5}}),
                             ({"judged_only": True}, {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0}})):
        got = trec.evaluate(qrels, run, ["alpha_nDCG@3", "P@2"], **options)
        assert got.mean == trec.evaluate(qrels, by_hand, ["alpha_nDCG@3", "P@2"]).mean, options


# --------------------------------------------------------------------------------------------
# SetF and the join itself


def test_set_f_beta_is_trec_evals_and_ir_measures():
    """SetF(beta=b), trec_eval's set_F.b and ir_measures' SetF(beta=b) weigh recall by b,
    (1 + b) P R / (b P + R); F1(beta=b) is van Rijsbergen's F, beta squared."""
    qrels = {"q1": {"a": 1, "b": 0, "c": 1, "e": 1}}
    run = {"q1": {"a": 3.0, "b": 2.0, "d": 1.0}}
    res = trec.evaluate(qrels, run, ["SetF(beta=2)", "set_F.2", "F1(beta=2)", "SetF"]).mean
    p, r = 1 / 3, 1 / 3
    assert res["SetF(beta=2)"] == res["set_F_2"] == pytest.approx(3 * p * r / (2 * p + r))
    assert res["F1(beta=2)"] == pytest.approx(5 * p * r / (4 * p + r))
    ir_measures = pytest.importorskip("ir_measures")
    rows = ([ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
            [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()])
    theirs = ir_measures.calc_aggregate([ir_measures.SetF(beta=2.0), ir_measures.SetF], *rows)
    assert theirs[ir_measures.SetF(beta=2.0)] == pytest.approx(res["SetF(beta=2)"], abs=1e-15)
    assert theirs[ir_measures.SetF] == pytest.approx(res["SetF"], abs=1e-15)


@pytest.mark.parametrize("seed", range(3))
def test_align_does_not_depend_on_threads(seed):
    qrels, run = random_case(np.random.default_rng(seed), n_queries=200)
    one, two = (trec.align(qrels, run, n_threads=n, complete=True) for n in (1, 2))
    for field in ("query_ids", "sizes", "docno", "score", "grade", "judged", "pooled"):
        assert np.array_equal(getattr(one, field), getattr(two, field)), field
    assert all(np.array_equal(a, b) for a, b in zip(one.unretrieved, two.unretrieved))
    best = {q: {d: max(r, 0) for d, r in docs.items()} for q, docs in qrels.items()}
    rows = np.repeat(one.query_ids, one.sizes)
    assert one.grade.tolist() == [best[q].get(d, 0) for q, d in zip(rows.tolist(), one.docno.tolist())]


def test_align_collapses_subtopics_and_counts_missing_relevant():
    qrels = trec.Qrels.from_arrays(
        ["q", "q", "q", "q", "q"], ["a", "a", "b", "c", "e"], [1, 3, 0, 2, -1], iteration=["1", "2", "1", "1", "1"]
    )
    run = trec.Run.from_arrays(["q", "q", "q"], ["e", "a", "z"], [3.0, 2.0, 1.0])
    aligned = trec.align(qrels, run)
    assert aligned.docno.tolist() == ["e", "a", "z"]
    assert aligned.grade.tolist() == [0, 3, 0]  # negative grade judged non-relevant
    # trec_eval reads a negative grade as "not in the pool": unjudged for bpref
    assert aligned.judged.tolist() == [False, True, False]
    # c (relevant, counts in R) and b (judged non-relevant, counts in bpref's N_nr)
    assert [sorted(u.tolist()) for u in aligned.unretrieved] == [[0, 2]]
    assert aligned.offsets.tolist() == [0, 3]
