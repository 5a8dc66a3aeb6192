"""Kernels of the binary-quantization pipeline: Hamming candidates, float rescoring, and the
exact expectation over the tied items at the candidate cut (:mod:`fasttie.rescore`).

Per query (docs/binary-quantization.md, "The ties at the cut"):

* stage 1: the Hamming distances of a block of queries to every database code, tile by tile
  (the tile stays in cache while the block passes over it), into a (block, n_db) uint16 buffer
  and a distance histogram (:func:`hamming_block`); the histogram gives the cut distance d* of
  every candidate count C, and the items at distance <= d* of the largest C are collected from
  the buffer in index order (:func:`collect_block`);
* stage 2: the inner products of the collected items with the query, in float64, and their
  order: score descending, database index ascending among equal scores (:func:`rescore_block`);
* the walk (:func:`_walk_mean`): with A items closer than d*, T items at d* and m = C - A places
  left for them, a uniformly random m-subset of the tied items is chosen. The walk goes down the
  fixed stage-2 order of the A + T items; an item's rank in the final list is 1 + (sure items
  above it) + H, H the chosen tied items above it. The distribution of H is carried as a Markov
  chain: after u tied items of which h were chosen, the next tied item is chosen with probability
  (m - h) / (T - u) (sequential sampling without replacement, which gives every m-subset the
  same probability, 1 / C(T, m)). Only states h <= (largest rank read) - 1 matter, so the chain
  is truncated there: the cost is O(items walked x cutoff).

Metric columns: ``types[c]`` (the constants below) and ``ks[c]`` (the cutoff; 0: the whole list of
C items). The kernels write sums; :mod:`fasttie.rescore` divides them (P@k by k, R@k by R, ...).
"""

import numpy as np

from ._jit import jit
from .filled import filled_rows
from .popcount import popcount64

HITS = 0  # relevant items in the top k (P@k, R@k)
DCG = 1  # gain / log2(1 + rank) of the top k (DCG@k, nDCG@k)
NN = 2  # exact float top-k items in the top k (NN-recall@k)
AP_SUM = 3  # sum over relevant items in the top k of (relevant at or above) / rank
RR = 4  # 1 / rank of the first relevant item, within k
SUCCESS = 5  # a relevant item within k

CLASS, MULTIHOT, LISTED = 0, 1, 2

_TILE = 2048  # database codes per tile: 256 KB of 1024-bit codes, in L2 while a block of queries passes


@jit
def hamming_block(query_words, db_words, start, stop, dist, hist):
    """Distances of queries start..stop-1 to every database code, and their histograms.

    Parameters
    ----------
    query_words : (n_queries, n_words) uint64, read-only
    db_words : (n_db, n_words) uint64, read-only
    start, stop : int
        The block of queries; at most ``dist.shape[0]`` of them.
    dist : (block, n_db) uint16
        Written: row i - start holds query i's distances.
    hist : (n_queries, n_bits + 1) int64
        Written: rows start..stop-1, items at each distance.
    """
    n_db = db_words.shape[0]
    n_words = db_words.shape[1]
    for i in range(start, stop):
        for d in range(hist.shape[1]):
            hist[i, d] = 0
    for lo in range(0, n_db, _TILE):
        hi = min(lo + _TILE, n_db)
        for i in range(start, stop):
            row = dist[i - start]
            query = query_words[i]
            counts = hist[i]
            for j in range(lo, hi):
                d = np.uint64(0)
                for w in range(n_words):
                    d += popcount64(query[w] ^ db_words[j, w])
                row[j] = np.uint16(d)
                counts[d] += 1


@jit
def collect_block(dist, limits, offsets, ids, distances, start, stop):
    """The items at distance <= limits[i] of queries start..stop-1, in index order.

    Parameters
    ----------
    dist : (block, n_db) uint16, read-only
        From :func:`hamming_block`.
    limits : (n_queries,) int64, read-only
    offsets : (n_queries + 1,) int64, read-only
        Query i's items go to ids[offsets[i]:offsets[i + 1]].
    ids : (total,) int64
        Written.
    distances : (total,) int64
        Written.
    start, stop : int
    """
    n_db = dist.shape[1]
    for i in range(start, stop):
        row = dist[i - start]
        limit = np.uint16(limits[i])
        at = offsets[i]
        for j in range(n_db):
            if row[j] <= limit:
                ids[at] = j
                distances[at] = row[j]
                at += 1


