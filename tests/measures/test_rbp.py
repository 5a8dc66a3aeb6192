"""Rank-biased precision (Moffat & Zobel 2008), its residual, and Judged@k, tie-aware.

RBP@k = (1 - p) sum_{i<=k} p^(i-1) gain_i, gains divided by the query's largest when that is
above 1 (trec_eval's rbp); the residual adds the weight of the unjudged documents of the top k
and the tail p^min(k, N); Judged@k is the judged documents of the top k over min(k, N)
(ir_measures).
Each is linear in what sits at each rank, so inside a tie every rank holds the tie's mean: the
closed form is checked here against enumeration of every order inside ties (exact fractions),
for ranked lists with unjudged rows and for Hamming rankings; trec_eval's own values (rbp,
rbp_resid) are in tests/conformance/test_trec_conformance.py, ir_measures' Judged@k below.
"""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
import oracle
from helpers import tie_orders

P = Fraction(4, 5)  # the default persistence, exactly


def _literal(grades, judged, k, p=P, top=None):
    """RBP@k, its residual and Judged@k of one fixed order, in exact fractions."""
    top = max(grades, default=0) if top is None else top
    scale = max(1, top)
    depth = len(grades) if k is None else min(k, len(grades))
    rbp = sum((Fraction(int(g)) / scale * (1 - p) * p ** i for i, g in enumerate(grades[:depth])), Fraction(0))
    residual = sum(((1 - p) * p ** i for i in range(depth) if not judged[i]), Fraction(0)) + p ** depth
    judged_at_k = Fraction(sum(bool(j) for j in judged[:depth]), depth)
    return rbp, residual, judged_at_k


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable"]))
def test_ranked_lists_with_unjudged_rows_against_enumeration(seed, ties):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    grades = rng.integers(0, 4, n)
    judged = rng.random(n) < 0.7
    grades[~judged] = 0  # an unjudged document has no grade
    scores = rng.integers(0, 3, n).astype(float)
    unretrieved = rng.integers(0, 4, int(rng.integers(0, 3)))
    top = int(max(grades.max(), unretrieved.max(initial=0)))
    cutoffs = sorted({int(rng.integers(1, n + 3)), n})
    names = [f"{base}@{k}" for base in ("RBP", "RBP(p=0.5)", "RBPResid", "Judged") for k in cutoffs] + ["RBP"]
    result = ft.rank_evaluate(grades, scores, metrics=names, ties=ties, judged=judged, unretrieved=[unretrieved])
    orders = list(tie_orders(list(scores), ties))
    for k in cutoffs:
        for p, name in ((P, f"RBP@{k}"), (Fraction(1, 2), f"RBP(p=0.5)@{k}")):
            expected = sum((_literal(grades[o], judged[o], k, p, top)[0] for o in orders), Fraction(0)) / len(orders)
            assert result.mean[name] == pytest.approx(float(expected), rel=1e-12, abs=1e-15), name
        residual = sum((_literal(grades[o], judged[o], k)[1] for o in orders), Fraction(0)) / len(orders)
        judged_at_k = sum((_literal(grades[o], judged[o], k)[2] for o in orders), Fraction(0)) / len(orders)
        assert result.mean[f"RBPResid@{k}"] == pytest.approx(float(residual), rel=1e-12)
        assert result.mean[f"Judged@{k}"] == pytest.approx(float(judged_at_k), rel=1e-12)
    # the whole list: @k past its end is the same number
    assert result.mean["RBP"] == result.mean[f"RBP@{n}"]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable", "optimistic", "pessimistic"]))
def test_hamming_ranking_against_enumeration(seed, ties):
    rng = np.random.default_rng(seed)
    n_bits, n_db = int(rng.integers(1, 4)), int(rng.integers(1, 8))
    query = rng.integers(0, 2, (1, n_bits))
    database = rng.integers(0, 2, (n_db, n_bits))
    labels = rng.integers(0, 2, (n_db, 3))
    query_labels = rng.integers(0, 2, (1, 3))
    query_labels[0, 0] = 1
    grades = oracle.grades_from_labels(query_labels, labels)[0]  # shared labels, graded
    distances = oracle.hamming_distances(query, database)[0]
    k = int(rng.integers(1, n_db + 2))
    names = [f"RBP@{k}", "RBP(p=0.95)", f"RBPResid@{k}", f"Judged@{k}"]
    result = ft.evaluate(query, database, query_labels, labels, metrics=names, ties=ties, gain="linear")
    orders = list(oracle.orderings(distances, grades, ties))
    everything_judged = [True] * n_db
    expected_rbp = sum((_literal(o, everything_judged, k)[0] for o in orders), Fraction(0)) / len(orders)
    expected_long = sum((_literal(o, everything_judged, None, Fraction(19, 20))[0] for o in orders),
                        Fraction(0)) / len(orders)
    assert result.mean[f"RBP@{k}"] == pytest.approx(float(expected_rbp), rel=1e-12, abs=1e-15)
    assert result.mean["RBP(p=0.95)"] == pytest.approx(float(expected_long), rel=1e-12, abs=1e-15)
    assert result.mean[f"RBPResid@{k}"] == pytest.approx(0.8 ** min(k, n_db), rel=1e-12)
    assert result.mean[f"Judged@{k}"] == 1.0  # every item of a Hamming ranking is judged


