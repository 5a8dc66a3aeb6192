"""Paired significance tests between methods evaluated on the same queries.

For each metric and each pair of methods: the paired t-test (``scipy.stats.ttest_rel``) and the
paired randomization test (sign flips of the per-query differences, two-sided), with a
Bonferroni or Holm correction over the pairs of each metric, in the spirit of ranx ``compare``.
"""

from __future__ import annotations

import itertools
import json
import math
import string
import textwrap

import numpy as np

from .metrics import parse_metrics
from .result import Result
from .errors import InputError, InputTypeError
from .validation import mean_of_kept

__all__ = ["Comparison", "adjust_pvalues", "compare", "paired_t_test", "randomization_test"]

_CORRECTIONS = ("holm", "bonferroni", "none")
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
        ``mean_diff`` (mean of a - b over the queries where both have a value), ``n`` (those
        queries), ``t_p``, ``t_p_adjusted``, ``perm_p``, ``perm_p_adjusted``, ``exact`` (the
        randomization p comes from all 2**n sign vectors) and ``significant``
        (``perm_p_adjusted <= alpha``).
    settings : dict
        ``n_permutations``, ``seed``, ``correction``, ``alpha``, ``n_queries``.
    """

    def __init__(self, names, metrics, means, tests, settings):
        self.names = list(names)
        self.metrics = list(metrics)
        self.means = means
        self.tests = tests
        self.settings = settings

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
            "settings": dict(self.settings),
        }

    def to_json(self, **kwargs) -> str:
        """JSON text of :meth:`to_dict`; ``kwargs`` go to :func:`json.dumps`."""
        return json.dumps(self.to_dict(), **kwargs)

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

    def legend(self) -> str:
        """One line stating the tests, the correction, the permutations and the seed."""
        s = self.settings
        exact = any(t["exact"] for t in self.tests)
        correction = {"holm": "Holm", "bonferroni": "Bonferroni", "none": "no"}[s["correction"]]
        n_pairs = len(self.names) * (len(self.names) - 1) // 2
        return (
            f"letters: methods beaten significantly (two-sided paired randomization test, sign flips, "
            f"{s['n_permutations']} permutations, seed {s['seed']}"
            + ("; exact enumeration of all 2^n sign vectors where 2^n <= permutations" if exact else "")
            + f"; {correction} correction over the {n_pairs} pair(s) of each metric; alpha {s['alpha']}). "
            f"Paired t-test p-values (scipy.stats.ttest_rel) are in the pairwise table and the JSON output."
        )

    def format_tests(self) -> str:
        """Aligned table of every pairwise test: mean difference, raw and adjusted p-values.

        ``*`` marks the significant pairs (corrected randomization p <= alpha); ``exact``
        marks randomization p-values from the full enumeration of sign vectors.
        """
        header = ["metric", "a", "b", "mean(a-b)", "n", "t p", "t p adj", "perm p", "perm p adj", ""]
        rows = [header]
        for t in self.tests:
            rows.append([
                t["metric"], t["a"], t["b"], f"{t['mean_diff']:+.4f}", str(t["n"]),
                *(f"{t[k]:.4g}" for k in ("t_p", "t_p_adjusted", "perm_p", "perm_p_adjusted")),
                ("*" if t["significant"] else "") + (" exact" if t["exact"] else ""),
            ])
        widths = [max(len(r[j]) for r in rows) for j in range(len(header))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)

    def __str__(self) -> str:
        letters = _letters(len(self.names))
        label = [f"{letters[i]}  {name}" for i, name in enumerate(self.names)]
        width = max(len("method"), *(len(s) for s in label))
        cells = []
        for name in self.names:
            row = []
            for metric in self.metrics:
                mark = "".join(letters[self.names.index(n)] for n in self.beats(name, metric))
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


def compare(results, *, metrics=None, n_permutations=10000, seed=0, correction="holm", alpha=0.05) -> Comparison:
    """Paired significance tests between methods evaluated on the same queries.

    Parameters
    ----------
    results : dict of str to Result
        Two or more methods, with per-query values on the same queries (same ``n_queries``,
        and the same ``query_ids`` where both name them).
    metrics : sequence of str, optional
        Metrics to compare (aliases accepted); default every metric all results share.
    n_permutations : int, default 10000
        Random sign vectors of the randomization test. When 2**n <= n_permutations for the n
        paired queries, all 2**n sign vectors are enumerated instead (exact p-value).
    seed : int, default 0
        Seed of ``numpy.random.default_rng``; the p-values do not depend on anything else.
    correction : {"holm", "bonferroni", "none"}, default "holm"
        Family-wise correction over the pairs of each metric, separately for each test.
    alpha : float, default 0.05
        Level of ``significant`` (by the corrected randomization p-value, ``p <= alpha``).

    Returns
    -------
    Comparison
        ``str()`` of it is a table of means marked with the methods each beats significantly.

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
    pair. The randomization p-value is (1 + #{|mean of flipped differences| >= |observed|}) /
    (1 + n_permutations), or #{...} / 2**n when enumerated; differences equal up to rounding
    count as ties (relative tolerance 1e-9 of the sum of |differences|). Identical methods get
    p = 1 from both tests.

    Examples
    --------
    >>> import numpy as np, fasttie as ft
    >>> a = ft.Result({"AP": 0.7}, {"AP": np.array([0.9, 0.8, 0.6, 0.5])}, 4, 0)
    >>> b = ft.Result({"AP": 0.5}, {"AP": np.array([0.7, 0.5, 0.5, 0.3])}, 4, 0)
    >>> c = compare({"new": a, "old": b})
    >>> c.tests[0]["perm_p"], c.tests[0]["exact"]    # 2 of the 16 sign vectors reach |0.2|
    (0.125, True)
    """
    names, per_method = _check_results(results)
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, (int, np.integer)) or n_permutations < 1:
        raise InputError(f"n_permutations must be an integer >= 1, got {n_permutations!r}")
    if correction not in _CORRECTIONS:
        raise InputError(f"correction must be one of {_CORRECTIONS}, got {correction!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise InputError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputTypeError(f"seed must be an integer, got {seed!r}")
    metric_names = _select_metrics(names, per_method, metrics)

    means = {n: {} for n in names}
    for name in names:
        for metric in metric_names:
            values = per_method[name][metric]
            means[name][metric] = mean_of_kept(values)
    tests = []
    for metric in metric_names:
        group = []
        for a, b in itertools.combinations(names, 2):
            x, y = per_method[a][metric], per_method[b][metric]
            both = ~(np.isnan(x) | np.isnan(y))
            diff = x[both] - y[both]
            perm_p, exact = randomization_test(diff, n_permutations=int(n_permutations), seed=int(seed))
            group.append({
                "metric": metric, "a": a, "b": b,
                "mean_diff": float(np.mean(diff)) if len(diff) else float("nan"),
                "n": int(both.sum()),
                "t_p": paired_t_test(x[both], y[both]),
                "perm_p": perm_p, "exact": exact,
            })
        for key in ("t_p", "perm_p"):
            adjusted = adjust_pvalues([t[key] for t in group], correction)
            for test, p in zip(group, adjusted):
                test[key + "_adjusted"] = float(p)
        for test in group:
            p = test["perm_p_adjusted"]
            test["significant"] = bool(not math.isnan(p) and p <= alpha)
        order = ("metric", "a", "b", "mean_diff", "n", "t_p", "t_p_adjusted", "perm_p", "perm_p_adjusted", "significant", "exact")
        tests.extend({k: t[k] for k in order} for t in group)
    settings = {
        "n_permutations": int(n_permutations), "seed": int(seed), "correction": correction,
        "alpha": float(alpha), "n_queries": results[names[0]].n_queries,
    }
    return Comparison(names, metric_names, means, tests, settings)


def paired_t_test(x, y) -> float:
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
    if np.all(diff == diff[0]):
        return 1.0 if diff[0] == 0 else 0.0
    return float(stats.ttest_rel(x, y).pvalue)


def randomization_test(diff, *, n_permutations=10000, seed=0) -> tuple[float, bool]:
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


def adjust_pvalues(pvalues, correction="holm") -> np.ndarray:
    """Family-wise adjusted p-values; NaN entries stay NaN and are not counted in the family.

    Parameters
    ----------
    pvalues : sequence of float
    correction : {"holm", "bonferroni", "none"}
        Bonferroni: min(1, m p). Holm (step-down): the i-th smallest becomes
        max over j <= i of min(1, (m - j + 1) p_(j)).

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
        # canonical name when the grammar knows it (mAP@10 -> AP@10), else the name as given
        try:
            candidates = [m.name for m in parse_metrics(requested)]
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
