"""Seed 000 (blog post "tie-aware的检索指标", 2023-10-31): its correct parts, made runnable.

This is the second, independent numpy reference of STYLE.md habit 5: closed forms written by
someone else, position by position, with argsort.  It is used for sizes the brute-force
oracle cannot enumerate (e.g. 20 queries x 500 database items).

Changes from the published code (mechanical only, no change to the formulas):

* ``np.int`` (removed from numpy) -> ``np.int64``; the undefined ``label2`` in ``sim_mat`` ->
  ``label_2``; ``Dist``/``Rel`` are arguments (the single-k ``NDCG_tie`` referred to them without
  defining them, so only the multi-k ``multi_nDCG_tie`` is kept).
* ``hamming`` needs ±1 codes (``(bit - A B^T) / 2``); callers convert 0/1 or bool codes with
  ``to_pm1``.  Integer floor division on int64, so distances are exact.
* Accumulators are float64 (the seed used float32), grades int64 and gains float64 (the seed's
  ``2 ** Rel - 1`` wraps for uint8 grades >= 8).
* The mutable cutoff list is copied instead of modified in place; functions can also return the
  per-query values (``per_query=True``).  The means are unchanged: queries without relevant
  items count as 0 (they are skipped in the sum but the sum is divided by all queries), i.e.
  fasttie's ``empty="zero"``.

Known wrong parts (DESIGN.md section 6), NOT used anywhere in the tests:

* ``mAP_tie`` / ``multi_mAP_tie`` at k < ALL divide the exact tie-aware numerator by the number of
  relevant items in the top k of one arbitrary argsort order: not tie-aware, can exceed 1, and
  depends on database order.  Only ``k=-1`` (ALL, where that count is R) is used:
  ``multi_mAP_tie_all``.
* ``P_R_F1_tie``'s recall is NaN for queries without relevant items, and it clamps k > N to N
  (fasttie's P@k / F1@k divide by the k asked): use it only with 1 <= k <= N on non-empty queries.
* The text writes F1 without the factor 2 in one place; the code has it.

Correct parts kept: ``hamming`` (±1 codes), ``sim_mat``, ``P_R_F1_tie`` (1 <= k <= N, R > 0),
``multi_mAP_tie_all`` (AP at ALL), ``multi_nDCG_tie`` (nDCG@k with exp2 gain, any k; k > N means N).
"""

from __future__ import annotations

import numpy as np

__all__ = ["to_pm1", "hamming", "sim_mat", "P_R_F1_tie", "multi_mAP_tie_all", "multi_nDCG_tie"]


def to_pm1(codes) -> np.ndarray:
    """±1 int64 codes from ±1, 0/1 or bool codes."""
    a = np.asarray(codes)
    if a.dtype == bool or (a.min() >= 0):
        return np.where(a.astype(bool), 1, -1).astype(np.int64)
    return np.where(a > 0, 1, -1).astype(np.int64)


def hamming(A, B=None):
    """A, B: [None, bit]
    elements in {-1, 1}
    """
    A = np.asarray(A, dtype=np.int64)
    if B is None:
        B = A
    B = np.asarray(B, dtype=np.int64)
    bit = A.shape[1]
    return (bit - A.dot(B.T)) // 2


def sim_mat(label, label_2=None, sparse=False):
    if label_2 is None:
        label_2 = label
    if sparse:
        S = label[:, np.newaxis] == label_2[np.newaxis, :]
    else:
        S = np.dot(label, label_2.T) > 0
    return S.astype(np.int64)


