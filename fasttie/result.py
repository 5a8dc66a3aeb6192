"""Result: per-query values and means of an evaluation, with JSON / CSV round trips."""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .errors import InputError, InputTypeError
from .metrics import COUNTS, aggregate, base_of
from .metrics.families import parse_metric

if TYPE_CHECKING:  # pandas is optional (the frame extra)
    import pandas as pd

__all__ = ["MetricValues", "Result"]


class MetricValues(dict[str, Any]):
    """A dict of metric values keyed by the names as asked (``"mAP@1000"``, ``"ndcg_cut_10"``);
    any other spelling of a key's metric finds it too (``"AP@1000"``, ``"nDCG@10"``).

    Examples
    --------
    >>> values = MetricValues({"mAP@1000": 0.5, "ndcg_cut_10": 0.25})
    >>> values["AP@1000"], "nDCG@10" in values, list(values)
    (0.5, True, ['mAP@1000', 'ndcg_cut_10'])
    """

    def __missing__(self, key: object) -> Any:
        spelling = self._spelling(key)
        if spelling is None:
            raise KeyError(key)
        return dict.__getitem__(self, spelling)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or self._spelling(key) is not None

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def _spelling(self, key: object) -> str | None:
        """The key naming the same metric as ``key``, or None."""
        wanted = _canonical(key)
        if wanted is None:
            return None
        return next((k for k in self if _canonical(k) == wanted), None)


def canonical_name(name: str) -> str:
    """The canonical name of a metric name as asked (``"num_ret"`` -> ``"NumRet"``); a name that
    is not one known metric comes back as it is."""
    return _canonical(name) or name


def _canonical(name: object) -> str | None:
    """The canonical name of one metric, or None (not a string, not one metric, unknown)."""
    if not isinstance(name, str):
        return None
    try:
        parsed = parse_metric(name)
    except ValueError:
        return None
    return parsed[0].name if len(parsed) == 1 else None


