"""Every ndeval measure against pyndeval (ndeval.c as a library) on random diversity runs.

pyndeval ranks by score, then docno ascending: fasttie's ``ties="pyndeval"``; ndeval
``-traditional`` (trec_eval's order, docno descending) is checked by feeding pyndeval the run
with distinct scores in that order. alpha = 0.5 (pyndeval numbers subtopics by first appearance
in its qrels, ndeval and fasttie by number: at an alpha whose powers are not exact in float64
the two gain sums can differ in the last bit). pyndeval's cutoffs stop at 20.

ndeval's quirk at rank 1: its alpha-DCG and ERR-IA loops divide by the "ideal ideal" from rank 2
on, so at @1 pyndeval reports S (the query's subtopics) times fasttie's value, which is
normalised at every cutoff. ndeval leaves nNRBP at 0/0 (NaN) for a query without a relevant
subtopic; fasttie gives it the ``empty`` value like every other measure.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fasttie import trec
from helpers import diversity_arrays, diversity_objects, trec_ordered_run

pyndeval = pytest.importorskip("pyndeval", reason="pyndeval (test extra) is not installed")

CUTOFFS = (2, 3, 5, 10, 20)
# pyndeval measure -> fasttie name (cutoff measures take "{k}")
NAMES = {"ERR-IA": "ERR_IA@{k}", "nERR-IA": "nERR_IA@{k}", "alpha-DCG": "alpha_DCG@{k}",
         "alpha-nDCG": "alpha_nDCG@{k}", "P-IA": "P_IA@{k}", "strec": "StRecall@{k}"}
WHOLE = {"NRBP": "NRBP", "nNRBP": "nNRBP", "MAP-IA": "AP_IA"}


@st.composite
def diversity_runs(draw):
    """qrels lines (qid, subtopic, docno, rel) and run lines (qid, docno, score)."""
    qrels, run = [], []
    for q in range(draw(st.integers(1, 4))):
        qid = str(10 + q)
        pool = [f"d{j}" for j in draw(st.permutations(range(40)))[:draw(st.integers(1, 30))]]
        n_subtopics = draw(st.integers(1, 5))
        for doc in pool[:draw(st.integers(1, len(pool)))]:
            for s in draw(st.sets(st.integers(1, n_subtopics), min_size=1)):
                qrels.append((qid, str(s), doc, draw(st.sampled_from([0, 1, 1, 2]))))
        for doc in pool:
            if draw(st.booleans()):
                run.append((qid, doc, float(draw(st.integers(0, 5)))))
        if not any(r[0] == qid for r in run):
            run.append((qid, pool[0], 1.0))
    return qrels, run


def _compare(qrels, run, ties, beta=0.5):
    measures = [f"{m}@{k}" for m in NAMES for k in CUTOFFS] + list(WHOLE)
    reference_run = run if ties == "pyndeval" else trec_ordered_run(run)
    expected = pyndeval.ndeval(qrels, sorted(reference_run), measures=measures, beta=beta)
    names = {f"{m}@{k}": NAMES[m].format(k=k) for m in NAMES for k in CUTOFFS}
    b = "" if beta == 0.5 else f"(beta={beta!r})"
    names.update({m: f"{name}{b}" if m in ("NRBP", "nNRBP") else name for m, name in WHOLE.items()})
    res = trec.evaluate(*diversity_objects(qrels, run), list(names.values()), ties=ties)
    assert res.query_ids == sorted(expected)
    for i, qid in enumerate(res.query_ids):
        for measure, name in names.items():
            want = expected[qid][measure]
            if math.isnan(want):  # ndeval's nNRBP of a query without a relevant subtopic
                assert measure == "nNRBP" and res.per_query["AP_IA"][i] == 0.0
                want = 0.0
            assert res.per_query[name][i] == pytest.approx(want, abs=1e-12, rel=1e-12), (qid, measure)
    return res


@settings(max_examples=60, deadline=None)
@given(data=diversity_runs(), ties=st.sampled_from(["pyndeval", "trec"]), beta=st.sampled_from([0.5, 0.25, 0.8]))
def test_every_measure_against_pyndeval(data, ties, beta):
    _compare(*data, ties, beta)


def test_query_without_relevant_subtopic():
    qrels = [("1", "1", "a", 1), ("1", "2", "b", 1), ("2", "1", "x", 0)]
    run = [("1", "a", 2.0), ("1", "c", 1.0), ("2", "x", 1.0)]
    res = _compare(qrels, run, "pyndeval")
    assert res.n_empty == 1


def test_rank_one_quirk():
    """pyndeval's alpha-DCG@1 and ERR-IA@1 are S times fasttie's (ndeval divides from rank 2 on)."""
    qrels = [("1", "1", "a", 1), ("1", "2", "a", 1), ("1", "3", "b", 1)]
    run = [("1", "a", 3.0), ("1", "b", 2.0), ("1", "c", 1.0)]
    expected = pyndeval.ndeval(qrels, run, measures=["alpha-DCG@1", "ERR-IA@1", "alpha-nDCG@1", "nERR-IA@1"])["1"]
    res = trec.evaluate(*diversity_objects(qrels, run), ["alpha_DCG@1", "ERR_IA@1", "alpha_nDCG@1", "nERR_IA@1"])
    assert expected["alpha-DCG@1"] == 2.0 and res.per_query["alpha_DCG@1"][0] == pytest.approx(2 / 3, rel=1e-15)
    assert expected["ERR-IA@1"] == 2.0 and res.per_query["ERR_IA@1"][0] == pytest.approx(2 / 3, rel=1e-15)
    assert res.per_query["alpha_nDCG@1"][0] == expected["alpha-nDCG@1"] == 1.0
    assert res.per_query["nERR_IA@1"][0] == expected["nERR-IA@1"] == 1.0


@pytest.mark.parametrize("seed", range(3))
def test_arrays_against_pyndeval(seed):
    """The array front door (diversity_evaluate) on the same data as trec.evaluate."""
    from fasttie.diversity import diversity_evaluate

    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(5):
        qid = str(q)
        for j in rng.permutation(60)[:30]:
            for s in rng.choice(6, rng.integers(1, 4), replace=False):
                qrels.append((qid, str(s + 1), f"d{j:02d}", int(rng.integers(0, 2))))
            if rng.random() < 0.7:
                run.append((qid, f"d{j:02d}", float(rng.integers(0, 8))))
    measures = ["alpha-nDCG@10", "ERR-IA@10", "NRBP", "nNRBP", "MAP-IA", "P-IA@10", "strec@10", "nERR-IA@20"]
    expected = pyndeval.ndeval(qrels, sorted(run), measures=measures)
    y_true, scores, sizes, doc_ids = diversity_arrays(qrels, run, sorted(expected))
    res = diversity_evaluate(y_true, scores, sizes, metrics=measures, ties="pyndeval", doc_ids=doc_ids)
    assert list(res.per_query) == measures  # keyed as asked: ndeval's names
    assert all(name in res.per_query for name in ["alpha_nDCG@10", "ERR_IA@10", "AP_IA", "P_IA@10", "StRecall@10"])
    for m, name in zip(measures, res.per_query):
        want = [expected[qid][m] for qid in sorted(expected)]
        np.testing.assert_allclose(res.per_query[name], want, rtol=1e-12, atol=1e-12, err_msg=m)
