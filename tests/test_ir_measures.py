"""fasttie.ir_measures against ir_measures itself, on random qrels and runs with tied scores.

Conventions checked (each against the library that defines it, never against fasttie):

- ``ties="trec"`` equals ir_measures' pytrec_eval provider (trec_eval: score descending, then
  document id descending) for the trec_eval measures, its gdeval provider for ERR@k (gdeval's
  order is trec_eval's); ``ties="pyndeval"`` equals its judged provider (document id ascending)
  for Judged@k. Per query (``iter_calc``) and aggregated (``calc_aggregate``: the mean over the
  judged queries, the judged queries the run lacks at 0; NumRet and NumRel summed).
- ``ties="average"`` equals the mean over every order of the tied documents, each order given to
  ir_measures' own measure as ties-free scores (enumerated here, no formula of fasttie's); RBP,
  which no installed ir_measures provider computes, against its definition on each order.
- :func:`fasttie.trec.evaluate` reads ir_measures ``Measure`` objects as their names and the
  rows of ``ir_measures.read_trec_qrels`` / ``read_trec_run`` as the files.
- PyTerrier: ``pt.Experiment`` where pyterrier imports (its core needs no Java; the
  ``python-terrier`` package pulls ``pyterrier[all]``, whose Terrier back end needs Java, so the
  test environment does not install it), and always the ir_measures call ``pt.Experiment`` makes
  (``iter_calc`` on PyTerrier's frames renamed, ``run_inputs``, each measure's aggregator).
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

ir_measures = pytest.importorskip("ir_measures")
pd = pytest.importorskip("pandas")

import fasttie as ft  # noqa: E402
import fasttie.ir_measures as fim  # noqa: E402
from fasttie.errors import InputError  # noqa: E402

TOL = 1e-12


def _tol(provider):
    """gdeval prints 5 decimals (``%.5f``), which ir_measures reads back: half a unit of the last."""
    return 5e-6 + TOL if provider is ir_measures.gdeval else TOL
SCORES = (0.5, 1.0, 1.5, 2.0)  # few values: many ties


def _case(seed, *, max_docs=9, grades=(0, 0, 1, 1, 2, 3)):
    """Random qrels and run (dicts) with tied scores, unjudged retrieved documents, judged
    queries the run lacks and run queries without judgments."""
    rng = random.Random(seed)
    queries = [str(i) for i in range(1, 7)]  # numbers: gdeval reads no other topic id
    judged = rng.sample(queries, rng.randint(1, 5))
    qrels = {q: {f"d{d}": rng.choice(grades) for d in rng.sample(range(12), rng.randint(1, 8))} for q in judged}
    in_run = [q for q in queries if rng.random() < 0.7] or [judged[0]]
    run = {q: {f"d{d}": rng.choice(SCORES) for d in rng.sample(range(14), rng.randint(1, max_docs))} for q in in_run}
    return qrels, run


# (fasttie measure, ir_measures' own, the provider that computes it)
PYTREC = [
    (fim.AP(ties="trec"), ir_measures.AP), (fim.AP(ties="trec") @ 5, ir_measures.AP @ 5),
    (fim.AP(rel=2, ties="trec"), ir_measures.AP(rel=2)), (fim.nDCG(ties="trec"), ir_measures.nDCG),
    (fim.nDCG(ties="trec") @ 3, ir_measures.nDCG @ 3), (fim.nDCG(ties="trec") @ 10, ir_measures.nDCG @ 10),
    (fim.nDCG(gains={0: 0, 1: 1, 2: 5, 3: 10}, ties="trec") @ 5, ir_measures.nDCG(gains={0: 0, 1: 1, 2: 5, 3: 10}) @ 5),
    (fim.P(ties="trec") @ 5, ir_measures.P @ 5), (fim.P(rel=2, ties="trec") @ 3, ir_measures.P(rel=2) @ 3),
    (fim.R(ties="trec") @ 3, ir_measures.R @ 3), (fim.R(ties="trec") @ 10, ir_measures.R @ 10),
    (fim.RR(ties="trec"), ir_measures.RR), (fim.RR(rel=2, ties="trec"), ir_measures.RR(rel=2)),
    (fim.Rprec(ties="trec"), ir_measures.Rprec), (fim.Bpref(ties="trec"), ir_measures.Bpref),
    (fim.SetP(ties="trec"), ir_measures.SetP), (fim.SetR(ties="trec"), ir_measures.SetR),
    (fim.SetF(ties="trec"), ir_measures.SetF), (fim.SetF(beta=0.5, ties="trec"), ir_measures.SetF(beta=0.5)),
    (fim.SetRelP(ties="trec"), ir_measures.SetRelP), (fim.SetAP(ties="trec"), ir_measures.SetAP), (fim.Success(ties="trec") @ 3, ir_measures.Success @ 3),
    (fim.NumRet(ties="trec"), ir_measures.NumRet), (fim.NumRelRet(ties="trec"), ir_measures.NumRelRet),
    (fim.NumRel(ties="trec"), ir_measures.NumRel), (fim.NumQ(ties="trec"), ir_measures.NumQ),
    (fim.infAP(ties="trec"), ir_measures.infAP),
    (fim.AP(judged_only=True, ties="trec"), ir_measures.AP(judged_only=True)),
    (fim.P(judged_only=True, ties="trec") @ 5, ir_measures.P(judged_only=True) @ 5),
]
PAIRS = [(ours, theirs, ir_measures.pytrec_eval) for ours, theirs in PYTREC] + [
    (fim.Judged(ties="pyndeval") @ 5, ir_measures.Judged @ 5, ir_measures.judged),
    (fim.Judged(ties="pyndeval") @ 2, ir_measures.Judged @ 2, ir_measures.judged),
    (fim.ERR(ties="trec") @ 10, ir_measures.ERR @ 10, ir_measures.gdeval),
    (fim.ERR(ties="trec") @ 3, ir_measures.ERR @ 3, ir_measures.gdeval),
]


def _available(provider):
    return provider.is_available()


def _per_query(metrics):
    out = {}
    for metric in metrics:
        key = (metric.query_id, metric.measure)
        assert key not in out, f"{key} given twice"
        out[key] = metric.value
    return out


@pytest.mark.parametrize("seed", range(40))
def test_trec_order_equals_ir_measures_providers(seed):
    # half the cases have negative grades (judged non-relevant; unjudged for Bpref, pooled but
    # unjudged for infAP), without nDCG: pytrec_eval's ndcg loops forever on a query whose
    # grades are all negative
    negative = seed >= 20
    qrels, run = _case(seed, grades=(-1, 0, 0, 1, 1, 2, 3)) if negative else _case(seed)
    _assert_equals_providers(qrels, run, [pair for pair in PAIRS if not (negative and pair[1].NAME == "nDCG")], seed)


def _assert_equals_providers(qrels, run, pairs, seed):
    """Each fasttie measure of ``pairs`` gives its provider's values: the same query ids, per query
    and aggregated, all fasttie measures in one ir_measures call."""
    pairs = [pair for pair in pairs if _available(pair[2])]
    ours = [o for o, _, _ in pairs]
    got = _per_query(ir_measures.iter_calc(ours, qrels, run))  # one call, every fasttie measure
    means = ir_measures.calc_aggregate(ours, qrels, run)
    for mine, theirs, provider in pairs:
        expected = _per_query(provider.iter_calc([theirs], qrels, run))
        mine_values = {q: v for (q, m), v in got.items() if m == mine}
        assert set(mine_values) == {q for q, _ in expected}, (mine, seed)
        for (qid, _), value in expected.items():
            assert mine_values[qid] == pytest.approx(value, abs=_tol(provider), rel=0), (mine, qid, seed)
        assert means[mine] == pytest.approx(provider.calc_aggregate([theirs], qrels, run)[theirs], abs=_tol(provider),
                                            rel=0), (mine, seed)


def _with_empty_queries(seed):
    """:func:`_case` and what filtering qrels to positive grades leaves (issue 52, item 3): keys
    of the qrels dict without judgments, one retrieved ("7"), one not ("8"), and a query judged
    with non-relevant documents only ("9"); _case adds judged queries the run lacks."""
    qrels, run = _case(seed)
    rng = random.Random(seed)
    qrels["7"], qrels["8"], qrels["9"] = {}, {}, {"d1": 0, "d3": 0}
    run["7"] = {"d1": rng.choice(SCORES), "d2": rng.choice(SCORES)}
    run["9"] = {"d1": rng.choice(SCORES), "d4": rng.choice(SCORES)}
    return qrels, run


@pytest.mark.parametrize("seed", range(20))
def test_query_set_of_a_qrels_dict_is_ir_measures(seed):
    # gdeval's ERR aside: ir_measures' gdeval provider fails on a run query without judgments
    qrels, run = _with_empty_queries(seed)
    _assert_equals_providers(qrels, run, [pair for pair in PAIRS if pair[2] is not ir_measures.gdeval], seed)


def test_issue_example_query_without_judgments():
    """Issue 52, item 3: ir_measures and ranx average q2, a key of the qrels without judgments,
    in at 0 (AP 0.5); fasttie.ir_measures said 1.0 (the runtime provider's frame has no q2), and
    so did ``trec.evaluate(complete=True)``."""
    qrels, run = {"q1": {"d1": 1}, "q2": {}}, {"q1": {"d1": 1.0}}
    theirs = ir_measures.calc_aggregate([ir_measures.AP, ir_measures.NumQ, ir_measures.NumRel], qrels, run)
    assert theirs == {ir_measures.AP: 0.5, ir_measures.NumQ: 1.0, ir_measures.NumRel: 1.0}
    for ties in ("average", "trec"):
        mine = [fim.AP(ties=ties), fim.NumQ(ties=ties), fim.NumRel(ties=ties)]
        assert ir_measures.calc_aggregate(mine, qrels, run) == dict(zip(mine, [0.5, 1.0, 1.0]))
        assert {(m.query_id, m.value) for m in ir_measures.iter_calc(mine[:1], qrels, run)} == {("q1", 1.0), ("q2", 0.0)}
    complete = ft.trec.evaluate(qrels, run, ["AP", "NumQ", "NumRel"], complete=True)
    # trec_eval -c's counts: NumQ the queries averaged over, NumRel every judged query's
    assert complete.query_ids == ["q1", "q2"] and complete.mean == {"AP": 0.5, "NumQ": 2.0, "NumRel": 1.0}
    assert ft.trec.evaluate(qrels, run, ["AP"]).mean == {"AP": 1.0}  # without -c: queries both judged and run
    ranx = pytest.importorskip("ranx")
    assert ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "map", make_comparable=True) == 0.5


@pytest.mark.parametrize("seed", range(20))
def test_complete_is_ir_measures_query_set_with_trec_eval_counts(seed):
    """``trec.evaluate(complete=True)``: ir_measures' queries and means; a query not both judged
    and retrieved scored as an empty ranking, as trec_eval -c: NumQ 1 (ir_measures: 0) and NumRel
    its relevant documents (ir_measures: 0), every other measure 0, as ir_measures' DEFAULT."""
    qrels, run = _with_empty_queries(seed)
    measures = [ir_measures.AP, ir_measures.nDCG @ 5, ir_measures.P @ 3, ir_measures.RR, ir_measures.Bpref,
                ir_measures.NumRet, ir_measures.NumRelRet, ir_measures.NumQ, ir_measures.NumRel]
    result = ft.trec.evaluate(qrels, run, measures, complete=True)
    theirs = _per_query(ir_measures.pytrec_eval.iter_calc(measures, qrels, run))
    assert result.query_ids == sorted(qrels)
    both = {q for q in qrels if qrels[q] and q in run}
    for measure in measures:
        values = dict(zip(result.query_ids, result.per_query[str(measure)].tolist()))
        for qid in qrels:
            if measure.NAME == "NumQ" and qid not in both:
                assert values[qid] == 1.0
            elif measure.NAME == "NumRel" and qid not in both:
                assert values[qid] == sum(g >= 1 for g in qrels[qid].values())
            else:
                assert values[qid] == pytest.approx(theirs[(qid, measure)], abs=TOL), (measure, qid, seed)
        if measure.NAME not in ("NumQ", "NumRel"):
            assert result.mean[str(measure)] == pytest.approx(
                ir_measures.pytrec_eval.calc_aggregate([measure], qrels, run)[measure], abs=TOL)


def test_the_issue_example_equals_ir_measures():
    qrels, run = _case(7)
    ours = ir_measures.calc_aggregate([fim.AP(ties="trec"), fim.nDCG(ties="trec") @ 10], qrels, run)
    theirs = ir_measures.calc_aggregate([ir_measures.AP, ir_measures.nDCG @ 10], qrels, run)
    assert ours[fim.AP(ties="trec")] == pytest.approx(theirs[ir_measures.AP], abs=TOL, rel=0)
    assert ours[fim.nDCG(ties="trec") @ 10] == pytest.approx(theirs[ir_measures.nDCG @ 10], abs=TOL, rel=0)


def _orders(docs):
    """Every order of a query's documents that keeps the score order, ties permuted, as
    lists of document ids (best first)."""
    groups = [sorted(d for d in docs if docs[d] == s) for s in sorted(set(docs.values()), reverse=True)]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [d for part in parts for d in part]


def _expanded(qrels, run):
    """One query per (query, tie order), with strictly decreasing scores (no ties left)."""
    e_qrels, e_run, owner = {}, {}, {}
    for q, docs in run.items():
        if q not in qrels:
            continue
        for j, order in enumerate(_orders(docs)):
            name = str(int(q) * 10000 + j)  # a number (gdeval), one per order (at most 720)
            owner[name] = q
            e_qrels[name] = qrels[q]
            e_run[name] = {d: float(len(order) - i) for i, d in enumerate(order)}
    return e_qrels, e_run, owner


def _rbp(order, judged, p, rel):
    return (1 - p) * math.fsum(p ** i for i, d in enumerate(order) if judged.get(d, 0) >= rel)


AVERAGE = [
    (fim.AP, ir_measures.AP, ir_measures.pytrec_eval), (fim.AP @ 2, ir_measures.AP @ 2, ir_measures.pytrec_eval),
    (fim.nDCG @ 2, ir_measures.nDCG @ 2, ir_measures.pytrec_eval), (fim.nDCG, ir_measures.nDCG, ir_measures.pytrec_eval),
    (fim.P @ 2, ir_measures.P @ 2, ir_measures.pytrec_eval), (fim.R @ 3, ir_measures.R @ 3, ir_measures.pytrec_eval),
    (fim.RR, ir_measures.RR, ir_measures.pytrec_eval), (fim.RR(rel=2), ir_measures.RR(rel=2), ir_measures.pytrec_eval),
    (fim.Rprec, ir_measures.Rprec, ir_measures.pytrec_eval), (fim.Success @ 2, ir_measures.Success @ 2, ir_measures.pytrec_eval),
    (fim.Bpref, ir_measures.Bpref, ir_measures.pytrec_eval),
    (fim.Judged @ 2, ir_measures.Judged @ 2, ir_measures.judged), (fim.ERR @ 3, ir_measures.ERR @ 3, ir_measures.gdeval),
]


def _small_case(seed):
    # at most 6 documents a query: at most 720 orders of one query
    return _case(1000 + seed, max_docs=6)


@pytest.mark.parametrize("seed", range(30))
def test_average_is_the_mean_over_every_tie_order(seed):
    qrels, run = _small_case(seed)
    e_qrels, e_run, owner = _expanded(qrels, run)
    rbp = [fim.RBP(p=0.5, rel=1), fim.RBP(rel=2) @ 3]
    asked = [(o, t, prov) for o, t, prov in AVERAGE if _available(prov)]
    got = _per_query(ir_measures.iter_calc([o for o, _, _ in asked] + rbp, qrels, run))
    means = ir_measures.calc_aggregate([o for o, _, _ in asked] + rbp, qrels, run)
    for mine, theirs, provider in asked:
        sums, counts = {}, {}
        if e_run:
            for metric in provider.iter_calc([theirs], e_qrels, e_run):
                q = owner[metric.query_id]
                sums[q] = sums.get(q, 0.0) + metric.value
                counts[q] = counts.get(q, 0) + 1
        expected = {q: sums[q] / counts[q] if q in counts else 0.0 for q in qrels}
        for q, value in expected.items():
            assert got[(q, mine)] == pytest.approx(value, abs=_tol(provider), rel=0), (mine, q, seed)
        assert means[mine] == pytest.approx(math.fsum(expected.values()) / len(expected), abs=_tol(provider), rel=0)
    for mine in rbp:
        k, p, rel = mine["cutoff"], mine["p"], mine["rel"]
        for q in qrels:
            orders = list(_orders(run[q])) if q in run else [[]]
            expected = math.fsum(_rbp(o[:k] if isinstance(k, int) else o, qrels[q], p, rel) for o in orders) / len(orders)
            assert got[(q, mine)] == pytest.approx(expected, abs=TOL, rel=0), (mine, q, seed)


def test_cutoff_is_the_measures_not_a_cut_of_the_run():
    # d1 (relevant) ties with d2, d3 at the top: the cut at 1 falls inside the tie. Averaged
    # over the tie, P@1 is 1/3; a run cut first (ir_measures' define(support_cutoff=True) keeps
    # one of the tied documents, whichever its sort leaves first) would give 0 or 1.
    qrels = {"q": {"d1": 1}}
    run = {"q": {"d1": 1.0, "d2": 1.0, "d3": 1.0}}
    assert ir_measures.calc_aggregate([fim.P @ 1], qrels, run)[fim.P @ 1] == pytest.approx(1 / 3, abs=TOL)
    assert ir_measures.calc_aggregate([fim.RR @ 1], qrels, run)[fim.RR @ 1] == pytest.approx(1 / 3, abs=TOL)


def test_query_ids_keep_their_type_and_missing_queries_score_default():
    qrels = pd.DataFrame({"query_id": [1, 1, 2, 3], "doc_id": ["a", "b", "c", "d"], "relevance": [1, 0, 2, 1]})
    run = pd.DataFrame({"query_id": [1, 1, 2, 9], "doc_id": ["a", "b", "x", "d"], "score": [1.0, 1.0, 0.5, 0.3]})
    got = _per_query(ir_measures.iter_calc([fim.AP(ties="trec")], qrels, run))
    expected = _per_query(ir_measures.pytrec_eval.iter_calc([ir_measures.AP], qrels.astype({"query_id": str}),
                                                             run.astype({"query_id": str})))
    assert {q for q, _ in got} == {1, 2, 3}  # the qrels' ids, as ir_measures keys its default values
    for (q, _), value in got.items():
        assert value == pytest.approx(expected[(str(q), ir_measures.AP)], abs=TOL)
    # nothing both judged and retrieved: every judged query at DEFAULT, no error
    none = ir_measures.calc_aggregate([fim.AP, fim.NumRet], qrels, run[run.query_id == 9])
    assert none == {fim.AP: 0.0, fim.NumRet: 0.0}


def test_measures_are_ir_measures_measures():
    assert isinstance(fim.nDCG @ 10, ir_measures.Measure)
    assert str(fim.nDCG(ties="trec") @ 10) == "nDCG(ties='trec')@10" and str(fim.AP @ 5) == "AP@5"
    assert fim.AP != ir_measures.AP and fim.AP == fim.AP(ties="average")  # tie-averaged AP is not ir_measures' AP
    assert set(ir_measures.run_inputs([fim.AP])) == {"query_id", "doc_id", "score"}
    assert not ir_measures.pytrec_eval.supports(fim.AP(ties="trec"))  # no other provider ignores its ties
    with pytest.raises(InputError, match="ties must be one of"):
        ir_measures.calc_aggregate([fim.AP(ties="random")], {"q": {"d": 1}}, {"q": {"d": 1.0}})
    with pytest.raises(AssertionError, match="unsupported params"):  # ir_measures' own check of the others
        fim.ERR(rel=2).validate_params()


def test_parse_measure_after_register():
    names = fim.register()
    assert "ft_AP" in names and fim.register() == names  # a second call changes nothing
    assert ir_measures.parse_measure("ft_nDCG(ties='trec')@10") == fim.nDCG(ties="trec") @ 10
    assert ir_measures.parse_measure("ft_AP") == fim.AP
    with pytest.raises(InputError, match="already names 'AP'"):
        fim.register(prefix="")
    with pytest.raises(InputError, match="not a name"):
        fim.register(prefix="ft-")


def _write(tmp_path, qrels, run):
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    run_path.write_text("".join(f"{q} Q0 {d} {i} {s!r} t\n" for q, docs in run.items()
                                for i, (d, s) in enumerate(docs.items())))
    return str(qrels_path), str(run_path)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("ties", ["trec", "average"])
def test_trec_evaluate_takes_measures_and_ir_measures_rows(seed, ties, tmp_path):
    qrels, run = _case(200 + seed)
    if not set(qrels) & set(run):
        run[next(iter(qrels))] = {"d0": 1.0}
    qrels_path, run_path = _write(tmp_path, qrels, run)
    measures = [ir_measures.AP, ir_measures.nDCG @ 10, ir_measures.P(rel=2) @ 5, ir_measures.RBP(p=0.5),
                ir_measures.SetRelP, ir_measures.Judged @ 5, ir_measures.SetF(beta=0.25), fim.RR, fim.R(ties=ties) @ 3]
    names = ["AP", "nDCG@10", "P(rel=2)@5", "RBP(p=0.5)", "SetP(relative=True)", "Judged@5", "SetF(beta=0.25)", "RR",
             "R@3"]
    by_name = ft.trec.evaluate(qrels_path, run_path, names, ties=ties)
    for q_in, r_in in [(ir_measures.read_trec_qrels(qrels_path), ir_measures.read_trec_run(run_path)),
                       (list(ir_measures.read_trec_qrels(qrels_path)), list(ir_measures.read_trec_run(run_path)))]:
        by_measure = ft.trec.evaluate(q_in, r_in, measures, ties=ties, complete=True)
        complete = ft.trec.evaluate(qrels_path, run_path, names, ties=ties, complete=True)
        # keyed by ir_measures' names; SetF's beta is trec_eval's (recall's weight, unsquared) in both
        assert list(by_measure.mean) == [str(m) for m in measures[:7]] + ["RR", "R@3"]
        for name, key in zip(names, by_measure.mean):
            np.testing.assert_array_equal(by_measure.per_query[key], complete.per_query[name])
    assert by_name.query_ids == sorted(set(qrels) & set(run))
    # a fasttie measure that names another tie rule than the call's is refused, not overridden
    other = "average" if ties == "trec" else "trec"
    with pytest.raises(InputError, match=f"ties={other!r}"):
        ft.trec.evaluate(qrels_path, run_path, [fim.AP(ties=other)], ties=ties)


def test_rows_of_the_wrong_kind_are_named():
    qrels = list(ir_measures.read_trec_qrels("q1 0 d1 1\n"))
    run = list(ir_measures.read_trec_run("q1 Q0 d1 1 1.0 t\n"))
    with pytest.raises(TypeError, match="run got ir_measures Qrel rows"):
        ft.trec.evaluate(qrels, qrels, ["AP"])
    with pytest.raises(TypeError, match="qrels got ir_measures ScoredDoc rows"):
        ft.trec.evaluate(run, run, ["AP"])
    with pytest.raises(TypeError, match="namedtuples with fields query_id, doc_id, score"):
        ft.trec.evaluate(qrels, [("q1", "d1", 1.0)], ["AP"])
    with pytest.raises(TypeError, match="mixes ScoredDoc rows with tuple rows"):
        ft.trec.evaluate(qrels, run + [("q1", "d2", 1.0)], ["AP"])


# PyTerrier: its result and qrels frames, and the ir_measures call pt.Experiment makes on them
def _pyterrier_frames(seed):
    qrels, run = _case(300 + seed)
    qrels_frame = pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                               columns=["qid", "docno", "label"])
    res = pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()], columns=["qid", "docno", "score"])
    res["docid"] = np.arange(len(res))  # Terrier's numeric id, beside docno in its results
    res["rank"] = res.groupby("qid")["score"].rank(ascending=False, method="first").astype(int) - 1
    topics = pd.DataFrame({"qid": sorted(set(qrels) | set(run)), "query": "text"})
    return qrels_frame, res, topics


