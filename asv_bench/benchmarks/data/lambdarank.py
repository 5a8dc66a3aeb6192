"""Seeded data for ``lambdarank`` (asv's bench_lambdarank and scripts/bench_lambdarank.py), the
numpy baseline and LightGBM's default settings.

``make_lambdarank_data``: labels 0-4 with MSLR-WEB30K-like frequencies (51/33/13/2/1 %), scores
``0.5 * label + N(0, 1)`` (distinct), one query per row.
"""

from __future__ import annotations

import numpy as np

LABEL_PROBS = (0.514, 0.325, 0.134, 0.019, 0.008)
LGB_SETTINGS = {"k": 30, "damp_score_gap": True, "rescale": True}  # LightGBM's defaults


def make_lambdarank_data(n_queries, n_docs, seed=0):
    """(n_queries, n_docs) int64 labels and float64 scores 0.5 * label + N(0, 1)."""
    rng = np.random.default_rng(seed)
    y_true = rng.choice(len(LABEL_PROBS), size=(n_queries, n_docs), p=LABEL_PROBS).astype(np.int64)
    y_pred = rng.standard_normal((n_queries, n_docs)) + 0.5 * y_true
    return y_true, y_pred


def numpy_lambdarank(y_true, y_pred, sigma=1.0):
    """Straightforward numpy LambdaRank (every pair, exp2 gain): per query n x n matrices."""
    lambdas = np.zeros(y_true.shape)
    hessians = np.zeros(y_true.shape)
    for q in range(y_true.shape[0]):
        labels = y_true[q].astype(np.float64)
        scores = y_pred[q]
        n = len(labels)
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(-scores, kind="stable")] = np.arange(n)
        gains = 2.0**labels - 1.0
        idcg = (np.sort(gains)[::-1] / np.log2(np.arange(2, n + 2))).sum()
        if idcg == 0:
            continue
        disc = 1.0 / np.log2(rank + 2.0)
        delta = np.abs((gains[:, None] - gains[None, :]) * (disc[:, None] - disc[None, :])) / idcg
        delta *= labels[:, None] > labels[None, :]  # row i better than column j
        rho = 1.0 / (1.0 + np.exp(sigma * (scores[:, None] - scores[None, :])))
        pair = sigma * delta * rho
        hess = sigma**2 * delta * rho * (1.0 - rho)
        lambdas[q] = pair.sum(axis=0) - pair.sum(axis=1)
        hessians[q] = hess.sum(axis=0) + hess.sum(axis=1)
    return lambdas, hessians
