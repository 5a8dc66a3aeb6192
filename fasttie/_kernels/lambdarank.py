"""LambdaRank gradients and hessians (Burges, MSR-TR-2010-82), parallel over queries.

Per query: one stable sort by score (descending, equal scores keep input order), the ideal DCG
by a counting sort of the labels, then one sweep over the pairs with at least one document in
the top ``k``: O(n x min(n, k)) pairs, as rows of vectorized loops (see _lambdas_one_query for
the two layouts). Every query is written by one thread only, in a fixed order, so the results
do not depend on the thread count.

Sign convention: ``lambdas`` are dC/ds of the smoothed pairwise cost
``C = sum |delta nDCG| log(1 + exp(-sigma (s_high - s_low)))``, negative for a document that
should move up (LightGBM's and XGBoost's gradients), so ``s -= lr * lambdas`` descends.

The facade validates everything; this module takes C-contiguous float64 / int64 arrays.
"""

import numpy as np
from numba import types

from .address import caller_of, declare
from ._jit import jit
from .filled import filled
from .radix_sort import descending_through

# Above this score span (times sigma) exp(sigma (s - s_top)) could underflow: such a query takes
# the per-pair exp path instead of the shared exponentials (e^-600 ~ 1e-261 is still normal).
_MAX_SHARED_EXP_SPAN = 600.0
_DAMP_EPS = 0.01  # LightGBM's lambdarank_norm: |delta nDCG| / (0.01 + |s_i - s_j|)


@jit(inline="always")
def _sum4(values, start, stop):
    """Sum of values[start:stop] with four interleaved accumulators: a fixed order (results
    identical on every run) that does not wait on one long chain of dependent additions.
    Unsigned indices: no negative-index wraparound test on every load."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    j = np.uint64(start)
    stop = np.uint64(stop)
    one = np.uint64(1)
    while j + np.uint64(4) <= stop:
        a0 += values[j]
        a1 += values[j + one]
        a2 += values[j + np.uint64(2)]
        a3 += values[j + np.uint64(3)]
        j += np.uint64(4)
    while j < stop:
        a0 += values[j]
        j += one
    return (a0 + a1) + (a2 + a3)


@jit(inline="always")
def _sum4_pair(x, y, start, stop):
    """(_sum4(x, ...), _sum4(y, ...)) in one pass."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    b3 = 0.0
    j = np.uint64(start)
    stop = np.uint64(stop)
    one = np.uint64(1)
    while j + np.uint64(4) <= stop:
        j1 = j + one
        j2 = j + np.uint64(2)
        j3 = j + np.uint64(3)
        a0 += x[j]
        a1 += x[j1]
        a2 += x[j2]
        a3 += x[j3]
        b0 += y[j]
        b1 += y[j1]
        b2 += y[j2]
        b3 += y[j3]
        j += np.uint64(4)
    while j < stop:
        a0 += x[j]
        b0 += y[j]
        j += one
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)


# The pair rows are what vectorizes: error_model="numpy" because a float division must not raise
# (none of ours can divide by zero; the check would stop LLVM), unsigned loop indices (no
# wraparound test), whole arrays plus bounds rather than slices (a slice per row costs reference
# counting that outweighs a 50-pair row).
@jit(error_model="numpy")
def _pair_row(lo, n, gi, di, ei, g, discount, t, lam, hes, q_row, h_row):
    """Pairs (i, j) for the sorted positions j in lo..n-1 (j <= i add zero), without the common
    factors sigma / IDCG (applied once per query). ``t[j] / ei = exp(-sigma (s_i - s_j))``.

    Parameters
    ----------
    lo : int
        First column of the row (a multiple of 4).
    n : int
        End of the columns (the padded length m).
    gi : float
        Gain of the row's document i.
    di : float
        Its discount.
    ei : float
        Its exponential (see ``t``).
    g : (m,) float64
        Gain per position.
    discount : (m,) float64
        Discount per position.
    t : (m,) float64
        Exponential per position, relative to the row or to the top score.
    lam : (m,) float64
        Lambdas per layout position; the row's columns are added to.
    hes : (m,) float64
        Hessians per layout position; the row's columns are added to.
    q_row : (m,) float64
        Written: each column's pair lambda (the row's share, summed by the caller).
    h_row : (m,) float64
        Written: each column's pair hessian.
    """
    for j in range(np.uint64(lo), np.uint64(n)):  # unsigned: no negative-index wraparound
        dg = gi - g[j]
        # |delta DCG| of swapping; the discount decreases with rank, so the clamp zeroes j <= i
        w = abs(dg) * max(di - discount[j], 0.0)
        tj = t[j]
        inv = 1.0 / (ei + tj)
        # dg > 0: i is the better document, rho = 1 / (1 + exp(sigma (s_i - s_j))) = tj / (ei + tj);
        # dg < 0: j is, rho = ei / (ei + tj). q is what j gains and i loses (0 when dg == 0).
        q = w * inv * (tj if dg > 0.0 else -ei)
        h = w * (ei * inv) * (tj * inv)  # rho (1 - rho), the same for both orders
        lam[j] += q
        hes[j] += h
        q_row[j] = q
        h_row[j] = h


