"""Facades for Hamming ranking: :func:`evaluate` and :func:`search` validate and pack their
inputs, resolve the options once (:class:`~fasttie.hamming.options.HammingOptions`), then hand
the work to one of three sibling back ends, a database in memory
(:mod:`fasttie.hamming.in_memory`), on the GPU (:mod:`fasttie.hamming.gpu`, ``device="cuda"``)
or read tile by tile (:mod:`fasttie.hamming.streamed`), or to the k-NN kernels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _device
from .._kernels.knn import knn, radius_counts, radius_fill
from ..codes import PackedCodes, ShardedCodes, is_shard_list, memory_mapped, pack_codes, pack_pair, pack_whole
from ..conventions import HAMMING as _HAMMING_DOOR, takes_convention
from ..errors import InputError
from ..parallel import resolve_threads, run_blocks
from ..relevance import make_relevance
from ..result import Result
from ..finalize.values import read_only
from . import gpu
from .engine import hashing_metrics
from .in_memory import evaluate_in_memory
from .options import HammingOptions
from .streamed import evaluate_streamed

__all__ = ["evaluate", "search"]

_ro = read_only


# fasttie.dask.evaluate mirrors this signature on purpose (same inputs and options)
@takes_convention(_HAMMING_DOOR)
def evaluate(
    queries: npt.ArrayLike | PackedCodes,
    database: npt.ArrayLike | PackedCodes | ShardedCodes | Sequence[Any],
    query_labels: npt.ArrayLike | None = None,
    db_labels: npt.ArrayLike | None = None,
    *,
    relevance: tuple[npt.ArrayLike, ...] | Any | None = None,
    metrics: str | Sequence[str] = ("AP",),
    ties: str = "average",
    ap_denominator: str = "retrieved",
    gain: str = "exp2",
    empty: str = "zero",
    n_threads: int | None = None,
    curves: bool | Sequence[int] = False,
    progress: bool = False,
    device: str = "cpu",
    spread: bool | str = False,
) -> Result:
    """Tie-aware retrieval metrics of binary codes ranked by Hamming distance.

    Every query ranks the whole database by Hamming distance. Items at equal distance form a
    tie; the default ``ties="average"`` reports each metric's exact average over all orderings
    inside ties (its expectation under random tie breaking), in closed form. All metrics and
    all cutoffs come from one pass over the database per query block, with memory
    O(n_queries x n_bits x grades) besides the inputs: no n_queries x n_db matrix.

    Parameters
    ----------
    queries, database : array_like of shape (n, n_bits), or PackedCodes
        ±1 (any numeric dtype), 0/1 or bool codes, or :func:`fasttie.pack_codes` output
        (which also wraps bytes packed elsewhere). Both need the same ``n_bits``. A database
        whose words are a memory-mapped file (``pack_codes`` of a ``np.load(path,
        mmap_mode="r")`` of bytes with ``bitorder="little"``: no copy), a
        :class:`~fasttie.ShardedCodes`, or a list of 2-D arrays or ``.npy`` paths (its row
        shards) is streamed: read tile by tile, never whole, with bitwise the same results
        (docs/scale-out.md).
    query_labels, db_labels : array_like, optional
        1-D integer class ids (relevant = same class, grade 1), or 2-D multi-hot 0/1 matrices
        (grade = number of shared labels, relevant = grade > 0). For a streamed database,
        ``db_labels`` may be memory-mapped, or a list of per-shard arrays or ``.npy`` paths.
    relevance : tuple or scipy.sparse matrix, optional
        Instead of labels: per query the relevant database ids, as ``(indptr, indices)`` or
        ``(indptr, indices, grades)`` (CSR, integer grades >= 1; a grade 0 entry counts as not
        listed), or a sparse (n_queries, n_db) matrix of grades.
    metrics : str or sequence of str, default ("AP",)
        Names as in :mod:`fasttie.metrics`: ``AP``, ``AP@k``, ``nDCG@k``, ``DCG@k``, ``P@k``,
        ``R@k``, ``F1@k``, ``RR``, ``RR@k``, ``Rprec``, ``MAP@R``, ``ACG@k``, ``WAP@k``, ``P(radius=r)``,
        ``R(radius=r)``, ``F1(radius=r)``, ``AP(radius=r)`` (AP of the items within the radius,
        over ``ap_denominator``), ``NumRet(radius=r)``; aliases (``mAP@1000``, ``ndcg@10``, ``mrr``) and lists (``P@[1,10]``).
    convention : str, optional
        A hashing library's meaning of the metric names, one word for ``ties``, ``gain``,
        ``ap_denominator`` and ``empty``: "deephash" (CalcTopMap), "hashnet"
        (:data:`fasttie.conventions.CONVENTIONS`; docs/metrics.md, "Conventions").
        Options passed explicitly win over the preset.
    ties : {"average", "stable", "optimistic", "pessimistic"}, default "average"
        "average": exact expectation over orderings inside ties. "stable": ties in database
        index order, the ranking of ``np.argsort(distances, kind="stable")``. "optimistic" /
        "pessimistic": higher / lower grades first inside each tie, reproducible orders that
        are the best / worst tie order of most metrics, but not of AP@k and WAP@k with
        ``ap_denominator="retrieved"`` (see :func:`fasttie.metrics.grade_order_bounds`).
    ap_denominator : {"retrieved", "total", "min"}, default "retrieved"
        Denominator of AP@k and WAP@k: relevant items in the top k (hashing code), all relevant
        items R (trec_eval), or min(k, R) (Spark, Kaggle's ``apk``). They coincide for the whole
        list. Under ties, "retrieved" is the exact expectation of the ratio (a hypergeometric sum).
    gain : {"exp2", "linear"}, default "exp2"
        Gain of grade g in DCG / nDCG: 2**g - 1, or g (trec_eval, scikit-learn).
    empty : {"zero", "skip", "one", "error", "skip_missed"}, default "zero"
        Queries without any relevant item: "zero" gives 0 for every metric; "skip" gives NaN
        and leaves them out of the means; "one" gives 1 to the metrics that are 0/0 for them
        (AP, WAP, nDCG, R@k, RR, Rprec, R(radius), AP(radius)) and 0 to the rest; "error" raises.
        "skip_missed" is HashNet's protocol: a query counts in a metric's mean only when a
        relevant item is retrieved (in the top k, within the radius; anywhere for metrics
        without a cutoff and Rprec). Under ties its value is the metric's average over the tie
        orders that retrieve one, E[M@k] / P(hits@k >= 1); NaN where none does.
    n_threads : int, optional
        Threads for this call (default: ``FASTTIE_NUM_THREADS`` or the usable CPUs, and one
        thread for calls of under 2**20 code pairs, where waking threads costs more than it
        saves; see :mod:`fasttie.parallel`). Results are bitwise identical for any thread
        count, and several Python threads may call evaluate at once.
    curves : bool or sequence of int, default False
        Also compute mean curves into ``Result.curves``: precision and recall within every
        Hamming radius 0..n_bits (``radius``, ``precision_by_radius``, ``recall_by_radius``;
        ``retrieving_by_radius``, the share of queries with an item within the radius, and
        ``precision_by_radius_retrieving``, precision averaged over those queries only;
        ``ap_by_radius``, ``f1_by_radius``), and P@N / R@N (``n``, ``precision_at_n``,
        ``recall_at_n``) over the given N, or over 50
        log-spaced N up to n_db when True. Same pass, same tie convention and empty policy.
    device : {"cpu", "cuda", "auto"}, default "cpu"
        Where the histogram pass runs: "cuda" on an NVIDIA GPU through numba-cuda
        (``pip install 'fasttie[cuda]'``; :mod:`fasttie.hamming.gpu`), "auto" on the GPU when
        numba-cuda finds one, else the CPU. The metrics are finalized on the CPU from the same
        integer counts and ranks, so every device gives bitwise the same results; every tie
        mode runs there. Inputs already on the GPU (CuPy arrays, torch CUDA tensors, anything
        with ``__cuda_array_interface__``, or PackedCodes built from them) are read in place;
        with "cpu" they are copied to the host. ``progress`` is not shown on the GPU.
    progress : bool or "auto", default False
        True: a progress bar (tqdm) on stderr with queries done, code pairs per second and the
        time left. "auto": only when the run is expected to take more than about two seconds
        (at 1e9 code pairs x 64-bit words per second per thread) and stderr is a terminal.
        Queries are then processed in blocks of about half a second of estimated work between
        updates (the cost stays below 2%); the results are bitwise identical with and without
        progress.
    spread : bool or "range", default False
        True (with ``ties="average"``, on the CPU): also each metric's standard deviation over
        uniformly random orders inside ties (``Result.tie_std``, ``mean_tie_std``) and its
        lowest and highest value over every order inside ties (``tie_min``, ``tie_max``,
        ``mean_tie_min``, ``mean_tie_max``), exact, from the same counts (docs/ties.md, sections
        9 and 10), AP@k over the retrieved relevant items (the default here) included. WAP,
        GMAP and a few others have no exact standard deviation and raise ValueError naming
        them; ``"range"`` gives the extremes alone, which every metric has.

    Returns
    -------
    Result
        ``mean`` and ``per_query`` keyed by canonical metric names, ``n_queries``,
        ``n_empty``, ``settings``, ``curves``.

    Raises
    ------
    TypeError
        Wrong kinds of input (non-numeric codes, float class ids, unknown option types).
    ValueError
        Shapes, bit widths or label counts that do not match, values other than ±1 / 0/1,
        NaN, empty inputs, unknown metric names, cutoffs <= 0, unknown option values, and
        empty queries under ``empty="error"``.

    Notes
    -----
    Memory: besides the inputs, per query chunk (n_bits + 1) x grades int64 counts. With class
    ids, the bit-sliced pass (codes of up to 128 bits on CPUs with AVX-512) and the tiled pass
    (wider codes; from 65 bits on other CPUs) gather each tile of the database by class in cache;
    the pass of codes of up to 64 bits on other CPUs makes a class-sorted copy of the database
    words, unless the database is already ordered by class (sort it once to evaluate huge
    databases without the copy).

    Conventions: P@k, F1@k and ACG@k divide by the k asked for even past the end of the list;
    other metrics at k > n_db equal their value at n_db. Within radius r means distance <= r;
    precision with nothing within r is 0. nDCG discounts by 1/log2(1 + rank) and takes the
    ideal DCG from all grades sorted descending.

    Examples
    --------
    Two database items tie at distance 1 from the query, one relevant: the relevant item is
    first or second with equal chance, so AP is (1 + 1/2) / 2.

    >>> import numpy as np, fasttie as ft
    >>> q = np.array([[1, 1]]); db = np.array([[1, -1], [-1, 1]])
    >>> res = ft.evaluate(q, db, np.array([0]), np.array([0, 1]), metrics=["AP", "P@1"])
    >>> res.mean
    {'AP': 0.75, 'P@1': 0.5}
    >>> ft.evaluate(q, db, np.array([0]), np.array([0, 1]), metrics="AP", ties="stable").mean
    {'AP': 1.0}
    """
    parsed = hashing_metrics(metrics)
    on_gpu = _on_gpu(device)
    options = HammingOptions.resolve(parsed, ties=ties, ap_denominator=ap_denominator, gain=gain, empty=empty,
                                     curves=curves, spread=spread, device="cuda" if on_gpu else "cpu")
    streamed = _streamed(database)
    if streamed is not None and on_gpu:
        if not isinstance(database, PackedCodes):
            raise InputError("a sharded database is streamed on the CPU: use device='cpu', or concatenate the "
                             "shards (np.concatenate) for the GPU")
        streamed = None  # memory-mapped words: the GPU pass copies them to the device in chunks
    if streamed is not None:
        host_query_labels, host_db_labels, host_relevance = _host_labels(query_labels, db_labels, relevance)
        return evaluate_streamed(
            pack_whole(queries, "queries").to_host(), streamed, host_query_labels, host_db_labels, host_relevance,
            parsed, metrics, options, n_threads=n_threads, progress=progress)
    query_codes, db_codes = pack_pair(queries, database, keep_device=on_gpu)
    query_labels, db_labels, relevance = _host_labels(query_labels, db_labels, relevance)
    spec = make_relevance(query_labels, db_labels, relevance, query_codes.n, db_codes.n)
    if on_gpu:
        return gpu.evaluate(query_codes, db_codes, spec, metrics, options, n_threads=n_threads)  # keyed as asked there
    return evaluate_in_memory(query_codes, db_codes, spec, parsed, metrics, options, n_threads=n_threads,
                              progress=progress)


def _streamed(database):
    """The database as ShardedCodes where it is read tile by tile (sharded, or packed words that
    are a memory-mapped file), else None."""
    if is_shard_list(database):
        database = pack_codes(database, name="database")
    if isinstance(database, PackedCodes) and not database.on_device and memory_mapped(database.words):
        return ShardedCodes([database], name="database")
    return database if isinstance(database, ShardedCodes) else None


def _on_gpu(device):
    """Whether the passes run on the GPU: device "cuda", or "auto" with a GPU that numba-cuda finds."""
    if device not in ("cpu", "cuda", "auto"):
        raise InputError(f"device must be 'cpu', 'cuda' or 'auto', got {device!r}")
    if device == "cpu":
        return False
    return _device.available() if device == "auto" else True


def _host_labels(query_labels, db_labels, relevance):
    """Labels and listed relevance in host memory (copied from the GPU where they live there)."""
    to_host = _device.to_host  # anything not on a GPU comes back as it is
    if isinstance(relevance, tuple):
        relevance = tuple(to_host(x) for x in relevance)
    return to_host(query_labels), to_host(db_labels), relevance


def search(queries: npt.ArrayLike | PackedCodes, database: npt.ArrayLike | PackedCodes, k: int | None = None, *, radius: int | None = None,
           n_threads: int | None = None, device: str = "cpu") -> tuple[np.ndarray, ...]:
    """Exact Hamming nearest neighbours, ties broken by database index.

    Like faiss ``IndexBinaryFlat.search`` / ``range_search``, but deterministic: the result is
    the stable sort of the distances (``np.argsort(distances, kind="stable")``) cut at k, and a
    radius search keeps distance <= radius (faiss keeps < radius).

    Parameters
    ----------
    queries, database : array_like of shape (n, n_bits), or PackedCodes
        Codes as in :func:`evaluate`.
    k : int, optional
        Neighbours per query, 1 <= k <= n_db. Give exactly one of ``k`` and ``radius``.
    radius : int, optional
        Keep every item within this Hamming distance (>= 0).
    n_threads : int, optional
        Threads for this call.
    device : {"cpu", "cuda", "auto"}, default "cpu"
        Where the search runs, as in :func:`evaluate`: the same ids and distances on every
        device (returned in host memory).

    Returns
    -------
    ids : ndarray of int64, shape (n_queries, k) for k-NN, or (total,) for a radius search
    distances : ndarray of int32, same shape as ids
    offsets : ndarray of int64, shape (n_queries + 1,), only for a radius search
        Query i's neighbours are ``ids[offsets[i]:offsets[i + 1]]``.

    Raises
    ------
    ValueError
        Both or neither of k and radius, k outside [1, n_db], negative radius, or code errors
        as in :func:`evaluate`.

    Examples
    --------
    >>> import numpy as np, fasttie as ft
    >>> ids, dist = ft.search(np.array([[1, 1]]), np.array([[1, -1], [-1, 1], [1, 1]]), k=2)
    >>> ids.tolist(), dist.tolist()
    ([[2, 0]], [[0, 1]])
    """
    on_gpu = _on_gpu(device)
    query_codes, db_codes = pack_pair(queries, database, keep_device=on_gpu)
    if (k is None) == (radius is None):
        raise InputError("give exactly one of k (nearest neighbours) and radius (range search)")
    n_queries, n_bits = query_codes.n, db_codes.n_bits
    n_threads = resolve_threads(n_threads, n_queries * db_codes.n)
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= db_codes.n:
            raise InputError(f"k must be an integer in [1, n_db={db_codes.n}], got {k!r}")
        if on_gpu:
            return gpu.knn(query_codes, db_codes, int(k))
        query_words, db_words = _ro(query_codes.words), _ro(db_codes.words)
        ids = np.empty((n_queries, int(k)), dtype=np.int64)
        distances = np.empty((n_queries, int(k)), dtype=np.int32)
        run_blocks(lambda lo, hi: knn(query_words, db_words, n_bits, int(k), ids, distances, lo, hi),
                   n_queries, n_threads)
        return ids, distances
    if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or radius < 0:
        raise InputError(f"radius must be an integer >= 0, got {radius!r}")
    radius = int(min(radius, n_bits))
    if on_gpu:
        return gpu.radius_search(query_codes, db_codes, radius)
    query_words, db_words = _ro(query_codes.words), _ro(db_codes.words)
    counts = np.zeros((n_queries, radius + 1), dtype=np.int64)
    run_blocks(lambda lo, hi: radius_counts(query_words, db_words, radius, counts, lo, hi), n_queries, n_threads)
    offsets = np.concatenate([[0], np.cumsum(counts.sum(axis=1))]).astype(np.int64)
    ids = np.empty(offsets[-1], dtype=np.int64)
    distances = np.empty(offsets[-1], dtype=np.int32)
    counts, offsets_ro = _ro(counts), _ro(offsets)
    run_blocks(lambda lo, hi: radius_fill(query_words, db_words, radius, counts, offsets_ro, ids, distances, lo, hi),
               n_queries, n_threads)
    return ids, distances, offsets
