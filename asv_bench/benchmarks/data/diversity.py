"""Seeded diversity data for ``alpha_ndcg`` (asv's bench_alpha_ndcg and
scripts/bench_alpha_ndcg.py), and pyndeval's inputs built from it.

``make_diversity_data``: n_queries x n_docs judged documents x n_subtopics; document i is
relevant to subtopic s with probability ``density``; every judged document is retrieved, with
scores ``0.3 * subtopics + N(0, 1)`` rounded to ``decimals`` decimals (many ties).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class DiversityData:
    """Rows grouped by query: subtopic matrix, scores, group sizes, integer document ids."""

    y_true: np.ndarray  # (n_queries * n_docs, n_subtopics) bool
    y_pred: np.ndarray  # (n_queries * n_docs,) float64
    sizes: np.ndarray  # (n_queries,) int64
    doc_ids: np.ndarray  # (n_queries * n_docs,) int64, 0..n_docs-1 within each query

    @property
    def n_queries(self) -> int:
        return len(self.sizes)


def make_diversity_data(n_queries, n_docs, n_subtopics, density=0.05, decimals=1, seed=0) -> DiversityData:
    rng = np.random.default_rng(seed)
    y_true = rng.random((n_queries * n_docs, n_subtopics)) < density
    # scores favour documents with more subtopics, plus noise; rounding makes ties
    raw = 0.3 * y_true.sum(axis=1) + rng.standard_normal(n_queries * n_docs)
    y_pred = np.round(raw, decimals)
    sizes = np.full(n_queries, n_docs, dtype=np.int64)
    doc_ids = np.tile(np.arange(n_docs, dtype=np.int64), n_queries)
    return DiversityData(y_true, y_pred, sizes, doc_ids)


def pyndeval_inputs(data: DiversityData, n_queries: int):
    """ndeval's qrels tuples (qid, subtopic, docno, rel) and run tuples (qid, docno, score)."""
    n_docs = int(data.sizes[0])
    width = len(str(n_docs - 1))
    qrels, run = [], []
    for q in range(n_queries):
        qid = f"{q:06d}"
        rows = slice(q * n_docs, (q + 1) * n_docs)
        for d, (relevant, score) in enumerate(zip(data.y_true[rows], data.y_pred[rows].tolist())):
            docno = f"d{d:0{width}d}"  # zero-padded: string order = id order
            subtopics = np.flatnonzero(relevant)
            if subtopics.size:
                qrels.extend((qid, str(s), docno, 1) for s in subtopics.tolist())
            else:
                qrels.append((qid, "0", docno, 0))
            run.append((qid, docno, score))
    return qrels, run
