"""ERR@k (expected reciprocal rank, Chapelle et al. 2009), exact over the orders inside ties.

ERR@k = sum over ranks r <= k of (1/r) R_r prod_{i<r} (1 - R_i), with gdeval's stop probability
R = (2**g - 1) / 2**4 of grade g (gdeval.pl's fixed maximum judgment 4). Since
R x prod = prod - prod x (1 - R), ERR@k = sum_r (S_{r-1} - S_r) / r with S_r the survival
prod_{i<=r} (1 - R_i); the survival after a whole tie does not depend on its order.

Inside a tie of n items after rank t with P items of positive grade, in groups g of c_g items
with stop probability R_g, position p holds on average
h(p) = sum_s Hyp(s; n - 1, P - 1, p - 1) sum_g (c_g / n) R_g E^{-g}_s, where E^{-g}_s is the mean
of prod (1 - R) over the s-subsets of the tie's positive items without one grade-g item. Both
come from stable recurrences of nonnegative terms (no binomials): E by adding one item at a
time, E^{N+1}_s = ((N + 1 - s) E^N_s + s q E^N_{s-1}) / (N + 1), and the hypergeometric masses by
drawing one more item. docs/ties.md ("ERR") derives it and bounds the two truncations (subsets
with more than s_cut positive items, whose products are below q_max**s_cut, and positions after
the kept mass is spent), each below 1e-18 of the tie's own contribution.

Serial, nogil, no global state: thread safe.
"""

import math

import numpy as np

from ._jit import jit
from .filled import filled
from .modes import AVERAGE, OPTIMISTIC
from .score_ties import rank_order, run_end

MAX_GRADE = 4.0  # gdeval.pl's MAX_JUDGMENT: R = (2**g - 1) / 2**MAX_GRADE
TOLERANCE = 1e-18  # what a truncation may drop, relative to the tie's (or the query's) ERR


@jit
def stop_probability(grade):
    """gdeval's R of a grade: (2**g - 1) / 16."""
    return (2.0 ** grade - 1.0) / 2.0 ** MAX_GRADE


@jit
def _draw(mass, population, marked, drawn, top):
    """One more draw without replacement: mass[i] = P(i marked items among ``drawn``) becomes the
    same among drawn + 1 (population items, ``marked`` of them marked), for i <= top."""
    left = population - drawn
    for i in range(top, -1, -1):
        stay = mass[i] * (population - marked - (drawn - i)) if i <= drawn else 0.0
        move = mass[i - 1] * (marked - (i - 1)) if i > 0 else 0.0
        mass[i] = (stay + move) / left


@jit
def _subset_products(q, count, n_groups, skip, s_max, out, merged, mass):
    """out[s] (s = 0..s_max) = mean of prod (1 - R) = prod q over the s-subsets of the items
    (count[h] items of factor q[h]), one item of group ``skip`` left out (skip < 0: none).

    Groups merge one at a time: an s-subset of N + c items takes i of the c new ones with
    hypergeometric probability, so out'[s] = sum_i Hyp(i; N + c, c, s) q**i out[s - i], the
    masses drawn one item at a time (nonnegative terms, no binomials): O(s_max**2) a group."""
    out[0] = 1.0  # the empty subset
    n_items = 0
    for h in range(n_groups):
        c = count[h] - (1 if h == skip else 0)
        if c == 0:
            continue
        if n_items == 0:
            power = 1.0
            for s in range(min(c, s_max) + 1):
                out[s] = power
                power *= q[h]
            n_items = c
            continue
        total = n_items + c
        mass[0] = 1.0
        for s in range(min(total, s_max) + 1):
            if s > 0:
                _draw(mass, total, c, s - 1, min(s, c))
            value = 0.0
            power = 1.0
            for i in range(min(s, c) + 1):
                if s - i <= n_items:
                    value += mass[i] * power * out[s - i]
                power *= q[h]
            merged[s] = value
        for s in range(min(total, s_max) + 1):
            out[s] = merged[s]
            mass[s] = 0.0
        n_items = total