@jit(inline="always")
def _dot(query, vectors, j):
    """Inner product in float64, eight interleaved partial sums (a fixed order)."""
    dim = vectors.shape[1]
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    end = dim - dim % 8
    for t in range(0, end, 8):
        a0 += np.float64(query[t]) * np.float64(vectors[j, t])
        a1 += np.float64(query[t + 1]) * np.float64(vectors[j, t + 1])
        a2 += np.float64(query[t + 2]) * np.float64(vectors[j, t + 2])
        a3 += np.float64(query[t + 3]) * np.float64(vectors[j, t + 3])
        a4 += np.float64(query[t + 4]) * np.float64(vectors[j, t + 4])
        a5 += np.float64(query[t + 5]) * np.float64(vectors[j, t + 5])
        a6 += np.float64(query[t + 6]) * np.float64(vectors[j, t + 6])
        a7 += np.float64(query[t + 7]) * np.float64(vectors[j, t + 7])
    for t in range(end, dim):
        a0 += np.float64(query[t]) * np.float64(vectors[j, t])
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))


@jit
def inner_products(query, vectors, ids, out):
    """out[p] = <query, vectors[ids[p]]> in float64 (:func:`_dot`'s order)."""
    for p in range(ids.shape[0]):
        out[p] = _dot(query, vectors, ids[p])


@jit(inline="always")
def _grade(kind, i, j, query_labels, db_labels, query_label_words, db_label_words, listed_ids, listed_grades):
    """Grade of database item j for query i (listed_ids: query i's ids, ascending)."""
    if kind == CLASS:
        return np.int64(1) if query_labels[i] == db_labels[j] else np.int64(0)
    if kind == MULTIHOT:
        g = np.uint64(0)
        for w in range(db_label_words.shape[1]):
            g += popcount64(query_label_words[i, w] & db_label_words[j, w])
        return np.int64(g)
    p = np.searchsorted(listed_ids, j)
    if p < listed_ids.shape[0] and listed_ids[p] == j:
        return listed_grades[p]
    return np.int64(0)


