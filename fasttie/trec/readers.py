"""Reading TREC run and qrels files, and the coercion every front door applies to its inputs.

Formats (whitespace-separated, one record a line; blank lines and comment lines, whose first
non-blank character is ``#``, are skipped, as trec_eval 10.0 skips them; lines end with LF,
CR LF or a lone CR (classic Mac OS), mixed or not; a UTF-8 byte order mark may open the file;
a file compressed with gzip, bzip2 or xz is known by its first bytes, whatever its name, and
read decompressed into memory):

- qrels: ``qid iter docno rel``. The second column is kept as text: diversity qrels (TREC Web
  track, ndeval) put the subtopic there. ``rel`` is an integer grade; a negative grade (spam
  judgments) is non-relevant, and unjudged for bpref (trec_eval's "not in the pool").
- run: ``qid Q0 docno rank score tag``. The ``Q0`` and ``rank`` columns are ignored, as
  trec_eval does: the ranking comes from the scores alone. Text after the tag is ignored
  (trec_eval reserves it; its test run ``results.trunc`` has some).

Both readers go through one table reader (:func:`fasttie.trec.table.read_table`) and differ
only in their columns. It parses the file in blocks, in parallel, with one compiled pass a block
(no per-line Python code on well-formed input), an order of magnitude faster than the usual
``line.split()`` loop, and strictly: a wrong number of columns (fewer than six in a run, other
than four in qrels), a grade or score that is not a number, a NaN or infinite score, a
duplicate ``(qid, docno)`` pair in a run (``(qid, iter, docno)`` in qrels), a NUL byte and a
byte order mark past the start of the file (files concatenated) raise ``ValueError`` naming the
file and the 1-based line number.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import InputError, InputTypeError
from .grouping import raise_duplicate
from .records import Qrels, Run
from .table import read_table

__all__ = ["as_qrels", "as_run", "queries_without_judgments", "read_qrels", "read_run"]


def read_run(path: str | os.PathLike[str], *, n_threads: int | None = None) -> Run:
    """Read a TREC run file (``qid Q0 docno rank score tag``).

    Parameters
    ----------
    path : str or os.PathLike
        The run file: six whitespace-separated columns a line (more are ignored, as trec_eval
        ignores them), blank lines and ``#`` comment lines skipped, UTF-8; plain or compressed
        with gzip, bzip2 or xz.
    n_threads : int, optional
        Threads that parse the file's blocks (see :func:`fasttie.parallel.resolve_threads`);
        the result does not depend on it.

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
    >>> import os, pathlib, tempfile
    >>> fd, name = tempfile.mkstemp(suffix=".run"); os.close(fd)
    >>> _ = pathlib.Path(name).write_text("q1 Q0 d1 1 2.5 tag\\nq1 Q0 d2 2 2.5 tag\\n")
    >>> run = read_run(name)
    >>> run.query("q1")
    (array(['d1', 'd2'], dtype='<U2'), array([2.5, 2.5]))
    >>> os.remove(name)
    """
    table = read_table(path, "run", 6, "qid Q0 docno rank score tag", texts=((2, "document id"),),
                       number=(4, "score", True), extra_ok=True, name_col=5, n_threads=n_threads)
    (docno,), segments, query_ids = table.texts, table.segments, table.query_ids
    raise_duplicate(None, docno, None, query_ids, segments.query_of, table.lines, "line", "run", path=table.path,
                    rows=table.candidates)
    docno, score, hashes = segments.regroup(docno, table.numbers, table.hashes)
    return Run(query_ids, segments.offsets, docno, score, name=table.name, path=table.path, _hash=hashes)


def read_qrels(path: str | os.PathLike[str], *, n_threads: int | None = None) -> Qrels:
    """Read a TREC qrels file (``qid iter docno rel``).

    Parameters
    ----------
    path : str or os.PathLike
        The qrels file: four whitespace-separated columns a line, blank lines and comment lines
        (first non-blank character ``#``, as in trec_eval's ``qrels.test.with-comments``)
        skipped, UTF-8; plain or compressed with gzip, bzip2 or xz.
    n_threads : int, optional
        Threads that parse the file's blocks (see :func:`fasttie.parallel.resolve_threads`);
        the result does not depend on it.

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
    >>> import os, pathlib, tempfile
    >>> fd, name = tempfile.mkstemp(suffix=".qrels"); os.close(fd)
    >>> _ = pathlib.Path(name).write_text("q1 0 d1 1\\nq1 0 d2 0\\n")
    >>> read_qrels(name).query("q1")
    (array(['d1', 'd2'], dtype='<U2'), array([1, 0]), array(['0', '0'], dtype='<U1'))
    >>> os.remove(name)
    """
    table = read_table(path, "qrels", 4, "qid iter docno rel", texts=((2, "document id"), (1, "iteration")),
                       number=(3, "relevance", False), n_threads=n_threads)
    (docno, iteration), segments, query_ids = table.texts, table.segments, table.query_ids
    raise_duplicate(None, docno, iteration, query_ids, segments.query_of, table.lines, "line", "qrels",
                    path=table.path, rows=table.candidates)
    docno, rel, iteration, hashes = segments.regroup(docno, table.numbers, iteration, table.hashes)
    return Qrels(query_ids, segments.offsets, docno, rel, iteration, path=table.path, _hash=hashes)


def _is_instance_of(value, package, names):
    """Whether ``value`` is an instance of a class named in ``names`` from ``package``, found
    without importing the package (pandas and ranx are optional)."""
    return any(c.__module__.split(".")[0] == package and c.__name__ in names for c in type(value).__mro__)


# ir_measures' row types (ir_measures.util): the namedtuples read_trec_run / read_trec_qrels yield
_ROW_NAMES = {Run: "ScoredDoc", Qrels: "Qrel"}
_ROW_FIELDS = {Run: ("query_id", "doc_id", "score"), Qrels: ("query_id", "doc_id", "relevance")}


def _tuple_rows(value, cls, name):
    """The rows of an iterable of ir_measures namedtuples (``ScoredDoc`` for a run, ``Qrel`` for
    qrels) as a list, read once: ``read_trec_run`` and ``read_trec_qrels`` yield generators."""
    rows = list(value)
    fields = getattr(type(rows[0]), "_fields", None) if rows else _ROW_FIELDS[cls]
    other = Qrels if cls is Run else Run
    if fields is not None and _ROW_FIELDS[other][2] in fields and _ROW_FIELDS[cls][2] not in fields:
        raise InputTypeError(f"{name} got ir_measures {_ROW_NAMES[other]} rows; pass the {other.__name__.lower()} as "
                             f"{other.__name__.lower()} and {_ROW_NAMES[cls]} rows as {name}")
    if fields is None or not set(_ROW_FIELDS[cls]) <= set(fields):
        raise InputTypeError(
            f"{name} is an iterable of {type(rows[0]).__name__}; rows must be namedtuples with fields "
            f"{', '.join(_ROW_FIELDS[cls])} (ir_measures.{_ROW_NAMES[cls]}, as ir_measures.read_trec_"
            f"{'run' if cls is Run else 'qrels'} yields them), or pass a path, a dict or a DataFrame")
    for row in rows:  # one kind of row throughout: a stray plain tuple is named, not misread
        if type(row) is not type(rows[0]):
            raise InputTypeError(f"{name} mixes {type(rows[0]).__name__} rows with {type(row).__name__} rows: "
                                 f"give ir_measures.{_ROW_NAMES[cls]} rows only")
    return rows


def _from_rows(rows, cls):
    """A Run or Qrels from ir_measures namedtuples (their columns read by field name)."""
    columns = [[getattr(row, field) for row in rows] for field in _ROW_FIELDS[cls]]
    if cls is Run:
        return Run.from_arrays(*columns)
    iteration = [row.iteration for row in rows] if rows and "iteration" in type(rows[0])._fields else None
    return Qrels.from_arrays(*columns, iteration)


def _coerce(value, cls, read, name, values, n_threads):
    if isinstance(value, cls):
        return value
    if isinstance(value, (str, bytes, os.PathLike)):
        return read(value, n_threads=n_threads)
    other = Qrels if cls is Run else Run
    if isinstance(value, other) or _is_instance_of(value, "ranx", (other.__name__,)):
        raise InputTypeError(f"{name} got a {type(value).__module__.split('.')[0]} {other.__name__}; pass the "
                             f"{other.__name__.lower()} as {other.__name__.lower()} and a {cls.__name__} as {name}")
    if _is_instance_of(value, "pandas", ("DataFrame",)):
        kind, build = "DataFrame", lambda: cls.from_frame(value)
    elif _is_instance_of(value, "ranx", (cls.__name__,)):
        extra = {"name": getattr(value, "name", None)} if cls is Run else {}
        kind, build = f"ranx {cls.__name__}", lambda: cls.from_dict(value.to_dict(), **extra)
    elif isinstance(value, Mapping):
        kind, build = "dict", lambda: cls.from_dict(value)
    elif isinstance(value, Iterable):
        rows = _tuple_rows(value, cls, name)
        kind, build = f"ir_measures {_ROW_NAMES[cls]} rows", lambda: _from_rows(rows, cls)
    else:
        raise InputTypeError(
            f"{name} must be a path, a fasttie.trec.{cls.__name__}, a {{qid: {{docno: {values}}}}} dict, a pandas "
            f"DataFrame, a ranx {cls.__name__} or ir_measures {_ROW_NAMES[cls]} rows, got {type(value).__name__}")
    try:
        return build()
    except InputError as error:  # say which argument the message is about
        raise type(error)(f"{name} ({kind}): {error}") from None


# mirrors as_qrels on purpose: one shared body (_coerce); each docstring lists its own type's forms
def as_run(run: Any, *, n_threads: int | None = None) -> Run:
    """A :class:`Run` from any form :func:`fasttie.trec.evaluate` takes.

    Parameters
    ----------
    run : str, os.PathLike, Run, dict, pandas.DataFrame, ranx.Run or iterable of ScoredDoc
        A run file (read by :func:`read_run`), a :class:`Run` (returned as is),
        ``{qid: {docno: score}}`` (pytrec_eval, ranx), a DataFrame with columns
        ``query_id, doc_id, score`` or ``qid, docno, score`` (:meth:`Run.from_frame`), or a
        ranx ``Run`` (its name is kept), or an iterable of ir_measures ``ScoredDoc`` rows
        (``ir_measures.read_trec_run(path)``, a list of ``ScoredDoc``; read once).

    n_threads : int, optional
        Threads that parse a file (:func:`read_run`); other forms ignore it.

    Returns
    -------
    Run

    Raises
    ------
    TypeError
        Any other kind of object, or qrels passed as the run.
    ValueError
        Bad content; the message starts with ``run`` and the form it came in.
    """
    return _coerce(run, Run, read_run, "run", "score", n_threads)


# mirrors as_run on purpose: one shared body (_coerce); each docstring lists its own type's forms
def as_qrels(qrels: Any, *, n_threads: int | None = None) -> Qrels:
    """:class:`Qrels` from any form :func:`fasttie.trec.evaluate` takes.

    Parameters
    ----------
    qrels : str, os.PathLike, Qrels, dict, pandas.DataFrame, ranx.Qrels or iterable of Qrel
        A qrels file (read by :func:`read_qrels`), a :class:`Qrels` (returned as is),
        ``{qid: {docno: rel}}`` (pytrec_eval, ranx), a DataFrame with columns
        ``query_id, doc_id, relevance[, iteration]`` or ``qid, docno, rel / label[, iter]``
        (:meth:`Qrels.from_frame`), a ranx ``Qrels``, or an iterable of ir_measures ``Qrel``
        rows (``ir_measures.read_trec_qrels(path)``, a list of ``Qrel``; the iteration field
        kept; read once).

    n_threads : int, optional
        Threads that parse a file (:func:`read_qrels`); other forms ignore it.

    Returns
    -------
    Qrels

    Raises
    ------
    TypeError
        Any other kind of object, or a run passed as the qrels.
    ValueError
        Bad content; the message starts with ``qrels`` and the form it came in.

    Examples
    --------
    >>> as_qrels({"q1": {"d1": 1, "d2": 0}})
    Qrels(n_queries=1, n_rows=2)
    """
    return _coerce(qrels, Qrels, read_qrels, "qrels", "rel", n_threads)


def queries_without_judgments(qrels: Any) -> np.ndarray:
    """The queries a qrels mapping names without a judgment: ``{"q2": {}}`` (what filtering
    qrels to the positive grades leaves), which a :class:`Qrels` cannot hold.

    ir_measures and ranx count such a query in the query set (scored 0); trec_eval's files
    cannot name one. Only a mapping or a ranx ``Qrels`` has them; any other form has none.

    Parameters
    ----------
    qrels : any form :func:`as_qrels` takes

    Returns
    -------
    ndarray of str
        Their ids as str, sorted.

    Examples
    --------
    >>> queries_without_judgments({"q1": {"d1": 1}, "q2": {}})
    array(['q2'], dtype='<U2')
    """
    if _is_instance_of(qrels, "ranx", ("Qrels",)):
        qrels = qrels.to_dict()
    if not isinstance(qrels, Mapping):
        return np.zeros(0, dtype=str)
    return np.unique(np.array([str(q) for q, docs in qrels.items() if isinstance(docs, Mapping) and not docs],
                              dtype=str))