@jit
def _tie_err(t, n, r, count, n_groups, survival, acc, cutoffs, ci, row):
    """Mean ERR contribution of a tie of n items after rank t (divided by the survival before
    it), over positions 1..min(n, last cutoff - t); writes acc + survival x partial sums at the
    cutoffs strictly inside the tie (cutoffs[ci:] > t).

    Parameters
    ----------
    t : int64
        Items before the tie.
    n : int64
        Items in the tie.
    r : (n_groups,) float64
        Stop probability of each grade group of the tie.
    count : (n_groups,) int64
        Items of each group with a positive stop probability (0 for the others).
    n_groups : int64
        Grade groups in the tie.
    survival : float64
        Probability that the user reaches the tie (product of 1 - R before it).
    acc : float64
        ERR of the ranks before the tie.
    cutoffs : (K,) int64
        Cutoffs, ascending.
    ci : int64
        First cutoff not yet written.
    row : (K,) float64
        The query's ERR per cutoff; the cutoffs passed are written.

    Returns
    -------
    float64
        The tie's mean contribution, before the factor ``survival``.
    """
    n_cut = cutoffs.shape[0]
    j = n if cutoffs[n_cut - 1] - t >= n else cutoffs[n_cut - 1] - t
    n_pos = 0
    r_min = 1.0
    for h in range(n_groups):
        if count[h] > 0:
            n_pos += count[h]
            r_min = min(r_min, r[h])
    if n_pos == 0:
        while ci < n_cut and cutoffs[ci] < t + n:
            row[ci] = acc
            ci += 1
        return 0.0
    if n_pos == n and n_groups == 1:  # one grade throughout: every order is the same
        total = 0.0
        left = 1.0
        for p in range(1, j + 1):
            total += r[0] * left / (t + p)
            left *= 1.0 - r[0]
            while ci < n_cut and cutoffs[ci] == t + p and p < n:
                row[ci] = acc + survival * total
                ci += 1
        return total
    # s_cut: prod (1 - R) over more than s_cut positive items is below this bound
    q_max = 1.0 - r_min
    span = float(t + j)
    bound = TOLERANCE * r_min / (span * (1.0 + math.log(span)))
    s_cut = math.log(bound) / math.log(q_max) if 0.0 < q_max < 1.0 else np.inf
    s_max = min(n_pos - 1, j - 1)
    if s_cut < s_max:
        s_max = max(int(math.ceil(s_cut)), 1)
    q_cut = q_max ** s_max
    q = np.empty(n_groups, dtype=np.float64)
    for h in range(n_groups):
        q[h] = 1.0 - r[h]
    # weight[s]: sum_g (c_g / n) R_g E^{-g}_s
    weight = filled(np.empty(s_max + 1, dtype=np.float64), 0.0)
    products = filled(np.empty(s_max + 1, dtype=np.float64), 0.0)
    merged = filled(np.empty(s_max + 1, dtype=np.float64), 0.0)
    mass = filled(np.empty(s_max + 1, dtype=np.float64), 0.0)
    ceiling = filled(np.empty(s_max + 1, dtype=np.float64), 0.0)  # E^{-g}_s of one group g: the survival bound below
    for g in range(n_groups):
        if count[g] == 0:
            continue
        products[:] = 0.0
        _subset_products(q, count, n_groups, g, s_max, products, merged, mass)
        share = count[g] / n * r[g]
        for s in range(s_max + 1):
            weight[s] += share * products[s]
            ceiling[s] = products[s]
    # mass[s] = Hyp(s; n - 1, P - 1, m): s positive items among m drawn from the other n - 1
    mass[:] = 0.0
    mass[0] = 1.0
    population = n - 1
    marked = n_pos - 1
    total = 0.0
    for p in range(1, j + 1):
        m = p - 1
        if m > 0:  # draw the m-th item
            _draw(mass, population, marked, m - 1, min(m, s_max))
        h_p = 0.0
        left = 0.0
        for s in range(min(m, s_max) + 1):
            h_p += mass[s] * weight[s]
            left += mass[s] * ceiling[s]
        total += h_p / (t + p)
        while ci < n_cut and cutoffs[ci] == t + p and p < n:
            row[ci] = acc + survival * total
            ci += 1
        # the positions after p add at most A(p) / (t + p + 1), A(p) = E[prod (1 - R) over the
        # first p]: those hold the first p - 1 of the tie without one grade-g item, whose mean
        # product is sum_s mass[s] E^{-g}_s (+ q_cut for the subsets past s_max)
        if p < j and (left + q_cut) / (t + p + 1.0) < TOLERANCE * r_min * n_pos / (n * span):
            break
    while ci < n_cut and cutoffs[ci] < t + n:
        row[ci] = acc + survival * total
        ci += 1
    return total


