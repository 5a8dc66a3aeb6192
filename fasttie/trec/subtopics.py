"""Diversity qrels joined with a run, for ndeval's measures in :func:`fasttie.trec.evaluate`.

A diversity qrels file names the subtopic in its iteration column (TREC Web track, ndeval):
:func:`diversity_columns` turns each evaluated query's retrieved and judged documents into rows
of subtopic relevance and scores them with :func:`fasttie.diversity.diversity_values`, the
engine of :func:`fasttie.diversity.diversity_evaluate` and :func:`fasttie.alpha_ndcg`.
"""

from __future__ import annotations

import numpy as np

from ..diversity import diversity_values
from .join import Aligned, select_rows, take_rows
from .records import Qrels

__all__ = ["diversity_columns"]


def _diversity_inputs(qrels: Qrels, aligned: Aligned, relevance_level):
    """Per evaluated query, every retrieved or judged document as a row of subtopic relevance.

    Returns y_true (n_rows, n_subtopics) bool (rel >= relevance_level for the subtopic in the
    iteration column; columns are each query's own subtopics in ascending order, numeric when
    every subtopic is a number, as ndeval), scores (judged but not retrieved: -inf), sizes
    per query, and each row's docno rank among all docnos (string order).
    """
    n_queries = len(aligned.query_ids)
    rows, judged_sizes = select_rows(qrels, aligned.query_ids)
    judged_docno = take_rows(qrels.docno, rows)
    judged_rel = take_rows(qrels.rel, rows)
    subtopic = take_rows(qrels.iteration, rows)
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


def diversity_columns(qrels, aligned, diversity, ties, relevance_level, n_threads):
    """Per-query values of every requested diversity metric.

    Parameters
    ----------
    qrels : Qrels
        Diversity judgments (subtopic in the iteration column).
    aligned : Aligned
        The run joined with ``qrels`` (:func:`fasttie.trec.align`).
    diversity : dict
        ``{canonical name: DiversityMetric}`` of the metrics asked for
        (:func:`fasttie.metrics.parse_diversity_metric`).
    ties : {"trec", "pyndeval", "stable", "average"}
        Order of equal scores (see :func:`fasttie.trec.evaluate`).
    relevance_level : number
        A judgment with rel >= this marks the document relevant to its subtopic.
    n_threads : int or None
        Threads of the diversity pass.

    Returns
    -------
    values : dict
        ``{name: float64 array of shape (n_queries,)}`` in ``aligned.query_ids`` order; 0 for a
        query without any relevant subtopic.
    is_empty : ndarray of bool, shape (n_queries,)
        The queries without any relevant subtopic.
    """
    y_true, scores, sizes, docno_rank = _diversity_inputs(qrels, aligned, relevance_level)
    # a query of a qrels mapping without judgments (complete=True) has no row: no relevant subtopic
    kept = sizes > 0
    values = {name: np.zeros(len(sizes)) for name in diversity}
    is_empty = ~kept
    if kept.any():
        kept_values, is_empty[kept] = diversity_values(y_true, scores, sizes[kept], metrics=list(diversity.values()),
                                                       doc_ids=docno_rank, ties=ties, n_threads=n_threads)
        for name, column in kept_values.items():
            values[name][kept] = column
    return values, is_empty
