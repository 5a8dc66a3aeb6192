"""From the finalizer's base quantities to metric values, plus shared option handling.

Shared by every front door (Hamming ranking, ranked lists): the finalizer gives expectations
of hits, grade sums, DCG, the AP/WAP numerators and ratios and RR at each cutoff; this module
divides by the right denominators and applies the empty-query policy.
"""

from __future__ import annotations

import numpy as np

from .._kernels.finalize import (
    AP_AT_R, AP_NUM, AP_RET, BPREF_SUM, DCG, GSUM, HITS, HITS_AT_R, IDCG, IPREC, IPREC_TREC_EVAL_9, JUDGED, MISS,
    OPTIONAL_BPREF, OPTIONAL_IPREC, OPTIONAL_RBP, OPTIONAL_WAP, RBP, RBP_REL, RESIDUAL, RR, TOTAL_RELEVANT, WAP_NUM,
    WAP_RET,
)
from .._kernels.tie_math import discount_prefix
from ..metrics import (DEFAULT_PERSISTENCE, FIXED_ORDER_ONLY, GRADED, KEPT_WHEN_EMPTY, PERSISTENT,
                      STANDARD_RECALL_LEVELS, UNDEFINED_WHEN_EMPTY, over_retrieved)
from ..options import CHOICES
from ..errors import InputError, InputTypeError

_discount_cache = np.zeros(1)
WHOLE_LIST = np.iinfo(np.int64).max  # the cutoff of metrics without @k
# values that do not depend on the order (Judged and RBPResid: where every item is judged, Hamming ranking)
_CONSTANT_PER_QUERY = ("NumQ", "NumRet", "NumRel", "Judged", "RBPResid")


def _column_keys(metrics) -> list:
    """Sorted (cutoff, persistence) keys of the finalizer's columns: one per cutoff of the ranked
    metrics (WHOLE_LIST for those without @k), and one more per further RBP persistence at it."""
    keys = {}
    for m in metrics:
        if m.radius is None and m.recall is None:
            k = WHOLE_LIST if m.k is None else m.k
            keys.setdefault(k, set())
            if m.p is not None:
                keys[k].add(m.p)
    keys = keys or {WHOLE_LIST: set()}
    return [(k, p) for k in sorted(keys) for p in sorted(keys[k] or {DEFAULT_PERSISTENCE})]


def cutoff_list(metrics) -> tuple[np.ndarray, np.ndarray]:
    """The finalizer's columns: sorted cutoffs (int64, a cutoff repeats for each RBP persistence
    asked at it) and the log of each column's persistence (float64)."""
    keys = _column_keys(metrics)
    return (np.array([k for k, _ in keys], dtype=np.int64), np.log(np.array([p for _, p in keys], dtype=np.float64)))


def _column_of(metrics) -> dict:
    """Metric name -> its column among the finalizer's (see :func:`cutoff_list`)."""
    keys = _column_keys(metrics)
    first = {}
    for i, (k, p) in enumerate(keys):
        first.setdefault(k, i)
    where = {key: i for i, key in enumerate(keys)}
    return {m.name: where[(WHOLE_LIST if m.k is None else m.k, m.p)] if m.p is not None
            else first[WHOLE_LIST if m.k is None else m.k]
            for m in metrics if m.radius is None and m.recall is None}


def read_only(array) -> np.ndarray:
    """C-contiguous read-only view: every kernel sees one array type, whether the input is
    writable, read-only or memory-mapped (one compiled signature per kernel)."""
    view = np.ascontiguousarray(array).view()
    view.flags.writeable = False
    return view


def check_options(*, ties, tie_modes, **options):
    """Raise ValueError/TypeError naming the option when a value is not one of its choices."""
    for name, value in (("ties", ties), *options.items()):
        choices = tuple(tie_modes) if name == "ties" else CHOICES[name]
        if not isinstance(value, str):
            raise InputTypeError(f"{{{name}}} must be a string, one of {choices}; got {value!r}", argument=name)
        if value not in choices:
            raise InputError(f"{{{name}}} must be one of {choices}, got {value!r}", argument=name)


def group_sizes(group, n) -> np.ndarray:
    """Validated int64 query sizes (LightGBM / XGBoost ``group``) of ``n`` consecutive rows;
    ``group=None`` is one query of all rows."""
    if group is None:
        return np.array([n], dtype=np.int64)
    sizes = np.asarray(group)
    if sizes.ndim != 1 or not np.issubdtype(sizes.dtype, np.integer) or sizes.dtype == np.bool_:
        raise InputTypeError("group must be a 1-D array of integer query sizes")
    if (sizes <= 0).any():
        raise InputError(f"group sizes must be >= 1 (query {int(np.flatnonzero(sizes <= 0)[0])} is empty)")
    if sizes.sum() != n:
        raise InputError(f"group sizes sum to {int(sizes.sum())} but y_true has {n} rows")
    return sizes.astype(np.int64)