# deliberately a copy of _pair_row's loop, not a damping flag: each row loop stays branch-free, for speed
@jit(error_model="numpy")
def _pair_row_damped(lo, n, gi, di, ei, si, g, discount, t, s, lam, hes, q_row, h_row):
    """_pair_row with LightGBM's score-gap damping: |delta nDCG| / (0.01 + |s_i - s_j|).

    Parameters
    ----------
    lo : int
        First column of the row (a multiple of 4).
    n : int
        End of the columns (the padded length m).
    gi : float
        Gain of the row's document i.
    di : float
        Its discount.
    ei : float
        Its exponential (see ``t``).
    si : float
        Its score.
    g : (m,) float64
        Gain per position.
    discount : (m,) float64
        Discount per position.
    t : (m,) float64
        Exponential per position, relative to the row or to the top score.
    s : (m,) float64
        Score per position.
    lam : (m,) float64
        Lambdas per layout position; the row's columns are added to.
    hes : (m,) float64
        Hessians per layout position; the row's columns are added to.
    q_row : (m,) float64
        Written: each column's pair lambda (the row's share, summed by the caller).
    h_row : (m,) float64
        Written: each column's pair hessian.
    """
    for j in range(np.uint64(lo), np.uint64(n)):  # unsigned: no negative-index wraparound
        dg = gi - g[j]
        w = abs(dg) * max(di - discount[j], 0.0) / (_DAMP_EPS + abs(si - s[j]))
        tj = t[j]
        inv = 1.0 / (ei + tj)
        q = w * inv * (tj if dg > 0.0 else -ei)
        h = w * (ei * inv) * (tj * inv)
        lam[j] += q
        hes[j] += h
        q_row[j] = q
        h_row[j] = h


_COUNT_RANKS_UP_TO = 256  # up to this length counting beats a radix sort (no mispredicted branches)


@jit
def _order_desc(scores, rank, order, sort):
    """order[r] = row at rank r by score descending, equal scores in input order (a stable sort).
    Short lists count ranks: each pair of rows compared once, in vectorized loops (unsigned
    indices, no slices: a slice per row costs reference counting); longer ones take the radix
    sort at address ``sort``. ``rank`` is scratch."""
    n = scores.shape[0]
    if n > _COUNT_RANKS_UP_TO:
        sorted_rows = descending_through(scores.copy(), sort)  # the sort takes writable arrays
        for i in range(n):  # not a slice assignment: that compiles numba's shape-error formatting
            order[i] = sorted_rows[i]
        return
    for i in range(n):
        rank[i] = 0
    for i in range(n):
        si = scores[i]
        above = 0
        for j in range(np.uint64(i + 1), np.uint64(n)):
            later_above = scores[j] > si  # a later row ranks before i only if strictly higher
            above += later_above
            rank[j] += 1 - later_above
        rank[i] += above
    for i in range(n):
        order[rank[i]] = i