def _as_ir_measures(frame):  # what pt.model.to_ir_measures does: PyTerrier's names to ir_measures'
    return frame.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})


@pytest.mark.parametrize("seed", range(5))
def test_the_ir_measures_call_of_pyterrier(seed):
    qrels, res, _ = _pyterrier_frames(seed)
    mine = [fim.AP(ties="trec"), fim.nDCG(ties="trec") @ 10, fim.NumRet(ties="trec")]
    theirs = [ir_measures.AP, ir_measures.nDCG @ 10, ir_measures.NumRet]
    assert set(ir_measures.run_inputs(mine)) == {"query_id", "doc_id", "score"}
    values = {}
    for measures in (mine, theirs):
        aggregators = {m: m.aggregator() for m in measures}
        for metric in ir_measures.iter_calc(measures, _as_ir_measures(qrels), _as_ir_measures(res)):
            aggregators[metric.measure].add(metric.value)
        values[id(measures)] = [aggregators[m].result() for m in measures]
    np.testing.assert_allclose(values[id(mine)], values[id(theirs)], rtol=0, atol=TOL)


@pytest.mark.parametrize("seed", range(3))
def test_pyterrier_experiment(seed):
    pt = pytest.importorskip("pyterrier", reason="pyterrier (its core needs no Java) is not installed")
    qrels, res, topics = _pyterrier_frames(seed)
    mine = pt.Experiment([res], topics, qrels, eval_metrics=[fim.AP(ties="trec"), fim.nDCG(ties="trec") @ 10,
                                                            fim.AP], names=["run"])
    theirs = pt.Experiment([res], topics, qrels, eval_metrics=["map", "ndcg_cut_10"], names=["run"])
    assert mine["AP(ties='trec')"][0] == pytest.approx(theirs["map"][0], abs=TOL)
    assert mine["nDCG(ties='trec')@10"][0] == pytest.approx(theirs["ndcg_cut_10"][0], abs=TOL)
    averaged = ir_measures.calc_aggregate([fim.AP], _as_ir_measures(qrels), _as_ir_measures(res))[fim.AP]
    assert mine["AP"][0] == pytest.approx(averaged, abs=TOL)


def test_inputs_are_converted_once_per_evaluation_and_let_go(monkeypatch):
    import gc

    calls = {"qrels": 0, "run": 0}
    for kind in calls:
        original = getattr(fim, f"_{kind}_of")

        def counted(frame, original=original, kind=kind):
            calls[kind] += 1
            return original(frame)
        monkeypatch.setattr(fim, f"_{kind}_of", counted)
    qrels, run = _case(3)
    measures = [fim.AP, fim.nDCG @ 10, fim.P @ 5, fim.RR, fim.NumRet]
    ir_measures.calc_aggregate(measures, qrels, run)
    assert calls == {"qrels": 1, "run": 1}  # ir_measures hands each measure the same two frames
    ir_measures.calc_aggregate(measures, qrels, run)
    assert calls == {"qrels": 2, "run": 2}  # a new evaluation, new frames: converted anew
    gc.collect()
    assert fim._INPUTS._qrels is None and fim._INPUTS._run is None  # nothing kept past the frames
