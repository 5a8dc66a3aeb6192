"""Tables of a :class:`fasttie.report.significance.Comparison` for papers: LaTeX, Markdown, HTML, pandas.

Every format shows the same cells, built once by :func:`table_cells`: one row per method
(lettered a, b, c, ...), one column per metric, the mean with the best value of each column
in bold and, as superscripts, the letters of the methods it beats significantly (ranx's
convention); optionally the tie range of each mean, ``[low, high]``. This module draws; the
tests and their numbers live in :mod:`fasttie.report.significance`.
"""

from __future__ import annotations

import html
import math
import numbers
import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InputError, InputTypeError
from ..result import Result

if TYPE_CHECKING:  # pandas is optional (the frame extra)
    import pandas as pd

# a fasttie.report.significance.Comparison, not imported here: significance imports this module
_Comparison = Any

__all__ = [
    "comparison_frame", "comparison_html", "comparison_latex", "comparison_markdown", "escape_latex",
    "escape_markdown", "table_cells",
]

# LaTeX's special characters in text mode, and the characters the OT1 font encoding prints as
# other glyphs (< and > become inverted punctuation)
_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
}
_MARKDOWN_SPECIAL = set("\\`*_[]<>|&")  # what could open markup inside a table cell


def escape_latex(text: object) -> str:
    """``text`` with LaTeX's special characters escaped for text mode.

    Parameters
    ----------
    text : str

    Returns
    -------
    str

    Examples
    --------
    >>> escape_latex("nDCG_10 & 5% #1")
    'nDCG\\\\_10 \\\\& 5\\\\% \\\\#1'
    """
    return "".join(_LATEX_ESCAPES.get(ch, ch) for ch in str(text))


def escape_markdown(text: object) -> str:
    """``text`` with Markdown's punctuation backslash-escaped (``|`` included, for table cells).

    Parameters
    ----------
    text : str

    Returns
    -------
    str
    """
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in str(text))


def table_cells(comparison: _Comparison, *, digits: int = 3,
                tie_range: Mapping[str, tuple[Any, Any]] | None = None) -> list[list[dict]]:
    """The cells of the table, one list per method and one dict per metric.

    Parameters
    ----------
    comparison : Comparison
    digits : int, default 3
        Decimals printed.
    tie_range : dict of str to (Result or dict, Result or dict), optional
        Per method, the values at the two ends of its tie range (for example the results of
        ``ties="pessimistic"`` and ``ties="optimistic"``); the smaller is printed first.

    Returns
    -------
    list of list of dict
        ``cells[i][j]`` for method ``comparison.names[i]`` and metric ``comparison.metrics[j]``:
        ``value`` (the printed mean, None for NaN), ``best`` (its printed value is the
        column's highest), ``beats`` (letters of the methods beaten significantly),
        ``decided`` (those of them whose defeat a tie order can undo: the exact range of the
        mean difference over every pair of tie orders holds 0, from results with tie extremes),
        ``others`` (letters of the other methods, not beaten), ``range`` (printed low and
        high, or None).

    Raises
    ------
    TypeError, ValueError
        ``digits`` not an integer in 0..15, or ``tie_range`` not as described.
    """
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 15:
        raise InputError(f"digits must be an integer from 0 to 15, got {digits!r}")
    ranges = _tie_ranges(comparison, tie_range)
    letters = comparison.letters

    def show(value):
        return None if math.isnan(value) else f"{value:.{digits}f}"

    cells = []
    for name in comparison.names:
        row = []
        for metric in comparison.metrics:
            beaten = comparison.beats(name, metric)
            bounds = ranges.get(name, {}).get(metric)
            row.append({
                "value": show(comparison.means[name][metric]),
                "beats": "".join(letters[n] for n in beaten),
                "decided": "".join(letters[n] for n in beaten if comparison.tie_order_decides(name, n, metric)),
                "others": "".join(letters[n] for n in comparison.names if n != name and n not in beaten),
                "range": None if bounds is None else tuple(show(v) or "n/a" for v in (min(bounds), max(bounds))),
            })
        cells.append(row)
    # bold by the printed value: two means that print alike are both best
    for j in range(len(comparison.metrics)):
        shown = [float(row[j]["value"]) for row in cells if row[j]["value"] is not None]
        top = max(shown) if shown else None
        for row in cells:
            row[j]["best"] = row[j]["value"] is not None and float(row[j]["value"]) == top
    return cells