@jit
def _ideal_dcg(labels, gain_table, discount, cut, counts, sort):
    """DCG of the labels sorted descending, cut at ``cut`` ranks. ``counts`` (one per label
    value, or empty when the label values are too sparse to count) is filled with the number of
    rows of each label: a counting sort (the gain table is non-decreasing); else the radix sort at
    address ``sort``."""
    n = labels.shape[0]
    idcg = 0.0
    n_levels = counts.shape[0]
    if n_levels == 0:
        # the float sort _order_desc compiles anyway (labels are small integers: exact as
        # float64; equal labels have equal gains, so their order does not change the sum)
        keys = np.empty(n, dtype=np.float64)
        for r in range(n):
            keys[r] = labels[r]
        ideal = descending_through(keys, sort)
        for r in range(min(n, cut)):
            idcg += gain_table[labels[ideal[r]]] * discount[r]
        return idcg
    for level in range(n_levels):
        counts[level] = 0
    for r in range(n):
        counts[labels[r]] += 1
    pos = 0
    level = n_levels - 1
    while level >= 0 and pos < cut:
        gain = gain_table[level]
        for _ in range(min(counts[level], cut - pos)):
            idcg += gain * discount[pos]
            pos += 1
        level -= 1
    return idcg


@jit(error_model="numpy")
def _pair_row_by_label(lo, n, gp, dp, ep, g, discount, e, lam, hes, q_row, h_row):
    """Label-major layout: document p against the documents of lower labels among positions
    lo..n-1 (others add zero), p always the better one; ``discount`` holds each document's own
    discount.

    Parameters
    ----------
    lo : int
        First column of the row (a multiple of 4).
    n : int
        End of the columns (the padded length m).
    gp : float
        Gain of the row's document p.
    dp : float
        Its discount.
    ep : float
        Its exponential exp(sigma (s_p - s_top)).
    g : (m,) float64
        Gain per position.
    discount : (m,) float64
        Each document's own discount, per position.
    e : (m,) float64
        Exponential per position.
    lam : (m,) float64
        Lambdas per layout position; the row's columns are added to.
    hes : (m,) float64
        Hessians per layout position; the row's columns are added to.
    q_row : (m,) float64
        Written: each column's pair lambda (the row's share, summed by the caller).
    h_row : (m,) float64
        Written: each column's pair hessian.
    """
    for j in range(np.uint64(lo), np.uint64(n)):  # unsigned: no negative-index wraparound
        w = max(gp - g[j], 0.0) * abs(dp - discount[j])  # the clamp zeroes p's own and higher labels
        ej = e[j]
        inv = 1.0 / (ep + ej)
        q = w * ej * inv  # rho = 1 / (1 + exp(sigma (s_p - s_j))) = ej / (ep + ej)
        h = q * (ep * inv)  # w rho (1 - rho)
        lam[j] += q
        hes[j] += h
        q_row[j] = q
        h_row[j] = h


# deliberately a copy of _pair_row_by_label's loop, not a damping flag: each row loop stays branch-free, for speed
@jit(error_model="numpy")
def _pair_row_by_label_damped(lo, n, gp, dp, ep, sp, g, discount, e, s, lam, hes, q_row, h_row):
    """_pair_row_by_label with LightGBM's score-gap damping.

    Parameters
    ----------
    lo : int
        First column of the row (a multiple of 4).
    n : int
        End of the columns (the padded length m).
    gp : float
        Gain of the row's document p.
    dp : float
        Its discount.
    ep : float
        Its exponential exp(sigma (s_p - s_top)).
    sp : float
        Its score.
    g : (m,) float64
        Gain per position.
    discount : (m,) float64
        Each document's own discount, per position.
    e : (m,) float64
        Exponential per position.
    s : (m,) float64
        Score per position.
    lam : (m,) float64
        Lambdas per layout position; the row's columns are added to.
    hes : (m,) float64
        Hessians per layout position; the row's columns are added to.
    q_row : (m,) float64
        Written: each column's pair lambda (the row's share, summed by the caller).
    h_row : (m,) float64
        Written: each column's pair hessian.
    """
    for j in range(np.uint64(lo), np.uint64(n)):  # unsigned: no negative-index wraparound
        w = max(gp - g[j], 0.0) * abs(dp - discount[j]) / (_DAMP_EPS + abs(sp - s[j]))
        ej = e[j]
        inv = 1.0 / (ep + ej)
        q = w * ej * inv
        h = q * (ep * inv)
        lam[j] += q
        hes[j] += h
        q_row[j] = q
        h_row[j] = h


