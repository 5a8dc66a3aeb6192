"""Plain-numpy (and faiss) baselines that fasttie is timed against.

(a) ``seed_mAP_tie``: the tie-aware mAP of seed 000 (``mAP_tie``), kept as published (argsort,
    a loop over the unique distances of every query, five length-Ndb temporaries per tie), with
    only the fixes needed to run it: ``np.int`` -> ``int``, the ``label2`` typo in ``sim_mat``,
    and a ``hamming`` that accepts 0/1 or bool codes as well as +-1.  ``seed_mAP_tie_chunked``
    feeds it a few queries at a time so its (chunk x Ndb) matrices stay small.
    Caveat (DESIGN.md section 6): at k < ALL the seed divides the tie-aware numerator by the
    relevant count in the top k of one arbitrary argsort order, which is not tie-aware; it is
    exact at k = ALL only.  For timing that does not matter.
(b) ``argsort_mAP_at_k``: mAP@k as hashing repositories compute it (DPSH/HashNet style):
    Hamming distances from the +-1 dot product, full ``np.argsort`` per query row, top k,
    AP = mean precision at the relevant positions of the top k (denominator = relevant in top k).
    Not tie-aware: the value depends on numpy's unstable tie order.
(c) ``faiss_build`` / ``faiss_search``: faiss ``IndexBinaryFlat`` exact top-k Hamming search on
    codes packed to uint8 bytes (``faiss_pack`` uses ``np.packbits``).  It computes no metric;
    it is the lower bound of "find the top k, then score".

Inputs: codes are (n, n_bits) arrays; the numpy baselines are fastest with float32 +-1 codes
(``hamming`` converts 0/1 / bool / other dtypes on every call otherwise).  Labels are 1-D class
ids (``sparse=True`` in the seed's vocabulary).

Run ``python asv_bench/benchmarks/data/baselines.py`` for the self-check.
"""

from __future__ import annotations

import itertools

import numpy as np

# --------------------------------------------------------------------------------------------
# (a) seed 000, made runnable
# --------------------------------------------------------------------------------------------


def _as_pm1(codes: np.ndarray) -> np.ndarray:
    """float32 +-1 view of +-1 / 0-1 / bool codes (no copy for float32 +-1 input)."""
    codes = np.asarray(codes)
    if codes.dtype == np.float32:
        return codes  # trusted to be +-1 (the benchmark prepares it once)
    if codes.dtype == bool or codes.min() >= 0:  # 0/1 codes
        return codes.astype(np.float32) * 2 - 1
    return codes.astype(np.float32)


def hamming(A, B=None):
    """A, B: [None, bit], +-1 (seed convention), 0/1 or bool. Returns int32 distances.

    Seed: ``(bit - A.dot(B.T)) // 2`` on +-1 codes.  Fixed to accept 0/1 codes, and computed
    with a float32 BLAS product (exact for +-1 codes up to 2**24 bits).
    """
    if B is None:
        B = A
    A, B = _as_pm1(A), _as_pm1(B)
    bit = A.shape[1]
    D = A.dot(B.T)  # float32 [nA, nB]
    np.subtract(bit, D, out=D)
    D *= 0.5
    return D.astype(np.int32)


def sim_mat(label, label_2=None, sparse=False):
    """Seed ``sim_mat`` (fix: ``label2`` -> ``label_2`` in the sparse branch)."""
    if label_2 is None:
        label_2 = label
    if sparse:
        S = label[:, np.newaxis] == label_2[np.newaxis, :]
    else:
        S = np.dot(label, label_2.T) > 0
    return S.astype(label.dtype)


def seed_mAP_tie(qH, rH, qL, rL, k=-1, sparse=False):
    """tie-aware mAP, seed 000 ``mAP_tie`` as published (fix: ``np.int`` -> ``int``).

    Returns the mean over the given queries; queries with no relevant item in the top k add 0.
    """
    n, m = qH.shape[0], rH.shape[0]
    if (k < 0) or (k > m):
        k = m
    D = hamming(qH, rH)
    Rnk = np.argsort(D)
    S = sim_mat(qL, rL, sparse)
    AP = 0
    pos = np.arange(m)  # 0-base
    # t_fi_1[k]: t_{f(k) - 1}
    t_fi_1 = np.zeros([m])
    # r_fi[k]: #relevant samples in the tie where k lies in
    r_fi = np.zeros([m])
    # n_fi[k]: #samples in the tie where k lies in
    n_fi = np.zeros([m])
    # R_fi_1[k]: prefix sum of r_fi (exclude r_fi[k])
    R_fi_1 = np.zeros([m])
    for d, s, rnk in zip(D, S, Rnk):
        s_sort = s[rnk]
        Rm = s_sort[:k].sum()  # #rel in top-k
        if 0 == Rm:
            continue
        d_unique = np.unique(d)  # ascending
        d_sort = d[rnk]
        _R_fi_1 = 0  # R_{f(i) - 1}
        for _d in d_unique:
            tie_idx = d_sort == _d
            t_fi_1[tie_idx] = pos[tie_idx].min()
            _r_fi = s_sort[tie_idx].sum()
            r_fi[tie_idx] = _r_fi
            n_fi[tie_idx] = tie_idx.astype(int).sum()
            R_fi_1[tie_idx] = _R_fi_1  # exclude `_r_fi`
            _R_fi_1 += _r_fi

        # deal with invalid terms
        n_fi_1, r_fi_1 = n_fi - 1, r_fi - 1
        idx_invalid = n_fi_1 == 0
        n_fi_1[idx_invalid] = 1
        r_fi_1[idx_invalid] = 0
        # in computing (i - t_{f(i)-1} - 1), the last `-1` is merged: pos = i - 1
        kernel = (R_fi_1 + (pos - t_fi_1) * r_fi_1 / n_fi_1 + 1) * r_fi / n_fi / (pos + 1)
        AP += kernel[:k].sum() / Rm

    return AP / n