@jit
def walk_mean(order_dist, order_grade, order_truth, n_items, cut, sure, tied, m, types, ks, gains, discount, kmax,
              p, q, out):
    """Expected metric sums of one query at one candidate count, from its stage-2 order.

    Parameters
    ----------
    order_dist : (n,) int64, read-only
        Hamming distance of each collected item, in stage-2 order.
    order_grade : (n,) int64, read-only
        Their grades.
    order_truth : (n,) int64, read-only
        Their rank in the exact float order (0-based), or n_db where not in its top k.
    n_items : int
        Items to walk (n, or fewer).
    cut : int
        d*: items closer are always candidates (``sure`` of them); ``m`` of the ``tied``
        items at d* are (uniformly at random); farther ones never.
    sure, tied, m : int
    types, ks : (n_cols,) int64, read-only
        Column kinds and cutoffs (0: the whole list).
    gains : (n_grades,) float64, read-only
    discount : (kmax + 1,) float64, read-only
        discount[r] = 1 / log2(1 + r).
    kmax : int
        The deepest rank a column reads.
    p, q : (kmax,) float64
        Scratch: P(h chosen so far), P(h chosen so far and no relevant item included yet).
    out : (n_cols,) float64
        Written: the expected sums.
    """
    n_cols = types.shape[0]
    for c in range(n_cols):
        out[c] = 0.0
    need_rr = False
    need_other = False
    for c in range(n_cols):
        if types[c] == RR or types[c] == SUCCESS:
            need_rr = True
        else:
            need_other = True
    kcap = 1
    for c in range(n_cols):
        kcap = max(kcap, ks[c])
    kmax = min(kmax, kcap)
    states = min(m, kmax - 1) + 1  # h = 0..states-1
    for h in range(states):
        p[h] = 0.0
        q[h] = 0.0
    p[0] = 1.0
    q[0] = 1.0
    s = 0  # sure items passed
    u = 0  # tied items passed
    s_rel = 0
    u_rel = 0
    rr_done = not need_rr
    left = 1.0
    for pos in range(n_items):
        d = order_dist[pos]
        if d > cut:
            continue
        is_tied = d == cut
        low = max(0, m - (tied - u))  # fewest tied items chosen above this one
        if s + 1 + low > kmax:
            break
        if rr_done and not need_other:
            break
        g = order_grade[pos]
        rel = g > 0
        truth = order_truth[pos]
        top = min(states, kmax - s)  # states whose rank s + 1 + h is within kmax
        if is_tied:
            left = np.float64(tied - u)
        for c in range(n_cols):
            kind = types[c]
            k = ks[c]
            if kind == NN:
                if truth >= k:
                    continue
            elif not rel:
                continue
            if kind == RR or kind == SUCCESS:
                if rr_done:
                    continue
            acc = 0.0
            for h in range(top):
                r = s + 1 + h
                if r > k:
                    break
                w = p[h] if kind != RR and kind != SUCCESS else q[h]
                if is_tied:
                    w *= (m - h) / left
                if kind == HITS or kind == NN or kind == SUCCESS:
                    acc += w
                elif kind == DCG:
                    acc += w * discount[r]
                elif kind == RR:
                    acc += w / r
                else:  # AP_SUM: given h chosen above, E[chosen relevant above] = h u_rel / u
                    above = np.float64(1 + s_rel)
                    if u > 0:
                        above += h * u_rel / np.float64(u)
                    acc += w * above / r
            if kind == DCG:
                acc *= gains[g]
            out[c] += acc
        if is_tied:
            # the next state: this item chosen with probability (m - h) / (T - u)
            for h in range(states - 1, -1, -1):
                stay = p[h] * (1.0 - (m - h) / left)
                if h > 0:
                    stay += p[h - 1] * (m - h + 1) / left
                p[h] = stay
                if need_rr and not rr_done:
                    stay_q = q[h] * (1.0 - (m - h) / left)
                    if h > 0 and not rel:
                        stay_q += q[h - 1] * (m - h + 1) / left
                    q[h] = stay_q
            u += 1
            if rel:
                u_rel += 1
        else:
            s += 1
            if rel:
                s_rel += 1
                rr_done = True


