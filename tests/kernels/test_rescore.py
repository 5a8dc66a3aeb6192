"""The kernels of fasttie.rescore alone: the Hamming block pass and the collection against numpy,
the float top k's tie order, and the walk's rank law against the hypergeometric closed form."""

from math import comb

import numpy as np

import fasttie as ft
from fasttie._kernels import rescore as k
from fasttie.finalize.values import read_only

# the array types the facade passes (read-only codes, C-contiguous blocks): a call with other
# types would compile a second signature, which tests/test_warmup.py forbids for listed drivers


def test_hamming_block_and_collect_match_numpy():
    rng = np.random.default_rng(0)
    q = ft.pack_codes(rng.integers(0, 2, (5, 130)))
    db = ft.pack_codes(rng.integers(0, 2, (5000, 130)))
    dist = np.empty((5, 5000), dtype=np.uint16)
    hist = np.zeros((5, 131), dtype=np.int64)
    k.hamming_block(read_only(q.words), read_only(db.words), 0, 5, dist, hist)
    want = np.bitwise_count(q.words[:, None, :] ^ db.words[None, :, :]).sum(axis=2)
    np.testing.assert_array_equal(dist, want)
    np.testing.assert_array_equal(hist, [np.bincount(row, minlength=131) for row in want])
    limits = np.array([60, 62, 64, 66, 0], dtype=np.int64)
    within = (want <= limits[:, None]).sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(within)]).astype(np.int64)
    ids, distances = np.empty(offsets[-1], dtype=np.int64), np.empty(offsets[-1], dtype=np.int64)
    k.collect_block(dist, limits, offsets, ids, distances, 0, 5)
    for i in range(5):
        np.testing.assert_array_equal(ids[offsets[i]:offsets[i + 1]], np.flatnonzero(want[i] <= limits[i]))


def test_top_k_block_keeps_the_earlier_index_among_equal_scores():
    scores = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.5]])
    top, ids = np.full((1, 3), -np.inf), np.full((1, 3), 99, dtype=np.int64)
    k.top_k_block(np.ascontiguousarray(scores[:, :3]), 0, top, ids)
    k.top_k_block(np.ascontiguousarray(scores[:, 3:]), 3, top, ids)
    assert ids.tolist() == [[1, 2, 4]]


def test_the_rank_of_a_sure_item_is_one_plus_a_hypergeometric_count():
    """One sure item after u of T = 6 tied items in stage-2 order, m = 3 of them chosen: its rank
    is 1 + H, H the chosen items among the u above it, so P(rank <= r) = sum_{h < r} C(u, h)
    C(T - u, m - h) / C(T, m)."""
    T, m = 6, 3
    for u in range(T + 1):
        dist = np.array([1] * u + [0] + [1] * (T - u), dtype=np.int64)
        grade = np.array([0] * u + [1] + [0] * (T - u), dtype=np.int64)
        truth = np.full(T + 1, 100, dtype=np.int64)
        ks = np.arange(1, 5, dtype=np.int64)
        types = np.full(4, k.HITS, dtype=np.int64)
        out = np.empty(4)
        discount = np.zeros(5)
        k.walk_mean(dist, grade, truth, T + 1, 1, 1, T, m, types, ks, np.array([0.0, 1.0]), discount, 4,
                    np.empty(4), np.empty(4), out)
        for r in range(1, 5):
            want = sum(comb(u, h) * comb(T - u, m - h) for h in range(r)) / comb(T, m)
            assert abs(out[r - 1] - want) < 1e-15, (u, r)
