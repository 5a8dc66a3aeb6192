"""Ranked lists: sort each query's scores, cut runs of equal scores into ties, finalize.

The second front door of the engine (DESIGN.md section 2): the same closed-form finalizer as
Hamming ranking, fed from a stable sort of the scores instead of distance buckets.

* average: one tie per run of equal scores;
* optimistic / pessimistic: each run split by grade, highest (lowest) first, and within a grade by
  judgment, judged rows first (last): homogeneous ties, one order's values;
* fixed (stable, trec): every row its own position, equal scores ordered by a per-row key
  (input position for "stable", descending document id for "trec"); no ties, so the rows
  with a grade or a judgment go to :func:`.finalize.finalize_ranked`, which skips the others
  (the unjudged rows that make up most of a TREC run).
"""

import numpy as np
from numba import types

from ._jit import jit
from .address import caller_of, declare
from .filled import filled
from .finalize import call_finalize_ranked, call_finalize_ties, call_ranked_optional_sums
from .modes import AVERAGE, FIXED, OPTIMISTIC, PESSIMISTIC
from .radix_sort import argsort_ascending, argsort_descending, ascending_through, descending_through
from .tie_arrays import empty_ties



@jit(inline="always")
def rank_order(scores, keys, mode):
    """Rows by score descending (stable radix sort); for the fixed orders equal scores by key
    ascending, or in row order when there are no keys."""
    # the sorts take writable arrays only (one compiled signature): copy the read-only inputs
    if mode != FIXED or keys.shape[0] == 0:
        return argsort_descending(scores.copy())
    by_key = argsort_ascending(keys.copy())
    return by_key[argsort_descending(scores[by_key])]


@jit(inline="always")
def _rank_order_through(scores, keys, mode, sort):
    """:func:`rank_order` with the sorts through the sort's address ``sort`` (the walks' drivers:
    they compile without the sort)."""
    # the sorts take writable arrays only (one compiled signature): copy the read-only inputs
    if mode != FIXED or keys.shape[0] == 0:
        return descending_through(scores.copy(), sort)
    by_key = ascending_through(keys.copy(), sort)
    return by_key[descending_through(scores[by_key], sort)]


@jit(inline="always")
def run_end(scores, order, start, mode):
    """End of the run that starts at ``order[start]``: the rows after it with the same score,
    one row for the fixed orders (each row its own position)."""
    stop = start + 1
    if mode != FIXED:
        while stop < order.shape[0] and scores[order[stop]] == scores[order[start]]:
            stop += 1
    return stop


@jit
def split_run_into(run, grades, judged, optimistic, sort):
    """The rows ``run`` (of equal scores) reordered in place by grade, and within a grade the judged
    rows first (``optimistic``) or last: every split tie then holds one grade and one judgment, so
    the values are those of one order (a judged and an unjudged row of one grade would count half
    each in Judged@k, RBPResid). ``sort`` is the address of :func:`.radix_sort.sort_keys_into`.

    Called through its address (:mod:`.address`) by :func:`finalize_rankings` for the optimistic
    and pessimistic orders only: an average call compiles none of it, and a cold first call of a
    split order compiles it in a helper process meanwhile (:mod:`fasttie.finalize.cold_start`).
    """
    sign = 1.0 if optimistic else -1.0
    by_judgment = run[descending_through(sign * judged[run].astype(np.float64), sort)]
    by_grade = by_judgment[descending_through(sign * grades[by_judgment], sort)]  # stable: judged order kept
    for p in range(run.shape[0]):
        run[p] = by_grade[p]


SPLIT_RUN_ARGS = (types.int64[::1], types.Array(types.float64, 1, "C", readonly=True),
                  types.Array(types.boolean, 1, "C", readonly=True), types.boolean, types.uint64)
declare(split_run_into, SPLIT_RUN_ARGS)
call_split_run = caller_of(SPLIT_RUN_ARGS, "split_run_into")


@jit(inline="always")
def _in_split_order(run, grades, judged, mode):
    """Whether the rows ``run`` are in the order :func:`split_run_into` gives them already (grades,
    then judgments, descending for OPTIMISTIC, ascending for PESSIMISTIC; its sorts are stable):
    most short runs are, and skip the call."""
    sign = 1.0 if mode == OPTIMISTIC else -1.0
    for p in range(1, run.shape[0]):
        before, here = sign * grades[run[p - 1]], sign * grades[run[p]]
        if here > before or (here == before and sign * judged[run[p]] > sign * judged[run[p - 1]]):
            return False
    return True


