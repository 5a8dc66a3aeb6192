"""Hashing data for the demo and benchmarks: synthetic codes generated on the fly, and
scikit-learn's bundled digits hashed by ITQ.

Every class has a random prototype code; every item flips each bit of its class prototype
independently with probability ``flip``. Same-class pairs then sit at Hamming distance about
Binomial(n_bits, 2 flip (1 - flip)), other pairs about Binomial(n_bits, 1/2): the two overlap
and every distance bucket holds many ties, as with learned codes.

:func:`digits_hashing` hashes real images with a real method: scikit-learn's 1,797 bundled
8x8 digit images, PCA then ITQ rotation (Gong & Lazebnik 2011), no download.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .codes import PackedCodes, pack_codes
from .errors import InputError

__all__ = ["BinarizedEmbeddings", "binarized_embeddings", "digits_hashing", "itq", "synthetic_hashing"]

_ROWS_PER_CHUNK = 1 << 16


def _flip_masks(rng, n, n_words, flip):
    """(n, n_words) uint64 words whose bits are set independently with probability flip."""
    if flip == 0.25:  # AND of two uniform words: exact and fast
        return rng.integers(0, 2**64, (n, n_words), dtype=np.uint64) & rng.integers(
            0, 2**64, (n, n_words), dtype=np.uint64
        )
    out = np.empty((n, n_words), dtype=np.uint64)
    for start in range(0, n, _ROWS_PER_CHUNK):
        stop = min(n, start + _ROWS_PER_CHUNK)
        bits = rng.random((stop - start, 64 * n_words)) < flip
        out[start:stop] = np.packbits(bits, axis=1, bitorder="little").view("<u8").astype(np.uint64)
    return out


def synthetic_hashing(
    n_queries: int = 1000,
    n_db: int = 59000,
    n_bits: int = 64,
    n_classes: int = 10,
    *,
    flip: float = 0.25,
    seed: int = 0,
) -> tuple[PackedCodes, PackedCodes, np.ndarray, np.ndarray]:
    """Class-correlated random binary codes, CIFAR-10-shaped by default.

    Parameters
    ----------
    n_queries, n_db : int
        Number of query and database codes (defaults: the CIFAR-10 hashing protocol's
        1,000 queries and 59,000 database images).
    n_bits : int
        Code length, a multiple of 64.
    n_classes : int
        Classes, drawn uniformly.
    flip : float
        Probability that an item's bit differs from its class prototype, in [0, 0.5].
    seed : int
        Seed of numpy's default generator: same seed, same data.

    Returns
    -------
    queries, database : PackedCodes
    query_labels, db_labels : ndarray of int64, shapes (n_queries,), (n_db,)

    Examples
    --------
    >>> import fasttie as ft
    >>> q, db, ql, dl = ft.datasets.synthetic_hashing(10, 100, seed=1)
    >>> q.n_bits, db.n, ql.shape
    (64, 100, (10,))
    """
    if n_bits % 64 or n_bits <= 0:
        raise InputError(f"{{n_bits}} must be a positive multiple of 64, got {n_bits}", argument="n_bits")
    if not 0.0 <= flip <= 0.5:
        raise InputError(f"flip must be in [0, 0.5], got {flip}")
    if min(n_queries, n_db, n_classes) < 1:
        raise InputError("n_queries, n_db and n_classes must be >= 1")
    rng = np.random.default_rng(seed)
    n_words = n_bits // 64
    prototypes = rng.integers(0, 2**64, (n_classes, n_words), dtype=np.uint64)
    labels = rng.integers(0, n_classes, n_queries + n_db)
    words = prototypes[labels] ^ _flip_masks(rng, n_queries + n_db, n_words, flip)
    queries = PackedCodes(np.ascontiguousarray(words[:n_queries]), n_bits)
    database = PackedCodes(np.ascontiguousarray(words[n_queries:]), n_bits)
    return queries, database, labels[:n_queries], labels[n_queries:]


def itq(features: npt.ArrayLike, n_bits: int, *, n_iter: int = 50,
        seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Iterative quantization (ITQ, Gong & Lazebnik 2011): PCA, then the rotation that brings
    the projected data closest to the corners of the hypercube.

    Alternates ``B = sign(V R)`` and the orthogonal Procrustes step ``R = argmin ||B - V R||``
    (an SVD of ``B^T V``), starting from a random orthogonal ``R``. numpy only.

    Parameters
    ----------
    features : array_like of float, shape (n, n_features)
        Training data (centered inside).
    n_bits : int
        Code length, 1 <= n_bits <= min(n, n_features).
    n_iter : int, default 50
        Rotation updates.
    seed : int, default 0
        Seed of the initial random rotation.

    Returns
    -------
    mean : ndarray of float64, shape (n_features,)
    projection : ndarray of float64, shape (n_features, n_bits)
        PCA directions times the learned rotation: the code of ``x`` is
        ``(x - mean) @ projection >= 0``.
    losses : ndarray of float64, shape (n_iter + 1,)
        Quantization loss ``||B - V R||_F^2`` after each update (never increases).
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2:
        raise InputError(f"features must be 2-D (n, n_features), got shape {x.shape}")
    if not 1 <= n_bits <= min(x.shape):
        raise InputError(f"{{n_bits}} must be in [1, {min(x.shape)}] (the data's rank bound), got {n_bits}",
                         argument="n_bits")
    mean = x.mean(axis=0)
    centered = x - mean
    # PCA directions: right singular vectors of the centered data, largest variance first
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    pca = vt[:n_bits].T
    v = centered @ pca
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.standard_normal((n_bits, n_bits)))
    losses = np.empty(n_iter + 1)
    for it in range(n_iter + 1):
        z = v @ rotation
        b = np.where(z >= 0, 1.0, -1.0)
        losses[it] = float(np.sum((b - z) ** 2))
        if it == n_iter:
            break
        # Procrustes: R = argmin over orthogonal R of ||B - V R||_F = U_A U_B^T with B^T V = U_B S U_A^T
        u_b, _, u_a_t = np.linalg.svd(b.T @ v)
        rotation = u_a_t.T @ u_b.T
    return mean, pca @ rotation, losses


def digits_hashing(n_bits: int = 32, n_queries: int = 200, *, n_iter: int = 50,
                   seed: int = 0) -> tuple[PackedCodes, PackedCodes, np.ndarray, np.ndarray]:
    """scikit-learn's bundled digits (1,797 8x8 images, 10 classes) hashed by ITQ.

    Queries are ``n_queries`` images drawn at random (``seed``); the rest is the database.
    PCA and the ITQ rotation are learned on the database only, then applied to both.

    Parameters
    ----------
    n_bits : int, default 32
        Code length, 1..64 (the images have 64 pixels).
    n_queries : int, default 200
        Query images, 1..1796.
    n_iter : int, default 50
        ITQ iterations.
    seed : int, default 0
        Seed of the query split and of ITQ's initial rotation.

    Returns
    -------
    queries, database : PackedCodes
    query_labels, db_labels : ndarray of int64, the digit (0-9) of each image

    Raises
    ------
    ImportError
        When scikit-learn (which ships the images) is not installed.

    Examples
    --------
    >>> import fasttie as ft
    >>> q, db, ql, dl = ft.datasets.digits_hashing(16, 100)
    >>> q.n_bits, q.n, db.n
    (16, 100, 1697)
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError(
            "scikit-learn is needed for the digits data set (it ships the images): pip install scikit-learn"
        ) from None
    digits = load_digits()
    images, labels = digits.data.astype(np.float64), digits.target.astype(np.int64)
    if not 1 <= n_bits <= images.shape[1]:
        raise InputError(f"{{n_bits}} must be in [1, {images.shape[1]}] for the 8x8 digits, got {n_bits}",
                         argument="n_bits")
    if not 1 <= n_queries < len(images):
        raise InputError(f"n_queries must be in [1, {len(images) - 1}], got {n_queries}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(images))
    query_rows, db_rows = np.sort(order[:n_queries]), np.sort(order[n_queries:])
    mean, projection, _ = itq(images[db_rows], n_bits, n_iter=n_iter, seed=seed)
    codes = (images - mean) @ projection >= 0
    return (
        pack_codes(codes[query_rows], name="queries"),
        pack_codes(codes[db_rows], name="database"),
        labels[query_rows],
        labels[db_rows],
    )


@dataclass
class BinarizedEmbeddings:
    """Float embeddings and their sign-quantized codes (:func:`binarized_embeddings`).

    Attributes
    ----------
    query_vectors, db_vectors : ndarray of float32, shapes (n_queries, dim), (n_db, dim)
        Unit vectors (inner product = cosine similarity).
    query_codes, db_codes : PackedCodes
        One bit per dimension: set where the coordinate is > 0 (sentence-transformers'
        ``quantize_embeddings(..., precision="ubinary")``, Qdrant's binary quantization).
    query_labels, db_labels : ndarray of int64
        The cluster each vector was drawn from.
    """

    query_vectors: np.ndarray
    db_vectors: np.ndarray
    query_codes: PackedCodes
    db_codes: PackedCodes
    query_labels: np.ndarray
    db_labels: np.ndarray


def binarized_embeddings(n_db: int = 20000, n_queries: int = 200, dim: int = 256, n_clusters: int = 100, *,
                         noise: float = 2.0, seed: int = 0) -> BinarizedEmbeddings:
    """Synthetic text-embedding-like vectors and their one-bit-per-dimension codes.

    Clustered Gaussian vectors: each cluster has a centre drawn from N(0, I); each vector is its
    centre plus N(0, noise^2 I), normalized to unit length, and its code is the sign of each
    coordinate. Nearby vectors then share most bits, and with many items per cluster the
    Hamming distances (integers 0..dim) tie heavily, as with binarized sentence embeddings.

    Parameters
    ----------
    n_db, n_queries : int
        Database and query vectors (queries are drawn like the database, not from it).
    dim : int
        Dimensions, which are also the code bits.
    n_clusters : int
        Clusters, drawn uniformly (the labels: relevant = same cluster).
    noise : float
        Spread of a cluster around its centre, relative to the spread of the centres.
    seed : int

    Returns
    -------
    BinarizedEmbeddings

    Examples
    --------
    >>> import fasttie as ft
    >>> data = ft.datasets.binarized_embeddings(n_db=100, n_queries=3, dim=64, seed=1)
    >>> data.db_vectors.shape, data.db_codes.n_bits, data.query_labels.shape
    ((100, 64), 64, (3,))
    """
    for name, value in (("n_db", n_db), ("n_queries", n_queries), ("dim", dim), ("n_clusters", n_clusters)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{{{name}}} must be an integer >= 1, got {value!r}", argument=name)
    if not noise >= 0:
        raise InputError(f"{{noise}} must be >= 0, got {noise!r}", argument="noise")
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, dim)).astype(np.float32)
    labels = rng.integers(0, n_clusters, n_queries + n_db)
    vectors = np.empty((n_queries + n_db, dim), dtype=np.float32)
    for start in range(0, len(labels), _ROWS_PER_CHUNK):
        stop = min(len(labels), start + _ROWS_PER_CHUNK)
        block = centres[labels[start:stop]] + np.float32(noise) * rng.standard_normal((stop - start, dim),
                                                                                        dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        vectors[start:stop] = block
    codes = pack_codes(vectors > 0)
    return BinarizedEmbeddings(
        query_vectors=vectors[:n_queries], db_vectors=vectors[n_queries:],
        query_codes=PackedCodes(np.ascontiguousarray(codes.words[:n_queries]), dim),
        db_codes=PackedCodes(np.ascontiguousarray(codes.words[n_queries:]), dim),
        query_labels=labels[:n_queries], db_labels=labels[n_queries:],
    )
