"""ranx's metric names give ranx's values (issue 38, item 5).

``ft.trec.evaluate(qrels, run, names, complete=True)`` is compared query by query with
``ranx.evaluate(Qrels, Run, names, make_comparable=True)`` (both then score a judged query the
run lacks 0 and ignore run queries without judgments) on seeded random cases: grades 0..3,
unjudged documents retrieved, queries with fewer documents than the cutoff, queries without
relevant documents.

* Fixed order: tie-free runs, and tied runs whose order in ranx (read back from its ``Run``) is
  trec_eval's, score then document id descending, against ``ties="trec"``.
* ``ties="average"``: ranx's value averaged over every order inside ties, each order a tie-free
  run of its own (the definition, with ranx as the fixed-order metric).
* ``ft.rank_evaluate`` with the same names; ranx's ``-l2`` suffix spelt with per-metric
  parameters; the names parse to the metrics of ranx's formulas, and a misspelt ranx name is
  suggested a metric of its formula or nothing.

ranx's bpref divides by R and by min(R, judged non-relevant documents): for a query without a
relevant or without a judged non-relevant document it is 0/0, and (ranx 0.3.21, compiled) the
other queries of that call then come back 0 too. fasttie follows trec_eval there; bpref is
compared on the queries where ranx's is defined, in a ranx call of their own.
"""

import itertools

import numpy as np
import pytest

import fasttie as ft
from fasttie.errors import InputError
from fasttie.metrics import parse_metrics, suggest

ranx = pytest.importorskip("ranx")

RANX_NAMES = [
    "hits", "hit_rate", "precision", "recall", "f1", "mrr", "map", "dcg", "dcg_burges", "ndcg", "ndcg_burges",
    *(f"{name}@{k}" for k in (3, 5) for name in (
        "hits", "hit_rate", "precision", "recall", "f1", "mrr", "map", "dcg", "dcg_burges", "ndcg", "ndcg_burges")),
    "r-precision", "bpref",
]
# the fasttie metric each ranx name is (formula, and parameters the name carries)
SAME_AS = {
    "hits@5": "Hits@5", "hit_rate@5": "Success@5", "r-precision": "Rprec", "ndcg_burges@5": "nDCG(gain='exp2')@5",
    "dcg_burges@5": "DCG(gain='exp2')@5", "mrr@5": "RR@5", "f1@5": "F1@5", "recall@5": "R@5", "precision@5": "P@5",
    "map@5": "AP@5", "ndcg@5": "nDCG@5", "dcg@5": "DCG@5", "bpref": "Bpref",
}


def _case(seed, *, tied, max_docs=8):
    """qrels and run dicts: 1..4 judged queries, sometimes one the run lacks, sometimes a run query
    without judgments, sometimes a key of the qrels without judgments (what filtering qrels to
    positive grades leaves; ranx counts it at 0), retrieved or not. Scores from 3 values (tied)
    or all distinct."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(int(rng.integers(1, 5))):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(int(rng.integers(1, max_docs + 1)))]
        judged = {d: int(rng.integers(0, 4)) for d in docs if rng.random() < 0.75} or {docs[0]: int(rng.integers(0, 4))}
        qrels[qid] = judged
        retrieved = [d for d in docs if rng.random() < 0.7] + [f"u{i}" for i in range(int(rng.integers(0, 3)))]
        retrieved = retrieved[:max_docs]
        if q > 0 and rng.random() < 0.2:
            retrieved = []  # a judged query the run lacks
        if not retrieved and q == 0:
            retrieved = [docs[0]]
        if retrieved:
            if tied:
                scores = rng.integers(0, 3, size=len(retrieved)) / 2.0
            else:
                scores = rng.permutation(len(retrieved)) + 0.5
            run[qid] = {d: float(s) for d, s in zip(retrieved, scores)}
    if rng.random() < 0.3:
        run["unjudged"] = {"d0": 1.0, "d1": 0.5}
    if rng.random() < 0.3:
        qrels["no_judgment"] = {}
        if rng.random() < 0.5:
            run["no_judgment"] = {"d0": 1.0, "u0": 0.5}
    return qrels, run


def _trec_order(scores):
    """trec_eval's order: score descending, then document id descending."""
    return sorted(scores, key=lambda d: (scores[d], d), reverse=True)


def _bpref_defined(grades):
    """Whether ranx's bpref is defined: a relevant and a judged non-relevant document."""
    return any(g >= 1 for g in grades.values()) and any(g < 1 for g in grades.values())


def _ranx_call(qrels, run, names):
    ranx_run = ranx.Run(run)
    ranx.evaluate(ranx.Qrels(qrels), ranx_run, names, return_mean=False, make_comparable=True)
    return {name: {q: float(v) for q, v in ranx_run.scores[name].items()} for name in names}


def _ranx(qrels, run, names):
    """ranx's per-query values {name: {qid: value}} (make_comparable: the judged queries); bpref
    for the queries where it is defined, from a call of their own."""
    out = _ranx_call(qrels, run, [name for name in names if name != "bpref"])
    defined = [q for q in qrels if _bpref_defined(qrels[q])]
    if "bpref" in names:
        # a query the run lacks gets an unjudged document, which bpref skips (ranx.Run needs a query)
        out["bpref"] = _ranx_call({q: qrels[q] for q in defined}, {q: run.get(q, {"unjudged": 0.0}) for q in defined},
                                  ["bpref"])["bpref"] if defined else {}
    return out


