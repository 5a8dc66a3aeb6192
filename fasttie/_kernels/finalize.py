"""Closed-form finalizer: one query's sequence of ties -> every base quantity at every cutoff.

A query reaches this as a sequence of ties in rank order, each with n items, r relevant, grade
sum S and gain sum G. The average over orderings inside ties follows docs/ties.md; a fixed
order (optimistic, pessimistic, stable) is the same walk over ties in which every tie is
homogeneous (all items of one grade), where the expectation is the fixed value. Both front
doors (Hamming buckets, sorted scores) end here.

Base quantities, per cutoff k (clamped to [1, N]):
    HITS     E[hits@k]                 GSUM    E[sum of grades in the top k]
    DCG      E[DCG@k]                  IDCG    DCG@k of the ideal order
    AP_NUM   E[sum_{i<=k} rel_i hits@i / i]        AP_RET   E[AP numerator / hits@k]
    WAP_NUM  E[sum_{i<=k} rel_i CG@i / i]          WAP_RET  E[WAP numerator / hits@k]
    RR       E[1/rank of the first relevant item, 0 past k]
    MISS     P(hits@k = 0), no relevant item in the top k (HashNet's protocol skips such queries)
    JUDGED   E[judged items in the top k]
    RBP      E[RBP@k] = E[(1-p) sum_{i<=k} p^(i-1) gain_i] / max(1, largest gain)
    RBP_REL  E[(1-p) sum_{i<=k} p^(i-1) rel_i], binary RBP
    RESIDUAL E[(1-p) sum_{i<=k, unjudged} p^(i-1)] + p^min(k, N), RBP's residual
(p, the persistence, is per cutoff column: columns may repeat a cutoff with another p)
and per query: R (relevant items), E[hits@R] (R-precision), E[AP numerator at the cutoff R]
(MAP@R, pytorch-metric-learning's mean average precision at R), the sum behind bpref,
E[sum over relevant items of 1 - min(n, R) / min(N_nr, R)], n the judged non-relevant items
ranked above it and N_nr all judged non-relevant items of the query (trec_eval's bpref), and,
for fixed orders only, interpolated precision at any recall levels (the caller writes them
into the scalars: see IPREC).
"""

import math

import numpy as np
from numba import types

from ._jit import WITH_RATIOS, jit, jit_variants
from .filled import filled_rows
from .address import caller_of, declare
from .modes import AVERAGE, OPTIMISTIC
from .tie_math import first_relevant_rr, harmonic_diff, hypergeometric_weights, shifted_harmonic

HITS, GSUM, DCG, IDCG, AP_NUM, AP_RET, WAP_NUM, WAP_RET, RR, MISS, JUDGED, RBP, RBP_REL, RESIDUAL = range(14)
N_QUANTITIES = 14
# AP_AT_R: E[sum_{i<=R} rel_i hits@i / i], R the query's relevant items (MAP@R)
TOTAL_RELEVANT, HITS_AT_R, BPREF_SUM, AP_AT_R = range(4)
N_SCALARS = 4
# the interpolated precisions follow, one slot per recall level asked: scalars[IPREC + l] holds
# the l-th level (ascending) on entry and the interpolated precision at it on exit (written by the
# optional sums only); a row has N_SCALARS + len(levels) slots
# (:meth:`fasttie.finalize.plan.FinalizePlan.new_scalars`)
IPREC = N_SCALARS
# the optional sums of the finalizer, a bit mask (each costs a walk over the relevant items, or
# for WAP a division per relevant item of a fixed order)
OPTIONAL_IPREC, OPTIONAL_BPREF, OPTIONAL_RBP, OPTIONAL_WAP = 1, 2, 4, 8
# with OPTIONAL_IPREC: the recall levels rounded as trec_eval 9 (pytrec_eval) rounds them, not as 10.0
IPREC_TREC_EVAL_9 = 16


@jit
def precision_kernel(n, r, s, prev, dh, lh):
    """E[sum over the tie's first j ranks of rel * cumulative / rank] (docs/ties.md, section 4).

    The tie holds n items, r relevant with grade sum s (all float64); ``prev`` is the
    cumulative count (AP) or grade (WAP) before the tie; dh, lh the harmonic sums of (t, j).
    """
    if r == 0.0:
        return 0.0
    alpha = (r * prev + s) / n
    if n == 1.0:
        return alpha * dh
    beta = (r - 1.0) * s / (n * (n - 1.0))
    return alpha * dh + beta * lh


@jit(inline="always")
def _no_relevant_in_first(n, r, j):
    """P(none of the first j ranks of a tie of n items with r relevant is relevant):
    C(n - r, j) / C(n, j) = prod_{i<j} (n - r - i) / (n - i) = prod_{i<r} (n - j - i) / (n - i),
    whichever product is shorter; it stops once the value underflows to 0."""
    if j > n - r:
        return 0.0
    p = 1.0
    if j <= r:
        for i in range(j):
            p *= (n - r - i) / (n - i)
            if p == 0.0:
                break
    else:
        for i in range(r):
            p *= (n - j - i) / (n - i)
            if p == 0.0:
                break
    return p


