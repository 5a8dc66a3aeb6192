"""The records of TREC files in columnar form: :class:`Run` and :class:`Qrels`.

Rows are stored grouped by query: the unique query ids sorted as strings (``strcmp`` order,
the order of trec_eval's output), and within a query in file order; ``offsets`` delimit each
query's rows. Both classes are built by the readers (:func:`fasttie.trec.read_run`,
:func:`fasttie.trec.read_qrels`) or in memory (``from_arrays``, ``from_dict``, ``from_frame``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import InputError, InputTypeError
from .grouping import ITER_KEY, QUERY_KEY, Segments, hash_strings, raise_duplicate

if TYPE_CHECKING:  # pandas is optional (the frame extra)
    import pandas as pd

__all__ = ["Qrels", "Run"]


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


# DataFrame column names per field, ir_measures / ranx names first, then TREC and PyTerrier ones
FRAME_COLUMNS = {
    "qid": ("query_id", "qid", "q_id"),
    "docno": ("doc_id", "docno", "docid"),
    "score": ("score",),
    "rel": ("relevance", "rel", "label"),
    "iteration": ("iteration", "iter"),
}
_FIELD_WORDS = {"qid": "query id", "docno": "document id", "score": "score", "rel": "relevance", "iteration": "iteration"}


def _frame_columns(frame, fields, optional):
    """``{field: (column name, column)}`` of ``frame`` for ``fields`` (keys of FRAME_COLUMNS);
    the ``optional`` ones may be absent (None). Only scores may have missing values here."""
    found, missing = {}, []
    for name in (*fields, *optional):
        present = [c for c in FRAME_COLUMNS[name] if c in frame.columns]
        if len(present) > 1:
            raise InputError(f"the DataFrame has columns {present}, which all name the {_FIELD_WORDS[name]}: keep one of them")
        if not present:
            if name in fields:
                missing.append(" / ".join(FRAME_COLUMNS[name]))
            found[name] = None
            continue
        column = frame[present[0]]
        if getattr(column, "ndim", 1) != 1:
            raise InputError(f"the DataFrame has several columns named {present[0]!r}")
        if name != "score":  # a NaN score is reported by from_arrays, with its query and document
            na = np.flatnonzero(column.isna().to_numpy())
            if na.size:
                raise InputError(f"column {present[0]!r} of the DataFrame has a missing value (row {na[0]})")
        found[name] = (present[0], column)
    if missing:
        in_index = [n for n in frame.index.names if any(n in FRAME_COLUMNS[f] for f in fields)]
        hint = f"; {in_index} is the index: call .reset_index() first" if in_index else ""
        raise InputError(
            f"the DataFrame has no {' or '.join(repr(m) for m in missing)} column (it has {list(map(str, frame.columns))}); "
            f"name the columns {', '.join(FRAME_COLUMNS[f][0] for f in fields)} (ir_measures, ranx) or "
            f"{', '.join(FRAME_COLUMNS[f][min(1, len(FRAME_COLUMNS[f]) - 1)] for f in fields)} (TREC, PyTerrier){hint}")
    return found


def _numpy_kind(column) -> str:
    """The numpy dtype kind of a pandas column, through pandas' nullable dtypes (Int64, Float64)."""
    return getattr(column.dtype, "numpy_dtype", column.dtype).kind


def _numeric_column(found, name):
    label, column = found[name]
    if _numpy_kind(column) not in "iuf":
        raise InputTypeError(f"column {label!r} of the DataFrame must be numeric, got dtype {column.dtype}")
    return column.to_numpy(dtype=np.float64, na_value=np.nan)


def _numbers(score):
    score = np.asarray(score)
    if score.dtype.kind not in "iuf" and score.size:
        raise InputTypeError(f"score must be numbers, got dtype {score.dtype}")
    return score.astype(np.float64)


def _check_finite(score, qid_of, docno):
    bad = np.flatnonzero(~np.isfinite(score))
    if bad.size:
        row = int(bad[0])
        raise InputError(f"score of row {row} (qid {str(qid_of(row))!r}, docno {str(docno[row])!r}) is "
                         f"{score[row]}; scores must be finite")


