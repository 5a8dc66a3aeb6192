"""TREC qrels and run files: fast columnar readers and trec_eval-compatible evaluation.

Formats (whitespace-separated, one record a line, blank lines skipped):

- qrels: ``qid iter docno rel``. The second column is kept as text: diversity qrels (TREC Web
  track, ndeval) put the subtopic there. ``rel`` is an integer grade; negative grades (spam
  judgments) are judged non-relevant.
- run: ``qid Q0 docno rank score tag``. The ``Q0`` and ``rank`` columns are ignored, as
  trec_eval does: the ranking comes from the scores alone.

The readers parse the file in blocks with numpy (no per-line Python code on well-formed input),
which makes them several times faster than the usual ``line.split()`` loop. Parsing is strict:
a wrong number of columns, a grade or score that is not a number, a NaN or infinite score, and
a duplicate ``(qid, docno)`` pair in a run (``(qid, iter, docno)`` in qrels) raise
``ValueError`` naming the file and the 1-based line number.

Rows are stored grouped by query: the unique query ids sorted as strings (``strcmp`` order,
the order of trec_eval's output), and within a query in file order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .metrics import Result

__all__ = ["Qrels", "Run", "Aligned", "read_qrels", "read_run", "align", "evaluate"]

_BLOCK = 1 << 21          # bytes read per block
_PAD = 64                 # zero bytes after a block, so fixed-width token windows stay inside it
_BOM = b"\xef\xbb\xbf"
_SNIPPET = 120            # characters of an offending line quoted in error messages

# odd 64-bit multipliers of the row hash (docno bytes -> uint64), one per 8-byte word position
_WORD_KEYS = np.array(
    [0x9E3779B97F4A7C15 ^ (0x632BE59BD9B4E019 * (j + 1) % (1 << 64)) | 1 for j in range(64)],
    dtype=np.uint64,
)
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
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
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
        raise ValueError(f"offsets must have n_queries + 1 = {n_queries + 1} entries, got {offsets.shape}")
    if offsets[0] != 0 or offsets[-1] != n_rows or np.any(np.diff(offsets) < 0):
        raise ValueError(f"offsets must rise from 0 to the number of rows ({n_rows})")
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

    def _docno_hash(self) -> np.ndarray:
        if self._hash is None or len(self._hash) != len(self.docno):
            self._hash = _hash_strings(self.docno)
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
            raise ValueError(f"score has shape {self.score.shape} but docno has {self.docno.shape}")
        self.offsets = _check_offsets(self.offsets, len(self.docno), len(self.query_ids))

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
            raise ValueError(f"qid, docno and score must be 1-D of one length, got {len(qid)}, {len(docno)}, {score.shape}")
        bad = np.flatnonzero(~np.isfinite(score))
        if bad.size:
            raise ValueError(f"score of row {bad[0]} (qid {qid[bad[0]]!r}, docno {docno[bad[0]]!r}) is {score[bad[0]]}; scores must be finite")
        query_ids, codes = np.unique(qid, return_inverse=True)
        hashes = _hash_strings(docno)
        _check_duplicates(codes, hashes, docno, None, query_ids, lambda rows: rows, "row", "run")
        order, offsets = _group_rows(codes, len(query_ids))
        if order is not None:
            docno, score, hashes = docno[order], score[order], hashes[order]
        return cls(query_ids, offsets, docno, score, name=name, _hash=hashes)

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
            raise TypeError(f"rel must be integers, got dtype {self.rel.dtype}")
        self.rel = self.rel.astype(np.int64)
        if not (self.rel.shape == self.docno.shape == self.iteration.shape):
            raise ValueError(f"docno, rel and iteration must have one shape, got {self.docno.shape}, {self.rel.shape}, {self.iteration.shape}")
        self.offsets = _check_offsets(self.offsets, len(self.docno), len(self.query_ids))

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
                raise TypeError(f"rel must be integers, got dtype {rel.dtype}")
        rel = rel.astype(np.int64)
        iteration = np.full(len(qid), "0") if iteration is None else _as_str_array(iteration, "iteration")
        if not (len(qid) == len(docno) == len(rel) == len(iteration)) or rel.ndim != 1:
            raise ValueError(
                f"qid, docno, rel and iteration must be 1-D of one length, got {len(qid)}, {len(docno)}, {rel.shape}, {len(iteration)}"
            )
        query_ids, codes = np.unique(qid, return_inverse=True)
        hashes = _hash_strings(docno)
        _check_duplicates(codes, hashes, docno, iteration, query_ids, lambda rows: rows, "row", "qrels")
        order, offsets = _group_rows(codes, len(query_ids))
        if order is not None:
            docno, rel, iteration, hashes = docno[order], rel[order], iteration[order], hashes[order]
        return cls(query_ids, offsets, docno, rel, iteration, _hash=hashes)

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
    x = np.empty(len(words), dtype=np.uint64)
    for j in range(words.shape[1]):
        np.multiply(words[:, j], _WORD_KEYS[j % len(_WORD_KEYS)], out=x)
        x ^= x >> np.uint64(29)
        x *= _MIX
        h += x
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


def _group_rows(codes: np.ndarray, n_queries: int):
    """Stable order that groups rows by query code, and the offsets; order None = identity."""
    counts = np.bincount(codes, minlength=n_queries)
    offsets = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if len(codes) < 2 or np.all(codes[1:] >= codes[:-1]):
        return None, offsets
    return np.argsort(codes, kind="stable"), offsets


def _check_duplicates(codes, hashes, docno, iteration, query_ids, lines, where, kind, path=None):
    """Raise ValueError on the first repeated (query, [iteration,] docno) in row order."""
    keys = hashes + (codes.astype(np.uint64) + np.uint64(1)) * _QUERY_KEY
    if iteration is not None:
        keys += _hash_strings(iteration) * _ITER_KEY
    if len(keys) < 2:
        return
    ordered = np.sort(keys)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated.size == 0:
        return
    rows = np.flatnonzero(np.isin(keys, repeated))
    seen = {}
    for row in rows.tolist():
        key = (int(codes[row]), str(docno[row]), None if iteration is None else str(iteration[row]))
        if key in seen:
            line, first = (int(x) for x in lines(np.array([row, seen[key]])))
            subtopic = "" if iteration is None else f" and iteration {key[2]!r}"
            prefix = f"{path}, line {line}" if path is not None else f"{where} {line}"
            raise ValueError(
                f"{prefix}: duplicate document {key[1]!r} for query {str(query_ids[key[0]])!r}{subtopic} "
                f"in the {kind} (first seen on {where} {first})"
            )
        seen[key] = row


# --------------------------------------------------------------------------------------------
# block tokenizer and number parsing
# --------------------------------------------------------------------------------------------


def _blocks(path, block_size=_BLOCK):
    """Yield blocks of whole lines (bytes ending with a newline) covering the whole file."""
    with open(path, "rb") as f:
        carry = f.read(len(_BOM))
        if carry == _BOM:
            carry = b""
        while True:
            block = f.read(block_size)
            if not block:
                if carry:
                    yield carry + b"\n"
                return
            data = carry + block
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            yield data[:cut]
            carry = data[cut:]


class _Block:
    """One block of whole lines, tokenized into n_cols columns."""

    def __init__(self, data: bytes, line0: int, n_cols: int, path, spec: str):
        self.data, self.line0, self.path = data, line0, path
        n = len(data)
        self.buf = np.zeros(n + _PAD, dtype=np.uint8)
        self.buf[:n] = np.frombuffer(data, dtype=np.uint8)
        self.row_lines = None  # 0-based line of each row inside the block; None = row i on line i
        body = self.buf[:n]
        sep = np.flatnonzero(body <= 32)
        is_newline = body[sep] == 10
        n_lines = len(sep) // n_cols
        if len(sep) == n_cols * n_lines and sep[0] > 0:
            pattern = is_newline.reshape(n_lines, n_cols)
            fast = bool(np.all(pattern[:, -1]) and not np.any(pattern[:, :-1]) and np.all(np.diff(sep) > 1))
        else:
            fast = False
        if fast:
            self.n_lines = n_lines
            ends = sep.reshape(n_lines, n_cols)
            starts = np.empty_like(ends)
            starts[:, 1:] = ends[:, :-1] + 1
            starts[0, 0] = 0
            starts[1:, 0] = ends[:-1, -1] + 1
        else:
            starts, ends = self._general(body, n_cols, spec)
        self.starts, self.ends = starts, ends
        self.n_rows = len(starts)

    def _general(self, body, n_cols, spec):
        space = body <= 32
        token = ~space
        starts = np.flatnonzero(token[1:] & space[:-1]) + 1
        if token[0]:
            starts = np.concatenate(([0], starts))
        ends = np.flatnonzero(token[:-1] & space[1:]) + 1
        newlines = np.flatnonzero(body == 10)
        self.n_lines = len(newlines)
        line_of = np.searchsorted(newlines, starts)
        counts = np.bincount(line_of, minlength=len(newlines))
        bad = np.flatnonzero((counts != 0) & (counts != n_cols))
        if bad.size:
            line = int(bad[0])
            raise ValueError(
                f"{self.path}, line {self.line0 + line + 1}: expected {n_cols} columns ({spec}), "
                f"found {counts[line]}: {self._line_text(newlines, line)!r}"
            )
        self.row_lines = np.flatnonzero(counts)
        return starts.reshape(-1, n_cols), ends.reshape(-1, n_cols)

    def _line_text(self, newlines, line):
        start = 0 if line == 0 else int(newlines[line - 1]) + 1
        text = self.data[start : int(newlines[line])].decode("utf-8", "replace").rstrip("\r")
        return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."

    def lines(self, rows):
        """1-based file line numbers of rows of this block."""
        rows = np.asarray(rows, dtype=np.int64)
        return self.line0 + 1 + (rows if self.row_lines is None else self.row_lines[rows])

    def column(self, col: int, rows=None):
        """Zero-padded bytes of one column: (n, width) uint8 with width % 8 == 0, and lengths."""
        starts = self.starts[:, col] if rows is None else self.starts[rows, col]
        lengths = (self.ends[:, col] if rows is None else self.ends[rows, col]) - starts
        width = max(8, -(-int(lengths.max(initial=1)) // 8) * 8)
        if width > _PAD:
            buf = np.zeros(len(self.data) + width, dtype=np.uint8)
            buf[: len(self.data)] = self.buf[: len(self.data)]
        else:
            buf = self.buf
        mat = sliding_window_view(buf, width)[starts]
        for j in range(int(lengths.min(initial=width)), width):  # zero what follows each token
            mat[:, j] *= lengths > j
        return mat, lengths

    def text(self, row: int, col: int) -> str:
        start, end = int(self.starts[row, col]), int(self.ends[row, col])
        return self.data[start:end].decode("utf-8", "replace")

    def strings(self, mat, lengths, what):
        """str array of the rows of a column matrix (UTF-8 decoded)."""
        width = int(lengths.max(initial=1))
        sub = mat[:, :width]
        if len(sub) == 0:
            return np.zeros(0, dtype="U1")
        if sub.max() < 128:
            return np.ascontiguousarray(sub, dtype=np.uint32).view(np.dtype(("U", width)))[:, 0]
        raw = np.ascontiguousarray(sub).view(np.dtype(("S", width)))[:, 0]
        try:
            return np.char.decode(raw, "utf-8")
        except UnicodeDecodeError:
            for row, item in enumerate(raw.tolist()):
                try:
                    item.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise ValueError(f"{self.path}, line {int(self.lines([row])[0])}: {what} is not valid UTF-8 ({err.reason})") from None
            raise  # pragma: no cover

    def release(self):
        """Drop the block's bytes; keep only what maps rows to lines."""
        self.data = self.buf = self.starts = self.ends = None

    def fail(self, row, col, what, reason):
        raise ValueError(f"{self.path}, line {int(self.lines([row])[0])}: {what} {self.text(row, col)!r} {reason}")


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


