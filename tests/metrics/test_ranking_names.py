"""fasttie.metrics, the metric grammar: names and aliases, and parameters in ir_measures' syntax: a metric's own relevance level (``P(rel=2)@5``) and
gain (``nDCG(dcg='exp-log2')``, ``nDCG(gains={0: 0, 1: 1, 2: 3})``) give what the call-wide
options give, in one call beside metrics with the call's own settings."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
from helpers import random_codes


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable", "pessimistic"]))
def test_own_settings_equal_the_call_options(seed, ties):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    grades, scores = rng.integers(0, 4, n), rng.integers(0, 4, n).astype(float)
    group = [n // 2, n - n // 2] if n > 3 else None
    mixed = ft.rank_evaluate(grades, scores, group, ties=ties, metrics=[
        "AP", "P(rel=2)@3", "RR(rel=3)", "nDCG(dcg='exp-log2')@5", "nDCG@5", "Success(rel=2)@2", "RBP(rel=2)",
        "NumRet(rel=2)@4"])
    at_two = ft.rank_evaluate(grades, scores, group, ties=ties, relevance_level=2,
                              metrics=["P@3", "Success@2", "NumRelRet@4"])
    assert mixed.per_query["P(rel=2)@3"].tolist() == at_two.per_query["P@3"].tolist()
    assert mixed.per_query["Success(rel=2)@2"].tolist() == at_two.per_query["Success@2"].tolist()
    assert mixed.per_query["NumRet(rel=2)@4"].tolist() == at_two.per_query["NumRelRet@4"].tolist()
    at_three = ft.rank_evaluate(grades, scores, group, ties=ties, relevance_level=3, metrics=["RR"])
    assert mixed.per_query["RR(rel=3)"].tolist() == at_three.per_query["RR"].tolist()
    exp2 = ft.rank_evaluate(grades, scores, group, ties=ties, gain="exp2", metrics=["nDCG@5"])
    assert mixed.per_query["nDCG(dcg='exp-log2')@5"].tolist() == exp2.per_query["nDCG@5"].tolist()
    plain = ft.rank_evaluate(grades, scores, group, ties=ties, metrics=["AP", "nDCG@5"])
    assert mixed.per_query["AP"].tolist() == plain.per_query["AP"].tolist()
    assert mixed.per_query["nDCG@5"].tolist() == plain.per_query["nDCG@5"].tolist()
    # binary RBP at level 2: relevant items weigh 1
    binary = (grades >= 2).astype(float)
    assert np.allclose(mixed.per_query["RBP(rel=2)"],
                       ft.rank_evaluate(binary, scores, group, ties=ties, metrics=["RBP"]).per_query["RBP"])


def _ndcg_literal(order_gains, all_gains, k):
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(order_gains[:k]))
    ideal = sorted((g for g in all_gains if g > 0), reverse=True)
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:k]))
    return dcg / idcg if idcg else 0.0


@pytest.mark.parametrize("table", [{1: 3, 2: 9, 4: 4.5}, {1: 1, 2: 0.5}, {0: 0, 1: 2}])
def test_gain_tables_that_do_not_rise_with_the_grade(table):
    # trec_eval's ndcg.1=3,2=9,4=4.5: grade 4 gains less than grade 2, and the ideal order follows the gains
    grades = np.array([4, 0, 2, 1, 4, 3, 2])
    scores = np.array([0.9, 0.8, 0.8, 0.7, 0.5, 0.5, 0.1])
    name = f"nDCG(gains={table})@4"
    value = ft.rank_evaluate(grades, scores, metrics=[name]).mean
    gains = np.array([table.get(g, g) for g in grades], dtype=float)  # unlisted grades keep their own value
    tied = [list(np.flatnonzero(scores == s)) for s in sorted(set(scores), reverse=True)]
    orders = [sum(map(list, parts), []) for parts in itertools.product(*(itertools.permutations(t) for t in tied))]
    expected = np.mean([_ndcg_literal(list(gains[o]), list(gains), 4) for o in orders])
    assert list(value.values())[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name, message", [
    ("nDCG(dcg='exp')", "dcg must be one of"), ("nDCG(gains=[1, 2])", "gains must map grades"),
    ("P(rel=0)@5", "relevance level"), ("nDCG(dcg='log2', gains={1: 2})", "one of dcg=, gain=, gains="),
    ("Judged(rel=1)@5", "no parameter 'rel'"), ("P(rel=2, p=0.5)@5", "no parameter 'p'"),
    ("P(judged_only=1)@5", "judged_only must be True or False"),
    ("RBP(p=0.8, p=0.9)", "give p once"),
])
def test_bad_parameters(name, message):
    with pytest.raises(ValueError, match=message):
        ft.rank_evaluate([1, 0], [0.5, 0.4], metrics=name)


def test_hamming_ranking_refuses_per_metric_settings():
    codes = np.array([[0, 1], [1, 1], [0, 0]])
    with pytest.raises(ValueError, match="ranked lists"):
        ft.evaluate(codes[:1], codes, [0], [0, 1, 0], metrics="P(rel=2)@2")
    with pytest.raises(ValueError, match="judged_only are for ranked lists"):
        ft.evaluate(codes[:1], codes, [0], [0, 1, 0], metrics="AP(judged_only=True)")


def test_judged_only_names_and_views():
    assert ft.parse_metrics("AP(judged_only=True, rel=2)@10")[0].name == "AP(rel=2, judged_only=True)@10"
    assert ft.parse_metrics("P(judged_only=False)@5")[0].name == "P@5"
    # two queries; the second retrieves no judged document: under judged_only it keeps an empty ranking
    y_true, scores = [0, 1, 0, 0, 0], [0.9, 0.8, 0.7, 0.6, 0.5]
    judged = np.array([False, True, True, False, False])
    res = ft.rank_evaluate(y_true, scores, [3, 2], judged=judged, unretrieved=[[], [1]],
                           metrics=["RR", "RR(judged_only=True)", "NumRet(judged_only=True)", "R(judged_only=True)@1"])
    assert res.per_query["RR"].tolist() == [0.5, 0.0]
    assert res.per_query["RR(judged_only=True)"].tolist() == [1.0, 0.0]
    assert res.per_query["NumRet(judged_only=True)"].tolist() == [2.0, 0.0]
    assert res.per_query["R(judged_only=True)@1"].tolist() == [1.0, 0.0]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.sampled_from(["average", "stable"]))
def test_set_f_beta_is_the_weighted_harmonic_mean(seed, beta, ties):
    """ir_measures' SetF(beta=b) = (1 + b) P R / (b P + R), trec_eval's set_F.b (recall weighted
    by b, unsquared: trec_eval's m_set_F.c); linear in the hits for a fixed k and R, so its tie
    average is this of the tie-averaged P and R."""
    rng = np.random.default_rng(seed)
    y_true, scores = rng.integers(0, 2, 12).astype(float), rng.integers(0, 4, 12).astype(float)
    k = int(rng.integers(1, 14))
    res = ft.rank_evaluate(y_true, scores, metrics=[f"SetF(beta={beta})@{k}", f"P@{k}", f"R@{k}"], ties=ties,
                           unretrieved=[[1.0]])
    p, r = res.mean[f"P@{k}"], res.mean[f"R@{k}"]
    expected = (1 + beta) * p * r / (beta * p + r) if p + r > 0 else 0.0
    assert res.mean[f"SetF(beta={beta})@{k}"] == pytest.approx(expected, rel=1e-13, abs=1e-15)


def test_set_f_beta_names():
    assert ft.parse_metrics("SetF(beta=1)")[0].name == "F1"
    assert ft.parse_metrics("SetF(beta=0.25)")[0].name == "F1(beta=0.5)"  # set_F's b is F's beta squared
    assert ft.parse_metrics("F1(beta=0.25)")[0].name == "F1(beta=0.25)"
    with pytest.raises(ValueError, match="beta"):
        ft.parse_metrics("SetF(beta=-1)")
    with pytest.raises(ValueError, match="no parameter 'beta'"):
        ft.parse_metrics("P(beta=2)@5")


def test_relative_precision():
    """trec_eval's relative_P_k (P@k over min(k, R)) and set_relative_P (ir_measures'
    SetP(relative=True)): hits over min(k, R); trec_eval's own values are in
    tests/conformance/test_trec_conformance.py."""
    assert [m.name for m in ft.parse_metrics(["relative_P_5", "set_relative_P", "SetP(relative=True)"])] == [
        "P(relative=True)@5", "P(relative=True)"]
    y_true, scores = [1, 0, 1, 0, 0], [0.9, 0.5, 0.5, 0.2, 0.1]  # R = 3 with the document not retrieved
    res = ft.rank_evaluate(y_true, scores, metrics=["P(relative=True)@2", "P(relative=True)@4", "P(relative=True)"],
                           unretrieved=[[1]])
    assert res.per_query["P(relative=True)@2"][0] == pytest.approx(1.5 / 2, rel=1e-15)  # E[hits@2] = 1.5
    assert res.per_query["P(relative=True)@4"][0] == pytest.approx(2 / 3, rel=1e-15)
    assert res.per_query["P(relative=True)"][0] == pytest.approx(2 / 3, rel=1e-15)
    codes = np.array([[0, 1], [1, 1], [0, 0]])
    hashed = ft.evaluate(codes[:1], codes, [0], [0, 1, 0], metrics=["P(relative=True)@2", "P@2"])
    assert hashed.mean["P(relative=True)@2"] == hashed.mean["P@2"] == 0.75  # R = k = 2; the tie at distance 1
    with pytest.raises(ValueError, match="relative must be True or False"):
        ft.parse_metrics("P(relative='yes')@5")


def test_metric_names_and_aliases():
    names = [m.name for m in ft.parse_metrics(["mAP@1000", "map@ALL", "ndcg@10", "precision@5", "recall@5",
                                                "mrr", "P@[1, 10,100]", "P(radius=2)", "rprec", "WAP"])]
    assert names == ["AP@1000", "AP", "nDCG@10", "P@5", "R@5", "RR", "P@1", "P@10", "P@100", "P(radius=2)",
                     "Rprec", "WAP"]
    q, db, ql, dl = random_codes()
    res = ft.evaluate(q, db, ql, dl, metrics=["mAP@10", "AP@10"])
    assert list(res.mean) == ["mAP@10", "AP@10"] and res.mean["mAP@10"] == res.mean["AP@10"]  # computed once