def discount_table(n: int) -> np.ndarray:
    """D[0..n] of 1/log2(1+i) prefix sums, cached across calls (grown on demand)."""
    global _discount_cache
    if len(_discount_cache) <= n:
        _discount_cache = discount_prefix(max(n, 2 * (len(_discount_cache) - 1)))
    return _discount_cache[: n + 1]


def dcg_depth(metrics, n: int) -> int:
    """The ranks the finalizer's DCG must count for ``metrics`` (parsed) on lists of at most
    ``n`` items: ``n`` when one of them is DCG or nDCG of the whole list, else their largest
    cutoff, at least 1 (the finalizer tells a query without positive gains by its ideal DCG at
    the first cutoff). The discount table stops there (see :func:`discount_table`)."""
    cutoffs = [m.k for m in metrics if m.base in ("DCG", "nDCG") and m.radius is None]
    return max(1, min(n, n if None in cutoffs else max(cutoffs, default=1)))


def gains_of(grades, gain) -> np.ndarray:
    """The one gain rule of every door: the gain of each grade, float64.

    Parameters
    ----------
    grades : array_like of float
    gain : {"linear", "exp2"} or dict
        "linear": the grade itself; "exp2": 2**grade - 1; a {grade: gain} table (trec_eval's
        ``ndcg_p``, a metric's ``gains=``): the gains it lists, other grades keep their own value.

    Returns
    -------
    ndarray of float64
        "linear" on float64 grades returns them, not a copy.
    """
    grades = np.asarray(grades, dtype=np.float64)
    if isinstance(gain, dict):
        table = np.array(sorted(gain.items()), dtype=np.float64).reshape(-1, 2)
        at = np.clip(np.searchsorted(table[:, 0], grades), 0, len(table) - 1)
        return np.where(table[at, 0] == grades, table[at, 1], grades)
    return np.exp2(grades) - 1.0 if gain == "exp2" else grades


def gain_table(gain: str, n_grades: int) -> np.ndarray:
    """Gain of each integer grade 0..n_grades-1 (:func:`gains_of`), float64 (never a narrow
    integer type)."""
    return gains_of(np.arange(n_grades, dtype=np.float64), gain)


def divide(numerator, denominator):
    """numerator / denominator as float64, 0 where the denominator is 0."""
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    np.divide(numerator, denominator, out=out, where=np.asarray(denominator) != 0)
    return out


def recall_levels(metrics) -> np.ndarray:
    """The recall levels whose interpolated precision the finalizer computes for ``metrics``
    (parsed): those of the IPrec metrics, and the eleven standard ones 0.0, 0.1, ..., 1.0 for
    11pt; ascending, each once (float64, empty without interpolated precision).

    Examples
    --------
    >>> from fasttie.metrics import parse_metrics
    >>> recall_levels(parse_metrics(["IPrec@0.25", "IPrec@0.1", "AP"]))
    array([0.1 , 0.25])
    """
    levels = {m.recall for m in metrics if m.base == "IPrec"}
    if any(m.base == "11pt" for m in metrics):
        levels.update(STANDARD_RECALL_LEVELS)
    return np.array(sorted(levels), dtype=np.float64)


def optional_sums(metrics, ties) -> int:
    """The finalizer's optional sums the metrics need (a bit mask of finalize.OPTIONAL_*).

    Raises InputError for interpolated precision (IPrec@r, 11pt) under ties="average", which
    has no exact form for it (a maximum over ranks does not average over tie orders), and for
    trec_eval 9's and 10's recall levels asked together (the finalizer computes one set)."""
    asked = [m.name for m in metrics if m.base in FIXED_ORDER_ONLY]
    if asked and ties == "average":
        raise InputError(f"{', '.join(asked)}: interpolated precision has no exact average over tie orders; "
                         "choose ties='stable', 'trec' or 'pyndeval' (ranked lists), 'optimistic' or 'pessimistic'")
    versions = {m.trec_eval_9 for m in metrics if m.base in FIXED_ORDER_ONLY}
    if len(versions) > 1:  # one set of recall levels a pass
        raise InputError(f"{', '.join(asked)}: interpolated precision with trec_eval 9's and 10's recall levels in "
                         "one call; evaluate the trec_eval=9 ones in a call of their own")
    bpref = any(m.base in ("Bpref", "GMBpref") for m in metrics)
    rbp = any(m.base in PERSISTENT for m in metrics)
    wap = ties in ("stable", "trec", "pyndeval") and any(m.base == "WAP" for m in metrics)  # a tie walk sums it anyway
    return ((OPTIONAL_IPREC if asked else 0) | (IPREC_TREC_EVAL_9 if True in versions else 0)
            | (OPTIONAL_BPREF if bpref else 0) | (OPTIONAL_RBP if rbp else 0) | (OPTIONAL_WAP if wap else 0))