@jit(inline="always")  # a call would increment and decrement four array reference counts per row
def _finish_row(lam, hes, q_row, h_row, p, lo, n, rescale):
    """Row p's own share of its pairs (columns lo..n-1): returns the row's sum of |q| if
    ``rescale`` (LightGBM's sum_lambdas), else 0."""
    # the pair rows vectorize; these sums cannot without reordering additions (no fastmath)
    q_sum, h_sum = _sum4_pair(q_row, h_row, lo, n)
    lam[p] -= q_sum
    hes[p] += h_sum
    if not rescale:
        return 0.0
    for j in range(lo, n):
        q_row[j] = abs(q_row[j])
    return _sum4(q_row, lo, n)


@jit(inline="always")
def _laid_out(scratch, m):
    """The eight arrays of m values each in a query's scratch (:func:`pair_rows`): scores, gains,
    exponentials and discounts by layout position, a row's pair terms (lambda, hessian), and the
    lambdas and hessians summed by position."""
    return (scratch[:m], scratch[m:2 * m], scratch[2 * m:3 * m], scratch[3 * m:4 * m], scratch[4 * m:5 * m],
            scratch[5 * m:6 * m], scratch[6 * m:7 * m], scratch[7 * m:8 * m])


@jit(error_model="numpy")
def pair_rows(n, k, by_label, shared, damp_now, sigma, rescale, group_end, scratch):
    """The pair rows of one query laid out by :func:`_lambdas_one_query` (either layout): each
    row's pairs added into the lambdas and hessians of its positions.

    Parameters
    ----------
    n : int
        The query's documents.
    k : int
        Truncation: rows are the top min(n - 1, k) positions (rank-major layout).
    by_label : bool
        The label-major layout (no truncation): rows run over the lower labels only.
    shared : bool
        The exponentials e = exp(sigma (s - s_top)) are shared by every row (else per row).
    damp_now : bool
        LightGBM's score-gap damping.
    sigma : float
        Sigmoid steepness.
    rescale : bool
        Sum |q| over every pair (LightGBM's sum_lambdas) into ``scratch[8 m]``.
    group_end : (n,) int64
        Label-major layout: the end of each position's label group.
    scratch : (8 m + 1,) float64, m = n rounded up to a multiple of 4
        s, g, e, d (read; e written in the per-row exponentials), q_row, h_row (scratch), lam,
        hes (added to), m values each, then the sum of |q| (written).
    """
    m = (n + 3) // 4 * 4  # as laid out (scratch holds 8 m + 1): a multiple of 4 that LLVM sees
    s, g, e, d, q_row, h_row, lam, hes = _laid_out(scratch, m)
    sum_abs = 0.0
    # one loop over the rows of either layout: one call site of the inlined _finish_row (each site
    # is typed and generated again)
    for p in range(n if by_label else min(n - 1, k)):
        if by_label:
            lo = group_end[p]
            if lo >= n:
                continue
            lo = lo // 4 * 4
            if damp_now:
                _pair_row_by_label_damped(lo, m, g[p], d[p], e[p], s[p], g, d, e, s, lam, hes, q_row, h_row)
            else:
                _pair_row_by_label(lo, m, g[p], d[p], e[p], g, d, e, lam, hes, q_row, h_row)
        else:
            if shared:
                ei = e[p]
            else:  # per-pair exponentials relative to position p: ei = 1, e[j] = exp(-sigma (s_p - s_j)) <= 1
                ei = 1.0
                for j in range(p + 1, n):
                    e[j] = np.exp(-sigma * (s[p] - s[j]))
            lo = (p + 1) // 4 * 4
            if damp_now:
                _pair_row_damped(lo, m, g[p], d[p], ei, s[p], g, d, e, s, lam, hes, q_row, h_row)
            else:
                _pair_row(lo, m, g[p], d[p], ei, g, d, e, lam, hes, q_row, h_row)
        sum_abs += _finish_row(lam, hes, q_row, h_row, p, lo, m, rescale)
    scratch[8 * m] = sum_abs


