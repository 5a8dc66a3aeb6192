"""The join of a run and judgments given as dicts, ``{qid: {docno: score}}`` and ``{qid: {docno:
grade}}`` (pytrec_eval's, BEIR's and mteb's layout), without arrays of document ids:
:func:`align_dicts`.

Going through :class:`~fasttie.trec.Run` and :class:`~fasttie.trec.Qrels` (:func:`.join.align`)
turns every document id into a numpy string, hashes and sorts them; from dicts most of that is
not needed. The scores come out of the dicts in one pass; each judged document's score is one
dict lookup, and its row is the row of its query with that score (:mod:`fasttie._kernels.score_match`).
Only where a judged document ties with other rows are document ids read: to tell which row is
which, and to order the tie as trec_eval does. The rows, grades and flags are those
:func:`.join.align` gives, in the same order.
"""

from __future__ import annotations

from itertools import chain, repeat

import numpy as np

from .._kernels.score_match import match_scores
from .join import Aligned, check_trec_options

__all__ = ["align_dicts"]


def _float_bits(values: np.ndarray) -> np.ndarray:
    """float64 values as uint64 bits, -0.0 as +0.0: equal bits exactly where the values are equal (no NaN)."""
    return np.ascontiguousarray(values + 0.0).view(np.uint64)


def _scores(values: list) -> np.ndarray | None:
    """Scores as float64, as :meth:`Run.from_dict` reads them; None where it would refuse them
    (not numbers, not finite): the general path then says why."""
    score = np.array(values)
    if score.size == 0:
        return score.astype(np.float64)
    if score.dtype.kind not in "iuf":
        return None
    score = score.astype(np.float64)
    return score if np.isfinite(score).all() else None


