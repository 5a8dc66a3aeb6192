"""Interpolated precision at any recall level in [0, 1] (trec_eval's iprec_at_recall_*; by default
0.0, 0.1, ..., 1.0) and the mean of those eleven (11pt_avg), for fixed orders.

Interpolated precision is the best precision at or after a recall level: a maximum over ranks,
which has no exact average over tie orders, so ties="average" refuses it. Every fixed order is
checked against a literal transcription of trec_eval 10.0's loop below, over every order the
tie mode allows (tests/oracle.py); trec_eval's own values on its test files are in
tests/conformance/test_trec_conformance.py. ``IPrec(trec_eval=9)@r`` and ``11pt(trec_eval=9)``
round the recall levels as trec_eval 9 (pytrec_eval) does, checked against the same loop with
trec_eval 9's rounding (and against pytrec_eval itself in tests/compat/test_pytrec_eval.py).
"""

from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
import oracle

LEVELS = [f"IPrec@{level / 10:.1f}" for level in range(11)]
LEVELS_9 = [f"IPrec(trec_eval=9)@{level / 10:.1f}" for level in range(11)]
STANDARD = [level / 10 for level in range(11)]
# the names of one version's levels and 11pt, and the version
VERSIONS = {10: (LEVELS, "11pt", 10), 9: (LEVELS_9, "11pt(trec_eval=9)", 9)}
# levels where the two roundings part (0.25 R, 0.35 R, ... end in .5 or .x5 for small R) and others
SOME_LEVELS = [0.05, 0.15, 0.25, 0.33, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95, 0.999, 0.001, 1 / 3, 2 / 3]


def _trec_eval_iprec(relevant, n_relevant, version=10, levels=STANDARD):
    """trec_eval's m_iprec_at_recall.c on one ranked list: walk it backwards keeping the best
    precision seen; a level (``levels`` ascending) whose cutoff-th relevant item is reached takes
    it, the cutoff lround(level x R) in trec_eval 10.0 (rounded here in decimal from the double's
    exact value, half away from zero) and (long) (level x R + 0.9) in trec_eval 9."""
    if version == 10:
        cut = [int(Decimal(level * n_relevant).to_integral_value(rounding=ROUND_HALF_UP)) for level in levels]
    else:
        cut = [int(level * n_relevant + 0.9) for level in levels]
    values, current = [0.0] * len(levels), len(levels) - 1
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


def _hamming_case(rng, ties, metrics, max_db):
    """A random Hamming ranking of 3 queries (1 to max_db - 1 items) evaluated at ``metrics``: the
    Result and, per query with a relevant item, (query, the relevance of the items in each order
    the tie mode allows, R)."""
    n_db, n_bits = int(rng.integers(1, max_db)), int(rng.integers(1, 4))
    queries, database = rng.integers(0, 2, (3, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    query_labels, db_labels = rng.integers(0, 2, 3), rng.integers(0, 2, n_db)
    res = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties)
    cases = []
    for i in range(3):
        distances = (queries[i] != database).sum(axis=1)
        grades = (db_labels == query_labels[i]).astype(int)
        if grades.any():
            orders = [[int(g > 0) for g in o] for o in oracle.orderings(distances, grades, ties)]
            cases.append((i, orders, int(grades.sum())))
    return res, cases


def _ranked_order(grades, scores, doc_ids, ties):
    """The order of a ranked list under a fixed tie mode."""
    if ties == "stable":
        return np.argsort(-scores, kind="stable")
    if ties == "trec":
        return np.lexsort((-doc_ids, -scores))
    return np.lexsort(((-1 if ties == "optimistic" else 1) * grades, -scores))  # higher (optimistic) grades first


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["stable", "optimistic", "pessimistic"]), st.sampled_from([9, 10]))
def test_hamming_ranking_against_trec_eval_loop(seed, ties, version):
    levels, eleven_point, version = VERSIONS[version]
    res, cases = _hamming_case(np.random.default_rng(seed), ties, levels + [eleven_point], 12)
    for i, orders, n_relevant in cases:
        expected = np.mean([_trec_eval_iprec(o, n_relevant, version) for o in orders], axis=0)
        got = [res.per_query[name][i] for name in levels]
        np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
        assert res.per_query[eleven_point][i] == pytest.approx(expected.mean(), rel=1e-15)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["stable", "trec", "optimistic", "pessimistic"]),
       st.sampled_from([9, 10]))
def test_ranked_lists_against_trec_eval_loop(seed, ties, version):
    levels, eleven_point, version = VERSIONS[version]
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 15))
    grades = rng.integers(0, 3, n).astype(float)
    scores = rng.integers(0, 4, n).astype(float)
    doc_ids = rng.permutation(n)
    unretrieved = rng.integers(0, 3, int(rng.integers(0, 3)))
    level = int(rng.integers(1, 3))
    res = ft.rank_evaluate(grades, scores, metrics=levels + [eleven_point], ties=ties, doc_ids=doc_ids,
                           unretrieved=[unretrieved], relevance_level=level)
    order = _ranked_order(grades, scores, doc_ids, ties)
    n_relevant = int((grades >= level).sum() + (unretrieved >= level).sum())
    if n_relevant == 0:
        return
    expected = _trec_eval_iprec([int(g >= level) for g in grades[order]], n_relevant, version)
    np.testing.assert_allclose([res.per_query[name][0] for name in levels], expected, rtol=1e-15, atol=0)