# the per-query kernel calls pair_rows through its address (:mod:`.address`): a cold call
# compiles the sort, the ideal DCG and the layout while a helper compiles the pair rows
PAIR_ROWS_ARGS = (types.int64, types.int64, types.boolean, types.boolean, types.boolean, types.float64, types.boolean,
                  types.int64[::1], types.float64[::1])
declare(pair_rows, PAIR_ROWS_ARGS)
call_pair_rows = caller_of(PAIR_ROWS_ARGS, "pair_rows")


@jit(error_model="numpy")
def _lambdas_one_query(scores, labels, gain_table, discount, sigma, k, ideal_k, damp, rescale, hessian_scale,
                       weight, lambdas, hessians, rows, sort):
    """Lambdas and hessians of one query, written into ``lambdas`` / ``hessians`` (row order).

    Two layouts of the same pairs. Rank-major (LightGBM's loop; used with truncation): rows are
    the top-k sorted positions, columns every later position; pairs see gains only, and equal
    labels give equal gains, so their pairs add exactly zero without a branch. Label-major (no
    truncation): documents grouped by label descending, each row runs over the lower labels
    only, skipping the equal-label pairs (about 40 % of them with MSLR-like labels).
    ``discount[r]`` = 1 / log2(r + 2).

    Parameters
    ----------
    scores : (n,) float64, read-only
        The query's scores.
    labels : (n,) int64, read-only
        Its labels (indices into ``gain_table``).
    gain_table : (n_levels,) float64, read-only
        Gain of each label, non-decreasing.
    discount : (>= n,) float64, read-only
        discount[r] = 1 / log2(r + 2).
    sigma : float
        Sigmoid steepness.
    k : int
        Truncation: pairs with a document in the top k (int64 max: none).
    ideal_k : int
        Ranks of the ideal DCG (k, or int64 max: the whole list).
    damp : bool
        LightGBM's score-gap damping.
    rescale : bool
        LightGBM's lambdarank_norm rescaling.
    hessian_scale : float
        Factor on the hessians (2.0: XGBoost's).
    weight : float
        The query's weight.
    lambdas : (n,) float64
        Written: gradients, row order.
    hessians : (n,) float64
        Written: hessians, row order.
    rows : uint64
        Address of :func:`pair_rows` (:mod:`.address`), which is not compiled into this kernel.
    sort : uint64
        Address of :func:`.radix_sort.sort_keys_into`, neither.
    """
    n = scores.shape[0]
    for r in range(n):
        lambdas[r] = 0.0
        hessians[r] = 0.0
    if n < 2 or weight == 0.0:
        return
    n_levels = gain_table.shape[0]
    dense = n_levels <= 4 * n + 64  # label values few enough to count
    ints = np.empty(4 * n + (2 * n_levels if dense else 0), dtype=np.int64)  # one allocation
    counts = ints[4 * n:4 * n + n_levels] if dense else ints[:0]
    idcg = _ideal_dcg(labels, gain_table, discount, min(n, ideal_k), counts, sort)
    if not idcg > 0.0:
        return
    order = ints[:n]
    doc = ints[n:2 * n]  # document (row of the query) at each layout position
    group_end = ints[2 * n:3 * n]
    _order_desc(scores, ints[3 * n:4 * n], order, sort)  # stable: equal scores keep input order

    # Rows start at a multiple of 4 and the arrays are padded to one: every row is whole vector
    # iterations, no scalar remainder. Extra columns add exactly zero: before the row's first
    # partner the weights clamp to 0; padding has e = 0, hence rho = 0.
    m = (n + 3) // 4 * 4
    # one allocation for the laid-out copies, the rows and the rows' sum of |q| (last)
    scratch = filled(np.empty(8 * m + 1, dtype=np.float64), 0.0)
    s, g, e, d, q_row, h_row, lam, hes = _laid_out(scratch, m)
    s_top = scores[order[0]]
    s_bottom = scores[order[n - 1]]
    # shared exponentials e = exp(sigma (s - s_top)) in (0, 1], unless they could underflow
    shared = sigma * (s_top - s_bottom) <= _MAX_SHARED_EXP_SPAN
    damp_now = damp and s_top != s_bottom  # LightGBM skips the damping when all scores are equal
    by_label = shared and k >= n and dense
    if by_label:
        # counting sort of the rank order by label, highest label first (ranks stay ascending)
        nxt = ints[4 * n + n_levels:]
        total = 0
        for level in range(n_levels - 1, -1, -1):
            nxt[level] = total
            total += counts[level]
        for r in range(n):
            row = order[r]
            level = labels[row]
            p = nxt[level]
            nxt[level] = p + 1
            doc[p] = row
            d[p] = discount[r]
        for p in range(n):
            group_end[p] = nxt[labels[doc[p]]]  # after the loop above: the end of p's label group
    else:
        for r in range(n):
            doc[r] = order[r]
            d[r] = discount[r]
    for p in range(n):
        row = doc[p]
        s[p] = scores[row]
        g[p] = gain_table[labels[row]]
        e[p] = np.exp(sigma * (s[p] - s_top)) if shared else 1.0

    call_pair_rows(rows, (np.int64(n), np.int64(k), by_label, shared, damp_now, np.float64(sigma), rescale, group_end,
                          scratch))
    sum_abs = scratch[8 * m]

    inv_idcg = 1.0 / idcg
    lam_factor = weight * sigma * inv_idcg
    hes_factor = weight * sigma * sigma * inv_idcg * hessian_scale
    if rescale:
        total_lambda = 2.0 * sigma * inv_idcg * sum_abs  # LightGBM's sum_lambdas: every pair lambda, twice
        if total_lambda > 0.0:
            norm = np.log2(1.0 + total_lambda) / total_lambda
            lam_factor *= norm
            hes_factor *= norm
    for p in range(n):
        lambdas[doc[p]] = lam[p] * lam_factor
        hessians[doc[p]] = hes[p] * hes_factor