def metric_values(metrics, quantities, scalars, n_items, ap_denominator, empty, radius_values=None, err=None):
    """Per-query values of every metric for one block of queries.

    Parameters
    ----------
    metrics : list of Metric
    quantities : (n, N_QUANTITIES, K) float64, base quantities at the columns of
        :func:`cutoff_list` (metrics)
    scalars : (n, N_SCALARS) float64
    n_items : int or (n,) int array, ranked list length per query
    ap_denominator, empty : str, the options of evaluate
    radius_values : dict of name -> ((n,) float64, (n,) float64), the values of the radius metrics
        and the queries' chance of nothing relevant within the radius (0 or 1), computed from
        the distances (Hamming ranking only: fasttie.hamming.engine.radius_values)
    err : dict of name -> (n,) float64, the ERR values (their own kernel, fasttie._kernels.err)

    Returns
    -------
    values : dict of name -> (n,) float64
    is_empty : (n,) bool
        Queries that are empty for at least one of the metrics (see :func:`empty_queries`).
    """
    total = scalars[:, TOTAL_RELEVANT]
    n_items = np.asarray(n_items)
    column = _column_of(metrics)
    levels = recall_levels(metrics).tolist()  # as the scalars hold them (fasttie.finalize.plan)
    emptiness = empty_queries(metrics, quantities, scalars)
    values = {}
    for metric in metrics:
        missed = None  # P(no relevant item retrieved), for empty="skip_missed"
        if metric.radius is not None:
            value, missed = radius_values[metric.name]
        elif metric.base == "Rprec":
            value = divide(scalars[:, HITS_AT_R], total)
        elif metric.base == "MAP@R":  # AP cut at R, over R whatever ap_denominator (pytorch-metric-learning)
            value = divide(scalars[:, AP_AT_R], total)
        elif metric.base in ("Bpref", "GMBpref"):
            value = divide(scalars[:, BPREF_SUM], total)
        elif metric.base == "IPrec":
            value = scalars[:, IPREC + levels.index(metric.recall)].copy()
        elif metric.base == "11pt":  # trec_eval's 11pt_avg: the standard levels added one by one, in
            # ascending order, as trec_eval adds them (numpy's sum over a row may pair the terms
            # differently for one query and for many: the value must not depend on the batch)
            value = np.zeros(len(scalars))
            for level in STANDARD_RECALL_LEVELS:
                value += scalars[:, IPREC + levels.index(level)]
            value /= len(STANDARD_RECALL_LEVELS)
        else:
            q = quantities[:, :, column[metric.name]]
            value = err[metric.name].copy() if metric.base == "ERR" else _base_value(
                metric, q, total, n_items, ap_denominator)
            missed = q[:, MISS]
        is_empty = emptiness[graded(metric)]
        if empty == "skip_missed" and missed is not None:
            # HashNet: only queries with a relevant item retrieved count. Tie-aware: the metric's
            # expectation over the tie orders that retrieve one, E[M] / P(hits >= 1), as M = 0
            # whenever hits = 0; NaN where no order retrieves one
            if metric.base in _CONSTANT_PER_QUERY:  # the condition changes which queries count, not the value
                value = np.where(missed < 1.0, value, np.nan)
            else:
                value = np.where(missed < 1.0, divide(value, 1.0 - missed), np.nan)
        values[metric.name] = apply_empty(value, metric, is_empty, empty)
    return values, np.logical_or.reduce([emptiness[graded(m)] for m in metrics])


def graded(metric) -> bool:
    """Whether the metric takes every grade > 0 (else the items at the relevance level)."""
    return metric.family in GRADED and metric.rel is None


def empty_queries(metrics, quantities, scalars):
    """(binary, graded) boolean masks of the queries that are empty for each kind of metric.

    Binary metrics (AP, P, R, RR, ...) count items with grade >= the relevance level: a query
    without one is empty for them. Graded metrics (DCG, nDCG, ACG, WAP) take every grade > 0:
    a query is empty for them when no item has a positive grade, which is when the ideal DCG,
    the denominator of nDCG, is 0.
    """
    binary = scalars[:, TOTAL_RELEVANT] == 0
    graded = quantities[:, IDCG, 0] == 0  # IDCG at a cutoff >= 1 is 0 iff no positive gain
    return {False: binary, True: graded}


