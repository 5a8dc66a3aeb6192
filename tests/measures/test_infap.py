"""infAP (Yilmaz & Aslam 2006, trec_eval's m_infAP.c), tie-aware.

A retrieved document is relevant, judged non-relevant, pooled but not judged (qrels relevance
-1: sampled out of the pool) or outside the pool. The exact tie average (fasttie/_kernels/infap.py,
docs/ties.md "infAP") is checked against a literal transcription of trec_eval's loop in exact
fractions, averaged over every order inside ties (small lists) or over every distinct
arrangement of the judgment states of one tie, weighted by its multiplicity (ties of 10 to 12
items). trec_eval's own values (122 per-query and ``all`` values, pooled-unjudged lines
included) are in tests/conformance/test_trec_conformance.py, pytrec_eval's on random runs with negative
grades in tests/trec/test_join.py.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
from helpers import tie_orders

EPSILON = Fraction(1, 100000)  # trec_eval's INFAP_EPSILON
RELEVANT, NONREL, POOLED, UNPOOLED = "R", "N", "U", "X"


def trec_eval_infap(states, n_relevant):
    """trec_eval's te_calc_infap over one fixed order of judgment states, exactly."""
    rel, nonrel, pooled, total = 0, 0, 0, Fraction(0)
    for j, state in enumerate(states):
        if state == UNPOOLED:
            continue
        if state == POOLED:
            pooled += 1
            continue
        if state == NONREL:
            nonrel += 1
            continue
        rel += 1
        if j == 0:
            total += 1
        else:
            total += Fraction(1, j + 1) + Fraction(j, j + 1) * Fraction(rel - 1 + nonrel + pooled, j) * (
                (rel - 1 + EPSILON) / (rel - 1 + nonrel + 2 * EPSILON))
    return total / n_relevant if n_relevant else Fraction(0)


def inputs(states, level=1):
    """rank_evaluate's y_true / judged / pooled of a list of states."""
    states = np.asarray(states)
    y_true = np.where(states == RELEVANT, float(level), 0.0)
    return y_true, np.isin(states, [RELEVANT, NONREL]), states != UNPOOLED


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable", "optimistic", "pessimistic"]))
def test_ranked_lists_against_enumeration(seed, ties):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    states = rng.choice([RELEVANT, NONREL, POOLED, UNPOOLED], n).tolist()
    scores = rng.integers(0, 3, n).astype(float)
    missed = int(rng.integers(0, 3))  # relevant documents the run does not retrieve
    y_true, judged, pooled = inputs(states)
    res = ft.rank_evaluate(y_true, scores, metrics=["infAP"], ties=ties, judged=judged, pooled=pooled,
                           unretrieved=[[1.0] * missed])
    n_relevant = states.count(RELEVANT) + missed
    orders = list(tie_orders(scores.tolist(), ties))
    if ties in ("optimistic", "pessimistic"):  # inside a tie, relevant items first (last)
        sign = -1 if ties == "optimistic" else 1
        orders = [sorted(o, key=lambda i: (-scores[i], sign * (states[i] == RELEVANT))) for o in orders[:1]]
    values = [trec_eval_infap([states[i] for i in o], n_relevant) for o in orders]
    expected = sum(values, Fraction(0)) / len(values)
    assert res.per_query["infAP"][0] == pytest.approx(float(expected), rel=1e-12, abs=1e-15)


def _sequences(counts):
    """Every distinct sequence of states with these counts ({state: count})."""
    if not any(counts.values()):
        yield ()
        return
    for state in [s for s, c in counts.items() if c]:
        for rest in _sequences({**counts, state: counts[state] - 1}):
            yield (state,) + rest


def _arrangements(counts):
    """Every distinct sequence of the states with these counts, and its probability: the
    orders of the interchangeable items that give it over all orders of the tie."""
    weight = Fraction(math.prod(math.factorial(c) for c in counts.values()), math.factorial(sum(counts.values())))
    for seq in _sequences(counts):
        yield seq, weight


