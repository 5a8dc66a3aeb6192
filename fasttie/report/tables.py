"""Results for people and for scripts: aligned tables with the convention of each metric, CSV,
and trec_eval-style lines.

A mean is only comparable with another under the same conventions, so the table states, for
every metric, the ones that change its value: the AP@k / WAP@k denominator, the gain of DCG
and nDCG, the tie convention, and the empty-query policy with how many queries it touched.
"""

from __future__ import annotations

import math

import numpy as np

from ..metrics import COUNTS, GEOMETRIC_FLOOR, RATIO_BASES, base_of, parse_metrics
from ..result import Result, canonical_name

__all__ = ["convention", "format_csv", "format_table", "format_trec", "format_trec_csv"]

_AP_DENOMINATOR = {"retrieved": "retrieved", "total": "total (R)", "min": "min(k, R)"}
# trec_eval prints these only in its "all" lines (GMAP per query is AP; NumQ per query is 1)
_ALL_ONLY = ("GMAP", "GMBpref", "NumQ")


def _value(x: float, digits: int, name: str = "") -> str:
    if math.isnan(x):
        return "nan"
    if base_of(canonical_name(name)) in COUNTS and float(x).is_integer():
        return str(int(x))  # as trec_eval prints its counts
    return f"{x:.{digits}f}"


def _exact(x: float) -> str:
    """Shortest text that reads back to the same float (``repr``)."""
    return "nan" if math.isnan(x) else repr(float(x))


def convention(name: str, settings: dict, n_empty: int, n_queries: int, n_skipped: int | None = None) -> str:
    """The conventions that decide one metric's value, as one line of text.

    Parameters
    ----------
    name : str
        Canonical metric name (a key of ``Result.mean``).
    settings : dict
        ``Result.settings`` (``ties``, ``ap_denominator``, ``gain``, ``empty``, ...). Empty for
        results read back from a CSV file: then only the empty-query count is stated.
    n_empty, n_queries : int
        Queries without a relevant item, and all queries.
    n_skipped : int, optional
        Queries left out of this metric's mean (NaN), stated for ``empty="skip_missed"``.

    Returns
    -------
    str

    Examples
    --------
    >>> convention("AP@1000", {"ties": "average", "ap_denominator": "retrieved", "empty": "zero"}, 12, 1000)
    'denominator = retrieved; ties = average; empty = zero (12 of 1000 queries without relevant items)'
    """
    (metric,) = parse_metrics(name)
    parts = []
    if metric.base in COUNTS:
        parts.append("sum over queries")
    if metric.base in ("GMAP", "GMBpref"):
        parts.append(f"geometric mean of max({'AP' if metric.base == 'GMAP' else 'Bpref'}, {GEOMETRIC_FLOOR:g})")
    if metric.base in RATIO_BASES and (metric.k, metric.radius) != (None, None) and "ap_denominator" in settings:
        parts.append(f"denominator = {_AP_DENOMINATOR.get(settings['ap_denominator'], settings['ap_denominator'])}")
    if metric.base in ("nDCG", "DCG") and "gain" in settings:
        gain = {"exp2": "2^g - 1", "linear": "g"}.get(settings["gain"], settings["gain"])
        log_base = settings.get("log_base", 2)
        discount = "" if log_base == 2 else f", discount log base {log_base:g}"
        parts.append(f"gain = {settings['gain']} ({gain}){discount}")
    if metric.radius is not None:  # AP within a radius is the only one that a tie order changes
        parts.append(f"distance <= {metric.radius}" + ("" if metric.base == "AP" else ", no tie order"))
    if (metric.radius is None or metric.base == "AP") and "ties" in settings:
        parts.append(f"ties = {settings['ties']}")
    policy = settings.get("empty")
    count = f"{n_empty} of {n_queries} queries without relevant items"
    if policy == "skip_missed" and n_skipped is not None:
        count = f"{n_skipped} of {n_queries} queries without a relevant item retrieved, left out"
    parts.append(f"empty = {policy} ({count})" if policy else count)
    return "; ".join(parts)


def format_table(result: Result, *, digits: int = 4) -> str:
    """Aligned table: metric, mean value, convention (one row per metric).

    Parameters
    ----------
    result : Result
    digits : int, default 4
        Decimals of the values.

    Returns
    -------
    str
        Lines joined by newlines, no trailing newline.
    """
    # spread=True: "mean ± its standard deviation over tie orders"
    spread = {name: f" ± {std:.2g}" for name, std in result.mean_tie_std.items()}
    rows = [
        (name, _value(value, digits, name) + spread.get(name, ""),
         convention(name, result.settings, result.n_empty, result.n_queries,
                    int(np.isnan(result.per_query[name]).sum()) if name in result.per_query else None))
        for name, value in result.mean.items()
    ]
    header = ("metric", "value", "convention")
    name_width = max(len(header[0]), *(len(r[0]) for r in rows))
    value_width = max(len(header[1]), *(len(r[1]) for r in rows))
    lines = [f"{a:<{name_width}}  {b:>{value_width}}  {c}" for a, b, c in (header, *rows)]
    return "\n".join(line.rstrip() for line in lines)


