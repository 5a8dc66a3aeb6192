"""Facade for ranked lists (scores): rank_evaluate(), on the same finalizer as Hamming ranking."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from .._kernels.err import err_rankings
from .._kernels.finalize import N_QUANTITIES
from .._kernels.infap import NONRELEVANT, POOLED, RELEVANT, UNPOOLED, infap_rankings
from .._kernels.radix_sort import argsort_ascending, sort_keys_into
from .._kernels.modes import AVERAGE, FIXED, TIE_CODES
from .._kernels.finalize import finalize_ranked, finalize_ties, finalize_ties_optional, ranked_optional_sums
from .._kernels.score_ties import finalize_fixed_rankings, finalize_rankings, split_run_into
from ..metrics import aggregate, parse_metrics, passes
from ..metrics.doors import LISTS, check_door
from ..metrics.families import asked_names
from ..result import Result
from ..finalize.extremes import list_extremes, with_extremes
from ..finalize.spread import list_spread, with_spread
from ..parallel import resolve_threads, run_blocks
from ..finalize.cold_start import Helper, callee_addresses
from ..finalize.plan import err_columns, finalize_plan
from ..finalize.values import (
    WHOLE_LIST, apply_empty, gains_of, group_sizes, metric_values, read_only,
)
from ..conventions import LISTS as _LISTS_DOOR, takes_convention
from .options import ListOptions
from .score_floor import ScoreFloor
from ..errors import InputError, InputTypeError
from ..validation import check_empty_policy, check_err_grades, first_not_finite, numeric_array

__all__ = ["rank_evaluate"]



_ro = read_only


OWN_PASSES = ("ERR", "infAP")  # each tie's grades, each tie's pool states: passes of their own, not the walk


def walk_kernels(ties: str) -> tuple:
    """The kernels of the walk over ranked lists that ``ties`` may run: its driver, then the
    finalizers the driver calls through their addresses (which of them runs depends on the
    metrics: :func:`_callees`)."""
    if TIE_CODES[ties] == FIXED:
        return finalize_fixed_rankings, finalize_ranked, ranked_optional_sums
    return finalize_rankings, finalize_ties, finalize_ties_optional


def _callees(plan, ties) -> list:
    """The finalizers the walk of ``ties`` calls for ``plan``, in the order of the driver's
    address arguments (None: the optional sums not asked, address 0). Looked up at each call (a
    test may wrap a kernel of the module)."""
    if TIE_CODES[ties] == FIXED:  # a fixed order has its ratios exactly: only the optional sums pick
        return [finalize_ranked, plan.kernel(None, ranked_optional_sums, fixed=True), sort_keys_into]
    split = None if TIE_CODES[ties] == AVERAGE else split_run_into  # the runs split by grade
    return [plan.kernel(finalize_ties, finalize_ties_optional), sort_keys_into, split]  # no ratios-only walk here


@takes_convention(_LISTS_DOOR)
def rank_evaluate(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    qid: npt.ArrayLike | None = None,
    metrics: str | Sequence[str] = ("AP", "nDCG@10", "P@10", "RR"),
    ties: str = "average",
    gain: str = "linear",
    log_base: float = 2,
    ap_denominator: str = "total",
    empty: str = "zero",
    relevance_level: float = 1,
    n_threads: int | None = None,
    doc_ids: npt.ArrayLike | None = None,
    unretrieved: npt.ArrayLike | None = None,
    judged: npt.ArrayLike | None = None,
    pooled: npt.ArrayLike | None = None,
    spread: bool | str = False,
    score_floor: ScoreFloor | None = None,
) -> Result:
    """Tie-aware ranking metrics of scored lists (learning to rank, IR runs).

    Each query's documents are ranked by ``y_pred`` descending. Documents with equal scores
    form a tie; ``ties="average"`` (default) reports the exact average of each metric over all
    orderings inside ties (McSherry & Najork 2008; scikit-learn's tie-averaged nDCG).

    Parameters
    ----------
    y_true : array_like of float, shape (n,) or (n_queries, n_docs)
        Graded relevance, finite and >= 0.
    y_pred : array_like of float, same shape as y_true
        Scores, finite (NaN or infinity is an error).
    group : array_like of int, optional
        Sizes of consecutive queries (LightGBM / XGBoost style), summing to n.
    qid : array_like, optional
        A query id per row, rows of a query in any order. Queries come out sorted by id
        (``Result.query_ids``). Give ``group`` or ``qid`` (or neither: one query, or the rows
        of a 2-D pair).
    metrics : str or sequence of str
        As in :func:`fasttie.evaluate`, without the radius metrics and WAP.
    convention : str, optional
        A library's meaning of the metric names, one word for ``ties``, ``gain``, ``log_base``,
        ``ap_denominator``, ``empty`` and ``relevance_level``: "trec_eval", "ir_measures",
        "ranx", "lightgbm", "xgboost", "sklearn", "torchmetrics", "pytorch_metric_learning",
        "sentence_transformers" (:data:`fasttie.conventions.CONVENTIONS`; docs/metrics.md,
        "Conventions"). Options passed explicitly win over the preset. "torchmetrics" also sets
        ``score_floor``: every row scored <= 0 out of retrieval for AP, P, R and RR, as
        torchmetrics does.
    ties : {"average", "stable", "optimistic", "pessimistic", "trec", "pyndeval"}
        "stable": equal scores keep input order; "trec": score descending, then document id
        descending (trec_eval), needs ``doc_ids``; "pyndeval": score descending, then document
        id ascending (pyndeval, sentence-transformers 6.2's IR evaluator), needs
        ``doc_ids``; optimistic / pessimistic: higher / lower grades first inside ties, and
        within a grade the ``judged`` rows, then the ``pooled`` ones, first / last: one order,
        whose values every metric takes; the best / worst tie order of the metrics
        :func:`fasttie.metrics.grade_order_bounds` names (not of infAP, RBPResid@k,
        NumNonRelJudgedRet, nor AP@k over the retrieved relevant documents).
    gain : {"linear", "exp2"}, default "linear"
        Gain of grade g: g (trec_eval, scikit-learn) or 2**g - 1 (Burges, LightGBM).
    log_base : float, default 2
        Base of the DCG discount 1/log_b(1 + rank): 2 as trec_eval and scikit-learn, ``math.e``
        as matchzoo. nDCG does not depend on it.
    ap_denominator : {"total", "retrieved", "min"}, default "total"
        AP@k denominator: R (trec_eval), relevant in the top k, or min(k, R) with k as asked
        (Spark's ``meanAveragePrecisionAt``, Kaggle's ``apk``; R counts ``unretrieved`` too).
    empty : {"zero", "skip", "one", "error"}
        Queries without relevant documents, as in :func:`fasttie.evaluate`. A query is empty
        for the binary metrics (AP, P, R, F1, RR, Rprec) when no document reaches
        ``relevance_level``, and for the graded ones (DCG, nDCG, ACG) when no grade is
        positive (the ideal DCG is 0).
    relevance_level : float, default 1
        A document is relevant for the binary metrics (AP, P, R, RR, Rprec, F1) when y_true >=
        relevance_level, as trec_eval's ``-l``. The graded metrics (DCG, nDCG, ACG) use every
        grade, fractional ones too, as trec_eval and scikit-learn.
    n_threads : int, optional
        Threads for this call (see :mod:`fasttie.parallel`); results do not depend on it.
    doc_ids : array_like, optional
        Document id per row (strings or integers), for ``ties="trec"`` and ``"pyndeval"``. Strings
        compare by code point, as Python and trec_eval's ``strcmp`` compare them.
    unretrieved : sequence of array_like, optional
        Per query (in output order), grades of judged documents missing from the ranking: they
        count in R and in the ideal DCG (trec_eval semantics), and those below the relevance
        level as judged non-relevant documents in Bpref.
    judged : array_like of bool, shape of y_true, optional
        Which rows have a judgment (default: all). Only Bpref looks at it: an unjudged row is
        neither relevant nor judged non-relevant there (trec_eval's bpref); its y_true should be 0.
        NumNonRelJudgedRet counts the judged rows below the relevance level.
    pooled : array_like of bool, shape of y_true, optional
        Which rows are in the judgment pool (default: the judged ones). infAP: a pooled row
        without a judgment was sampled out of the pool (trec_eval's qrels relevance -1) and
        counts as relevant in the proportion of the judged rows above it; an unpooled row
        counts as non-relevant. Judged@k counts the pooled rows (and the relevant ones), as
        ir_measures counts every document with a qrels line, a negative grade too.
    spread : bool or "range", default False
        True (with ``ties="average"``): also the standard deviation of each metric over
        uniformly random orders inside ties, ``Result.tie_std`` per query and
        ``Result.mean_tie_std`` of the mean (docs/ties.md, "How far a metric moves with the tie
        order"), and its lowest and highest value over every order inside ties,
        ``Result.tie_min`` / ``tie_max`` per query and ``mean_tie_min`` / ``mean_tie_max`` of
        the mean (docs/ties.md, "The exact extremes"), all exact. Metrics without an exact
        standard deviation (Bpref, infAP, ERR, GMAP, ...) raise ValueError naming them;
        ``"range"`` computes the extremes alone, which every metric has (but a ``gains`` table
        that does not rise with the grade).
    score_floor : ScoreFloor, optional
        Rows scored at most ``score_floor.at_most`` are not retrieved for the metrics on
        ``score_floor.bases`` (:class:`fasttie.lists.score_floor.ScoreFloor`): they keep their
        places with grade 0, their grades count in R as ``unretrieved`` ones. The other metrics
        see the rows as given. ``Result.settings["score_floor"]`` records the rule and the
        metrics it applied to.

    Returns
    -------
    Result

    Raises
    ------
    TypeError, ValueError
        Shape or length mismatches, NaN or infinite scores, negative grades, group sizes not
        summing to n or empty queries, unknown metric names, k <= 0, bad option values.

    Examples
    --------
    Two documents tie for the first place, one of them relevant:

    >>> import fasttie as ft
    >>> ft.rank_evaluate([1, 0, 0], [0.5, 0.5, 0.1], metrics=["RR", "P@1"]).mean
    {'RR': 0.75, 'P@1': 0.5}
    """
    options = ListOptions.resolve(parse_metrics(metrics), ties=ties, gain=gain, log_base=log_base,
                                  ap_denominator=ap_denominator, empty=empty, relevance_level=relevance_level,
                                  spread=spread, score_floor=score_floor)
    result = rank_lists(y_true, y_pred, group, qid=qid, metrics=metrics, options=options, n_threads=n_threads,
                        doc_ids=doc_ids, unretrieved=unretrieved, judged=judged, pooled=pooled, tie_keys=False)
    asked = asked_names(metrics, diversity=False)
    keyed = result.keyed_as(asked)
    if score_floor is not None:
        floored = [key for key, name in asked.items() if score_floor.applies_to(parse_metrics([name])[0])]
        if floored:
            keyed.settings["score_floor"] = score_floor.settings(floored)
    return keyed


def rank_lists(y_true: npt.ArrayLike, y_pred: npt.ArrayLike, group: npt.ArrayLike | None, *, qid: npt.ArrayLike | None,
               metrics: str | Sequence[str], options: ListOptions, n_threads: int | None,
               doc_ids: npt.ArrayLike | None, unretrieved: npt.ArrayLike | None, judged: npt.ArrayLike | None,
               pooled: npt.ArrayLike | None, tie_keys: bool, walk_helper: Helper | None = None) -> Result:
    """:func:`rank_evaluate` for fasttie's own callers, under ``options`` checked by the door
    (:class:`fasttie.lists.options.ListOptions`). With ``tie_keys`` the ``doc_ids`` are
    int64 tie-break keys (ascending), unique within each tie but not within each query
    (:func:`fasttie.trec.evaluate`'s trec_eval order, from a run read without repeats), not
    document ids: they are not checked for repeats. ``walk_helper``: a helper compiling the walk's
    driver (:func:`fasttie.finalize.cold_start.ranked_walk_in_helper`), waited for once this
    process has compiled the walk's finalizers."""
    parsed = parse_metrics(metrics)
    check_door(parsed, LISTS)
    ties, gain, ap_denominator, empty = options.ties, options.gain, options.ap_denominator, options.empty
    relevance_level, spread = options.relevance_level, options.spread
    y_true, y_pred, sizes, order, query_ids = _grouped(y_true, y_pred, group, qid)
    n_queries = len(sizes)
    keys = _tie_keys(ties, doc_ids, order, sizes, query_ids, tie_keys)
    judged = _flags(judged, "judged", order, len(y_true))
    pooled = judged if pooled is None else _flags(pooled, "pooled", order, len(y_true))
    rows = _Rows(y_true, y_pred, sizes, keys, judged, pooled)
    per_query, is_empty = {}, np.zeros(n_queries, dtype=bool)
    views = _floor_views(parsed, rows, unretrieved, options.score_floor)
    for view_metrics, view_rows, view_unretrieved in views:
        for judged_only in sorted({m.judged_only for m in view_metrics}):  # judged_only: without unjudged rows
            view = [m for m in view_metrics if m.judged_only == judged_only]
            judged_rows = view_rows.judged_view() if judged_only else view_rows
            # Judged@k counts the rows in the pool (ir_measures: any qrels line, a negative grade too)
            counted = [(view, judged_rows)] if pooled is judged else [
                ([m for m in view if m.base != "Judged"], judged_rows),
                ([m for m in view if m.base == "Judged"], replace(judged_rows, judged=judged_rows.pooled))]
            for group_metrics, group_rows in counted:
                if not group_metrics:
                    continue
                values, empty_here = _evaluate_rows(group_metrics, group_rows, view_unretrieved, options, n_threads,
                                                    walk_helper)
                per_query.update(values)
                is_empty |= empty_here
    n_empty = int(is_empty.sum())
    check_empty_policy(empty, n_empty, n_queries, "relevant document")
    scale = math.log(options.log_base) / math.log(2.0)  # 1/log_b(1+i) = (ln b / ln 2) / log2(1+i)
    for metric in parsed:
        if metric.base == "DCG":
            per_query[metric.name] = per_query[metric.name] * scale
    mean = {metric.name: aggregate(metric, per_query[metric.name]) for metric in parsed}
    result = Result(
        mean=mean,
        per_query={m.name: per_query[m.name] for m in parsed},
        n_queries=n_queries,
        n_empty=n_empty,
        settings=options.settings(),
        query_ids=query_ids,
    )
    if spread is True:  # the same ties, walked once more for the variances (fasttie.finalize.spread)
        result = with_spread(result, parsed, *_joined_columns([
            list_spread(view_metrics, view_rows.offsets, view_rows.y_pred, view_rows.y_true,
                        lambda grades, own: gains_of(grades, gain if own is None else own), relevance_level,
                        _relevant_missing(view_unretrieved, n_queries), n_threads,
                        ap_denominator)
            for view_metrics, view_rows, view_unretrieved in views]))
    if spread:  # the extremes over tie orders (fasttie.finalize.extremes): the rows under other orders
        low, high = {}, {}
        for view_metrics, view_rows, view_unretrieved in views:

            def evaluate(names, mode, order=None, view_rows=view_rows, view_unretrieved=view_unretrieved):
                at = slice(None) if order is None else order
                return rank_lists(
                    view_rows.y_true[at], view_rows.y_pred[at], view_rows.sizes, qid=None, metrics=names,
                    options=options.under(mode), n_threads=n_threads, doc_ids=None, unretrieved=view_unretrieved,
                    judged=view_rows.judged[at],
                    pooled=None if view_rows.pooled is view_rows.judged else view_rows.pooled[at],
                    tie_keys=False).per_query

            view_low, view_high = list_extremes(
                view_metrics, view_rows, evaluate,
                _relevant_missing(view_unretrieved, n_queries), ap_denominator,
                relevance_level, n_threads)
            low.update(view_low)
            high.update(view_high)
        result = with_extremes(result, parsed, low, high)
    return result


def _relevant_missing(unretrieved, n_queries):
    """``level -> (n_queries,) int64``: per query, the relevant documents of ``unretrieved``
    (grades missing from each ranking) at a relevance level."""
    return lambda level: _unretrieved(unretrieved, n_queries, level)[2]


def _floor_views(parsed, rows, unretrieved, score_floor):
    """(metrics, rows, unretrieved) of each view of the rows that the metrics see: every metric
    on the rows as given, or with a score floor, the metrics on its bases on the floored rows
    (:meth:`_Rows.floored`). One door call: the rows are grouped, keyed and checked once."""
    floored = [m for m in parsed if score_floor is not None and score_floor.applies_to(m)]
    plain = [m for m in parsed if all(m is not f for f in floored)]
    views = [(plain, rows, unretrieved)] if plain else []
    if floored:
        views.append((floored, *rows.floored(score_floor.at_most, unretrieved)))
    return views


def _joined_columns(parts):
    """(means, variances, columns) of :func:`fasttie.finalize.spread.list_spread` from those of
    several views, their columns side by side."""
    columns, offset = {}, 0
    for means, _, part_columns in parts:
        columns.update({name: column + offset for name, column in part_columns.items()})
        offset += means.shape[1]
    means = np.hstack([means for means, _, _ in parts])
    variances = np.hstack([variances for _, variances, _ in parts])
    return means, variances, columns


@dataclass(frozen=True)
class _Rows:
    """The rows of every query, grouped by query (``sizes``), as the passes read them."""

    y_true: np.ndarray
    y_pred: np.ndarray
    sizes: np.ndarray
    keys: np.ndarray  # tie-break keys (empty: row order)
    judged: np.ndarray
    pooled: np.ndarray
    placeholder: np.ndarray | None = None  # queries holding one stand-in row (no row of their own)

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)

    def floored(self, at_most: float, unretrieved):
        """(rows, unretrieved) with the rows scored <= ``at_most`` out of retrieval (a score
        floor, :class:`fasttie.lists.score_floor.ScoreFloor`): grade 0 where they are ranked,
        their positive grades added to each query's ``unretrieved`` grades (R keeps them)."""
        below = self.y_pred <= at_most
        rows = replace(self, y_true=np.where(below, 0.0, self.y_true))
        moved = below & (self.y_true > 0)
        query = np.repeat(np.arange(len(self.sizes)), self.sizes)[moved]
        grades = np.split(self.y_true[moved], np.cumsum(np.bincount(query, minlength=len(self.sizes)))[:-1])
        if unretrieved is None:
            return rows, grades
        if len(unretrieved) != len(self.sizes):
            return rows, unretrieved  # the walk raises its own error about them
        return rows, [np.concatenate([np.asarray(given, dtype=np.float64).ravel(), extra])
                      for given, extra in zip(unretrieved, grades)]

    def judged_view(self) -> _Rows:
        """The judged rows only (trec_eval -J, ir_measures' judged_only=True), the others moving
        up. A query left without rows keeps one unjudged, unpooled row of grade 0, which scores
        exactly as an empty ranking for every metric but NumRet (set to 0 afterwards)."""
        query = np.repeat(np.arange(len(self.sizes)), self.sizes)[self.judged]
        sizes = np.bincount(query, minlength=len(self.sizes)).astype(np.int64)
        keep = self.judged.copy()
        placeholder = sizes == 0
        keep[self.offsets[:-1][placeholder]] = True  # each such query's first row stands in
        sizes[placeholder] = 1
        stand_in = np.zeros(len(keep), dtype=bool)
        stand_in[self.offsets[:-1][placeholder]] = True
        stand_in = stand_in[keep]
        y_true = np.where(stand_in, 0.0, self.y_true[keep])
        keys = self.keys[keep] if len(self.keys) else self.keys
        return _Rows(y_true, self.y_pred[keep], sizes, keys, self.judged[keep], self.pooled[keep] & ~stand_in,
                     placeholder)


def _evaluate_rows(metrics, rows, unretrieved, options, n_threads, walk_helper=None):
    """Per-query values of ``metrics`` on ``rows`` under ``options``, and the queries empty for any
    of them: ERR and infAP take passes of their own, the others one finalizer pass per relevance
    level and gain."""
    ties, gain, ap_denominator, empty = options.ties, options.gain, options.ap_denominator, options.empty
    relevance_level = options.relevance_level
    y_true, y_pred, sizes, keys, judged = rows.y_true, rows.y_pred, rows.sizes, rows.keys, rows.judged
    offsets = rows.offsets
    n_queries = len(sizes)
    per_query, is_empty = {}, np.zeros(n_queries, dtype=bool)
    err_metrics = [m for m in metrics if m.base == "ERR"]  # ERR needs each tie's grades: a pass of its own
    if err_metrics:
        values, is_empty = _err_values(err_metrics, y_true, y_pred, offsets, keys, ties, empty, unretrieved,
                                       n_threads)
        per_query.update(values)
    for metric in (m for m in metrics if m.base == "infAP"):  # infAP needs each tie's pool states: its own pass
        level = relevance_level if metric.rel is None else metric.rel
        values, empty_here = _infap_values(metric, y_true, y_pred, offsets, keys, ties, empty, unretrieved, judged,
                                           rows.pooled, level, n_threads)
        per_query[metric.name] = values
        is_empty |= empty_here
    others = [m for m in metrics if m.base not in OWN_PASSES]
    for (rel, metric_gain), group_metrics in passes(others):  # metrics with their own rel= or gain: one more pass
        level = relevance_level if rel is None else rel
        metric_gain = dict(metric_gain) if isinstance(metric_gain, tuple) else metric_gain
        extra_offsets, extra_grades, extra_relevant, extra_nonrel = _unretrieved(unretrieved, n_queries, level)
        gains, extra_gains = (gains_of(grades, gain if metric_gain is None else metric_gain)
                              for grades in (y_true, extra_grades))
        longest = int((np.diff(offsets) + np.diff(extra_offsets)).max())
        plan = finalize_plan(group_metrics, ties, ap_denominator, longest)
        quantities = np.empty((n_queries, N_QUANTITIES, len(plan.cutoffs)))
        scalars = plan.new_scalars(n_queries)
        arrays = [_ro(a) for a in (offsets, y_pred, y_true, gains, judged, keys)]
        extras = [_ro(a) for a in (extra_offsets, extra_grades, extra_gains, extra_relevant, extra_nonrel)]
        fixed = TIE_CODES[ties] == FIXED  # no ties: the rows with a grade or a judgment are enough
        kernel = walk_kernels(ties)[0]
        mode = () if fixed else (TIE_CODES[ties],)
        callees = _callees(plan, ties)

        def finalize(lo, hi, addresses):
            kernel(*arrays, float(level), *mode, *extras, *plan.arguments(fixed=fixed), quantities, scalars, lo, hi,
                   *addresses)

        # the sort beside the driver where a helper compiles the driver (trec.evaluate: the call
        # compiles its readers, join and tie keys meanwhile, then the finalizers)
        addresses = callee_addresses(callees, n_threads, lambda: finalize(0, 0, [np.uint64(0)] * len(callees)),
                                     caller_helper=walk_helper, beside_caller=(sort_keys_into,))
        run_blocks(lambda lo, hi: finalize(lo, hi, addresses), n_queries, resolve_threads(n_threads, 16 * len(y_true)))
        values, empty_here = metric_values(group_metrics, quantities, scalars, sizes, ap_denominator, empty)
        per_query.update(values)
        is_empty |= empty_here
    if rows.placeholder is not None and rows.placeholder.any():  # the stand-in row was not retrieved
        for metric in metrics:
            if metric.base == "NumRet" and metric.rel is None:
                values = per_query[metric.name]
                values[rows.placeholder] = np.where(np.isnan(values[rows.placeholder]), np.nan, 0.0)
    return per_query, is_empty


def _err_values(metrics, y_true, y_pred, offsets, keys, ties, empty, unretrieved, n_threads):
    """Per-query ERR of ``metrics`` (gdeval's stop probabilities, exact tie average) and the
    queries empty for it: no positive grade, retrieved or not (as nDCG)."""
    row = int(np.argmax(y_true))
    check_err_grades(y_true[row], f"{{y_true}} has {y_true[row]:g} at row {row}", "y_true")
    n_queries = len(offsets) - 1
    cutoffs, column = err_columns(metrics)
    out = np.empty((n_queries, len(cutoffs)))
    arrays = [_ro(a) for a in (offsets, y_pred, y_true, keys)]
    run_blocks(lambda lo, hi: err_rankings(*arrays, TIE_CODES[ties], _ro(cutoffs), out, lo, hi),
               n_queries, resolve_threads(n_threads, 16 * len(y_true)))
    positive = np.maximum.reduceat(y_true, offsets[:-1]) > 0
    if unretrieved is not None:
        positive |= np.array([np.any(np.asarray(g, dtype=np.float64) > 0) for g in unretrieved], dtype=bool)
    is_empty = ~positive
    values = {m.name: apply_empty(out[:, column[WHOLE_LIST if m.k is None else m.k]].copy(), m, is_empty, empty)
              for m in metrics}
    return values, is_empty


def _infap_values(metric, y_true, y_pred, offsets, keys, ties, empty, unretrieved, judged, pooled, level,
                  n_threads):
    """Per-query infAP (trec_eval's, exact tie average) and the queries without a relevant
    document, retrieved or not (0 by trec_eval, else the empty policy)."""
    states = np.full(len(y_true), UNPOOLED, dtype=np.int8)
    states[pooled] = POOLED
    states[judged] = NONRELEVANT
    states[y_true >= level] = RELEVANT
    n_queries = len(offsets) - 1
    sums = np.empty(n_queries)
    arrays = [_ro(a) for a in (offsets, y_pred, states, keys)]
    run_blocks(lambda lo, hi: infap_rankings(*arrays, TIE_CODES[ties], sums, lo, hi),
               n_queries, resolve_threads(n_threads, 16 * len(y_true)))
    relevant = np.add.reduceat((states == RELEVANT).astype(np.int64), offsets[:-1]) + _unretrieved(
        unretrieved, n_queries, level)[2]
    is_empty = relevant == 0
    values = np.divide(sums, relevant, out=np.zeros(n_queries), where=~is_empty)
    return apply_empty(values, metric, is_empty, empty), is_empty


def _grouped(y_true, y_pred, group, qid):
    """Validate and return (y_true, y_pred, sizes, row order or None, query ids), rows grouped
    by query."""
    y_true, y_pred = numeric_array(y_true, "y_true"), numeric_array(y_pred, "y_pred")
    if y_true.shape != y_pred.shape:
        raise InputError(f"y_true has shape {y_true.shape} but y_pred has shape {y_pred.shape}")
    if y_true.ndim == 2:
        if group is not None or qid is not None:
            raise InputError("with 2-D y_true / y_pred every row is a query: do not pass group or qid")
        n_queries, n_docs = y_true.shape
        group = np.full(n_queries, n_docs)
        y_true, y_pred = y_true.ravel(), y_pred.ravel()
    elif y_true.ndim != 1:
        raise InputError(f"y_true must be 1-D (with group or qid) or 2-D, got shape {y_true.shape}")
    n = len(y_true)
    if n == 0:
        raise InputError("y_true is empty: there is nothing to rank")
    y_true = np.asarray(y_true, dtype=np.float64)  # no copy when already float64
    y_pred = np.asarray(y_pred, dtype=np.float64)
    row = first_not_finite(y_pred)
    if row is not None:
        raise InputError(f"y_pred has a NaN or infinite score at row {row}")
    row = first_not_finite(y_true)
    if row is None and y_true.min() < 0:
        row = int(np.flatnonzero(y_true < 0)[0])
    if row is not None:
        raise InputError(f"y_true must be finite and >= 0; row {row} is {y_true[row]}")
    order = None  # rows keep their input order unless qid regroups them
    query_ids = None
    if group is not None and qid is not None:
        raise InputError("give group (sizes) or qid (a query id per row), not both")
    if qid is not None:
        qid = np.asarray(qid)
        if qid.shape != (n,):
            raise InputError(f"qid must have one id per row ({n}), got shape {qid.shape}")
        uniques, inverse = np.unique(qid, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        sizes = np.bincount(inverse, minlength=len(uniques)).astype(np.int64)
        y_true, y_pred = y_true[order], y_pred[order]
        query_ids = uniques.tolist()
    else:
        sizes = group_sizes(group, n)
    return y_true, y_pred, sizes, order, query_ids


def _tie_keys(ties, doc_ids, order, sizes, query_ids, given_as_keys):
    """Per-row tie-break key (ascending) for ties="trec" (document id descending) and "pyndeval"
    (ascending); empty otherwise, where equal scores keep the row order (the kernel's sort is
    stable) or the order does not matter."""
    if ties not in ("trec", "pyndeval"):
        return np.zeros(0, dtype=np.int64)
    if doc_ids is None:
        raise InputError(f"ties={ties!r} orders equal scores by document id: pass doc_ids")
    doc_ids = np.asarray(doc_ids)
    n = int(sizes.sum())
    if doc_ids.shape != (n,):
        raise InputError(f"doc_ids must have one id per row ({n}), got shape {doc_ids.shape}")
    doc_ids = doc_ids if order is None else doc_ids[order]
    sign = -1 if ties == "trec" else 1
    if doc_ids.dtype.kind in "iu" and len(doc_ids) and np.iinfo(np.int64).min < doc_ids.min() \
            and doc_ids.max() <= np.iinfo(np.int64).max:
        keys = sign * doc_ids.astype(np.int64)  # integer ids need no ranking
    else:
        _, rank = np.unique(doc_ids, return_inverse=True)  # numpy orders str ids by code point, as Python
        keys = sign * rank.ravel().astype(np.int64)
    if not given_as_keys:
        _refuse_repeats(keys, doc_ids, sizes, order, query_ids, ties)
    return keys


def _refuse_repeats(keys, doc_ids, sizes, order, query_ids, ties):
    """Raise InputError for a document id listed twice in one query: trec_eval and
    :func:`fasttie.trec.evaluate` refuse such a run (its tie order would be undefined)."""
    query = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    low = int(keys.min())
    span = int(keys.max()) - low + 1
    if len(sizes) * span < 2**62:  # one int64 key (query, doc): a radix sort, about 10x np.lexsort
        by_key = argsort_ascending(query * span + (keys - low))
    else:
        by_key = np.lexsort((keys, query))
    same = (query[by_key][1:] == query[by_key][:-1]) & (keys[by_key][1:] == keys[by_key][:-1])
    if same.any():
        at = int(np.flatnonzero(same)[0])
        first, second = sorted(by_key[at : at + 2].tolist())
        rows = (first, second) if order is None else tuple(sorted(int(order[r]) for r in (first, second)))
        query_id = int(query[first]) if query_ids is None else query_ids[int(query[first])]
        raise InputError(f"doc_ids repeats {np.asarray(doc_ids[first]).item()!r} within query {query_id!r} (rows "
                         f"{rows[0]} and {rows[1]}); ties={ties!r} orders equal scores by document id, which must be "
                         "unique within a query (trec_eval refuses a run listing a document twice): drop the "
                         "repeated row")


def _flags(flags, name, order, n):
    """Per-row flags ``judged`` or ``pooled`` (bool, rows in the grouped order); all True when None."""
    if flags is None:
        return np.ones(n, dtype=np.bool_)
    flags = np.asarray(flags)
    if flags.dtype != np.bool_:
        raise InputTypeError(f"{name} must be a boolean array (True where a row {_FLAG_MEANING[name]}), "
                             f"got {flags.dtype}")
    flags = flags.ravel()
    if flags.shape != (n,):
        raise InputError(f"{name} must have one flag per row ({n}), got {flags.size}")
    return flags if order is None else flags[order]


_FLAG_MEANING = {"judged": "has a judgment", "pooled": "is in the judgment pool"}


def _unretrieved(unretrieved, n_queries, relevance_level):
    """Offsets, grades, relevant and non-relevant counts of the judged documents missing from
    each ranking."""
    if unretrieved is None:
        zeros = np.zeros(n_queries, dtype=np.int64)
        return np.zeros(n_queries + 1, dtype=np.int64), np.zeros(0), zeros, zeros
    if len(unretrieved) != n_queries:
        raise InputError(f"unretrieved must list grades for each of the {n_queries} queries")
    arrays = [np.asarray(g, dtype=np.float64).ravel() for g in unretrieved]
    grades = np.concatenate(arrays) if arrays else np.zeros(0)
    if len(grades) and (~np.isfinite(grades) | (grades < 0)).any():
        raise InputError("unretrieved grades must be finite and >= 0")
    offsets = np.concatenate([[0], np.cumsum([len(a) for a in arrays])]).astype(np.int64)
    relevant = np.array([int((a >= relevance_level).sum()) for a in arrays], dtype=np.int64)
    return offsets, grades, relevant, np.diff(offsets) - relevant
