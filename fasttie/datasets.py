"""Synthetic hashing data generated on the fly (the demo's embedded default, benchmarks).

Every class has a random prototype code; every item flips each bit of its class prototype
independently with probability ``flip``. Same-class pairs then sit at Hamming distance about
Binomial(n_bits, 2 flip (1 - flip)), other pairs about Binomial(n_bits, 1/2): the two overlap
and every distance bucket holds many ties, as with learned codes.
"""

from __future__ import annotations

import numpy as np

from .codes import PackedCodes

__all__ = ["synthetic_hashing"]

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
):
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
        raise ValueError(f"n_bits must be a positive multiple of 64, got {n_bits}")
    if not 0.0 <= flip <= 0.5:
        raise ValueError(f"flip must be in [0, 0.5], got {flip}")
    if min(n_queries, n_db, n_classes) < 1:
        raise ValueError("n_queries, n_db and n_classes must be >= 1")
    rng = np.random.default_rng(seed)
    n_words = n_bits // 64
    prototypes = rng.integers(0, 2**64, (n_classes, n_words), dtype=np.uint64)
    labels = rng.integers(0, n_classes, n_queries + n_db)
    words = prototypes[labels] ^ _flip_masks(rng, n_queries + n_db, n_words, flip)
    queries = PackedCodes(np.ascontiguousarray(words[:n_queries]), n_bits)
    database = PackedCodes(np.ascontiguousarray(words[n_queries:]), n_bits)
    return queries, database, labels[:n_queries], labels[n_queries:]
