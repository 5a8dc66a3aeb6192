"""Interpolated precision at the recall levels 0.0, 0.1, ..., 1.0 (trec_eval's iprec_at_recall_*)
and their mean (11pt_avg), for fixed orders.

Interpolated precision is the best precision at or after a recall level: a maximum over ranks,
which has no exact average over tie orders, so ties="average" refuses it. Every fixed order is
checked against a literal transcription of trec_eval 10.0's loop below, over every order the
tie mode allows (tests/oracle.py); trec_eval's own values on its test files are in
tests/conformance/test_trec_conformance.py.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
import oracle

LEVELS = [f"IPrec@{level / 10:.1f}" for level in range(11)]


def _trec_eval_iprec(relevant, n_relevant):
    """trec_eval's m_iprec_at_recall.c on one ranked list: walk it backwards keeping the best
    precision seen; a level whose (level x R + 0.5)-th relevant item is reached takes it."""
    cut = [int(level / 10 * n_relevant + 0.5) for level in range(11)]
    values, current = [0.0] * 11, 10
    retrieved = sum(relevant)
    while current >= 0 and cut[current] > retrieved:
        current -= 1
    best = retrieved / len(relevant) if relevant else 0.0
    so_far, i = retrieved, len(relevant)
    while i > 0 and so_far > 0:
        best = max(best, so_far / i)
        if relevant[i - 1]:
            while current >= 0 and so_far == cut[current]:
                values[current] = best
                current -= 1
            so_far -= 1
        i -= 1
    while current >= 0:
        values[current] = best
        current -= 1
    return values


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["stable", "optimistic", "pessimistic"]))
def test_hamming_ranking_against_trec_eval_loop(seed, ties):
    rng = np.random.default_rng(seed)
    n_db, n_bits = int(rng.integers(1, 12)), int(rng.integers(1, 4))
    queries, database = rng.integers(0, 2, (3, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    query_labels, db_labels = rng.integers(0, 2, 3), rng.integers(0, 2, n_db)
    res = ft.evaluate(queries, database, query_labels, db_labels, metrics=LEVELS + ["11pt"], ties=ties)
    for i in range(3):
        distances = (queries[i] != database).sum(axis=1)
        grades = (db_labels == query_labels[i]).astype(int)
        if not grades.any():
            continue
        orders = list(oracle.orderings(distances, grades, ties))
        expected = np.mean([_trec_eval_iprec([int(g > 0) for g in o], int(grades.sum())) for o in orders], axis=0)
        got = [res.per_query[name][i] for name in LEVELS]
        np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
        assert res.per_query["11pt"][i] == pytest.approx(expected.mean(), rel=1e-15)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["stable", "trec", "optimistic", "pessimistic"]))
def test_ranked_lists_against_trec_eval_loop(seed, ties):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 15))
    grades = rng.integers(0, 3, n).astype(float)
    scores = rng.integers(0, 4, n).astype(float)
    doc_ids = rng.permutation(n)
    unretrieved = rng.integers(0, 3, int(rng.integers(0, 3)))
    level = int(rng.integers(1, 3))
    res = ft.rank_evaluate(grades, scores, metrics=LEVELS + ["11pt"], ties=ties, doc_ids=doc_ids,
                           unretrieved=[unretrieved], relevance_level=level)
    if ties == "stable":
        order = np.argsort(-scores, kind="stable")
    elif ties == "trec":
        order = np.lexsort((-doc_ids, -scores))
    else:  # higher (optimistic) or lower grades first inside a tie
        order = np.lexsort(((-1 if ties == "optimistic" else 1) * grades, -scores))
    n_relevant = int((grades >= level).sum() + (unretrieved >= level).sum())
    if n_relevant == 0:
        return
    expected = _trec_eval_iprec([int(g >= level) for g in grades[order]], n_relevant)
    np.testing.assert_allclose([res.per_query[name][0] for name in LEVELS], expected, rtol=1e-15, atol=0)


def test_names_and_refusals():
    assert [m.name for m in ft.parse_metrics(["iprec_at_recall_0.50", "IPrec@1", "11pt_avg", "11pt"])] == [
        "IPrec@0.5", "IPrec@1.0", "11pt"]
    with pytest.raises(ValueError, match="recall levels 0.0, 0.1"):
        ft.parse_metrics("IPrec@0.25")
    with pytest.raises(ValueError, match="no exact average over tie orders; choose ties='stable'"):
        ft.rank_evaluate([1, 0], [0.5, 0.5], metrics=["IPrec@0.5"])
    with pytest.raises(ValueError, match="no exact average over tie orders"):
        ft.evaluate(np.array([[0, 1]]), np.array([[0, 1], [1, 1]]), [0], [0, 1], metrics=["11pt"])
    # one relevant item at rank 2 of 2: precision 1/2 from recall 0 to 1
    res = ft.rank_evaluate([0, 1], [0.9, 0.1], metrics=["IPrec@0.0", "IPrec@1.0", "11pt"], ties="stable")
    assert res.mean == {"IPrec@0.0": 0.5, "IPrec@1.0": 0.5, "11pt": 0.5}
