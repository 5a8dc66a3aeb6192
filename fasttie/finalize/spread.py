"""``spread=True``: the standard deviation of each metric over uniformly random orders inside ties.

The doors (:func:`fasttie.evaluate`, :func:`fasttie.rank_evaluate`, :func:`fasttie.trec.evaluate`)
compute every metric's expectation over tie orders; :mod:`fasttie._kernels.tie_spread` computes,
from the same ties, the expectation and the variance of each metric's numerator (hits, gain
sums, DCG, the AP and WAP numerators, the reciprocal rank). A metric is that numerator over a
denominator no tie order changes (k, R, min(k, R), the ideal DCG), so its standard deviation
is the metric's value times sqrt(Var) / E of its numerator (0 where the numerator is always 0).
AP@k and WAP@k over the relevant items retrieved divide by hits@k, which the tie order moves:
their kernel returns the metric's own mean and variance (a hypergeometric mixture over the cut
tie), and the same formula gives its standard deviation. docs/ties.md, "How far a metric moves
with the tie order", gives the formulas and says why the other metrics are refused (GMAP: its
variance is not a function of the moments of AP these kernels compute).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from .._kernels import tie_spread as _k
from ..errors import InputError
from .extremes import check_extremes
from ..metrics import Metric, over_retrieved, passes
from ..parallel import resolve_threads, run_blocks
from ..result import Result, mean_tie_std_of
from .values import read_only

__all__ = ["RANGE", "SPREAD_BASES", "check_spread", "hamming_spread", "list_spread", "with_spread"]

_GRADES = -1  # ACG sums grades, not gains: the GAINS numerator of a pass whose gains are the grades
_RETRIEVED = {_k.AP: _k.AP_RET, _k.WAP: _k.WAP_RET}  # over the relevant items retrieved: the metric itself
_ON_GRADES = (_GRADES, _k.WAP, _k.WAP_RET)  # numerators over the grades (WAP's cumulated grades), not the gains
# base -> numerator kind; None: no tie order changes the value (std 0); "Success": Bernoulli
_KINDS = {
    "P": _k.HITS, "R": _k.HITS, "F1": _k.HITS, "Hits": _k.HITS, "NumRelRet": _k.HITS, "Rprec": _k.RPREC,
    "ACG": _GRADES, "DCG": _k.DCG, "nDCG": _k.DCG, "RR": _k.RR, "AP": _k.AP, "WAP": _k.WAP,
    "Success": "Success", "NumRet": None, "NumRel": None, "NumQ": None,
}
SPREAD_BASES = tuple(_KINDS)
RANGE = "range"  # spread="range": the extremes over tie orders alone, for every metric that has them
_Moments = tuple[np.ndarray, np.ndarray, dict[str, int]]  # (means, variances, metric name -> column)


def check_spread(spread: bool | str, parsed: list[Metric], *, ties: str, ap_denominator: str, empty: str,
                 device: str = "cpu") -> bool | str:
    """Whether to compute the spread; raise InputError where it cannot be exact.

    Parameters
    ----------
    spread : bool
    parsed : list of Metric
    ties, ap_denominator, empty, device : str
        The call's options.

    Returns
    -------
    bool or "range"
        False, True (the standard deviation and the extremes) or "range" (the extremes only).
    """
    if not (isinstance(spread, (bool, np.bool_)) or spread == RANGE):
        raise InputError(f"spread must be True, False or 'range', got {spread!r}")
    if not spread:
        return False
    if ties != "average":
        raise InputError(f"spread={spread!r} is the spread over the orders inside ties, which needs "
                         f"{{ties}} 'average'; got {ties!r}", argument="ties")
    if empty == "skip_missed":
        raise InputError("spread=True does not take empty='skip_missed' (a conditional average over the tie "
                         "orders that retrieve a relevant item); choose empty='zero', 'skip', 'one' or 'error'")
    if device != "cpu":
        raise InputError(f"spread=True runs on the CPU pass; use device='cpu', got device={device!r}")
    check_extremes(parsed, ap_denominator)
    if spread == RANGE:
        return RANGE
    refused = [m.name for m in parsed if not _supported(m)]
    if refused:
        raise InputError(
            f"spread=True has no exact method for {', '.join(refused)}: it is exact for P, R, F1, Hits, "
            "Success, NumRelRet, ACG, DCG, nDCG, RR, Rprec, AP, AP@k, WAP and WAP@k (every ap_denominator), and the "
            "counts and radius metrics (std 0); GMAP's variance needs the whole distribution of AP over the tie "
            "orders, not its moments (docs/ties.md, 'How far a metric moves with the tie order'). Leave those "
            "metrics out, or pass spread='range' for the extremes alone"
        )
    return True


def _supported(metric):
    if metric.radius is not None:  # P, R, NumRet count whole distance buckets: no tie order changes them
        return metric.base in ("P", "R", "NumRet")
    return metric.base in _KINDS and not metric.judged_only


def _plan(parsed, ap_denominator):
    """(kinds, cutoffs) int64 of the numerators the metrics need (``_GRADES`` for grade sums;
    AP_RET / WAP_RET for AP@k / WAP@k over the relevant items retrieved, the metric itself), and
    metric name -> column."""
    columns, plan = {}, {}
    for m in parsed:
        kind = None if m.radius is not None else _KINDS[m.base]
        if kind in _RETRIEVED and over_retrieved(m, ap_denominator):
            kind = _RETRIEVED[kind]
        if isinstance(kind, int):
            key = (kind, 0 if m.k is None or kind == _k.RPREC else int(m.k))
            columns[m.name] = plan.setdefault(key, len(plan))
    kinds = np.array([k for k, _ in plan], dtype=np.int64)
    cutoffs = np.array([c for _, c in plan], dtype=np.int64)
    return kinds, cutoffs, columns


_TABLES = np.zeros((4, 1))  # double-double discount prefixes, grown on demand and shared by calls


def _tables(kinds, cutoffs, longest):
    """Double-double discount prefixes as deep as a DCG numerator may look (a 4 x 1 stand-in when
    none does)."""
    global _TABLES
    dcg = kinds == _k.DCG
    if not dcg.any() or longest <= _k.DIRECT_LIMIT:
        return _TABLES[:, :1]
    depth = longest if (cutoffs[dcg] == 0).any() else min(longest, int(cutoffs[dcg].max()))
    if _TABLES.shape[1] <= depth:
        _TABLES = _k.discount_tables(max(depth, 2 * (_TABLES.shape[1] - 1)))  # one assignment: thread-safe
    return _TABLES[:, : depth + 1]


def _split(kinds, cutoffs, gains, grades):
    """[(columns, kinds, cutoffs, values)]: the numerators over ``gains``, and ACG's and WAP's over
    ``grades``."""
    out = []
    for on_grades, values in ((False, gains), (True, grades)):
        picked = np.flatnonzero(np.isin(kinds, _ON_GRADES) == on_grades)
        if len(picked):
            picked_kinds = np.where(kinds[picked] == _GRADES, _k.GAINS, kinds[picked]).astype(np.int64)
            out.append((picked, read_only(picked_kinds), read_only(cutoffs[picked]),
                        read_only(np.asarray(values, dtype=np.float64))))
    return out


def _kernel(kinds, variants):
    """The variant of a spread kernel that ``kinds`` need (:data:`.tie_spread.SPREAD_VARIANTS`):
    ``_retrieved`` where a column is AP_RET or WAP_RET, ``_wap`` where one is WAP or WAP_RET; only
    those calls compile the hypergeometric mixtures, only these the WAP code."""
    retrieved = bool(np.isin(kinds, (_k.AP_RET, _k.WAP_RET)).any())
    weighted = bool(np.isin(kinds, (_k.WAP, _k.WAP_RET)).any())
    return variants[list(_k.SPREAD_VARIANTS.values()).index((retrieved, weighted))]


def hamming_spread(parsed: list[Metric], gains: np.ndarray, n_db: int,
                   ap_denominator: str) -> tuple[Callable[..., None], Callable[[], _Moments]]:
    """A callback for the Hamming pass: ``(on_counts, finish)``; ``on_counts(start, stop, hist)``
    takes each block's counts, ``finish()`` returns (means, variances, columns)."""
    kinds, cutoffs, columns = _plan(parsed, ap_denominator)
    kernel = _kernel(kinds, (_k.hamming_spread, _k.hamming_spread_retrieved, _k.hamming_spread_wap,
                             _k.hamming_spread_retrieved_wap))
    tables = read_only(_tables(kinds, cutoffs, n_db))
    parts = []

    def on_counts(start, stop, hist, n_threads=None):
        means, variances = np.zeros((stop - start, len(kinds))), np.zeros((stop - start, len(kinds)))
        grades = np.arange(hist.shape[2], dtype=np.float64)
        for picked, picked_kinds, picked_cutoffs, values in _split(kinds, cutoffs, gains[: hist.shape[2]], grades):
            part_means, part_variances = np.zeros((stop - start, len(picked))), np.zeros((stop - start, len(picked)))
            run_blocks(lambda lo, hi: kernel(hist, values, picked_kinds, picked_cutoffs, tables,
                                             _k.DIRECT_LIMIT, part_means, part_variances, lo, hi),
                       stop - start, resolve_threads(n_threads, 64 * (stop - start)))
            means[:, picked], variances[:, picked] = part_means, part_variances
        parts.append((means, variances))

    def finish():
        means = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, len(kinds)))
        variances = np.concatenate([p[1] for p in parts]) if parts else np.zeros((0, len(kinds)))
        return means, variances, columns

    return on_counts, finish


