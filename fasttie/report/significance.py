"""Paired significance tests between methods evaluated on the same queries.

For each metric and each pair of methods: the paired t-test (``scipy.stats.ttest_rel``) and the
paired randomization test (sign flips of the per-query differences, two-sided), with a
Bonferroni or Holm correction (family-wise) or Benjamini-Hochberg's (false discovery rate) over
the pairs of each metric, or the randomised Tukey HSD test over all methods at once; the effect
size (Cohen's d_z), the paired t and the paired bootstrap (percentile or BCa) confidence
intervals of each mean difference, and bootstrap intervals of each method's mean. Where the
results carry their exact tie extremes (``spread=True`` or ``"range"``), each difference also
gets its exact range over every pair of tie orders of the two methods: when that range holds 0,
the tie order alone can decide the comparison. Tables for papers (LaTeX, Markdown, HTML, pandas)
are drawn by :mod:`fasttie.report.paper_table`.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import math
import string
import textwrap
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from . import paper_table
from ..metrics import parse_metrics
from ..result import Result
from ..errors import InputError, InputTypeError
from ..validation import mean_of_kept

if TYPE_CHECKING:  # pandas is optional (the frame extra)
    import pandas as pd

__all__ = [
    "Comparison", "adjust_pvalues", "bootstrap_interval", "compare", "paired_t_test", "paired_t_interval",
    "randomization_test", "randomized_tukey_hsd",
]

_CORRECTIONS = ("holm", "bonferroni", "bh", "none")
_BOOTSTRAP_METHODS = ("bca", "percentile")
_COMPARE_CORRECTIONS = (*_CORRECTIONS, "tukey-hsd")
_SIGN_ELEMENTS = 1 << 22  # sign matrix entries per block of permutations (32 MiB of float64)
_RTOL = 1e-9  # sums equal up to rounding count as ">=": every float sum of n terms is off by <= n*eps*sum|d|


class Comparison:
    """Means of several methods and their pairwise paired significance tests.

    Attributes
    ----------
    names : list of str
        The methods, in order; they are lettered a, b, c, ... in the table.
    metrics : list of str
    means : dict of str to dict of str to float
        ``means[name][metric]``: the method's mean over the queries where it has a value.
    tests : list of dict
        One per metric and pair (a, b) with a before b: ``metric``, ``a``, ``b``,
        ``mean_diff`` (mean of a - b over the queries where both have a value), ``ci_low`` and
        ``ci_high`` (paired t confidence interval of ``mean_diff`` at level ``confidence``),
        ``effect_size`` (Cohen's d_z: ``mean_diff`` / standard deviation of the differences),
        ``n`` (those queries), ``t_p``, ``t_p_adjusted``, ``perm_p``, ``perm_p_adjusted``,
        ``significant`` (``perm_p_adjusted <= alpha``) and ``exact`` (the randomization p
        comes from a full enumeration). With ``correction="tukey-hsd"`` the randomization test
        is the randomised Tukey HSD: ``perm_p`` = ``perm_p_adjusted``, family-wise already, and
        ``t_p_adjusted`` is Holm's. Where every method's Result has ``tie_std`` for the metric
        (``spread=True``), also ``tie_std_diff`` (standard deviation of ``mean_diff`` over the
        random tie orders of both methods) and ``within_tie_noise`` (``|mean_diff| <= 2 *
        tie_std_diff``): see :func:`compare`. Where every method's Result has ``tie_min`` and
        ``tie_max`` (``spread=True`` or ``spread="range"``), also ``diff_min`` and
        ``diff_max`` (the lowest and highest ``mean_diff`` over every pair of tie orders of the
        two methods, exact) and ``tie_order_decides`` (``diff_min <= 0 <= diff_max``: some
        pair of tie orders makes either method at least as good as the other). With
        ``bootstrap`` (the default), ``boot_low`` and ``boot_high``: the paired bootstrap
        interval of ``mean_diff`` (:func:`bootstrap_interval`).
    intervals : dict of str to dict of str to (float, float)
        ``intervals[name][metric]``: the bootstrap interval of the method's mean over its
        queries with a value (empty when ``bootstrap=None``).
    settings : dict
        ``n_permutations``, ``seed``, ``correction``, ``alpha``, ``confidence``, ``bootstrap``,
        ``n_resamples``, ``n_queries``.
    """

    def __init__(self, names: Iterable[str], metrics: Iterable[str], means: dict[str, dict[str, float]],
                 tests: list[dict[str, Any]], settings: dict[str, Any],
                 intervals: dict[str, dict[str, tuple[float, float]]] | None = None) -> None:
        self.names = list(names)
        self.metrics = list(metrics)
        self.means = means
        self.tests = tests
        self.settings = settings
        self.intervals = intervals if intervals is not None else {}

    def to_dict(self) -> dict:
        """JSON-serialisable dictionary (NaN becomes None)."""

        def clean(value):
            if isinstance(value, float) and math.isnan(value):
                return None
            return value

        return {
            "names": list(self.names),
            "metrics": list(self.metrics),
            "means": {n: {m: clean(v) for m, v in row.items()} for n, row in self.means.items()},
            "tests": [{k: clean(v) for k, v in test.items()} for test in self.tests],
            "intervals": {n: {m: [clean(v) for v in ends] for m, ends in row.items()}
                          for n, row in self.intervals.items()},
            "settings": dict(self.settings),
        }

    def to_json(self, **kwargs: Any) -> str:
        """JSON text of :meth:`to_dict`; ``kwargs`` go to :func:`json.dumps`."""
        return json.dumps(self.to_dict(), **kwargs)

    @property
    def letters(self) -> dict:
        """``{name: letter}``: the methods lettered a, b, c, ... in order (aa, ab, ... past z)."""
        return dict(zip(self.names, _letters(len(self.names))))

    def to_frame(self, pairs: bool = False) -> pd.DataFrame:
        """The comparison as a pandas DataFrame (needs pandas: ``pip install 'fasttie[frame]'``).

        Parameters
        ----------
        pairs : bool, default False
            False: one row per method (index ``method``), columns ``(metric, "mean")`` and
            ``(metric, "beats")``, a MultiIndex; ``beats`` holds the letters of the methods the
            value beats significantly (:attr:`letters`), as the LaTeX table prints them.
            ``frame.xs("mean", axis=1, level=1)`` is the plain table of means. True: one row
            per metric and pair (index ``metric, a, b``) with every field of :attr:`tests`:
            the mean difference, its confidence interval, the effect size, the p-values, and
            with ``spread=True`` results ``tie_std_diff`` and the flag ``within_tie_noise``.

        Returns
        -------
        pandas.DataFrame
        """
        return paper_table.comparison_frame(self, pairs=pairs)

    def to_latex(self, *, digits: int = 3, caption: str | None = None, label: str | None = None,
                 tie_range: Mapping[str, tuple[Any, Any]] | None = None) -> str:
        """A booktabs table of the means for a paper: the best value of each metric in bold,
        superscript letters (``$^{bc}$``) of the methods each value beats significantly.

        Parameters
        ----------
        digits : int, default 3
            Decimals of the values; the bold marks the highest value as printed.
        caption, label : str, optional
            When either is given, the tabular sits in a ``table`` environment with them.
        tie_range : dict of str to (Result or dict, Result or dict), optional
            Per method the values at the two ends of its tie range, e.g. the results of
            ``ties="pessimistic"`` and ``ties="optimistic"``; printed as ``[low, high]``
            after the mean (the smaller first). Methods left out print none.

        Returns
        -------
        str
            ``\\begin{tabular}`` ... ``\\end{tabular}`` (in ``table`` with a caption or label),
            after comment lines naming the package it needs (booktabs) and the test. Names
            are escaped (``_``, ``%``, ``&``, ``#``, ...).
        """
        return paper_table.comparison_latex(self, digits=digits, caption=caption, label=label, tie_range=tie_range)

    def to_markdown(self, *, digits: int = 3, tie_range: Mapping[str, tuple[Any, Any]] | None = None) -> str:
        """The table of :meth:`to_latex` as a Markdown (GitHub) table: ``**bold**`` best,
        ``<sup>bc</sup>`` letters, the legend below it."""
        return paper_table.comparison_markdown(self, digits=digits, tie_range=tie_range)

    def to_html(self, *, digits: int = 3, caption: str | None = None,
                tie_range: Mapping[str, tuple[Any, Any]] | None = None) -> str:
        """The table of :meth:`to_latex` as an HTML ``<table>``: ``<b>`` best, ``<sup>`` letters,
        the legend in its footer."""
        return paper_table.comparison_html(self, digits=digits, caption=caption, tie_range=tie_range)

    def beats(self, name: str, metric: str) -> list[str]:
        """Names of the methods that ``name`` beats significantly on ``metric``."""
        out = []
        for test in self.tests:
            if test["metric"] != metric or not test["significant"] or name not in (test["a"], test["b"]):
                continue
            diff = test["mean_diff"] if test["a"] == name else -test["mean_diff"]
            if diff > 0:
                out.append(test["b"] if test["a"] == name else test["a"])
        return [n for n in self.names if n in out]

    def tie_order_decides(self, name: str, other: str, metric: str) -> bool:
        """Whether some pair of tie orders of the two methods makes ``other`` at least as good as
        ``name`` on ``metric``, or the reverse (the exact range of their mean difference over
        every pair of tie orders holds 0); False where the results carry no tie extremes."""
        for test in self.tests:
            if test["metric"] == metric and {test["a"], test["b"]} == {name, other}:
                return bool(test.get("tie_order_decides", False))
        return False

    def legend(self, *, t_test_note: bool = True, mark: str = "+") -> str:
        """One line stating the tests, the correction, the permutations and the seed.

        Parameters
        ----------
        t_test_note : bool, default True
            End with where the paired t-test p-values are (left out of the paper tables).
        mark : str, default "+"
            The mark after a beaten method's letter where a tie order decides the comparison
            (the paper tables print a dagger); explained where the results carry tie extremes.
        """
        s = self.settings
        exact = any(t["exact"] for t in self.tests)
        n_pairs = len(self.names) * (len(self.names) - 1) // 2
        if s["correction"] == "tukey-hsd":
            return (
                f"letters: methods beaten significantly (randomised Tukey HSD: each query's values shuffled "
                f"across the {len(self.names)} methods, range of the means, {s['n_permutations']} permutations, "
                f"seed {s['seed']}"
                + ("; exact enumeration of all (k!)^n shuffles where (k!)^n <= permutations" if exact else "")
                + f"; family-wise over the {n_pairs} pair(s) of each metric; alpha {s['alpha']})."
                + (" Paired t-test p-values (scipy.stats.ttest_rel, Holm correction) are in the pairwise table "
                   "and the JSON output." if t_test_note else "")
                + self._flip_note(mark)
            )
        correction = {"holm": "Holm correction", "bonferroni": "Bonferroni correction",
                      "bh": "Benjamini-Hochberg false discovery rate", "none": "no correction"}[s["correction"]]
        return (
            f"letters: methods beaten significantly (two-sided paired randomization test, sign flips, "
            f"{s['n_permutations']} permutations, seed {s['seed']}"
            + ("; exact enumeration of all 2^n sign vectors where 2^n <= permutations" if exact else "")
            + f"; {correction} over the {n_pairs} pair(s) of each metric; alpha {s['alpha']})."
            + (" Paired t-test p-values (scipy.stats.ttest_rel) are in the pairwise table and the JSON output."
               if t_test_note else "")
            + self._flip_note(mark)
        )

    def _flip_note(self, mark) -> str:
        if not any("diff_min" in t for t in self.tests):
            return ""
        return (f" {mark} after a letter: a tie order decides it (the exact range of the mean difference over "
                "every pair of tie orders of the two methods holds 0).")

    def format_tests(self) -> str:
        """Aligned table of every pairwise test: mean difference, raw and adjusted p-values.

        ``*`` marks the significant pairs (corrected randomization p <= alpha); ``exact``
        marks randomization p-values from the full enumeration of sign vectors. Where a test
        has ``tie_std_diff`` (the results were evaluated with ``spread=True``), two columns
        follow the mean difference: ``tie std`` and ``tie noise`` (``within`` when
        |mean(a-b)| <= 2 tie std, ``beyond`` otherwise; empty for metrics without it).
        """
        spread = any("tie_std_diff" in t for t in self.tests)
        extremes = any("diff_min" in t for t in self.tests)
        boot = any("boot_low" in t for t in self.tests)
        header = ["metric", "a", "b", "mean(a-b)", *(("tie std", "tie noise") if spread else ()),
                  *(("tie range of mean(a-b)",) if extremes else ()), *(("bootstrap CI",) if boot else ()), "n",
                  "t p", "t p adj", "perm p", "perm p adj", ""]
        rows = [header]
        for t in self.tests:
            noise = ()
            if spread:
                noise = (("", "") if "tie_std_diff" not in t else
                         (f"{t['tie_std_diff']:.2g}", "within" if t["within_tie_noise"] else "beyond"))
            if extremes:
                noise += ("" if "diff_min" not in t else
                          f"[{t['diff_min']:+.4f}, {t['diff_max']:+.4f}]" + (" +" if t["tie_order_decides"] else ""),)
            if boot:
                noise += (f"[{t['boot_low']:+.4f}, {t['boot_high']:+.4f}]",)
            rows.append([
                t["metric"], t["a"], t["b"], f"{t['mean_diff']:+.4f}", *noise, str(t["n"]),
                *(f"{t[k]:.4g}" for k in ("t_p", "t_p_adjusted", "perm_p", "perm_p_adjusted")),
                ("*" if t["significant"] else "") + (" exact" if t["exact"] else ""),
            ])
        widths = [max(len(r[j]) for r in rows) for j in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        if spread:
            lines.append("tie std: standard deviation of mean(a-b) over random orders inside both methods' ties; "
                         "within: |mean(a-b)| <= 2 tie std")
        if extremes:
            lines.append("tie range: lowest and highest mean(a-b) over every pair of tie orders of the two methods "
                         "(exact); +: it holds 0, a tie order decides the comparison")
        if boot:
            s = self.settings
            lines.append(f"bootstrap CI: paired bootstrap ({'BCa' if s['bootstrap'] == 'bca' else 'percentile'}, "
                         f"{s['n_resamples']} resamples, seed {s['seed']}) interval of mean(a-b) at level "
                         f"{s['confidence']}")
        return "\n".join(lines)

    def __str__(self) -> str:
        letters = _letters(len(self.names))
        label = [f"{letters[i]}  {name}" for i, name in enumerate(self.names)]
        width = max(len("method"), *(len(s) for s in label))
        cells = []
        for name in self.names:
            row = []
            for metric in self.metrics:
                mark = "".join(letters[self.names.index(n)] + ("+" if self.tie_order_decides(name, n, metric) else "")
                               for n in self.beats(name, metric))
                row.append(f"{self.means[name][metric]:.4f}" + (f" {mark}" if mark else ""))
            cells.append(row)
        widths = [max(len(m), *(len(r[j]) for r in cells)) for j, m in enumerate(self.metrics)]
        lines = [f"{'method':<{width}}" + "".join(f"  {m:<{w}}" for m, w in zip(self.metrics, widths))]
        for lab, row in zip(label, cells):
            lines.append(f"{lab:<{width}}" + "".join(f"  {c:<{w}}" for c, w in zip(row, widths)))
        lines = [line.rstrip() for line in lines]
        lines.append(textwrap.fill(f"{self.settings['n_queries']} queries; " + self.legend(), width=100))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Comparison(names={self.names}, metrics={self.metrics})"


def compare(results: Mapping[str, Result], *, metrics: Sequence[str] | None = None, n_permutations: int = 10000,
            seed: int = 0, correction: str = "holm", alpha: float = 0.05, confidence: float = 0.95,
            bootstrap: str | None = "bca", n_resamples: int = 9999) -> Comparison:
    """Paired significance tests between methods evaluated on the same queries.

    Parameters
    ----------
    results : dict of str to Result
        Two or more methods, with per-query values on the same queries (same ``n_queries``,
        and the same ``query_ids`` where both name them).
    metrics : sequence of str, optional
        Metrics to compare (aliases accepted); default every metric all results share.
    n_permutations : int, default 10000
        Random sign vectors of the randomization test (random shuffles for ``"tukey-hsd"``).
        When 2**n <= n_permutations for the n paired queries, all 2**n sign vectors are
        enumerated instead (exact p-value); for ``"tukey-hsd"`` all (k!)**n shuffles of k methods.
    seed : int, default 0
        Seed of ``numpy.random.default_rng`` (the randomization test and the bootstrap); the
        p-values and intervals do not depend on anything else.
    correction : {"holm", "bonferroni", "bh", "none", "tukey-hsd"}, default "holm"
        Correction over the pairs of each metric, separately for each test: family-wise
        (Holm, Bonferroni) or of the false discovery rate (``"bh"``, Benjamini-Hochberg: the
        expected share of false claims among the significant pairs stays <= ``alpha``).
        ``"tukey-hsd"``: the randomization test becomes the randomised Tukey HSD test
        (:func:`randomized_tukey_hsd`, family-wise by itself, for many methods); the t-test
        p-values then take Holm's correction.
    alpha : float, default 0.05
        Level of ``significant`` (by the corrected randomization p-value, ``p <= alpha``).
    confidence : float, default 0.95
        Level of the paired t and bootstrap confidence intervals of each mean difference
        (:func:`paired_t_interval`, :func:`bootstrap_interval`; one pair at a time, not
        simultaneous) and of the bootstrap intervals of each method's mean.
    bootstrap : {"bca", "percentile"} or None, default "bca"
        Method of the bootstrap intervals (``scipy.stats.bootstrap``: bias-corrected and
        accelerated, or plain percentiles), or None for none.
    n_resamples : int, default 9999
        Bootstrap resamples (of the queries, with replacement; paired: a resample keeps both
        methods' values of a query together).

    Returns
    -------
    Comparison
        ``str()`` of it is a table of means marked with the methods each beats significantly;
        ``to_latex()``, ``to_markdown()``, ``to_html()`` and ``to_frame()`` give it for papers.

    Raises
    ------
    TypeError
        ``results`` not a dict of Result.
    ValueError
        Fewer than two methods, different queries, a metric a method lacks, no per-query
        values, or bad options.
    ImportError
        scipy is missing (``pip install 'fasttie[stats]'``).

    Notes
    -----
    Queries where either method has NaN (skipped under ``empty="skip"``) are left out of that
    pair; the Tukey HSD test, which shuffles a query's values across every method, leaves out
    the queries where any method has NaN. The randomization p-value is
    (1 + #{|mean of flipped differences| >= |observed|}) / (1 + n_permutations), or
    #{...} / 2**n when enumerated; differences equal up to rounding count as ties (relative
    tolerance 1e-9 of the sum of |differences|). Identical methods get p = 1 from both tests.
    The effect size is Cohen's d_z of paired data, mean(a - b) / sd(a - b) with the n - 1
    standard deviation (0 when every difference is 0, NaN when n < 2 or the differences are
    one nonzero constant).

    Where every method's Result has ``tie_std`` for a metric (evaluated with ``spread=True``),
    each of its pairs also gets ``tie_std_diff``, the standard deviation of ``mean_diff`` over
    uniformly random orders inside the ties of both methods' rankings. Different methods rank
    on their own, so their tie orders are independent, as are the queries': over the n paired
    queries, Var(mean_diff) = (sum_q tie_std_a[q]**2 + sum_q tie_std_b[q]**2) / n**2.
    ``within_tie_noise`` is ``|mean_diff| <= 2 * tie_std_diff``: a difference that another
    draw of the tie orders could plausibly erase, whatever the significance test says (that
    test sees the per-query expectations, not one tie order). NaN and False when n = 0.

    Where every method's Result has ``tie_min`` and ``tie_max`` for a metric (``spread=True``
    or ``spread="range"``: each query's exact lowest and highest value over its tie orders),
    each pair gets the exact range of ``mean_diff`` over every pair of tie orders: the two
    methods' orders, and the queries', are independent, so the lowest mean difference is the
    mean over the paired queries of ``tie_min_a - tie_max_b`` and the highest that of
    ``tie_max_a - tie_min_b``. When the range holds 0 (``tie_order_decides``), some tie order
    makes the losing method at least as good: the comparison is decided by tie-breaking, not by
    the methods' scores, whatever the significance tests say. The bounds come from each
    metric's exact extremes, not from ``ties="optimistic"`` / ``"pessimistic"``, which are not
    the extremes of every metric (:func:`fasttie.metrics.grade_order_bounds`).

    Examples
    --------
    >>> import numpy as np, fasttie as ft
    >>> a = ft.Result({"AP": 0.7}, {"AP": np.array([0.9, 0.8, 0.6, 0.5])}, 4, 0)
    >>> b = ft.Result({"AP": 0.5}, {"AP": np.array([0.7, 0.5, 0.5, 0.3])}, 4, 0)
    >>> c = compare({"new": a, "old": b})
    >>> c.tests[0]["perm_p"], c.tests[0]["exact"]    # 2 of the 16 sign vectors reach |0.2|
    (0.125, True)
    >>> round(c.tests[0]["effect_size"], 4)           # differences 0.2, 0.3, 0.1, 0.2: sd 0.0816
    2.4495
    >>> c.tests[0]["boot_low"] <= 0.2 <= c.tests[0]["boot_high"]   # BCa bootstrap interval of the mean
    True
    """
    names, per_method = _check_results(results)
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, (int, np.integer)) or n_permutations < 1:
        raise InputError(f"n_permutations must be an integer >= 1, got {n_permutations!r}")
    if correction not in _COMPARE_CORRECTIONS:
        raise InputError(f"correction must be one of {_COMPARE_CORRECTIONS}, got {correction!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise InputError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise InputError(f"confidence must be a number in (0, 1), e.g. 0.95, got {confidence!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputTypeError(f"seed must be an integer, got {seed!r}")
    bootstrap = _check_bootstrap(bootstrap, n_resamples)
    metric_names = _select_metrics(names, per_method, metrics)
    tukey = correction == "tukey-hsd"
    tie_std = {n: _tie_std_of(results[k], n) for k, n in zip(results, names)}
    tie_bounds = {n: _tie_bounds_of(results[k], n) for k, n in zip(results, names)}
    interval_options = {"method": bootstrap, "n_resamples": int(n_resamples), "confidence": float(confidence),
                        "seed": int(seed)}

    means: dict[str, dict[str, float]] = {n: {} for n in names}
    intervals: dict[str, dict[str, tuple[float, float]]] = {n: {} for n in names}
    for name in names:
        for metric in metric_names:
            values = per_method[name][metric]
            means[name][metric] = mean_of_kept(values)
            if bootstrap is not None:
                intervals[name][metric] = bootstrap_interval(values[~np.isnan(values)], **interval_options)
    tests: list[dict[str, Any]] = []
    for metric in metric_names:
        if tukey:
            matrix = np.column_stack([per_method[n][metric] for n in names])
            complete = matrix[~np.isnan(matrix).any(axis=1)]
            tukey_p, tukey_exact = randomized_tukey_hsd(complete, n_permutations=int(n_permutations), seed=int(seed))
        group = []
        for (i, a), (j, b) in itertools.combinations(enumerate(names), 2):
            x, y = per_method[a][metric], per_method[b][metric]
            both = ~(np.isnan(x) | np.isnan(y))
            diff = x[both] - y[both]
            noise = {}
            if all(metric in tie_std[n] for n in names):
                noise = _tie_noise(diff, tie_std[a][metric][both], tie_std[b][metric][both])
            if all(metric in tie_bounds[n] for n in names):
                (low_a, high_a), (low_b, high_b) = tie_bounds[a][metric], tie_bounds[b][metric]
                noise.update(_tie_flip(low_a[both] - high_b[both], high_a[both] - low_b[both]))
            if bootstrap is not None:
                noise["boot_low"], noise["boot_high"] = bootstrap_interval(diff, **interval_options)
            if tukey:
                perm_p, exact = float(tukey_p[i, j]), tukey_exact
            else:
                perm_p, exact = randomization_test(diff, n_permutations=int(n_permutations), seed=int(seed))
            ci_low, ci_high = paired_t_interval(diff, confidence=float(confidence))
            group.append({
                "metric": metric, "a": a, "b": b,
                "mean_diff": float(np.mean(diff)) if len(diff) else float("nan"),
                "ci_low": ci_low, "ci_high": ci_high, "effect_size": _cohen_dz(diff),
                "n": int(both.sum()),
                "t_p": paired_t_test(x[both], y[both]),
                "perm_p": perm_p, "exact": exact, **noise,
            })
        adjusted = adjust_pvalues([t["t_p"] for t in group], "holm" if tukey else correction)
        for test, p in zip(group, adjusted):
            test["t_p_adjusted"] = float(p)
        # Tukey's p-values are family-wise by construction: no further correction
        adjusted = [t["perm_p"] for t in group] if tukey else adjust_pvalues([t["perm_p"] for t in group], correction)
        for test, p in zip(group, adjusted):
            test["perm_p_adjusted"] = float(p)
        for test in group:
            p = test["perm_p_adjusted"]
            test["significant"] = bool(not math.isnan(p) and p <= alpha)
        order = ("metric", "a", "b", "mean_diff", "ci_low", "ci_high", "effect_size", "n", "t_p", "t_p_adjusted",
                 "perm_p", "perm_p_adjusted", "significant", "exact")
        order += ("boot_low", "boot_high", "tie_std_diff", "within_tie_noise", "diff_min", "diff_max",
                  "tie_order_decides")
        tests.extend({k: t[k] for k in order if k in t} for t in group)
    settings = {
        "n_permutations": int(n_permutations), "seed": int(seed), "correction": correction,
        "alpha": float(alpha), "confidence": float(confidence), "bootstrap": bootstrap,
        "n_resamples": int(n_resamples), "n_queries": results[names[0]].n_queries,
    }
    return Comparison(names, metric_names, means, tests, settings, intervals)


def _tie_std_of(result, name):
    """``result.tie_std`` as float64 arrays keyed as ``per_query``; a wrong length is refused."""
    out = {}
    for metric, std in result.tie_std.items():
        std = np.asarray(std, dtype=np.float64)
        if std.shape != (result.n_queries,):
            raise InputError(f"results[{name!r}].tie_std[{metric!r}] has shape {std.shape} but the result has "
                             f"{result.n_queries} queries; evaluate again with spread=True")
        out[metric] = std
    return out


def _tie_bounds_of(result, name):
    """``{metric: (tie_min, tie_max)}`` as float64 arrays, for the metrics that have both."""
    out = {}
    for metric in result.tie_min.keys() & result.tie_max.keys():
        ends = tuple(np.asarray(e[metric], dtype=np.float64) for e in (result.tie_min, result.tie_max))
        if any(e.shape != (result.n_queries,) for e in ends):
            raise InputError(f"results[{name!r}].tie_min / tie_max[{metric!r}] do not have one value per query "
                             f"({result.n_queries}); evaluate again with spread=True or spread='range'")
        out[metric] = ends
    return out


def _tie_flip(lowest, highest) -> dict:
    """``diff_min``, ``diff_max`` and ``tie_order_decides`` of one pair from the per-query lowest
    (min of a - max of b) and highest (max of a - min of b) differences (see :func:`compare`)."""
    if len(lowest) == 0:
        return {"diff_min": float("nan"), "diff_max": float("nan"), "tie_order_decides": False}
    # queries' tie orders are independent: the extremes of the mean are the means of the extremes
    low, high = float(np.mean(lowest)), float(np.mean(highest))
    return {"diff_min": low, "diff_max": high, "tie_order_decides": bool(low <= 0.0 <= high)}


def _tie_noise(diff, std_a, std_b) -> dict:
    """``tie_std_diff`` and ``within_tie_noise`` of one pair on its paired queries (see :func:`compare`)."""
    n = len(diff)
    if n == 0:
        return {"tie_std_diff": float("nan"), "within_tie_noise": False}
    # the two methods' tie orders, and the queries', are independent: their variances add
    std = math.sqrt(float(np.sum(std_a * std_a)) + float(np.sum(std_b * std_b))) / n
    return {"tie_std_diff": std, "within_tie_noise": bool(abs(float(np.mean(diff))) <= 2 * std)}


def _rounding(diff) -> float:
    """How far apart equal differences may come out: the same difference of two methods' values,
    computed in two queries, may differ in its last bits, and a variance of rounding errors is
    no spread (scipy warns of catastrophic cancellation there)."""
    return 16 * float(np.finfo(np.float64).eps) * float(np.max(np.abs(diff)))


def _constant(diff) -> bool:
    """Every difference equal, up to :func:`_rounding`."""
    return float(np.max(diff) - np.min(diff)) <= _rounding(diff)


def _cohen_dz(diff) -> float:
    """Cohen's d_z of paired differences: mean / sd (n - 1); 0 for all-zero, NaN when undefined."""
    if len(diff) < 2:
        return float("nan")
    if _constant(diff):  # no spread: 0/0 reads as "no effect", c/0 has no finite value
        return 0.0 if abs(float(np.mean(diff))) <= _rounding(diff) else float("nan")
    return float(np.mean(diff) / np.std(diff, ddof=1))


def paired_t_interval(diff: npt.ArrayLike, *, confidence: float = 0.95) -> tuple[float, float]:
    """Paired t confidence interval of the mean of per-query differences.

    Parameters
    ----------
    diff : ndarray of float64, shape (n,)
        Per-query differences between two methods, without NaN.
    confidence : float, default 0.95
        Coverage of the interval, in (0, 1).

    Returns
    -------
    (low, high) : tuple of float
        mean -/+ t_{(1 + confidence) / 2, n - 1} * sd / sqrt(n), with the n - 1 standard
        deviation and Student's t quantile (``scipy.stats.t.ppf``); (mean, mean) when every
        difference is equal; NaN for n < 2.

    Raises
    ------
    ImportError
        scipy is missing (``pip install 'fasttie[stats]'``).

    Examples
    --------
    >>> low, high = paired_t_interval([0.2, 0.3, 0.1, 0.2])
    >>> round(low, 4), round(high, 4)
    (0.0701, 0.3299)
    """
    try:
        from scipy import stats
    except ImportError:
        raise ImportError("scipy is needed for the t confidence interval: pip install 'fasttie[stats]'") from None
    diff = np.asarray(diff, dtype=np.float64)
    n = len(diff)
    if n < 2:
        return float("nan"), float("nan")
    mean = float(np.mean(diff))
    if _constant(diff):
        return mean, mean
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * float(np.std(diff, ddof=1)) / math.sqrt(n)
    return mean - half, mean + half


def _check_bootstrap(method, n_resamples):
    """The bootstrap method in lower case (or None), after checking it and ``n_resamples``."""
    if method is not None:
        if not isinstance(method, str) or method.lower() not in _BOOTSTRAP_METHODS:
            raise InputError(f"bootstrap must be 'bca', 'percentile' or None, got {method!r}")
        method = method.lower()
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise InputError(f"n_resamples must be an integer >= 1, e.g. 9999, got {n_resamples!r}")
    return method


@functools.lru_cache(maxsize=1)
def _generator_keyword() -> str:
    """scipy.stats.bootstrap's name for the generator: ``rng`` from scipy 1.15 on, ``random_state``
    in the older floor of fasttie[stats]."""
    from scipy import stats

    return "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"


def bootstrap_interval(values: npt.ArrayLike, *, method: str = "bca", n_resamples: int = 9999, confidence: float = 0.95,
                       seed: int = 0) -> tuple[float, float]:
    """Bootstrap confidence interval of the mean of per-query values (``scipy.stats.bootstrap``).

    Of per-query differences between two methods it is the paired bootstrap interval of the
    mean difference: a resample draws queries with replacement and keeps both methods' values
    of each query together.

    Parameters
    ----------
    values : ndarray of float64, shape (n,)
        Per-query values or differences, without NaN.
    method : {"bca", "percentile"}, default "bca"
        Bias-corrected and accelerated (Efron 1987), or plain percentiles of the resampled
        means.
    n_resamples : int, default 9999
    confidence : float, default 0.95
    seed : int, default 0
        Seed of ``numpy.random.default_rng``, the generator scipy draws the resamples from:
        ``scipy.stats.bootstrap((values,), np.mean, rng=np.random.default_rng(seed), ...)``
        gives the same interval.

    Returns
    -------
    (low, high) : tuple of float
        (min, max) when every value is equal up to rounding; NaN for n < 2, or where BCa is undefined
        (scipy's DegenerateDataWarning: the observed mean outside the resampled ones).

    Raises
    ------
    ImportError
        scipy is missing (``pip install 'fasttie[stats]'``).

    Examples
    --------
    >>> low, high = bootstrap_interval([0.2, 0.3, 0.1, 0.2, 0.4, 0.0], method="percentile", seed=1)
    >>> bool(0.0 <= low <= 0.2 <= high <= 0.4)
    True
    """
    try:
        from scipy import stats
    except ImportError:
        raise ImportError("scipy is needed for the bootstrap interval: pip install 'fasttie[stats]'") from None
    values = np.ascontiguousarray(values, dtype=np.float64)
    method = _check_bootstrap(method, n_resamples)
    if method is None:
        raise InputError("method must be 'bca' or 'percentile'")
    n = len(values)
    if n < 2:
        return float("nan"), float("nan")
    if _constant(values):  # every resample's mean lies within (BCa's acceleration would be 0/0)
        return float(np.min(values)), float(np.max(values))
    generator = {_generator_keyword(): np.random.default_rng(int(seed))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)  # BCa undefined: NaN, documented
        interval = stats.bootstrap(
            (values,), np.mean, n_resamples=int(n_resamples), confidence_level=float(confidence),
            method="BCa" if method == "bca" else "percentile", vectorized=True,
            batch=max(1, _SIGN_ELEMENTS // n),  # bounds the (batch, n) resample arrays and BCa's jackknife
            **generator,
        ).confidence_interval
    return float(interval.low), float(interval.high)


def paired_t_test(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Two-sided p-value of the paired t-test (``scipy.stats.ttest_rel``).

    Parameters
    ----------
    x, y : ndarray of float64, shape (n,)
        Paired values without NaN.

    Returns
    -------
    float
        1.0 when every difference is 0 (identical methods), 0.0 when the differences are one
        nonzero constant, NaN for n < 2, else scipy's p-value.
    """
    try:
        from scipy import stats
    except ImportError:
        raise ImportError("scipy is needed for the paired t-test: pip install 'fasttie[stats]'") from None
    diff = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    if len(diff) < 2:
        return float("nan")
    # scipy answers NaN (0/0) or warns for a zero variance; the limits are clear
    if _constant(diff):
        return 1.0 if abs(float(np.mean(diff))) <= _rounding(diff) else 0.0
    return float(stats.ttest_rel(x, y).pvalue)


def randomization_test(diff: npt.ArrayLike, *, n_permutations: int = 10000, seed: int = 0) -> tuple[float, bool]:
    """Two-sided paired randomization (sign-flip) test of mean(diff) = 0.

    Parameters
    ----------
    diff : ndarray of float64, shape (n,)
        Per-query differences between two methods, without NaN.
    n_permutations : int, default 10000
        Random sign vectors; all 2**n are enumerated instead when 2**n <= n_permutations.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``. Signs come from 64-bit words drawn row by row,
        so the p-value does not depend on the block size used to bound memory.

    Returns
    -------
    p : float
        (1 + #{|sum(s * diff)| >= |sum(diff)|}) / (1 + n_permutations) for random signs s, or
        #{...} / 2**n when enumerated; NaN for n = 0.
    exact : bool
        Whether the p-value comes from the full enumeration.
    """
    diff = np.ascontiguousarray(diff, dtype=np.float64)
    n = len(diff)
    if n == 0:
        return float("nan"), False
    observed = abs(float(diff.sum()))
    threshold = observed - max(_RTOL, 4 * n * np.finfo(np.float64).eps) * float(np.abs(diff).sum())
    block = max(1, _SIGN_ELEMENTS // n)
    if n < 63 and (1 << n) <= n_permutations:
        total = 1 << n
        count = 0
        for start in range(0, total, block):
            vectors = np.arange(start, min(start + block, total), dtype=np.int64)
            bits = (vectors[:, None] >> np.arange(n, dtype=np.int64)) & 1
            count += int((np.abs((1 - 2 * bits).astype(np.float64) @ diff) >= threshold).sum())
        return count / total, True
    rng = np.random.default_rng(seed)
    n_words = (n + 63) // 64
    count = 0
    for start in range(0, n_permutations, block):
        rows = min(block, n_permutations - start)
        # full-range uint64 draws take exactly one generator output each (no rejection), so
        # the stream of signs is the same for any split into blocks
        words = rng.integers(0, np.iinfo(np.uint64).max, size=(rows, n_words), dtype=np.uint64, endpoint=True)
        bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")[:, :n]
        signs = 1.0 - 2.0 * bits
        count += int((np.abs(signs @ diff) >= threshold).sum())
    return (1 + count) / (1 + n_permutations), False


def randomized_tukey_hsd(values: npt.ArrayLike, *, n_permutations: int = 10000,
                         seed: int = 0) -> tuple[np.ndarray, bool]:
    """Randomised Tukey HSD test between k methods on the same queries (two-sided, family-wise).

    Each shuffle permutes every query's k values across the methods (one row at a time,
    independently); the statistic is the range of the k method means, max - min. The p-value
    of a pair is the share of shuffles whose range reaches the pair's observed |mean
    difference|, so one null distribution serves every pair and the family-wise error over
    the k(k-1)/2 pairs is controlled without a further correction (Carterette 2012, "Multiple
    testing in statistical analysis of systems-based information retrieval experiments";
    Sakai 2018, "Laboratory Experiments in Information Retrieval", section 4.5).

    Parameters
    ----------
    values : ndarray of float64, shape (n_queries, k)
        Per-query values of k >= 2 methods (column j: method j), without NaN.
    n_permutations : int, default 10000
        Random shuffles; all (k!)**n_queries shuffles are enumerated instead when there are
        no more than ``n_permutations`` of them.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``. Each shuffle orders a query's values by
        uniform keys drawn row by row, so the p-values do not depend on the block size used
        to bound memory.

    Returns
    -------
    p : ndarray of float64, shape (k, k)
        ``p[i, j]``: (1 + #{range >= |mean_i - mean_j|}) / (1 + n_permutations), or #{...} /
        (k!)**n when enumerated; symmetric, 1 on the diagonal; NaN for n_queries = 0. Ranges
        equal up to rounding count as reaching it (relative tolerance 1e-9 of the sum over
        queries of the largest |value|).
    exact : bool
        Whether the p-values come from the full enumeration.

    Raises
    ------
    ValueError
        ``values`` not two-dimensional with two or more columns, or holding NaN.

    Notes
    -----
    With k = 2 a shuffle is a sign flip of the query's difference and the test is the paired
    randomization test (:func:`randomization_test`).

    Examples
    --------
    >>> x = np.array([[0.9, 0.7, 0.2], [0.8, 0.5, 0.3], [0.6, 0.5, 0.1]])
    >>> p, exact = randomized_tukey_hsd(x)              # 6**3 = 216 shuffles, all enumerated
    >>> exact, round(float(p[0, 2]), 4), round(float(p[0, 1]), 4)   # 6 / 216 and 168 / 216
    (True, 0.0278, 0.7778)
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] < 2:
        raise InputError(
            f"values must be a 2-d array (n_queries, k methods) with k >= 2, got shape {values.shape}"
        )
    if np.isnan(values).any():
        raise InputError("values holds NaN; leave out the queries where a method has no value")
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, (int, np.integer)) or n_permutations < 1:
        raise InputError(f"n_permutations must be an integer >= 1, got {n_permutations!r}")
    n, k = values.shape
    if n == 0:
        return np.full((k, k), np.nan), False
    sums = values.sum(axis=0)
    observed = np.abs(sums[:, None] - sums[None, :])
    # a column sum of any shuffle is off by at most n * eps * sum_q max_j |x_qj|
    scale = float(np.abs(values).max(axis=1).sum())
    threshold = observed - max(_RTOL, 4 * n * np.finfo(np.float64).eps) * scale
    block = max(1, _SIGN_ELEMENTS // (n * k))
    n_orders = math.factorial(k)
    exact = n * math.log2(n_orders) < 62 and n_orders ** n <= n_permutations
    if exact:
        orders = np.array(list(itertools.permutations(range(k))), dtype=np.int64)
        shuffled = values[:, orders]  # (n, k!, k): each query's values in every order
        total = n_orders ** n
        powers = n_orders ** np.arange(n, dtype=np.int64)
        rows_index = np.arange(n)
        ranges = np.empty(total)
        for start in range(0, total, block):
            index = np.arange(start, min(start + block, total), dtype=np.int64)
            digits = (index[:, None] // powers) % n_orders  # shuffle number -> one order per query
            column_sums = shuffled[rows_index, digits].sum(axis=1)
            ranges[start:start + len(index)] = column_sums.max(axis=1) - column_sums.min(axis=1)
    else:
        rng = np.random.default_rng(seed)
        ranges = np.empty(n_permutations)
        for start in range(0, n_permutations, block):
            rows = min(block, n_permutations - start)
            order = np.argsort(rng.random((rows, n, k)), axis=2, kind="stable")
            column_sums = np.take_along_axis(values[None], order, axis=2).sum(axis=1)
            ranges[start:start + rows] = column_sums.max(axis=1) - column_sums.min(axis=1)
    ranges.sort()
    reached = len(ranges) - np.searchsorted(ranges, threshold, side="left")
    p = reached / len(ranges) if exact else (1 + reached) / (1 + n_permutations)
    return p.astype(np.float64), bool(exact)


def adjust_pvalues(pvalues: npt.ArrayLike, correction: str = "holm") -> np.ndarray:
    """Family-wise adjusted p-values; NaN entries stay NaN and are not counted in the family.

    Parameters
    ----------
    pvalues : sequence of float
    correction : {"holm", "bonferroni", "bh", "none"}
        Bonferroni: min(1, m p). Holm (step-down): the i-th smallest becomes
        max over j <= i of min(1, (m - j + 1) p_(j)). ``"bh"``, Benjamini-Hochberg (step-up,
        false discovery rate, as ``scipy.stats.false_discovery_control``): the i-th smallest
        becomes min over j >= i of min(1, m p_(j) / j).

    Returns
    -------
    ndarray of float64, same order as ``pvalues``
    """
    if correction not in _CORRECTIONS:
        raise InputError(f"correction must be one of {_CORRECTIONS}, got {correction!r}")
    p = np.asarray(pvalues, dtype=np.float64)
    out = p.copy()
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    if correction == "none" or m == 0:
        return out
    if correction == "bonferroni":
        out[valid] = np.minimum(1.0, m * p[valid])
        return out
    if correction == "bh":
        order = valid[np.argsort(p[valid], kind="stable")]
        scaled = p[order] * m / np.arange(1, m + 1)
        out[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        out[index] = running
    return out


def _letters(n):
    alphabet = string.ascii_lowercase
    return [alphabet[i] if i < 26 else alphabet[i // 26 - 1] + alphabet[i % 26] for i in range(n)]


def _check_results(results):
    if not isinstance(results, dict):
        raise InputTypeError(f"results must be a dict {{name: Result}}, got {type(results).__name__}")
    if len(results) < 2:
        raise InputError(f"compare needs at least two methods, got {len(results)}")
    names = [str(n) for n in results]
    if len(set(names)) != len(names):
        raise InputError(f"method names must be distinct as strings, got {names}")
    first = None
    per_method = {}
    for key, name in zip(results, names):
        result = results[key]
        if not isinstance(result, Result):
            raise InputTypeError(f"results[{name!r}] must be a fasttie Result, got {type(result).__name__}")
        if not result.per_query:
            raise InputError(f"results[{name!r}] has no per-query values; keep them (to_dict(per_query=True))")
        if first is None:
            first = (name, result)
        elif result.n_queries != first[1].n_queries:
            raise InputError(
                f"method {name!r} has {result.n_queries} queries but {first[0]!r} has {first[1].n_queries}; "
                "compare methods on the same queries"
            )
        per_method[name] = {m: np.asarray(v, dtype=np.float64) for m, v in result.per_query.items()}
    named = [(n, [str(q) for q in results[k].query_ids]) for k, n in zip(results, names) if results[k].query_ids is not None]
    for name, ids in named[1:]:
        if ids != named[0][1]:
            raise InputError(
                f"method {name!r} has other query ids (or another order) than {named[0][0]!r}; "
                "compare methods on the same queries"
            )
    return names, per_method


def _select_metrics(names, per_method, metrics):
    if metrics is None:
        common = [m for m in per_method[names[0]] if all(m in per_method[n] for n in names)]
        if not common:
            raise InputError(f"the methods {names} share no metric; evaluate them with the same metrics")
        return common
    if isinstance(metrics, str):
        metrics = [metrics]
    selected = []
    for requested in metrics:
        # the key as the results spell it (map, P_5), else the canonical name when the grammar
        # knows it (mAP@10 -> AP@10), else the name as given
        try:
            candidates = ([requested] if all(requested in per_method[n] for n in names)
                          else [m.name for m in parse_metrics(requested)])
        except (TypeError, ValueError):
            candidates = [requested]
        for metric in candidates:
            for name in names:
                if metric not in per_method[name]:
                    raise InputError(
                        f"method {name!r} has no metric {metric!r}; it has {list(per_method[name])}"
                    )
            if metric not in selected:
                selected.append(metric)
    if not selected:
        raise InputError("metrics is empty; name at least one metric or leave it None for all shared ones")
    return selected