def _horner(values, is_digit):
    """Integer value of the digits of each row (others skipped), uint64; exact below 10**19."""
    multiplier = np.where(is_digit, np.uint8(10), np.uint8(1)).T.copy()
    addend = np.where(is_digit, values, np.uint8(0)).T.copy()
    mantissa = np.zeros(values.shape[0], dtype=np.uint64)
    for j in range(values.shape[1]):
        mantissa *= multiplier[j]
        mantissa += addend[j]
    return mantissa


def _parse_floats(block: _Block, col: int, what: str) -> np.ndarray:
    """Scores of one column: decimal literals exactly as ``float()`` reads them (correctly
    rounded), others through ``float()``; NaN, infinities and junk raise with the line."""
    mat, lengths = block.column(col)
    values, is_digit, negative, signed, n_digits = _digits(mat, lengths)
    is_dot = mat == 46
    n_dots = _count_true(is_dot)
    fast = (n_digits + n_dots + signed == lengths) & (n_dots <= 1) & (n_digits >= 1) & (n_digits <= 19)
    mantissa = _horner(values[:, : int(lengths.max())], is_digit[:, : int(lengths.max())])
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
    width = int(lengths.max())
    out = _horner(values[:, :width], is_digit[:, :width]).astype(np.int64)
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
    if len(words) == 0:
        return np.zeros(0, dtype="U1"), np.zeros(0, dtype=np.int64)
    change = words[1:, 0] != words[:-1, 0]
    for j in range(1, words.shape[1]):
        change |= words[1:, j] != words[:-1, j]
    heads = np.concatenate(([0], np.flatnonzero(change) + 1))
    run_lengths = np.diff(np.append(heads, len(words)))
    return block.strings(mat[heads], lengths[heads], "query id"), run_lengths