@jit
def _walk_tie(t, n, r, count, n_groups, survival, acc, cutoffs, ci, row):
    """Cutoffs up to rank t take acc; the tie at t adds its share. Returns (acc, survival, ci).

    Parameters
    ----------
    t : int64
        Items before the tie.
    n : int64
        Items in the tie.
    r : (n_groups,) float64
        Stop probability of each grade group of the tie.
    count : (n_groups,) int64
        Items of each group with a positive stop probability (0 for the others).
    n_groups : int64
        Grade groups in the tie.
    survival : float64
        Probability that the user reaches the tie (product of 1 - R before it).
    acc : float64
        ERR of the ranks before the tie.
    cutoffs : (K,) int64
        Cutoffs, ascending.
    ci : int64
        First cutoff not yet written.
    row : (K,) float64
        The query's ERR per cutoff; the cutoffs passed are written.

    Returns
    -------
    acc, survival : float64
        ERR and survival after the tie.
    ci : int64
        First cutoff not yet written.
    """
    n_cut = cutoffs.shape[0]
    while ci < n_cut and cutoffs[ci] <= t:
        row[ci] = acc
        ci += 1
    if ci == n_cut:
        return acc, survival, ci
    total = _tie_err(t, n, r, count, n_groups, survival, acc, cutoffs, ci, row)
    while ci < n_cut and cutoffs[ci] < t + n:
        ci += 1
    acc += survival * total
    for h in range(n_groups):
        survival *= (1.0 - r[h]) ** count[h]
    return acc, survival, ci


@jit(inline="always")
def _err_ranking(scores, grades, keys, mode, cutoffs, row):
    """ERR at every cutoff of one query's ranked list (cutoffs ascending)."""
    n_rows = scores.shape[0]
    n_cut = cutoffs.shape[0]
    order = rank_order(scores, keys, mode)
    acc = 0.0
    survival = 1.0
    ci = np.int64(0)
    t = np.int64(0)
    start = 0
    one_r = filled(np.empty(1, dtype=np.float64), 0.0)
    one_count = filled(np.empty(1, dtype=np.int64), 0)
    while start < n_rows and ci < n_cut:
        if acc > 0.0 and survival / (t + 1.0) < TOLERANCE * acc:
            break  # everything after adds at most survival / (t + 1)
        stop = run_end(scores, order, start, mode)
        if stop - start == 1:
            g = grades[order[start]]
            one_r[0] = stop_probability(g)
            one_count[0] = 1 if one_r[0] > 0.0 else 0
            acc, survival, ci = _walk_tie(t, np.int64(1), one_r, one_count, np.int64(1), survival, acc, cutoffs, ci,
                                          row)
            t += 1
            start = stop
            continue
        run = np.sort(grades[order[start:stop]])
        n_distinct = np.int64(1)  # typed: a literal would compile the tie walk twice
        for i in range(1, run.shape[0]):
            n_distinct += run[i] != run[i - 1]
        value = np.empty(n_distinct, dtype=np.float64)
        count = filled(np.empty(n_distinct, dtype=np.int64), 0)
        at = 0
        for i in range(run.shape[0]):
            if i > 0 and run[i] != run[i - 1]:
                at += 1
            value[at] = run[i]
            count[at] += 1
        if mode == AVERAGE:
            r = np.empty(n_distinct, dtype=np.float64)
            positive = filled(np.empty(n_distinct, dtype=np.int64), 0)
            for h in range(n_distinct):
                r[h] = stop_probability(value[h])
                positive[h] = count[h] if r[h] > 0.0 else 0
            acc, survival, ci = _walk_tie(t, stop - start, r, positive, n_distinct, survival, acc, cutoffs, ci, row)
            t += stop - start
        else:  # optimistic (highest grade first) / pessimistic: one homogeneous tie per grade
            for i in range(n_distinct):
                h = n_distinct - 1 - i if mode == OPTIMISTIC else i
                one_r[0] = stop_probability(value[h])
                one_count[0] = count[h] if one_r[0] > 0.0 else 0
                acc, survival, ci = _walk_tie(t, count[h], one_r, one_count, np.int64(1), survival, acc, cutoffs, ci,
                                              row)
                t += count[h]
        start = stop
    while ci < n_cut:
        row[ci] = acc
        ci += 1


