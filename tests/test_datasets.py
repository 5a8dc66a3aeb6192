"""fasttie.datasets: the synthetic class-correlated codes of the demo and benchmarks (the flip
model's distances, seeds, errors), ITQ, and scikit-learn's digits hashed by it."""

import numpy as np
import pytest

import fasttie as ft


@pytest.mark.parametrize("n_bits, flip", [(64, 0.25), (128, 0.1), (192, 0.0), (64, 0.5)])
def test_synthetic_codes_follow_the_flip_model(n_bits, flip):
    # 20 classes: 190 prototype pairs, whose distances average n_bits / 2 closely
    q, db, ql, dl = ft.datasets.synthetic_hashing(300, 3000, n_bits, 20, flip=flip, seed=7)
    assert (q.n, db.n, q.n_bits, db.n_bits) == (300, 3000, n_bits, n_bits)
    assert q.words.dtype == np.uint64 and q.words.shape == (300, n_bits // 64)
    assert ql.shape == (300,) and dl.shape == (3000,) and set(np.unique(dl)) == set(range(20))
    bits_q = ft.unpack_codes(q).astype(np.int64)
    bits_db = ft.unpack_codes(db).astype(np.int64)
    distance = bits_q @ (1 - bits_db).T + (1 - bits_q) @ bits_db.T  # exact Hamming distances
    same = ql[:, None] == dl[None, :]
    # a same-class pair differs in a bit with probability 2 f (1 - f); other pairs with 1/2
    p_same = 2 * flip * (1 - flip)
    assert distance[same].mean() == pytest.approx(n_bits * p_same, abs=0.02 * n_bits + 1e-9)
    assert distance[~same].mean() == pytest.approx(n_bits / 2, abs=0.02 * n_bits)
    if flip == 0.0:  # every item is its class prototype
        assert not distance[same].any()


def test_synthetic_seed_decides_the_data():
    first = ft.datasets.synthetic_hashing(20, 200, seed=3)
    again = ft.datasets.synthetic_hashing(20, 200, seed=3)
    other = ft.datasets.synthetic_hashing(20, 200, seed=4)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(getattr(a, "words", a), getattr(b, "words", b))
    assert not np.array_equal(first[1].words, other[1].words)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_bits": 48}, "n_bits must be a positive multiple of 64, got 48"),
    ({"n_bits": 0}, "n_bits must be a positive multiple of 64"),
    ({"flip": 0.6}, r"flip must be in \[0, 0.5\], got 0.6"),
    ({"n_classes": 0}, "n_queries, n_db and n_classes must be >= 1"),
    ({"n_db": 0}, "n_queries, n_db and n_classes must be >= 1"),
])
def test_synthetic_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ft.datasets.synthetic_hashing(**{"n_queries": 5, "n_db": 50, **kwargs})


def test_itq_decreases_the_quantization_loss_and_rotates_orthogonally():
    x = np.random.default_rng(0).standard_normal((400, 12)) @ np.random.default_rng(1).standard_normal((12, 12))
    mean, projection, losses = ft.datasets.itq(x, 8, n_iter=30, seed=4)
    assert np.all(np.diff(losses) <= 1e-9 * losses[0])  # each Procrustes step cannot increase it
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(projection.T @ projection, np.eye(8), atol=1e-10)  # PCA basis x rotation
    np.testing.assert_allclose(mean, x.mean(axis=0))
    with pytest.raises(ValueError, match="n_bits"):
        ft.datasets.itq(x, 13)


def test_digits_hashing_split_and_quality():
    pytest.importorskip("sklearn")
    q, db, ql, dl = ft.datasets.digits_hashing(32, 100, seed=1)
    assert (q.n, db.n, q.n_bits) == (100, 1697, 32)
    again = ft.datasets.digits_hashing(32, 100, seed=1)
    np.testing.assert_array_equal(again[0].words, q.words)
    np.testing.assert_array_equal(again[2], ql)
    assert set(np.unique(ql)) <= set(range(10))
    # learned codes retrieve the right digit far above chance (about 0.1)
    assert ft.evaluate(q, db, ql, dl, metrics=["AP"]).mean["AP"] > 0.5
    with pytest.raises(ValueError, match="n_bits"):
        ft.datasets.digits_hashing(65)


def test_binarized_embeddings_are_unit_vectors_and_their_signs():
    data = ft.datasets.binarized_embeddings(n_db=50, n_queries=4, dim=70, n_clusters=3, seed=2)
    assert data.db_vectors.dtype == np.float32 and data.db_vectors.shape == (50, 70)
    np.testing.assert_allclose(np.linalg.norm(data.db_vectors, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(ft.unpack_codes(data.db_codes), data.db_vectors > 0)
    np.testing.assert_array_equal(ft.unpack_codes(data.query_codes), data.query_vectors > 0)
    assert set(data.db_labels) <= {0, 1, 2} and data.query_labels.shape == (4,)
    again = ft.datasets.binarized_embeddings(n_db=50, n_queries=4, dim=70, n_clusters=3, seed=2)
    np.testing.assert_array_equal(again.db_vectors, data.db_vectors)
    with pytest.raises(ValueError, match="dim"):
        ft.datasets.binarized_embeddings(dim=0)
