"""Bpref (Buckley & Voorhees 2004, trec_eval's bpref) and GMBpref (gm_bpref), tie-aware.

Per relevant item, 1 - min(n, R) / min(N_nr, R) with n the judged non-relevant items above it
and N_nr all judged non-relevant items of the query; unjudged items do not count. Inside a tie
the judged non-relevant items above a given relevant one are uniform on 0..u, which gives the
closed form; it is checked here against enumeration of every order inside ties (Hamming
rankings through tests/oracle.py, ranked lists with unjudged rows through a literal transcription
of trec_eval's loop below), and trec_eval's own values are in tests/conformance/test_trec_conformance.py.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
import oracle
from helpers import tie_orders


def _trec_eval_bpref(grades, judged, n_judged_nonrel, n_relevant, level=1):
    """trec_eval's m_bpref.c loop over one fixed order."""
    nonrel_so_far, bpref = 0, Fraction(0)
    for grade, is_judged in zip(grades, judged):
        if not is_judged:
            continue
        if grade < level:
            nonrel_so_far += 1
        elif nonrel_so_far > 0:
            bpref += 1 - Fraction(min(nonrel_so_far, n_relevant), min(n_judged_nonrel, n_relevant))
        else:
            bpref += 1
    return bpref / n_relevant if n_relevant else Fraction(0)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable", "optimistic", "pessimistic"]))
def test_ranked_lists_with_unjudged_rows_against_enumeration(seed, ties):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    grades = rng.integers(0, 3, n)
    judged = rng.random(n) < 0.7
    grades[~judged] = 0  # an unjudged document has no grade
    scores = rng.integers(0, 3, n).astype(float)
    level = int(rng.integers(1, 3))
    unretrieved = rng.integers(0, 3, int(rng.integers(0, 3)))
    n_relevant = int((grades >= level).sum() + (unretrieved >= level).sum())
    n_judged_nonrel = int((judged & (grades < level)).sum() + (unretrieved < level).sum())
    res = ft.rank_evaluate(grades.astype(float), scores, metrics=["Bpref"], ties=ties, judged=judged,
                           unretrieved=[unretrieved], relevance_level=level, empty="zero")
    orders = list(tie_orders(scores.tolist(), ties))
    if ties in ("optimistic", "pessimistic"):  # inside a tie, higher (lower) grades first
        sign = -1 if ties == "optimistic" else 1
        orders = [sorted(o, key=lambda i: (-scores[i], sign * grades[i])) for o in orders[:1]]
    values = [_trec_eval_bpref(grades[o], judged[o], n_judged_nonrel, n_relevant, level) for o in orders]
    expected = sum(values, Fraction(0)) / len(values)
    assert res.per_query["Bpref"][0] == pytest.approx(float(expected), rel=1e-13, abs=1e-15)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable", "optimistic", "pessimistic"]))
def test_hamming_ranking_against_enumeration(seed, ties):
    rng = np.random.default_rng(seed)
    n_db, n_bits = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    queries, database = rng.integers(0, 2, (3, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    query_labels, db_labels = rng.integers(0, 2, 3), rng.integers(0, 2, n_db)
    res = ft.evaluate(queries, database, query_labels, db_labels, metrics=["Bpref", "GMBpref"], ties=ties)
    for i in range(3):
        distances = (queries[i] != database).sum(axis=1)
        grades = (db_labels == query_labels[i]).astype(int)
        if not grades.any():
            continue
        expected = float(oracle.oracle_query_literal(distances, grades, "Bpref", ties=ties))
        assert res.per_query["Bpref"][i] == pytest.approx(expected, rel=1e-13, abs=1e-15)
    np.testing.assert_array_equal(res.per_query["GMBpref"], res.per_query["Bpref"])


def test_closed_form_of_one_tie():
    # R = 2 relevant, N_nr = 3 judged non-relevant; one unjudged row. Ranked: a judged
    # non-relevant row, then a tie of {relevant, judged non-relevant, unjudged, relevant}, then
    # two judged non-relevant rows. Each relevant row in the tie has 1 (before the tie) + X
    # judged non-relevant rows above it, X uniform on {0, 1}: 1 - min(1 + X, 2) / 2 averages 1/4
    res = ft.rank_evaluate([0, 1, 0, 0, 1, 0, 0], [3, 2, 2, 2, 2, 1, 0], metrics=["Bpref", "GMBpref"],
                           judged=np.array([True, True, True, False, True, True, True]))
    assert res.per_query["Bpref"][0] == pytest.approx(0.25, rel=1e-15)
    # no judged non-relevant document at all: every relevant retrieved one scores 1
    only = ft.rank_evaluate([1, 0, 1], [0.3, 0.2, 0.1], metrics=["Bpref"], judged=np.array([True, False, True]),
                            unretrieved=[[1]])
    assert only.mean["Bpref"] == pytest.approx(2 / 3, rel=1e-15)


def test_gmbpref_is_a_geometric_mean_and_errors():
    res = ft.rank_evaluate([1, 0, 0, 1, 1, 0], [0.9, 0.5, 0.4, 0.1, 0.8, 0.2], [3, 3], metrics=["Bpref", "gm_bpref"])
    values = res.per_query["Bpref"]
    assert res.mean["GMBpref"] == pytest.approx(math.prod(max(v, 1e-5) for v in values) ** 0.5, rel=1e-14)
    with pytest.raises(TypeError, match="judged must be a boolean array"):
        ft.rank_evaluate([1, 0], [0.5, 0.4], metrics=["Bpref"], judged=[1, 0])
    with pytest.raises(ValueError, match="judged must have one flag per row"):
        ft.rank_evaluate([1, 0], [0.5, 0.4], metrics=["Bpref"], judged=np.array([True]))
    with pytest.raises(ValueError, match="takes no cutoff"):
        ft.parse_metrics("Bpref@10")