@jit(inline="always")
def _score_ties(scores, grades, gains, judged, keys, relevance_level, mode, sort, split):
    """Tie arrays (n, r, u, grade sum, gain sum) of one query in rank order (average, optimistic,
    pessimistic: each run split by :func:`split_run_into` at address ``split``); u counts the
    judged rows below the relevance level."""
    n_rows = scores.shape[0]
    order = _rank_order_through(scores, keys, mode, sort)
    tie_n, tie_r, tie_u, tie_s, tie_g = empty_ties(n_rows)
    m = 0
    start = 0
    while start < n_rows:
        stop = run_end(scores, order, start, mode)
        run = order[start:stop]
        if (mode == OPTIMISTIC or mode == PESSIMISTIC) and not _in_split_order(run, grades, judged, mode):
            call_split_run(split, (run, grades, judged, mode == OPTIMISTIC, sort))
        for p in range(run.shape[0]):
            row = run[p]
            # a new tie unless averaging inside the run, or grade and judgment repeat in a split run
            same = p > 0 and (mode == AVERAGE or (grades[row] == grades[run[p - 1]]
                                                  and judged[row] == judged[run[p - 1]]))
            if not same:
                m += 1
            tie_n[m - 1] += 1
            relevant = grades[row] >= relevance_level
            tie_r[m - 1] += 1 if relevant else 0
            tie_u[m - 1] += 1 if judged[row] and not relevant else 0
            tie_s[m - 1] += grades[row]
            tie_g[m - 1] += gains[row]
        start = stop
    return tie_n[:m], tie_r[:m], tie_u[:m], tie_s[:m], tie_g[:m]


_MAX_COUNTED_GRADE = 4096


@jit(inline="always")
def _top_small_integer(grades, top):
    """max(top, grades), or -1 when a grade is not an integer in 0.._MAX_COUNTED_GRADE or ``top``
    is already -1 (a fractional grade among the ranked rows rules the histogram out for the
    unranked ones too)."""
    if top < 0.0:
        return top
    for g in grades:
        if g != np.floor(g) or g > _MAX_COUNTED_GRADE:
            return -1.0
        top = max(top, g)
    return top


@jit
def _count_grades(grades, gains, count, gain_of):
    for i in range(grades.shape[0]):
        g = int(grades[i])
        count[g] += 1
        gain_of[g] = gains[i]


@jit(inline="always")
def _ideal_runs_of(grades, gains, extra_grades, extra_gains, sort):
    """Runs (gain, count) of all positive gains, ranked and unranked, descending.

    With small integer grades (the usual case) whose gains rise with the grade and are positive,
    a histogram by grade replaces the sort."""
    top = _top_small_integer(extra_grades, _top_small_integer(grades, 0.0))
    by_grade = top >= 0
    count = filled(np.empty(int(top) + 1 if by_grade else 0, dtype=np.int64), 0)
    gain_of = filled(np.empty(count.shape[0], dtype=np.float64), 0.0)
    if by_grade:
        _count_grades(grades, gains, count, gain_of)
        _count_grades(extra_grades, extra_gains, count, gain_of)
    above = np.inf  # a gain table of one's own (trec_eval's ndcg.1=3,2=9,4=4.5) need not rise with the grade
    for g in range(count.shape[0] - 1, 0, -1):
        if count[g] > 0:
            if not 0.0 < gain_of[g] <= above:
                by_grade = False
                break
            above = gain_of[g]
    if not by_grade:  # one call site: an inlined helper is typed and generated once per call
        return _ideal_runs_sorted(gains, extra_gains, sort)
    n_runs = 0
    for g in range(1, count.shape[0]):
        n_runs += count[g] > 0
    ideal_gain = np.empty(n_runs, dtype=np.float64)
    ideal_count = np.empty(n_runs, dtype=np.int64)
    at = 0
    for g in range(count.shape[0] - 1, 0, -1):
        if count[g] > 0:
            ideal_gain[at] = gain_of[g]
            ideal_count[at] = count[g]
            at += 1
    return ideal_gain, ideal_count


@jit(inline="always")
def _ideal_runs_sorted(gains, extra_gains, sort):
    """Runs (gain, count) of all positive gains, descending, by sorting them."""
    # gathered by loops: np.concatenate and a boolean mask each compile an implementation of their own
    n_positive = 0
    for source in (gains, extra_gains):
        for i in range(source.shape[0]):
            n_positive += source[i] > 0
    positive = np.empty(n_positive, dtype=np.float64)
    at = 0
    for source in (gains, extra_gains):
        for i in range(source.shape[0]):
            if source[i] > 0:
                positive[at] = source[i]
                at += 1
    positive = positive[descending_through(positive, sort)]
    ideal_gain = np.empty(positive.shape[0], dtype=np.float64)
    ideal_count = filled(np.empty(positive.shape[0], dtype=np.int64), 0)
    n_runs = 0
    for p in range(positive.shape[0]):
        if n_runs == 0 or positive[p] != ideal_gain[n_runs - 1]:
            ideal_gain[n_runs] = positive[p]
            n_runs += 1
        ideal_count[n_runs - 1] += 1
    return ideal_gain[:n_runs], ideal_count[:n_runs]