def P_R_F1_tie(qH, rH, qL, rL, k=-1, sparse=False, per_query=False):
    """tie-aware precision@k, recall@k, F1@k
    qH, rH: [n, bit] & [m, bit], hash code of query & database samples (±1)
    qL, rL: [n, #class] & [m, #class], label of query & database samples
        if sparse, shapes are [n] & [m]
    k: position threshold of `P@k`
    sparse: whether label is sparse class ID or one-hot vector
    Valid for 1 <= k <= m and queries with at least one relevant item.
    """
    m = rH.shape[0]
    if (k < 0) or (k > m):
        k = m
    D = hamming(qH, rH)
    Rnk = np.argsort(D)
    S = sim_mat(qL, rL, sparse)
    # 找 k 所在 tie: t_{c-1} < k <= t_c
    D_sort = np.vstack([d[r] for d, r in zip(D, Rnk)])
    D_at_k = D_sort[:, k - 1:k]  # `-1` 因为下标是 0-base
    mask_tie = np.equal(D, D_at_k).astype(np.int64)
    # r_c, n_c
    nc = mask_tie.sum(1)
    rc = (mask_tie * S).sum(1)
    # find t_{c-1}
    pos = np.arange(m)[np.newaxis, :]  # [1, m]
    tie_pos = np.where(np.equal(D_sort, D_at_k), pos, np.inf)
    tc_1 = np.min(tie_pos, 1)  # - 1 + 1  # `+1` to shift 0-base to 1-base
    # R_{c-1}
    mask_pre = (D < D_at_k).astype(np.int64)
    Rc_1 = (mask_pre * S).sum(1)
    # P@k, R@k, F1@k
    _common = Rc_1 + (k - tc_1) * rc / nc  # [n]
    Rm = S.sum(1)
    P_at_k = _common / k
    with np.errstate(divide="ignore", invalid="ignore"):
        R_at_k = _common / Rm
    F1_at_k = 2 * _common / (k + Rm)
    if per_query:
        return P_at_k, R_at_k, F1_at_k
    return P_at_k.mean(), R_at_k.mean(), F1_at_k.mean()


def _multi_mAP_tie(Dist, Sim, k=-1, per_query=False):
    """支持单 k、多 k (seed's multi_mAP_tie; only correct at k = ALL, see module docstring)
    多个 k 时传 int tuple/list
    """
    if isinstance(k, int):
        k = [k]
    k = list(k)
    n, m = Dist.shape
    for kid in range(len(k)):
        if (k[kid] < 0) or (k[kid] > m):
            k[kid] = m
    k = sorted(k)  # ascending
    assert k[0] != 0, "`@0` is meaningless and disallowed for efficiency"
    Rnk = np.argsort(Dist, axis=-1)
    AP_q = np.zeros([n, len(k)], dtype=np.float64)
    pos = np.arange(m)  # 0-base
    # t_fi_1[k]: t_{f(k) - 1}
    t_fi_1 = np.zeros([m])
    # r_fi[k]: #relevant samples in the tie where k lies in
    r_fi = np.zeros([m])
    # n_fi[k]: #samples in the tie where k lies in
    n_fi = np.zeros([m])
    # R_fi_1[k]: prefix sum of r_fi (exclude r_fi[k])
    R_fi_1 = np.zeros([m])
    for qi, (d, s, rnk) in enumerate(zip(Dist, Sim, Rnk)):
        s_sort = s[rnk]
        Rm_list = s_sort.cumsum()
        if 0 == Rm_list[-1]:  # = Rm.max() = s_sort.sum()
            continue
        d_unique = np.unique(d)  # ascending
        d_sort = d[rnk]
        _R_fi_1 = 0  # R_{f(i) - 1}
        for _d in d_unique:
            tie_idx = (d_sort == _d)
            t_fi_1[tie_idx] = pos[tie_idx].min()  # - 1 + 1  # `+1` to shift 0-base to 1-base
            _r_fi = s_sort[tie_idx].sum()
            r_fi[tie_idx] = _r_fi
            n_fi[tie_idx] = tie_idx.astype(np.int64).sum()
            R_fi_1[tie_idx] = _R_fi_1  # exclude `_r_fi`
            _R_fi_1 += _r_fi

        # deal with invalid terms
        n_fi_1, r_fi_1 = n_fi - 1, r_fi - 1
        idx_invalid = (n_fi_1 == 0)
        n_fi_1[idx_invalid] = 1
        r_fi_1[idx_invalid] = 0
        # in computing (i - t_{f(i)-1} - 1),
        # the lastest `-1` is megered: pos = i - 1
        kernel = (R_fi_1 + (pos - t_fi_1) * r_fi_1 / n_fi_1 + 1) * r_fi / n_fi / (pos + 1)
        kernel_cumsum = np.cumsum(kernel)
        for kid, _k in enumerate(k):
            if Rm_list[_k - 1]:
                AP_q[qi, kid] = kernel_cumsum[_k - 1] / Rm_list[_k - 1]
    if per_query:
        return AP_q
    return AP_q.mean(0)


