"""Seeded ranked lists with tied scores for ``rank_evaluate`` (asv's bench_ranking and
scripts/bench_ranking.py), and ranx's inputs built from them.

``make_ranking_data``: graded labels 0..4 drawn per document with the frequencies of a preset of
``LABEL_PRESETS`` (default "mslr": roughly MSLR-WEB30K's 51/33/13/2/1 %); raw scores
``signal * label + N(0, 1)``, rounded to ``decimals`` decimals (heavy ties) in ``y_pred``, kept
unrounded (tie-free) in ``y_pred_distinct``. ``METRICS`` are the four metrics timed,
``RANX_NAMES`` their ranx names.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

METRICS = ("nDCG@10", "AP", "RR", "P@10")
RANX_NAMES = {"nDCG@10": "ndcg@10", "AP": "map", "RR": "mrr", "P@10": "precision@10"}
LABEL_PRESETS = {
    # label 0..4 frequencies
    "mslr": (0.514, 0.325, 0.134, 0.019, 0.008),  # ~ MSLR-WEB30K: half the documents relevant
    "sparse": (0.95, 0.03, 0.012, 0.006, 0.002),  # ~5 % relevant, as deep TREC-style pools
    "uniform": (0.2, 0.2, 0.2, 0.2, 0.2),
}


@dataclass
class RankingData:
    """(n_queries, n_docs) float64 arrays: grades, tied scores, tie-free scores."""

    y_true: np.ndarray
    y_pred: np.ndarray
    y_pred_distinct: np.ndarray
    probs: tuple
    decimals: int
    seed: int

    @property
    def n_queries(self) -> int:
        return self.y_true.shape[0]

    @property
    def n_docs(self) -> int:
        return self.y_true.shape[1]


def make_ranking_data(n_queries, n_docs, probs=LABEL_PRESETS["mslr"], decimals=1, signal=0.5, seed=0):
    """Seeded graded labels 0..len(probs)-1 and scores signal * label + N(0, 1).

    ``y_pred`` is rounded to ``decimals`` decimals (heavy ties); ``y_pred_distinct`` is the
    unrounded score (distinct with probability 1).
    """
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum()
    rng = np.random.default_rng(seed)
    y_true = rng.choice(len(probs), size=(n_queries, n_docs), p=probs).astype(np.float64)
    raw = rng.standard_normal((n_queries, n_docs))
    raw += signal * y_true
    y_pred = np.round(raw, decimals)
    return RankingData(y_true, y_pred, raw, tuple(probs.round(6)), decimals, seed)


def query_ids(n_queries):
    """Zero-padded, so ranx's sort by query id keeps the row order."""
    return [f"q{i:06d}" for i in range(n_queries)]


def doc_ids(n_docs):
    """Fixed width: ranx compiles its typed-dict builders per unicode width, so the warm-up
    and the timed data share one compiled version."""
    return [f"d{j:06d}" for j in range(n_docs)]


def ranx_dicts(y_true, y_pred):
    """{qid: {docid: grade}} (grades >= 1 only, as qrels usually are; a query without any keeps
    one grade-0 entry so the query sets match) and {qid: {docid: score}}."""
    qids, dids = query_ids(y_true.shape[0]), doc_ids(y_true.shape[1])
    dids_arr = np.array(dids, dtype=object)
    qrels, run = {}, {}
    for i, q in enumerate(qids):
        rel = np.flatnonzero(y_true[i] >= 1)
        if len(rel):
            qrels[q] = dict(zip(dids_arr[rel].tolist(), y_true[i, rel].astype(np.int64).tolist(), strict=True))
        else:
            qrels[q] = {dids[0]: 0}
        run[q] = dict(zip(dids, y_pred[i].tolist(), strict=True))
    return qrels, run


def ranx_objects(y_true, y_pred):
    """(Qrels, Run, seconds for the dicts, for Qrels.from_dict, for Run.from_dict)."""
    from ranx import Qrels, Run

    t0 = time.perf_counter()
    qd, rd = ranx_dicts(y_true, y_pred)
    t1 = time.perf_counter()
    qrels = Qrels.from_dict(qd)
    t2 = time.perf_counter()
    run = Run.from_dict(rd)
    t3 = time.perf_counter()
    return qrels, run, t1 - t0, t2 - t1, t3 - t2
