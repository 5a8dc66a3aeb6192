"""TREC qrels and run files: fast columnar readers and trec_eval-compatible evaluation.

Formats (whitespace-separated, one record a line; blank lines and comment lines, whose first
non-blank character is ``#``, are skipped, as trec_eval 10.0 skips them):

- qrels: ``qid iter docno rel``. The second column is kept as text: diversity qrels (TREC Web
  track, ndeval) put the subtopic there. ``rel`` is an integer grade; negative grades (spam
  judgments) are judged non-relevant.
- run: ``qid Q0 docno rank score tag``. The ``Q0`` and ``rank`` columns are ignored, as
  trec_eval does: the ranking comes from the scores alone. Text after the tag is ignored
  (trec_eval reserves it; its test run ``results.trunc`` has some).

The readers parse the file in blocks with numpy (no per-line Python code on well-formed input),
which makes them several times faster than the usual ``line.split()`` loop. Parsing is strict
otherwise: a wrong number of columns (fewer than six in a run, other than four in qrels), a
grade or score that is not a number, a NaN or infinite score, and a duplicate ``(qid, docno)``
pair in a run (``(qid, iter, docno)`` in qrels) raise ``ValueError`` naming the file and the
1-based line number.

Rows are stored grouped by query: the unique query ids sorted as strings (``strcmp`` order,
the order of trec_eval's output), and within a query in file order.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .result import Result
from .errors import InputError, InputTypeError
from .validation import check_empty_policy

__all__ = ["Qrels", "Run", "Aligned", "read_qrels", "read_run", "align", "evaluate"]

_BLOCK = 1 << 21          # bytes read per block
_BOM = b"\xef\xbb\xbf"
_SNIPPET = 120            # characters of an offending line quoted in error messages

# odd 64-bit multipliers of the row hash (docno bytes -> uint64), one per 8-byte word position
_WORD_KEYS = np.array(
    [0x9E3779B97F4A7C15 ^ (0x632BE59BD9B4E019 * (j + 1) % (1 << 64)) | 1 for j in range(64)],
    dtype=np.uint64,
)
_BYTE_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)  # r low bytes
_MIX = np.uint64(0xFF51AFD7ED558CCD)
_QUERY_KEY = np.uint64(0xC4CEB9FE1A85EC53)
_ITER_KEY = np.uint64(0x94D049BB133111EB)
_POW10 = 10.0 ** np.arange(23)
_EXACT_F64 = np.uint64(1 << 53)
_bitwise_count = getattr(np, "bitwise_count", None)
_HAS_LONGDOUBLE = np.finfo(np.longdouble).nmant >= 63
if _HAS_LONGDOUBLE:
    _POW10_LD = np.array([10**i for i in range(20)], dtype=object).astype(np.longdouble)


# --------------------------------------------------------------------------------------------
# data classes
# --------------------------------------------------------------------------------------------


def _as_str_array(values, name):
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind != "U":
        if arr.size == 0:
            return arr.astype("U1")
        if arr.dtype.kind == "S":
            arr = np.char.decode(arr, "utf-8")
        else:
            arr = arr.astype(str)
    return arr


def _check_offsets(offsets, n_rows, n_queries):
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.shape != (n_queries + 1,):
        raise InputError(f"offsets must have n_queries + 1 = {n_queries + 1} entries, got {offsets.shape}")
    if offsets[0] != 0 or offsets[-1] != n_rows or np.any(np.diff(offsets) < 0):
        raise InputError(f"offsets must rise from 0 to the number of rows ({n_rows})")
    return offsets


class _Grouped:
    """Shared helpers of Qrels and Run: rows grouped by query through ``offsets``."""

    query_ids: np.ndarray
    offsets: np.ndarray
    docno: np.ndarray

    @property
    def n_queries(self) -> int:
        """Number of distinct query ids."""
        return len(self.query_ids)

    def __len__(self) -> int:
        return len(self.docno)

    @property
    def sizes(self) -> np.ndarray:
        """Rows per query, int64 array of shape (n_queries,), in ``query_ids`` order."""
        return np.diff(self.offsets)

    @property
    def qid_codes(self) -> np.ndarray:
        """Query index (into ``query_ids``) of every row, int64 array of shape (n_rows,)."""
        return np.repeat(np.arange(self.n_queries, dtype=np.int64), self.sizes)

    @property
    def qid(self) -> np.ndarray:
        """Query id of every row, str array of shape (n_rows,)."""
        return self.query_ids[self.qid_codes]

    def _index(self, qid) -> int:
        qid = str(qid)
        i = int(np.searchsorted(self.query_ids, qid))
        if i == len(self.query_ids) or self.query_ids[i] != qid:
            raise KeyError(f"query {qid!r} is not in the {type(self).__name__.lower()}")
        return i

    def _rows(self, qid) -> slice:
        i = self._index(qid)
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def __contains__(self, qid) -> bool:
        try:
            self._index(qid)
        except KeyError:
            return False
        return True

    def _check_layout(self):
        self.offsets = _check_offsets(self.offsets, len(self.docno), len(self.query_ids))
        if len(self.query_ids) > 1 and not np.all(self.query_ids[1:] > self.query_ids[:-1]):
            raise InputError("query_ids must be unique and sorted (use from_arrays to group rows)")

    def _docno_hash(self) -> np.ndarray:
        """uint64 hash of each docno (cached; the arrays are meant to be left unchanged)."""
        if self._hash is None or getattr(self, "_hash_of", None) is not self.docno or len(self._hash) != len(self.docno):
            self._hash = _hash_strings(self.docno)
        self._hash_of = self.docno
        return self._hash


@dataclass(eq=False, repr=False)
class Run(_Grouped):
    """A TREC run in columnar form, rows grouped by query.

    Attributes
    ----------
    query_ids : ndarray of str, shape (n_queries,)
        Distinct query ids, sorted as strings (trec_eval's output order).
    offsets : ndarray of int64, shape (n_queries + 1,)
        Rows of query ``query_ids[i]`` are ``offsets[i]:offsets[i + 1]``.
    docno : ndarray of str, shape (n_rows,)
        Document id of each row; within a query the rows keep their file order.
    score : ndarray of float64, shape (n_rows,)
        Retrieval score of each row (finite). The file's rank column is not kept.
    name : str or None
        The run tag (last column) of the first line of the file.
    path : str or None
        The file the run was read from.

    See Also
    --------
    read_run : read a run file.
    Run.from_arrays, Run.from_dict : build one in memory.

    Examples
    --------
    >>> run = Run.from_dict({"q1": {"d1": 2.0, "d2": 2.0, "d3": 1.0}})
    >>> run.query_ids, run.sizes
    (array(['q1'], dtype='<U2'), array([3]))
    >>> run.query("q1")
    (array(['d1', 'd2', 'd3'], dtype='<U2'), array([2., 2., 1.]))
    """

    query_ids: np.ndarray
    offsets: np.ndarray
    docno: np.ndarray
    score: np.ndarray
    name: str | None = None
    path: str | None = None
    _hash: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        self.query_ids = _as_str_array(self.query_ids, "query_ids")
        self.docno = _as_str_array(self.docno, "docno")
        self.score = np.asarray(self.score, dtype=np.float64)
        if self.score.shape != self.docno.shape:
            raise InputError(f"score has shape {self.score.shape} but docno has {self.docno.shape}")
        self._check_layout()
        self._hash_of = self.docno

    def __repr__(self) -> str:
        source = f", path={self.path!r}" if self.path else ""
        return f"Run(n_queries={self.n_queries}, n_rows={len(self)}, name={self.name!r}{source})"

    def query(self, qid) -> tuple[np.ndarray, np.ndarray]:
        """Document ids and scores of one query (views, file order).

        Raises
        ------
        KeyError
            When the run has no row for ``qid``.
        """
        rows = self._rows(qid)
        return self.docno[rows], self.score[rows]

    def items(self):
        """Yield ``(qid, docno, score)`` for every query, in ``query_ids`` order."""
        for i, qid in enumerate(self.query_ids):
            rows = slice(int(self.offsets[i]), int(self.offsets[i + 1]))
            yield str(qid), self.docno[rows], self.score[rows]

    def to_dict(self) -> dict:
        """``{qid: {docno: score}}``, the layout of pytrec_eval and ranx."""
        return {qid: dict(zip(docno.tolist(), score.tolist())) for qid, docno, score in self.items()}

    @classmethod
    def from_arrays(cls, qid, docno, score, *, name=None) -> "Run":
        """Build a run from one entry per row (any order of queries).

        Parameters
        ----------
        qid, docno : array_like of shape (n_rows,)
            Query and document ids (converted to str).
        score : array_like of float, shape (n_rows,)
            Finite scores.
        name : str, optional
            Run tag.

        Raises
        ------
        ValueError
            Lengths that differ, a NaN or infinite score, or a duplicate (qid, docno) pair.
        """
        qid = _as_str_array(qid, "qid")
        docno = _as_str_array(docno, "docno")
        score = np.asarray(score, dtype=np.float64)
        if not (len(qid) == len(docno) == len(score)) or score.ndim != 1:
            raise InputError(f"qid, docno and score must be 1-D of one length, got {len(qid)}, {len(docno)}, {score.shape}")
        bad = np.flatnonzero(~np.isfinite(score))
        if bad.size:
            raise InputError(f"score of row {bad[0]} (qid {qid[bad[0]]!r}, docno {docno[bad[0]]!r}) is {score[bad[0]]}; scores must be finite")
        query_ids, codes = np.unique(qid, return_inverse=True)
        codes = codes.ravel()
        hashes = _hash_strings(docno)
        keys = hashes + (codes.astype(np.uint64) + np.uint64(1)) * _QUERY_KEY
        _raise_duplicate(keys, docno, None, query_ids, lambda rows: codes[rows], lambda rows: rows, "row", "run")
        segments = _Segments.from_codes(codes, len(query_ids))
        docno, score, hashes = segments.regroup(docno, score, hashes)
        return cls(query_ids, segments.offsets, docno, score, name=name, _hash=hashes)

    @classmethod
    def from_dict(cls, run: dict, *, name=None) -> "Run":
        """Build a run from ``{qid: {docno: score}}`` (pytrec_eval / ranx layout)."""
        qid = [q for q, docs in run.items() for _ in docs]
        docno = [d for docs in run.values() for d in docs]
        score = [s for docs in run.values() for s in docs.values()]
        return cls.from_arrays(np.array(qid, dtype=str), np.array(docno, dtype=str), score, name=name)


@dataclass(eq=False, repr=False)
class Qrels(_Grouped):
    """TREC relevance judgments in columnar form, rows grouped by query.

    Attributes
    ----------
    query_ids : ndarray of str, shape (n_queries,)
        Distinct query ids, sorted as strings.
    offsets : ndarray of int64, shape (n_queries + 1,)
        Rows of query ``query_ids[i]`` are ``offsets[i]:offsets[i + 1]``.
    docno : ndarray of str, shape (n_rows,)
        Judged document of each row, file order within a query.
    rel : ndarray of int64, shape (n_rows,)
        Relevance grade. Negative grades are judged non-relevant (trec_eval).
    iteration : ndarray of str, shape (n_rows,)
        The second column as written: ``"0"`` in ad hoc qrels, the subtopic number in
        diversity qrels, where one document may be judged once per subtopic.
    path : str or None
        The file the judgments were read from.

    Examples
    --------
    >>> qrels = Qrels.from_dict({"q1": {"d1": 2, "d3": 0}})
    >>> qrels.query("q1")
    (array(['d1', 'd3'], dtype='<U2'), array([2, 0]), array(['0', '0'], dtype='<U1'))
    """

    query_ids: np.ndarray
    offsets: np.ndarray
    docno: np.ndarray
    rel: np.ndarray
    iteration: np.ndarray
    path: str | None = None
    _hash: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        self.query_ids = _as_str_array(self.query_ids, "query_ids")
        self.docno = _as_str_array(self.docno, "docno")
        self.iteration = _as_str_array(self.iteration, "iteration")
        self.rel = np.asarray(self.rel)
        if self.rel.dtype.kind not in "iub":
            raise InputTypeError(f"rel must be integers, got dtype {self.rel.dtype}")
        self.rel = self.rel.astype(np.int64)
        if not (self.rel.shape == self.docno.shape == self.iteration.shape):
            raise InputError(f"docno, rel and iteration must have one shape, got {self.docno.shape}, {self.rel.shape}, {self.iteration.shape}")
        self._check_layout()
        self._hash_of = self.docno

    def __repr__(self) -> str:
        source = f", path={self.path!r}" if self.path else ""
        return f"Qrels(n_queries={self.n_queries}, n_rows={len(self)}{source})"

    def query(self, qid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Judged documents, grades and iteration (subtopic) column of one query (views).

        Raises
        ------
        KeyError
            When the qrels have no judgment for ``qid``.
        """
        rows = self._rows(qid)
        return self.docno[rows], self.rel[rows], self.iteration[rows]

    def items(self):
        """Yield ``(qid, docno, rel, iteration)`` for every query, in ``query_ids`` order."""
        for i, qid in enumerate(self.query_ids):
            rows = slice(int(self.offsets[i]), int(self.offsets[i + 1]))
            yield str(qid), self.docno[rows], self.rel[rows], self.iteration[rows]

    def to_dict(self) -> dict:
        """``{qid: {docno: rel}}`` (pytrec_eval layout); a document judged under several
        subtopics keeps its highest grade."""
        out = {}
        for qid, docno, rel, _ in self.items():
            judged = {}
            for d, r in zip(docno.tolist(), rel.tolist()):
                judged[d] = max(r, judged.get(d, r))
            out[qid] = judged
        return out

    @classmethod
    def from_arrays(cls, qid, docno, rel, iteration=None) -> "Qrels":
        """Build judgments from one entry per row (any order of queries).

        Parameters
        ----------
        qid, docno : array_like of shape (n_rows,)
            Query and document ids (converted to str).
        rel : array_like of int, shape (n_rows,)
            Grades.
        iteration : array_like of shape (n_rows,), optional
            Second column (subtopic); ``"0"`` for every row by default.

        Raises
        ------
        ValueError
            Lengths that differ, or a duplicate (qid, iteration, docno) triple.
        """
        qid = _as_str_array(qid, "qid")
        docno = _as_str_array(docno, "docno")
        rel = np.asarray(rel)
        if rel.dtype.kind not in "iub":
            if rel.dtype.kind == "f" and np.all(np.isfinite(rel)) and np.all(rel == np.round(rel)):
                rel = rel.astype(np.int64)
            else:
                raise InputTypeError(f"rel must be integers, got dtype {rel.dtype}")
        rel = rel.astype(np.int64)
        iteration = np.full(len(qid), "0") if iteration is None else _as_str_array(iteration, "iteration")
        if not (len(qid) == len(docno) == len(rel) == len(iteration)) or rel.ndim != 1:
            raise InputError(
                f"qid, docno, rel and iteration must be 1-D of one length, got {len(qid)}, {len(docno)}, {rel.shape}, {len(iteration)}"
            )
        query_ids, codes = np.unique(qid, return_inverse=True)
        codes = codes.ravel()
        hashes = _hash_strings(docno)
        keys = hashes + (codes.astype(np.uint64) + np.uint64(1)) * _QUERY_KEY + _hash_strings(iteration) * _ITER_KEY
        _raise_duplicate(keys, docno, iteration, query_ids, lambda rows: codes[rows], lambda rows: rows, "row", "qrels")
        segments = _Segments.from_codes(codes, len(query_ids))
        docno, rel, iteration, hashes = segments.regroup(docno, rel, iteration, hashes)
        return cls(query_ids, segments.offsets, docno, rel, iteration, _hash=hashes)

    @classmethod
    def from_dict(cls, qrels: dict) -> "Qrels":
        """Build judgments from ``{qid: {docno: rel}}`` (pytrec_eval layout)."""
        qid = [q for q, docs in qrels.items() for _ in docs]
        docno = [d for docs in qrels.values() for d in docs]
        rel = np.array([r for docs in qrels.values() for r in docs.values()], dtype=np.int64)
        return cls.from_arrays(np.array(qid, dtype=str), np.array(docno, dtype=str), rel)


# --------------------------------------------------------------------------------------------
# hashing, grouping and duplicate checks
# --------------------------------------------------------------------------------------------


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


def _byte_matrix_hash(mat: np.ndarray) -> np.ndarray:
    """Hash of zero-padded UTF-8 byte rows, shape (n, width) uint8 with width % 8 == 0."""
    return _hash_words(np.ascontiguousarray(mat).view(np.uint64))


def _hash_strings(strings: np.ndarray) -> np.ndarray:
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
    return _byte_matrix_hash(padded)


class _Segments:
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
    def from_codes(cls, codes: np.ndarray, n_queries: int) -> "_Segments":
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


def _raise_duplicate(keys, docno, iteration, query_ids, query_of, lines, where, kind, path=None):
    """Raise ValueError on the first repeated (query, [iteration,] docno) in row order.

    ``keys`` hash each row's triple; equal hashes are only candidates, confirmed by comparing
    the strings, so a hash collision never raises.
    """
    if len(keys) < 2:
        return
    ordered = np.sort(keys)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated.size == 0:
        return
    rows = np.flatnonzero(np.isin(keys, repeated))
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


# --------------------------------------------------------------------------------------------
# block tokenizer and number parsing
# --------------------------------------------------------------------------------------------


def _blocks(path, block_size=None):
    """Yield blocks of whole lines covering the file, as ``(source, lo, hi)``: bytes
    ``source[lo:hi]`` (a uint8 array) end with a newline.

    Regular files are memory-mapped, so blocks are views (no copies); other files are read
    block by block. A last line without a newline gets one, in a copy of that line.
    """
    block_size = block_size or _BLOCK
    with open(path, "rb") as f:
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # empty file, pipe, ...
            mapped = None
        if mapped is None:
            yield from _read_blocks(f, block_size)
            return
        source = np.frombuffer(mapped, dtype=np.uint8)
        try:
            n = len(source)
            pos = len(_BOM) if mapped[: len(_BOM)] == _BOM else 0
            while pos < n:
                cut = mapped.rfind(b"\n", pos, min(pos + block_size, n)) + 1
                if cut <= pos:  # no newline within a block: a very long line
                    cut = mapped.find(b"\n", min(pos + block_size, n)) + 1
                if cut <= pos:  # the last line has no newline
                    tail = np.frombuffer(mapped[pos:n] + b"\n", dtype=np.uint8)
                    yield tail, 0, len(tail)
                    break
                yield source, pos, cut
                pos = cut
        finally:
            del source
            try:
                mapped.close()
            except BufferError:  # views still referenced (an exception unwinding): GC closes it
                pass


def _read_blocks(f, block_size):
    carry = f.read(len(_BOM))
    if carry == _BOM:
        carry = b""
    while True:
        block = f.read(block_size)
        if not block:
            if carry:
                data = np.frombuffer(carry + b"\n", dtype=np.uint8)
                yield data, 0, len(data)
            return
        data = carry + block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            continue
        yield np.frombuffer(data, dtype=np.uint8), 0, cut
        carry = data[cut:]


class _Block:
    """One block of whole lines, ``source[lo:hi]``, tokenized into n_cols columns.

    Blank lines and comment lines (first non-blank character ``#``, as trec_eval) hold no
    row. With ``extra_ok``, tokens after the first n_cols of a line are dropped (trec_eval
    ignores what follows a run line's tag); otherwise a line needs exactly n_cols tokens.
    Token offsets are relative to ``lo``.
    """

    def __init__(self, source: np.ndarray, lo: int, hi: int, line0: int, n_cols: int, path, spec: str,
                 extra_ok: bool = False):
        self.source, self.lo, self.hi, self.line0, self.path = source, lo, hi, line0, path
        self.row_lines = None  # 0-based line of each row inside the block; None = row i on line i
        body = source[lo:hi]
        space = body <= 32
        sep = np.flatnonzero(space)
        n_lines = len(sep) // n_cols
        fast = len(sep) == n_cols * n_lines and sep[0] > 0
        if fast:  # one separator between fields, a newline after the last: no blank lines
            newline = body[sep] == 10
            fast = bool(
                np.count_nonzero(newline) == n_lines
                and np.all(newline[n_cols - 1 :: n_cols])
                and np.all(sep[1:] - sep[:-1] > 1)
            )
        # a comment line may have n_cols words: lines opening with '#' (rare) go the general way
        if fast and (body[0] == 35 or np.any(body[1:][sep[n_cols - 1 : -1 : n_cols]] == 35)):
            fast = False
        if fast:
            self.n_lines = n_lines
            self.starts, self.ends = None, sep.reshape(n_lines, n_cols)
        else:
            self.starts, self.ends = self._general(body, space, n_cols, spec, extra_ok)
        self.n_rows = len(self.ends)

    def _bytes(self, start: int, end: int) -> bytes:
        return self.source[self.lo + start : self.lo + end].tobytes()

    def span(self, col: int):
        """Start offsets and lengths of the tokens of one column."""
        ends = self.ends[:, col]
        if self.starts is not None:
            starts = self.starts[:, col]
        elif col > 0:
            starts = self.ends[:, col - 1] + 1
        else:
            starts = np.empty_like(ends)
            starts[0] = 0
            np.add(self.ends[:-1, -1], 1, out=starts[1:])
        return starts, ends - starts

    def _general(self, body, space, n_cols, spec, extra_ok):
        token = ~space
        starts = np.flatnonzero(token[1:] & space[:-1]) + 1
        if token[0]:
            starts = np.concatenate(([0], starts))
        ends = np.flatnonzero(token[:-1] & space[1:]) + 1
        newlines = np.flatnonzero(body == 10)
        self.n_lines = len(newlines)
        line_of = np.searchsorted(newlines, starts)
        counts = np.bincount(line_of, minlength=len(newlines))
        first = np.cumsum(counts) - counts  # each line's first token
        lines = np.flatnonzero(counts)
        comments = lines[body[starts[first[lines]]] == 35]  # O(lines): cheap when there are none
        if comments.size:
            keep = ~np.isin(line_of, comments)
            starts, ends, line_of = starts[keep], ends[keep], line_of[keep]
            counts[comments] = 0
            first = np.cumsum(counts) - counts
            lines = np.flatnonzero(counts)
        bad = np.flatnonzero((counts != 0) & ((counts < n_cols) if extra_ok else (counts != n_cols)))
        if bad.size:
            line = int(bad[0])
            expected = f"at least {n_cols}" if extra_ok else f"{n_cols}"
            raise InputError(
                f"{self.path}, line {self.line0 + line + 1}: expected {expected} columns ({spec}), "
                f"found {counts[line]}: {self._line_text(newlines, line)!r}"
            )
        if extra_ok and counts.max(initial=0) > n_cols:  # keep each line's first n_cols tokens
            keep = np.arange(len(starts)) - first[line_of] < n_cols
            starts, ends = starts[keep], ends[keep]
        self.row_lines = lines
        return starts.reshape(-1, n_cols), ends.reshape(-1, n_cols)

    def _line_text(self, newlines, line):
        start = 0 if line == 0 else int(newlines[line - 1]) + 1
        text = self._bytes(start, int(newlines[line])).decode("utf-8", "replace").rstrip("\r")
        return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."

    def lines(self, rows):
        """1-based file line numbers of rows of this block."""
        rows = np.asarray(rows, dtype=np.int64)
        return self.line0 + 1 + (rows if self.row_lines is None else self.row_lines[rows])

    def column(self, col: int):
        """Zero-padded bytes of one column: (n, width) uint8 with width % 8 == 0, and lengths."""
        starts, lengths = self.span(col)
        width = max(8, -(-int(lengths.max(initial=1)) // 8) * 8)
        if self.hi + width <= len(self.source):  # windows may run past the block, not the source
            mat = sliding_window_view(self.source, width)[starts + self.lo]
        else:
            size = self.hi - self.lo
            padded = np.zeros(size + width, dtype=np.uint8)
            padded[:size] = self.source[self.lo : self.hi]
            mat = sliding_window_view(padded, width)[starts]
        words = mat.view(np.uint64)
        for k in range(int(lengths.min(initial=width)) // 8, width // 8):  # zero what follows
            words[:, k] &= _BYTE_MASKS[np.clip(lengths - 8 * k, 0, 8)]
        return mat, lengths

    def text(self, row: int, col: int) -> str:
        end = int(self.ends[row, col])
        if self.starts is not None:
            start = int(self.starts[row, col])
        elif col > 0:
            start = int(self.ends[row, col - 1]) + 1
        else:
            start = 0 if row == 0 else int(self.ends[row - 1, -1]) + 1
        return self._bytes(start, end).decode("utf-8", "replace")

    def strings(self, mat, lengths, what):
        """str array of the rows of a column matrix (UTF-8 decoded)."""
        codes = self.code_points(mat, lengths, what)
        if codes.shape[1] == 0:
            return np.zeros(len(codes), dtype="U1")
        return np.ascontiguousarray(codes, dtype=np.uint32).view(np.dtype(("U", codes.shape[1])))[:, 0]

    def code_points(self, mat, lengths, what):
        """(n, width) matrix of the Unicode code points of each row, zero-padded: the bytes
        themselves for ASCII text, else the UTF-8 decoding (invalid UTF-8 raises)."""
        width = int(lengths.max(initial=0))
        sub = mat[:, :width]
        if len(sub) == 0 or sub.max(initial=0) < 128:
            return sub
        raw = np.ascontiguousarray(sub).view(np.dtype(("S", width)))[:, 0]
        try:
            text = np.char.decode(raw, "utf-8")
        except UnicodeDecodeError:
            for row, item in enumerate(raw.tolist()):
                try:
                    item.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise InputError(f"{self.path}, line {int(self.lines([row])[0])}: {what} is not valid UTF-8 ({err.reason})") from None
            raise  # pragma: no cover
        return text.view(np.uint32).reshape(len(text), -1)

    def release(self):
        """Drop the block's bytes; keep only what maps rows to lines."""
        self.source = self.starts = self.ends = None

    def fail(self, row, col, what, reason):
        raise InputError(f"{self.path}, line {int(self.lines([row])[0])}: {what} {self.text(row, col)!r} {reason}")


def _count_true(mask):
    """Number of True per row of a C-contiguous (n, width) bool matrix, width % 8 == 0."""
    words = mask.view(np.uint64)
    if _bitwise_count is None:
        return mask.sum(axis=1)
    counts = _bitwise_count(words[:, 0]).astype(np.int64)
    for j in range(1, words.shape[1]):
        counts += _bitwise_count(words[:, j])
    return counts


def _digits(mat, lengths):
    """Shared first step of number parsing: digit values, masks and counts per row."""
    values = mat - np.uint8(48)
    is_digit = values < 10
    first = mat[:, 0]
    negative = first == 45
    signed = negative | (first == 43)
    return values, is_digit, negative, signed, _count_true(is_digit)


def _horner(values, is_digit, width):
    """Integer value of the digits in the first ``width`` bytes of each row (other bytes are
    skipped), uint64; exact below 10**19."""
    digit = is_digit.view(np.uint8)  # 0/1 bytes: uint8 arithmetic, no bool casts
    multiplier = digit * np.uint8(9)
    multiplier += np.uint8(1)
    addend = values * digit
    mantissa = addend[:, 0].astype(np.uint64)
    for j in range(1, width):
        mantissa *= multiplier[:, j]
        mantissa += addend[:, j]
    return mantissa


def _parse_floats(block: _Block, col: int, what: str) -> np.ndarray:
    """Scores of one column: decimal literals exactly as ``float()`` reads them (correctly
    rounded), others through ``float()``; NaN, infinities and junk raise with the line."""
    mat, lengths = block.column(col)
    values, is_digit, negative, signed, n_digits = _digits(mat, lengths)
    is_dot = mat == 46
    n_dots = _count_true(is_dot)
    fast = (n_digits + n_dots + signed == lengths) & (n_dots <= 1) & (n_digits >= 1) & (n_digits <= 19)
    mantissa = _horner(values, is_digit, int(lengths.max()))
    frac = np.where(fast & (n_dots > 0), lengths - 1 - is_dot.argmax(axis=1), 0)
    out = mantissa.astype(np.float64) / _POW10[frac]
    slow = ~fast
    wide = fast & (mantissa >= _EXACT_F64)  # Clinger's fast path needs an exact mantissa
    if wide.any():
        if _HAS_LONGDOUBLE:
            rows = np.flatnonzero(wide)
            quotient = mantissa[rows].astype(np.longdouble) / _POW10_LD[frac[rows]]
            nearest = quotient.astype(np.float64)
            residue = quotient - nearest.astype(np.longdouble)
            other = np.nextafter(nearest, np.where(residue > 0, np.inf, -np.inf))
            midpoint = (nearest.astype(np.longdouble) + other.astype(np.longdouble)) / 2
            # rounding twice is wrong only where the extended result sits on a double midpoint
            ambiguous = (residue != 0) & (quotient == midpoint)
            out[rows] = nearest
            slow[rows[ambiguous]] = True
        else:
            slow |= wide
    np.negative(out, out=out, where=negative)
    for row in np.flatnonzero(slow).tolist():
        text = block.text(row, col)
        try:
            if "_" in text:
                raise ValueError
            value = float(text)
        except ValueError:
            block.fail(row, col, what, "is not a number")
        if not np.isfinite(value):
            block.fail(row, col, what, "is not finite (NaN and infinite scores are not allowed)")
        out[row] = value
    return out


def _parse_ints(block: _Block, col: int, what: str) -> np.ndarray:
    """Integers of one column (optional sign, decimal digits); anything else raises."""
    mat, lengths = block.column(col)
    values, is_digit, negative, signed, n_digits = _digits(mat, lengths)
    fast = (n_digits + signed == lengths) & (n_digits >= 1) & (n_digits <= 18)
    out = _horner(values, is_digit, int(lengths.max())).astype(np.int64)
    np.negative(out, out=out, where=negative)
    for row in np.flatnonzero(~fast).tolist():
        text = block.text(row, col)
        try:
            if "_" in text:
                raise ValueError
            value = int(text)
        except ValueError:
            block.fail(row, col, what, "is not an integer")
        if not -(2**63) <= value < 2**63:
            block.fail(row, col, what, "does not fit in int64")
        out[row] = value
    return out


def _query_segments(block: _Block):
    """Runs of equal consecutive query ids in a block: (ids of the runs, run lengths)."""
    mat, lengths = block.column(0)
    words = mat.view(np.uint64)
    change = words[1:, 0] != words[:-1, 0]
    for j in range(1, words.shape[1]):
        change |= words[1:, j] != words[:-1, j]
    heads = np.concatenate(([0], np.flatnonzero(change) + 1))
    run_lengths = np.diff(np.append(heads, len(words)))
    return block.strings(mat[heads], lengths[heads], "query id"), run_lengths, _byte_matrix_hash(mat[heads])


class _LineMap:
    """Global row -> 1-based file line, over the blocks of one file."""

    def __init__(self, blocks):
        self.blocks = blocks
        self.row0 = np.cumsum([0] + [b.n_rows for b in blocks])

    def __call__(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        which = np.searchsorted(self.row0, rows, side="right") - 1
        return np.array([self.blocks[b].lines([r - self.row0[b]])[0] for b, r in zip(which, rows)])


class _Text:
    """Code points of one block's strings, (n, width) integer matrix (see _Block.code_points)."""

    def __init__(self, codes):
        self.codes = codes


class _Growing:
    """A column filled block by block in place (no list of pieces to concatenate at the end).

    Numbers go to a 1-D array; text (:class:`_Text` pieces) to a (rows, width) uint32 matrix of
    code points that becomes a str array without a copy. Capacity and width grow on demand.
    """

    def __init__(self, capacity):
        self.capacity, self.n, self.data = max(int(capacity), 16), 0, None

    def add(self, piece):
        text = isinstance(piece, _Text)
        values = piece.codes if text else piece
        k = len(values)
        if self.data is None:
            shape = (self.capacity, values.shape[1]) if text else (self.capacity,)
            self.data = np.zeros(shape, dtype=np.uint32 if text else values.dtype)
        width = self.data.shape[1] if text else 0
        if self.n + k > len(self.data) or (text and values.shape[1] > width):
            rows = len(self.data) if self.n + k <= len(self.data) else max(self.n + k, len(self.data) * 3 // 2)
            grown = np.zeros((rows, max(width, values.shape[1])) if text else (rows,), dtype=self.data.dtype)
            if text:
                grown[: self.n, :width] = self.data[: self.n]
            else:
                grown[: self.n] = self.data[: self.n]
            self.data = grown
        if text:
            self.data[self.n : self.n + k, : values.shape[1]] = values
        else:
            self.data[self.n : self.n + k] = values
        self.n += k

    def result(self):
        if self.data is None:
            return np.zeros(0)
        out = self.data[: self.n]
        if out.ndim == 2:
            return out.view(np.dtype(("U", out.shape[1])))[:, 0] if out.shape[1] else np.zeros(self.n, dtype="U1")
        return out


def _read(path, kind, n_cols, spec, per_block, extra_ok=False):
    """Tokenize a file block by block (``kind``, "run" or "qrels", names it in errors).

    ``per_block(block)`` returns the block's columns and a uint64 hash per row of what must be
    unique within a query (docno, or iteration and docno). Returns the path, the sorted query
    ids, the segments, the columns, per-row duplicate keys (hash of the query mixed in) and a
    row -> line map.
    """
    path = os.fspath(path)
    size = os.path.getsize(path)
    segment_ids, segment_lengths, blocks, columns = [], [], [], None
    line0 = 0
    for source, lo, hi in _blocks(path):
        block = _Block(source, lo, hi, line0, n_cols, path, spec, extra_ok)
        line0 += block.n_lines
        if block.n_rows == 0:
            continue
        ids, run_lengths, id_hashes = _query_segments(block)
        segment_ids.append(ids)
        segment_lengths.append(run_lengths)
        pieces, unique_hash = per_block(block)
        unique_hash += np.repeat(id_hashes, run_lengths) * _QUERY_KEY
        pieces = (*pieces, unique_hash)
        if columns is None:  # rows expected from the first block's bytes per row
            columns = [_Growing(size / (hi - lo) * block.n_rows * 1.02 + 64) for _ in pieces]
        for column, piece in zip(columns, pieces):
            column.add(piece)
        block.release()
        blocks.append(block)
    if not blocks:
        raise InputError(f"{path}: no {kind} lines (the file is empty, or has only blank and comment lines)")
    query_ids, segment_codes = np.unique(np.concatenate(segment_ids), return_inverse=True)
    segments = _Segments(segment_codes.ravel(), np.concatenate(segment_lengths), len(query_ids))
    *values, keys = [column.result() for column in columns]
    return path, query_ids, segments, values, keys, _LineMap(blocks)


def read_run(path) -> Run:
    """Read a TREC run file (``qid Q0 docno rank score tag``).

    Parameters
    ----------
    path : str or os.PathLike
        The run file: six whitespace-separated columns a line (more are ignored, as trec_eval
        ignores them), blank lines and ``#`` comment lines skipped, UTF-8.

    Returns
    -------
    Run
        Rows grouped by query (query ids sorted as strings), file order within a query.

    Raises
    ------
    ValueError
        Naming the file and the 1-based line: a line with fewer than six columns, a score that
        is not a decimal number, a NaN or infinite score, a duplicate document for a query, or
        no data line at all (an empty file).
    OSError
        When the file cannot be read.

    Notes
    -----
    As in trec_eval, the ``Q0`` and ``rank`` columns are ignored: only the scores order a
    query's documents; trec_eval breaks score ties by document id, descending (see
    :func:`evaluate`). Scores are parsed exactly as Python's ``float`` parses them.

    Examples
    --------
    >>> import tempfile, os
    >>> fd, name = tempfile.mkstemp(suffix=".run"); os.close(fd)
    >>> _ = open(name, "w").write("q1 Q0 d1 1 2.5 tag\\nq1 Q0 d2 2 2.5 tag\\n")
    >>> run = read_run(name)
    >>> run.query("q1")
    (array(['d1', 'd2'], dtype='<U2'), array([2.5, 2.5]))
    >>> os.remove(name)
    """
    names = []

    def per_block(block):
        if not names:
            names.append(block.text(0, 5))
        docno_mat, docno_len = block.column(2)
        hashes = _byte_matrix_hash(docno_mat)
        pieces = (_Text(block.code_points(docno_mat, docno_len, "document id")), hashes, _parse_floats(block, 4, "score"))
        return pieces, hashes.copy()

    path, query_ids, segments, (docno, hashes, score), keys, lines = _read(
        path, "run", 6, "qid Q0 docno rank score tag", per_block, extra_ok=True)
    _raise_duplicate(keys, docno, None, query_ids, segments.query_of, lines, "line", "run", path=path)
    del keys
    docno, score, hashes = segments.regroup(docno, score, hashes)
    return Run(query_ids, segments.offsets, docno, score, name=names[0], path=path, _hash=hashes)


def read_qrels(path) -> Qrels:
    """Read a TREC qrels file (``qid iter docno rel``).

    Parameters
    ----------
    path : str or os.PathLike
        The qrels file: four whitespace-separated columns a line, blank lines and comment lines
        (first non-blank character ``#``, as in trec_eval's ``qrels.test.with-comments``)
        skipped, UTF-8.

    Returns
    -------
    Qrels
        Rows grouped by query (query ids sorted as strings), file order within a query. The
        second column is kept as text in ``Qrels.iteration`` (the subtopic of diversity qrels).

    Raises
    ------
    ValueError
        Naming the file and the 1-based line: a line without exactly four columns, a grade
        that is not an integer, a document judged twice for one query with the same second
        column, or no data line at all (an empty file). (One document judged under several
        subtopics is fine.)

    Examples
    --------
    >>> import tempfile, os
    >>> fd, name = tempfile.mkstemp(suffix=".qrels"); os.close(fd)
    >>> _ = open(name, "w").write("q1 0 d1 1\\nq1 0 d2 0\\n")
    >>> read_qrels(name).query("q1")
    (array(['d1', 'd2'], dtype='<U2'), array([1, 0]), array(['0', '0'], dtype='<U1'))
    >>> os.remove(name)
    """

    def per_block(block):
        docno_mat, docno_len = block.column(2)
        iter_mat, iter_len = block.column(1)
        hashes = _byte_matrix_hash(docno_mat)
        pieces = (
            _Text(block.code_points(docno_mat, docno_len, "document id")),
            hashes,
            _parse_ints(block, 3, "relevance"),
            _Text(block.code_points(iter_mat, iter_len, "iteration")),
        )
        return pieces, hashes + _byte_matrix_hash(iter_mat) * _ITER_KEY

    path, query_ids, segments, (docno, hashes, rel, iteration), keys, lines = _read(
        path, "qrels", 4, "qid iter docno rel", per_block)
    _raise_duplicate(keys, docno, iteration, query_ids, segments.query_of, lines, "line", "qrels", path=path)
    del keys
    docno, rel, iteration, hashes = segments.regroup(docno, rel, iteration, hashes)
    return Qrels(query_ids, segments.offsets, docno, rel, iteration, path=path, _hash=hashes)


# --------------------------------------------------------------------------------------------
# qrels x run: alignment and evaluation
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Aligned:
    """A run joined with its judgments, ready for :func:`fasttie.rank_evaluate`.

    Attributes
    ----------
    query_ids : ndarray of str, shape (n_queries,)
        Evaluated queries, sorted as strings: those of the run that have judgments, or every
        judged query with ``complete=True``.
    sizes : ndarray of int64, shape (n_queries,)
        Retrieved documents per query (0 for a judged query missing from the run).
    docno, score : ndarray, shape (n_rows,)
        The run's rows of those queries, grouped by query in ``query_ids`` order.
    grade : ndarray of int64, shape (n_rows,)
        Grade of each retrieved document: 0 when unjudged, and negative grades become 0
        (judged non-relevant, as in trec_eval). A document judged under several subtopics
        takes its highest grade.
    judged : ndarray of bool, shape (n_rows,)
        Whether the retrieved document has a judgment.
    unretrieved : list of ndarray of int64
        Per query, the positive grades of judged documents the run does not retrieve: they
        count in R and in the ideal DCG.
    """

    query_ids: np.ndarray
    sizes: np.ndarray
    docno: np.ndarray
    score: np.ndarray
    grade: np.ndarray
    judged: np.ndarray
    unretrieved: list

    @property
    def offsets(self) -> np.ndarray:
        """Rows of query i are ``offsets[i]:offsets[i + 1]``."""
        return np.concatenate(([0], np.cumsum(self.sizes))).astype(np.int64)


def _as_run(run) -> Run:
    if isinstance(run, Run):
        return run
    if isinstance(run, dict):
        return Run.from_dict(run)
    if isinstance(run, (str, bytes, os.PathLike)):
        return read_run(run)
    raise InputTypeError(f"run must be a path, a fasttie.trec.Run or a {{qid: {{docno: score}}}} dict, got {type(run).__name__}")


def _as_qrels(qrels) -> Qrels:
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, dict):
        return Qrels.from_dict(qrels)
    if isinstance(qrels, (str, bytes, os.PathLike)):
        return read_qrels(qrels)
    raise InputTypeError(f"qrels must be a path, a fasttie.trec.Qrels or a {{qid: {{docno: rel}}}} dict, got {type(qrels).__name__}")


def _select(grouped: _Grouped, query_ids: np.ndarray):
    """Rows (None = all) of the queries in query_ids, and each query's row count there."""
    n = grouped.n_queries
    index = np.minimum(np.searchsorted(grouped.query_ids, query_ids), max(n - 1, 0))
    present = grouped.query_ids[index] == query_ids if n else np.zeros(len(query_ids), dtype=bool)
    sizes = np.where(present, grouped.sizes[index] if n else 0, 0).astype(np.int64)
    keep = np.zeros(n, dtype=bool)
    keep[index[present]] = True
    rows = None if keep.all() else np.flatnonzero(np.repeat(keep, grouped.sizes))
    return rows, sizes


def _take(values, rows):
    return values if rows is None else values[rows]


def align(qrels, run, *, complete: bool = False) -> Aligned:
    """Join a run with judgments the way trec_eval does.

    Parameters
    ----------
    qrels : str, os.PathLike, Qrels or dict
        Judgments: a qrels file, a :class:`Qrels`, or ``{qid: {docno: rel}}``.
    run : str, os.PathLike, Run or dict
        A run file, a :class:`Run`, or ``{qid: {docno: score}}``.
    complete : bool, default False
        False: evaluate the queries of the run that have judgments (trec_eval's default; run
        queries without judgments are ignored). True: every judged query, those missing from
        the run with an empty ranking (trec_eval ``-c``).

    Returns
    -------
    Aligned
        Retrieved documents with their grades (unjudged: 0) and, per query, the grades of the
        relevant documents the run misses.

    Notes
    -----
    The join is vectorized: 64-bit hashes of (query, docno) locate each retrieved document
    among the judgments, and every match is then confirmed by comparing the strings, so the
    result is exact (a query whose hashes collide is joined again with dictionaries).
    """
    qrels = _as_qrels(qrels)
    run = _as_run(run)
    if not isinstance(complete, (bool, np.bool_)):
        raise InputTypeError(f"complete must be True or False, got {complete!r}")
    query_ids = qrels.query_ids if complete else np.intersect1d(run.query_ids, qrels.query_ids)
    n_queries = len(query_ids)
    run_rows, sizes = _select(run, query_ids)
    qrels_rows, judged_sizes = _select(qrels, query_ids)
    docno = _take(run.docno, run_rows)
    score = _take(run.score, run_rows)
    judged_docno = _take(qrels.docno, qrels_rows)
    judged_rel = _take(qrels.rel, qrels_rows)

    # key = query index in the high bits, docno hash in the low bits: sorted keys group by query
    bits = max(1, int(n_queries).bit_length())
    shift, low = np.uint64(64 - bits), np.uint64(bits)

    def keys(sizes_, hashes):
        query = np.repeat(np.arange(n_queries, dtype=np.uint64), sizes_)
        return (query << shift) | (hashes >> low)

    run_keys = keys(sizes, _take(run._docno_hash(), run_rows))
    judged_keys = keys(judged_sizes, _take(qrels._docno_hash(), qrels_rows))
    order = np.argsort(judged_keys, kind="stable")
    sorted_keys = judged_keys[order]
    first = np.ones(len(sorted_keys), dtype=bool)
    first[1:] = sorted_keys[1:] != sorted_keys[:-1]
    starts = np.flatnonzero(first)
    unique_keys = sorted_keys[starts]
    unique_grade = np.maximum.reduceat(judged_rel[order], starts) if len(starts) else np.zeros(0, dtype=np.int64)
    unique_docno = judged_docno[order[starts]]
    collided = set()
    if len(starts) < len(sorted_keys):  # one docno under several subtopics, or a hash collision
        differs = judged_docno[order] != unique_docno[np.cumsum(first) - 1]
        collided.update((sorted_keys[differs] >> shift).tolist())

    grade = np.zeros(len(docno), dtype=np.int64)
    judged = np.zeros(len(docno), dtype=bool)
    found = np.zeros(len(unique_keys), dtype=bool)
    if len(unique_keys) and len(run_keys):
        position = np.minimum(np.searchsorted(unique_keys, run_keys), len(unique_keys) - 1)
        hits = np.flatnonzero(unique_keys[position] == run_keys)
        matched = position[hits]
        wrong = docno[hits] != unique_docno[matched]
        if wrong.any():
            collided.update((run_keys[hits[wrong]] >> shift).tolist())
        grade[hits] = unique_grade[matched]
        judged[hits] = True
        found[matched] = True
    missing = np.flatnonzero(~found & (unique_grade > 0))
    bounds = np.searchsorted(unique_keys[missing] >> shift, np.arange(n_queries + 1, dtype=np.uint64))
    missing_grade = unique_grade[missing]
    unretrieved = [missing_grade[bounds[i] : bounds[i + 1]] for i in range(n_queries)]

    if collided:  # exact join with dictionaries for the few queries whose hashes collide
        run_offsets = np.concatenate(([0], np.cumsum(sizes)))
        judged_offsets = np.concatenate(([0], np.cumsum(judged_sizes)))
        for q in sorted(int(c) for c in collided):
            rows = slice(int(run_offsets[q]), int(run_offsets[q + 1]))
            best = {}
            for d, r in zip(judged_docno[judged_offsets[q] : judged_offsets[q + 1]].tolist(),
                            judged_rel[judged_offsets[q] : judged_offsets[q + 1]].tolist()):
                best[d] = max(r, best.get(d, r))
            retrieved = docno[rows].tolist()
            grade[rows] = [best.get(d, 0) for d in retrieved]
            judged[rows] = [d in best for d in retrieved]
            seen = set(retrieved)
            unretrieved[q] = np.array([r for d, r in best.items() if d not in seen and r > 0], dtype=np.int64)
    np.maximum(grade, 0, out=grade)
    return Aligned(query_ids, sizes, docno, score, grade, judged, unretrieved)


def _trec_tie_keys(aligned: Aligned):
    """Integer stand-ins for document ids that order every tie as trec_eval does.

    Only documents tied with another of their query need a key. When each query's scores are
    non-increasing (runs are usually written in rank order), ties are adjacent rows, and only
    those rows' ids are sorted; otherwise the ids themselves are returned.
    """
    score, sizes = aligned.score, aligned.sizes
    n = len(score)
    if n < 2:
        return aligned.docno
    boundary = np.zeros(n, dtype=bool)
    boundary[np.concatenate(([0], np.cumsum(sizes)[:-1]))[sizes > 0]] = True
    inner = ~boundary[1:]
    if np.any((score[1:] > score[:-1]) & inner):
        return aligned.docno
    equal = (score[1:] == score[:-1]) & inner
    tied = np.zeros(n, dtype=bool)
    tied[1:] |= equal
    tied[:-1] |= equal
    keys = np.zeros(n, dtype=np.int64)
    if tied.any():
        _, rank = np.unique(aligned.docno[tied], return_inverse=True)
        keys[tied] = rank.ravel() + 1
    return keys


def _split_metric_names(metrics):
    """Ranking metric names (for rank_evaluate) and parsed diversity metrics, plus the output
    order: canonical names in the order asked, each once."""
    from .diversity import is_diversity_metric, parse_diversity_metric
    from .metrics import metric_names, parse_metrics

    ranking, diversity, order = [], {}, []
    for name in metric_names(metrics):
        if not isinstance(name, str):
            raise InputTypeError(f"metric names must be strings, got {name!r}")
        if is_diversity_metric(name):
            canonical = []
            for key, k, alpha in parse_diversity_metric(name):
                diversity[key] = (k, alpha)
                canonical.append(key)
        else:
            ranking.append(name)
            canonical = [m.name for m in parse_metrics([name])]
        order.extend(c for c in canonical if c not in order)
    if not order:
        raise InputError("metrics is empty; ask for at least one metric, e.g. metrics=('AP',)")
    return ranking, diversity, order


def _diversity_inputs(qrels: Qrels, aligned: Aligned, relevance_level):
    """Per evaluated query, every retrieved or judged document as a row of subtopic relevance.

    Returns y_true (n_rows, n_subtopics) bool (rel >= relevance_level for the subtopic in the
    iteration column; columns are each query's own subtopics in ascending order, numeric when
    every subtopic is a number, as ndeval), scores (judged but not retrieved: -inf), sizes
    per query, and each row's docno rank among all docnos (string order).
    """
    n_queries = len(aligned.query_ids)
    rows, judged_sizes = _select(qrels, aligned.query_ids)
    judged_docno = _take(qrels.docno, rows)
    judged_rel = _take(qrels.rel, rows)
    subtopic = _take(qrels.iteration, rows)
    n_run = len(aligned.docno)
    unique_docno, code = np.unique(np.concatenate([aligned.docno, judged_docno]), return_inverse=True)
    code = code.ravel().astype(np.int64)
    n_docno = max(len(unique_docno), 1)
    run_query = np.repeat(np.arange(n_queries, dtype=np.int64), aligned.sizes)
    judged_query = np.repeat(np.arange(n_queries, dtype=np.int64), judged_sizes)
    run_key = run_query * n_docno + code[:n_run]
    judged_key = judged_query * n_docno + code[n_run:]
    judged_docs = np.unique(judged_key)
    missing = judged_docs[~np.isin(judged_docs, run_key)]
    keys = np.concatenate([run_key, missing])
    scores = np.concatenate([aligned.score, np.full(len(missing), -np.inf)])
    order = np.argsort(keys // n_docno, kind="stable")  # by query; run rows keep file order
    keys, scores = keys[order], scores[order]
    sizes = np.bincount(keys // n_docno, minlength=n_queries).astype(np.int64)

    relevant = judged_rel >= relevance_level
    names = subtopic[relevant]
    if len(names) and np.all(np.char.isdigit(names)) and np.char.str_len(names).max() < 19:
        _, rank = np.unique(names.astype(np.int64), return_inverse=True)
    else:
        _, rank = np.unique(names, return_inverse=True)
    rank = rank.ravel().astype(np.int64)
    n_names = int(rank.max()) + 1 if len(rank) else 1
    query_subtopic, inverse = np.unique(judged_query[relevant] * n_names + rank, return_inverse=True)
    owner = query_subtopic // n_names
    column = (np.arange(len(query_subtopic)) - np.searchsorted(owner, owner))[inverse.ravel()]
    y_true = np.zeros((len(keys), int(column.max()) + 1 if len(column) else 1), dtype=bool)
    by_key = np.argsort(keys)
    y_true[by_key[np.searchsorted(keys[by_key], judged_key[relevant])], column] = True
    return y_true, scores, sizes, keys % n_docno


def _diversity_columns(qrels, aligned, diversity, ties, relevance_level, n_threads):
    """alpha-DCG of run and ideal for every requested (k, alpha): {name: (dcg, idcg)}."""
    from .diversity import _alpha_dcg

    y_true, scores, sizes, docno_rank = _diversity_inputs(qrels, aligned, relevance_level)
    by_alpha = {}
    for name, (k, alpha) in diversity.items():
        by_alpha.setdefault(alpha, []).append((name, k))
    out = {}
    for alpha, wanted in by_alpha.items():
        dcg, idcg, _, columns = _alpha_dcg(y_true, scores, sizes, k=[k for _, k in wanted], alpha=alpha,
                                           doc_ids=docno_rank, ties=ties, n_threads=n_threads)
        for (name, _), c in zip(wanted, columns):
            out[name] = (dcg[:, c], idcg[:, c])
    return out


def evaluate(
    qrels,
    run,
    metrics,
    *,
    ties: str = "trec",
    ap_denominator: str = "total",
    gain: str = "linear",
    relevance_level=1,
    empty: str = "zero",
    complete: bool = False,
    **options,
) -> Result:
    """Evaluate a TREC run against qrels with trec_eval's semantics (ndeval's for alpha-nDCG).

    Parameters
    ----------
    qrels : str, os.PathLike, Qrels or dict
        A qrels file (``qid iter docno rel``), a :class:`Qrels`, or ``{qid: {docno: rel}}``.
        For alpha-nDCG, diversity qrels ``qid subtopic docno rel`` (TREC Web track, ndeval,
        ir_measures): the iteration column names the subtopic.
    run : str, os.PathLike, Run or dict
        A run file (``qid Q0 docno rank score tag``), a :class:`Run`, or
        ``{qid: {docno: score}}``.
    metrics : str or sequence of str
        Names as in :func:`fasttie.rank_evaluate`: ``AP``, ``AP@k``, ``nDCG``, ``nDCG@k``,
        ``P@k``, ``R@k``, ``RR``, ``Rprec``, ... (trec_eval's ``map``, ``map_cut_k``, ``P_k``,
        ``recall_k``, ``ndcg``, ``ndcg_cut_k``, ``recip_rank``, ``Rprec``), and the diversity
        metric ``alpha_nDCG@k`` (also ``alpha-nDCG@k``, ``alpha_nDCG@[5,10,20]``), with
        ``alpha = 0.5`` unless named as ``alpha_nDCG(alpha=0.3)@k`` (ir_measures' form).
        Output columns follow the order asked.
    ties : {"trec", "pyndeval", "average", "stable", "optimistic", "pessimistic"}, default "trec"
        "trec": score descending, then document id descending (string order), trec_eval's and
        ``ndeval -traditional``'s order. "pyndeval": score descending, then document id
        ascending, the order of pyndeval and ir_measures. "average": the exact expectation
        over all orders inside ties. "stable": file order inside ties. alpha-nDCG takes only
        the fixed orders "trec", "pyndeval" and "stable".
    ap_denominator : {"total", "retrieved", "min"}, default "total"
        AP@k denominator; "total" (R) is trec_eval's ``map_cut``.
    gain : {"linear", "exp2"}, default "linear"
        DCG gain; trec_eval's ``ndcg`` uses the grade itself.
    relevance_level : number, default 1
        Grades >= this are relevant (trec_eval ``-l``); for alpha-nDCG, a judgment with
        rel >= this marks the document relevant to that subtopic (ndeval: rel > 0).
    empty : {"zero", "skip", "one", "error"}, default "zero"
        Queries whose judgments have no relevant document: trec_eval and ndeval score them 0
        and keep them in the mean ("zero").
    complete : bool, default False
        Also average over judged queries missing from the run, with every metric 0 for them
        (trec_eval and ndeval ``-c``). Without it, only queries both judged and in the run count.
    **options
        Passed to :func:`fasttie.rank_evaluate` (``log_base``, ``n_threads``); ``n_threads``
        also to :func:`fasttie.alpha_ndcg`.

    Returns
    -------
    Result
        Per-query values in the order of ``Result.query_ids`` (sorted as strings); settings
        include ``complete``, and ``alpha`` (a float, or a sorted list when several) when
        alpha-nDCG was asked for.

    Raises
    ------
    ValueError
        Malformed files (see :func:`read_run`, :func:`read_qrels`), no query both judged and
        retrieved, a tie mode alpha-nDCG does not take, and the errors of
        :func:`fasttie.rank_evaluate` and :func:`fasttie.alpha_ndcg`.

    Notes
    -----
    trec_eval semantics: queries of the run without judgments are ignored; retrieved
    documents without a judgment are non-relevant (grade 0), as are negative grades; relevant
    documents the run misses count in R (recall, R-precision, AP) and in the ideal DCG. A
    document judged under several subtopics (diversity qrels) takes its highest grade.

    alpha-nDCG follows ndeval (the TREC Web track tool; pyndeval, ir_measures): the ideal is
    the greedy ordering of every judged document of the query, retrieved or not (ties: the
    greatest docno); unjudged retrieved documents have no subtopic; queries without any
    relevant subtopic score 0 under ``empty="zero"``; no depth limit (ndeval stops at 20).
    Each query's subtopics are numbered in numeric order (string order unless all are
    integers), the order in which ndeval adds their gains.
    Values can exceed 1 (the greedy ideal is not always optimal): they are not clipped.

    Examples
    --------
    Documents ``d1`` and ``d2`` tie; trec_eval ranks the larger id, ``d2``, first:

    >>> qrels = {"q1": {"d1": 1, "d3": 1}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5, "d4": 0.1}}
    >>> evaluate(qrels, run, ["RR", "P@1", "R@3"]).mean
    {'RR': 0.5, 'P@1': 0.0, 'R@3': 0.5}
    >>> evaluate(qrels, run, ["RR"], ties="average").mean
    {'RR': 0.75}

    Diversity qrels: ``d1`` covers subtopics 1 and 2, ``d2`` subtopic 1, ``d3`` subtopic 3:

    >>> div = Qrels.from_arrays(["q1"] * 4, ["d1", "d1", "d2", "d3"], [1, 1, 1, 1], ["1", "2", "1", "3"])
    >>> run = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}
    >>> {k: round(v, 4) for k, v in evaluate(div, run, ["alpha_nDCG@[2,3]", "P@2"]).mean.items()}
    {'alpha_nDCG@2': 0.8801, 'alpha_nDCG@3': 0.9773, 'P@2': 1.0}
    """
    from .diversity import TIE_RULES, _empty_value
    from .ranking import rank_evaluate

    ranking, diversity, order = _split_metric_names(metrics)
    if diversity and ties not in TIE_RULES:
        raise InputError(f"alpha_nDCG needs a fixed order of equal scores: ties must be one of {TIE_RULES}, "
                         f"got {ties!r}")
    qrels = _as_qrels(qrels)
    aligned = align(qrels, run, complete=complete)
    n_queries = len(aligned.query_ids)
    if n_queries == 0:
        raise InputError("no query of the run has judgments in the qrels: nothing to evaluate")

    result = None
    if ranking:
        grade, score, sizes = aligned.grade, aligned.score, aligned.sizes
        doc_ids = _trec_tie_keys(aligned) if ties in ("trec", "pyndeval") else None
        if ties == "pyndeval":  # ascending ids = descending ranks of their negation
            doc_ids = -np.unique(doc_ids, return_inverse=True)[1].ravel().astype(np.int64)
        empty_rows = np.flatnonzero(sizes == 0)
        if empty_rows.size:
            # a judged query missing from the run (complete=True): one unjudged placeholder row
            # scores exactly as an empty ranking (every metric's numerator is 0) and keeps R
            at = aligned.offsets[empty_rows]
            grade, score = np.insert(grade, at, 0), np.insert(score, at, 0.0)
            if doc_ids is not None:
                doc_ids = np.insert(doc_ids, at, "" if doc_ids.dtype.kind == "U" else 0)
            sizes = np.maximum(sizes, 1)
        result = rank_evaluate(
            grade, score, group=sizes, metrics=ranking, ties="trec" if ties == "pyndeval" else ties, gain=gain,
            ap_denominator=ap_denominator, empty=empty, relevance_level=relevance_level,
            doc_ids=doc_ids, unretrieved=aligned.unretrieved, **options,
        )
        result.settings["ties"] = ties
    if diversity:
        from .scoring import check_options

        check_options(ties="trec", tie_modes=("trec",), empty=empty)
        unknown = set(options) - {"n_threads", "log_base"}
        if unknown:
            raise InputTypeError(f"evaluate() got unexpected keyword argument(s) {sorted(unknown)}")
        parts = _diversity_columns(qrels, aligned, diversity, ties, relevance_level, options.get("n_threads"))
        is_empty = next(iter(parts.values()))[1] == 0.0  # no relevant subtopic: the ideal is all 0
        n_empty = int(is_empty.sum())
        check_empty_policy(empty, n_empty, n_queries, "relevant document")
        fill = _empty_value(empty)
        if result is None:
            result = Result(mean={}, per_query={}, n_queries=n_queries, n_empty=n_empty,
                            settings={"ties": ties, "empty": empty, "relevance_level": relevance_level})
        for name, (dcg, idcg) in parts.items():
            values = np.zeros(n_queries)
            np.divide(dcg, idcg, out=values, where=idcg > 0)
            values[is_empty] = fill
            result.per_query[name] = values
            kept = values[~np.isnan(values)]
            result.mean[name] = float(np.mean(kept)) if len(kept) else float("nan")
        alphas = sorted({alpha for _, alpha in diversity.values()})
        result.settings["alpha"] = alphas[0] if len(alphas) == 1 else alphas
    result.per_query = {name: result.per_query[name] for name in order}
    result.mean = {name: result.mean[name] for name in order}
    result.query_ids = aligned.query_ids.tolist()
    result.settings["complete"] = bool(complete)
    return result