@jit(inline="always")
def _ratio_expectations(t, j, n, r, mean_grade, hits_prev, grade_prev, ap_prev, wap_prev, weights):
    """E[AP numerator / hits@k] and E[WAP numerator / hits@k], k cutting a tie after j ranks.

    Conditions on X = relevant items among the tie's first j ranks (hypergeometric, docs/ties.md section 5).

    Parameters
    ----------
    t : int64
        Items before the tie.
    j : int64
        Ranks of the tie inside the cutoff.
    n : int64
        Items in the tie.
    r : int64
        Relevant items in the tie.
    mean_grade : float64
        Mean grade of the tie's relevant items.
    hits_prev : int64
        Relevant items before the tie.
    grade_prev : float64
        Grade sum before the tie.
    ap_prev : float64
        E[AP numerator] before the tie.
    wap_prev : float64
        E[WAP numerator] before the tie.
    weights : (>= min(r, n) + 1,) float64
        Scratch for the hypergeometric weights.

    Returns
    -------
    ap, wap : float64
        The two expectations.
    """
    if r == 0:
        if hits_prev == 0:
            return 0.0, 0.0
        return ap_prev / hits_prev, wap_prev / hits_prev
    dh = harmonic_diff(t, j)
    lh = shifted_harmonic(t, j, dh)
    lo, hi, total, x_min = hypergeometric_weights(n, r, j, weights)
    ap = 0.0
    wap = 0.0
    for x in range(lo, hi + 1):
        hits = hits_prev + x
        if hits == 0:
            continue
        w = weights[x - x_min] / total
        ap_num = ap_prev + precision_kernel(float(j), float(x), float(x), float(hits_prev), dh, lh)
        wap_num = wap_prev + precision_kernel(float(j), float(x), x * mean_grade, grade_prev, dh, lh)
        ap += w * ap_num / hits
        wap += w * wap_num / hits
    return ap, wap


@jit(inline="always")
def _bpref_tie(r, c, u, total_relevant, judged_nonrel):
    """E[bpref's sum over the r relevant items of a tie], c judged non-relevant items before the
    tie and u inside it: before a given relevant item lie c + X of them, X uniform on 0..u (its
    place among the tie's judged non-relevant items is uniform), each adding 1 - min(c + X, R) / D,
    D = min(N_nr, R); nothing counts against it when D = 0 (no judged non-relevant item)."""
    if r == 0:
        return 0.0
    d = min(judged_nonrel, total_relevant)
    if d == 0:
        return float(r)
    # S = sum_{x=0..u} min(c + x, R), in closed form
    last = c + u
    if last <= total_relevant:
        s = (u + 1.0) * (c + last) / 2.0
    elif c >= total_relevant:
        s = (u + 1.0) * total_relevant
    else:
        s = (total_relevant - c + 1.0) * (c + total_relevant) / 2.0 + (last - total_relevant) * float(total_relevant)
    return r * (1.0 - s / ((u + 1.0) * d))


@jit(inline="always")
def _iprec_start(total_relevant, optional, scalars):
    """Read the recall levels from ``scalars[IPREC:]`` (ascending), zero their interpolated
    precisions there, and return the relevant item each level starts at: lround(level * R) as
    trec_eval 10.0 rounds it, or with IPREC_TREC_EVAL_9 in ``optional`` (long) (level * R + 0.9)
    as trec_eval 9 (pytrec_eval): with R = 2 level 0.6 starts at the 1st relevant item in 10.0
    and at the 2nd in 9. In float64, as trec_eval computes level * R (a C double). (long) (x + 0.5)
    is lround(x) for x >= 0 but just below 0.5 (0.49999999999999994 + 0.5 rounds to 1), where
    the start 1 instead of 0 changes nothing: every relevant item is at or after both."""
    offset = 0.9 if optional & IPREC_TREC_EVAL_9 else 0.5
    first = np.empty(scalars.shape[0] - IPREC, dtype=np.int64)
    for level in range(first.shape[0]):
        first[level] = np.int64(scalars[IPREC + level] * total_relevant + offset)
        scalars[IPREC + level] = 0.0
    return first


@jit(inline="always")
def _iprec_add(hits, rank, first, scalars):
    """The hits-th relevant item sits at ``rank``: its precision raises every recall level
    that starts at or before it (interpolated precision: the best precision from there on;
    the levels ascend, so their starts do too)."""
    precision = hits / rank
    level = 0
    while level < first.shape[0] and first[level] <= hits:
        if scalars[IPREC + level] < precision:
            scalars[IPREC + level] = precision
        level += 1


@jit
def _rbp_weight(log_p, t, j):
    """(1-p) sum_{i=t+1..t+j} p^(i-1) = p^t (1 - p^j), the RBP weight of ranks t+1..t+j."""
    if j <= 0:
        return 0.0
    return math.exp(t * log_p) * -math.expm1(j * log_p)


@jit(inline="always")
def _rbp_add(r, g, unjudged, n, log_p, t, j, first, sums):
    """Add ranks t+1..t+j of a tie (n items, r relevant, gain sum g, unjudged count) to the
    RBP sums (gain, relevant, unjudged) of columns first..: each rank holds the tie's mean."""
    if j <= 0 or (r == 0 and g == 0.0 and unjudged == 0):
        return
    for col in range(first, sums.shape[1]):
        w = _rbp_weight(log_p[col], t, j) / n
        sums[0, col] += g * w
        sums[1, col] += r * w
        sums[2, col] += unjudged * w