def seed_mAP_tie_chunked(qH, rH, qL, rL, k=-1, chunk=20):
    """``seed_mAP_tie`` over query chunks (class-id labels); same value, bounded memory.

    Peak extra memory ~ chunk x Ndb x (4 B distances + 8 B argsort + 8 B similarity).
    """
    n = qH.shape[0]
    total = 0.0
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        total += seed_mAP_tie(qH[start:stop], rH, qL[start:stop], rL, k=k, sparse=True) * (
            stop - start
        )
    return total / n


# --------------------------------------------------------------------------------------------
# (b) argsort-based mAP@k, as hashing repositories compute it
# --------------------------------------------------------------------------------------------


def argsort_AP_at_k(q_codes, db_codes, q_labels, db_labels, k=1000, chunk=20):
    """Per-query AP@k (denominator = relevant in top k; 0 for queries with none), shape (n,).

    Per chunk of queries: Hamming distances by the +-1 dot product, full ``np.argsort`` of each
    row (numpy's default, unstable: the tie order is arbitrary), top k, then AP.
    """
    n, m = q_codes.shape[0], db_codes.shape[0]
    k = m if (k is None or k < 0 or k > m) else k
    ranks = np.arange(1, k + 1, dtype=np.float64)
    ap = np.zeros(n, dtype=np.float64)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        D = hamming(q_codes[start:stop], db_codes)
        top = np.argsort(D, axis=1)[:, :k]
        rel = db_labels[top] == q_labels[start:stop, None]
        hits = np.cumsum(rel, axis=1)
        n_rel = hits[:, -1]
        prec_sum = (hits / ranks * rel).sum(axis=1)
        ap[start:stop] = np.where(n_rel > 0, prec_sum / np.maximum(n_rel, 1), 0.0)
    return ap


def argsort_mAP_at_k(q_codes, db_codes, q_labels, db_labels, k=1000, chunk=20):
    """Mean of ``argsort_AP_at_k``."""
    return float(argsort_AP_at_k(q_codes, db_codes, q_labels, db_labels, k=k, chunk=chunk).mean())


# --------------------------------------------------------------------------------------------
# (c) faiss IndexBinaryFlat
# --------------------------------------------------------------------------------------------


def faiss_pack(codes) -> np.ndarray:
    """+-1 / 0-1 / bool (n, n_bits) -> (n, ceil(n_bits / 8)) uint8 with ``np.packbits``."""
    return np.packbits(np.asarray(codes) > 0, axis=1)


def faiss_build(db_bytes: np.ndarray, n_bits: int):
    """An ``IndexBinaryFlat`` holding the packed database (n_bits must be a multiple of 8)."""
    import faiss

    index = faiss.IndexBinaryFlat(n_bits)
    index.add(np.ascontiguousarray(db_bytes, dtype=np.uint8))
    return index


def faiss_search(index, q_bytes: np.ndarray, k: int = 1000, n_threads: int | None = None):
    """Exact top-k Hamming search; returns (distances int32, ids int64), each (n, k)."""
    import faiss

    if n_threads is not None:
        faiss.omp_set_num_threads(int(n_threads))
    return index.search(np.ascontiguousarray(q_bytes, dtype=np.uint8), k)


# --------------------------------------------------------------------------------------------
# self-check
# --------------------------------------------------------------------------------------------


def _plain_AP(rel_in_order: np.ndarray, k: int, denominator: str = "retrieved") -> float:
    rel = np.asarray(rel_in_order[:k], dtype=float)
    hits = np.cumsum(rel)
    num = float((hits / np.arange(1, len(rel) + 1) * rel).sum())
    den = hits[-1] if denominator == "retrieved" else float(np.sum(rel_in_order))
    return num / den if den > 0 else 0.0