@jit
def finalize_rankings(
    offsets, scores, grades, gains, judged, keys, relevance_level, mode, extra_offsets, extra_grades,
    extra_gains, extra_relevant, extra_nonrel, cutoffs, log_p, discount, need_ratio, optional, out, scalars, start,
    stop, walk, sort, split,
):
    """Base quantities of queries start..stop-1 of a grouped ranked list, ties averaged or split
    by grade (AVERAGE, OPTIMISTIC, PESSIMISTIC; fixed orders: :func:`finalize_fixed_rankings`).

    Rows of query q are offsets[q]:offsets[q + 1] of scores / grades / gains (float64), judged
    (bool: the row has a judgment; bpref counts the judged non-relevant rows only) and keys
    (int64 tie-break for FIXED; an empty keys array means row order). Judged items outside the
    ranking: their grades and gains are extra_grades / extra_gains[extra_offsets[q]:
    extra_offsets[q + 1]], extra_relevant[q] of them relevant and extra_nonrel[q] not.

    Parameters
    ----------
    offsets : (n_queries + 1,) int64, read-only
        Query q's rows are offsets[q]:offsets[q + 1].
    scores : (n_rows,) float64, read-only
        Scores, higher ranks first.
    grades : (n_rows,) float64, read-only
        Graded relevance of each row.
    gains : (n_rows,) float64, read-only
        Gain of each row.
    judged : (n_rows,) bool, read-only
        Whether each row has a judgment.
    keys : (n_rows,) or (0,) int64, read-only
        Tie-break keys of the fixed order; empty: row order.
    relevance_level : float
        Grades >= it are relevant.
    mode : int
        Tie mode: modes.AVERAGE, OPTIMISTIC or PESSIMISTIC.
    extra_offsets : (n_queries + 1,) int64, read-only
        Query q's judged items outside the ranking are rows extra_offsets[q]:extra_offsets[q + 1]
        of the two arrays below.
    extra_grades : (n_extra,) float64, read-only
        Their grades.
    extra_gains : (n_extra,) float64, read-only
        Their gains.
    extra_relevant : (n_queries,) int64, read-only
        Relevant items outside the ranking, per query (they count in R).
    extra_nonrel : (n_queries,) int64, read-only
        Judged non-relevant items outside the ranking, per query (bpref).
    cutoffs : (K,) int64, read-only
        Cutoffs, ascending, >= 1.
    log_p : (K,) float64, read-only
        log of RBP's persistence per cutoff column.
    discount : (D + 1,) float64, read-only
        Cumulative DCG discount (:func:`.finalize.finalize_ties`).
    need_ratio : bool
        Compute AP_RET / WAP_RET (the optional walk only).
    optional : int
        Bit mask of the optional sums (finalize.OPTIONAL_*; the optional walk only).
    out : (n_queries, N_QUANTITIES, K) float64
        Written: base quantities, rows start..stop-1.
    scalars : (n_queries, N_SCALARS) float64
        Written: scalars, rows start..stop-1.
    start, stop : int
        The queries of this block, start..stop-1.
    walk : uint64
        Address of the tie walk (:mod:`.address`): :func:`.finalize.finalize_ties`, or
        ``finalize_ties_optional`` for the optional sums and the ratios. Called through its address,
        it is not compiled into this kernel: a cold first call compiles it in a helper process
        meanwhile (:mod:`fasttie.finalize.cold_start`).
    sort : uint64
        Address of :func:`.radix_sort.sort_keys_into`, every sort of the walk (as ``walk``).
    split : uint64
        Address of :func:`split_run_into` (OPTIMISTIC, PESSIMISTIC; 0 for AVERAGE: not called).
    """
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        tie_n, tie_r, tie_u, tie_s, tie_g = _score_ties(
            scores[lo:hi], grades[lo:hi], gains[lo:hi], judged[lo:hi], keys[lo:hi], relevance_level, mode, sort,
            split,
        )
        judged_nonrel = extra_nonrel[q]
        for c in range(tie_u.shape[0]):
            judged_nonrel += tie_u[c]
        extra = slice(extra_offsets[q], extra_offsets[q + 1])
        ideal_gain, ideal_count = _ideal_runs_of(grades[lo:hi], gains[lo:hi], extra_grades[extra],
                                                 extra_gains[extra], sort)
        call_finalize_ties(walk, (
            tie_n, tie_r, tie_u, tie_s, tie_g, np.int64(extra_relevant[q]), np.int64(judged_nonrel), ideal_gain,
            ideal_count, cutoffs, log_p, discount, np.bool_(need_ratio), np.int64(optional), out[q], scalars[q],
        ))