def comparison_latex(comparison: _Comparison, *, digits: int = 3, caption: str | None = None, label: str | None = None,
                     tie_range: Mapping[str, tuple[Any, Any]] | None = None) -> str:
    """The booktabs LaTeX table of :meth:`Comparison.to_latex`.

    Parameters
    ----------
    comparison : Comparison
    digits : int, default 3
    caption, label : str, optional
        LaTeX, inserted as given (not escaped); either one wraps the tabular in ``table``.
    tie_range : dict, optional
        See :func:`table_cells`.

    Returns
    -------
    str
        Comment lines (the package it needs, the legend), then the tabular. A value carries
        ``$^{letters}$`` of the methods it beats and ``\\hphantom`` of the others' letters,
        so the numbers of a column line up, as in ranx's tables.
    """
    for option, value in (("caption", caption), ("label", label)):
        if value is not None and not isinstance(value, str):
            raise InputTypeError(f"{option} must be a str or None, got {type(value).__name__}")
    cells = table_cells(comparison, digits=digits, tie_range=tie_range)
    letters = comparison.letters
    lines = ["% fasttie comparison table; needs \\usepackage{booktabs}"]
    lines += ["% " + line for line in textwrap.wrap(_legend(comparison), width=96)]
    wrapped = caption is not None or label is not None
    if wrapped:
        lines += ["\\begin{table}[t]", "\\centering"]
        if caption is not None:
            lines.append(f"\\caption{{{caption}}}")
        if label is not None:
            lines.append(f"\\label{{{label}}}")
    lines += [
        "\\begin{tabular}{cl" + "c" * len(comparison.metrics) + "}",
        "\\toprule",
        " & Method & " + " & ".join(escape_latex(m) for m in comparison.metrics) + " \\\\",
        "\\midrule",
    ]
    for name, row in zip(comparison.names, cells):
        texts = []
        for cell in row:
            if cell["value"] is None:
                texts.append("--")
                continue
            text = f"\\textbf{{{cell['value']}}}" if cell["best"] else cell["value"]
            if cell["beats"]:
                text += f"$^{{{_marked(cell, chr(92) + 'dagger')}}}$"
            if cell["others"]:
                text += f"\\hphantom{{$^{{{cell['others']}}}$}}"
            if cell["range"] is not None:
                text += f" {{\\scriptsize[{cell['range'][0]}, {cell['range'][1]}]}}"
            texts.append(text)
        lines.append(f"{letters[name]} & {escape_latex(name)} & " + " & ".join(texts) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    if wrapped:
        lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


def comparison_markdown(comparison: _Comparison, *, digits: int = 3,
                        tie_range: Mapping[str, tuple[Any, Any]] | None = None) -> str:
    """The table of :meth:`Comparison.to_latex` in Markdown (GitHub's tables), legend below.

    Parameters
    ----------
    comparison : Comparison
    digits : int, default 3
    tie_range : dict, optional
        See :func:`table_cells`.

    Returns
    -------
    str
    """
    cells = table_cells(comparison, digits=digits, tie_range=tie_range)
    letters = comparison.letters
    lines = [
        "|   | method | " + " | ".join(escape_markdown(m) for m in comparison.metrics) + " |",
        "|---|---|" + "---:|" * len(comparison.metrics),
    ]
    for name, row in zip(comparison.names, cells):
        texts = []
        for cell in row:
            if cell["value"] is None:
                texts.append("n/a")
                continue
            text = f"**{cell['value']}**" if cell["best"] else cell["value"]
            if cell["beats"]:
                text += f"<sup>{_marked(cell, chr(8224))}</sup>"
            if cell["range"] is not None:
                text += f" [{cell['range'][0]}, {cell['range'][1]}]"
            texts.append(text)
        lines.append(f"| {letters[name]} | {escape_markdown(name)} | " + " | ".join(texts) + " |")
    return "\n".join(lines) + "\n\n" + escape_markdown(_legend(comparison)) + "\n"


def comparison_html(comparison: _Comparison, *, digits: int = 3, caption: str | None = None,
                    tie_range: Mapping[str, tuple[Any, Any]] | None = None) -> str:
    """The table of :meth:`Comparison.to_latex` as an HTML ``<table>``, legend in its footer.

    Parameters
    ----------
    comparison : Comparison
    digits : int, default 3
    caption : str, optional
        Plain text (escaped), in ``<caption>``.
    tie_range : dict, optional
        See :func:`table_cells`.

    Returns
    -------
    str
    """
    if caption is not None and not isinstance(caption, str):
        raise InputTypeError(f"caption must be a str or None, got {type(caption).__name__}")
    cells = table_cells(comparison, digits=digits, tie_range=tie_range)
    letters = comparison.letters
    lines = ["<table>"]
    if caption is not None:
        lines.append(f"<caption>{html.escape(caption)}</caption>")
    lines.append(
        "<thead><tr><th></th><th>method</th>"
        + "".join(f"<th>{html.escape(m)}</th>" for m in comparison.metrics) + "</tr></thead>"
    )
    lines.append("<tbody>")
    for name, row in zip(comparison.names, cells):
        texts = []
        for cell in row:
            if cell["value"] is None:
                texts.append("n/a")
                continue
            text = f"<b>{cell['value']}</b>" if cell["best"] else cell["value"]
            if cell["beats"]:
                text += f"<sup>{_marked(cell, chr(8224))}</sup>"
            if cell["range"] is not None:
                text += f" [{cell['range'][0]}, {cell['range'][1]}]"
            texts.append(text)
        lines.append(
            f"<tr><td>{letters[name]}</td><td>{html.escape(name)}</td>"
            + "".join(f"<td>{t}</td>" for t in texts) + "</tr>"
        )
    lines.append("</tbody>")
    lines.append(
        f'<tfoot><tr><td colspan="{2 + len(comparison.metrics)}">{html.escape(_legend(comparison))}</td></tr></tfoot>'
    )
    lines.append("</table>")
    return "\n".join(lines) + "\n"


def comparison_frame(comparison: _Comparison, *, pairs: bool = False) -> pd.DataFrame:
    """The DataFrame of :meth:`Comparison.to_frame`.

    Parameters
    ----------
    comparison : Comparison
    pairs : bool, default False
        False: index ``method``, columns ``(metric, "mean" | "beats")``. True: index
        ``(metric, a, b)``, one column per field of ``comparison.tests``; with results
        evaluated with ``spread=True``, ``tie_std_diff`` and ``within_tie_noise`` (the flag
        that marks a difference within twice its tie standard deviation; NaN on the rows of
        metrics without it).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ImportError
        pandas is missing (``pip install 'fasttie[frame]'``).
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("pandas is needed for Comparison.to_frame: pip install 'fasttie[frame]'") from None
    if pairs:
        # every field in test order: the tie noise fields are there for the metrics with tie_std only
        fields = list(dict.fromkeys(k for t in comparison.tests for k in t)) or ["metric", "a", "b"]
        return pd.DataFrame(comparison.tests, columns=fields).set_index(["metric", "a", "b"])
    letters = comparison.letters
    columns = pd.MultiIndex.from_tuples(
        [(m, field) for m in comparison.metrics for field in ("mean", "beats")], names=["metric", None]
    )
    rows = [
        [value for m in comparison.metrics for value in (
            comparison.means[name][m], "".join(letters[n] for n in comparison.beats(name, m)))]
        for name in comparison.names
    ]
    frame = pd.DataFrame(rows, index=pd.Index(comparison.names, name="method"), columns=columns)
    for m in comparison.metrics:  # object columns hold mixed cells; keep the means float
        frame[(m, "mean")] = frame[(m, "mean")].astype("float64")
    return frame


def _marked(cell, mark) -> str:
    """The letters a cell beats, each whose defeat a tie order can undo followed by ``mark``."""
    return "".join(letter + (mark if letter in cell["decided"] else "") for letter in cell["beats"])


def _legend(comparison) -> str:
    letters = ", ".join(f"{letter} = {name}" for name, letter in comparison.letters.items())
    return (f"{comparison.settings['n_queries']} queries; {letters}; bold: highest value; "
            f"{comparison.legend(t_test_note=False, mark=chr(8224))}")


def _tie_ranges(comparison, tie_range) -> dict:
    """``{name: {metric: (low, high)}}`` from ``tie_range``, checked."""
    if tie_range is None:
        return {}
    if not isinstance(tie_range, Mapping):
        raise InputTypeError(
            f"tie_range must be a dict {{method: (low, high)}} of Results or dicts of metric values, "
            f"got {type(tie_range).__name__}"
        )
    out = {}
    for key, ends in tie_range.items():
        name = str(key)
        if name not in comparison.names:
            raise InputError(f"tie_range names method {name!r}, which the comparison lacks; its methods are "
                             f"{comparison.names}")
        if not isinstance(ends, (tuple, list)) or len(ends) != 2:
            raise InputTypeError(
                f"tie_range[{name!r}] must be a pair (low, high), e.g. the results of ties='pessimistic' and "
                f"ties='optimistic', got {type(ends).__name__}"
            )
        values = {}
        for metric in comparison.metrics:
            pair = []
            for end in ends:
                source = end.mean if isinstance(end, Result) else end
                if not isinstance(source, Mapping):
                    raise InputTypeError(
                        f"tie_range[{name!r}] must hold Results or dicts of metric values, got {type(end).__name__}"
                    )
                try:
                    value = source[metric]
                except KeyError:
                    raise InputError(f"tie_range[{name!r}] has no value for metric {metric!r}") from None
                if isinstance(value, bool) or not isinstance(value, numbers.Real):
                    raise InputTypeError(
                        f"tie_range[{name!r}][{metric!r}] must be a number, got {type(value).__name__}"
                    )
                pair.append(float(value))
            values[metric] = tuple(pair)
        out[name] = values
    return out
