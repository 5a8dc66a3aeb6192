"""fasttie.hamming.collective: a database sharded over the ranks of a group, here ranks as threads of
one process over an in-memory group (tests/test_torch.py runs the same code over torch.distributed's
gloo ranks): every rank returns bitwise ``fasttie.evaluate`` of the whole database, and an input
error on one rank raises on every rank."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fasttie as ft
from fasttie.hamming.collective import evaluate_on_ranks
from fasttie.hamming.engine import hashing_metrics
from fasttie.hamming.options import HammingOptions


class _Group:
    """The collectives of ``size`` ranks that are threads: each call meets the others at a barrier."""

    def __init__(self, size):
        self.size, self.slots, self.barrier = size, [None] * size, threading.Barrier(size, timeout=60)

    def rank(self, rank):
        return _Rank(self, rank)


class _Rank:
    def __init__(self, group, rank):
        self.group, self.rank, self.size = group, rank, group.size

    def all_gather(self, vector):
        group = self.group
        group.slots[self.rank] = np.array(vector, dtype=np.int64, copy=True)
        group.barrier.wait()
        out = np.stack(group.slots)
        group.barrier.wait()  # every rank has read before the next call writes
        return out

    def all_reduce(self, array, op, dtype=np.int64):
        group = self.group
        group.slots[self.rank] = np.array(array, dtype=dtype, copy=True)
        group.barrier.wait()
        out = {"sum": np.sum, "max": np.max, "min": np.min}[op](np.stack(group.slots), axis=0).astype(dtype)
        group.barrier.wait()
        return out

    def reduce_sum_to(self, array, target):
        total = self.all_reduce(array, "sum")
        return total if self.rank == target else None


def _on_ranks(shards, queries, query_labels, metrics, ties="average", relevance=None, n_db=None):
    """Every rank's Result; ``shards`` per rank: (codes, labels, db_offset)."""
    group = _Group(len(shards))
    parsed = hashing_metrics(metrics)
    options = HammingOptions.resolve(parsed, ties=ties)

    def rank(r):
        codes, labels, offset = shards[r]
        return evaluate_on_ranks(group.rank(r), queries, codes, query_labels if relevance is None else None,
                                 labels if relevance is None else None, relevance, metrics, parsed, options,
                                 n_threads=1, db_offset=offset, n_db=n_db)

    with ThreadPoolExecutor(len(shards)) as pool:
        return list(pool.map(rank, range(len(shards))))


def _case(seed, n_db=120, n_bits=16):
    rng = np.random.default_rng(seed)
    queries = rng.integers(0, 2, (7, n_bits)).astype(np.uint8)
    database = rng.integers(0, 2, (n_db, n_bits)).astype(np.uint8)
    return queries, database, rng.integers(0, 4, 7), rng.integers(0, 4, n_db), rng


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ties", ["average", "stable", "optimistic"])
@pytest.mark.parametrize("placement", ["rank order", "int offsets", "indices"])
def test_every_rank_gets_the_whole_databases_result(seed, ties, placement):
    queries, database, query_labels, db_labels, rng = _case(seed)
    metrics = ["AP", "nDCG@10", "P@5", "AP@20"]
    cuts = [0, *sorted(rng.choice(np.arange(1, len(database)), 2, replace=False)), len(database)]
    parts = [np.arange(a, b) for a, b in zip(cuts, cuts[1:])]
    order = [2, 0, 1] if placement != "rank order" else [0, 1, 2]  # ranks need not hold the parts in order
    offsets = {"rank order": [None] * 3, "int offsets": [int(parts[i][0]) for i in order],
               "indices": [parts[i] for i in order]}[placement]
    held = [parts[i] for i in order] if placement != "rank order" else parts
    shards = [(database[rows], db_labels[rows], offset) for rows, offset in zip(held, offsets)]
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties, n_threads=1)
    for got in _on_ranks(shards, queries, query_labels, metrics, ties=ties):
        for name in metrics:
            np.testing.assert_array_equal(got.per_query[name], expected.per_query[name])
        assert got.settings == expected.settings


def test_repeated_indices_count_once_on_the_lowest_rank():
    queries, database, query_labels, db_labels, _ = _case(7, n_db=40)
    # a sampler's padding: rank 1 holds indices 0 and 1 again at its end
    held = [np.arange(0, 20), np.concatenate([np.arange(20, 40), [0, 1]])]
    shards = [(database[rows], db_labels[rows], rows) for rows in held]
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=["AP", "P@3"])
    for got in _on_ranks(shards, queries, query_labels, ["AP", "P@3"], n_db=40):
        np.testing.assert_array_equal(got.per_query["AP"], expected.per_query["AP"])


def test_listed_relevance_with_global_ids():
    queries, database, _, _, rng = _case(3, n_db=50)
    grades = (rng.random((len(queries), 50)) < 0.2) * rng.integers(1, 3, (len(queries), 50))
    indptr = np.concatenate([[0], np.cumsum((grades > 0).sum(1))])
    relevance = (indptr, np.nonzero(grades)[1], grades[grades > 0])
    shards = [(database[:30], None, None), (database[30:], None, None)]
    expected = ft.evaluate(queries, database, relevance=relevance, metrics=["AP", "nDCG@5"], ties="stable")
    for got in _on_ranks(shards, queries, None, ["AP", "nDCG@5"], ties="stable", relevance=relevance):
        np.testing.assert_array_equal(got.per_query["nDCG@5"], expected.per_query["nDCG@5"])


def test_an_error_on_one_rank_raises_on_every_rank():
    queries, database, query_labels, db_labels, _ = _case(1)
    shards = [(database[:60], db_labels[:60], None), (database[60:, :8], db_labels[60:], None)]  # 8 bits on rank 1
    group = _Group(2)
    parsed = hashing_metrics(["AP"])

    def rank(r):
        codes, labels, offset = shards[r]
        try:
            evaluate_on_ranks(group.rank(r), queries, codes, query_labels, labels, None, ["AP"], parsed,
                              HammingOptions(), n_threads=1, db_offset=offset, n_db=None)
        except ValueError as error:
            return str(error)
        return None

    with ThreadPoolExecutor(2) as pool:
        errors = list(pool.map(rank, range(2)))
    assert "rank(s) [1]" in errors[0] and "bits" in errors[1]


def test_overlapping_int_offsets_are_refused_everywhere():
    queries, database, query_labels, db_labels, _ = _case(2, n_db=40)
    shards = [(database[:25], db_labels[:25], 0), (database[20:], db_labels[20:], 20)]
    with pytest.raises(ValueError, match="overlap"):
        _on_ranks(shards, queries, query_labels, ["AP"])
