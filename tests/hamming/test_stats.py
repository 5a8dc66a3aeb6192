"""Tie statistics as a public, mergeable layer: counts of a database's shards add up to the
counts of the whole, so finalizing the sum is bitwise ``ft.evaluate`` on the whole."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft

METRICS = ["AP", "AP@7", "nDCG", "nDCG@5", "DCG@3", "P@4", "R@9", "F1@2", "RR", "RR@3", "Rprec", "ACG@5", "WAP@6",
           "P(radius=2)", "R(radius=3)"]


def _relevance(kind, rng, n_q, n_db):
    if kind == "class":
        return dict(query_labels=rng.integers(0, 4, n_q), db_labels=rng.integers(0, 4, n_db))
    if kind == "multihot":
        return dict(query_labels=rng.integers(0, 2, (n_q, 3)), db_labels=rng.integers(0, 2, (n_db, 3)))
    grades = rng.integers(0, 4, (n_q, n_db)) * (rng.random((n_q, n_db)) < 0.3)
    indptr = np.r_[0, np.cumsum((grades > 0).sum(1))]
    indices = np.concatenate([np.flatnonzero(g) for g in grades])
    return dict(relevance=(indptr, indices, np.concatenate([g[g > 0] for g in grades])))


def _shard(relevance, lo, hi):
    """The relevance arguments of database rows lo..hi-1 (listed ids made local)."""
    if "relevance" not in relevance:
        return dict(query_labels=relevance["query_labels"], db_labels=relevance["db_labels"][lo:hi])
    indptr, indices, grades = relevance["relevance"]
    ptr, ids, gr = [0], [], []
    for q in range(len(indptr) - 1):
        keep = (indices[indptr[q]:indptr[q + 1]] >= lo) & (indices[indptr[q]:indptr[q + 1]] < hi)
        ids.append(indices[indptr[q]:indptr[q + 1]][keep] - lo)
        gr.append(grades[indptr[q]:indptr[q + 1]][keep])
        ptr.append(ptr[-1] + keep.sum())
    return dict(relevance=(np.array(ptr), np.concatenate(ids).astype(int), np.concatenate(gr).astype(int)))


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["class", "multihot", "listed"]),
       st.sampled_from(["average", "optimistic", "pessimistic"]))
def test_sharded_counts_finalize_to_evaluate(seed, kind, ties):
    rng = np.random.default_rng(seed)
    n_q, n_db, n_bits = int(rng.integers(1, 6)), int(rng.integers(2, 60)), int(rng.integers(1, 12))
    queries, database = rng.integers(0, 2, (n_q, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    relevance = _relevance(kind, rng, n_q, n_db)
    cuts = np.unique(np.r_[0, rng.integers(1, n_db, int(rng.integers(0, 4))), n_db])
    parts = [ft.tie_stats(queries, database[lo:hi], **_shard(relevance, lo, hi)) for lo, hi in zip(cuts[:-1], cuts[1:])]
    order = rng.permutation(len(parts))
    merged = ft.merge([parts[i] for i in order])  # any order: addition of integers
    whole = ft.tie_stats(queries, database, **relevance)
    np.testing.assert_array_equal(merged.counts, whole.counts)
    expected = ft.evaluate(queries, database, **relevance, metrics=METRICS, ties=ties, curves=True)
    got = merged.finalize(METRICS, ties=ties, curves=True)
    for name in METRICS:
        np.testing.assert_array_equal(got.per_query[name], expected.per_query[name])
    assert got.mean == expected.mean or all(
        (np.isnan(a) and np.isnan(b)) or a == b for a, b in zip(got.mean.values(), expected.mean.values()))
    assert got.n_empty == expected.n_empty and got.settings == expected.settings
    for key, curve in expected.curves.items():
        np.testing.assert_array_equal(got.curves[key], curve)


def test_merge_pads_grades_and_checks_shapes():
    q = np.array([[1, 0, 1]])
    a = ft.tie_stats(q, np.array([[1, 0, 1], [0, 0, 0]]), relevance=(np.array([0, 1]), np.array([0]), np.array([3])))
    b = ft.tie_stats(q, np.array([[1, 1, 1]]), relevance=(np.array([0, 0]), np.array([], dtype=int)))
    assert a.counts.shape[2] == 4 and b.counts.shape[2] == 2
    total = a + b
    assert total.counts.shape == (1, 4, 4) and total.n_db == 3
    assert (a + b).counts.tolist() == (b + a).counts.tolist()
    with pytest.raises(ValueError, match="same queries"):
        a + ft.tie_stats(np.array([[1, 0, 1], [0, 0, 1]]), np.array([[1, 1, 1]]), [0, 0], [0])
    with pytest.raises(ValueError, match="'listed' and 'class'"):
        a + ft.tie_stats(q, np.array([[1, 1, 1]]), [0], [0])
    with pytest.raises(ValueError, match="at least one"):
        ft.merge([])


def test_stable_needs_the_database_order():
    stats = ft.tie_stats(np.array([[1, 1]]), np.array([[1, 0], [0, 1]]), [0], [0, 1])
    assert stats.finalize(["AP"]).mean == {"AP": 0.75}
    with pytest.raises(ValueError, match="stable"):
        stats.finalize(["AP"], ties="stable")


def test_dask_sees_the_size_of_the_counts():
    sizeof = pytest.importorskip("dask.sizeof", reason="dask extra").sizeof
    stats = ft.tie_stats(np.zeros((100, 64), dtype=np.int8), np.ones((10, 64), dtype=np.int8), np.zeros(100, int),
                         np.zeros(10, int))
    assert stats.counts.nbytes == 100 * 65 * 2 * 8
    assert stats.counts.nbytes <= sizeof(stats) < stats.counts.nbytes + 1000