def format_csv(result: Result) -> str:
    """``metric,query,value`` rows of the means (query ``all``), full float precision, with a
    header line: the columns of :func:`format_trec_csv`, so one reader takes both.

    A result evaluated with ``spread=True`` gets a fourth column, ``tie_std``: the standard
    deviation of the mean over tie orders (``Result.mean_tie_std``). Without it the rows keep
    their three columns.
    """
    spread = bool(result.mean_tie_std)
    lines = ["metric,query,value" + (",tie_std" if spread else "")]
    for name, value in result.mean.items():
        std = _std_cell(result.mean_tie_std, name) if spread else ""
        lines.append(f"{_csv_field(name)},all,{_exact(value)}{std}")
    return "\n".join(lines)


def _std_cell(stds, name, i=None) -> str:
    """``,<std>`` of one metric (the mean's, or query i's), ``,`` where the metric has none."""
    if name not in stds:
        return ","
    return "," + _exact(float(stds[name] if i is None else stds[name][i]))


def _csv_field(text: str) -> str:
    # metric lists like P@[1,10] are expanded before they reach a Result, but quote commas anyway
    return f'"{text}"' if "," in text or '"' in text else text


def _query_ids(result: Result) -> list[str]:
    return [str(q) for q in result.query_ids] if result.query_ids is not None else [str(i) for i in range(result.n_queries)]


def format_trec(result: Result, *, per_query: bool = False, digits: int = 4, runid: str | None = None,
                summary: bool = True, texts: dict | None = None) -> str:
    """trec_eval's lines ``measure \t qid \t value``: per query (``trec_eval -q``), then ``all``.

    Parameters
    ----------
    result : Result
        From :func:`fasttie.trec.evaluate` (query ids in ``result.query_ids``); measures are
        printed under its keys, in their order.
    per_query : bool, default False
        Also print one line per query and metric, queries in ``result.query_ids`` order (the
        measures trec_eval prints in ``all`` only, GMAP, GMBpref and NumQ, excepted).
    digits : int, default 4
        Decimals, as trec_eval's ``%.4f``.
    runid : str, optional
        The run's tag, printed first among the ``all`` lines as trec_eval's ``runid``.
    summary : bool, default True
        Print the ``all`` lines (False: trec_eval ``-n``, the runid line left out too).
    texts : dict of str to dict, optional
        Measures whose value is text (trec_eval's ``relstring``): name -> {query id: text},
        printed quoted per query in the place of the name's column in ``result.per_query``
        (which holds a placeholder there), with no ``all`` line.

    Returns
    -------
    str
    """
    texts = texts or {}
    lines = []  # trec_eval's "%-22s": names pad to 22 characters, longer ones print whole
    if per_query:
        for i, qid in enumerate(_query_ids(result)):
            for name, values in result.per_query.items():
                if name in texts:
                    lines.append(f"{name:<22}\t{qid}\t'{texts[name][qid]}'")
                elif base_of(canonical_name(name)) not in _ALL_ONLY:
                    lines.append(f"{name:<22}\t{qid}\t{_value(float(values[i]), digits, name)}")
    if not summary:
        return "\n".join(lines)
    if runid is not None:
        lines.append(f"{'runid':<22}\tall\t{runid}")
    for name, value in result.mean.items():
        if name not in texts:
            lines.append(f"{name:<22}\tall\t{_value(value, digits, name)}")
    return "\n".join(lines)


def format_trec_csv(result: Result, *, per_query: bool = False) -> str:
    """The lines of :func:`format_trec` as CSV ``metric,query,value``, full precision.

    A result evaluated with ``spread=True`` gets a fourth column, ``tie_std``: the query's
    ``Result.tie_std`` on per-query rows, ``Result.mean_tie_std`` on the ``all`` rows (nan
    where the query was skipped). Without it the rows keep their three columns.
    """
    spread = bool(result.mean_tie_std)
    lines = ["metric,query,value" + (",tie_std" if spread else "")]
    if per_query:
        for i, qid in enumerate(_query_ids(result)):
            for name, values in result.per_query.items():
                if base_of(canonical_name(name)) not in _ALL_ONLY:
                    lines.append(f"{_csv_field(name)},{_csv_field(qid)},{_exact(float(values[i]))}"
                                 + (_std_cell(result.tie_std, name, i) if spread else ""))
    lines.extend(f"{_csv_field(name)},all,{_exact(value)}" + (_std_cell(result.mean_tie_std, name) if spread else "")
                 for name, value in result.mean.items())
    return "\n".join(lines)