@jit
def rescore_block(query_vectors, db_vectors, offsets, ids, distances, kind, query_labels, db_labels,
                  query_label_words, db_label_words, indptr, listed_ids, listed_grades, truth_ids, cuts, sures,
                  tieds, ms, stable, types, ks, gains, discount, kmax, out, spread, spread_out, start, stop):
    """Stage 2 and the walk of queries start..stop-1, at every candidate count.

    Parameters
    ----------
    query_vectors : (n_queries, dim) float32 or float64, read-only
    db_vectors : (n_db, dim), same dtype, read-only
    offsets, ids, distances : from :func:`collect_block` (ids ascending per query)
    kind : int
        CLASS, MULTIHOT or LISTED.
    query_labels, db_labels, query_label_words, db_label_words, indptr, listed_ids, listed_grades :
        Relevance (:class:`fasttie.relevance.RelevanceSpec`).
    truth_ids : (n_queries, k_truth) int64, read-only
        Exact float top k per query, rank order (k_truth may be 0).
    cuts, sures, tieds, ms : (n_queries, n_c) int64, read-only
        d*, A, T, m per query and candidate count.
    stable : bool
        Take the first m tied items in index order instead of the average over choices.
    types, ks, gains, discount, kmax : as :func:`walk_mean` (ks 0: the whole list, C).
    out : (n_queries, n_c, n_cols) float64
        Written: rows start..stop-1.
    spread : bool
        Also :func:`walk_spread` (not with ``stable``).
    spread_out : (n_queries, n_c, n_cols, 4) float64
        Written with ``spread``: rows start..stop-1.
    """
    n_c = cuts.shape[1]
    n_cols = types.shape[0]
    n_db = db_vectors.shape[0]
    p = np.empty(kmax, dtype=np.float64)
    q = np.empty(kmax, dtype=np.float64)
    col_ks = np.empty(n_cols, dtype=np.int64)
    for i in range(start, stop):
        lo = offsets[i]
        n = offsets[i + 1] - lo
        item_ids = ids[lo:lo + n]
        scores = np.empty(n, dtype=np.float64)
        inner_products(query_vectors[i], db_vectors, item_ids, scores)
        order = np.argsort(-scores, kind="mergesort")  # stable: index order among equal scores
        order_dist = np.empty(n, dtype=np.int64)
        order_grade = np.empty(n, dtype=np.int64)
        order_truth = np.empty(n, dtype=np.int64)
        position = np.empty(n, dtype=np.int64)
        my_listed = listed_ids[indptr[i]:indptr[i + 1]] if kind == LISTED else listed_ids[0:0]
        my_grades = listed_grades[indptr[i]:indptr[i + 1]] if kind == LISTED else listed_grades[0:0]
        truth_row = truth_ids[i]
        for t in range(n):
            at = order[t]
            j = item_ids[at]
            position[at] = t  # the stage-2 position of the item at index-order position at
            order_dist[t] = distances[lo + at]
            order_grade[t] = _grade(kind, i, j, query_labels, db_labels, query_label_words, db_label_words,
                                    my_listed, my_grades)
            rank = n_db
            for r in range(truth_row.shape[0]):
                if truth_row[r] == j:
                    rank = r
                    break
            order_truth[t] = rank
        for ci in range(n_c):
            cut = cuts[i, ci]
            sure = sures[i, ci]
            tied = tieds[i, ci]
            m = ms[i, ci]
            for c in range(n_cols):
                col_ks[c] = ks[c] if ks[c] > 0 else sure + m
            if stable and m < tied:
                # the first m tied items in index order become sure, the others drop out
                dist_s = order_dist.copy()
                seen = 0
                for t in range(n):  # index order: positions of the tied items ascending
                    if distances[lo + t] == cut:
                        seen += 1
                        if seen > m:
                            dist_s[position[t]] = cut + 1
                for t in range(n):
                    if dist_s[t] == cut:
                        dist_s[t] = cut - 1 if cut > 0 else -1
                none = np.int64(0)  # typed: a literal 0 would compile a second walk_mean
                walk_mean(dist_s, order_grade, order_truth, n, cut, sure + m, none, none, types, col_ks, gains,
                          discount, kmax, p, q, out[i, ci])
            else:
                walk_mean(order_dist, order_grade, order_truth, n, cut, sure, tied, m, types, col_ks, gains,
                          discount, kmax, p, q, out[i, ci])
                if spread:
                    walk_spread(order_dist, order_grade, order_truth, n, cut, sure, tied, m, types, col_ks, gains,
                                discount, spread_out[i, ci])


@jit
def grade_totals(kind, query_label_words, db_label_words, indptr, listed_grades, totals, start, stop):
    """Database items of each grade per query, multi-hot or listed relevance (rows start..stop-1 of
    totals, (n_queries, n_grades) int64; listed: grade 0 is left 0, the caller fills it)."""
    n_grades = totals.shape[1]
    for i in range(start, stop):
        for g in range(n_grades):
            totals[i, g] = 0
        if kind == MULTIHOT:
            for j in range(db_label_words.shape[0]):
                g = np.uint64(0)
                for w in range(db_label_words.shape[1]):
                    g += popcount64(query_label_words[i, w] & db_label_words[j, w])
                totals[i, g] += 1
        else:
            for t in range(indptr[i], indptr[i + 1]):
                totals[i, listed_grades[t]] += 1


@jit
def top_k_block(scores, base, top_scores, top_ids):
    """Merge a block of float scores (rows: queries, columns: database items base, base + 1, ...)
    into each row's top k, sorted descending; an equal score never displaces an earlier item
    (ties in database index order, the blocks come in index order)."""
    k = top_scores.shape[1]
    for r in range(scores.shape[0]):
        row = top_scores[r]
        ids = top_ids[r]
        for j in range(scores.shape[1]):
            s = np.float64(scores[r, j])
            if s > row[k - 1]:
                t = k - 1
                while t > 0 and row[t - 1] < s:
                    row[t] = row[t - 1]
                    ids[t] = ids[t - 1]
                    t -= 1
                row[t] = s
                ids[t] = base + j


