"""fasttie.hamming.stable: a database in parts (shards, GPU chunks) ranks every item where one
stable sort of the whole database (distance, then index: numpy's lexsort) ranks it, for random
cuts into parts; the rank limits are the distances holding the deepest rank, and the ranks the
parts return are merged per query as a plain sort of (query, rank) pairs merges them. The
protocol over a transport, run in process, gives evaluate(ties="stable")'s values bitwise."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
from fasttie.hamming.engine import hashing_metrics, rank_depth, result_from_counts, shard_ranks
from fasttie.hamming.options import HammingOptions
from fasttie.hamming.stable import (InProcess, gathered_ranks, plan_ranks, rank_limits, ranked_distances,
                                    ranks_by_query)
from fasttie.hamming.stats import merge, tie_stats


def _case(seed):
    rng = np.random.default_rng(seed)
    n_q, n_db, n_bits = int(rng.integers(1, 6)), int(rng.integers(1, 80)), int(rng.integers(1, 10))
    distances = rng.integers(0, n_bits + 1, (n_q, n_db))
    cuts = np.sort(rng.integers(0, n_db + 1, int(rng.integers(0, 5))))
    parts = np.split(np.arange(n_db), cuts)
    return rng, distances, n_bits, parts


@pytest.mark.parametrize("seed", range(25))
def test_parts_rank_as_one_stable_sort(seed):
    _, distances, n_bits, parts = _case(seed)
    n_q, n_db = distances.shape
    per_part = [np.stack([np.bincount(distances[q, part], minlength=n_bits + 1) for q in range(n_q)])
                for part in parts]
    total = np.sum(per_part, axis=0)
    bases = plan_ranks(InProcess(), [p[:, :, None] for p in per_part], total[:, :, None], n_db, n_db, n_bits).firsts
    assert len(bases) == len(parts) and all(b.shape == (n_q, n_bits + 1) for b in bases)
    for q in range(n_q):
        order = np.lexsort((np.arange(n_db), distances[q]))  # distance, then database index
        expected = np.empty(n_db, dtype=np.int64)
        expected[order] = np.arange(n_db)
        for p, part in enumerate(parts):
            seen = np.zeros(n_bits + 1, dtype=np.int64)
            for item in part:  # a part ranks its own items in index order from its bases
                d = distances[q, item]
                assert bases[p][q, d] + seen[d] == expected[item]
                seen[d] += 1


@pytest.mark.parametrize("seed", range(25))
def test_rank_limits_hold_the_deepest_rank(seed):
    rng, distances, n_bits, _ = _case(seed)
    n_q, n_db = distances.shape
    items = np.stack([np.bincount(distances[q], minlength=n_bits + 1) for q in range(n_q)])
    depth = int(rng.integers(1, n_db + 3))
    limits = rank_limits(items, depth, n_db, n_bits)
    for q in range(n_q):
        expected = n_bits if depth >= n_db else np.sort(distances[q])[depth - 1]
        assert limits[q] == expected
    ranked = ranked_distances(limits, n_bits + 1)
    assert np.array_equal(ranked, np.arange(n_bits + 1)[None, :] <= limits[:, None])


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("span", [50, 2**40])  # the second takes the lexsort path
def test_ranks_by_query_merge_as_a_sort(seed, span):
    rng = np.random.default_rng(seed)
    n_q = int(rng.integers(1, 8))
    triples = []
    for q in range(n_q):
        for rank in rng.choice(span, int(rng.integers(0, 10)), replace=False):
            triples.append((q, int(rank), int(rng.integers(1, 4))))
    rng.shuffle(triples)
    query_of = np.array([t[0] for t in triples], dtype=np.int64)
    ranks = np.array([t[1] for t in triples], dtype=np.int64)
    grades = np.array([t[2] for t in triples], dtype=np.int64)
    n_queries = n_q if span == 50 else 2**23  # n_queries * span past 2**62: the other path
    indptr, sorted_ranks, sorted_grades = ranks_by_query(query_of, ranks, grades, n_queries)
    expected = sorted(triples)
    assert sorted_ranks.tolist() == [t[1] for t in expected] and sorted_grades.tolist() == [t[2] for t in expected]
    counts = np.bincount(query_of, minlength=n_queries)
    assert np.array_equal(indptr, np.concatenate(([0], np.cumsum(counts))))


# the protocol: counts of the parts -> plan_ranks -> each part ranks its items -> gathered_ranks,
# over the in-process transport, gives evaluate(ties="stable")'s values bitwise for any cut into
# parts (Dask, torch.distributed and streamed tiles run this same code over their transports)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_parts=st.integers(1, 5),
       metrics=st.sampled_from([["AP", "nDCG", "RR"], ["AP@10", "P@5", "nDCG@20"], ["AP@10", "R@200"]]))
def test_the_protocol_over_parts_in_process_is_one_stable_pass(seed, n_parts, metrics):
    rng = np.random.default_rng(seed)
    n_q, n_db, n_bits = int(rng.integers(1, 8)), int(rng.integers(n_parts, 120)), int(rng.choice([8, 16, 64]))
    queries = rng.integers(0, 2, (n_q, n_bits)).astype(np.uint8)
    database = rng.integers(0, 2, (n_db, n_bits)).astype(np.uint8)
    query_labels, db_labels = rng.integers(0, 3, n_q), rng.integers(0, 3, n_db)
    cuts = np.sort(rng.choice(np.arange(1, n_db), n_parts - 1, replace=False)) if n_parts > 1 else []
    parts = np.split(np.arange(n_db), cuts)
    held = [tie_stats(queries, database[p], query_labels, db_labels[p], n_threads=1) for p in parts]
    transport = InProcess()
    total = merge(held)
    assert np.array_equal(transport.sum([s.counts for s in held]), total.counts)
    plan = plan_ranks(transport, [s.counts for s in held], total.counts, rank_depth(hashing_metrics(metrics), n_db),
                      n_db, n_bits)
    pieces = [shard_ranks(queries, database[p], query_labels, db_labels[p], None, first, n_relevant, 1, plan.limits)
              for p, first, n_relevant in zip(parts, plan.firsts, plan.n_relevant)]
    ranked = gathered_ranks(transport, pieces, n_q)
    got = result_from_counts(total, metrics, HammingOptions(ties="stable"), n_threads=1, ranked=ranked)
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties="stable", n_threads=1)
    for name in metrics:
        assert np.array_equal(got.per_query[name], expected.per_query[name]), name


@pytest.mark.parametrize("offset", [0, 2**61])  # 2**61: the (query, rank) key would overflow, np.lexsort sorts
def test_gathered_ranks_sort_the_parts_pieces_per_query(offset):
    rng = np.random.default_rng(5)
    n_queries, pieces, expected = 4, [], {q: [] for q in range(4)}
    for _ in range(3):  # parts
        sizes = rng.integers(0, 6, n_queries)
        ranks = rng.choice(10**6, sizes.sum(), replace=False).astype(np.int64) + offset
        grades = rng.integers(1, 4, sizes.sum())
        indptr = np.r_[0, np.cumsum(sizes)]
        for q in range(n_queries):
            expected[q] += list(zip(ranks[indptr[q]:indptr[q + 1]], grades[indptr[q]:indptr[q + 1]]))
        pieces.append((indptr, ranks, grades))
    indptr, ranks, grades = gathered_ranks(InProcess(), pieces, n_queries)
    for q in range(n_queries):
        got = list(zip(ranks[indptr[q]:indptr[q + 1]], grades[indptr[q]:indptr[q + 1]]))
        assert got == sorted(expected[q]), q