def list_spread(parsed: list[Metric], offsets: np.ndarray, scores: np.ndarray, grades: np.ndarray,
                gain_of: Callable[[np.ndarray, Any], npt.ArrayLike], relevance_level: float,
                extra_relevant_of: Callable[[float], npt.ArrayLike], n_threads: int | None,
                ap_denominator: str) -> _Moments:
    """(means, variances, columns) of scored lists: one pass per (relevance level, gain) of the
    metrics. ``gain_of(grades, gain)`` maps grades to gains; ``extra_relevant_of(level)`` gives
    the relevant items missing from each list."""
    kinds, cutoffs, columns = _plan(parsed, ap_denominator)
    kernel = _kernel(kinds, (_k.list_spread, _k.list_spread_retrieved, _k.list_spread_wap,
                             _k.list_spread_retrieved_wap))
    n_queries = len(offsets) - 1
    means, variances = np.zeros((n_queries, len(kinds))), np.zeros((n_queries, len(kinds)))
    longest = int(np.diff(offsets).max(initial=0))
    for (rel, metric_gain), group in passes([m for m in parsed if m.name in columns]):
        level = relevance_level if rel is None else rel
        metric_gain = dict(metric_gain) if isinstance(metric_gain, tuple) else metric_gain
        picked = np.array(sorted({columns[m.name] for m in group}), dtype=np.int64)
        tables = read_only(_tables(kinds[picked], cutoffs[picked], longest))
        relevant = read_only((grades >= level).astype(np.int64))
        extra = read_only(np.asarray(extra_relevant_of(level), dtype=np.int64))
        for sub, sub_kinds, sub_cutoffs, values in _split(kinds[picked], cutoffs[picked],
                                                          gain_of(grades, metric_gain), grades):
            part_means, part_variances = np.zeros((n_queries, len(sub))), np.zeros((n_queries, len(sub)))
            run_blocks(lambda lo, hi: kernel(read_only(offsets), read_only(scores), values, relevant, extra, sub_kinds,
                                             sub_cutoffs, tables, _k.DIRECT_LIMIT, part_means, part_variances, lo, hi),
                       n_queries, resolve_threads(n_threads, 16 * len(scores)))
            means[:, picked[sub]], variances[:, picked[sub]] = part_means, part_variances
    return means, variances, columns