def _flatten_grouped(nested, kind, values):
    """Rows of ``{qid: {docno: value}}`` as they come, grouped by query: the query ids (str),
    rows per query, the docno array and the values (a list)."""
    if not isinstance(nested, Mapping):
        raise InputTypeError(f"a {kind} dict must be {{qid: {{docno: {values}}}}}, got {type(nested).__name__}")
    asked, sizes, docno, value = [], [], [], []
    for q, docs in nested.items():
        if not isinstance(docs, Mapping):
            raise InputTypeError(f"{kind}[{q!r}] must be a {{docno: {values}}} dict, got {type(docs).__name__}")
        asked.append(str(q))
        sizes.append(len(docs))
        docno.extend(docs.keys())
        value.extend(docs.values())
    return asked, np.array(sizes, dtype=np.int64), np.array(docno, dtype=str), value


def _flatten(nested, kind, values):
    """Rows of ``{qid: {docno: value}}``: three lists (qid, docno, value)."""
    if not isinstance(nested, Mapping):
        raise InputTypeError(f"a {kind} dict must be {{qid: {{docno: {values}}}}}, got {type(nested).__name__}")
    qid, docno, value = [], [], []
    for q, docs in nested.items():
        if not isinstance(docs, Mapping):
            raise InputTypeError(f"{kind}[{q!r}] must be a {{docno: {values}}} dict, got {type(docs).__name__}")
        qid.extend([q] * len(docs))
        docno.extend(docs.keys())
        value.extend(docs.values())
    return np.array(qid, dtype=str), np.array(docno, dtype=str), value


