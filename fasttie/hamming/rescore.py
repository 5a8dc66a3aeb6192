"""Binary quantization pipelines evaluated exactly: Hamming candidates, float rescoring, and the
ties at the candidate cut (:func:`rescore_evaluate`, :func:`min_oversampling`).

Embeddings quantized to one bit a dimension are searched by Hamming distance for C candidates,
which are rescored with the float vectors; the top k of that order is returned (Qdrant's binary
quantization with oversampling, sentence-transformers' ``quantize_embeddings`` + rescoring,
faiss ``IndexBinaryFlat`` + a float rescoring). The C-th candidate almost always falls inside a
tie of Hamming distances, so which of the tied items become candidates is arbitrary, and the
final top k moves with it. ``ties="average"`` reports each metric's exact expectation over
every equally likely choice; the kernels are in :mod:`fasttie._kernels.rescore`, the closed
forms in docs/binary-quantization.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .._kernels import rescore as _k
from ..options import HAMMING_TIES
from ..codes import PackedCodes, pack_pair
from ..errors import InputError, InputTypeError
from ..metrics import parse_metrics
from ..metrics.families import asked_names
from ..parallel import resolve_threads, run_blocks
from ..relevance import make_relevance
from ..result import Result
from ..finalize.values import check_options, gain_table, read_only

__all__ = ["rescore_evaluate", "RescoreSweep", "min_oversampling"]

_NN = re.compile(r"^\s*nn[-_ ]?recall\s*@\s*(\d+)\s*$", re.IGNORECASE)
_SUPPORTED = {"P": _k.HITS, "R": _k.HITS, "nDCG": _k.DCG, "DCG": _k.DCG, "AP": _k.AP_SUM, "RR": _k.RR,
              "Success": _k.SUCCESS}
_KINDS = {"class": _k.CLASS, "multihot": _k.MULTIHOT, "listed": _k.LISTED}
_BLOCK_BYTES = 32 << 20  # the (block, n_db) uint16 distance buffer of one thread
_TRUTH_BYTES = 64 << 20  # float scores of one block of the exact float search


@dataclass(frozen=True)
class _Column:
    name: str  # canonical key
    base: str  # P, R, nDCG, DCG, AP, RR, Success, NN-recall
    k: int | None  # None: the whole list of C candidates


def _columns(metrics):
    """(columns, asked -> canonical) from metric names (the grammar of fasttie.evaluate plus NN-recall@k)."""
    if isinstance(metrics, str):
        metrics = [metrics]
    try:
        metrics = list(metrics)
    except TypeError:
        raise InputTypeError(f"{{metrics}} must be a name or a list of names, got {type(metrics).__name__}",
                             argument="metrics") from None
    if not metrics:
        raise InputError("{metrics} is empty", argument="metrics", fix="ask for e.g. ['nDCG@10', 'NN-recall@10']")
    columns, asked = {}, {}
    for name in metrics:
        if not isinstance(name, str):
            raise InputTypeError(f"{{metrics}} must hold metric names, got {name!r}", argument="metrics")
        nn = _NN.match(name)
        if nn:
            k = int(nn.group(1))
            if k < 1:
                raise InputError(f"metric {name!r}: the cutoff must be >= 1", argument="metrics")
            key = f"NN-recall@{k}"
            columns[key] = _Column(key, "NN-recall", k)
            asked[name] = key
            continue
        for metric in parse_metrics([name]):
            plain = (metric.radius is None and metric.recall is None and metric.p is None and metric.rel is None
                     and metric.gain is None and not metric.judged_only and not metric.relative
                     and metric.beta is None)
            if metric.base not in _SUPPORTED or not plain:
                raise InputError(
                    f"{{metrics}}: metric {metric.name!r} is not available in rescore_evaluate", argument="metrics",
                    fix="use P@k, R@k, nDCG@k, DCG@k, AP@k, AP, RR, RR@k, Success@k or NN-recall@k")
            columns[metric.name] = _Column(metric.name, metric.base, metric.k)
        asked.update(asked_names([name], diversity=False))
    return list(columns.values()), asked


def _candidate_list(candidates, n_db):
    single = not isinstance(candidates, (list, tuple, np.ndarray))
    values = [candidates] if single else list(candidates)
    if not values:
        raise InputError("{candidates} is empty", argument="candidates", fix="pass an int or a list of ints")
    for c in values:
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
            raise InputTypeError(f"{{candidates}} must be an int or a list of ints, got {c!r}", argument="candidates")
        if c < 1:
            raise InputError(f"{{candidates}} must be >= 1, got {c}", argument="candidates")
    return single, [int(c) for c in values], [min(int(c), n_db) for c in values]


def _vectors(query_vectors, db_vectors, n_queries, n_db):
    q = np.asarray(query_vectors)
    d = np.asarray(db_vectors)
    for name, x, n in (("query_vectors", q, n_queries), ("db_vectors", d, n_db)):
        if x.dtype not in (np.float32, np.float64):
            raise InputTypeError(f"{{{name}}} must be float32 or float64, got dtype {x.dtype}", argument=name,
                                 fix=f"pass {name}.astype(np.float32)")
        if x.ndim != 2 or x.shape[0] != n:
            raise InputError(f"{{{name}}} must have shape ({n}, dim) (one row per code), got {x.shape}",
                             argument=name)
    if q.shape[1] != d.shape[1]:
        raise InputError(f"{{query_vectors}} have {q.shape[1]} dimensions but {{db_vectors}} have {d.shape[1]}",
                         argument=("query_vectors", "db_vectors"))
    if q.dtype != d.dtype:
        raise InputTypeError(f"{{query_vectors}} are {q.dtype} but {{db_vectors}} are {d.dtype}",
                             argument=("query_vectors", "db_vectors"), fix="pass both in one float dtype")
    if not np.isfinite(q).all():
        raise InputError("{query_vectors} hold NaN or infinite values", argument="query_vectors")
    return read_only(np.ascontiguousarray(q)), read_only(np.ascontiguousarray(d))


def float_top_k(query_vectors: np.ndarray, db_vectors: np.ndarray, k: int, n_threads: int = 1) -> np.ndarray:
    """Exact float top k per query by inner product over the whole database, ties in database
    index order: (n_queries, k) int64 ids, best first. Scores in the vectors' dtype by BLAS
    (the arithmetic of faiss ``IndexFlatIP``), database in blocks (no n_queries x n_db array)."""
    n_queries, n_db = query_vectors.shape[0], db_vectors.shape[0]
    ids = np.full((n_queries, k), n_db, dtype=np.int64)
    if k == 0 or n_queries == 0:
        return ids
    top = np.full((n_queries, k), -np.inf, dtype=np.float64)
    item_bytes = query_vectors.dtype.itemsize
    q_block = max(1, min(n_queries, 256))
    db_block = max(1024, _TRUTH_BYTES // (q_block * item_bytes))

    def block(lo, hi):
        for q_lo in range(lo, hi, q_block):
            q_hi = min(q_lo + q_block, hi)
            for base in range(0, n_db, db_block):
                scores = query_vectors[q_lo:q_hi] @ db_vectors[base:base + db_block].T
                # float64 rows (exact for float32 scores): one compiled top_k_block for both dtypes
                _k.top_k_block(scores.astype(np.float64, copy=False), base, top[q_lo:q_hi], ids[q_lo:q_hi])

    run_blocks(block, n_queries, n_threads, blocks_per_thread=1)
    return ids


def _cuts(hist, values):
    """(cut, sure, tied, m) per query and candidate count, (n_queries, n_c) int64 each."""
    cumulative = np.cumsum(hist, axis=1)
    cols = []
    for c in values:
        cut = np.argmax(cumulative >= c, axis=1)
        rows = np.arange(hist.shape[0])
        tied = hist[rows, cut]
        sure = cumulative[rows, cut] - tied
        cols.append((cut, sure, tied, c - sure))
    return tuple(np.ascontiguousarray(np.stack([col[t] for col in cols], axis=1), dtype=np.int64) for t in range(4))


def _ideal_dcg(totals, gains, ks, n_db):
    """(n_queries, len(ks)) ideal DCG@k from the grade totals (grades sorted descending)."""
    top = int(max(ks)) if len(ks) else 1
    ranks = np.arange(1, top + 1, dtype=np.float64)
    cumulative = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(1.0 + ranks))])
    out = np.zeros((totals.shape[0], len(ks)))
    start = np.zeros(totals.shape[0], dtype=np.int64)
    for g in range(totals.shape[1] - 1, 0, -1):
        end = start + totals[:, g]
        for c, k in enumerate(ks):
            out[:, c] += gains[g] * (cumulative[np.minimum(end, k)] - cumulative[np.minimum(start, k)])
        start = end
    return out


@dataclass
class RescoreSweep:
    """The metrics of a pipeline at several candidate counts, from one Hamming pass.

    Attributes
    ----------
    candidates : list of int
        The candidate counts, as asked.
    results : list of Result
        One per candidate count, keyed as :func:`fasttie.evaluate` keys its metrics.
    settings : dict
    """

    candidates: list[int]
    results: list[Result]
    settings: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, candidates: int) -> Result:
        if candidates not in self.candidates:
            raise KeyError(f"no result for {candidates!r} candidates; the sweep has {self.candidates}")
        return self.results[self.candidates.index(candidates)]

    def curve(self, metric: str, which: str = "mean") -> np.ndarray:
        """ndarray of float64: the metric's mean at each candidate count; ``which``: "mean",
        "min" or "max" (the lowest / highest over the tie choices; needs spread=True)."""
        field_name = {"mean": "mean", "min": "mean_tie_min", "max": "mean_tie_max"}.get(which)
        if field_name is None:
            raise InputError(f"{{which}} must be 'mean', 'min' or 'max', got {which!r}", argument="which")
        return np.array([getattr(r, field_name)[metric] for r in self.results], dtype=np.float64)


def min_oversampling(sweep: RescoreSweep, metric: str, target: float, *, k: int | None = None,
                     ties: str = "pessimistic") -> float | None:
    """The smallest oversampling factor (candidates / k) of a sweep that reaches a target.

    Parameters
    ----------
    sweep : RescoreSweep
        From :func:`rescore_evaluate` with a list of candidate counts.
    metric : str
        A metric key of the sweep, e.g. ``"nDCG@10"``.
    target : float
        The mean the metric must reach (>=).
    k : int, optional
        Items the pipeline returns; default the metric's cutoff.
    ties : {"pessimistic", "average", "optimistic"}, default "pessimistic"
        Which mean must reach the target: the worst choice of the tied candidates (per query
        the lowest value over every choice, ``mean_tie_min``; the sweep needs spread=True),
        the exact average, or the best.

    Returns
    -------
    float or None
        candidates / k of the smallest candidate count whose mean reaches the target; None
        where none does.
    """
    if not isinstance(sweep, RescoreSweep):
        raise InputTypeError("{sweep} must be a RescoreSweep (rescore_evaluate with a list of candidates)",
                             argument="sweep")
    which = {"pessimistic": "min", "average": "mean", "optimistic": "max"}.get(ties)
    if which is None:
        raise InputError(f"{{ties}} must be 'pessimistic', 'average' or 'optimistic', got {ties!r}", argument="ties")
    if which != "mean" and not sweep.results[0].mean_tie_min:
        raise InputError("ties={ties!r} needs the extremes over the tie choices", argument="ties",
                         fix="run rescore_evaluate(..., spread=True) or pass ties='average'")
    if k is None:
        found = re.search(r"@\s*(\d+)\s*$", metric)
        if not found:
            raise InputError(f"{{k}} is needed: metric {metric!r} has no cutoff", argument="k")
        k = int(found.group(1))
    values = sweep.curve(metric, which)
    order = np.argsort(sweep.candidates, kind="stable")
    for index in order:
        if values[index] >= target:
            return sweep.candidates[index] / k
    return None


def rescore_evaluate(query_codes: npt.ArrayLike | PackedCodes, db_codes: npt.ArrayLike | PackedCodes,
                     query_vectors: npt.ArrayLike, db_vectors: npt.ArrayLike, *, candidates: int | Sequence[int],
                     metrics: str | Sequence[str], query_labels: npt.ArrayLike | None = None,
                     db_labels: npt.ArrayLike | None = None, qrels: tuple[npt.ArrayLike, ...] | Any | None = None,
                     ties: str = "average", spread: bool = False, gain: str = "exp2", ap_denominator: str = "total",
                     empty: str = "zero", n_threads: int | None = None) -> Result | RescoreSweep:
    """Exact metrics of a binary-quantization pipeline: Hamming candidates, float rescoring.

    Stage 1 ranks the database by the Hamming distance of the codes and keeps ``candidates``
    items per query; stage 2 orders the candidates by the inner product of the float vectors
    (descending; equal products in database index order) and the metrics read the top of that
    order. Where the candidate cut falls inside a tie of Hamming distances (A items closer than
    the cut distance d*, T items at d*, m = C - A places left), ``ties`` says which m of the T
    tied items are candidates.

    Parameters
    ----------
    query_codes, db_codes : array_like of shape (n, n_bits), or PackedCodes
        Binary codes as in :func:`fasttie.evaluate` (±1, 0/1, bool, :func:`fasttie.pack_codes`).
    query_vectors, db_vectors : ndarray of float32 or float64, shape (n, dim)
        The float vectors of the same items (normalize them for cosine similarity). Inner
        products are computed in float64 (eight interleaved partial sums).
    candidates : int or list of int
        Candidates per query (oversampling x k); a list evaluates every count from one Hamming
        pass and returns a :class:`RescoreSweep`. Counts above n_db keep the whole database.
    metrics : str or sequence of str
        ``P@k``, ``R@k``, ``nDCG@k``, ``DCG@k``, ``AP@k``, ``AP``, ``RR``, ``RR@k``, ``Success@k``
        (the grammar of :func:`fasttie.evaluate`: ``ndcg@[5,10]``, ``mrr``) and ``NN-recall@k``:
        the share of the exact float top k (inner product over the whole database, ties in index
        order) found in the pipeline's top k. Metrics without a cutoff read the C candidates.
    query_labels, db_labels : array_like, optional
        Class ids (1-D) or multi-hot labels (2-D), as in :func:`fasttie.evaluate`.
    qrels : tuple or scipy.sparse matrix, optional
        Graded relevance per query: ``(indptr, indices[, grades])`` or a sparse (n_queries,
        n_db) matrix (``relevance=`` of :func:`fasttie.evaluate`). Not needed for NN-recall alone.
    ties : {"average", "stable", "optimistic", "pessimistic"}, default "average"
        "average": the exact expectation over every equally likely choice of the m tied
        candidates. "stable": the first m tied items in database index order (the candidates of
        ``np.argsort(distances, kind="stable")[:C]``). "optimistic" / "pessimistic": per query
        and metric the highest / lowest value over every choice (needs a metric with an exact
        method, see Notes).
    spread : bool, default False
        With ``ties="average"``: also the exact standard deviation over the choices
        (``tie_std``) and the lowest / highest values (``tie_min``, ``tie_max``).
    gain : {"exp2", "linear"}, default "exp2"
        Gain of a grade in DCG.
    ap_denominator : {"total", "min"}, default "total"
        AP@k's denominator: every relevant item R, or min(k, R). (The hashing convention,
        relevant items retrieved, is a ratio of two random counts under these ties and is not
        offered.)
    empty : {"zero", "skip"}, default "zero"
        Queries without a relevant item: 0, or NaN and left out of the means (NN-recall has
        no empty queries).
    n_threads : int, optional
        Threads for this call; results do not depend on it.

    Returns
    -------
    Result or RescoreSweep
        A Result (keys as :func:`fasttie.evaluate`) for one candidate count, a
        :class:`RescoreSweep` for a list.

    Raises
    ------
    TypeError, ValueError
        Naming the argument: codes or vectors of the wrong kind or shape, unknown metrics,
        candidates < 1, unknown options, a metric without an exact method for the ties asked.

    Notes
    -----
    Exact forms (docs/binary-quantization.md): an item's rank in the final list is 1 + (sure
    items above it in the float order) + H, H the chosen tied items above it; walking the float
    order, the distribution of H is a Markov chain (the next tied item is chosen with
    probability (m - h) / (T - u) after h of u), whose states past the deepest cutoff are
    dropped. RR and Success carry a second chain with no relevant item included yet; AP@k uses
    E[chosen relevant above | H = h] = h u_rel / u.

    ``spread=True`` and ``ties="optimistic"/"pessimistic"``: a dynamic program over the walk whose
    state is h (capped at the cutoff k) and what the metric needs besides (RR, Success: a relevant
    item listed yet; AP@k: the chosen relevant tied items so far). Every choice is a path and
    every path a choice, so the extremes are exact, and the chain's moments give the variance.
    Cost per query and count O(items walked x k) (x 2 for RR and Success, x k for AP@k): every
    metric has an exact polynomial method, but AP and RR without a cutoff read the C candidates
    (k = C), which costs far more than AP@k and RR@k at large C.

    Memory: per thread a (block, n_db) uint16 buffer of distances (about 32 MB), the collected
    items at distance <= d* of the largest count, and their scores; no n_queries x n_db array.
    The float database is read only for the collected items and, for NN-recall, for the exact
    float search.

    Examples
    --------
    Four items, the query's code is at distance 1 from items 1, 2, 3; two candidates: item 0
    (distance 0) and one of the three tied. Item 3 is the only relevant one and the best by
    inner product: it is a candidate in one choice of three.

    >>> import numpy as np, fasttie as ft
    >>> qc = np.array([[1, 1, 1]]); dbc = np.array([[1, 1, 1], [1, 1, -1], [1, -1, 1], [-1, 1, 1]])
    >>> qv = np.array([[1.0, 0.0]]); dbv = np.array([[0.1, 0], [0.2, 0], [0.3, 0], [0.9, 0]])
    >>> res = ft.rescore_evaluate(qc, dbc, qv, dbv, candidates=2, metrics=["P@1", "RR"],
    ...                           query_labels=np.array([1]), db_labels=np.array([0, 0, 0, 1]))
    >>> {k: round(v, 4) for k, v in res.mean.items()}
    {'P@1': 0.3333, 'RR': 0.3333}
    """
    columns, asked = _columns(metrics)
    check_options(ties=ties, tie_modes=HAMMING_TIES, gain=gain)
    if ap_denominator not in ("total", "min"):
        raise InputError(f"{{ap_denominator}} must be 'total' or 'min', got {ap_denominator!r}",
                         argument="ap_denominator",
                         fix="'retrieved' is a ratio of random counts under candidate ties: use 'total' or 'min'")
    if empty not in ("zero", "skip"):
        raise InputError(f"{{empty}} must be 'zero' or 'skip', got {empty!r}", argument="empty")
    if not isinstance(spread, (bool, np.bool_)):
        raise InputTypeError(f"{{spread}} must be True or False, got {spread!r}", argument="spread")
    if spread and ties != "average":
        raise InputError(f"{{spread}}=True needs ties='average', got ties={ties!r}", argument="spread")
    packed_q, packed_db = pack_pair(query_codes, db_codes)
    n_queries, n_db, n_bits = packed_q.n, packed_db.n, packed_db.n_bits
    if n_bits > np.iinfo(np.uint16).max:
        raise InputError(f"{{query_codes}} have {n_bits} bits; rescore_evaluate keeps distances as uint16 "
                         "(at most 65535 bits)", argument=("query_codes", "db_codes"))
    single, asked_counts, counts = _candidate_list(candidates, n_db)
    q_vec, db_vec = _vectors(query_vectors, db_vectors, n_queries, n_db)
    needs_relevance = any(c.base != "NN-recall" for c in columns)
    if needs_relevance or qrels is not None or query_labels is not None:
        spec = make_relevance(query_labels, db_labels, qrels, n_queries, n_db)
    else:  # NN-recall only: nothing is relevant
        spec = make_relevance(None, None, (np.zeros(n_queries + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)),
                              n_queries, n_db)
    for col in columns:
        if col.base == "NN-recall" and col.k > n_db:
            raise InputError(f"metric {col.name!r}: k must be at most n_db={n_db}", argument="metrics")
    extremes = bool(spread) or ties in ("optimistic", "pessimistic")
    n_threads = resolve_threads(n_threads, n_queries * n_db)

    types = np.array([_SUPPORTED.get(c.base, _k.NN) for c in columns], dtype=np.int64)
    ks = np.array([0 if c.k is None else c.k for c in columns], dtype=np.int64)
    kmax = int(max(max(counts) if (ks == 0).any() else 0, ks.max(), 1))
    gains = gain_table(gain, spec.n_grades)
    discount = np.zeros(kmax + 1)
    discount[1:] = 1.0 / np.log2(1.0 + np.arange(1, kmax + 1))
    nn_k = max([c.k for c in columns if c.base == "NN-recall"], default=0)
    truth = float_top_k(q_vec, db_vec, nn_k, n_threads)

    kind = _KINDS[spec.kind]
    sums = np.zeros((n_queries, len(counts), len(columns)))
    spread_sums = np.zeros((n_queries if extremes else 0, len(counts), len(columns), 4))
    hist_all = np.zeros((n_queries, n_bits + 1), dtype=np.int64)
    block = max(1, min(64, _BLOCK_BYTES // max(1, 2 * n_db)))
    q_words, db_words = read_only(packed_q.words), read_only(packed_db.words)
    types_ro, ks_ro, gains_ro, discount_ro = (read_only(x) for x in (types, ks, gains, discount))
    count_array = np.array(counts, dtype=np.int64)

    def run(lo, hi):
        dist = np.empty((block, n_db), dtype=np.uint16)
        for b_lo in range(lo, hi, block):
            b_hi = min(b_lo + block, hi)
            hist = hist_all[b_lo:b_hi]
            _k.hamming_block(q_words[b_lo:b_hi], db_words, 0, b_hi - b_lo, dist, hist)
            cuts, sures, tieds, ms = _cuts(hist, count_array)
            limits = cuts.max(axis=1)
            within = np.cumsum(hist, axis=1)[np.arange(b_hi - b_lo), limits]
            offsets = np.concatenate([[0], np.cumsum(within)]).astype(np.int64)
            ids = np.empty(offsets[-1], dtype=np.int64)
            distances = np.empty(offsets[-1], dtype=np.int64)
            _k.collect_block(dist, limits, offsets, ids, distances, 0, b_hi - b_lo)
            rel = spec.rows(b_lo, b_hi)
            # read-only views throughout: one compiled signature per vector dtype, whatever the relevance kind
            labels = (read_only(np.ascontiguousarray(x)) for x in (
                rel.query_labels, rel.db_labels, rel.query_label_words, rel.db_label_words, rel.indptr,
                rel.indices, rel.grades, truth[b_lo:b_hi], offsets, ids, distances, cuts, sures, tieds, ms))
            (query_labels, db_labels, query_label_words, db_label_words, indptr, indices, grades, truth_rows,
             offsets, ids, distances, cuts, sures, tieds, ms) = labels
            _k.rescore_block(q_vec[b_lo:b_hi], db_vec, offsets, ids, distances, kind, query_labels,
                             db_labels, query_label_words, db_label_words, indptr, indices,
                             grades, truth_rows, cuts, sures, tieds, ms, ties == "stable", types_ro,
                             ks_ro, gains_ro, discount_ro, kmax, sums[b_lo:b_hi], extremes,
                             spread_sums[b_lo:b_hi] if extremes else spread_sums, 0, b_hi - b_lo)

    run_blocks(run, n_queries, n_threads, blocks_per_thread=1)

    totals = _grade_totals(spec, n_queries, n_db)
    relevant = totals[:, 1:].sum(axis=1)
    empty_rows = relevant == 0
    results = []
    for ci, count in enumerate(counts):
        def values(raw):
            per_query = _finalize(columns, raw, totals, relevant, gains, count, ap_denominator, n_db)
            for col in columns:
                if col.base != "NN-recall" and empty == "skip":
                    per_query[col.name][empty_rows] = np.nan
            return per_query

        per_query = values(sums[:, ci])
        spreads = {}
        if extremes:
            # the finalizers scale each sum by a positive per-query factor: so do its spread and extremes
            std, low, high = (values(spread_sums[:, ci, :, t]) for t in (1, 2, 3))
            if ties == "optimistic":
                per_query = high
            elif ties == "pessimistic":
                per_query = low
            if spread:
                spreads = dict(tie_std=std, tie_min=low, tie_max=high, mean_tie_min=_means(low),
                               mean_tie_max=_means(high),
                               mean_tie_std={name: _mean_std(v) for name, v in std.items()})
        mean = _means(per_query)
        settings = {"ties": ties, "candidates": asked_counts[ci], "gain": gain, "ap_denominator": ap_denominator,
                    "empty": empty, "n_db": n_db, "n_bits": n_bits, "relevance": spec.kind,
                    "pipeline": "hamming candidates + float inner-product rescoring"}
        result = Result(mean, per_query, n_queries, int(empty_rows.sum()) if needs_relevance else 0, settings,
                        **spreads)
        results.append(result.keyed_as(asked))
    if single:
        return results[0]
    return RescoreSweep(asked_counts, results, {"ties": ties, "n_db": n_db, "n_bits": n_bits})


def _means(per_query):
    return {name: float(np.nanmean(v)) if np.isfinite(v).any() else float("nan") for name, v in per_query.items()}


def _mean_std(std):
    """Std of the mean over independent queries: sqrt(sum of variances) / kept queries."""
    kept = np.isfinite(std)
    return float(np.sqrt(np.sum(std[kept] ** 2)) / kept.sum()) if kept.any() else float("nan")


def _grade_totals(spec, n_queries, n_db):
    """(n_queries, n_grades) int64: database items of each grade per query."""
    totals = np.zeros((n_queries, spec.n_grades), dtype=np.int64)
    if spec.kind == "class":
        sizes = np.bincount(spec.db_labels, minlength=spec.n_classes)
        totals[:, 1] = sizes[spec.query_labels]
    else:
        _k.grade_totals(_KINDS[spec.kind], spec.query_label_words, spec.db_label_words, spec.indptr, spec.grades,
                        totals, 0, n_queries)
    totals[:, 0] = n_db - totals[:, 1:].sum(axis=1)
    return totals


def _finalize(columns, sums, totals, relevant, gains, count, ap_denominator, n_db):
    """Per-query values of every column at one candidate count from the kernel's sums."""
    out = {}
    dcg_ks = sorted({c.k or count for c in columns if c.base == "nDCG"})
    ideal = _ideal_dcg(totals, gains, dcg_ks, n_db) if dcg_ks else None
    for index, col in enumerate(columns):
        value = sums[:, index]
        k = col.k if col.k is not None else count
        if col.base == "P":
            out[col.name] = value / k
        elif col.base in ("R",):
            out[col.name] = _ratio(value, relevant)
        elif col.base == "NN-recall":
            out[col.name] = value / k
        elif col.base == "DCG":
            out[col.name] = value.copy()
        elif col.base == "nDCG":
            out[col.name] = _ratio(value, ideal[:, dcg_ks.index(k)])
        elif col.base == "AP":
            den = relevant if ap_denominator == "total" else np.minimum(min(k, count), relevant)
            out[col.name] = _ratio(value, den)
        else:  # RR, Success
            out[col.name] = value.copy()
    return out


def _ratio(numerator, denominator):
    out = np.zeros(len(numerator))
    np.divide(numerator, denominator, out=out, where=np.asarray(denominator) != 0)
    return out
