"""``tie_min`` / ``tie_max`` (``spread=True`` or ``spread="range"``): the lowest and highest value
of each metric over every order inside ties.

Most metrics rise when a higher grade moves up a rank; their extremes are the orders by grade,
``ties="pessimistic"`` / ``"optimistic"`` (:func:`fasttie.metrics.grade_order_bounds`), which
the doors compute from the same ties. The others are found exactly:

* AP@k, WAP@k, GMAP@k over the relevant items retrieved in the top k: the denominator moves with
  the order; :mod:`fasttie._kernels.tie_extremes` takes the best and worst over the relevant
  items the cut tie puts inside the top k.
* Judged@k, RBPResid@k, NumNonRelJudgedRet@k of ranked lists count judgments, which the grade
  orders do not sort: each tie with the counted rows first / last (a weighted count with
  weights that do not rise down the ranking), scored as a fixed order. In a Hamming ranking
  every item is judged: Judged and RBPResid do not move, NumNonRelJudgedRet is highest with
  the grade order reversed.
* infAP: a walk over each tie's placements (:func:`fasttie._kernels.infap.infap_extremes`).

docs/ties.md, "The exact extremes", gives the arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from .._kernels import tie_extremes as _k
from .._kernels.infap import INFAP_EXTREME_STATES, NONRELEVANT, POOLED, RELEVANT, UNPOOLED, infap_extremes
from ..errors import InputError
from ..metrics import NOT_BOUNDED_BY_GRADE_ORDER, Metric, aggregate, grade_order_bounds, over_retrieved
from ..parallel import resolve_threads, run_blocks
from ..result import Result
from .values import read_only

__all__ = ["check_extremes", "hamming_extremes", "list_extremes", "with_extremes"]

_COUNTED = ("Judged", "RBPResid", "NumNonRelJudgedRet")  # lists: a tie sorted by what the metric counts
_Values = dict[str, np.ndarray]  # per metric (canonical name), per query


def check_extremes(parsed: list[Metric], ap_denominator: str) -> None:
    """Raise InputError for metrics without an exact method for their extremes: graded metrics
    with a gain table of their own that does not rise with the grade.

    Parameters
    ----------
    parsed : list of Metric
    ap_denominator : str
    """
    refused = [m.name for m in parsed if not (grade_order_bounds(m, ap_denominator) or over_retrieved(
        m, ap_denominator) or m.base in NOT_BOUNDED_BY_GRADE_ORDER)]
    if refused:
        raise InputError(f"spread has no exact extremes over tie orders for {', '.join(refused)}: a gain "
                         "table that does not rise with the grade; give gains that rise with the grade, or leave "
                         "those metrics out")


def _ratio_rows(base):
    return _k.WAP_ROW if base == "WAP" else _k.AP_ROW


def hamming_extremes(parsed: list[Metric], evaluate_counts: Callable[[np.ndarray, str], Mapping[str, np.ndarray]],
                     ap_denominator: str) -> tuple[Callable[..., None], Callable[[], tuple[_Values, ...]]]:
    """A callback for the Hamming pass: ``(on_counts, finish)``. ``on_counts(start, stop, hist)``
    takes each block's counts; ``evaluate_counts(hist, ties)`` gives the block's per-query values
    of ``parsed`` (canonical names) under a grade order; ``finish()`` returns (tie_min, tie_max)."""
    ratio = [m for m in parsed if over_retrieved(m, ap_denominator)]
    cutoffs = read_only(np.array(sorted({int(cast(int, m.k)) for m in ratio}), dtype=np.int64))  # AP@k: k is set
    parts = []

    def on_counts(start, stop, hist, n_threads=None):
        n = stop - start
        optimistic, pessimistic = (evaluate_counts(hist, ties) for ties in ("optimistic", "pessimistic"))
        low = {m.name: np.fmin(optimistic[m.name], pessimistic[m.name]) for m in parsed}
        high = {m.name: np.fmax(optimistic[m.name], pessimistic[m.name]) for m in parsed}
        if ratio:
            out_min, out_max = np.zeros((n, 2, len(cutoffs))), np.zeros((n, 2, len(cutoffs)))
            run_blocks(lambda lo, hi: _k.ratio_extremes_histograms(hist, cutoffs, out_min, out_max, lo, hi), n,
                       resolve_threads(n_threads, 64 * n))
            relevant = hist[:, :, 1:].sum(axis=(1, 2))
            for m in ratio:
                at = int(np.searchsorted(cutoffs, int(m.k)))
                _settle(m, optimistic[m.name], relevant, out_min[:, _ratio_rows(m.base), at],
                        out_max[:, _ratio_rows(m.base), at], low, high)
        parts.append((low, high))

    def finish():
        return tuple({m.name: np.concatenate([p[side][m.name] for p in parts]) if parts else np.zeros(0)
                      for m in parsed} for side in (0, 1))

    return on_counts, finish


def _settle(metric, value, relevant, lowest, highest, low, high):
    """Store a kernel's extremes; a query without relevant items keeps its value (the empty
    policy's), NaN stays NaN."""
    empty = (relevant == 0) | np.isnan(value)
    low[metric.name] = np.where(empty, value, lowest)
    high[metric.name] = np.where(empty, value, highest)