@jit
def finalize_fixed_rankings(
    offsets, scores, grades, gains, judged, keys, relevance_level, extra_offsets, extra_grades, extra_gains,
    extra_relevant, extra_nonrel, cutoffs, log_p, discount, optional, out, scalars, start, stop, ranked, sums, sort,
):
    """:func:`finalize_rankings` in a fixed order (ties="stable", "trec": equal scores by key,
    or in row order when ``keys`` is empty), the same arguments but the mode and ``need_ratio``
    (a fixed order has the ratio exactly). Only the rows with a grade, a gain, a judgment or
    relevance are walked; the others are unjudged items that add nothing.

    Parameters
    ----------
    offsets : (n_queries + 1,) int64, read-only
        Query q's rows are offsets[q]:offsets[q + 1].
    scores : (n_rows,) float64, read-only
        Scores, higher ranks first.
    grades : (n_rows,) float64, read-only
        Graded relevance of each row.
    gains : (n_rows,) float64, read-only
        Gain of each row.
    judged : (n_rows,) bool, read-only
        Whether each row has a judgment.
    keys : (n_rows,) or (0,) int64, read-only
        Tie-break keys of the fixed order; empty: row order.
    relevance_level : float
        Grades >= it are relevant.
    extra_offsets : (n_queries + 1,) int64, read-only
        Query q's judged items outside the ranking are rows extra_offsets[q]:extra_offsets[q + 1]
        of the two arrays below.
    extra_grades : (n_extra,) float64, read-only
        Their grades.
    extra_gains : (n_extra,) float64, read-only
        Their gains.
    extra_relevant : (n_queries,) int64, read-only
        Relevant items outside the ranking, per query (they count in R).
    extra_nonrel : (n_queries,) int64, read-only
        Judged non-relevant items outside the ranking, per query (bpref).
    cutoffs : (K,) int64, read-only
        Cutoffs, ascending, >= 1.
    log_p : (K,) float64, read-only
        log of RBP's persistence per cutoff column.
    discount : (D + 1,) float64, read-only
        Cumulative DCG discount (:func:`.finalize.finalize_ties`).
    optional : int
        Bit mask of the optional sums (finalize.OPTIONAL_*; read where ``sums`` is given).
    out : (n_queries, N_QUANTITIES, K) float64
        Written: base quantities, rows start..stop-1.
    scalars : (n_queries, N_SCALARS) float64
        Written: scalars, rows start..stop-1.
    start, stop : int
        The queries of this block, start..stop-1.
    ranked : uint64
        Address of :func:`.finalize.finalize_ranked` (:mod:`.address`; see ``walk`` in
        :func:`finalize_rankings`).
    sums : uint64
        Address of :func:`.finalize.ranked_optional_sums`, or 0: no optional sums.
    sort : uint64
        Address of :func:`.radix_sort.sort_keys_into` (see ``sort`` in :func:`finalize_rankings`).
    """
    widest = 0
    for q in range(start, stop):
        widest = max(widest, offsets[q + 1] - offsets[q])
    ranks = np.empty(widest, dtype=np.int64)
    item_grades = np.empty(widest, dtype=np.float64)
    item_gains = np.empty(widest, dtype=np.float64)
    item_relevant = np.empty(widest, dtype=np.bool_)
    item_judged = np.empty(widest, dtype=np.bool_)
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        order = _rank_order_through(scores[lo:hi], keys[lo:hi], FIXED, sort)
        m = 0
        judged_nonrel = extra_nonrel[q]
        for p in range(hi - lo):
            row = lo + order[p]
            relevant = grades[row] >= relevance_level
            if judged[row] or relevant or grades[row] != 0.0 or gains[row] != 0.0:
                ranks[m] = p + 1
                item_grades[m] = grades[row]
                item_gains[m] = gains[row]
                item_relevant[m] = relevant
                item_judged[m] = judged[row]
                m += 1
                judged_nonrel += 1 if judged[row] and not relevant else 0
        extra = slice(extra_offsets[q], extra_offsets[q + 1])
        ideal_gain, ideal_count = _ideal_runs_of(grades[lo:hi], gains[lo:hi], extra_grades[extra],
                                                 extra_gains[extra], sort)
        listed = (ranks[:m], item_grades[:m], item_gains[:m], item_relevant[:m], item_judged[:m], np.int64(hi - lo),
                  np.bool_(False))
        call_finalize_ranked(ranked, (*listed, np.int64(extra_relevant[q]), np.int64(judged_nonrel), ideal_gain,
                                      ideal_count, cutoffs, log_p, discount, np.int64(optional), out[q], scalars[q]))
        if sums != 0:
            call_ranked_optional_sums(sums, (*listed, np.int64(judged_nonrel), ideal_gain, cutoffs, log_p,
                                             np.int64(optional), out[q], scalars[q]))
