"""The lowest and highest AP@k and WAP@k over every order inside ties, with the relevant items
retrieved in the top k as denominator (``ap_denominator="retrieved"``): there a relevant item
moved into the top k can lower the value, so no order by grade is the extreme (docs/ties.md,
"The exact extremes").

The cutoff k cuts one tie: c of its n items (z of grade 0, r relevant) lie inside the top k,
after b items of whole ties holding h0 relevant items of grade sum C0. Given m, the relevant
items of that tie inside the top k, the denominator h0 + m is fixed, and an exchange of two
neighbours that moves a higher grade up never lowers the numerator. So with m fixed the
numerator is highest with every tie by grade, higher first, and the m highest grades of the cut
tie at its top; lowest with every tie by grade, lower first (grade 0 first), and the cut tie's
c - m items of grade 0 then its m lowest positive grades, ascending, at ranks b + c - m + 1 ..
b + c. The extremes are the largest and smallest quotient over the feasible m, max(0, c - z) ..
min(r, c).

Relevant items of one grade g at q consecutive ranks t + 1 .. t + q, with h relevant items of
grade sum C above them, add to the AP and WAP numerators

    sum_p (h + p) / (t + p) = (h + 1) dh + lh,    sum_p (C + g p) / (t + p) = (C + g) dh + g lh,

dh = harmonic_diff(t, q), lh = shifted_harmonic(t, q, dh) (no digits cancel), so a candidate m
costs one such sum per grade: O(grades) a candidate, O(c grades) a cutoff.

Serial, nogil, no global state: thread safe.
"""

import numpy as np

from ._jit import jit
from .filled import filled_rows
from .score_ties import rank_order, run_end
from .modes import AVERAGE
from .tie_math import harmonic_diff, shifted_harmonic

AP_ROW, WAP_ROW = 0, 1  # rows of the outputs


@jit
def _run_sums(tie, descending, limit, t, h, grade_sum):
    """(AP, WAP) numerator terms of the first ``limit`` relevant items of ``tie`` (counts by
    grade, grade g > 0 relevant) in grade order (descending or ascending) at ranks t + 1 ..
    t + limit, after h relevant items of grade sum ``grade_sum``."""
    n_grades = tie.shape[0]
    ap = 0.0
    wap = 0.0
    placed = np.int64(0)
    for step in range(n_grades - 1):
        g = n_grades - 1 - step if descending else step + 1
        q = min(tie[g], limit - placed)
        if q <= 0:
            continue
        start = t + placed
        dh = harmonic_diff(start, q)
        lh = shifted_harmonic(start, q, dh)
        ap += (h + placed + 1.0) * dh + lh
        wap += (grade_sum + g) * dh + g * lh
        placed += q
        grade_sum += g * q
        if placed == limit:
            break
    return ap, wap


@jit
def _cut(tie, b, c, h0, c0, ap_hi, ap_lo, wap_hi, wap_lo, out_min, out_max):
    """The extremes of AP@k and WAP@k for k cutting ``tie`` after c of its items.

    Parameters
    ----------
    tie : (n_grades,) int64
        Items of each grade in the cut tie (grade 0 first).
    b : int64
        Items before the tie.
    c : int64
        Items of the tie inside the top k.
    h0 : int64
        Relevant items before the tie.
    c0 : float
        Grade sum before the tie.
    ap_hi, ap_lo : float
        Highest and lowest AP numerator of the ties before.
    wap_hi, wap_lo : float
        Highest and lowest WAP numerator of the ties before.
    out_min : (2,) float64
        Written: lowest AP@k and WAP@k (rows AP_ROW, WAP_ROW).
    out_max : (2,) float64
        Written: highest AP@k and WAP@k.
    """
    n = np.int64(0)
    for g in range(tie.shape[0]):
        n += tie[g]
    z = tie[0]
    r = n - z
    best = np.array([-np.inf, -np.inf])
    worst = np.array([np.inf, np.inf])
    for m in range(max(np.int64(0), c - z), min(r, c) + 1):
        hits = h0 + m
        if hits == 0:
            hi_ap = hi_wap = lo_ap = lo_wap = 0.0
        else:
            top_ap, top_wap = _run_sums(tie, np.bool_(True), m, b, h0, c0)
            low_ap, low_wap = _run_sums(tie, np.bool_(False), m, b + c - m, h0, c0)
            hi_ap, hi_wap = (ap_hi + top_ap) / hits, (wap_hi + top_wap) / hits
            lo_ap, lo_wap = (ap_lo + low_ap) / hits, (wap_lo + low_wap) / hits
        best[AP_ROW] = max(best[AP_ROW], hi_ap)
        best[WAP_ROW] = max(best[WAP_ROW], hi_wap)
        worst[AP_ROW] = min(worst[AP_ROW], lo_ap)
        worst[WAP_ROW] = min(worst[WAP_ROW], lo_wap)
    for row in range(2):
        out_max[row] = best[row]
        out_min[row] = worst[row]