def _fasttie(qrels, run, names, ties):
    result = ft.trec.evaluate(qrels, run, names, ties=ties, complete=True)
    return {name: dict(zip(result.query_ids, result.per_query[name])) for name in names}, result


def _assert_same(ours, theirs, qrels):
    for name in RANX_NAMES:
        assert set(ours[name]) == set(qrels), name
        assert set(theirs[name]) == (set(qrels) if name != "bpref" else {q for q in qrels if _bpref_defined(qrels[q])})
        for qid, value in theirs[name].items():
            assert ours[name][qid] == pytest.approx(value, abs=1e-12, rel=1e-12), (name, qid)


@pytest.mark.parametrize("seed", range(40))
def test_fixed_order_tie_free(seed):
    qrels, run = _case(seed, tied=False)
    ours, result = _fasttie(qrels, run, RANX_NAMES, "trec")
    theirs = _ranx(qrels, run, RANX_NAMES)
    _assert_same(ours, theirs, qrels)
    for name in ("hits@5", "ndcg_burges@3", "map@5"):  # means over the same queries (hits: a mean, not a sum)
        assert result.mean[name] == pytest.approx(np.mean(list(theirs[name].values())), abs=1e-12)


@pytest.mark.parametrize("seed", range(100, 140))
def test_fixed_order_with_ties_in_ranx_order(seed):
    qrels, run = _case(seed, tied=True)
    in_trec_order = {q: {d: scores[d] for d in _trec_order(scores)} for q, scores in run.items()}
    ranx_run = ranx.Run(in_trec_order)
    for q, scores in run.items():  # ranx's own order inside ties must be trec_eval's for this comparison
        assert list(ranx_run.run[q].keys()) == _trec_order(scores), "ranx's tie order changed"
    ours, _ = _fasttie(qrels, run, RANX_NAMES, "trec")
    theirs = _ranx(qrels, in_trec_order, RANX_NAMES)
    _assert_same(ours, theirs, qrels)


# ranx's relevance level suffix, "-l2": grades >= 2 are relevant; the graded metrics drop the others
AT_LEVEL_2 = {
    "hits@5-l2": "Hits(rel=2)@5", "hit_rate@5-l2": "Success(rel=2)@5", "precision@5-l2": "P(rel=2)@5",
    "recall@5-l2": "R(rel=2)@5", "f1@5-l2": "F1(rel=2)@5", "r-precision-l2": "Rprec(rel=2)", "mrr@5-l2": "RR(rel=2)@5",
    "map@5-l2": "AP(rel=2)@5", "ndcg@5-l2": "nDCG(gains={1: 0})@5",
    "ndcg_burges@5-l2": "nDCG(gains={1: 0, 2: 3, 3: 7})@5",
}


@pytest.mark.parametrize("seed", range(400, 420))
def test_ranx_relevance_level_suffix(seed):
    """ranx's ``-l2`` is spelt with fasttie's per-metric parameters (grades 0..3)."""
    qrels, run = _case(seed, tied=False)
    theirs = _ranx_call(qrels, run, list(AT_LEVEL_2))
    ours, _ = _fasttie(qrels, run, list(AT_LEVEL_2.values()), "trec")
    for ranx_name, name in AT_LEVEL_2.items():
        assert set(ours[name]) == set(theirs[ranx_name]) == set(qrels)
        for qid, value in theirs[ranx_name].items():
            assert ours[name][qid] == pytest.approx(value, abs=1e-12, rel=1e-12), (ranx_name, qid)


def _tie_orders(scores):
    """Every order inside ties, each as tie-free scores."""
    levels = sorted(set(scores.values()), reverse=True)
    groups = [[d for d in scores if scores[d] == level] for level in levels]
    for combo in itertools.product(*(itertools.permutations(group) for group in groups)):
        order = [d for group in combo for d in group]
        yield {d: float(len(order) - i) for i, d in enumerate(order)}


@pytest.mark.parametrize("seed", range(200, 235))
def test_tie_average_is_ranx_averaged_over_tie_orders(seed):
    qrels, run = _case(seed, tied=True, max_docs=6)
    expanded_qrels, expanded_run, members = {}, {}, {}
    for qid in qrels:
        orders = list(_tie_orders(run[qid])) if qid in run else [None]
        for i, order in enumerate(orders):
            key = f"{qid}|{i}"
            expanded_qrels[key] = qrels[qid]
            if order is not None:
                expanded_run[key] = order
            members.setdefault(qid, []).append(key)
    per_order = _ranx(expanded_qrels, expanded_run, RANX_NAMES)
    theirs = {name: {qid: float(np.mean([per_order[name][key] for key in keys])) for qid, keys in members.items()
                     if keys[0] in per_order[name]}  # bpref: where ranx's is defined
              for name in RANX_NAMES}
    ours, _ = _fasttie(qrels, run, RANX_NAMES, "average")
    _assert_same(ours, theirs, qrels)


