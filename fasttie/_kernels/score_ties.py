"""Ranked lists: sort each query's scores, cut runs of equal scores into ties, finalize.

The second front door of the engine (DESIGN.md section 2): the same closed-form finalizer as
Hamming ranking, fed from a stable sort of the scores instead of distance buckets.

* average: one tie per run of equal scores;
* optimistic / pessimistic: each run split by grade, highest (lowest) first: homogeneous ties;
* fixed (stable, trec): every row its own position, equal scores ordered by a per-row key
  (input position for "stable", descending document id for "trec").
"""

import numpy as np
from numba import prange

from ._jit import jit, pjit
from .finalize import finalize_ties

AVERAGE, OPTIMISTIC, PESSIMISTIC, FIXED = 0, 1, 2, 3


@jit
def _rank_order(scores, keys, mode):
    """Rows by score descending; equal scores by key ascending for the fixed orders (stable
    sorts). The other modes only aggregate each tie, so any order inside a tie will do."""
    if mode != FIXED:
        return np.argsort(-scores)
    by_key = np.argsort(keys, kind="mergesort")
    by_score = np.argsort(-scores[by_key], kind="mergesort")
    return by_key[by_score]


@jit
def _score_ties(scores, grades, gains, keys, relevance_level, mode):
    """Tie arrays (n, r, grade sum, gain sum) of one query in rank order."""
    n_rows = scores.shape[0]
    order = _rank_order(scores, keys, mode)
    tie_n = np.zeros(n_rows, dtype=np.int64)
    tie_r = np.zeros(n_rows, dtype=np.int64)
    tie_s = np.zeros(n_rows, dtype=np.float64)
    tie_g = np.zeros(n_rows, dtype=np.float64)
    m = 0
    start = 0
    while start < n_rows:
        stop = start + 1
        if mode != FIXED:
            while stop < n_rows and scores[order[stop]] == scores[order[start]]:
                stop += 1
        run = order[start:stop]
        if mode == OPTIMISTIC or mode == PESSIMISTIC:
            run_grades = grades[run]
            by_grade = np.argsort(-run_grades if mode == OPTIMISTIC else run_grades, kind="mergesort")
            run = run[by_grade]
        for p in range(run.shape[0]):
            row = run[p]
            # a new tie unless averaging inside the run, or the grade repeats in a split run
            same = p > 0 and (mode == AVERAGE or (mode != FIXED and grades[row] == grades[run[p - 1]]))
            if not same:
                m += 1
            tie_n[m - 1] += 1
            tie_r[m - 1] += 1 if grades[row] >= relevance_level else 0
            tie_s[m - 1] += grades[row]
            tie_g[m - 1] += gains[row]
        start = stop
    return tie_n[:m], tie_r[:m], tie_s[:m], tie_g[:m]


@jit
def _ideal_runs_of(gains, extra_gains):
    """Runs (gain, count) of all positive gains, ranked and unranked, descending."""
    everything = np.concatenate((gains, extra_gains))
    positive = np.sort(everything[everything > 0])[::-1]
    ideal_gain = np.empty(positive.shape[0], dtype=np.float64)
    ideal_count = np.zeros(positive.shape[0], dtype=np.int64)
    n_runs = 0
    for p in range(positive.shape[0]):
        if n_runs == 0 or positive[p] != ideal_gain[n_runs - 1]:
            ideal_gain[n_runs] = positive[p]
            n_runs += 1
        ideal_count[n_runs - 1] += 1
    return ideal_gain[:n_runs], ideal_count[:n_runs]


@pjit
def finalize_rankings(
    offsets, scores, grades, gains, keys, relevance_level, mode, extra_offsets, extra_gains,
    extra_relevant, cutoffs, discount, need_ratio, out, scalars,
):
    """Base quantities of every query of a grouped ranked list.

    Rows of query q are offsets[q]:offsets[q + 1] of scores / grades / gains (float64) and
    keys (int64 tie-break for FIXED). Judged items outside the ranking: their gains are
    extra_gains[extra_offsets[q]:extra_offsets[q + 1]], extra_relevant[q] of them relevant.
    out : (n_queries, N_QUANTITIES, K) float64; scalars : (n_queries, N_SCALARS) float64.
    """
    for q in prange(offsets.shape[0] - 1):
        lo = offsets[q]
        hi = offsets[q + 1]
        tie_n, tie_r, tie_s, tie_g = _score_ties(
            scores[lo:hi], grades[lo:hi], gains[lo:hi], keys[lo:hi], relevance_level, mode
        )
        ideal_gain, ideal_count = _ideal_runs_of(gains[lo:hi], extra_gains[extra_offsets[q] : extra_offsets[q + 1]])
        finalize_ties(
            tie_n, tie_r, tie_s, tie_g, extra_relevant[q], ideal_gain, ideal_count, cutoffs, discount,
            need_ratio, out[q], scalars[q],
        )
