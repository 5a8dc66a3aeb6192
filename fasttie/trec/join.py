"""The join of a run with its judgments, as trec_eval makes it: :func:`align` and :class:`Aligned`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._kernels.key_join import locate_keys
from ..errors import InputError, InputTypeError
from ..parallel import resolve_threads, run_blocks
from .readers import as_qrels, as_run, queries_without_judgments
from .records import Qrels, Run

__all__ = ["Aligned", "align", "first_in_trec_order", "select_rows", "take_rows"]


@dataclass(eq=False)
class Aligned:
    """A run joined with its judgments, ready for :func:`fasttie.rank_evaluate`.

    Attributes
    ----------
    query_ids : ndarray of str, shape (n_queries,)
        Evaluated queries, sorted as strings: those of the run that have judgments, or every
        query of the qrels with ``complete=True`` (those a qrels mapping names without a
        judgment too).
    sizes : ndarray of int64, shape (n_queries,)
        Retrieved documents per query (0 for a judged query missing from the run, and for a
        query without judgments).
    docno, score : ndarray, shape (n_rows,)
        The run's rows of those queries, grouped by query in ``query_ids`` order (``docno`` is
        None from dicts: see ``tie_keys``).
    grade : ndarray of int64, shape (n_rows,)
        Grade of each retrieved document: 0 when unjudged, and negative grades become 0
        (judged non-relevant, as in trec_eval). A document judged under several subtopics
        takes its highest grade.
    judged : ndarray of bool, shape (n_rows,)
        Whether the retrieved document has a judgment of grade >= 0 (trec_eval reads a negative
        grade as "in the pool but not judged", unjudged for bpref, and non-relevant elsewhere).
    pooled : ndarray of bool, shape (n_rows,)
        Whether the retrieved document is in the qrels at all, judged or with a negative grade
        (pooled but sampled out of the judgments: infAP).
    unretrieved : list of ndarray of int64
        Per query, the grades (>= 0) of judged documents the run does not retrieve: the
        relevant ones count in R and in the ideal DCG, the others as judged non-relevant
        documents in bpref.
    judged_not_in_run, in_run_not_judged : int
        Judged queries the run lacks (left out, or scored 0 with ``complete=True``), and run
        queries without judgments (ignored): the query set made visible.
    tie_keys : ndarray of int64, shape (n_rows,), or None
        trec_eval's order inside ties as int keys, when the join made them
        (:func:`fasttie.trec.dict_join.align_dicts`, whose ``docno`` is None).
    """

    query_ids: np.ndarray
    sizes: np.ndarray
    docno: np.ndarray
    score: np.ndarray
    grade: np.ndarray
    judged: np.ndarray
    pooled: np.ndarray
    unretrieved: list
    judged_not_in_run: int = 0
    in_run_not_judged: int = 0
    tie_keys: np.ndarray | None = None

    @property
    def offsets(self) -> np.ndarray:
        """Rows of query i are ``offsets[i]:offsets[i + 1]``."""
        return np.concatenate(([0], np.cumsum(self.sizes))).astype(np.int64)


def select_rows(grouped: Run | Qrels, query_ids: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """Rows of the queries in ``query_ids`` (sorted str array): an int64 array of row indices,
    or None for all rows, and each query's row count there (0 where the query is absent)."""
    n = grouped.n_queries
    index = np.minimum(np.searchsorted(grouped.query_ids, query_ids), max(n - 1, 0))
    present = grouped.query_ids[index] == query_ids if n else np.zeros(len(query_ids), dtype=bool)
    sizes = np.where(present, grouped.sizes[index] if n else 0, 0).astype(np.int64)
    keep = np.zeros(n, dtype=bool)
    keep[index[present]] = True
    rows = None if keep.all() else np.flatnonzero(np.repeat(keep, grouped.sizes))
    return rows, sizes