@dataclass
class Result:
    """Per-query values and means of every requested metric.

    Attributes
    ----------
    mean : MetricValues (a dict of str to float)
        Mean over queries; with ``empty="skip"`` over the queries with a relevant item. Keyed
        by the metric names as asked (``"mAP@1000"``, ``"ndcg_cut_10"``; a list item by item:
        ``"P@[5,10]"`` gives ``"P@5"``, ``"P@10"``), in the order asked; any other spelling of
        a key's metric finds it too (``"AP@1000"``, ``"nDCG@10"``).
    per_query : MetricValues (a dict of str to ndarray of float64, shape (n_queries,))
        NaN where a query was skipped; keyed as ``mean``.
    n_queries : int
    n_empty : int
        Queries without any relevant item, whatever the policy.
    settings : dict
        The conventions used (ties, ap_denominator, gain, empty, ...), for reports.
    curves : dict of str to ndarray, optional
        Filled when curves were asked for (see :func:`fasttie.evaluate`).
    query_ids : list, optional
        Query ids in the order of the per-query arrays, where the input named them.
    tie_std : MetricValues (a dict of str to ndarray of float64, shape (n_queries,))
        With ``spread=True``: per metric and query, the standard deviation of the metric over
        uniformly random orders inside ties (NaN where the query was skipped); keyed as
        ``mean``. Empty otherwise.
    mean_tie_std : MetricValues (a dict of str to float)
        With ``spread=True``: per metric, the standard deviation of ``mean`` over the tie orders
        of all queries (independent: the square root of the summed variances over the kept
        queries, divided by their number; not divided for the counts, which are sums).
    tie_min, tie_max : MetricValues (a dict of str to ndarray of float64, shape (n_queries,))
        With ``spread=True`` or ``spread="range"``: per metric and query, the lowest / highest
        value of the metric over every order inside ties (NaN where the query was skipped).
    mean_tie_min, mean_tie_max : MetricValues (a dict of str to float)
        Per metric, the lowest / highest ``mean`` over the tie orders of all queries (queries'
        orders are independent: the mean of the per-query extremes; for GMAP the geometric
        mean, for the counts the sum).
    """

    mean: dict[str, float]
    per_query: dict[str, np.ndarray]
    n_queries: int
    n_empty: int
    settings: dict[str, Any] = field(default_factory=dict)
    curves: dict[str, np.ndarray] = field(default_factory=dict)
    query_ids: list[Any] | None = None
    tie_std: dict[str, np.ndarray] = field(default_factory=dict)
    mean_tie_std: dict[str, float] = field(default_factory=dict)
    tie_min: dict[str, np.ndarray] = field(default_factory=dict)
    tie_max: dict[str, np.ndarray] = field(default_factory=dict)
    mean_tie_min: dict[str, float] = field(default_factory=dict)
    mean_tie_max: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("mean", "per_query", *_SPREAD_FIELDS, *_MEAN_SPREAD_FIELDS):
            setattr(self, name, MetricValues(getattr(self, name)))

    def keyed_as(self, asked: dict[str, str]) -> Result:
        """The same result keyed by the names as asked.

        Parameters
        ----------
        asked : dict of str to str
            Asked spelling -> canonical name (:func:`fasttie.metrics.families.asked_names`).

        Returns
        -------
        Result
            ``mean`` and ``per_query`` keyed by the asked spellings, in their order (two
            spellings of one metric share its values); the rest unchanged.
        """
        mean = {key: self.mean[name] for key, name in asked.items()}
        keyed: dict[str, Any] = {field_name: {key: getattr(self, field_name)[name] for key, name in asked.items()
                              if name in getattr(self, field_name)}
                 for field_name in ("per_query", *_SPREAD_FIELDS, *_MEAN_SPREAD_FIELDS)}
        return replace(self, mean=mean, **keyed)

    def to_dict(self, per_query: bool = True) -> dict[str, Any]:
        """Plain JSON-serialisable dictionary (NaN becomes None).

        Parameters
        ----------
        per_query : bool, default True
            Include the per-query values (leave them out for a summary).

        Returns
        -------
        dict
            Keys ``mean``, ``n_queries``, ``n_empty``, ``settings``, and where present
            ``per_query``, ``curves``, ``query_ids``, ``mean_tie_std``, ``mean_tie_min``,
            ``mean_tie_max`` and ``tie_std``, ``tie_min``, ``tie_max`` (with the per-query
            values). :meth:`from_dict` restores it exactly.
        """
        out: dict[str, Any] = {
            "mean": {k: _clean(v) for k, v in self.mean.items()},
            "n_queries": self.n_queries,
            "n_empty": self.n_empty,
            "settings": dict(self.settings),
        }
        if per_query:
            out["per_query"] = {
                k: [_clean(x) for x in np.asarray(v, dtype=np.float64)] for k, v in self.per_query.items()
            }
        if self.curves:
            out["curves"] = {k: _curve_list(v) for k, v in self.curves.items()}
        if self.query_ids is not None:
            # numpy scalars (ids taken from an array) as plain Python values for JSON
            out["query_ids"] = [x.item() if isinstance(x, np.generic) else x for x in self.query_ids]
        for of_mean, of_queries in zip(_MEAN_SPREAD_FIELDS, _SPREAD_FIELDS):
            if getattr(self, of_mean):
                out[of_mean] = {k: _clean(v) for k, v in getattr(self, of_mean).items()}
                if per_query:
                    out[of_queries] = {k: [_clean(x) for x in np.asarray(v, dtype=np.float64)]
                                       for k, v in getattr(self, of_queries).items()}
        return out

    def to_json(self, **kwargs: Any) -> str:
        """JSON text of :meth:`to_dict` (``allow_nan`` is never needed).

        Parameters
        ----------
        **kwargs
            Passed to :func:`json.dumps` (``indent=2`` for people).

        Returns
        -------
        str
        """
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Rebuild a Result from :meth:`to_dict` output (also after a trip through JSON).

        ``None`` becomes NaN again, per-query lists become float64 arrays, curves become
        ndarrays (integer lists such as ``radius`` and ``n`` stay int64), ``query_ids`` a list.

        Parameters
        ----------
        data : dict
            As written by :meth:`to_dict`; ``per_query``, ``curves`` and ``query_ids`` optional.

        Returns
        -------
        Result

        Raises
        ------
        TypeError
            ``data`` is not a dictionary.
        ValueError
            A required key (``mean``, ``n_queries``, ``n_empty``) is missing, or a per-query
            list does not have ``n_queries`` values.

        Examples
        --------
        >>> r = Result({"AP": 0.5}, {"AP": np.array([1.0, 0.0])}, n_queries=2, n_empty=0)
        >>> Result.from_json(r.to_json()).to_dict() == r.to_dict()
        True
        """
        if not isinstance(data, dict):
            raise InputTypeError(f"Result.from_dict needs a dict as written by Result.to_dict, got {type(data).__name__}")
        missing = [k for k in ("mean", "n_queries", "n_empty") if k not in data]
        if missing:
            raise InputError(f"Result.from_dict: missing key(s) {missing}; expected the output of Result.to_dict")
        n_queries = int(data["n_queries"])
        arrays: dict[str, Any] = {key: {} for key in ("per_query", *_SPREAD_FIELDS)}
        for key, out in arrays.items():
            for name, values in (data.get(key) or {}).items():
                array = np.array([np.nan if x is None else x for x in values], dtype=np.float64)
                if array.shape != (n_queries,):
                    raise InputError(
                        f"Result.from_dict: {key}[{name!r}] has {array.size} values but n_queries is {n_queries}"
                    )
                out[name] = array
        curves = {name: _curve_array(values) for name, values in (data.get("curves") or {}).items()}
        query_ids = data.get("query_ids")
        mean_spread: dict[str, Any] = {
            key: {k: float("nan") if v is None else float(v) for k, v in (data.get(key) or {}).items()}
            for key in _MEAN_SPREAD_FIELDS}
        return cls(
            mean={k: float("nan") if v is None else float(v) for k, v in data["mean"].items()},
            n_queries=n_queries,
            n_empty=int(data["n_empty"]),
            settings=dict(data.get("settings") or {}),
            curves=curves,
            query_ids=None if query_ids is None else list(query_ids),
            **arrays,
            **mean_spread,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Result:
        """Rebuild a Result from :meth:`to_json` text (see :meth:`from_dict`).

        Parameters
        ----------
        text : str or bytes

        Returns
        -------
        Result
        """
        return cls.from_dict(json.loads(text))

    def to_frame(self, per_query: bool = True) -> pd.DataFrame:
        """The values as a pandas DataFrame, one column per metric.

        Parameters
        ----------
        per_query : bool, default True
            One row per query, indexed by ``query_ids`` when present, else 0..n-1 (index name
            "query"), NaN where a query was skipped. False: a one-row frame of the means
            (index ``["mean"]``).

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        ImportError
            pandas is not installed (``pip install 'fasttie[frame]'``).
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("pandas is needed for Result.to_frame: pip install 'fasttie[frame]'") from None
        if not per_query:
            return pd.DataFrame({k: [float(v)] for k, v in self.mean.items()}, index=pd.Index(["mean"]))
        ids = range(self.n_queries) if self.query_ids is None else list(self.query_ids)
        index = pd.Index(ids, name="query")
        return pd.DataFrame({k: np.asarray(v, dtype=np.float64) for k, v in self.per_query.items()}, index=index)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the result to ``path``, format by extension.

        ``.json``: :meth:`to_json` (everything, exact round trip through :meth:`load`).
        ``.csv``: the per-query table, header ``query,<metric>,...``, one row per query (the
        query id, or its position 0..n-1), empty cells where a query was skipped, floats
        written with full precision. A result with ``tie_std``, ``tie_min``, ``tie_max``
        (``spread=True``) adds columns ``tie_std(<metric>)``, ``tie_min(<metric>)``,
        ``tie_max(<metric>)`` after the metrics; :meth:`load` reads them back and recomputes
        the means' spread.

        Parameters
        ----------
        path : str or os.PathLike

        Raises
        ------
        ValueError
            Any other extension, or ``.csv`` for a Result without per-query values.
        """
        path = os.fspath(path)
        kind = _file_kind(path, "save")
        if kind == "json":
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.to_json())
            return
        if not self.per_query:
            raise InputError(f"cannot save {path!r} as CSV: this Result has no per-query values (save it as .json)")
        names = list(self.per_query)
        columns = [np.asarray(self.per_query[k], dtype=np.float64) for k in names]
        spread = [(field_name, k) for field_name in _SPREAD_FIELDS for k in names
                  if dict.__contains__(getattr(self, field_name), k)]
        columns += [np.asarray(getattr(self, field_name)[k], dtype=np.float64) for field_name, k in spread]
        ids = range(self.n_queries) if self.query_ids is None else self.query_ids
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["query", *names, *(f"{field_name}({k})" for field_name, k in spread)])
            for i, qid in enumerate(ids):
                writer.writerow([qid, *("" if np.isnan(c[i]) else repr(float(c[i])) for c in columns)])

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Result:
        """Read a result written by :meth:`save`, format by extension.

        ``.json`` restores everything. ``.csv`` gives ``per_query``, ``mean`` (over the
        non-empty cells, as the evaluation computes it) and ``n_queries``; ``settings`` is empty,
        ``query_ids`` are the query column as strings (None when it is just 0..n-1), and
        ``n_empty`` counts the rows with every cell empty (skipped queries): the CSV does not
        record the empty-query policy. ``tie_std(<metric>)``, ``tie_min(<metric>)`` and
        ``tie_max(<metric>)`` columns fill ``tie_std``, ``tie_min``, ``tie_max``, and the means'
        spread is computed from them as the evaluation does (:func:`mean_tie_std_of`,
        :func:`fasttie.metrics.aggregate`).

        Parameters
        ----------
        path : str or os.PathLike

        Returns
        -------
        Result

        Raises
        ------
        ValueError
            Another extension, a JSON file that is not a result, or a CSV without a ``query``
            first column, with ragged rows or with cells that are not numbers; the message
            names the file.
        """
        path = os.fspath(path)
        kind = _file_kind(path, "load")
        with open(path, encoding="utf-8", newline="") as f:
            if kind == "json":
                try:
                    return cls.from_json(f.read())
                except (ValueError, TypeError) as error:  # not JSON (JSONDecodeError, UnicodeDecodeError), not a Result
                    raise InputError(f"{path!r} is not a fasttie result (write one with Result.save or 'fasttie "
                                     f"evaluate --per-query-file FILE.json'): {error}") from None
            rows = list(csv.reader(f))
        if not rows or not rows[0] or rows[0][0] != "query":
            raise InputError(f"{path!r}: a per-query CSV starts with the header 'query,<metric>,...'")
        names, body = rows[0][1:], [r for r in rows[1:] if r]
        values = np.empty((len(body), len(names)))
        for line, row in enumerate(body, start=2):
            if len(row) != len(names) + 1:
                raise InputError(f"{path!r} line {line}: {len(row)} cells, expected {len(names) + 1}")
            try:
                values[line - 2] = [float(x) if x.strip() else np.nan for x in row[1:]]
            except ValueError:
                raise InputError(f"{path!r} line {line}: a metric value is not a number") from None
        ids = [r[0] for r in body]
        per_query: dict[str, np.ndarray] = {}
        spread: dict[str, dict[str, np.ndarray]] = {field_name: {} for field_name in _SPREAD_FIELDS}
        for j, name in enumerate(names):
            field_name, metric = _spread_column(name)
            (per_query if field_name is None else spread[field_name])[metric] = values[:, j].copy()
        unknown = [f"{field_name}({k})" for field_name, of in spread.items() for k in of if k not in per_query]
        if unknown:
            raise InputError(f"{path!r}: column(s) {unknown} name no metric column of the file")
        metric_columns = [j for j, name in enumerate(names) if _spread_column(name)[0] is None]
        mean = {}
        for name, column in per_query.items():
            mean[name] = aggregate(_canonical(name) or name, column)  # num_ret sums, gm_map is geometric
        tie_fields: dict[str, Any] = {field_name: {k: of[k] for k in per_query if k in of}
                                      for field_name, of in spread.items()}
        mean_extremes: dict[str, Any] = {f"mean_{field_name}": {k: aggregate(_canonical(k) or k, spread[field_name][k])
                                                                for k in per_query if k in spread[field_name]}
                                         for field_name in ("tie_min", "tie_max")}
        return cls(
            mean=mean,
            per_query=per_query,
            n_queries=len(body),
            n_empty=int(np.isnan(values[:, metric_columns]).all(axis=1).sum()) if metric_columns else 0,
            settings={},
            query_ids=None if ids == [str(i) for i in range(len(ids))] else ids,
            **tie_fields,
            mean_tie_std={k: mean_tie_std_of(k, spread["tie_std"][k]) for k in per_query if k in spread["tie_std"]},
            **mean_extremes,
        )

    def __repr__(self) -> str:
        # spread=True: each mean with its standard deviation over tie orders, as the CLI table prints it
        means = ", ".join(f"{k}={v:.4f}" + (f" ± {self.mean_tie_std[k]:.2g}" if dict.__contains__(self.mean_tie_std, k)
                                              else "") for k, v in self.mean.items())
        return f"Result(n_queries={self.n_queries}, n_empty={self.n_empty}, {means})"


# spread=True's per-query fields (CSV columns "<field>(<metric>)") and those of the means
_SPREAD_FIELDS = ("tie_std", "tie_min", "tie_max")
_MEAN_SPREAD_FIELDS = ("mean_tie_std", "mean_tie_min", "mean_tie_max")


def _spread_column(column):
    """(field, metric) of a ``tie_std(<metric>)`` / ``tie_min(...)`` / ``tie_max(...)`` CSV
    column, (None, column) for a metric column."""
    for field_name in _SPREAD_FIELDS:
        if column.startswith(f"{field_name}(") and column.endswith(")"):
            return field_name, column[len(field_name) + 1:-1]
    return None, column


def mean_tie_std_of(name: str, std: npt.ArrayLike) -> float:
    """The standard deviation of a metric's mean over the tie orders of all its queries.

    Parameters
    ----------
    name : str
        The metric (any spelling; the counts NumRet, NumRel, ... are sums, not means).
    std : ndarray of float64, shape (n_queries,)
        Per-query ``tie_std``, NaN where the query was skipped.

    Returns
    -------
    float
        sqrt(sum of the kept queries' variances) / their number (queries' tie orders are
        independent), not divided for the counts; NaN when no query is kept.
    """
    std = np.asarray(std, dtype=np.float64)
    kept = std[~np.isnan(std)]
    if not len(kept):
        return float("nan")
    total = math.sqrt(float(np.sum(kept * kept)))
    return total if base_of(_canonical(name) or name) in COUNTS else total / len(kept)


def _clean(x):
    x = float(x)
    return None if np.isnan(x) else x


def _curve_list(values):
    """Curve as a JSON list: integer arrays stay integers, NaN becomes None."""
    array = np.asarray(values)
    if array.dtype.kind in "iub":
        return array.tolist()
    return [None if np.isnan(x) else x for x in array.astype(np.float64).tolist()]


def _curve_array(values):
    """Inverse of _curve_list: int64 when every entry is an integer, else float64 with NaN."""
    if values and all(isinstance(x, int) and not isinstance(x, bool) for x in values):
        return np.array(values, dtype=np.int64)
    return np.array([np.nan if x is None else x for x in values], dtype=np.float64)


def _file_kind(path, verb):
    lower = path.lower()
    for ext in ("json", "csv"):
        if lower.endswith("." + ext):
            return ext
    raise InputError(f"cannot {verb} {path!r}: use a .json or .csv file name (the format follows the extension)")