def multi_mAP_tie_all(Dist, Sim, per_query=False):
    """Tie-aware mAP at k = ALL (the seed's multi_mAP_tie with k=-1); Sim binary 0/1."""
    Dist = np.asarray(Dist, dtype=np.int64)
    Sim = (np.asarray(Sim) > 0).astype(np.int64)
    out = _multi_mAP_tie(Dist, Sim, k=-1, per_query=per_query)
    return out[:, 0] if per_query else float(out[0])


def multi_nDCG_tie(Dist, Rel, k=-1, per_query=False):
    """Tie-aware nDCG@k with exp2 gain (2**rel - 1); Rel: non-negative integer grades.

    k: int or list of ints; k < 0 or k > m means m.  Returns a float (single k) or an array
    (several k, ascending order of k) of means over all queries (empty queries count 0), or with
    per_query=True an (n, len(k)) array.
    """
    single = isinstance(k, int)
    if single:
        k = [k]
    k = list(k)
    Dist = np.asarray(Dist, dtype=np.int64)
    Rel = np.asarray(Rel, dtype=np.int64)
    n, m = Dist.shape
    for kid in range(len(k)):
        if (k[kid] < 0) or (k[kid] > m):
            k[kid] = m
    k = sorted(k)  # ascending
    assert k[0] != 0, "`@0` is meaningless and disallowed for efficiency"
    G = np.exp2(Rel.astype(np.float64)) - 1.0  # float64: no wrap-around
    pos = np.arange(m) + 1  # 1-base
    D_inv = 1 / np.log2(1 + pos)
    Rank = np.argsort(Dist, axis=-1)

    nDCG_q = np.zeros([n, len(k)], dtype=np.float64)
    for qi, (g, dist, rnk) in enumerate(zip(G, Dist, Rank)):
        g_desc = np.sort(g)[::-1]
        if 0 == g_desc[0]:  # biggist DCG
            continue
        dcg_best_list = (g_desc * D_inv).cumsum()
        dist_unique = np.unique(dist)  # ascending
        dist_sort = dist[rnk]
        g_sort = g[rnk]

        _start_kid = 0
        dcg_list = np.zeros([len(k)], dtype=np.float64)
        for _d in dist_unique:
            tie_idx = (dist_sort == _d)
            tie_pos = pos[tie_idx]
            tc_1 = tie_pos[0] - 1  # i.e. tie_pos.min() - 1
            tc = tie_pos[-1]
            while _start_kid < len(k):
                if k[_start_kid] > tc_1:
                    break
                else:
                    _start_kid += 1
            if _start_kid >= len(k):
                break
            n_c = tie_idx.sum()
            tie_avg_gain = g_sort[tie_idx].sum() / n_c  # != g_sort[tie_idx].mean()
            tie_sum_d_list = (1 / np.log2(1 + np.arange(tc_1 + 1, tc + 1))).cumsum()
            for kid_offset, _k in enumerate(k[_start_kid:]):
                tie_sum_d = tie_sum_d_list[min(_k, tc) - tc_1 - 1]
                tie_dcg = tie_avg_gain * tie_sum_d
                dcg_list[kid_offset + _start_kid] += tie_dcg

        for kid, _k in enumerate(k):
            nDCG_q[qi, kid] = dcg_list[kid] / dcg_best_list[_k - 1]  # 0-base

    if per_query:
        return nDCG_q
    out = nDCG_q.mean(0)
    return float(out[0]) if single else out