def align_dicts(qrels, run, *, judged_only: bool = False, tie_keys: bool = True) -> Aligned | None:
    """:func:`fasttie.trec.align` of dicts (``complete=False``, no ``max_retrieved``), or None
    for inputs outside its reach, which :func:`~fasttie.trec.align` then joins (and refuses with
    its messages): not plain dicts of dicts, ids that are not strings, grades that are not
    integers, scores that are not finite numbers, a judged query with an empty ranking.

    Parameters
    ----------
    qrels : dict of str to dict of str to int
        ``{qid: {docno: grade}}``.
    run : dict of str to dict of str to float
        ``{qid: {docno: score}}``.
    judged_only : bool, default False
        Drop retrieved documents without a judgment of grade >= 0 (trec_eval ``-J``).
    tie_keys : bool, default True
        Also give ``Aligned.tie_keys``: trec_eval's order inside the ties that hold a judged
        document (see Notes).

    Returns
    -------
    Aligned or None
        With ``docno`` None (the document ids stay in the dicts) and ``tie_keys`` when asked.

    Notes
    -----
    ``tie_keys`` are int64, one per row: within a tie that holds a document of the qrels (any
    grade), 1 + the rank of the row's id among the ids of those ties (code point order, as
    :func:`~fasttie.trec.align`'s string arrays compare), so that the tie's rows sort by id;
    0 elsewhere. A tie of documents that are all outside the qrels needs no order: its rows are
    alike (grade 0, not judged, not pooled), and any order of them gives every measure the
    same value.

    Examples
    --------
    >>> aligned = align_dicts({"q1": {"a": 1, "c": 0}}, {"q1": {"a": 0.5, "b": 0.5, "d": 0.1}})
    >>> aligned.grade, aligned.judged, aligned.tie_keys
    (array([1, 0, 0]), array([ True, False, False]), array([1, 2, 0]))
    """
    check_trec_options(False, None, judged_only)
    if type(qrels) is not dict or type(run) is not dict:
        return None
    judgments = {}
    for qid, docs in qrels.items():
        if not isinstance(qid, str) or type(docs) is not dict:
            return None
        if docs:
            judgments[qid] = docs
    for qid, docs in run.items():
        if not isinstance(qid, str) or type(docs) is not dict or (not docs and qid in judgments):
            return None
    query_ids = sorted(q for q in run if q in judgments)  # code point order, as np.unique's
    ranked = [run[q] for q in query_ids]
    judged_docs = [judgments[q] for q in query_ids]
    others = [docs for q, docs in run.items() if q not in judgments]  # checked as Run.from_dict would
    # one pass over each query's dict, while it is in cache: scores and ids in row order, and each
    # judged document's score (NaN where the run lacks it: scores are finite)
    values, ids, found = [], [], []
    for docs, judged_here in zip(ranked, judged_docs):
        values.extend(docs.values())
        ids.extend(docs)
        found.extend(map(docs.get, judged_here, repeat(np.nan)))
    score = _scores(values)
    if score is None or (others and _scores(list(chain.from_iterable(d.values() for d in others))) is None):
        return None
    # Run.from_dict and Qrels.from_dict make ids str (5 and "5" are one document there): strings only
    if not all(all(map(isinstance, docs, repeat(str))) for docs in (ids, chain.from_iterable(judged_docs),
                                                                    chain.from_iterable(others))):
        return None
    entry_grade = np.array(list(chain.from_iterable(j.values() for j in judged_docs)))
    if entry_grade.size and entry_grade.dtype.kind not in "iu":
        return None
    entry_grade = entry_grade.astype(np.int64)

    n_queries = len(query_ids)
    sizes = np.fromiter(map(len, ranked), dtype=np.int64, count=n_queries)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n_entries = np.fromiter(map(len, judged_docs), dtype=np.int64, count=n_queries)
    entry_score = np.array(found, dtype=np.float64)
    retrieved = ~np.isnan(entry_score)
    entry_query = np.repeat(np.arange(n_queries), n_entries)
    wanted_offsets = np.concatenate(([0], np.cumsum(np.bincount(entry_query[retrieved], minlength=n_queries))))
    wanted_grade = entry_grade[retrieved]
    match = np.empty(len(score), dtype=np.int64)
    match_scores(_float_bits(score), offsets, _float_bits(entry_score[retrieved]), wanted_offsets.astype(np.int64),
                 match)

    grade = np.zeros(len(score), dtype=np.int64)
    judged = np.zeros(len(score), dtype=bool)
    pooled = np.zeros(len(score), dtype=bool)
    keys = np.zeros(len(score), dtype=np.int64) if tie_keys else None
    hit = np.flatnonzero(match >= 0)
    equal = np.bincount(match[hit], minlength=len(wanted_grade))[match[hit]]
    alone = hit[equal == 1]  # the only row of its query with a judged document's score: that document's
    alone_grade = wanted_grade[match[alone]]
    grade[alone], judged[alone], pooled[alone] = alone_grade, alone_grade >= 0, True
    tied = hit[equal > 1]
    if tied.size:  # rows tied with a judged document: their ids say which is which, and their order
        tied_ids = [ids[row] for row in tied.tolist()]
        tied_query = np.searchsorted(offsets, tied, side="right") - 1
        in_qrels = [judged_docs[q].get(d) for q, d in zip(tied_query.tolist(), tied_ids)]  # grade or None
        at = [i for i, g in enumerate(in_qrels) if g is not None]
        rows, tied_grade = tied[at], np.array([in_qrels[i] for i in at], dtype=np.int64)
        grade[rows], judged[rows], pooled[rows] = tied_grade, tied_grade >= 0, True
        if tie_keys:
            keys[tied] = 1 + np.unique(np.array(tied_ids, dtype=str), return_inverse=True)[1].ravel()
    np.maximum(grade, 0, out=grade)

    missing = ~retrieved & (entry_grade >= 0)
    bounds = np.concatenate(([0], np.cumsum(np.bincount(entry_query[missing], minlength=n_queries))))
    missing_grade = entry_grade[missing]
    unretrieved = [missing_grade[bounds[i] : bounds[i + 1]] for i in range(n_queries)]
    if judged_only and not judged.all():  # trec_eval -J: unjudged documents leave the ranking
        sizes = np.bincount(np.repeat(np.arange(n_queries), sizes)[judged], minlength=n_queries).astype(np.int64)
        score, grade, pooled = score[judged], grade[judged], pooled[judged]
        keys = keys[judged] if tie_keys else None
        judged = judged[judged]
    return Aligned(np.array(query_ids, dtype=str), sizes, None, score, grade, judged, pooled, unretrieved,
                   judged_not_in_run=sum(q not in run for q in judgments),
                   in_run_not_judged=len(others), tie_keys=keys)