class _Grouped:
    """Shared helpers of Qrels and Run: rows grouped by query through ``offsets``."""

    query_ids: np.ndarray
    offsets: np.ndarray
    docno: np.ndarray
    _hash: np.ndarray | None  # a field of each subclass

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
        """Check the grouping (offsets become int64) and tie a docno hash given to the constructor
        to the docno as stored (see :meth:`_docno_hash`): the last step of ``__post_init__``."""
        self.offsets = _check_offsets(self.offsets, len(self.docno), len(self.query_ids))
        if len(self.query_ids) > 1 and not np.all(self.query_ids[1:] > self.query_ids[:-1]):
            raise InputError("query_ids must be unique and sorted (use from_arrays to group rows)")
        self._hash_of = self.docno

    def _docno_hash(self) -> np.ndarray:
        """uint64 hash of each docno (cached; the arrays are meant to be left unchanged)."""
        if self._hash is None or getattr(self, "_hash_of", None) is not self.docno or len(self._hash) != len(self.docno):
            self._hash = hash_strings(self.docno)
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
        The run tag (sixth column) of the file's last run line, as trec_eval's ``runid``.
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

    def __repr__(self) -> str:
        source = f", path={self.path!r}" if self.path else ""
        return f"Run(n_queries={self.n_queries}, n_rows={len(self)}, name={self.name!r}{source})"

    def query(self, qid: object) -> tuple[np.ndarray, np.ndarray]:
        """Document ids and scores of one query (views, file order).

        Raises
        ------
        KeyError
            When the run has no row for ``qid``.
        """
        rows = self._rows(qid)
        return self.docno[rows], self.score[rows]

    def items(self) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """Yield ``(qid, docno, score)`` for every query, in ``query_ids`` order."""
        for i, qid in enumerate(self.query_ids):
            rows = slice(int(self.offsets[i]), int(self.offsets[i + 1]))
            yield str(qid), self.docno[rows], self.score[rows]

    def to_dict(self) -> dict:
        """``{qid: {docno: score}}``, the layout of pytrec_eval and ranx."""
        return {qid: dict(zip(docno.tolist(), score.tolist())) for qid, docno, score in self.items()}

    @classmethod
    def from_arrays(cls, qid: npt.ArrayLike, docno: npt.ArrayLike, score: npt.ArrayLike, *,
                    name: str | None = None) -> "Run":
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
        score = _numbers(score)
        if not (len(qid) == len(docno) == len(score)) or score.ndim != 1:
            raise InputError(f"qid, docno and score must be 1-D of one length, got {len(qid)}, {len(docno)}, {score.shape}")
        _check_finite(score, lambda row: qid[row], docno)
        query_ids, codes = np.unique(qid, return_inverse=True)
        return cls._from_codes(query_ids, codes.ravel(), docno, score, name)

    @classmethod
    def _from_codes(cls, query_ids, codes, docno, score, name):
        """Rows with their query's index in ``query_ids`` (unique, sorted), grouped by query."""
        hashes = hash_strings(docno)
        keys = hashes + (codes.astype(np.uint64) + np.uint64(1)) * QUERY_KEY
        raise_duplicate(keys, docno, None, query_ids, lambda rows: codes[rows], lambda rows: rows, "row", "run")
        segments = Segments.from_codes(codes, len(query_ids))
        docno, score, hashes = segments.regroup(docno, score, hashes)
        return cls(query_ids, segments.offsets, docno, score, name=name, _hash=hashes)

    @classmethod
    def from_dict(cls, run: Mapping, *, name: str | None = None) -> "Run":
        """Build a run from ``{qid: {docno: score}}`` (pytrec_eval / ranx layout).

        Raises
        ------
        TypeError
            ``run`` or one of its values is not a mapping, or a score is not a number.
        ValueError
            A NaN or infinite score.
        """
        # the rows come grouped by query: sort the few query ids, not a per-row column of them
        asked, sizes, docno, score = _flatten_grouped(run, "run", "score")
        query_ids, index = np.unique(np.array(asked, dtype=str), return_inverse=True)
        codes = np.repeat(index.ravel().astype(np.int64), sizes)
        score = _numbers(score)
        _check_finite(score, lambda row: asked[np.searchsorted(np.cumsum(sizes), row, side="right")], docno)
        return cls._from_codes(query_ids, codes, docno, score, name)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, name: str | None = None) -> "Run":
        """Build a run from a pandas DataFrame, one row per retrieved document.

        Parameters
        ----------
        frame : pandas.DataFrame
            Columns ``query_id``, ``doc_id``, ``score`` (ir_measures, ranx), or ``qid``,
            ``docno``, ``score`` (TREC, PyTerrier; ``q_id`` and ``docid`` are accepted too).
            Ids are converted to str; other columns (``iteration``, ``rank``, ...) are ignored.
        name : str, optional
            Run tag.

        Raises
        ------
        ValueError
            A missing column (naming the expected ones), a missing id, a NaN or infinite score,
            a duplicate (query, document) pair.
        TypeError
            A score column that is not numeric.

        Examples
        --------
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [2.0, 1.5]})
        >>> Run.from_frame(frame).to_dict()
        {'q1': {'d1': 2.0, 'd2': 1.5}}
        """
        found = _frame_columns(frame, ("qid", "docno", "score"), ())
        score = _numeric_column(found, "score")
        return cls.from_arrays(found["qid"][1].to_numpy(), found["docno"][1].to_numpy(), score, name=name)


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

    def __repr__(self) -> str:
        source = f", path={self.path!r}" if self.path else ""
        return f"Qrels(n_queries={self.n_queries}, n_rows={len(self)}{source})"

    def query(self, qid: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Judged documents, grades and iteration (subtopic) column of one query (views).

        Raises
        ------
        KeyError
            When the qrels have no judgment for ``qid``.
        """
        rows = self._rows(qid)
        return self.docno[rows], self.rel[rows], self.iteration[rows]

    def items(self) -> Iterator[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
        """Yield ``(qid, docno, rel, iteration)`` for every query, in ``query_ids`` order."""
        for i, qid in enumerate(self.query_ids):
            rows = slice(int(self.offsets[i]), int(self.offsets[i + 1]))
            yield str(qid), self.docno[rows], self.rel[rows], self.iteration[rows]

    def to_dict(self) -> dict:
        """``{qid: {docno: rel}}`` (pytrec_eval layout); a document judged under several
        subtopics keeps its highest grade."""
        out = {}
        for qid, docno, rel, _ in self.items():
            judged: dict[Any, Any] = {}
            for d, r in zip(docno.tolist(), rel.tolist()):
                judged[d] = max(r, judged.get(d, r))
            out[qid] = judged
        return out

    @classmethod
    def from_arrays(cls, qid: npt.ArrayLike, docno: npt.ArrayLike, rel: npt.ArrayLike,
                    iteration: npt.ArrayLike | None = None) -> "Qrels":
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
        if rel.dtype.kind not in "iub" and rel.size:
            if rel.dtype.kind == "f" and np.all(np.isfinite(rel)) and np.all(rel == np.round(rel)):
                rel = rel.astype(np.int64)
            else:
                raise InputTypeError(f"rel must be integers, got dtype {rel.dtype}"
                                     + (" with non-integer values" if rel.dtype.kind == "f" else ""))
        rel = rel.astype(np.int64)
        iteration = np.full(len(qid), "0") if iteration is None else _as_str_array(iteration, "iteration")
        if not (len(qid) == len(docno) == len(rel) == len(iteration)) or rel.ndim != 1:
            raise InputError(
                f"qid, docno, rel and iteration must be 1-D of one length, got {len(qid)}, {len(docno)}, {rel.shape}, {len(iteration)}"
            )
        query_ids, codes = np.unique(qid, return_inverse=True)
        codes = codes.ravel()
        hashes = hash_strings(docno)
        keys = hashes + (codes.astype(np.uint64) + np.uint64(1)) * QUERY_KEY + hash_strings(iteration) * ITER_KEY
        raise_duplicate(keys, docno, iteration, query_ids, lambda rows: codes[rows], lambda rows: rows, "row", "qrels")
        segments = Segments.from_codes(codes, len(query_ids))
        docno, rel, iteration, hashes = segments.regroup(docno, rel, iteration, hashes)
        return cls(query_ids, segments.offsets, docno, rel, iteration, _hash=hashes)

    @classmethod
    def from_dict(cls, qrels: Mapping) -> "Qrels":
        """Build judgments from ``{qid: {docno: rel}}`` (pytrec_eval / ranx layout).

        Raises
        ------
        TypeError
            ``qrels`` or one of its values is not a mapping, or a grade is not an integer.
        """
        qid, docno, rel = _flatten(qrels, "qrels", "rel")
        return cls.from_arrays(qid, docno, rel)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> "Qrels":
        """Build judgments from a pandas DataFrame, one row per judgment.

        Parameters
        ----------
        frame : pandas.DataFrame
            Columns ``query_id``, ``doc_id``, ``relevance`` and optionally ``iteration``
            (ir_measures, ranx), or ``qid``, ``docno``, ``rel`` / ``label`` and ``iter``
            (TREC, PyTerrier; ``q_id`` and ``docid`` are accepted too). Ids and the iteration
            are converted to str; grades must be integers (whole floats are accepted).

        Raises
        ------
        ValueError
            A missing column (naming the expected ones), a missing value, a duplicate (query,
            iteration, document) triple.
        TypeError
            A grade that is not an integer.
        """
        found = _frame_columns(frame, ("qid", "docno", "rel"), ("iteration",))
        label, column = found["rel"]
        if _numpy_kind(column) not in "iubf":
            raise InputTypeError(f"column {label!r} of the DataFrame must hold integer grades, got dtype {column.dtype}")
        rel = column.to_numpy()
        if rel.dtype.kind == "O":  # a nullable integer column without missing values
            rel = rel.astype(np.int64)
        iteration = None if found["iteration"] is None else found["iteration"][1].to_numpy()
        return cls.from_arrays(found["qid"][1].to_numpy(), found["docno"][1].to_numpy(), rel, iteration)