@jit(inline="always")
def _ideal_dcg(ideal_gain, ideal_count, cutoffs, discount, out):
    """out[IDCG, :] = ideal DCG at each cutoff. The ideal list holds every positive gain, also
    of relevant items outside the ranking, so it is cut at k, not at the ranked list's length.
    Ranks past the discount table's end add nothing (see :func:`finalize_ties`)."""
    n_cut = cutoffs.shape[0]
    end = discount.shape[0] - 1
    kp = 0
    start = 0
    idcg = 0.0
    for run in range(ideal_gain.shape[0]):
        stop = start + ideal_count[run]
        while kp < n_cut and cutoffs[kp] <= stop:
            k = cutoffs[kp]
            out[IDCG, kp] = idcg + ideal_gain[run] * (discount[min(k, end)] - discount[min(start, end)])
            kp += 1
        if kp == n_cut:
            break
        idcg += ideal_gain[run] * (discount[min(stop, end)] - discount[min(start, end)])
        start = stop
    while kp < n_cut:
        out[IDCG, kp] = idcg
        kp += 1


def _finalize_ties_kernel(optional_sums, ratios):
    """:func:`finalize_ties`, ``finalize_ties_ratios`` (``ratios``) and ``finalize_ties_optional``
    (both flags): one source, three kernels (:func:`._jit.jit_variants`). Only the last computes
    the optional sums (bpref, interpolated precision, RBP), the last two the ratios AP_RET /
    WAP_RET (``need_ratio``: hypergeometric sums, which AP@k of a Hamming ranking needs by
    default); the others write them 0, as they do those not asked."""

    def finalize_ties(
        tie_n, tie_r, tie_u, tie_s, tie_g, unranked_relevant, judged_nonrel, ideal_gain, ideal_count, cutoffs,
        log_p, discount, need_ratio, optional, out, scalars,
    ):
        """Walk one query's ties once and fill every base quantity at every cutoff.

        Parameters
        ----------
        tie_n, tie_r : int64 arrays (m,)    items and relevant items per tie, in rank order
        tie_u : int64 array (m,)            judged non-relevant items per tie (bpref; unjudged items
                                            are neither relevant nor judged non-relevant)
        tie_s, tie_g : float64 arrays (m,)  grade sum and gain sum per tie
        unranked_relevant : int             relevant items outside the ranking (judged, not retrieved):
                                            they count in R (and the caller puts them in the ideal runs)
        judged_nonrel : int                 judged non-relevant items of the query, ranked or not (bpref)
        ideal_gain, ideal_count : (float64, int64) arrays   runs of the ideal order, gain descending
        cutoffs : int64 array (K,)          sorted ascending, >= 1 (values past N mean N)
        log_p : float64 array (K,)          log of RBP's persistence p of each cutoff column
        discount : float64 array (D + 1,)   discount[i] = sum_{l<=i} 1/log2(1+l); DCG and IDCG count
                                            ranks up to D only, exact at cutoffs <= D (callers size it
                                            for the DCG metrics asked: read per relevant item of a fixed
                                            order, a whole-list table is a memory stream)
        need_ratio : bool                   compute AP_RET / WAP_RET (hypergeometric sums; in
                                            finalize_ties_ratios and _optional only, else 0)
        optional : int                      bit mask: OPTIONAL_IPREC, the interpolated precisions
                                            (homogeneous ties only: a fixed order; the caller refuses
                                            the average), their levels rounded as trec_eval 9 with
                                            IPREC_TREC_EVAL_9; OPTIONAL_BPREF, bpref's sum (else 0);
                                            OPTIONAL_RBP, RBP and its residual (else 0);
                                            OPTIONAL_WAP, WAP's numerator and ratio (read by
                                            :func:`ranked_optional_sums` only, else 0: a division per
                                            relevant item; a tie walk always computes them)
        out : float64 array (N_QUANTITIES, K), written
        scalars : float64 array (N_SCALARS + levels,), written; the recall levels read from
                                            scalars[IPREC:] (ascending) with OPTIONAL_IPREC
        """
        m = tie_n.shape[0]
        n_cut = cutoffs.shape[0]
        end = discount.shape[0] - 1
        total_items = 0
        total_relevant = 0
        for c in range(m):
            total_items += tie_n[c]
            total_relevant += tie_r[c]
        # past the end of the list every ranked relevant item is a hit (AP at R: set after the walk)
        scalars[HITS_AT_R] = total_relevant
        scalars[AP_AT_R] = 0.0
        total_relevant += unranked_relevant
        scalars[TOTAL_RELEVANT] = total_relevant
        bpref = 0.0
        if optional_sums and optional & OPTIONAL_BPREF:
            nonrel_before = np.int64(0)  # judged non-relevant items before the current tie
            for c in range(m):
                bpref += _bpref_tie(tie_r[c], nonrel_before, tie_u[c], total_relevant, judged_nonrel)
                nonrel_before += tie_u[c]
        scalars[BPREF_SUM] = bpref
        if optional_sums and optional & OPTIONAL_IPREC:
            first = _iprec_start(total_relevant, optional, scalars)
            hits = np.int64(0)
            rank = np.int64(0)
            for c in range(m):
                for i in range(tie_r[c]):  # a relevant tie holds relevant items only
                    _iprec_add(hits + i + 1, rank + i + 1, first, scalars)
                hits += tie_r[c]
                rank += tie_n[c]
        weights = np.empty(1, dtype=np.float64)
        if ratios and need_ratio:
            widest = 1
            for c in range(m):
                widest = max(widest, min(tie_r[c], tie_n[c]) + 1)
            weights = np.empty(widest, dtype=np.float64)

        _ideal_dcg(ideal_gain, ideal_count, cutoffs, discount, out)
        with_rbp = (optional & OPTIONAL_RBP) != 0
        rbp_sums = filled_rows(np.empty((3, n_cut if with_rbp else 0), dtype=np.float64), 0.0)  # gain, relevant, unjudged per column
        rbp_scale = 1.0 / max(1.0, ideal_gain[0]) if ideal_gain.shape[0] > 0 else 1.0

        # typed starts: a literal 0 would make numba compile every callee twice
        t = np.int64(0)  # items before the current tie
        hits_prev = np.int64(0)  # relevant items before the current tie
        judged_prev = np.int64(0)  # judged items before the current tie
        grade_prev = 0.0  # grade sum before the current tie
        ap_prev = 0.0  # E[AP numerator] over the ties before
        wap_prev = 0.0
        dcg_prev = 0.0
        rr_full = 0.0  # E[RR] once the first relevant tie is passed
        seen_relevant = False
        kp = 0
        for c in range(m):
            n = tie_n[c]
            r = tie_r[c]
            s = tie_s[c]
            g = tie_g[c]
            stop = t + n
            if total_relevant > 0 and t < total_relevant <= stop:
                scalars[HITS_AT_R] = hits_prev + (total_relevant - t) * r / n
                # MAP@R: the AP numerator at the cutoff R, which cuts this tie after R - t ranks
                scalars[AP_AT_R] = ap_prev
                if r > 0:
                    dh = harmonic_diff(t, total_relevant - t)
                    lh = shifted_harmonic(t, total_relevant - t, dh)
                    scalars[AP_AT_R] += precision_kernel(float(n), float(r), float(r), float(hits_prev), dh, lh)
            mean_grade = s / r if r > 0 else 0.0
            while kp < n_cut and min(cutoffs[kp], total_items) <= stop:
                j = min(cutoffs[kp], total_items) - t
                out[HITS, kp] = hits_prev + j * r / n
                out[GSUM, kp] = grade_prev + j * s / n
                out[DCG, kp] = dcg_prev + g / n * (discount[min(t + j, end)] - discount[min(t, end)])
                if r > 0:
                    dh = harmonic_diff(t, j)
                    lh = shifted_harmonic(t, j, dh)
                    out[AP_NUM, kp] = ap_prev + precision_kernel(float(n), float(r), float(r), float(hits_prev), dh,
                                                                  lh)
                    out[WAP_NUM, kp] = wap_prev + precision_kernel(float(n), float(r), s, grade_prev, dh, lh)
                else:  # a tie without relevant items adds nothing
                    out[AP_NUM, kp] = ap_prev
                    out[WAP_NUM, kp] = wap_prev
                if seen_relevant:
                    out[RR, kp] = rr_full
                elif r > 0:
                    out[RR, kp] = first_relevant_rr(t, n, r, j)
                else:
                    out[RR, kp] = 0.0
                out[MISS, kp] = 0.0 if hits_prev > 0 else _no_relevant_in_first(n, r, j)
                out[JUDGED, kp] = judged_prev + j * (r + tie_u[c]) / n
                if optional_sums and with_rbp:
                    w = _rbp_weight(log_p[kp], t, j) / n
                    out[RBP, kp] = (rbp_sums[0, kp] + g * w) * rbp_scale
                    out[RBP_REL, kp] = rbp_sums[1, kp] + r * w
                    out[RESIDUAL, kp] = rbp_sums[2, kp] + (n - r - tie_u[c]) * w + math.exp((t + j) * log_p[kp])
                else:
                    out[RBP, kp] = 0.0
                    out[RBP_REL, kp] = 0.0
                    out[RESIDUAL, kp] = 0.0
                if ratios and need_ratio:
                    ap_ret, wap_ret = _ratio_expectations(
                        t, j, n, r, mean_grade, hits_prev, grade_prev, ap_prev, wap_prev, weights
                    )
                    out[AP_RET, kp] = ap_ret
                    out[WAP_RET, kp] = wap_ret
                else:
                    out[AP_RET, kp] = 0.0
                    out[WAP_RET, kp] = 0.0
                kp += 1
            if kp == n_cut:
                if stop >= total_relevant:
                    break
                # only R-precision and MAP@R still need the walk: skip the other sums (and the
                # discount table)
                if r > 0:
                    dh = harmonic_diff(t, n)
                    ap_prev += precision_kernel(float(n), float(r), float(r), float(hits_prev), dh,
                                                 shifted_harmonic(t, n, dh))
                hits_prev += r
                t = stop
                continue
            # the whole tie joins the prefix; ties without relevant items or gains add nothing (in a
            # fixed order most ties are such gaps between relevant items: no harmonic sums for them)
            if r > 0:
                dh = harmonic_diff(t, n)
                lh = shifted_harmonic(t, n, dh)
                ap_prev += precision_kernel(float(n), float(r), float(r), float(hits_prev), dh, lh)
                wap_prev += precision_kernel(float(n), float(r), s, grade_prev, dh, lh)
            if g != 0.0 and t < end:
                dcg_prev += g / n * (discount[min(stop, end)] - discount[t])
            if optional_sums and with_rbp:
                _rbp_add(r, g, n - r - tie_u[c], n, log_p, t, n, kp, rbp_sums)
            if r > 0 and not seen_relevant:
                rr_full = first_relevant_rr(t, n, r, n)
                seen_relevant = True
            hits_prev += r
            judged_prev += r + tie_u[c]
            grade_prev += s
            t = stop
        if total_relevant > total_items:  # R past the end of the list: MAP@R reads the whole list
            scalars[AP_AT_R] = ap_prev

    return finalize_ties