def brute_force_tie_AP(dist: np.ndarray, rel: np.ndarray) -> float:
    """AP@ALL averaged over every ordering of the items inside each tie (enumeration)."""
    order = np.argsort(dist, kind="stable")
    groups = [list(g) for _, g in itertools.groupby(order, key=lambda i: dist[i])]
    values = []
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        seq = [i for p in perms for i in p]
        values.append(_plain_AP(rel[seq], len(seq), "total"))
    return float(np.mean(values))


def _self_check(seed: int = 0) -> None:
    rng = np.random.default_rng(seed)

    # 1. seed mAP_tie at k = ALL equals the enumerated tie average (ties everywhere: 3 bits)
    n_q, n_db, n_bits, n_cls = 6, 8, 3, 3
    qH = rng.integers(0, 2, size=(n_q, n_bits)) * 2 - 1
    rH = rng.integers(0, 2, size=(n_db, n_bits)) * 2 - 1
    qL = rng.integers(0, n_cls, size=n_q)
    rL = rng.integers(0, n_cls, size=n_db)
    D = hamming(qH, rH)
    D_ref = (rH[None, :, :] != qH[:, None, :]).sum(-1)
    assert np.array_equal(D, D_ref), "hamming(+-1) wrong"
    assert np.array_equal(hamming((qH > 0), (rH > 0).astype(np.uint8)), D_ref), "hamming(0/1) wrong"
    brute = np.mean([brute_force_tie_AP(D_ref[i], rL == qL[i]) for i in range(n_q)])
    got = seed_mAP_tie(qH, rH, qL, rL, k=-1, sparse=True)
    got_chunked = seed_mAP_tie_chunked(qH.astype(np.float32), rH.astype(np.float32), qL, rL, chunk=4)
    print(f"seed mAP_tie@ALL {got:.15f}  chunked {got_chunked:.15f}  enumerated {brute:.15f}")
    assert abs(got - brute) < 1e-12 and abs(got_chunked - brute) < 1e-12

    # 2. argsort mAP@k equals a per-query loop on the same (numpy) order
    n_q, n_db, n_bits = 7, 300, 16
    qH = (rng.integers(0, 2, size=(n_q, n_bits)) * 2 - 1).astype(np.float32)
    rH = (rng.integers(0, 2, size=(n_db, n_bits)) * 2 - 1).astype(np.float32)
    qL = rng.integers(0, 4, size=n_q)
    rL = rng.integers(0, 4, size=n_db)
    D = hamming(qH, rH)
    for k in (1, 10, 50, n_db):
        ref = np.mean([_plain_AP(rL[np.argsort(D[i])] == qL[i], k) for i in range(n_q)])
        got = argsort_mAP_at_k(qH, rH, qL, rL, k=k, chunk=3)
        assert abs(got - ref) < 1e-12, (k, got, ref)
    print(f"argsort mAP@k matches a per-query loop for k in (1, 10, 50, {n_db})")

    # 3. tie-free list: argsort mAP@ALL == seed mAP_tie@ALL == plain AP
    n_bits = 12
    q = np.ones((1, n_bits), dtype=np.float32)
    db = np.ones((n_bits + 1, n_bits), dtype=np.float32)
    for d in range(n_bits + 1):
        db[d, :d] = -1  # item d at distance d: all distances distinct
    perm = rng.permutation(n_bits + 1)
    db = db[perm]
    rL = rng.integers(0, 2, size=n_bits + 1)
    qL = np.array([1])
    a = argsort_mAP_at_k(q, db, qL, rL, k=-1)
    b = seed_mAP_tie(q, db, qL, rL, k=-1, sparse=True)
    print(f"tie-free: argsort mAP@ALL {a:.15f}  seed mAP_tie@ALL {b:.15f}")
    assert abs(a - b) < 1e-12

    # 4. faiss distances equal the numpy Hamming distances
    try:
        import faiss  # noqa: F401
    except ImportError:
        print("faiss not installed: skipped")
        return
    n_bits = 64
    qH = (rng.integers(0, 2, size=(20, n_bits)) * 2 - 1).astype(np.float32)
    rH = (rng.integers(0, 2, size=(2000, n_bits)) * 2 - 1).astype(np.float32)
    index = faiss_build(faiss_pack(rH), n_bits)
    fd, fi = faiss_search(index, faiss_pack(qH), k=100, n_threads=1)
    D = hamming(qH, rH)
    assert np.array_equal(np.sort(D, axis=1)[:, :100], fd), "faiss distances differ"
    assert np.array_equal(np.take_along_axis(D, fi, axis=1), fd), "faiss ids inconsistent"
    print("faiss IndexBinaryFlat top-100 distances match numpy")
    print("self-check OK")


if __name__ == "__main__":
    _self_check()