@jit
def lambdarank_queries(offsets, scores, labels, gain_table, discount, query_weights, sigma, k, ideal_k, damp,
                       rescale, hessian_scale, lambdas, hessians, start, stop, rows, sort):
    """Driver over queries start..stop-1: query q (rows offsets[q]:offsets[q+1]) writes only its
    own rows of ``lambdas`` / ``hessians``.

    Parameters
    ----------
    offsets : (n_queries + 1,) int64, read-only
        Query q's rows are offsets[q]:offsets[q + 1].
    scores : (n_rows,) float64, read-only
        Predicted scores.
    labels : (n_rows,) int64, read-only
        Labels (indices into ``gain_table``).
    gain_table : (n_levels,) float64, read-only
        Gain of each label, non-decreasing.
    discount : (longest,) float64, read-only
        discount[r] = 1 / log2(r + 2).
    query_weights : (n_queries,) float64, read-only
        Weight of each query.
    sigma : float
        Sigmoid steepness.
    k : int
        Truncation: pairs with a document in the top k (int64 max: none).
    ideal_k : int
        Ranks of the ideal DCG (k, or int64 max: the whole list).
    damp : bool
        LightGBM's score-gap damping.
    rescale : bool
        LightGBM's lambdarank_norm rescaling.
    hessian_scale : float
        Factor on the hessians (2.0: XGBoost's).
    lambdas : (n_rows,) float64
        Written: gradients, rows offsets[start]..offsets[stop]-1.
    hessians : (n_rows,) float64
        Written: hessians, the same rows.
    start, stop : int
        The queries of this block, start..stop-1.
    rows : uint64
        Address of :func:`pair_rows` (:mod:`.address`).
    sort : uint64
        Address of :func:`.radix_sort.sort_keys_into` (the lists longer than a counting of ranks
        pays for, and the ideal order of sparse labels).
    """
    for q in range(start, stop):
        lo = offsets[q]
        hi = offsets[q + 1]
        _lambdas_one_query(scores[lo:hi], labels[lo:hi], gain_table, discount, sigma, k, ideal_k, damp, rescale,
                           hessian_scale, query_weights[q], lambdas[lo:hi], hessians[lo:hi], rows, sort)