finalize_ties, finalize_ties_ratios, finalize_ties_optional = jit_variants(_finalize_ties_kernel, WITH_RATIOS)

# the walks over histograms (hamming_ties) and over ranked lists (score_ties) call the finalizers
# through their addresses (:mod:`.address`): their argument types, arrays C-contiguous, the plan's
# tables read-only (the Hamming stable finish's linked calls pass the same types: one compile serves all)
_INTS, _FLOATS, _FLAGS = types.int64[::1], types.float64[::1], types.bool_[::1]
_TABLE_INTS, _TABLE_FLOATS = (types.Array(dtype, 1, "C", readonly=True) for dtype in (types.int64, types.float64))
FINALIZE_TIES_ARGS = (_INTS, _INTS, _INTS, _FLOATS, _FLOATS, types.int64, types.int64, _FLOATS, _INTS, _TABLE_INTS,
                      _TABLE_FLOATS, _TABLE_FLOATS, types.boolean, types.int64, types.float64[:, ::1], _FLOATS)
declare(finalize_ties, FINALIZE_TIES_ARGS)
declare(finalize_ties_ratios, FINALIZE_TIES_ARGS)
declare(finalize_ties_optional, FINALIZE_TIES_ARGS)
call_finalize_ties = caller_of(FINALIZE_TIES_ARGS, "finalize_ties")