def test_average_cases_tie():
    """The cases of the average test have orders to average over."""
    cases = [_case(seed, tied=True, max_docs=6)[1] for seed in range(200, 235)]
    assert sum(len(list(_tie_orders(scores))) > 1 for run in cases for scores in run.values()) >= 30


@pytest.mark.parametrize("seed", range(300, 310))
def test_rank_evaluate_takes_ranx_names(seed):
    """``ft.rank_evaluate`` on the same documents: every judged document of a query is ranked."""
    rng = np.random.default_rng(seed)
    n_queries, n_docs = 4, 7
    grades = rng.integers(0, 4, size=(n_queries, n_docs))
    grades[:, 0] = np.maximum(grades[:, 0], 1)  # a relevant document per query
    grades[:, 1] = 0  # and a judged non-relevant one (ranx's bpref)
    scores = np.array([rng.permutation(n_docs) for _ in range(n_queries)], dtype=np.float64)
    qrels = {f"q{i}": {f"d{j}": int(grades[i, j]) for j in range(n_docs)} for i in range(n_queries)}
    run = {f"q{i}": {f"d{j}": float(scores[i, j]) for j in range(n_docs)} for i in range(n_queries)}
    theirs = _ranx(qrels, run, RANX_NAMES)
    result = ft.rank_evaluate(grades.ravel(), scores.ravel(), np.full(n_queries, n_docs), metrics=RANX_NAMES,
                              ties="stable")
    for name in RANX_NAMES:
        expected = [theirs[name][f"q{i}"] for i in range(n_queries)]
        np.testing.assert_allclose(result.per_query[name], expected, rtol=1e-12, atol=1e-12, err_msg=name)


def test_names_are_the_metrics_with_ranx_formulas():
    for ranx_name, fasttie_name in SAME_AS.items():
        assert parse_metrics([ranx_name]) == parse_metrics([fasttie_name]), ranx_name
    assert parse_metrics(["NDCG_Burges@[5,10]"]) == parse_metrics(["nDCG(gain='exp2')@[5,10]"])
    assert [m.name for m in parse_metrics(["ndcg_burges(judged_only=True)@10"])] == [
        "nDCG(gain='exp2', judged_only=True)@10"]
    with pytest.raises(ValueError, match="ranx's formula"):  # the alias fixes its gain
        parse_metrics(["ndcg_burges(gain='linear')@10"])
    with pytest.raises(ValueError, match="takes no cutoff"):  # ranx ignores a cutoff on r-precision; fasttie says so
        parse_metrics(["r-precision@10"])


def test_results_keyed_by_ranx_names():
    qrels, run = _case(1, tied=True)
    result = ft.trec.evaluate(qrels, run, ["ndcg_burges@10", "hits@5", "r-precision", "hit_rate@5"])
    assert list(result.mean) == ["ndcg_burges@10", "hits@5", "r-precision", "hit_rate@5"]


def _near_misses(name):
    """Typing slips of a name: a letter dropped, doubled, two swapped, a separator changed."""
    base, at, cutoff = name.partition("@")
    out = set()
    for i in range(len(base)):
        out.add(base[:i] + base[i + 1:])
        out.add(base[:i] + base[i] + base[i:])
        if i + 1 < len(base):
            out.add(base[:i] + base[i + 1] + base[i] + base[i + 2:])
    for sep in "_-":
        if sep in base:
            out.update(base.replace(sep, other) for other in ("", "_", "-", " ") if other != sep)
    return sorted(miss + at + cutoff for miss in out if miss and miss != base)


@pytest.mark.parametrize("name", ["hits@10", "hit_rate@10", "r-precision", "ndcg_burges@10", "dcg_burges@10",
                                  "mrr@10", "f1@10", "recall@10", "precision@10", "map@100", "ndcg@10", "bpref"])
def test_did_you_mean_keeps_the_formula(name):
    """An unknown near-miss of a ranx name is suggested a metric with that name's formula, or nothing."""
    expected = parse_metrics([name])
    suggested = unknown = 0
    for miss in _near_misses(name):
        try:
            parse_metrics([miss])
        except InputError as error:
            if error.kind != "unknown metric":
                continue
            unknown += 1
            close = suggest(miss)
            if close is not None:
                assert parse_metrics([close]) == expected, (miss, close)
                assert f"did you mean {close!r}" in str(error)
                suggested += 1
    # most slips get a hint; the others are as close to another formula's name (dncg: ndcg, dcg)
    assert unknown >= 4 and suggested >= unknown / 2, (name, suggested, unknown)


def test_did_you_mean_of_ranx_names():
    assert suggest("r-precison") == "Rprec"
    assert suggest("ndcg_burgs@10") == "nDCG(gain='exp2')@10"
    assert suggest("ndcg-burges@10") == "nDCG(gain='exp2')@10"
    assert suggest("hitrate@5") == "Success@5"
    assert suggest("hit@5") == "Hits@5"
    assert suggest("rbp.95") is None  # ranx's RBP of raw grades: no metric of that formula here
