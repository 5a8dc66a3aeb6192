"""Figures of the curves in ``Result.curves``: PR by Hamming radius, P@N and R@N.

matplotlib is optional (``pip install 'fasttie[plot]'``). Figures are drawn on a
``matplotlib.figure.Figure`` with the Agg canvas, without pyplot, so no GUI backend is touched
and the user's pyplot state is left alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .hamming.rescore import RescoreSweep
from .result import Result
from .errors import InputError, InputTypeError

if TYPE_CHECKING:  # matplotlib is optional (the plot extra)
    from matplotlib.figure import Figure

__all__ = ["plot_curves", "plot_oversampling"]

KINDS = ("pr", "p_at_n", "r_at_n")
# kind -> (x key, y key, x label, y label, subplot title, log x)
_LAYOUT = {
    "pr": ("recall_by_radius", "precision_by_radius", "Recall", "Precision", "PR by Hamming radius", False),
    "p_at_n": ("n", "precision_at_n", "N (retrieved)", "P@N", "Precision at N", True),
    "r_at_n": ("n", "recall_at_n", "N (retrieved)", "R@N", "Recall at N", False),
}
_FORMATS = (".png", ".pdf")
RADIUS_MEANS = ("all", "retrieving")


def plot_curves(results: Result | Mapping[str, Result], path: str | os.PathLike[str] | None = None, *,
                kinds: Sequence[str] = KINDS, label: str | None = None, radius_mean: str = "all",
                title: str | None = None, size: tuple[float, float] = (1200, 400), dpi: float = 100) -> Figure:
    """Draw precision-recall by Hamming radius, P@N and R@N curves of one or several methods.

    Parameters
    ----------
    results : Result or dict of str to Result
        From ``fasttie.evaluate(..., curves=True)``; a dict draws several methods in one
        figure, labelled by its keys in the legend.
    path : str or os.PathLike, optional
        Save the figure there, as PNG or PDF by the extension (``.png`` / ``.pdf``).
    kinds : sequence of {"pr", "p_at_n", "r_at_n"}, default all three
        One subplot per kind, in this order: "pr" precision against recall within each
        Hamming radius 0..n_bits (one marker per radius), "p_at_n" P@N against N (log x),
        "r_at_n" R@N against N.
    label : str, optional
        Legend label of a single Result (a dict's keys are its labels); without it a single
        Result is drawn without a legend.
    radius_mean : {"all", "retrieving"}, default "all"
        The precision of the "pr" curve at each radius: the mean over all queries, 0 for a
        query with nothing within the radius (the usual convention, which makes the curve dive
        to (0, 0) at small radii), or over the queries that retrieve something there only
        (``Result.curves["precision_by_radius_retrieving"]``; no point where none does).
    title : str, optional
        Figure title; by default the convention: ties, empty-query policy and count,
        n_queries, n_db and n_bits.
    size : (int, int), default (1200, 400)
        Width and height in pixels; a PNG is saved at exactly this size.
    dpi : int or float, default 100

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ImportError
        matplotlib is not installed (``pip install 'fasttie[plot]'``).
    TypeError
        ``results`` is not a Result or a dict of them.
    ValueError
        A Result without curves (evaluate with ``curves=True``), an unknown kind or
        radius_mean, a label for a dict, a bad size or dpi, or a path whose extension is not ``.png`` or ``.pdf``.

    Examples
    --------
    >>> import numpy as np, fasttie as ft
    >>> codes = np.random.default_rng(0).integers(0, 2, (40, 16))
    >>> labels = np.arange(40) % 3
    >>> res = ft.evaluate(codes[:5], codes, labels[:5], labels, metrics="AP", curves=True)
    >>> figure = plot_curves({"random codes": res})    # plot_curves(..., "curves.png") saves it
    >>> [ax.get_title() for ax in figure.axes]
    ['PR by Hamming radius', 'Precision at N', 'Recall at N']
    """
    if path is not None:
        path = os.fspath(path)
        extension = os.path.splitext(path)[1].lower()
        if extension not in _FORMATS:
            raise InputError(
                f"cannot save a plot as {extension or 'a file without extension'!r} ({path!r}): "
                "use a .png or .pdf file name"
            )
    methods = _methods(results, label)
    kinds = _check_kinds(kinds)
    if radius_mean not in RADIUS_MEANS:
        raise InputError(f"{{radius_mean}} must be 'all' or 'retrieving', got {radius_mean!r}", argument="radius_mean")
    layout = dict(_LAYOUT)
    if radius_mean == "retrieving":
        layout["pr"] = ("recall_by_radius", "precision_by_radius_retrieving", "Recall",
                        "Precision (queries retrieving)", "PR by Hamming radius", False)
    width, height = _check_size(size)
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not dpi > 0:
        raise InputError(f"dpi must be a positive number, got {dpi!r}")
    for label, result in methods.items():
        missing = [k for kind in kinds for k in layout[kind][:2] if k not in (result.curves or {})]
        if missing:
            raise InputError(
                f"result {label!r} has no curves ({missing[0]!r} missing): evaluate it with "
                "fasttie.evaluate(..., curves=True)" + (" (this version keeps the queries retrieving)"
                                                       if missing[0] == "precision_by_radius_retrieving" else "")
            )

    figure, axes = _panels(width, height, dpi, len(kinds))
    for ax, kind in zip(axes, kinds):
        x_key, y_key, x_label, y_label, subtitle, log_x = layout[kind]
        for label, result in methods.items():
            x = np.asarray(result.curves[x_key], dtype=np.float64)
            y = np.asarray(result.curves[y_key], dtype=np.float64)
            ax.plot(x, y, marker="." if kind == "pr" else None, label=label)
        if log_x:
            ax.set_xscale("log")
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        ax.set_title(subtitle, fontsize="medium")
        ax.grid(True, alpha=0.3)
        if None not in methods:
            ax.legend(fontsize="small")
    figure.suptitle(title if title is not None else _convention(methods), fontsize="medium")
    if path is not None:
        # no bbox_inches="tight": the file keeps exactly the requested pixel size
        figure.savefig(path, dpi=dpi, format=os.path.splitext(path)[1][1:].lower())
    return figure


def _methods(results, label):
    if isinstance(results, Result):
        return {None if label is None else str(label): results}
    if label is not None:
        raise InputError("{label} names a single Result; a dict's keys are its labels", argument="label")
    if not isinstance(results, dict) or not results:
        raise InputTypeError(f"results must be a Result or a non-empty dict {{label: Result}}, got {type(results).__name__}")
    for label, result in results.items():
        if not isinstance(result, Result):
            raise InputTypeError(f"results[{label!r}] must be a fasttie Result, got {type(result).__name__}")
    return {str(label): result for label, result in results.items()}


def _check_kinds(kinds):
    if isinstance(kinds, str):
        kinds = (kinds,)
    kinds = tuple(kinds)
    if not kinds:
        raise InputError(f"kinds is empty; choose from {KINDS}")
    for kind in kinds:
        if kind not in KINDS:
            raise InputError(f"unknown plot kind {kind!r}; choose from {KINDS}")
    if len(set(kinds)) != len(kinds):
        raise InputError(f"kinds repeats a kind: {kinds}")
    return kinds


def _check_size(size):
    try:
        width, height = size
    except (TypeError, ValueError):
        raise InputError(f"size must be (width, height) in pixels, got {size!r}") from None
    for value in (width, height):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 16:
            raise InputError(f"size must be two integers >= 16 (pixels), got {size!r}")
    return int(width), int(height)


def _convention(methods):
    """One line: the settings every method shares, 'a/b' where they differ."""

    def joined(get):
        values = []
        for result in methods.values():
            value = get(result)
            if value not in values:
                values.append(value)
        return "/".join(str(v) for v in values)

    def s(key):
        return joined(lambda r: r.settings.get(key, "?"))

    return (
        f"ties={s('ties')}, empty={s('empty')} ({joined(lambda r: r.n_empty)} empty), "
        f"{joined(lambda r: r.n_queries)} queries x {s('n_db')} database codes, {s('n_bits')} bits"
    )


def plot_oversampling(sweep: RescoreSweep, metrics: str | Sequence[str], path: str | os.PathLike[str] | None = None, *,
                      k: int | None = None, ceiling: Mapping[str, float] | None = None, title: str | None = None,
                      size: tuple[float, float] = (900, 400), dpi: float = 100) -> Figure:
    """Metric against the oversampling factor of a binary-quantization pipeline, with the band of
    the tied-candidate choices and the float-search ceiling.

    Parameters
    ----------
    sweep : RescoreSweep
        From :func:`fasttie.rescore_evaluate` with a list of candidate counts; with
        ``spread=True`` each curve is drawn inside its band, the lowest and highest mean over
        the choices of the tied candidates (``mean_tie_min``, ``mean_tie_max``).
    metrics : str or sequence of str
        Keys of the sweep, one subplot each.
    path : str or os.PathLike, optional
        Save the figure there (``.png`` or ``.pdf``).
    k : int, optional
        The oversampling factor is candidates / k; default each metric's cutoff.
    ceiling : dict of str to float, optional
        Per metric the value of the exact float search (every item rescored:
        ``rescore_evaluate(..., candidates=n_db)``), drawn as a dashed line.
    title : str, optional
    size : (int, int), default (900, 400)
        Pixels.
    dpi : int or float, default 100

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    TypeError
        ``sweep`` is not a RescoreSweep.
    ValueError
        A metric the sweep lacks, a metric without a cutoff and no ``k``, a bad path, size or dpi.

    Examples
    --------
    >>> import numpy as np, fasttie as ft
    >>> from fasttie.plots import plot_oversampling
    >>> data = ft.datasets.binarized_embeddings(n_db=300, n_queries=5, dim=32, seed=0)
    >>> sweep = ft.rescore_evaluate(data.query_codes, data.db_codes, data.query_vectors, data.db_vectors,
    ...                             candidates=[10, 20, 40], metrics="nDCG@10", query_labels=data.query_labels,
    ...                             db_labels=data.db_labels, spread=True)
    >>> figure = plot_oversampling(sweep, "nDCG@10")
    >>> figure.axes[0].get_xlabel()
    'oversampling (candidates / 10)'
    """
    if not isinstance(sweep, RescoreSweep):
        raise InputTypeError(f"{{sweep}} must be a RescoreSweep (rescore_evaluate with a list of candidates), "
                             f"got {type(sweep).__name__}", argument="sweep")
    if path is not None:
        path = os.fspath(path)
        if os.path.splitext(path)[1].lower() not in _FORMATS:
            raise InputError(f"cannot save a plot as {path!r}: use a .png or .pdf file name")
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise InputError("{metrics} is empty", argument="metrics")
    for name in names:
        if name not in sweep.results[0].mean:
            raise InputError(f"{{metrics}}: the sweep has no metric {name!r} (it has {list(sweep.results[0].mean)})",
                             argument="metrics")
    width, height = _check_size(size)
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not dpi > 0:
        raise InputError(f"dpi must be a positive number, got {dpi!r}")
    figure, axes = _panels(width, height, dpi, len(names))
    order = np.argsort(sweep.candidates, kind="stable")
    for ax, name in zip(axes, names):
        cutoff = k
        if cutoff is None:
            found = name.rsplit("@", 1)
            if len(found) != 2 or not found[1].strip().isdigit():
                raise InputError(f"{{k}} is needed: metric {name!r} has no cutoff", argument="k")
            cutoff = int(found[1])
        x = np.asarray(sweep.candidates, dtype=np.float64)[order] / cutoff
        ax.plot(x, sweep.curve(name)[order], marker=".", label="average over tie choices")
        if sweep.results[0].mean_tie_min:
            ax.fill_between(x, sweep.curve(name, "min")[order], sweep.curve(name, "max")[order], alpha=0.25,
                            label="worst / best tie choice")
        if ceiling is not None and name in ceiling:
            ax.axhline(ceiling[name], linestyle="--", color="gray", label="float search (ceiling)")
        ax.set_xscale("log")
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.minorticks_off()
        ax.set_xlabel(f"oversampling (candidates / {cutoff})")
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    settings = sweep.settings
    figure.suptitle(title if title is not None else
                    f"Hamming candidates + float rescoring: {sweep.results[0].n_queries} queries x "
                    f"{settings.get('n_db', '?')} items, {settings.get('n_bits', '?')} bits", fontsize="medium")
    if path is not None:
        figure.savefig(path, dpi=dpi, format=os.path.splitext(path)[1][1:].lower())
    return figure


def _panels(width: float, height: float, dpi: float, n_panels: int) -> tuple[Figure, Any]:
    """A figure of ``width`` x ``height`` pixels with ``n_panels`` axes side by side, drawn by the
    Agg canvas (no display needed)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("matplotlib is needed for plots: pip install 'fasttie[plot]'") from None
    figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.subplots(1, n_panels, squeeze=False)[0]
