"""From Hamming histograms to tie sequences, and the parallel drivers of the finalizer.

* average: one tie per non-empty distance bucket;
* optimistic / pessimistic: each bucket split by grade, highest (lowest) grade first, so every
  tie is homogeneous and the finalizer's expectation is the fixed value;
* stable (ties in database index order): a second pass over the database in index order gives
  every relevant item its exact rank, start[d] + seen[d], with no sort; the ranked relevant
  items and the gaps between them become homogeneous ties.
"""

import numpy as np
from numba import prange

from ._jit import jit, pjit
from .finalize import finalize_ties
from .histogram import _distance
from .popcount import popcount64

AVERAGE, OPTIMISTIC, PESSIMISTIC = 0, 1, 2
CLASS, MULTIHOT, LISTED = 0, 1, 2  # how the stable pass finds an item's grade


@jit
def _ideal_runs(hist_q, gains):
    """Runs (gain, count) of the ideal order: grades descending, positive grades only."""
    n_dist, n_grades = hist_q.shape
    ideal_gain = np.empty(n_grades, dtype=np.float64)
    ideal_count = np.empty(n_grades, dtype=np.int64)
    n_runs = 0
    for g in range(n_grades - 1, 0, -1):
        count = 0
        for d in range(n_dist):
            count += hist_q[d, g]
        if count > 0:
            ideal_gain[n_runs] = gains[g]
            ideal_count[n_runs] = count
            n_runs += 1
    return ideal_gain[:n_runs], ideal_count[:n_runs]


@jit
def _bucket_ties(hist_q, gains, mode):
    """Tie arrays (n, r, grade sum, gain sum) of one query's histogram, in rank order."""
    n_dist, n_grades = hist_q.shape
    size = n_dist if mode == AVERAGE else n_dist * n_grades
    tie_n = np.zeros(size, dtype=np.int64)
    tie_r = np.zeros(size, dtype=np.int64)
    tie_s = np.zeros(size, dtype=np.float64)
    tie_g = np.zeros(size, dtype=np.float64)
    m = 0
    for d in range(n_dist):
        if mode == AVERAGE:
            n = 0
            for g in range(n_grades):
                count = hist_q[d, g]
                n += count
                if g > 0:
                    tie_r[m] += count
                    tie_s[m] += g * count
                    tie_g[m] += gains[g] * count
            if n > 0:
                tie_n[m] = n
                m += 1
        else:
            for step in range(n_grades):
                g = n_grades - 1 - step if mode == OPTIMISTIC else step
                count = hist_q[d, g]
                if count > 0:
                    tie_n[m] = count
                    tie_r[m] = count if g > 0 else 0
                    tie_s[m] = g * count
                    tie_g[m] = gains[g] * count
                    m += 1
    return tie_n[:m], tie_r[:m], tie_s[:m], tie_g[:m]


@pjit
def finalize_histograms(hist, gains, mode, cutoffs, discount, need_ratio, out, scalars):
    """Base quantities of every query from its histogram (average, optimistic, pessimistic).

    hist : (n_queries, n_bits + 1, n_grades) int64; gains : (n_grades,) float64;
    out : (n_queries, N_QUANTITIES, K) float64; scalars : (n_queries, N_SCALARS) float64.
    """
    for i in prange(hist.shape[0]):
        tie_n, tie_r, tie_s, tie_g = _bucket_ties(hist[i], gains, mode)
        ideal_gain, ideal_count = _ideal_runs(hist[i], gains)
        finalize_ties(
            tie_n, tie_r, tie_s, tie_g, np.int64(0), ideal_gain, ideal_count, cutoffs, discount, need_ratio,
            out[i], scalars[i],
        )


@jit
def _item_grade(kind, j, query_label, db_labels, query_label_row, db_label_words, listed_ids, listed_grades, cursor):
    """Grade of database item j for one query; for LISTED, ``cursor`` walks the sorted ids."""
    if kind == CLASS:
        return np.int64(1 if db_labels[j] == query_label else 0), cursor
    if kind == MULTIHOT:
        g = np.uint64(0)
        for w in range(db_label_words.shape[1]):
            g += popcount64(query_label_row[w] & db_label_words[j, w])
        return np.int64(g), cursor
    if cursor < listed_ids.shape[0] and listed_ids[cursor] == j:
        return listed_grades[cursor], cursor + 1
    return np.int64(0), cursor


@pjit
def finalize_stable(
    query_words, db_words, kind, query_labels, db_labels, query_label_words, db_label_words,
    indptr, listed_ids, listed_grades, hist, gains, cutoffs, discount, need_ratio, out, scalars,
):
    """Base quantities with ties broken by database index (np.argsort(kind="stable") order).

    db_words and labels are in the caller's original order. For LISTED relevance, the ids of
    query i are listed_ids[indptr[i]:indptr[i + 1]], sorted ascending.
    """
    n_db = db_words.shape[0]
    n_words = db_words.shape[1]
    n_dist = hist.shape[1]
    n_grades = hist.shape[2]
    for i in prange(query_words.shape[0]):
        hist_q = hist[i]
        start = np.zeros(n_dist, dtype=np.int64)  # items before distance d
        rel_start = np.zeros(n_dist, dtype=np.int64)  # relevant items before distance d
        items = 0
        relevant = 0
        for d in range(n_dist):
            start[d] = items
            rel_start[d] = relevant
            for g in range(n_grades):
                items += hist_q[d, g]
                if g > 0:
                    relevant += hist_q[d, g]
        ranks = np.empty(relevant, dtype=np.int64)
        grades = np.empty(relevant, dtype=np.int64)
        seen = np.zeros(n_dist, dtype=np.int64)
        rel_seen = np.zeros(n_dist, dtype=np.int64)
        query = query_words[i]
        ids = listed_ids[indptr[i] : indptr[i + 1]]
        id_grades = listed_grades[indptr[i] : indptr[i + 1]]
        query_label = query_labels[i] if kind == CLASS else np.int32(0)
        label_row = query_label_words[i] if kind == MULTIHOT else query_label_words[0]
        cursor = np.int64(0)
        for j in range(n_db):
            d = _distance(query, db_words, j, n_words)
            g, cursor = _item_grade(
                kind, j, query_label, db_labels, label_row, db_label_words, ids, id_grades, cursor
            )
            if g > 0:
                slot = rel_start[d] + rel_seen[d]
                ranks[slot] = start[d] + seen[d] + 1
                grades[slot] = g
                rel_seen[d] += 1
            seen[d] += 1
        # relevant items (singleton ties) and the runs of non-relevant items between them
        tie_n = np.empty(2 * relevant + 1, dtype=np.int64)
        tie_r = np.zeros(2 * relevant + 1, dtype=np.int64)
        tie_s = np.zeros(2 * relevant + 1, dtype=np.float64)
        tie_g = np.zeros(2 * relevant + 1, dtype=np.float64)
        m = 0
        last = 0
        for p in range(relevant):
            if ranks[p] > last + 1:
                tie_n[m] = ranks[p] - last - 1
                m += 1
            tie_n[m] = 1
            tie_r[m] = 1
            tie_s[m] = grades[p]
            tie_g[m] = gains[grades[p]]
            m += 1
            last = ranks[p]
        if items > last:
            tie_n[m] = items - last
            m += 1
        ideal_gain, ideal_count = _ideal_runs(hist_q, gains)
        finalize_ties(
            tie_n[:m], tie_r[:m], tie_s[:m], tie_g[:m], np.int64(0), ideal_gain, ideal_count, cutoffs, discount,
            need_ratio, out[i], scalars[i],
        )