def reads_ratio(metric, ap_denominator: str, n_items):
    """Whether a metric's value on a list of ``n_items`` is the tie walk's ratio: AP@k, WAP@k or
    GMAP@k over the retrieved relevant items with k below the list's end. At or past the end,
    hits@k is the list's hits, which the counts fix, and the value is numerator / hits.
    :func:`fasttie.finalize.plan.finalize_plan` asks the kernels for the ratios by this rule at
    the longest list.

    Parameters
    ----------
    metric : Metric
    ap_denominator : {"retrieved", "total", "min"}
    n_items : int or ndarray of int
        Items in each query's list.

    Returns
    -------
    bool or ndarray of bool, shaped as ``n_items``
    """
    if not over_retrieved(metric, ap_denominator):
        return np.zeros(np.shape(n_items), dtype=np.bool_)
    return np.asarray(metric.k) < np.asarray(n_items)


def _base_value(metric, q, total, n_items, ap_denominator):
    """Value of a metric at a cutoff from the finalizer's quantities ``q`` (n, N_QUANTITIES)."""
    asked = n_items if metric.k is None else metric.k  # k as asked, for P, F1, ACG
    effective = np.minimum(asked, n_items)
    if metric.base == "P" and metric.relative:  # trec_eval's relative_P_k and set_relative_P
        return divide(q[:, HITS], np.minimum(asked, total))
    if metric.base == "P":
        return divide(q[:, HITS], asked)
    if metric.base == "R":
        return divide(q[:, HITS], total)
    if metric.base == "F1":  # (1 + b^2) P R / (b^2 P + R) = (1 + b^2) hits / (b^2 R + k), linear in the hits
        b2 = 1.0 if metric.beta is None else metric.beta ** 2
        return divide((1.0 + b2) * q[:, HITS], b2 * total + asked)
    if metric.base == "ACG":
        return divide(q[:, GSUM], asked)
    if metric.base == "DCG":
        return q[:, DCG].copy()
    if metric.base == "nDCG":
        return divide(q[:, DCG], q[:, IDCG])
    if metric.base == "RR":
        return q[:, RR].copy()
    if metric.base == "Success":  # a relevant item in the top k: 1 - P(hits@k = 0)
        return 1.0 - q[:, MISS]
    if metric.base == "Judged":  # judged items in the top k, over the items there (ir_measures: min(k, retrieved))
        return divide(q[:, JUDGED], effective)
    if metric.base == "RBP":  # graded, or binary with its own relevance level (ir_measures' RBP(rel=2))
        return q[:, RBP if metric.rel is None else RBP_REL].copy()
    if metric.base == "RBPResid":
        return q[:, RESIDUAL].copy()
    if metric.base == "NumQ":
        return np.ones(q.shape[0])
    if metric.base == "NumRet" and metric.rel is not None:  # ir_measures: retrieved with a grade >= rel
        return q[:, HITS].copy()
    if metric.base == "NumRet":
        return np.broadcast_to(effective, q.shape[:1]).astype(np.float64)
    if metric.base == "NumRel":
        return np.asarray(total, dtype=np.float64).copy()
    if metric.base in ("NumRelRet", "Hits"):  # the same count; Hits (ranx's hits@k) is averaged over queries
        return q[:, HITS].copy()
    if metric.base == "NumNonRelJudgedRet":  # judged items retrieved below the relevance level (trec_eval)
        return q[:, JUDGED] - q[:, HITS]
    if metric.base == "SetAP":  # trec_eval's set_map: hits^2 / (retrieved x relevant), whole list only
        return divide(q[:, HITS] * q[:, HITS], effective * total)
    # AP, WAP, GMAP (per query the AP it averages geometrically)
    binary = metric.base != "WAP"
    numerator = q[:, AP_NUM if binary else WAP_NUM]
    ratio = q[:, AP_RET if binary else WAP_RET]
    if ap_denominator == "retrieved":
        return np.where(reads_ratio(metric, ap_denominator, n_items), ratio, divide(numerator, q[:, HITS]))
    if ap_denominator == "total" or metric.k is None:  # min(k, R) is R for the whole list
        return divide(numerator, total)
    # min(k, R) with k as asked (Spark's meanAveragePrecisionAt, Kaggle's apk): R, not the list length,
    # where unretrieved relevant items make R larger than a list shorter than k
    return divide(numerator, np.minimum(metric.k, total))


def apply_empty(value, metric, is_empty, empty):
    """The empty policy on one metric's per-query values (is_empty: the queries empty for it)."""
    if not is_empty.any() or (metric.base in KEPT_WHEN_EMPTY and empty not in ("skip", "skip_missed")):
        return value  # a count is what it is for a query without relevant items; skip leaves it out
    value = np.array(value, dtype=np.float64)
    if empty in ("skip", "skip_missed"):
        value[is_empty] = np.nan
    elif empty == "one" and metric.family in UNDEFINED_WHEN_EMPTY:
        value[is_empty] = 1.0
    else:  # "zero", "error" (raised by the caller), or "one" for well-defined metrics
        value[is_empty] = 0.0
    return value