@jit(inline="always")
def _count_true(flags):
    """How many of the bools are True. Added as bools: LLVM vectorizes the loop (0.094 ns per
    item, against 0.080 summed as a uint8 view, Intel Xeon), and a view compiles numba's
    implementation of its own, 0.09 s of every cold door that finalizes a fixed order."""
    count = np.int64(0)
    for p in range(flags.shape[0]):
        count += flags[p]
    return count


_TAIL_BLOCK = 256  # AP terms computed at once by the tail of finalize_ranked


@jit(inline="always")
def _tail_start(ranks, ranked_relevant, n_items, cutoffs, discount_size):
    """Where :func:`finalize_ranked`'s relevant tail begins (len(ranks) for none): the first
    listed item past every cutoff short of the list and past the discount table, when every
    listed item is relevant, the list is walked to its end (a whole-list cutoff) and one
    relevant item came before (RR is set)."""
    n_graded = ranks.shape[0]
    n_cut = cutoffs.shape[0]
    if ranked_relevant < n_graded or n_cut == 0 or cutoffs[n_cut - 1] < n_items:
        return n_graded
    limit = discount_size - 1
    for kp in range(n_cut):
        if cutoffs[kp] < n_items:
            limit = max(limit, cutoffs[kp])
    lo = 1
    hi = n_graded
    while lo < hi:  # the first p >= 1 with ranks[p] > limit (ranks ascend)
        mid = (lo + hi) // 2
        if ranks[mid] > limit:
            hi = mid
        else:
            lo = mid + 1
    return lo


