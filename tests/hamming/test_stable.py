"""fasttie.hamming.stable: a database in parts (shards, GPU chunks) ranks every item where one
stable sort of the whole database (distance, then index: numpy's lexsort) ranks it, for random
cuts into parts; the rank limits are the distances holding the deepest rank, and the ranks the
parts return are merged per query as a plain sort of (query, rank) pairs merges them."""

import numpy as np
import pytest

from fasttie.hamming.stable import part_rank_bases, rank_limits, ranked_distances, ranks_by_query


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
    bases = part_rank_bases(per_part)
    assert bases.shape == (len(parts), n_q, n_bits + 1)
    for q in range(n_q):
        order = np.lexsort((np.arange(n_db), distances[q]))  # distance, then database index
        expected = np.empty(n_db, dtype=np.int64)
        expected[order] = np.arange(n_db)
        for p, part in enumerate(parts):
            seen = np.zeros(n_bits + 1, dtype=np.int64)
            for item in part:  # a part ranks its own items in index order from its bases
                d = distances[q, item]
                assert bases[p, q, d] + seen[d] == expected[item]
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