def test_names_and_refusals():
    assert [m.name for m in ft.parse_metrics(["iprec_at_recall_0.50", "IPrec@1", "11pt_avg", "11pt"])] == [
        "IPrec@0.5", "IPrec@1.0", "11pt"]
    assert [m.name for m in ft.parse_metrics(["IPrec@0.25", "iprec_at_recall_0.333", "IPrec@.30",
                                              "IPrec(trec_eval=9)@0.05"])] == [
        "IPrec@0.25", "IPrec@0.333", "IPrec@0.3", "IPrec(trec_eval=9)@0.05"]
    for bad in ("IPrec@1.5", "IPrec@1.0001"):
        with pytest.raises(ValueError, match="a recall level from 0 to 1"):
            ft.parse_metrics(bad)
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


def _some_levels(rng):
    """1 to 5 distinct levels, ascending: from SOME_LEVELS, drawn in [0, 1], or standard ones."""
    pool = SOME_LEVELS + STANDARD + [float(round(x, 3)) for x in rng.random(3)]
    return sorted({float(x) for x in rng.choice(pool, int(rng.integers(1, 6)))})


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["stable", "optimistic", "pessimistic"]), st.sampled_from([9, 10]))
def test_any_level_hamming_ranking_against_trec_eval_loop(seed, ties, version):
    """Levels other than the eleven (IPrec@0.25, @0.333, ...) beside 11pt, which stays the mean of
    the eleven, against the loop over every order the tie mode allows."""
    _, eleven_point, version = VERSIONS[version]
    prefix = "IPrec" if version == 10 else "IPrec(trec_eval=9)"
    rng = np.random.default_rng(seed)
    levels = _some_levels(rng)
    names = [f"{prefix}@{level!r}" for level in levels]
    res, cases = _hamming_case(rng, ties, names + [eleven_point], 14)
    for i, orders, n_relevant in cases:
        expected = np.mean([_trec_eval_iprec(o, n_relevant, version, levels) for o in orders], axis=0)
        np.testing.assert_allclose([res.per_query[name][i] for name in names], expected, rtol=1e-12, atol=0)
        standard = np.mean([_trec_eval_iprec(o, n_relevant, version) for o in orders], axis=0)
        assert res.per_query[eleven_point][i] == pytest.approx(standard.mean(), rel=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["stable", "trec", "optimistic", "pessimistic"]),
       st.sampled_from([9, 10]))
def test_any_level_ranked_lists_against_trec_eval_loop(seed, ties, version):
    prefix = "IPrec" if version == 10 else "IPrec(trec_eval=9)"
    rng = np.random.default_rng(seed)
    levels = _some_levels(rng)
    names = [f"{prefix}@{level!r}" for level in levels]
    n = int(rng.integers(1, 25))
    grades = rng.integers(0, 3, n).astype(float)
    scores = rng.integers(0, 4, n).astype(float)
    doc_ids = rng.permutation(n)
    unretrieved = rng.integers(0, 3, int(rng.integers(0, 4)))
    res = ft.rank_evaluate(grades, scores, metrics=names, ties=ties, doc_ids=doc_ids, unretrieved=[unretrieved])
    order = _ranked_order(grades, scores, doc_ids, ties)
    n_relevant = int((grades >= 1).sum() + (unretrieved >= 1).sum())
    if n_relevant == 0:
        return
    expected = _trec_eval_iprec([int(g >= 1) for g in grades[order]], n_relevant, version, levels)
    np.testing.assert_allclose([res.per_query[name][0] for name in names], expected, rtol=1e-12, atol=0)


def test_any_level_starts_where_trec_eval_rounds():
    """R = 4, relevant items at ranks 1, 3, 5, 7 of 7: level 0.35 starts at relevant item
    lround(1.4) = 1 in trec_eval 10.0 (precision 1 there) and (long) (1.4 + 0.9) = 2 in 9 (the
    best from the 2nd on: 2/3); level 0.625 at lround(2.5) = 3 in 10.0 (3/5) and 3 in 9."""
    grades, scores = [1, 0, 1, 0, 1, 0, 1], [7, 6, 5, 4, 3, 2, 1]
    res = ft.rank_evaluate(grades, scores, metrics=["IPrec@0.35", "IPrec@0.625", "11pt"], ties="stable")
    res_9 = ft.rank_evaluate(grades, scores, metrics=["IPrec(trec_eval=9)@0.35", "IPrec(trec_eval=9)@0.625"],
                             ties="stable")
    assert res.mean["IPrec@0.35"] == 1.0 and res_9.mean["IPrec(trec_eval=9)@0.35"] == 2 / 3
    assert res.mean["IPrec@0.625"] == 3 / 5 == res_9.mean["IPrec(trec_eval=9)@0.625"]
    assert res.mean["11pt"] == pytest.approx(np.mean(_trec_eval_iprec([1, 0, 1, 0, 1, 0, 1], 4)), rel=1e-15)