@jit
def err_rankings(offsets, scores, grades, keys, mode, cutoffs, out, start, stop):
    """ERR of queries start..stop-1 of a grouped ranked list at each of ``cutoffs`` (int64,
    ascending; the whole list is the int64 maximum). Rows of query q are offsets[q]:offsets[q+1]
    of scores / grades (float64, grades <= MAX_GRADE) and keys (int64 tie-break for FIXED, or
    empty: row order); mode as in score_ties. out : (n_queries, n_cutoffs) float64."""
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        _err_ranking(scores[lo:hi], grades[lo:hi], keys[lo:hi], mode, cutoffs, out[q])


@jit
def err_histograms(hist, mode, cutoffs, out, start, stop):
    """ERR of queries start..stop-1 of a Hamming ranking at each of ``cutoffs``: the items at
    each distance hist[q, d, g] (grade g = its index) are a tie (AVERAGE) or split by grade,
    highest (OPTIMISTIC) or lowest first. out : (n_queries, n_cutoffs) float64."""
    n_dist = hist.shape[1]
    n_grades = hist.shape[2]
    r = np.empty(n_grades, dtype=np.float64)
    for g in range(n_grades):
        r[g] = stop_probability(float(g))
    count = filled(np.empty(n_grades, dtype=np.int64), 0)
    one_r = filled(np.empty(1, dtype=np.float64), 0.0)
    one_count = filled(np.empty(1, dtype=np.int64), 0)
    n_cut = cutoffs.shape[0]
    for q in range(start, stop):
        row = out[q]
        acc = 0.0
        survival = 1.0
        ci = np.int64(0)
        t = np.int64(0)
        for d in range(n_dist):
            if ci == n_cut or (acc > 0.0 and survival / (t + 1.0) < TOLERANCE * acc):
                break
            n = np.int64(0)
            for g in range(n_grades):
                n += hist[q, d, g]
                count[g] = hist[q, d, g] if g > 0 else 0
            if n == 0:
                continue
            if mode == AVERAGE:
                acc, survival, ci = _walk_tie(t, n, r, count, np.int64(n_grades), survival, acc, cutoffs, ci, row)
                t += n
            else:
                for i in range(n_grades):
                    g = n_grades - 1 - i if mode == OPTIMISTIC else i
                    if hist[q, d, g] == 0:
                        continue
                    one_r[0] = r[g]
                    one_count[0] = count[g]
                    acc, survival, ci = _walk_tie(t, hist[q, d, g], one_r, one_count, np.int64(1), survival, acc,
                                                  cutoffs, ci, row)
                    t += hist[q, d, g]
        while ci < n_cut:
            row[ci] = acc
            ci += 1


@jit(inline="always")
def err_ranked(ranks, grades, cutoffs, row):
    """ERR at each of ``cutoffs`` of one fixed order given by the ranks (1-based, ascending) and
    grades of its positive items: every other rank holds a grade-0 item (R = 0)."""
    n_cut = cutoffs.shape[0]
    acc = 0.0
    survival = 1.0
    ci = 0
    for p in range(ranks.shape[0]):
        rank = ranks[p]
        while ci < n_cut and cutoffs[ci] < rank:
            row[ci] = acc
            ci += 1
        if ci == n_cut or (acc > 0.0 and survival / rank < TOLERANCE * acc):
            break
        stop = stop_probability(grades[p])
        acc += survival * stop / rank
        survival *= 1.0 - stop
    while ci < n_cut:
        row[ci] = acc
        ci += 1
