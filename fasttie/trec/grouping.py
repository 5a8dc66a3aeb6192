"""Row keys, grouping by query and duplicate checks of TREC tables (package-internal).

Every row gets a 64-bit hash of its document id (and, in qrels, of its iteration column), the
query mixed in with :data:`QUERY_KEY`; the table reader's compiled pass
(:mod:`fasttie._kernels.trec_parse`) computes the same hashes from ``_WORD_KEYS`` and ``_MIX``
as :func:`byte_matrix_hash` and :func:`hash_strings` here. Equal hashes are only candidates:
duplicates are confirmed by comparing the strings (:func:`raise_duplicate`), and the join
confirms every match (:func:`fasttie.trec.join.align`), so a hash collision never changes a
result.
:class:`Segments` groups rows by query while moving whole runs of one query at a time.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

__all__ = ["ITER_KEY", "QUERY_KEY", "Segments", "byte_matrix_hash", "hash_strings", "raise_duplicate"]

# odd 64-bit multipliers of the row hash (docno bytes -> uint64), one per 8-byte word position
_WORD_KEYS = np.array(
    [0x9E3779B97F4A7C15 ^ (0x632BE59BD9B4E019 * (j + 1) % (1 << 64)) | 1 for j in range(64)],
    dtype=np.uint64,
)
_MIX = np.uint64(0xFF51AFD7ED558CCD)
QUERY_KEY = np.uint64(0xC4CEB9FE1A85EC53)  # multiplies (query code + 1) in a row's key
ITER_KEY = np.uint64(0x94D049BB133111EB)   # multiplies the iteration hash in a qrels row's key


def _hash_words(words: np.ndarray) -> np.ndarray:
    """uint64 hash of each row of a (n, n_words) uint64 matrix; all-zero words add nothing, so
    the value does not depend on how much zero padding follows a string."""
    h = np.zeros(len(words), dtype=np.uint64)
    step = 1 << 16  # rows per pass, so the columns of a large matrix are read from cache
    for lo in range(0, len(words), step):
        part, acc = words[lo : lo + step], h[lo : lo + step]
        x = np.empty(len(part), dtype=np.uint64)
        for j in range(words.shape[1]):
            np.multiply(part[:, j], _WORD_KEYS[j % len(_WORD_KEYS)], out=x)
            x ^= x >> np.uint64(29)
            x *= _MIX
            acc += x
    h ^= h >> np.uint64(32)
    return h


def byte_matrix_hash(mat: np.ndarray) -> np.ndarray:
    """Hash of zero-padded UTF-8 byte rows, shape (n, width) uint8 with width % 8 == 0."""
    return _hash_words(np.ascontiguousarray(mat).view(np.uint64))


def hash_strings(strings: np.ndarray) -> np.ndarray:
    """Hash of each string of a str array, equal to the reader's hash of the same text."""
    n = len(strings)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    width = strings.dtype.itemsize // 4
    if width == 0:
        return np.zeros(n, dtype=np.uint64)
    codes = np.ascontiguousarray(strings).view(np.uint32).reshape(n, width)
    if codes.max() < 128:
        padded = np.zeros((n, -(-width // 8) * 8), dtype=np.uint8)
        padded[:, :width] = codes
    else:
        encoded = np.char.encode(strings, "utf-8")
        nbytes = encoded.dtype.itemsize
        padded = np.zeros((n, -(-nbytes // 8) * 8), dtype=np.uint8)
        padded[:, :nbytes] = np.ascontiguousarray(encoded).view(np.uint8).reshape(n, nbytes)
    return byte_matrix_hash(padded)


class Segments:
    """Rows as maximal runs of one query ("segments"): query code and length of each run.

    Files are nearly always written query by query, so a handful of segments describe the
    grouping of millions of rows, and regrouping moves whole slices instead of single rows.
    """

    def __init__(self, codes: np.ndarray, lengths: np.ndarray, n_queries: int):
        self.codes, self.lengths = codes.astype(np.int64), lengths.astype(np.int64)
        self.starts = np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)
        self.n_rows = int(self.lengths.sum())
        counts = np.bincount(self.codes, weights=self.lengths, minlength=n_queries)
        self.offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self.grouped = len(self.codes) < 2 or bool(np.all(self.codes[1:] >= self.codes[:-1]))

    @classmethod
    def from_codes(cls, codes: np.ndarray, n_queries: int) -> "Segments":
        heads = np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1)) if len(codes) else np.zeros(0, dtype=np.int64)
        return cls(codes[heads], np.diff(np.append(heads, len(codes))), n_queries)

    def query_of(self, rows) -> np.ndarray:
        """Query code of rows (file order)."""
        return self.codes[np.searchsorted(self.starts, rows, side="right") - 1]

    def regroup(self, *columns):
        """The columns with rows grouped by query code (stable): whole segments are copied."""
        if self.grouped:
            return columns
        order = np.argsort(self.codes, kind="stable")
        if len(order) * 16 > self.n_rows:  # short segments: one gather per row
            new_starts = np.concatenate(([0], np.cumsum(self.lengths[order])[:-1]))
            rows = np.repeat(self.starts[order] - new_starts, self.lengths[order]) + np.arange(self.n_rows)
            return tuple(column[rows] for column in columns)
        out = []
        for column in columns:
            grouped = np.empty_like(column)
            at = 0
            for start, length in zip(self.starts[order].tolist(), self.lengths[order].tolist()):
                grouped[at : at + length] = column[start : start + length]
                at += length
            out.append(grouped)
        return tuple(out)


def raise_duplicate(keys, docno, iteration, query_ids, query_of, lines, where, kind, path=None, rows=None):
    """Raise ValueError on the first repeated (query, [iteration,] docno) in row order.

    ``keys`` hash each row's triple; equal hashes are only candidates, confirmed by comparing
    the strings, so a hash collision never raises. ``rows``: the candidate rows, ascending, when
    the caller found them (the table reader does, block by block); ``keys`` is then unused.
    """
    if rows is None:
        if len(keys) < 2:
            return
        ordered = np.sort(keys)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if repeated.size == 0:
            return
        rows = np.flatnonzero(np.isin(keys, repeated, kind="sort"))  # numpy 2.0's "table" overflows on uint64
    if len(rows) == 0:
        return
    queries = query_of(rows)
    seen = {}
    for row, query in zip(rows.tolist(), queries.tolist()):
        key = (query, str(docno[row]), None if iteration is None else str(iteration[row]))
        if key in seen:
            line, first = (int(x) for x in lines(np.array([row, seen[key]])))
            subtopic = "" if iteration is None else f" and iteration {key[2]!r}"
            prefix = f"{path}, line {line}" if path is not None else f"{where} {line}"
            raise InputError(
                f"{prefix}: duplicate document {key[1]!r} for query {str(query_ids[query])!r}{subtopic} "
                f"in the {kind} (first seen on {where} {first})"
            )
        seen[key] = row
