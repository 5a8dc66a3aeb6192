"""search(): exact distances, ids in stable-argsort order, radius search with <=."""

import numpy as np
import pytest

import fasttie as ft


@pytest.mark.parametrize("n_bits", [5, 64, 100, 256])
def test_knn_is_stable_argsort(n_bits):
    rng = np.random.default_rng(n_bits)
    q = rng.integers(0, 2, (6, n_bits))
    db = rng.integers(0, 2, (300, n_bits))
    dist = (q[:, None, :] != db[None]).sum(axis=2)
    for k in (1, 17, 300):
        ids, d = ft.search(q, db, k)
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(ids, order)
        np.testing.assert_array_equal(d, np.take_along_axis(dist, order, axis=1))


def test_radius_search_keeps_distance_at_most_r():
    rng = np.random.default_rng(1)
    q = rng.integers(0, 2, (5, 12))
    db = rng.integers(0, 2, (400, 12))
    dist = (q[:, None, :] != db[None]).sum(axis=2)
    ids, d, offsets = ft.search(q, db, radius=4)
    for i in range(len(q)):
        order = np.argsort(dist[i], kind="stable")
        expected = order[dist[i][order] <= 4]
        np.testing.assert_array_equal(ids[offsets[i] : offsets[i + 1]], expected)
        np.testing.assert_array_equal(d[offsets[i] : offsets[i + 1]], dist[i][expected])


@pytest.mark.parametrize(
    "kwargs, match",
    [(dict(k=0), "k must be"), (dict(k=11), "k must be"), (dict(), "exactly one"),
     (dict(k=2, radius=1), "exactly one"), (dict(radius=-1), "radius must be")],
)
def test_search_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ft.search(np.ones((2, 8)), np.ones((10, 8)), **kwargs)