@jit
def walk_spread(order_dist, order_grade, order_truth, n_items, cut, sure, tied, m, types, ks, gains, discount, out):
    """Standard deviation, lowest and highest value of every column's sum over the choices of
    the m tied candidates (of one query at one candidate count), by dynamic programming.

    The walk of :func:`walk_mean` with a richer state: (h, a), h the tied items chosen so far
    (capped at the column's cutoff K: from there on no item reaches rank K, so the contributions
    are over), a what the column's contribution needs besides h: nothing (P, R, DCG, NN-recall),
    the chosen tied relevant items so far (AP), whether a relevant item is in the list yet (RR,
    Success). An item's contribution is a function of the state alone, so:

    * moments: per state P(state), E[X 1{state}], E[X^2 1{state}], updated by each branch
      (chosen with probability (m - h) / (T - u), or not) with the contribution c of the branch:
      E[(X + c)^2] = E[X^2] + 2 c E[X] + c^2 P;
    * extremes: per state the highest / lowest sum of any choice that reaches it; a branch is
      taken only if the choice can still be completed (h <= m and m - h <= T - u: the remaining
      tied items can fill the places left). A capped state is entered only where that holds,
      and stays completable (choose what is needed among the remaining items).

    Every choice is a path through the states and every path a choice, so the extremes are
    exact; the moments are exact because the chain is the law of a uniform m-subset. Cost
    O(items walked x states), states (K + 1) x (1, 2 or K + 1).

    Parameters
    ----------
    As :func:`walk_mean` (``ks``: the cutoffs, whole list resolved to C).
    out : (n_cols, 4) float64
        Written: mean, standard deviation, lowest, highest of each column's sum.
    """
    n_cols = types.shape[0]
    for c in range(n_cols):
        kind = types[c]
        k = ks[c]
        cap = min(m, k)  # state index cap: h == cap is "k or more chosen" when m >= k
        capped = m >= k
        n_h = cap + 1
        n_a = 1
        if kind == AP_SUM:
            n_a = n_h
        elif kind == RR or kind == SUCCESS:
            n_a = 2
        p0 = filled_rows(np.empty((n_h, n_a), dtype=np.float64), 0.0)
        p1 = filled_rows(np.empty((n_h, n_a), dtype=np.float64), 0.0)
        p2 = filled_rows(np.empty((n_h, n_a), dtype=np.float64), 0.0)
        hi = filled_rows(np.empty((n_h, n_a), dtype=np.float64), -np.inf)
        lo = filled_rows(np.empty((n_h, n_a), dtype=np.float64), np.inf)
        q0 = filled_rows(np.empty((n_h, n_a), dtype=np.float64), 0.0)
        q1 = filled_rows(np.empty((n_h, n_a), dtype=np.float64), 0.0)
        q2 = filled_rows(np.empty((n_h, n_a), dtype=np.float64), 0.0)
        qhi = filled_rows(np.empty((n_h, n_a), dtype=np.float64), -np.inf)
        qlo = filled_rows(np.empty((n_h, n_a), dtype=np.float64), np.inf)
        p0[0, 0] = 1.0
        hi[0, 0] = 0.0
        lo[0, 0] = 0.0
        s = 0
        u = 0
        s_rel = 0
        for pos in range(n_items):
            d = order_dist[pos]
            if d > cut:
                continue
            if s >= k:
                break
            if kind == RR or kind == SUCCESS:
                open_state = False  # a state without a relevant item in the list yet, before the cap
                for h in range(n_h):
                    if hi[h, 0] != -np.inf and not (capped and h == cap):
                        open_state = True
                if not open_state:
                    break
            is_tied = d == cut
            g = order_grade[pos]
            rel = g > 0
            if kind == NN:
                counts = order_truth[pos] < k
            else:
                counts = rel
            for h in range(n_h):
                for a in range(n_a):
                    q0[h, a] = 0.0
                    q1[h, a] = 0.0
                    q2[h, a] = 0.0
                    qhi[h, a] = -np.inf
                    qlo[h, a] = np.inf
            left = tied - u
            for h in range(n_h):
                is_cap = capped and h == cap
                for a in range(n_a):
                    if hi[h, a] == -np.inf:
                        continue  # unreachable
                    # the contribution of this item if it is in the list, and the state after it
                    contribution = 0.0
                    new_a = a
                    r = s + 1 + h
                    if not is_cap and r <= k:
                        if kind == HITS or kind == NN:
                            contribution = 1.0 if counts else 0.0
                        elif kind == DCG:
                            contribution = gains[g] * discount[r] if rel else 0.0
                        elif kind == AP_SUM:
                            contribution = (1.0 + s_rel + a) / r if rel else 0.0
                        elif a == 0 and rel:
                            contribution = 1.0 / r if kind == RR else 1.0
                    if kind == RR or kind == SUCCESS:
                        if rel:
                            new_a = 1
                    if is_cap:
                        new_a = 0
                    if not is_tied:
                        _branch(p0, p1, p2, hi, lo, h, a, q0, q1, q2, qhi, qlo, h, new_a, 1.0, contribution)
                        continue
                    if is_cap:  # stays capped whatever is chosen; no contribution
                        _branch(p0, p1, p2, hi, lo, h, a, q0, q1, q2, qhi, qlo, h, a, 1.0, 0.0)
                        continue
                    chosen = (m - h) / np.float64(left)
                    # chosen: h + 1 <= m and the rest can still be filled (m - h - 1 <= left - 1)
                    if h + 1 <= m:
                        to_h = min(h + 1, cap)
                        to_a = new_a
                        if kind == AP_SUM and rel:
                            to_a = a + 1
                        if capped and to_h == cap:
                            to_a = 0
                        _branch(p0, p1, p2, hi, lo, h, a, q0, q1, q2, qhi, qlo, to_h, to_a, chosen, contribution)
                    # not chosen: the m - h places left fit in the left - 1 items after this one
                    if m - h <= left - 1:
                        _branch(p0, p1, p2, hi, lo, h, a, q0, q1, q2, qhi, qlo, h, a, 1.0 - chosen, 0.0)
            for h in range(n_h):
                for a in range(n_a):
                    p0[h, a] = q0[h, a]
                    p1[h, a] = q1[h, a]
                    p2[h, a] = q2[h, a]
                    hi[h, a] = qhi[h, a]
                    lo[h, a] = qlo[h, a]
            if is_tied:
                u += 1
            else:
                s += 1
                if rel:
                    s_rel += 1
        first = 0.0
        second = 0.0
        top = -np.inf
        bottom = np.inf
        for h in range(n_h):
            for a in range(n_a):
                first += p1[h, a]
                second += p2[h, a]
                if hi[h, a] > top:
                    top = hi[h, a]
                if lo[h, a] < bottom:
                    bottom = lo[h, a]
        out[c, 0] = first
        # every choice gives the same sum: exactly 0 (the difference of the moments would leave ~1e-8)
        out[c, 1] = 0.0 if top == bottom else np.sqrt(max(0.0, second - first * first))
        out[c, 2] = bottom
        out[c, 3] = top


@jit(inline="always")
def _branch(p0, p1, p2, hi, lo, h, a, q0, q1, q2, qhi, qlo, to_h, to_a, prob, c):
    """Add the branch (h, a) -> (to_h, to_a), of probability prob and contribution c."""
    q0[to_h, to_a] += prob * p0[h, a]
    q1[to_h, to_a] += prob * (p1[h, a] + c * p0[h, a])
    q2[to_h, to_a] += prob * (p2[h, a] + 2.0 * c * p1[h, a] + c * c * p0[h, a])
    if hi[h, a] + c > qhi[to_h, to_a]:
        qhi[to_h, to_a] = hi[h, a] + c
    if lo[h, a] + c < qlo[to_h, to_a]:
        qlo[to_h, to_a] = lo[h, a] + c
