"""fasttie.hamming.facade: search() (exact distances, ids in stable-argsort order, radius search with
<=) and evaluate()'s inputs (packed codes, multi-hot and listed relevance, remapped class ids,
database order, curves); evaluate's values are checked in across/test_against_oracle.py and
across/test_properties.py, its errors in test_errors.py."""

import numpy as np
import pytest

import fasttie as ft
from helpers import random_codes


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


def test_curves_match_metrics():
    q, db, ql, dl = random_codes(n_bits=16)
    res = ft.evaluate(q, db, ql, dl, metrics=["P(radius=3)", "R@20"], curves=[5, 20, 300])
    c = res.curves
    assert list(c["radius"]) == list(range(17)) and list(c["n"]) == [5, 20, 300]
    assert c["precision_by_radius"][3] == res.mean["P(radius=3)"]
    assert c["recall_at_n"][1] == res.mean["R@20"]
    assert c["recall_by_radius"][16] == pytest.approx(1.0)
    assert np.all(np.diff(c["recall_at_n"]) >= 0)


@pytest.mark.parametrize("empty", ["zero", "skip"])
def test_items_within_radius_and_the_retrieving_curve_against_numpy(empty):
    q, db, ql, dl = random_codes(n_bits=16, n_q=40, n_db=120, seed=5)
    ql[0] = 9  # no relevant item: kept (0) or skipped by the empty policy
    res = ft.evaluate(q, db, ql, dl, metrics=["NumRet(radius=5)", "P(radius=5)"], curves=True, empty=empty)
    distances = (q[:, None, :] != db[None]).sum(axis=2)
    kept = np.ones(len(q), bool) if empty == "zero" else ql != 9
    within = (distances <= 5).sum(axis=1)
    np.testing.assert_array_equal(res.per_query["NumRet(radius=5)"][kept], within[kept])
    assert res.mean["NumRet(radius=5)"] == within[kept].sum()  # a count: summed, as NumRet
    for r in range(17):
        found = (distances <= r).sum(axis=1)
        relevant = ((distances <= r) & (ql[:, None] == dl[None])).sum(axis=1)
        retrieving = kept & (found > 0)
        share = retrieving.sum() / kept.sum()
        assert res.curves["retrieving_by_radius"][r] == pytest.approx(share, abs=1e-15)
        if retrieving.any():
            precision = (relevant[retrieving] / found[retrieving]).mean()
            assert res.curves["precision_by_radius_retrieving"][r] == pytest.approx(precision, rel=1e-12)
        else:
            assert np.isnan(res.curves["precision_by_radius_retrieving"][r])
    assert np.isnan(res.curves["precision_by_radius_retrieving"][0])  # no query has a twin at distance 0
    assert res.curves["precision_by_radius"][16] == res.curves["precision_by_radius_retrieving"][16]


@pytest.mark.parametrize("n_labels", [2, 64, 65, 81, 128])  # one column is an error (test_errors)
def test_multihot_grades_count_shared_labels(n_labels):
    rng = np.random.default_rng(n_labels)
    q, db, _, _ = random_codes(n_bits=8, n_q=4, n_db=40)
    ql = rng.integers(0, 2, (4, n_labels))
    dl = rng.integers(0, 2, (40, n_labels))
    grades = ql @ dl.T
    via_labels = ft.evaluate(q, db, ql, dl, metrics=["nDCG@7", "WAP@9", "ACG@5"], ties="stable")
    indptr = np.r_[0, np.cumsum((grades > 0).sum(1))]
    indices = np.concatenate([np.flatnonzero(g) for g in grades])
    listed = (indptr, indices, np.concatenate([g[g > 0] for g in grades]))
    via_listed = ft.evaluate(q, db, relevance=listed, metrics=["nDCG@7", "WAP@9", "ACG@5"], ties="stable")
    for name in via_labels.per_query:
        np.testing.assert_array_equal(via_labels.per_query[name], via_listed.per_query[name])


def test_large_and_negative_class_ids_are_remapped():
    q, db, ql, dl = random_codes()
    base = ft.evaluate(q, db, ql, dl, metrics=["AP", "nDCG@5"])
    shifted = ft.evaluate(q, db, ql * 10**12 - 7, dl * 10**12 - 7, metrics=["AP", "nDCG@5"])
    for name in base.per_query:
        np.testing.assert_array_equal(base.per_query[name], shifted.per_query[name])


def test_packed_inputs_give_identical_results():
    q, db, ql, dl = random_codes(n_bits=70)
    raw = ft.evaluate(q, db, ql, dl, metrics=["AP", "P@3"])
    packed_q = ft.pack_codes(np.packbits(q, axis=1, bitorder="little").astype(np.uint8), packed=True,
                             n_bits=70, bitorder="little")
    packed = ft.evaluate(packed_q, ft.pack_codes(2 * db - 1), ql, dl, metrics=["AP", "P@3"])
    for name in raw.per_query:
        np.testing.assert_array_equal(raw.per_query[name], packed.per_query[name])


def test_doctest_example_values():
    q = np.array([[1, 1]])
    db = np.array([[1, -1], [-1, 1]])
    res = ft.evaluate(q, db, np.array([0]), np.array([0, 1]), metrics=["AP", "P@1"])
    assert res.mean == {"AP": 0.75, "P@1": 0.5}


def test_database_already_ordered_by_class_gives_identical_results():
    q, db, ql, dl = random_codes(n_bits=20, n_db=500, n_classes=4)
    order = np.argsort(dl, kind="stable")
    shuffled = ft.evaluate(q, db, ql, dl, metrics=["AP", "nDCG@30", "P(radius=5)"])
    ordered = ft.evaluate(q, db[order], ql, dl[order], metrics=["AP", "nDCG@30", "P(radius=5)"])
    for name in shuffled.per_query:
        np.testing.assert_array_equal(shuffled.per_query[name], ordered.per_query[name])
