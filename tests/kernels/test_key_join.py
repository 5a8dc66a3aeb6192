"""fasttie._kernels.key_join: each retrieved document located among its query's judgments as a
dict lookup locates it."""

import numpy as np
import pytest


@pytest.mark.parametrize("seed", range(6))
def test_locate_keys_matches_a_dict(seed):
    """The per-query hash table of the join against a dict: keys sharing their low bits (long
    probe chains that wrap around the table), queries without judgments or without rows."""
    from fasttie._kernels.key_join import locate_keys

    rng = np.random.default_rng(seed)
    n_queries = 40
    low_bits = int(rng.integers(1, 12))  # few distinct slots: collisions on purpose
    judged, retrieved = [], []
    for q in range(n_queries):
        base = np.uint64(q) << np.uint64(40)
        pool = np.unique(rng.integers(0, 1 << 30, int(rng.integers(0, 60)), dtype=np.uint64)
                         << np.uint64(10) | rng.integers(0, low_bits, 1, dtype=np.uint64)) | base
        judged.append(np.sort(pool))
        hits = rng.choice(pool, int(rng.integers(0, len(pool) + 1)), replace=False) if len(pool) else pool
        misses = rng.integers(0, 1 << 30, int(rng.integers(0, 30)), dtype=np.uint64) << np.uint64(10) | base
        rows = np.concatenate((hits, misses))
        retrieved.append(rows[rng.permutation(len(rows))])
    offsets = lambda parts: np.concatenate(([0], np.cumsum([len(p) for p in parts]))).astype(np.int64)  # noqa: E731
    judged_keys, run_keys = np.concatenate(judged), np.concatenate(retrieved)
    index = {int(k): i for i, k in enumerate(judged_keys)}
    expected = [index.get(int(k), -1) for k in run_keys]
    for blocks in ([0, n_queries], [0, 7, 8, 30, n_queries]):
        position = np.full(len(run_keys), -2, dtype=np.int64)
        for lo, hi in zip(blocks[:-1], blocks[1:]):
            locate_keys(run_keys, offsets(retrieved), judged_keys, offsets(judged), position, lo, hi)
        assert position.tolist() == expected