def with_spread(result: Result, parsed: list[Metric], means: np.ndarray, variances: np.ndarray,
                columns: dict[str, int]) -> Result:
    """``result`` (keyed by canonical names) with ``tie_std`` and ``mean_tie_std`` filled.

    Per query: the metric's value times sqrt(Var) / E of its numerator; NaN where the value is
    NaN (a skipped query). Of the mean: sqrt(sum of the kept queries' variances) / their number
    (queries' tie orders are independent), not divided for the counts, which are sums.
    """
    tie_std, mean_tie_std = {}, {}
    for m in parsed:
        values = np.asarray(result.per_query[m.name], dtype=np.float64)
        if m.name in columns:
            mean, var = means[:, columns[m.name]], variances[:, columns[m.name]]
            ratio = np.divide(np.abs(values), mean, out=np.zeros_like(values), where=mean > 0)
            std = ratio * np.sqrt(var)
        elif m.base == "Success":
            std = np.sqrt(np.clip(values * (1.0 - values), 0.0, None))
        else:
            std = np.zeros_like(values)
        std = np.where(np.isnan(values), np.nan, std)
        tie_std[m.name] = std
        mean_tie_std[m.name] = mean_tie_std_of(m.name, std)  # one definition: Result.load of a CSV uses it too
    result.tie_std, result.mean_tie_std = tie_std, mean_tie_std
    result.__post_init__()
    return result