@jit
def _query_extremes(ties, cutoffs, out_min, out_max):
    """out_min / out_max (2, K): AP@k and WAP@k extremes of one query whose ties (rows, in rank
    order) hold counts by grade; ``cutoffs`` ascending."""
    n_ties, n_grades = ties.shape
    total = np.int64(0)
    for t in range(n_ties):
        for g in range(n_grades):
            total += ties[t, g]
    out_min[:, :] = 0.0
    out_max[:, :] = 0.0
    n_cut = cutoffs.shape[0]
    kp = 0
    b = np.int64(0)
    h0 = np.int64(0)
    c0 = 0.0
    ap_hi = ap_lo = wap_hi = wap_lo = 0.0
    for t in range(n_ties):
        tie = ties[t]
        n = np.int64(0)
        grade_sum = 0.0
        for g in range(n_grades):
            n += tie[g]
            grade_sum += g * tie[g]
        if n == 0:
            continue
        while kp < n_cut and min(cutoffs[kp], total) <= b + n:
            _cut(tie, b, min(cutoffs[kp], total) - b, h0, c0, ap_hi, ap_lo, wap_hi, wap_lo, out_min[:, kp],
                 out_max[:, kp])
            kp += 1
        r = n - tie[0]
        top_ap, top_wap = _run_sums(tie, np.bool_(True), r, b, h0, c0)
        low_ap, low_wap = _run_sums(tie, np.bool_(False), r, b + tie[0], h0, c0)
        ap_hi += top_ap
        wap_hi += top_wap
        ap_lo += low_ap
        wap_lo += low_wap
        b += n
        h0 += r
        c0 += grade_sum


@jit
def ratio_extremes_histograms(hist, cutoffs, out_min, out_max, start, stop):
    """AP@k and WAP@k extremes over tie orders of Hamming rankings, queries start..stop-1.

    hist : (n_queries, n_bits + 1, n_grades) int64, counts by distance and grade (grade > 0
    relevant, its value the grade); cutoffs : (K,) int64 ascending; out_min, out_max :
    (n_queries, 2, K) float64, rows AP_ROW and WAP_ROW.
    """
    for i in range(start, stop):
        _query_extremes(hist[i], cutoffs, out_min[i], out_max[i])


@jit
def ratio_extremes_rankings(offsets, scores, relevant, cutoffs, out_min, out_max, start, stop):
    """AP@k extremes over tie orders of scored lists, queries start..stop-1 (row AP_ROW of the
    outputs; WAP_ROW holds the same with every relevant item of grade 1).

    offsets : (n_queries + 1,) int64; scores : float64; relevant : int64 0 / 1 per row;
    cutoffs : (K,) int64 ascending; out_min, out_max : (n_queries, 2, K) float64.
    """
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        order = rank_order(scores[lo:hi], relevant[:0], AVERAGE)
        ties = filled_rows(np.empty((hi - lo, 2), dtype=np.int64), 0)
        n_ties = 0
        first = 0
        while first < hi - lo:
            last = run_end(scores[lo:hi], order, first, AVERAGE)
            for p in range(first, last):
                ties[n_ties, relevant[lo + order[p]]] += 1
            n_ties += 1
            first = last
        _query_extremes(ties[:n_ties], cutoffs, out_min[q], out_max[q])