def take_rows(values: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """``values[rows]``, or ``values`` itself when ``rows`` is None (all rows)."""
    return values if rows is None else values[rows]


def first_in_trec_order(run: Run, max_retrieved: int) -> Run:
    """The first ``max_retrieved`` documents of each query in trec_eval's order (trec_eval ``-M``).

    trec_eval sorts each query's documents by score, descending, then by document id,
    descending (``strcmp``), and keeps the first ``max_retrieved``. The kept rows stay in their
    input order, so ``ties="stable"`` still means input order among them.

    Parameters
    ----------
    run : Run
    max_retrieved : int
        Documents to keep per query (>= 1).

    Returns
    -------
    Run
        ``run`` itself when no query has more rows.

    Examples
    --------
    >>> run = Run.from_dict({"q1": {"a": 1.0, "b": 2.0, "c": 1.0}})
    >>> first_in_trec_order(run, 2).query("q1")
    (array(['b', 'c'], dtype='<U1'), array([2., 1.]))
    """
    sizes = run.sizes
    over = sizes > max_retrieved
    if not over.any():
        return run
    rows = np.flatnonzero(np.repeat(over, sizes))  # rows of the queries to cut, grouped by query
    long_sizes = sizes[over]
    group = np.repeat(np.arange(len(long_sizes)), long_sizes)
    score = run.score[rows]
    # each query's max_retrieved-th score: documents above it stay, those below it go
    starts = np.concatenate(([0], np.cumsum(long_sizes)[:-1]))
    by_score = np.lexsort((-score, group))
    threshold = np.repeat(score[by_score[starts + max_retrieved - 1]], long_sizes)
    keep_long = score > threshold
    # documents at that score: the greatest ids stay, as many as there is room for (only
    # these few ids are sorted)
    tied = np.flatnonzero(score == threshold)
    room = max_retrieved - np.bincount(group[keep_long], minlength=len(long_sizes))
    _, doc_rank = np.unique(run.docno[rows[tied]], return_inverse=True)
    by_docno = tied[np.lexsort((-doc_rank.ravel(), group[tied]))]
    tied_sizes = np.bincount(group[tied], minlength=len(long_sizes))
    position = np.arange(len(tied)) - np.repeat(np.concatenate(([0], np.cumsum(tied_sizes)[:-1])), tied_sizes)
    keep_long[by_docno[position < room[group[by_docno]]]] = True
    keep = np.ones(len(run), dtype=bool)
    keep[rows] = keep_long
    offsets = np.concatenate(([0], np.cumsum(np.minimum(sizes, max_retrieved))))
    return Run(run.query_ids, offsets, run.docno[keep], run.score[keep], name=run.name, path=run.path,
               _hash=run._docno_hash()[keep])


def check_trec_options(complete: bool, max_retrieved: int | None, judged_only: bool) -> None:
    for name, value in (("complete", complete), ("judged_only", judged_only)):
        if not isinstance(value, (bool, np.bool_)):
            raise InputTypeError(f"{{{name}}} must be True or False, got {value!r}", argument=name)
    if max_retrieved is not None:
        if isinstance(max_retrieved, (bool, np.bool_)) or not isinstance(max_retrieved, (int, np.integer)):
            raise InputTypeError(f"{{max_retrieved}} must be a positive integer or None, got {max_retrieved!r}",
                                 argument="max_retrieved")
        if max_retrieved < 1:
            raise InputError(f"{{max_retrieved}} must be >= 1 (documents kept per query), got {max_retrieved}; "
                             "None keeps them all", argument="max_retrieved")


def align(qrels: Any, run: Any, *, complete: bool = False, max_retrieved: int | None = None, judged_only: bool = False,
          n_threads: int | None = None, without_judgments: npt.ArrayLike | None = None) -> Aligned:
    """Join a run with judgments the way trec_eval does.

    Parameters
    ----------
    qrels : str, os.PathLike, Qrels, dict, pandas.DataFrame or ranx.Qrels
        Judgments in any form :func:`fasttie.trec.readers.as_qrels` takes: a qrels file, a
        :class:`Qrels`, ``{qid: {docno: rel}}``, a DataFrame, a ranx ``Qrels``.
    run : str, os.PathLike, Run, dict, pandas.DataFrame or ranx.Run
        A run in any form :func:`fasttie.trec.readers.as_run` takes: a run file, a
        :class:`Run`, ``{qid: {docno: score}}``, a DataFrame, a ranx ``Run``.
    complete : bool, default False
        False: evaluate the queries of the run that have judgments (trec_eval's default; run
        queries without judgments are ignored). True: every query of the qrels, those missing
        from the run with an empty ranking (trec_eval ``-c``), and so those a qrels mapping
        names without a judgment (``{"q2": {}}``, counted by ir_measures and ranx), whatever
        the run holds for them.
    max_retrieved : int, optional
        Keep only the first ``max_retrieved`` documents of each query in trec_eval's order,
        score descending, then document id descending (trec_eval ``-M``); the relevant
        documents cut off count as not retrieved. None keeps every document.
    judged_only : bool, default False
        Drop retrieved documents without a judgment of grade >= 0 before ranking (trec_eval
        ``-J``; applied after ``max_retrieved``, as trec_eval does).
    n_threads : int, optional
        Threads that read files and join (see :func:`fasttie.parallel.resolve_threads`); the
        result does not depend on it.
    without_judgments : array_like of str, optional
        With ``complete=True``, the queries of the qrels without a judgment, for a ``qrels``
        already read into a :class:`Qrels`, which cannot hold them; by default those of
        ``qrels`` itself (:func:`fasttie.trec.readers.queries_without_judgments`).

    Returns
    -------
    Aligned
        Retrieved documents with their grades (unjudged: 0) and, per query, the grades of the
        relevant documents the run misses.

    Notes
    -----
    64-bit keys of (query, docno hash) locate each retrieved document among its query's
    judgments (a compiled binary search per query, :mod:`fasttie._kernels.key_join`), and every
    match is then confirmed by comparing the strings, so the result is exact (a query whose hashes
    collide is joined again with dictionaries).
    """
    check_trec_options(complete, max_retrieved, judged_only)
    if without_judgments is None:
        without_judgments = queries_without_judgments(qrels)
    qrels = as_qrels(qrels, n_threads=n_threads)
    run = as_run(run, n_threads=n_threads)
    if max_retrieved is not None:
        run = first_in_trec_order(run, int(max_retrieved))
    query_ids = qrels.query_ids if complete else np.intersect1d(run.query_ids, qrels.query_ids)
    n_queries = len(query_ids)
    run_rows, sizes = select_rows(run, query_ids)
    qrels_rows, judged_sizes = select_rows(qrels, query_ids)
    docno = take_rows(run.docno, run_rows)
    score = take_rows(run.score, run_rows)
    judged_docno = take_rows(qrels.docno, qrels_rows)
    judged_rel = take_rows(qrels.rel, qrels_rows)

    # key = query index in the high bits, docno hash in the low bits: sorted keys group by query
    bits = max(1, int(n_queries).bit_length())
    shift, low = np.uint64(64 - bits), np.uint64(bits)

    def keys(sizes_, hashes):
        query = np.repeat(np.arange(n_queries, dtype=np.uint64), sizes_)
        return (query << shift) | (hashes >> low)

    run_keys = keys(sizes, take_rows(run._docno_hash(), run_rows))
    judged_keys = keys(judged_sizes, take_rows(qrels._docno_hash(), qrels_rows))
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
    pooled = np.zeros(len(docno), dtype=bool)
    found = np.zeros(len(unique_keys), dtype=bool)
    # per query, where its judgments' keys start in unique_keys (sorted: query index first)
    bounds = np.searchsorted(unique_keys >> shift, np.arange(n_queries + 1, dtype=np.uint64))
    run_offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    if len(unique_keys) and len(run_keys):
        position = np.empty(len(run_keys), dtype=np.int64)
        run_blocks(lambda lo, hi: locate_keys(run_keys, run_offsets, unique_keys, bounds, position, lo, hi),
                   n_queries, resolve_threads(n_threads, len(run_keys)))
        hits = np.flatnonzero(position >= 0)
        matched = position[hits]
        wrong = docno[hits] != unique_docno[matched]
        if wrong.any():
            collided.update((run_keys[hits[wrong]] >> shift).tolist())
        grade[hits] = unique_grade[matched]
        judged[hits] = unique_grade[matched] >= 0
        pooled[hits] = True
        found[matched] = True
    missing = ~found & (unique_grade >= 0)
    missing_bounds = np.concatenate(([0], np.cumsum(missing)))[bounds]
    missing_grade = unique_grade[missing]
    unretrieved = [missing_grade[missing_bounds[i] : missing_bounds[i + 1]] for i in range(n_queries)]

    if collided:  # exact join with dictionaries for the few queries whose hashes collide
        judged_offsets = np.concatenate(([0], np.cumsum(judged_sizes)))
        for q in sorted(int(c) for c in collided):
            rows = slice(int(run_offsets[q]), int(run_offsets[q + 1]))
            best: dict[Any, Any] = {}
            for d, r in zip(judged_docno[judged_offsets[q] : judged_offsets[q + 1]].tolist(),
                            judged_rel[judged_offsets[q] : judged_offsets[q + 1]].tolist()):
                best[d] = max(r, best.get(d, r))
            retrieved = docno[rows].tolist()
            grade[rows] = [best.get(d, 0) for d in retrieved]
            judged[rows] = [best.get(d, -1) >= 0 for d in retrieved]
            pooled[rows] = [d in best for d in retrieved]
            seen = set(retrieved)
            unretrieved[q] = np.array([r for d, r in best.items() if d not in seen and r >= 0], dtype=np.int64)
    np.maximum(grade, 0, out=grade)
    if judged_only and not judged.all():  # trec_eval -J: unjudged documents leave the ranking
        sizes = np.bincount(np.repeat(np.arange(n_queries), sizes)[judged], minlength=n_queries).astype(np.int64)
        docno, score, grade, pooled = docno[judged], score[judged], grade[judged], pooled[judged]
        judged = judged[judged]
    if complete:  # queries without a judgment: no row and nothing unretrieved, in sorted place
        extra = np.setdiff1d(np.asarray(without_judgments, dtype=str), query_ids)
        ids = np.concatenate((query_ids, extra))  # the wider of the two string widths
        order = np.argsort(ids, kind="stable")  # zero-size queries move in: the rows stay as they are
        query_ids, sizes = ids[order], np.concatenate((sizes, np.zeros(len(extra), dtype=np.int64)))[order]
        padded = unretrieved + [np.zeros(0, dtype=np.int64)] * len(extra)
        unretrieved = [padded[i] for i in order.tolist()]
    return Aligned(query_ids, sizes, docno, score, grade, judged, pooled, unretrieved,
                   judged_not_in_run=len(np.setdiff1d(qrels.query_ids, run.query_ids)),
                   in_run_not_judged=len(np.setdiff1d(run.query_ids, qrels.query_ids)))