def list_extremes(parsed: list[Metric], rows: Any, evaluate: Callable[..., Mapping[str, np.ndarray]],
                  relevant_missing: Callable[[float], npt.ArrayLike], ap_denominator: str, relevance_level: float,
                  n_threads: int | None) -> tuple[_Values, _Values]:
    """(tie_min, tie_max) of scored lists, keyed by canonical names.

    Parameters
    ----------
    parsed : list of Metric
    rows : the grouped rows of :func:`fasttie.lists.facade.rank_lists` (``offsets``, ``y_true``,
        ``y_pred``, ``judged``, ``pooled``, ``judged_view()``).
    evaluate : callable
        ``evaluate(metrics, ties, order=None)``: per-query values (canonical names) of the rows,
        permuted by ``order`` when given, under ``ties``.
    relevant_missing : callable
        ``relevant_missing(level)``: per query, the relevant items missing from the ranking.
    ap_denominator, relevance_level, n_threads
        The call's options.
    """
    low, high = {}, {}
    by_grade = [m for m in parsed if m.base not in _COUNTED + ("infAP",)]
    if by_grade:
        optimistic, pessimistic = (evaluate([m.name for m in by_grade], ties) for ties in ("optimistic", "pessimistic"))
        for m in by_grade:
            low[m.name], high[m.name] = pessimistic[m.name], optimistic[m.name]
    query = np.repeat(np.arange(len(rows.sizes)), rows.sizes)
    for m in (m for m in parsed if m.base in _COUNTED):
        counted = _counted_rows(m, rows, relevance_level)
        for side, first in ((high, counted), (low, ~counted)):  # the counted rows first: the highest count
            order = np.lexsort((~first, -rows.y_pred, query))
            side[m.name] = evaluate([m.name], "stable", order)[m.name]
    for m in parsed:
        level = relevance_level if m.rel is None else m.rel
        view = rows.judged_view() if m.judged_only else rows
        if over_retrieved(m, ap_denominator):
            _ratio_lists(m, view, level, n_threads, low, high, optimistic[m.name], relevant_missing(level))
        elif m.base == "infAP":
            _infap_lists(m, view, level, n_threads, low, high, evaluate([m.name], "average")[m.name],
                         relevant_missing(level))
    return low, high


def _counted_rows(metric, rows, relevance_level):
    """The rows ``metric`` counts (its value never falls when one of them moves up a rank)."""
    if metric.base == "Judged":
        return rows.pooled.astype(bool)  # Judged@k counts the rows in the pool
    if metric.base == "RBPResid":
        return ~rows.judged.astype(bool)  # the residual is the weight of the unjudged rows
    level = relevance_level if metric.rel is None else metric.rel
    return rows.judged.astype(bool) & (rows.y_true < level)


def _ratio_lists(metric, rows, level, n_threads, low, high, value, missing):
    offsets = rows.offsets
    n_queries = len(offsets) - 1
    relevant = read_only((rows.y_true >= level).astype(np.int64))
    cutoffs = read_only(np.array([int(metric.k)], dtype=np.int64))
    out_min, out_max = np.zeros((n_queries, 2, 1)), np.zeros((n_queries, 2, 1))
    run_blocks(lambda lo, hi: _k.ratio_extremes_rankings(read_only(offsets), read_only(rows.y_pred), relevant, cutoffs,
                                                         out_min, out_max, lo, hi),
               n_queries, resolve_threads(n_threads, 16 * len(rows.y_pred)))
    total = np.add.reduceat(relevant, offsets[:-1]) if len(relevant) else np.zeros(n_queries, dtype=np.int64)
    _settle(metric, value, total + missing, out_min[:, _k.AP_ROW, 0], out_max[:, _k.AP_ROW, 0], low, high)


def _infap_lists(metric, rows, level, n_threads, low, high, value, missing):
    states = np.full(len(rows.y_true), UNPOOLED, dtype=np.int8)
    states[rows.pooled] = POOLED
    states[rows.judged] = NONRELEVANT
    states[rows.y_true >= level] = RELEVANT
    offsets = rows.offsets
    n_queries = len(offsets) - 1
    sums = {}
    for maximize in (False, True):
        out = np.empty(n_queries)
        run_blocks(lambda lo, hi: infap_extremes(read_only(offsets), read_only(rows.y_pred), read_only(states),
                                                 maximize, out, lo, hi),
                   n_queries, resolve_threads(n_threads, 16 * len(states)))
        sums[maximize] = out
    if np.isnan(sums[True]).any():
        raise InputError(f"spread=True: {metric.name}'s extremes walk (r + 1)(n + 1)(u + 1) placements of a tie's "
                         f"relevant, judged non-relevant and pooled-unjudged documents, more than "
                         f"{INFAP_EXTREME_STATES:,} in a tie here; leave infAP out of a spread=True call")
    total = np.add.reduceat((states == RELEVANT).astype(np.int64), offsets[:-1]) + missing
    with np.errstate(invalid="ignore", divide="ignore"):
        _settle(metric, value, total, sums[False] / total, sums[True] / total, low, high)


def with_extremes(result: Result, parsed: list[Metric], low: Mapping[str, np.ndarray],
                  high: Mapping[str, np.ndarray]) -> Result:
    """``result`` (keyed by canonical names) with ``tie_min``, ``tie_max`` and their means.

    NaN where the query's value is NaN (skipped)."""
    tie_min, tie_max = {}, {}
    for m in parsed:
        value = np.asarray(result.per_query[m.name], dtype=np.float64)
        tie_min[m.name] = np.where(np.isnan(value), np.nan, np.fmin(low[m.name], value))
        tie_max[m.name] = np.where(np.isnan(value), np.nan, np.fmax(high[m.name], value))
    result.tie_min, result.tie_max = tie_min, tie_max
    result.mean_tie_min = {m.name: aggregate(m, tie_min[m.name]) for m in parsed}
    result.mean_tie_max = {m.name: aggregate(m, tie_max[m.name]) for m in parsed}
    result.__post_init__()
    return result
