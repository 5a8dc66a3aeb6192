"""Diversity-measure names (ndeval's measures): :class:`DiversityMetric` and its grammar.

ir_measures' names and parameters (``alpha_nDCG(alpha=0.3)@20``, ``NRBP(alpha=0.5,beta=0.8)``,
``AP_IA``), the parameters after the cutoff too (``alpha_nDCG@20(alpha=0.3)``), and ndeval's
column names (``alpha-nDCG@20``, ``ERR-IA@20``, ``MAP-IA``, ``P-IA@20``, ``strec@20``); case and
``-`` / ``_`` do not matter. Parameters and cutoffs are written as for the ranking metrics
(:mod:`fasttie.metrics.syntax`). :func:`fasttie.diversity.diversity_evaluate` and
:func:`fasttie.trec.evaluate` read these names; the measures themselves are in
:mod:`fasttie.diversity`.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, InputTypeError
from .syntax import closest, keyword_parameters, parse_cutoffs

DEFAULT_ALPHA = 0.5
DEFAULT_BETA = 0.5

# normalised spelling (lower case, "-" as "_") -> (canonical base, takes a cutoff, parameters)
_BASES = {
    "alpha_ndcg": ("alpha_nDCG", True, ("alpha",)),
    "alpha_dcg": ("alpha_DCG", True, ("alpha",)),
    "err_ia": ("ERR_IA", True, ("alpha",)),
    "nerr_ia": ("nERR_IA", True, ("alpha",)),
    "nrbp": ("NRBP", False, ("alpha", "beta")),
    "nnrbp": ("nNRBP", False, ("alpha", "beta")),
    "p_ia": ("P_IA", True, ()),
    "ap_ia": ("AP_IA", False, ()),
    "map_ia": ("AP_IA", False, ()),
    "strecall": ("StRecall", True, ()),
    "strec": ("StRecall", True, ()),
}
ALPHA_FREE = ("P_IA", "AP_IA", "StRecall")  # the measures that do not read alpha
TAKES_BETA = ("NRBP", "nNRBP")  # NRBP's patience
_NAME = re.compile(
    r"^\s*([A-Za-z][A-Za-z_\-]*?)\s*(?:\(([^()]*)\))?\s*(?:@\s*(\[[^\]]*\]|[^\s(\[]+))?\s*(?:\(([^()]*)\))?\s*$"
)
_KNOWN = ("alpha_nDCG@k, alpha_DCG@k, ERR_IA@k, nERR_IA@k, NRBP, nNRBP, P_IA@k, AP_IA, StRecall@k "
          "(or ndeval's alpha-nDCG@k, ERR-IA@k, MAP-IA, P-IA@k, strec@k)")
_EXAMPLE = "alpha_nDCG(alpha=0.3)@10"  # a well-formed name with parameters, for error messages


@dataclass(frozen=True)
class DiversityMetric:
    """One parsed diversity measure: canonical ``name``, ``base`` (``"alpha_nDCG"``,
    ``"alpha_DCG"``, ``"ERR_IA"``, ``"nERR_IA"``, ``"NRBP"``, ``"nNRBP"``, ``"P_IA"``,
    ``"AP_IA"``, ``"StRecall"``), cutoff ``k`` (None for the whole-run measures NRBP, nNRBP,
    AP_IA), ``alpha`` and ``beta``."""

    name: str
    base: str
    k: int | None
    alpha: float
    beta: float


def _normalised_base(name):
    base = re.split(r"[(@]", name.strip(), maxsplit=1)[0].strip().lower().replace("-", "_")
    if base.startswith("alpha") and not base.startswith("alpha_"):
        base = "alpha_" + base[5:]
    return base


def is_diversity_metric(name) -> bool:
    """Whether a metric name belongs to the diversity family (an ndeval measure, or any name
    starting with ``alpha``)."""
    if not isinstance(name, str):
        return False
    base = _normalised_base(name)
    return base in _BASES or base.startswith("alpha")


def diversity_metric_name(base: str, k, alpha: float, beta: float) -> str:
    """Canonical name: ``base``, its parameters that differ from the defaults (alpha = beta =
    0.5) as ``(alpha=0.3,beta=0.8)``, then ``@k`` (e.g. ``alpha_nDCG(alpha=0.3)@10``)."""
    params = []
    if base not in ALPHA_FREE and alpha != DEFAULT_ALPHA:
        params.append(f"alpha={alpha!r}")
    if base in TAKES_BETA and beta != DEFAULT_BETA:
        params.append(f"beta={beta!r}")
    text = base + (f"({','.join(params)})" if params else "")
    return text if k is None else f"{text}@{k}"


def check_alpha(alpha, name="alpha"):
    """alpha (or beta) as a float in [0, 1], or TypeError / ValueError naming it."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, (numbers.Real, np.floating, np.integer)):
        raise InputTypeError(f"{name} must be a number in [0, 1], got {alpha!r}")
    alpha = float(alpha)
    if not 0.0 <= alpha <= 1.0:  # also rejects NaN
        raise InputError(f"{name} must be in [0, 1], got {alpha!r}")
    return alpha


def _parameters(name, text, allowed):
    """{'alpha': a, 'beta': b} from ``alpha=0.3, beta=0.8``: each once, a number in [0, 1]."""
    out = {}
    for key, value in keyword_parameters(text, name, _EXAMPLE):
        if key not in allowed:
            accepted = ", ".join(allowed) if allowed else "none"
            raise InputError(f"metric {name!r}: unknown parameter {key!r} (accepted: {accepted})")
        try:
            number = float(value)  # as written: ndeval's numbers, nan and inf are rejected below
        except ValueError:
            raise InputError(f"metric {name!r}: {key} {value!r} is not a number") from None
        out[key] = check_alpha(number, f"{key} of metric {name!r}")
    return out