def test_exp2_gains_are_divided_by_the_largest():
    # gain 2**g - 1: grades 2, 0, 1 -> gains 3, 0, 1, over 3
    value = ft.rank_evaluate([2, 0, 1], [3.0, 2.0, 1.0], metrics="RBP(p=0.5)", gain="exp2").mean["RBP(p=0.5)"]
    assert value == pytest.approx(0.5 * (1 + 0.25 / 3))


def test_several_persistences_at_one_cutoff_share_one_pass():
    grades, scores = [1, 0, 1, 1, 0], [0.9, 0.8, 0.8, 0.5, 0.1]
    both = ft.rank_evaluate(grades, scores, metrics=["RBP(p=0.5)@3", "RBP(p=0.9)@3", "P@3"]).mean
    for name in both:
        assert both[name] == ft.rank_evaluate(grades, scores, metrics=[name]).mean[name]


def test_queries_without_relevant_items_keep_judged_and_residual():
    # no relevant item: RBP is 0, while Judged and the residual are what they are (trec_eval's rbp_resid)
    result = ft.rank_evaluate([0, 0], [0.5, 0.4], metrics=["RBP", "RBPResid", "Judged@2"],
                              judged=np.array([True, False]))
    assert result.mean == {"RBP": 0.0, "RBPResid": pytest.approx(0.2 * 0.8 + 0.64), "Judged@2": 0.5}
    skipped = ft.rank_evaluate([0, 0], [0.5, 0.4], metrics=["RBPResid"], empty="skip").per_query["RBPResid"]
    assert np.isnan(skipped).all()


@pytest.mark.parametrize("name, message", [
    ("RBP(p=1)", "0 < p < 1"), ("RBP(p=0)", "0 < p < 1"), ("RBP(p='a')", "0 < p < 1"),
    ("RBP(q=0.5)", "no parameter 'q'"), ("RBP(0.5)", "name=value"), ("AP(p=0.5)", "no parameter 'p'"),
])
def test_bad_parameters_name_the_fix(name, message):
    with pytest.raises(ValueError, match=message):
        ft.rank_evaluate([1, 0], [0.5, 0.4], metrics=name)


def test_trec_eval_names():
    from fasttie.metrics import parse_metrics
    assert [m.name for m in parse_metrics(["rbp", "rbp_resid", "rbp.p=0.95", "RBP", "RBP(p=0.8)@10"])] == [
        "RBP(p=0.9)", "RBPResid(p=0.9)", "RBP(p=0.95)", "RBP", "RBP@10"]


def test_judged_issue_example():
    """A negative grade is a judgment (ir_measures), and fewer than k documents divide by what
    is retrieved: 2 judged of the 2 top documents, 3 of the 4 retrieved."""
    qrels = {"1": {"a": -1, "b": 0, "c": 1}}
    run = {"1": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.5}}
    assert ft.trec.evaluate(qrels, run, ["Judged@2", "Judged@10"]).mean == {"Judged@2": 1.0, "Judged@10": 0.75}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_judged_against_ir_measures(seed):
    """Judged@k against ir_measures' own (its judged provider), per query, on random qrels with
    negative grades and runs shorter and longer than k (distinct scores: ir_measures breaks ties
    by document id ascending, trec_eval's order descending)."""
    ir_measures = pytest.importorskip("ir_measures", reason="the Judged@k reference needs ir_measures")
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(12)]
    qrels, run = {}, {}
    for q in range(4):
        judged = rng.choice(docs, int(rng.integers(1, 8)), replace=False)
        qrels[f"q{q}"] = {d: int(rng.integers(-1, 3)) for d in judged}
        retrieved = rng.choice(docs, int(rng.integers(1, 12)), replace=False)
        run[f"q{q}"] = {d: float(s) for d, s in zip(retrieved, rng.permutation(len(retrieved)))}
    cutoffs = [1, 3, 5, 10]
    expected = {(m.query_id, str(m.measure)): m.value
                for m in ir_measures.iter_calc([ir_measures.Judged @ k for k in cutoffs], qrels, run)}
    for ties in ("trec", "average"):
        result = ft.trec.evaluate(qrels, run, [f"Judged@{k}" for k in cutoffs], ties=ties)
        for k in cutoffs:
            for qid, value in zip(result.query_ids, result.per_query[f"Judged@{k}"]):
                assert value == pytest.approx(expected[(qid, f"Judged@{k}")], rel=1e-12), (qid, k, ties)