@jit(inline="always")
def _count_up_to(ranks, value):
    """How many of the ascending ``ranks`` are <= ``value`` (np.searchsorted(side="right"), which
    compiles an implementation of its own for a third of a second on a cold first call)."""
    lo = 0
    hi = ranks.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if ranks[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit(inline="always")
def _relevant_tail(ranks, grades, judged, start, hits, ap, grade_sum, judged_count, hits_at_r, ap_at_r,
                   total_relevant):
    """The main walk of :func:`finalize_ranked` over listed items start.. (all relevant, no cutoff
    and no discount among them): the same sums, in the same order.

    Parameters
    ----------
    ranks : (m,) int64
        1-based ranks of the listed items, ascending.
    grades : (m,) float64
        Their grades.
    judged : (m,) bool
        Which of them are judged.
    start : int
        First listed item of the tail.
    hits : int64
        Relevant items before ``start``.
    ap : float64
        AP numerator so far.
    grade_sum : float64
        Grade sum so far.
    judged_count : int64
        Listed judged items so far.
    hits_at_r : int64
        Relevant items so far ranked within R.
    ap_at_r : float64
        AP numerator at the cutoff R so far.
    total_relevant : int64
        R, the query's relevant items.

    Returns
    -------
    hits, ap, grade_sum, judged_count, hits_at_r, ap_at_r
        The sums after the last listed item.
    """
    terms = np.empty(_TAIL_BLOCK, dtype=np.float64)
    n_graded = ranks.shape[0]
    # R-precision and MAP@R count the items ranked within R: ranks ascend, so up to the first past R
    within_r = _count_up_to(ranks, total_relevant)
    for lo in range(start, n_graded, _TAIL_BLOCK):
        n = min(_TAIL_BLOCK, n_graded - lo)
        for t in range(n):  # independent divisions: vectorized
            terms[t] = (hits + 1 + t) / ranks[lo + t]
        # the chains of additions side by side, MAP@R's in the same loop up to R (a walk of its own
        # added its latency: 2.29 -> 1.86 ns per item, 60 % of them within R); every item before is
        # relevant, so hits@R is hits there
        n_r = max(0, min(n, within_r - lo))
        for t in range(n_r):
            ap += terms[t]
            grade_sum += grades[lo + t]
            ap_at_r += terms[t]
        for t in range(n_r, n):
            ap += terms[t]
            grade_sum += grades[lo + t]
        hits += n
    judged_count += _count_true(judged[start:])
    hits_at_r += max(0, within_r - start)
    return hits, ap, grade_sum, judged_count, hits_at_r, ap_at_r


@jit(error_model="numpy")  # a division that cannot raise vectorizes (the tail)
def finalize_ranked(
    ranks, grades, gains, relevant, judged, n_items, unlisted_judged, unranked_relevant, judged_nonrel, ideal_gain,
    ideal_count, cutoffs, log_p, discount, optional, out, scalars,
):
    """Every base quantity at every cutoff of one fixed order (no ties), from its listed items.

    The same quantities as :func:`finalize_ties` on a sequence of one-item ties, without
    walking the items left out of the list (grade and gain 0, not relevant): a fixed order
    (ties="stable", "trec") costs O(listed items) here, not O(list length).

    Parameters
    ----------
    ranks : int64 array (m,)      1-based ranks of the listed items, ascending: every item with a
                                  grade, gain or relevance, and (ranked lists) every judged item
    grades, gains : float64 (m,)  their grades and gains
    relevant : bool array (m,)    which of them are relevant (grade >= the relevance level)
    judged : bool array (m,)      which of them are judged (bpref, Judged@k, RBP's residual)
    n_items : int                 length of the ranked list N
    unlisted_judged : bool        whether the items left out are judged non-relevant (a Hamming
                                  database: every item is judged) or unjudged (a ranked list)
    unranked_relevant : int       relevant items outside the ranking (they count in R)
    judged_nonrel : int           judged non-relevant items of the query, ranked or not (bpref)
    ideal_gain : float64 array (n_runs,)   gains of the ideal order's runs, descending (as in :func:`finalize_ties`)
    ideal_count : int64 array (n_runs,)    items of each run
    cutoffs : int64 array (K,)    sorted ascending, >= 1 (values past N mean N)
    log_p : float64 array (K,)    log of RBP's persistence p of each cutoff column
    discount : float64 array (D + 1,)     cumulative DCG discount (see :func:`finalize_ties`)
    optional : int                bit mask of the optional sums; they are written 0 here
                                  (:func:`ranked_optional_sums` computes them)
    out : float64 array (N_QUANTITIES, K), written
    scalars : float64 array (N_SCALARS + levels,), written but for the recall levels in
                                  scalars[IPREC:], which stay for :func:`ranked_optional_sums`
    """
    n_graded = ranks.shape[0]
    n_cut = cutoffs.shape[0]
    ranked_relevant = _count_true(relevant)
    total_relevant = ranked_relevant + unranked_relevant
    scalars[TOTAL_RELEVANT] = total_relevant
    _ideal_dcg(ideal_gain, ideal_count, cutoffs, discount, out)
    hits = np.int64(0)
    grade_sum = 0.0
    dcg = 0.0
    ap = 0.0
    rr = 0.0
    hits_at_r = np.int64(0)
    ap_at_r = 0.0  # the AP numerator at the cutoff R (MAP@R): hits_at_r is the hits at each rank within R
    # past the deepest cutoff short of the whole list and the discount table, with every listed
    # item relevant (the Hamming stable pass), AP's divisions are independent: the tail computes
    # them a block at a time (vectorized) and adds them in rank order, the same sums
    tail = _tail_start(ranks, ranked_relevant, n_items, cutoffs, discount.shape[0])
    kp = 0
    judged_count = np.int64(0)  # listed judged items so far
    p = 0
    while True:
        rank = ranks[p] if p < n_graded else n_items + 1  # a sentinel past the end flushes the cutoffs
        # cutoffs before this item see the sums so far
        while kp < n_cut and min(cutoffs[kp], n_items) < rank:
            out[HITS, kp] = hits
            out[GSUM, kp] = grade_sum
            out[DCG, kp] = dcg
            out[AP_NUM, kp] = ap
            out[AP_RET, kp] = ap / hits if hits > 0 else 0.0
            out[RR, kp] = rr
            out[MISS, kp] = 1.0 if hits == 0 else 0.0
            depth = min(cutoffs[kp], n_items)
            out[JUDGED, kp] = judged_count + (depth - p if unlisted_judged else 0)
            kp += 1
        if p == n_graded:
            break
        if p == tail:  # the rest at once, then the sentinel
            hits, ap, grade_sum, judged_count, hits_at_r, ap_at_r = _relevant_tail(
                ranks, grades, judged, tail, hits, ap, grade_sum, judged_count, hits_at_r, ap_at_r, total_relevant)
            p = n_graded
            continue
        item = p
        p += 1
        if rank <= total_relevant and relevant[item]:
            hits_at_r += 1
            ap_at_r += hits_at_r / rank
        if kp == n_cut:  # only R-precision and MAP@R still need the walk
            if rank > total_relevant:
                break
            continue
        grade_sum += grades[item]
        if rank < discount.shape[0]:
            dcg += gains[item] * (discount[rank] - discount[rank - 1])
        judged_count += judged[item]
        if relevant[item]:
            hits += 1
            ap += hits / rank
            if hits == 1:
                rr = 1.0 / rank
    scalars[HITS_AT_R] = hits_at_r
    scalars[AP_AT_R] = ap_at_r
    # the optional sums: see ranked_optional_sums (the recall levels in scalars[IPREC:] stay for it)
    scalars[BPREF_SUM] = 0.0
    for kp in range(n_cut):
        for quantity in (WAP_NUM, WAP_RET, RBP, RBP_REL, RESIDUAL):
            out[quantity, kp] = 0.0


@jit
def ranked_optional_sums(ranks, grades, gains, relevant, judged, n_items, unlisted_judged, judged_nonrel, ideal_gain,
                         cutoffs, log_p, optional, out, scalars):
    """The optional sums (bpref, interpolated precision, WAP, RBP: ``optional``) of the fixed
    order that :func:`finalize_ranked` has just finalized, the same arguments, each in a walk of
    its own over the listed items.

    Not a part of finalize_ranked: in its main loop their branches cost even when never taken
    (LLVM speculates WAP's division; RBP's stores keep the sums out of registers: 3.9 -> 1.4 ns
    per listed item), and every kernel that links their code compiles it again (1.35 s of the
    cold first call of evaluate with ties="stable"). The drivers come in two kernels from one
    source (:func:`._jit.jit_pair`); only the ``..._optional`` one calls this.

    Parameters
    ----------
    ranks : (m,) int64
        1-based ranks of the listed items, ascending.
    grades : (m,) float64
        Their grades.
    gains : (m,) float64
        Their gains.
    relevant : (m,) bool
        Which of them are relevant.
    judged : (m,) bool
        Which of them are judged.
    n_items : int
        Length of the ranked list N.
    unlisted_judged : bool
        Whether the items left out are judged non-relevant (Hamming) or unjudged (ranked lists).
    judged_nonrel : int
        Judged non-relevant items of the query, ranked or not (bpref).
    ideal_gain : (n_runs,) float64
        Gains of the ideal order's runs, descending (RBP's scale).
    cutoffs : (K,) int64
        Cutoffs, ascending.
    log_p : (K,) float64
        log of RBP's persistence per cutoff column.
    optional : int
        Bit mask: OPTIONAL_BPREF, OPTIONAL_IPREC (IPREC_TREC_EVAL_9: trec_eval 9's levels),
        OPTIONAL_WAP, OPTIONAL_RBP.
    out : (N_QUANTITIES, K) float64
        Written: rows WAP_NUM, WAP_RET, RBP, RBP_REL, RESIDUAL of the sums asked.
    scalars : (N_SCALARS + levels,) float64
        Read: TOTAL_RELEVANT and the recall levels (IPREC.., ascending); written: BPREF_SUM, and
        the interpolated precisions over the levels, when asked.
    """
    if optional & (OPTIONAL_BPREF | OPTIONAL_IPREC):
        _bpref_iprec_walk(ranks, relevant, judged, unlisted_judged, judged_nonrel, optional, scalars)
    if optional & OPTIONAL_WAP:
        _wap_walk(ranks, grades, relevant, n_items, cutoffs, out)
    if optional & OPTIONAL_RBP:
        _rbp_walk(ranks, gains, relevant, judged, n_items, unlisted_judged, ideal_gain, cutoffs, log_p, out)


FINALIZE_RANKED_ARGS = (_INTS, _FLOATS, _FLOATS, _FLAGS, _FLAGS, types.int64, types.boolean, types.int64, types.int64,
                        _FLOATS, _INTS, _TABLE_INTS, _TABLE_FLOATS, _TABLE_FLOATS, types.int64, types.float64[:, ::1],
                        _FLOATS)
RANKED_OPTIONAL_SUMS_ARGS = (_INTS, _FLOATS, _FLOATS, _FLAGS, _FLAGS, types.int64, types.boolean, types.int64, _FLOATS,
                             _TABLE_INTS, _TABLE_FLOATS, types.int64, types.float64[:, ::1], _FLOATS)
declare(finalize_ranked, FINALIZE_RANKED_ARGS)
declare(ranked_optional_sums, RANKED_OPTIONAL_SUMS_ARGS)
call_finalize_ranked = caller_of(FINALIZE_RANKED_ARGS, "finalize_ranked")
call_ranked_optional_sums = caller_of(RANKED_OPTIONAL_SUMS_ARGS, "ranked_optional_sums")

@jit(inline="always")
def _bpref_iprec_walk(ranks, relevant, judged, unlisted_judged, judged_nonrel, optional, scalars):
    """scalars[BPREF_SUM] and the interpolated precisions of :func:`ranked_optional_sums`."""
    total_relevant = np.int64(scalars[TOTAL_RELEVANT])
    bpref = 0.0
    relevant_before = np.int64(0)
    judged_before = np.int64(0)  # listed judged items before the current one
    first = _iprec_start(total_relevant, optional, scalars)
    for p in range(ranks.shape[0]):
        if relevant[p]:
            if optional & OPTIONAL_BPREF:
                nonrel_before = judged_before - relevant_before  # a relevant item is judged
                if unlisted_judged:
                    nonrel_before += ranks[p] - 1 - p
                bpref += _bpref_tie(np.int64(1), nonrel_before, np.int64(0), total_relevant, judged_nonrel)
            relevant_before += 1
            if optional & OPTIONAL_IPREC:
                _iprec_add(relevant_before, ranks[p], first, scalars)
        judged_before += judged[p]
    scalars[BPREF_SUM] = bpref


@jit(inline="always")
def _wap_walk(ranks, grades, relevant, n_items, cutoffs, out):
    """out[WAP_NUM / WAP_RET, :] of :func:`ranked_optional_sums`."""
    n_cut = cutoffs.shape[0]
    n_graded = ranks.shape[0]
    kp = 0
    hits = np.int64(0)
    grade_sum = 0.0
    wap = 0.0
    for p in range(n_graded + 1):
        rank = ranks[p] if p < n_graded else n_items + 1
        while kp < n_cut and min(cutoffs[kp], n_items) < rank:
            out[WAP_NUM, kp] = wap
            out[WAP_RET, kp] = wap / hits if hits > 0 else 0.0
            kp += 1
        if p == n_graded or kp == n_cut:
            break
        grade_sum += grades[p]
        if relevant[p]:
            hits += 1
            wap += grade_sum / rank


@jit(inline="always")
def _rbp_walk(ranks, gains, relevant, judged, n_items, unlisted_judged, ideal_gain, cutoffs, log_p, out):
    """out[RBP / RBP_REL / RESIDUAL, :] of :func:`ranked_optional_sums`.

    Parameters
    ----------
    ranks : (m,) int64
        1-based ranks of the listed items, ascending.
    gains : (m,) float64
        Their gains.
    relevant : (m,) bool
        Which of them are relevant.
    judged : (m,) bool
        Which of them are judged.
    n_items : int
        Length of the ranked list N.
    unlisted_judged : bool
        Whether the items left out are judged (else unjudged: they add to the residual).
    ideal_gain : (n_runs,) float64
        Gains of the ideal order's runs, descending (the scale: largest gain).
    cutoffs : (K,) int64
        Cutoffs, ascending.
    log_p : (K,) float64
        log of RBP's persistence per cutoff column.
    out : (N_QUANTITIES, K) float64
        Written: rows RBP, RBP_REL, RESIDUAL.
    """
    n_cut = cutoffs.shape[0]
    n_graded = ranks.shape[0]
    rbp_sums = filled_rows(np.empty((3, n_cut), dtype=np.float64), 0.0)  # gain, relevant, unjudged per column
    rbp_scale = 1.0 / max(1.0, ideal_gain[0]) if ideal_gain.shape[0] > 0 else 1.0
    kp = 0
    previous = np.int64(0)  # rank of the item before (0: none)
    one = np.int64(1)
    for p in range(n_graded + 1):
        rank = ranks[p] if p < n_graded else n_items + 1
        while kp < n_cut and min(cutoffs[kp], n_items) < rank:
            depth = min(cutoffs[kp], n_items)
            out[RBP, kp] = rbp_sums[0, kp] * rbp_scale
            out[RBP_REL, kp] = rbp_sums[1, kp]
            unjudged = rbp_sums[2, kp]
            if not unlisted_judged:  # the unlisted items after the last listed one, down to the cutoff
                unjudged += _rbp_weight(log_p[kp], previous, depth - previous)
            out[RESIDUAL, kp] = unjudged + math.exp(depth * log_p[kp])
            kp += 1
        if p == n_graded or kp == n_cut:
            break
        if not unlisted_judged:  # the unlisted (unjudged) items between the item before and this one
            _rbp_add(np.int64(0), 0.0, one, one, log_p, previous, rank - 1 - previous, kp, rbp_sums)
        _rbp_add(np.int64(relevant[p]), gains[p], np.int64(not judged[p]), one, log_p, rank - 1, one, kp, rbp_sums)
        previous = rank


# AP within a Hamming radius: a radius cuts only between distances, so the ranks within it are
# whole ties and the relevant items there (the hits) are the same in every order inside ties;
# only the sum of precisions at the relevant ranks varies, and these sums are per distance
@jit
def radius_ap_sums(hist, tie, out, lo, hi):
    """out[i, d] = E[sum over the relevant items at distance <= d of hits / rank] for queries lo..hi-1.

    ``hist`` (n, n_dist, n_grades) int64 counts items by (distance, grade), grade > 0 relevant;
    ``tie`` the tie mode (modes.AVERAGE, OPTIMISTIC or PESSIMISTIC; a fixed order takes
    :func:`radius_ap_sums_ranked`). Averaged, a distance's n items with r relevant after t items
    and h hits add the tie closed form (docs/ties.md, section 4) taken over all n ranks; optimistic
    puts the r relevant items first, at ranks t+1..t+r, pessimistic last, at t+n-r+1..t+n, adding
    sum_p (h + p) / (start + p) = (h + 1) H + L, H and L the harmonic sums of (start, r).
    """
    n_dist = hist.shape[1]
    n_grades = hist.shape[2]
    for i in range(lo, hi):
        before = np.int64(0)  # items at smaller distances
        hits = np.int64(0)  # relevant items at smaller distances
        total = 0.0
        for d in range(n_dist):
            n = np.int64(0)
            r = np.int64(0)
            for g in range(n_grades):
                n += hist[i, d, g]
                if g > 0:
                    r += hist[i, d, g]
            if r > 0:
                if tie == AVERAGE:
                    dh = harmonic_diff(before, n)
                    lh = shifted_harmonic(before, n, dh)
                    total += precision_kernel(float(n), float(r), float(r), float(hits), dh, lh)
                else:
                    start = before if tie == OPTIMISTIC else before + n - r
                    dh = harmonic_diff(start, r)
                    total += (hits + 1.0) * dh + shifted_harmonic(start, r, dh)
            before += n
            hits += r
            out[i, d] = total


@jit
def radius_ap_sums_ranked(hist, indptr, ranks, grades, out, lo, hi):
    """out[i, d] = sum over the relevant items at distance <= d of hits / rank, one fixed order:
    the relevant items of query i are ``ranks[indptr[i]:indptr[i + 1]]`` (1-based ranks, in any
    order, those of grade 0 passed over), at least all of those at the distances asked; the items
    at distance <= d are the first sum_{e <= d} hist[i, e, :] ranks."""
    n_dist = hist.shape[1]
    for i in range(lo, hi):
        part = ranks[indptr[i] : indptr[i + 1]]
        relevant = part[grades[indptr[i] : indptr[i + 1]] > 0]
        ordered = np.sort(relevant)
        p = 0
        within = np.int64(0)
        total = 0.0
        for d in range(n_dist):
            within += hist[i, d, :].sum()
            while p < ordered.shape[0] and ordered[p] <= within:
                p += 1
                total += p / ordered[p - 1]
            out[i, d] = total
