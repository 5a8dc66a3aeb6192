"""Seeded synthetic hashing data for the benchmarks: fasttie.datasets plus converters.

Codes are correlated with the class: every class has a random prototype code and every item
flips each bit of its class prototype independently with probability ``flip`` (default 0.25).
Same-class pairs are then at Hamming distance ~ Binomial(n_bits, 2 p (1 - p)) = 0.375 n_bits,
other pairs ~ Binomial(n_bits, 0.5), so the distances overlap and every distance bucket holds
many ties, as with real learned codes.

Codes are produced directly as little-endian uint64 words (bit j of a code is bit j % 64 of
word j // 64), which is fast even for 10^6 x 256 bits; converters give the views the baselines
need (float32 +-1 matrices, faiss bytes).

Shared by the asv benchmarks (``from .data.synthetic import ...``) and the scripts
(``from benchmarks.data.synthetic import ...``, with ``asv_bench/`` on ``sys.path``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._common import import_fasttie

ft = import_fasttie("datasets")  # under asv the commit under test; the scripts: the checkout

_CHUNK_ROWS = 1 << 16


@dataclass
class HashingData:
    """Query and database codes as (n, n_bits // 64) uint64 words, plus class ids."""

    query_words: np.ndarray
    db_words: np.ndarray
    query_labels: np.ndarray
    db_labels: np.ndarray
    n_bits: int

    @property
    def n_queries(self) -> int:
        return self.query_words.shape[0]

    @property
    def n_db(self) -> int:
        return self.db_words.shape[0]


def make_hashing_data(
    n_queries: int,
    n_db: int,
    n_bits: int = 64,
    n_classes: int = 10,
    flip: float = 0.25,
    seed: int = 0,
) -> HashingData:
    """Seeded class-correlated codes (fasttie.datasets.synthetic_hashing) as bare words."""
    queries, database, query_labels, db_labels = ft.datasets.synthetic_hashing(
        n_queries, n_db, n_bits, n_classes, flip=flip, seed=seed
    )
    return HashingData(queries.words, database.words, query_labels, db_labels, n_bits)


def words_to_bytes(words: np.ndarray) -> np.ndarray:
    """(n, n_words) uint64 -> (n, 8 n_words) uint8, bit order "little" (faiss, MATLAB compactbit)."""
    words = np.ascontiguousarray(words, dtype="<u8")
    return words.view(np.uint8).reshape(words.shape[0], -1)


def words_to_pm1(words: np.ndarray, n_bits: int, dtype=np.float32) -> np.ndarray:
    """(n, n_words) uint64 -> (n, n_bits) matrix of -1/+1 (bit 1 -> +1), chunked to bound memory."""
    n = words.shape[0]
    out = np.empty((n, n_bits), dtype=dtype)
    for start in range(0, n, _CHUNK_ROWS):
        stop = min(n, start + _CHUNK_ROWS)
        bits = np.unpackbits(words_to_bytes(words[start:stop]), axis=1, bitorder="little")
        out[start:stop] = bits[:, :n_bits]
        out[start:stop] *= 2
        out[start:stop] -= 1
    return out


def words_to_bool(words: np.ndarray, n_bits: int) -> np.ndarray:
    """(n, n_words) uint64 -> (n, n_bits) bool."""
    bits = np.unpackbits(words_to_bytes(words), axis=1, bitorder="little")
    return bits[:, :n_bits].astype(bool)