class _LineMap:
    """Global row -> 1-based file line, over the blocks of one file."""

    def __init__(self, blocks):
        self.blocks = blocks
        self.row0 = np.cumsum([0] + [b.n_rows for b in blocks])

    def __call__(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        which = np.searchsorted(self.row0, rows, side="right") - 1
        return np.array([self.blocks[b].lines([r - self.row0[b]])[0] for b, r in zip(which, rows)])


def _read(path, n_cols, spec, per_block):
    """Tokenize a file block by block; per_block(block) returns the block's columns."""
    path = os.fspath(path)
    segment_ids, segment_lengths, columns, blocks = [], [], [], []
    line0 = 0
    for data in _blocks(path):
        block = _Block(data, line0, n_cols, path, spec)
        line0 += block.n_lines
        if block.n_rows == 0:
            continue
        ids, run_lengths = _query_segments(block)
        segment_ids.append(ids)
        segment_lengths.append(run_lengths)
        columns.append(per_block(block))
        block.release()
        blocks.append(block)
    if not blocks:
        raise ValueError(f"{path}: no {spec.split()[0]} lines (the file is empty)")
    heads = np.concatenate(segment_ids)
    query_ids, segment_codes = np.unique(heads, return_inverse=True)
    codes = np.repeat(segment_codes, np.concatenate(segment_lengths))
    merged = [np.concatenate(parts) for parts in zip(*columns)]
    return path, query_ids, codes, merged, _LineMap(blocks)


def read_run(path) -> Run:
    """Read a TREC run file (``qid Q0 docno rank score tag``).

    Parameters
    ----------
    path : str or os.PathLike
        The run file: six whitespace-separated columns a line, blank lines skipped, UTF-8.

    Returns
    -------
    Run
        Rows grouped by query (query ids sorted as strings), file order within a query.

    Raises
    ------
    ValueError
        Naming the file and the 1-based line: a line without exactly six columns, a score that
        is not a decimal number, a NaN or infinite score, a duplicate document for a query, or
        an empty file.
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
        return (
            block.strings(docno_mat, docno_len, "document id"),
            _byte_matrix_hash(docno_mat),
            _parse_floats(block, 4, "score"),
        )

    path, query_ids, codes, (docno, hashes, score), lines = _read(path, 6, "qid Q0 docno rank score tag", per_block)
    _check_duplicates(codes, hashes, docno, None, query_ids, lines, "line", "run", path=path)
    order, offsets = _group_rows(codes, len(query_ids))
    if order is not None:
        docno, score, hashes = docno[order], score[order], hashes[order]
    return Run(query_ids, offsets, docno, score, name=names[0], path=path, _hash=hashes)


def read_qrels(path) -> Qrels:
    """Read a TREC qrels file (``qid iter docno rel``).

    Parameters
    ----------
    path : str or os.PathLike
        The qrels file: four whitespace-separated columns a line, blank lines skipped, UTF-8.

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
        column, or an empty file. (One document judged under several subtopics is fine.)

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
        return (
            block.strings(docno_mat, docno_len, "document id"),
            _byte_matrix_hash(docno_mat),
            _parse_ints(block, 3, "relevance"),
            block.strings(iter_mat, iter_len, "iteration"),
        )

    path, query_ids, codes, (docno, hashes, rel, iteration), lines = _read(path, 4, "qid iter docno rel", per_block)
    _check_duplicates(codes, hashes, docno, iteration, query_ids, lines, "line", "qrels", path=path)
    order, offsets = _group_rows(codes, len(query_ids))
    if order is not None:
        docno, rel, iteration, hashes = docno[order], rel[order], iteration[order], hashes[order]
    return Qrels(query_ids, offsets, docno, rel, iteration, path=path, _hash=hashes)