@pytest.mark.parametrize("before, tie, after", [
    ([NONREL, RELEVANT, POOLED], {RELEVANT: 3, NONREL: 3, POOLED: 2, UNPOOLED: 2}, [RELEVANT]),
    ([], {RELEVANT: 4, NONREL: 2, POOLED: 3, UNPOOLED: 1}, [NONREL, RELEVANT]),
    ([UNPOOLED, UNPOOLED], {RELEVANT: 5, NONREL: 0, POOLED: 4, UNPOOLED: 3}, []),
    ([RELEVANT, RELEVANT], {RELEVANT: 2, NONREL: 7, POOLED: 0, UNPOOLED: 2}, [POOLED, RELEVANT]),
])
def test_one_wide_tie_against_its_arrangements(before, tie, after):
    """A tie of 10 to 12 items between fixed documents: the expectation over the 10! to 12!
    orders is the mean over the distinct state sequences, weighted by multiplicity."""
    states = before + [s for s, c in tie.items() for _ in range(c)] + after
    scores = [10.0 - i for i in range(len(before))] + [5.0] * sum(tie.values()) + [-1.0 - i for i in range(len(after))]
    y_true, judged, pooled = inputs(states)
    got = ft.rank_evaluate(y_true, np.array(scores), metrics=["infAP"], judged=judged, pooled=pooled,
                           unretrieved=[[2.0]]).per_query["infAP"][0]
    n_relevant = states.count(RELEVANT) + 1
    expected = sum(weight * trec_eval_infap(before + list(seq) + after, n_relevant)
                   for seq, weight in _arrangements(tie))
    assert got == pytest.approx(float(expected), rel=1e-13)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_without_ties_every_mode_is_trec_evals_loop_to_the_last_bits(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    states = rng.choice([RELEVANT, NONREL, POOLED, UNPOOLED], n).tolist()
    y_true, judged, pooled = inputs(states, level=2)
    scores = rng.permutation(n).astype(float)
    expected = float(trec_eval_infap([states[i] for i in np.argsort(-scores)], states.count(RELEVANT)))
    for ties in ("average", "stable", "optimistic", "pessimistic"):
        res = ft.rank_evaluate(y_true, scores, metrics=["infAP(rel=2)", "infAP"], ties=ties, judged=judged,
                               pooled=pooled)
        assert res.per_query["infAP(rel=2)"][0] == pytest.approx(expected, rel=1e-15, abs=0)
        assert res.per_query["infAP"][0] == pytest.approx(expected, rel=1e-15, abs=0)  # grade 2 >= level 1


def test_without_pool_information_infap_is_near_ap():
    """Every retrieved document judged: infAP's estimate of the precision above each relevant
    document is (R + eps) / (R + N + 2 eps), the precision itself up to eps."""
    rng = np.random.default_rng(5)
    y_true, scores = rng.integers(0, 2, 200).astype(float), rng.integers(0, 20, 200).astype(float)
    res = ft.rank_evaluate(y_true, scores, [50] * 4, metrics=["infAP", "AP"])
    np.testing.assert_allclose(res.per_query["infAP"], res.per_query["AP"], atol=1e-5)
    assert not np.array_equal(res.per_query["infAP"], res.per_query["AP"])


def test_trec_evaluate_reads_pooled_unjudged_documents():
    # d2 is pooled but not judged (-1), d4 outside the pool: after the relevant d1 and d3
    # (ranks 1 and 3), d5 at rank 5 sees R=2, N=0, U=1 above it
    qrels = {"q": {"d1": 1, "d2": -1, "d3": 1, "d5": 1, "d6": 0}}
    run = {"q": {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d4": 0.6, "d5": 0.5}}
    res = ft.trec.evaluate(qrels, run, ["infAP", "num_nonrel_judged_ret", "AP"])
    eps = 1e-5
    third = 1 / 3 + (2 / 3) * (2 / 2) * ((1 + eps) / (1 + 2 * eps))
    fifth = 1 / 5 + (4 / 5) * (3 / 4) * ((2 + eps) / (2 + 2 * eps))
    assert res.mean["infAP"] == pytest.approx((1 + third + fifth) / 3, rel=1e-15)
    assert res.mean["NumNonRelJudgedRet"] == 0.0
    only = ft.trec.evaluate(qrels, run, ["infAP"], judged_only=True)  # -J drops d2 and d4: d1, d3, d5 on top
    second = 1 / 2 + (1 / 2) * (1 / 1) * ((1 + eps) / (1 + 2 * eps))
    third = 1 / 3 + (2 / 3) * (2 / 2) * ((2 + eps) / (2 + 2 * eps))
    assert only.mean["infAP"] == pytest.approx((1 + second + third) / 3, rel=1e-15)


def test_num_nonrel_judged_ret_counts_judged_documents_below_the_level():
    y_true = np.array([2.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    judged = np.array([True, True, True, False, True, True])
    scores = np.array([6.0, 5.0, 5.0, 5.0, 2.0, 1.0])
    res = ft.rank_evaluate(y_true, scores, metrics=["NumNonRelJudgedRet", "NumNonRelJudgedRet(rel=2)",
                                                    "NumNonRelJudgedRet@3"], judged=judged)
    assert res.per_query["NumNonRelJudgedRet"][0] == 2.0
    assert res.per_query["NumNonRelJudgedRet(rel=2)"][0] == 4.0
    # the top 3 hold d0 and two of the tie {relevant, judged non-relevant, unjudged}: E = 2/3
    assert res.per_query["NumNonRelJudgedRet@3"][0] == pytest.approx(2 / 3, rel=1e-15)


def test_infap_errors():
    with pytest.raises(ValueError, match="takes no cutoff"):
        ft.parse_metrics("infAP@10")
    with pytest.raises(TypeError, match="pooled must be a boolean array"):
        ft.rank_evaluate([1, 0], [0.5, 0.4], metrics=["infAP"], pooled=[1, 0])
    with pytest.raises(ValueError, match="pooled must have one flag per row"):
        ft.rank_evaluate([1, 0], [0.5, 0.4], metrics=["infAP"], pooled=np.array([True]))
    with pytest.raises(ValueError, match="infAP.*only ranked lists"):
        ft.evaluate(np.zeros((2, 8)), np.ones((5, 8)), [0, 1], [1, 1, 0, 0, 1], metrics=["infAP"])


def test_query_without_relevant_documents_follows_the_empty_policy():
    args = ([0.0, 0.0, 1.0], [0.5, 0.4, 0.3], [2, 1])
    assert ft.rank_evaluate(*args, metrics=["infAP"]).per_query["infAP"].tolist() == [0.0, 1.0]
    assert np.isnan(ft.rank_evaluate(*args, metrics=["infAP"], empty="skip").per_query["infAP"][0])
    assert ft.rank_evaluate(*args, metrics=["infAP"], empty="one").per_query["infAP"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="relevant"):
        ft.rank_evaluate(*args, metrics=["infAP"], empty="error")
