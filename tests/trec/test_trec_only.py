"""fasttie/trec/trec_only.py: trec_eval's own measures in trec.evaluate, their empty queries,
-c, and what has no exact average. The values against trec_eval's C loops are in
tests/measures/test_trec_only.py, against trec_eval itself in tests/conformance/test_trec_conformance.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fasttie as ft
from fasttie.errors import InputError

QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"x": 0}, "q3": {"y": 2}}
RUN = {"q1": {"a": 1.0, "b": 1.0, "c": 0.5}, "q2": {"x": 1.0}}


def test_empty_queries_follow_the_policy():
    """q2 has no relevant document (and no positive gain): 0 as trec_eval, or skipped, or 1;
    utility and unj are defined there."""
    names = ["binG", "Rprec_mult(x=1)", "Rndcg", "G", "ndcg_rel", "utility", "unj@2"]
    zero = ft.trec.evaluate(QRELS, RUN, names)
    skip = ft.trec.evaluate(QRELS, RUN, names, empty="skip")
    one = ft.trec.evaluate(QRELS, RUN, names, empty="one")
    for name in names[:5]:
        assert zero.per_query[name][1] == 0.0 and math.isnan(skip.per_query[name][1]) and one.per_query[name][1] == 1
        assert skip.mean[name] == zero.per_query[name][0]
    assert zero.per_query["utility"].tolist() == skip.per_query["utility"].tolist() == [1 - 2, -1]  # c unjudged
    assert zero.per_query["unj@2"].tolist() == [0.0, 0.0]
    with pytest.raises(InputError, match="no relevant document"):
        ft.trec.evaluate(QRELS, RUN, ["binG"], empty="error")


def test_complete_scores_a_missing_query_as_an_empty_ranking():
    """trec_eval -c evaluates a judged query missing from the run on an empty ranking: its
    utility is c * R, not 0."""
    res = ft.trec.evaluate(QRELS, RUN, ["utility(a=1, b=-1, c=-2, d=0)", "binG", "unj@5"], complete=True)
    assert res.query_ids == ["q1", "q2", "q3"]
    assert res.per_query["utility(a=1, b=-1, c=-2, d=0)"].tolist() == [1 - 2, -1, -2]
    assert res.per_query["binG"][2] == 0.0 and res.per_query["unj@5"][2] == 0.0


def test_tie_average_and_its_refusals():
    """a and b tie: binG averages a's place (1 / log2 2 or 1 / log2 3); G has no exact average, nor
    ndcg_rel with a negative gain."""
    res = ft.trec.evaluate(QRELS, RUN, ["binG"], ties="average")
    assert res.per_query["binG"][0] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    with pytest.raises(InputError, match="no exact average"):
        ft.trec.evaluate(QRELS, RUN, ["G"], ties="average")
    with pytest.raises(InputError, match="negative gain"):
        ft.trec.evaluate(QRELS, RUN, ["ndcg_rel(gains={0: -1})"], ties="average")
    assert ft.trec.evaluate(QRELS, RUN, ["ndcg_rel(gains={0: -1})"]).per_query["ndcg_rel(gains={0: -1})"][0] >= 0
    with pytest.raises(InputError, match="spread"):
        ft.trec.evaluate(QRELS, RUN, ["binG"], ties="average", spread=True)


def test_the_threads_do_not_change_the_values():
    rng = np.random.default_rng(3)
    qrels = {f"q{q}": {f"d{i}": int(rng.integers(-1, 4)) for i in range(30)} for q in range(40)}
    run = {f"q{q}": {f"d{i}": float(rng.integers(0, 5)) for i in range(40)} for q in range(40)}
    names = ["binG", "ndcg_rel", "Rndcg", "Rprec_mult(x=0.6)", "unj@10"]
    one = ft.trec.evaluate(qrels, run, names, ties="average", n_threads=1)
    three = ft.trec.evaluate(qrels, run, names, ties="average", n_threads=3)
    for name in names:
        np.testing.assert_array_equal(one.per_query[name], three.per_query[name])