def suggest_diversity(name):
    """The closest diversity measure to a misspelt name, for the did-you-mean of
    :func:`parse_diversity_metric`.

    Parameters
    ----------
    name : str
        A name whose base is not a diversity measure.

    Returns
    -------
    str or None
        The closest measure with the name's parameters and cutoff as written, or None when
        nothing is close or the base is known (then the rest of the name is what is wrong).

    Examples
    --------
    >>> suggest_diversity("alpha_nDGC@10"), suggest_diversity("StRecal(alpha=0.3)@5"), suggest_diversity("xyz")
    ('alpha_nDCG@10', 'StRecall(alpha=0.3)@5', None)
    """
    match = re.match(r"^\s*([A-Za-z][A-Za-z_\-]*)\s*((?:[(@].*)?)$", name.strip())
    if not match or _normalised_base(match.group(1)) in _BASES:  # a known base: its shape is wrong, not its name
        return None
    close = closest(_normalised_base(match.group(1)), _BASES)
    return None if close is None else _BASES[close][0] + match.group(2)


def parse_diversity_metric(name: str) -> list[DiversityMetric]:
    """One diversity metric name -> its :class:`DiversityMetric` (one per listed cutoff).

    Accepts ir_measures' names and parameters (``alpha_nDCG(alpha=0.3)@20``, ``ERR_IA@20``,
    ``NRBP(alpha=0.5,beta=0.8)``, ``AP_IA``, ``StRecall@10``), the parameters after the
    cutoff too (``alpha_nDCG@20(alpha=0.3)``), cutoff lists (``alpha_nDCG@[5,10,20]``) and
    ndeval's column names (``alpha-nDCG@20``, ``ERR-IA@20``, ``MAP-IA``, ``P-IA@20``,
    ``strec@20``); case and ``-`` / ``_`` do not matter.

    Raises
    ------
    ValueError
        An unknown name (with the closest measure), a missing cutoff (or one given to NRBP,
        nNRBP, AP_IA), a bad cutoff, an unknown or repeated parameter, alpha or beta not a
        number in [0, 1].

    Examples
    --------
    >>> [m.name for m in parse_diversity_metric("alpha-nDCG@[5,10](alpha=0.3)")]
    ['alpha_nDCG(alpha=0.3)@5', 'alpha_nDCG(alpha=0.3)@10']
    """
    match = _NAME.match(name)
    base_key = _normalised_base(name)
    if not match or base_key not in _BASES:
        close = suggest_diversity(name)
        hint = f"; did you mean {close!r}? " if close else "; "
        raise InputError(f"unknown diversity metric {name!r}{hint}fasttie computes {_KNOWN}, "
                         f"e.g. 'alpha_nDCG@20' or 'alpha_nDCG(alpha=0.3)@10'")
    _, before, cutoff, after = match.groups()
    base, has_cutoff, allowed = _BASES[base_key]
    if before is not None and after is not None:
        raise InputError(f"metric {name!r}: give the parameters once")
    params = _parameters(name, before if before is not None else (after or ""), allowed)
    alpha = params.get("alpha", DEFAULT_ALPHA)
    beta = params.get("beta", DEFAULT_BETA)
    if not has_cutoff:
        if cutoff is not None:
            raise InputError(f"metric {name!r}: {base} has no cutoff (ndeval computes it over the whole run); "
                             f"write {base!r}")
        return [DiversityMetric(diversity_metric_name(base, None, alpha, beta), base, None, alpha, beta)]
    if cutoff is None:
        raise InputError(f"metric {name!r}: {base} needs a cutoff, e.g. '{base}@20'")
    return [DiversityMetric(diversity_metric_name(base, k, alpha, beta), base, k, alpha, beta)
            for k in parse_cutoffs(cutoff, name, whole_list=False)]


def parse_diversity_metrics(metrics) -> dict:
    """Diversity metric names -> {canonical name: DiversityMetric} in the order asked, each once.

    Parameters
    ----------
    metrics : str or iterable of str

    Returns
    -------
    dict of str to DiversityMetric

    Raises
    ------
    TypeError
        ``metrics`` not a name or an iterable, a name that is not a string.
    ValueError
        A name :func:`parse_diversity_metric` rejects, or no name at all.
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    try:
        names = list(metrics)
    except TypeError:
        raise InputTypeError(f"metrics must be a metric name or a sequence of names, got {metrics!r}") from None
    parsed = {}
    for name in names:
        if not isinstance(name, str):
            raise InputTypeError(f"metric names must be strings, got {name!r}")
        for metric in parse_diversity_metric(name):
            parsed.setdefault(metric.name, metric)
    if not parsed:
        raise InputError("metrics is empty; ask for at least one measure, e.g. metrics=['alpha_nDCG@20']")
    return parsed


def diversity_settings(metrics) -> dict:
    """settings entries: alpha (and beta when NRBP / nNRBP was asked for), a float or a sorted list."""
    out = {}
    metrics = list(metrics)
    alphas = sorted({m.alpha for m in metrics if m.base not in ALPHA_FREE})
    betas = sorted({m.beta for m in metrics if m.base in TAKES_BETA})
    for key, found in (("alpha", alphas), ("beta", betas)):
        if found:
            out[key] = found[0] if len(found) == 1 else found
    return out
