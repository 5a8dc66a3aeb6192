"""Interpolated precision at the recall levels 0.0, 0.1, ..., 1.0 (trec_eval's iprec_at_recall_*)
and their mean (11pt_avg), for fixed orders.

Interpolated precision is the best precision at or after a recall level: a maximum over ranks,
which has no exact average over tie orders, so ties="average" refuses it. Every fixed order is
checked against a literal transcription of trec_eval 10.0's loop below, over every order the
tie mode allows (tests/oracle.py); trec_eval's own values on its test files are in
tests/conformance/test_trec_conformance.py. ``IPrec(trec_eval=9)@r`` and ``11pt(trec_eval=9)``
round the recall levels as trec_eval 9 (pytrec_eval) does, checked against the same loop with
trec_eval 9's rounding (and against pytrec_eval itself in tests/compat/test_pytrec_eval.py).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
import oracle

LEVELS = [f"IPrec@{level / 10:.1f}" for level in range(11)]
LEVELS_9 = [f"IPrec(trec_eval=9)@{level / 10:.1f}" for level in range(11)]
# the names of one version's levels and 11pt, and the number trec_eval adds before truncating l R
VERSIONS = {10: (LEVELS, "11pt", 0.5), 9: (LEVELS_9, "11pt(trec_eval=9)", 0.9)}


def _trec_eval_iprec(relevant, n_relevant, offset=0.5):
    """trec_eval's m_iprec_at_recall.c on one ranked list: walk it backwards keeping the best
    precision seen; a level whose (long) (level x R + offset)-th relevant item is reached takes
    it (offset 0.5 in trec_eval 10.0, 0.9 in trec_eval 9)."""
    cut = [int([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0][level] * n_relevant + offset)
           for level in range(11)]
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
@given(st.integers(0, 2**32 - 1), st.sampled_from(["stable", "optimistic", "pessimistic"]), st.sampled_from([9, 10]))
def test_hamming_ranking_against_trec_eval_loop(seed, ties, version):
    levels, eleven_point, offset = VERSIONS[version]
    rng = np.random.default_rng(seed)
    n_db, n_bits = int(rng.integers(1, 12)), int(rng.integers(1, 4))
    queries, database = rng.integers(0, 2, (3, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    query_labels, db_labels = rng.integers(0, 2, 3), rng.integers(0, 2, n_db)
    res = ft.evaluate(queries, database, query_labels, db_labels, metrics=levels + [eleven_point], ties=ties)
    for i in range(3):
        distances = (queries[i] != database).sum(axis=1)
        grades = (db_labels == query_labels[i]).astype(int)
        if not grades.any():
            continue
        orders = list(oracle.orderings(distances, grades, ties))
        expected = np.mean([_trec_eval_iprec([int(g > 0) for g in o], int(grades.sum()), offset) for o in orders],
                           axis=0)
        got = [res.per_query[name][i] for name in levels]
        np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
        assert res.per_query[eleven_point][i] == pytest.approx(expected.mean(), rel=1e-15)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["stable", "trec", "optimistic", "pessimistic"]),
       st.sampled_from([9, 10]))
def test_ranked_lists_against_trec_eval_loop(seed, ties, version):
    levels, eleven_point, offset = VERSIONS[version]
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 15))
    grades = rng.integers(0, 3, n).astype(float)
    scores = rng.integers(0, 4, n).astype(float)
    doc_ids = rng.permutation(n)
    unretrieved = rng.integers(0, 3, int(rng.integers(0, 3)))
    level = int(rng.integers(1, 3))
    res = ft.rank_evaluate(grades, scores, metrics=levels + [eleven_point], ties=ties, doc_ids=doc_ids,
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
    expected = _trec_eval_iprec([int(g >= level) for g in grades[order]], n_relevant, offset)
    np.testing.assert_allclose([res.per_query[name][0] for name in levels], expected, rtol=1e-15, atol=0)


def test_names_and_refusals():
    assert [m.name for m in ft.parse_metrics(["iprec_at_recall_0.50", "IPrec@1", "11pt_avg", "11pt"])] == [
        "IPrec@0.5", "IPrec@1.0", "11pt"]
    with pytest.raises(ValueError, match="recall levels 0.0, 0.1"):
        ft.parse_metrics("IPrec@0.25")
    assert [m.name for m in ft.parse_metrics(["iprec_at_recall(trec_eval=9)_0.6", "11pt_avg(trec_eval=9)",
                                              "IPrec(trec_eval=10)@0.6"])] == [
        "IPrec(trec_eval=9)@0.6", "11pt(trec_eval=9)", "IPrec@0.6"]
    for bad in ("IPrec(trec_eval=8)@0.6", "IPrec(p=0.5)@0.6", "11pt(trec_eval=True)"):
        with pytest.raises(ValueError, match="trec_eval=9 or 10"):
            ft.parse_metrics(bad)
    with pytest.raises(ValueError, match="trec_eval 9's and 10's recall levels in one call"):
        ft.rank_evaluate([1, 0], [0.5, 0.4], metrics=["IPrec@0.5", "11pt(trec_eval=9)"], ties="stable")
    # R = 2, the one relevant item found at rank 3: level 0.6 starts at relevant item
    # (long) (0.6 x 2 + 0.5) = 1 in trec_eval 10.0, (long) (0.6 x 2 + 0.9) = 2 in trec_eval 9
    res = ft.rank_evaluate([0, 0, 1], [0.9, 0.5, 0.1], metrics=["IPrec@0.6"], ties="stable", unretrieved=[[1]])
    res_9 = ft.rank_evaluate([0, 0, 1], [0.9, 0.5, 0.1], metrics=["IPrec(trec_eval=9)@0.6"], ties="stable",
                             unretrieved=[[1]])
    assert res.mean["IPrec@0.6"] == 1 / 3 and res_9.mean["IPrec(trec_eval=9)@0.6"] == 0.0
    with pytest.raises(ValueError, match="no exact average over tie orders; choose ties='stable'"):
        ft.rank_evaluate([1, 0], [0.5, 0.5], metrics=["IPrec@0.5"])
    with pytest.raises(ValueError, match="no exact average over tie orders"):
        ft.evaluate(np.array([[0, 1]]), np.array([[0, 1], [1, 1]]), [0], [0, 1], metrics=["11pt"])
    # one relevant item at rank 2 of 2: precision 1/2 from recall 0 to 1
    res = ft.rank_evaluate([0, 1], [0.9, 0.1], metrics=["IPrec@0.0", "IPrec@1.0", "11pt"], ties="stable")
    assert res.mean == {"IPrec@0.0": 0.5, "IPrec@1.0": 0.5, "11pt": 0.5}
