"""fasttie.hamming.stable: a database in parts (shards, GPU chunks) ranks every item where one
stable sort of the whole database (distance, then index: numpy's lexsort) ranks it, for random
cuts into parts; the rank limits are the distances holding the deepest rank, and the ranks the
parts return are merged per query (by distance, or by a sort of (query, rank) pairs where the
pieces do not fit the counts) in rank order. The
protocol over a transport, run in process, gives evaluate(ties="stable")'s values bitwise."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
from fasttie.hamming.engine import hashing_metrics, rank_depth, result_from_counts, shard_ranks
from fasttie.hamming import stable as stable_module
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


def _protocol_case(seed, n_parts, metrics):
    """A random cut into parts through the protocol: (the parts' pieces, total counts, plan, the
    call, evaluate(ties="stable") of the whole)."""
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
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties="stable", n_threads=1)
    return pieces, total, plan, expected


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_parts=st.integers(1, 5),
       metrics=st.sampled_from([["AP", "nDCG", "RR"], ["AP@10", "P@5", "nDCG@20"], ["AP@10", "R@200"]]),
       n_threads=st.sampled_from([1, 2]))
def test_the_protocol_over_parts_in_process_is_one_stable_pass(seed, n_parts, metrics, n_threads):
    pieces, total, plan, expected = _protocol_case(seed, n_parts, metrics)
    for indptr, ranks, _ in pieces:  # each part's items in rank order per query
        assert all(np.all(np.diff(ranks[a:b]) > 0) for a, b in zip(indptr[:-1], indptr[1:]))
    ranked = gathered_ranks(InProcess(), pieces, total.counts, plan.limits, n_threads=n_threads)
    got = result_from_counts(total, metrics, HammingOptions(ties="stable"), n_threads=1, ranked=ranked)
    for name in metrics:
        assert np.array_equal(got.per_query[name], expected.per_query[name]), name


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_parts=st.integers(2, 5), data=st.data())
def test_gathered_ranks_of_parts_in_any_order_and_items_in_any_order(seed, n_parts, data):
    """The merge by distance takes the parts in index order, each part's items in rank order
    fastest, in any order of distances (index order, as a GPU pass gives them) with a walk to each
    item's distance, and without a sort; parts out of index order (a transport that gathers them
    so) fall back to the sort: the same ranks every way."""
    pieces, total, plan, _ = _protocol_case(seed, n_parts, ["AP", "nDCG", "RR"])
    expected = gathered_ranks(InProcess(), pieces, total.counts, plan.limits)
    items = total.counts.sum(axis=2)
    smaller = np.cumsum(items, axis=1) - items
    by_distance = []
    for indptr, ranks, grades in pieces:  # each query's distances in a random order, ranks ascending within one
        ranks, grades = ranks.copy(), grades.copy()
        for q, (a, b) in enumerate(zip(indptr[:-1], indptr[1:])):
            distance = np.searchsorted(smaller[q], ranks[a:b], side="left") - 1
            priority = np.asarray(data.draw(st.permutations(range(items.shape[1]))))[distance]
            order = np.lexsort((ranks[a:b], priority))
            ranks[a:b], grades[a:b] = ranks[a:b][order], grades[a:b][order]
        by_distance.append((indptr, ranks, grades))

    def no_sort(*args):
        raise AssertionError("the merge by distance fell back to the sort")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stable_module, "ranks_by_query", no_sort)
        got = gathered_ranks(InProcess(), by_distance, total.counts, plan.limits, n_threads=2)
    for a, b in zip(got, expected):
        assert np.array_equal(a, b)
    order = data.draw(st.permutations(range(n_parts)))
    got = gathered_ranks(InProcess(), [by_distance[p] for p in order], total.counts, plan.limits)
    for a, b in zip(got, expected):
        assert np.array_equal(a, b)


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
    no_counts = np.zeros((n_queries, 2, 2), dtype=np.int64)  # counts that do not match the pieces: the sort
    indptr, ranks, grades = gathered_ranks(InProcess(), pieces, no_counts, np.zeros(n_queries, dtype=np.int64))
    for q in range(n_queries):
        got = list(zip(ranks[indptr[q]:indptr[q + 1]], grades[indptr[q]:indptr[q + 1]]))
        assert got == sorted(expected[q]), q
