"""Recall@k of an approximate nearest-neighbour index against the exact Hamming neighbours.

The exact top k of a query is cut inside a tie whenever more items share the k-th distance than
the top k has room for. Which of them are "the true neighbours" is then arbitrary, and so is
the recall of an index that returns some of them. Per query everything follows from two things:
the distance histogram of the database (one pass, the same counts as :func:`fasttie.tie_stats`,
no top-k heap) and the distances of the returned ids. With D the distance of the k-th nearest
item, ``need`` the places of the true top k left at distance D and ``n_D`` the items there, a
returned id at distance < D is in every true top k, one at distance D in a share ``need / n_D``
of them, one farther in none.
"""

from __future__ import annotations

import numpy as np

from ..codes import PackedCodes, pack_pair
from ..errors import InputError, InputTypeError
from ..result import Result
from .engine import counts_of

__all__ = ["knn_recall"]

_TIE_MODES = ("average", "optimistic", "pessimistic")
_CHUNK_BYTES = 64 << 20  # histograms and gathered codes per block of queries: memory O(block x bits)


def knn_recall(queries, database, returned_ids, k, *, ties="average", n_threads=None) -> Result:
    """Recall@k of the ids an approximate index returned, against the exact Hamming k-NN.

    The exact k nearest neighbours of each query are taken by Hamming distance over the whole
    database; where the k-th place falls inside a tie (more items at the k-th distance D than
    places left), ``ties`` says which of the tied items count as true neighbours. One pass over
    the database per block of queries, memory O(n_queries x n_bits) besides the inputs: no
    top-k heap for the truth and no n_queries x n_db matrix.

    Parameters
    ----------
    queries, database : array_like of shape (n, n_bits), or PackedCodes
        Codes as in :func:`fasttie.evaluate` (±1, 0/1, bool, or :func:`fasttie.pack_codes`
        output); both need the same ``n_bits``.
    returned_ids : array_like of int, shape (n_queries, n_returned)
        Database row ids the index returned per query, nearest first (faiss ``search``'s
        ``I``). Only the first k columns count (recall@k compares the index's top k with the
        true top k); with fewer than k columns the missing ones count as misses. -1 marks a
        missing result (faiss pads with it) and counts as a miss; an id repeated within a row's
        first k columns counts once.
    k : int
        Neighbours per query, 1 <= k <= n_db.
    ties : {"average", "optimistic", "pessimistic"}, default "average"
        "average": the expectation over the equally likely choices of the true top k inside
        the tie, ``(a + b * need / n_D) / k``, where a returned ids lie at distance < D, b at
        distance D, and the true top k holds ``need`` of the ``n_D`` items at D.
        "optimistic": every returned id at distance <= D counts, ``(a + b) / k``: the rule of
        ann-benchmarks (``ann_benchmarks/plotting/metrics.py``: ``knn_threshold`` is the k-th
        true distance + epsilon, ``get_recall_values`` counts the run's first k distances
        within it) and of big-ann-benchmarks (``benchmark/plotting/metrics.py``,
        ``compute_recall_with_distance_ties``: the ground truth extended over the ties of its
        k-th distance, intersected with the run's ids as sets), given a ground truth deep
        enough to hold the whole tie and a run without repeated ids. It is the best choice of
        the true top k when ``b <= need``, and above every choice when ``b > need``.
        "pessimistic": the worst choice of the true top k, the one that avoids the returned
        tied ids as far as it can, ``(a + max(0, need - (n_D - b))) / k``.
    n_threads : int, optional
        Threads of the histogram pass, as in :func:`fasttie.evaluate`; the results do not
        depend on it.

    Returns
    -------
    Result
        ``mean["Recall@k"]`` (k as asked; ``"R@k"`` finds it too) and ``per_query["Recall@k"]``
        (float64, shape (n_queries,)), ``n_empty`` 0, ``settings`` with ``ties``, ``k``,
        ``n_db``, ``n_bits``, ``n_returned`` and ``relevance="exact k-NN"``.

    Raises
    ------
    TypeError
        Non-integer ``returned_ids`` or ``k``, codes of the wrong kind.
    ValueError
        ``returned_ids`` not 2-D with one row per query, ids outside [-1, n_db), k outside
        [1, n_db], an unknown ``ties``, or code errors as in :func:`fasttie.evaluate`.

    Notes
    -----
    The per-query values are exact fractions rounded once: "average" is computed as the
    integer ``a * n_D + b * need`` over the integer ``k * n_D``. Without a tie at the k-th
    place (``need == n_D``) the three modes agree with the plain set recall
    ``|returned[:k] & true top k| / k``.

    Examples
    --------
    The query's nearest item is at distance 0; three more tie at distance 1 for the second
    place. An index that returned the exact match and one of the tied items has recall 1 if
    that item is "the" second neighbour, 1/2 otherwise: 2/3 on average.

    >>> import numpy as np, fasttie as ft
    >>> q = np.array([[1, 1, 1]])
    >>> db = np.array([[1, 1, 1], [1, 1, -1], [1, -1, 1], [-1, 1, 1], [-1, -1, -1]])
    >>> returned = np.array([[0, 3]])
    >>> [round(ft.knn_recall(q, db, returned, 2, ties=t).mean["Recall@2"], 4)
    ...  for t in ("average", "optimistic", "pessimistic")]
    [0.6667, 1.0, 0.5]
    """
    query_codes, db_codes = pack_pair(queries, database)
    n_queries, n_db, n_bits = query_codes.n, db_codes.n, db_codes.n_bits
    if isinstance(ties, str) and ties == "stable":
        raise InputError(
            "ties='stable' is not a recall convention: the returned ids are a set, only the true top k "
            "is cut inside a tie", argument="ties", fix="use 'average', 'optimistic' or 'pessimistic'")
    if not isinstance(ties, str) or ties not in _TIE_MODES:
        raise (InputTypeError if not isinstance(ties, str) else InputError)(
            f"{{ties}} must be one of {_TIE_MODES}, got {ties!r}", argument="ties")
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise InputTypeError(f"{{k}} must be an integer, got {k!r}", argument="k")
    if not 1 <= k <= n_db:
        raise InputError(f"{{k}} must be in [1, n_db={n_db}], got {k}", argument="k",
                         fix="ask for at most as many neighbours as the database holds")
    k = int(k)
    ids = _returned(returned_ids, n_queries, n_db)[:, :k]

    # blocks of queries bound the histograms and the gathered codes
    per_row = (n_bits + 1) * 2 * 8 + ids.shape[1] * db_codes.words.shape[1] * 8 * 3
    block = max(1, _CHUNK_BYTES // per_row)
    recall = np.empty(n_queries, dtype=np.float64)
    for lo in range(0, n_queries, block):
        hi = min(lo + block, n_queries)
        words = query_codes.words[lo:hi]
        hist = _histograms(PackedCodes(words, n_bits), db_codes, n_threads)
        recall[lo:hi] = _recall_rows(hist, _returned_distances(words, db_codes.words, ids[lo:hi]), k, ties)

    name = f"Recall@{k}"
    settings = {"ties": ties, "k": k, "n_db": n_db, "n_bits": n_bits, "n_returned": int(np.shape(returned_ids)[1]),
                "relevance": "exact k-NN"}
    mean = float(recall.mean()) if n_queries else float("nan")
    return Result({name: mean}, {name: recall}, n_queries, 0, settings)


def _returned(returned_ids, n_queries, n_db):
    """The validated ids as int64 (n_queries, n_returned)."""
    ids = np.asarray(returned_ids)
    if ids.dtype == np.bool_ or not (np.issubdtype(ids.dtype, np.integer) or ids.size == 0):
        raise InputTypeError(
            f"{{returned_ids}} must hold integer database ids, got dtype {ids.dtype}", argument="returned_ids",
            fix="pass the index's id matrix (faiss's I), or ids.astype(np.int64) where they are whole numbers")
    if ids.ndim != 2 or ids.shape[0] != n_queries:
        raise InputError(
            f"{{returned_ids}} must have shape (n_queries, n_returned) = ({n_queries}, ...), got {ids.shape}",
            argument="returned_ids", fix="one row of ids per query; for one query pass ids.reshape(1, -1)")
    ids = ids.astype(np.int64, copy=False)
    if ids.size and (ids.min() < -1 or ids.max() >= n_db):
        bad = ids[(ids < -1) | (ids >= n_db)][0]
        raise InputError(
            f"{{returned_ids}} must be database row ids in [0, {n_db}) or -1 for a missing result, got {bad}",
            argument="returned_ids", fix="map the index's ids back to rows of database")
    return ids


def _histograms(query_codes, db_codes, n_threads):
    """(n_queries, n_bits + 1) int64: database items at each distance; the counts of
    :func:`fasttie.tie_stats` with no relevant item (every item grade 0)."""
    n = query_codes.n
    nothing_relevant = (np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    counts, _, _ = counts_of(query_codes, db_codes, relevance=nothing_relevant, n_threads=n_threads)
    return counts[:, :, 0]


def _returned_distances(query_words, db_words, ids):
    """(n, k) int64 distances of the returned ids, -1 where the id is padding or repeats an
    earlier id of its row (either way it cannot match a true neighbour)."""
    ids = np.sort(ids, axis=1)  # order is irrelevant to a count; sorted, a repeat sits next to its first
    keep = ids >= 0
    keep[:, 1:] &= ids[:, 1:] != ids[:, :-1]
    gathered = db_words[np.where(keep, ids, 0)]  # (n, k, n_words)
    distances = np.bitwise_count(gathered ^ query_words[:, None, :]).sum(axis=2, dtype=np.int64)
    return np.where(keep, distances, -1)


def _recall_rows(hist, distances, k, ties):
    """Per-query recall from the distance histograms and the returned ids' distances."""
    cumulative = np.cumsum(hist, axis=1)
    rows = np.arange(hist.shape[0])
    kth = np.argmax(cumulative >= k, axis=1)  # D: the distance of the k-th nearest item
    tied = hist[rows, kth]  # n_D
    need = k - (cumulative[rows, kth] - tied)  # places of the true top k at distance D
    kept = distances >= 0
    closer = (kept & (distances < kth[:, None])).sum(axis=1)  # a: in every true top k
    at_kth = (kept & (distances == kth[:, None])).sum(axis=1)  # b: in a share need / n_D of them
    if ties == "average":
        # one rounding: integers below 2**53 convert to float exactly
        return (closer * tied + at_kth * need) / (k * tied)
    if ties == "optimistic":
        return (closer + at_kth) / k
    return (closer + np.maximum(0, need - (tied - at_kth))) / k
