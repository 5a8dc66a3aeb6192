"""Ranking-metric names and their parameters: :class:`Metric` and :func:`parse_metrics`.

The names, aliases and ir_measures parameters of every metric that :func:`fasttie.evaluate`,
:func:`fasttie.rank_evaluate` and :func:`fasttie.trec.evaluate` compute from a ranked list
(the table is in :mod:`fasttie.metrics`); trec_eval's names go through
:mod:`fasttie.metrics.trec_eval_names` first, ranx's names are aliases with ranx's formulas
(``ndcg_burges@k`` is ``nDCG(gain='exp2')@k``), and an unknown name gets the closest valid one
with the same formula (:func:`suggest`).
"""

from __future__ import annotations

import math

import ast
import re
from dataclasses import dataclass

from ..errors import InputError, InputTypeError
from .conventions import DEFAULT_PERSISTENCE, PERSISTENT
from .syntax import MAX_CUTOFF, closest, keyword_parameters, malformed_parameters, parse_cutoffs
from .trec_eval_names import from_trec_eval

AT_R = "MAP@R"  # AP cut at the query's R relevant items, over R (pytorch-metric-learning's MAP@R)
_AT_R_STEMS = ("ap", "map")  # AP@R, MAP@R, mAP@R, map@r: @R is the per-query cutoff R, not an integer
_BASES = {
    "ap": "AP", "map": "AP",
    "ndcg": "nDCG",
    "dcg": "DCG",
    "p": "P", "precision": "P", "prec": "P",
    "r": "R", "recall": "R",
    "f1": "F1", "f": "F1",
    "rr": "RR", "mrr": "RR", "recip_rank": "RR",
    "rprec": "Rprec", "r-prec": "Rprec", "r_prec": "Rprec",
    "acg": "ACG",
    "wap": "WAP", "mwap": "WAP",
    "success": "Success",
    "gmap": "GMAP", "gm_map": "GMAP",
    "bpref": "Bpref", "gmbpref": "GMBpref", "gm_bpref": "GMBpref",
    "setap": "SetAP", "set_map": "SetAP",
    "setp": "P", "set_p": "P", "setr": "R", "set_recall": "R", "setf": "F1", "set_f": "F1",
    "numq": "NumQ", "num_q": "NumQ",
    "numret": "NumRet", "num_ret": "NumRet",
    "numrel": "NumRel", "num_rel": "NumRel",
    "numrelret": "NumRelRet", "num_rel_ret": "NumRelRet",
    "numnonreljudgedret": "NumNonRelJudgedRet", "num_nonrel_judged_ret": "NumNonRelJudgedRet",
    "infap": "infAP",
    "judged": "Judged",
    "rbp": "RBP", "rbpresid": "RBPResid", "rbp_resid": "RBPResid",
    "err": "ERR",
    # ranx's names (ranx.evaluate); its precision, recall, f1, mrr, map, ndcg, dcg and bpref are above
    "hits": "Hits", "hit_rate": "Success", "r-precision": "Rprec", "r_precision": "Rprec", "rprecision": "Rprec",
    # pytorch-metric-learning's mean average precision at R (also AP@R, MAP@R, map@r: see _parse_one)
    "map_at_r": AT_R, "mean_average_precision_at_r": AT_R,
}
# ranx's names whose formula is a fasttie metric with a parameter of its own: (base, parameters)
_PRESETS = {
    "ndcg_burges": ("nDCG", {"gain": "exp2"}),  # Burges et al. 2005: gain 2^g - 1 (ranx's ndcg: g)
    "dcg_burges": ("DCG", {"gain": "exp2"}),
}
# within a Hamming radius: the set metrics, NumRet (the items within it), and AP of the ranking
# cut after the radius (mAP@H<=r), whose denominator is the call's ap_denominator
_RADIUS_BASES = ("P", "R", "F1", "NumRet", "AP")
# SetAP = hits^2 / (N R) is not linear in the hits: without a cutoff the hits are fixed
_NO_CUTOFF = ("Rprec", AT_R, "NumQ", "NumRel", "SetAP", "Bpref", "GMBpref", "infAP")
_RECALL_LEVEL = re.compile(r"^\s*(?:IPrec|iprec|iprec_at_recall)\s*(?:\((.*)\))?\s*[@_]\s*(\d*\.?\d+)\s*$")
_ELEVEN_POINT = re.compile(r"^\s*(?:11pt|11pt_avg)\s*(?:\((.*)\))?\s*$", re.IGNORECASE)
_NAME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_\-]*)\s*(?:\((.*)\))?\s*(?:@\s*(.+?))?\s*$")
_RADIUS = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*\(\s*radius\s*=\s*(-?\d+)\s*\)\s*$")
_EXAMPLE = "RBP(p=0.9)@10"  # a well-formed name with parameters, for error messages

# relevance levels apply to the binary metrics; gains to the graded ones (ir_measures' parameters)
_TAKES_REL = ("AP", AT_R, "P", "R", "F1", "RR", "Success", "Hits", "Rprec", "GMAP", "SetAP", "Bpref", "GMBpref",
              "infAP", "IPrec", "11pt", "NumRel", "NumRelRet", "NumNonRelJudgedRet", "NumRet", "RBP")
_TAKES_GAIN = ("DCG", "nDCG", "RBP")
_GAIN_NAMES = {"linear": "linear", "exp2": "exp2", "log2": "linear", "exp-log2": "exp2"}


@dataclass(frozen=True)
class Metric:
    """One metric: ``base`` name, cutoff ``k`` (None = whole list) or Hamming ``radius``."""

    base: str
    k: int | None = None
    radius: int | None = None
    recall: float | None = None  # IPrec's recall level, in [0, 1]
    p: float | None = None  # RBP's persistence
    rel: float | None = None  # relevance level of this metric (None: the call's relevance_level)
    gain: tuple | None = None  # (parameter, value) as written, e.g. ("dcg", "exp-log2"); None: the call's gain
    judged_only: bool = False  # rank the judged documents only (ir_measures' judged_only, trec_eval -J)
    relative: bool = False  # P over min(k, R) instead of k (trec_eval's relative_P, ir_measures' SetP(relative=True))
    beta: float | None = None  # F's weight of recall (None: 1, F1)
    trec_eval_9: bool = False  # IPrec / 11pt: recall levels rounded as trec_eval 9 (pytrec_eval), not 10.0

    @property
    def name(self) -> str:
        """Canonical name, the key in Result dictionaries."""
        if self.radius is not None:
            return f"{self.base}(radius={self.radius})"
        version = "(trec_eval=9)" if self.trec_eval_9 else ""
        if self.recall is not None:
            return f"{self.base}{version}@{self.recall!r}"  # the shortest spelling: 0.1, 0.25, 1.0
        if self.base == "11pt":
            return self.base + version
        params = [f"p={self.p:g}"] if self.p not in (None, DEFAULT_PERSISTENCE) else []
        params += [f"beta={self.beta:g}"] if self.beta not in (None, 1.0) else []
        params += [f"rel={self.rel:g}"] if self.rel is not None else []
        if self.gain is not None:
            key, value = self.gain
            params.append(f"{key}={dict(value)!r}" if key == "gains" else f"{key}={value!r}")
        params += ["relative=True"] if self.relative else []
        params += ["judged_only=True"] if self.judged_only else []
        stem, cutoff = ("MAP", "@R") if self.base == AT_R else (self.base, "" if self.k is None else f"@{self.k}")
        return (f"{stem}({', '.join(params)})" if params else stem) + cutoff

    def gain_table(self):
        """The metric's own gain: None (the call's), "linear", "exp2" or {grade: gain}."""
        if self.gain is None:
            return None
        key, value = self.gain
        return dict(value) if key == "gains" else _GAIN_NAMES[value]

    @property
    def family(self) -> str:
        """Base name, or 'P(radius)', 'AP(radius)', ... for metrics within a radius."""
        return f"{self.base}(radius)" if self.radius is not None else self.base


KNOWN = (
    "Known: AP, AP@k, nDCG, nDCG@k, DCG@k, P@k, R@k, F1@k, RR, RR@k, Success@k, Hits@k, Rprec, MAP@R, ACG@k, WAP@k, "
    "GMAP, SetAP, Bpref, GMBpref, infAP, IPrec@r (r in [0, 1]), 11pt, Judged@k, RBP(p=0.8)@k, RBPResid(p=0.8)@k, "
    "ERR@k, NumQ, NumRet, NumRel, NumRelRet, NumNonRelJudgedRet, P(radius=r), R(radius=r), F1(radius=r), "
    "AP(radius=r), NumRet(radius=r); "
    "aliases mAP@k, ndcg@k, "
    "precision@k, recall@k, mrr, trec_eval's names and ranx's (hits@k, hit_rate@k, r-precision, ndcg_burges@k); "
    "lists P@[1,10]"
)
# every spelling (lower case) -> the metric it names, for suggestions
_TARGETS = {**_BASES, **{alias: f"{base}({', '.join(f'{key}={value!r}' for key, value in params.items())})"
                         for alias, (base, params) in _PRESETS.items()}}


def suggest(name):
    """The closest valid metric name to a misspelt one, keeping its cutoff, radius or parameters
    (``ndgc@10`` -> ``nDCG@10``), or None.

    A suggestion has the formula of the spelling it is closest to: a misspelt ranx name gets
    ranx's formula (``ndcg_burgs@10`` -> ``nDCG(gain='exp2')@10``, not ``nDCG@10``). None when
    nothing is close, when two spellings of different metrics are equally close, or when part of
    the name cannot be kept (ranx's ``rbp.95``: dropping ``.95`` would change the metric).

    Examples
    --------
    >>> suggest("ndgc@10"), suggest("P(radus=2)"), suggest("xyz"), suggest("ndcg_burgs@10")
    ('nDCG@10', 'P(radius=2)', None, "nDCG(gain='exp2')@10")
    """
    match = re.match(r"^\s*([A-Za-z][A-Za-z0-9_\-]*)\s*(.*?)\s*$", name)
    if not match:
        return None
    base, rest = match.groups()
    if re.match(r"^\(\s*\w*\s*=\s*\d+\s*\)$", rest):  # P(radus=2) -> P(radius=2)
        radius = re.search(r"\d+", rest).group()
        close = closest(base, ["p", "r", "precision", "recall", "f1", "ap", "map", "numret"])
        return f"{_BASES[close]}(radius={radius})" if close else None
    target = closest(base, _TARGETS, meanings=True)
    if target is None:
        return None
    if rest.startswith("(") and target.endswith(")"):  # the alias's parameters and the ones written
        close = f"{target[:-1]}, {rest[1:]}"
    elif not rest or rest.startswith(("(", "@")):
        close = target + rest
    else:  # a suffix the grammar does not read
        return None
    try:  # only a name that parses (and the parameters written are the metric's)
        parse_metrics([close])
    except (InputError, InputTypeError):
        return None
    return close


def _unknown(name):
    parts = [p.strip() for p in re.split(r"[,;\s]+", name) if p.strip()] if re.search(r"[,;\s]", name.strip()) else []
    if len(parts) > 1 and not re.search(r"[\[(]", name):
        hint = f"; give one name per entry, e.g. {parts!r}"  # 'AP,P@10' -> ['AP', 'P@10']
    else:
        close = suggest(name)
        hint = f"; did you mean {close!r}?" if close else ""
    return InputError(f"unknown metric {name!r}{hint} {KNOWN}", argument="metrics", kind="unknown metric")


def metric_names(metrics) -> list:
    """A metric name or an iterable of names as a list (items unchecked)."""
    if isinstance(metrics, str):
        return [metrics]
    try:
        return list(metrics)
    except TypeError:
        raise InputTypeError(f"metrics must be a name or a list of names, got {type(metrics).__name__}") from None


def parse_metrics(metrics) -> list[Metric]:
    """Parse metric names into unique Metric objects, in the order given.

    Parameters
    ----------
    metrics : str or iterable of str

    Returns
    -------
    list of Metric

    Raises
    ------
    ValueError
        Unknown name (with the closest valid name), cutoff <= 0 or not an integer, negative
        radius, a cutoff on Rprec, or no metric at all.

    Examples
    --------
    >>> [m.name for m in parse_metrics(["map", "P_10", "ndcg@[5,10]", "RBP(p=0.9)@10"])]
    ['AP', 'P@10', 'nDCG@5', 'nDCG@10', 'RBP(p=0.9)@10']
    """
    names = metric_names(metrics)
    out: list[Metric] = []
    for name in names:
        if not isinstance(name, str):
            raise InputTypeError(f"metric names must be strings, got {name!r}")
        for metric in _parse_one(name):
            if metric not in out:
                out.append(metric)
    if not out:
        raise InputError("metrics is empty; ask for at least one metric, e.g. metrics=('AP',)")
    return out


def _parameters(text: str, name: str) -> dict:
    """``p=0.9, rel=2`` -> {"p": 0.9, "rel": 2}: keyword arguments with literal values (ir_measures'
    syntax), read without evaluating any code; each key once."""
    pairs = keyword_parameters(text, name, _EXAMPLE)
    try:
        return {key: ast.literal_eval(value) for key, value in pairs}
    except (SyntaxError, ValueError, TypeError):  # not a literal: a name, a call, ...
        raise malformed_parameters(name, _EXAMPLE) from None


def _relevance_level(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise InputError(f"metric {name!r}: rel is the relevance level, a positive number, got {value!r}")
    return float(value)


def _gain_parameter(params, name):
    """The gain parameter, as (key, value): dcg='log2' / 'exp-log2' (ir_measures), gain='linear' /
    'exp2' (fasttie's option names) or gains={grade: gain} (trec_eval's ndcg_p, ir_measures)."""
    given = [key for key in ("dcg", "gain", "gains") if key in params]
    if len(given) > 1:
        raise InputError(f"metric {name!r}: give one of dcg=, gain=, gains=")
    if not given:
        return None
    key = given[0]
    value = params.pop(key)
    if key == "gains":
        if not isinstance(value, dict) or not value or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for item in value.items() for v in item
        ):
            raise InputError(f"metric {name!r}: gains must map grades to gains, e.g. gains={{0: 0, 1: 1, 2: 3}}")
        return key, tuple(sorted((float(g), float(v)) for g, v in value.items()))
    choices = ("log2", "exp-log2") if key == "dcg" else ("linear", "exp2")
    if value not in choices:
        raise InputError(f"metric {name!r}: {key} must be one of {choices}, got {value!r}")
    return key, value


def _beta(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < float("inf"):
        raise InputError(f"metric {name!r}: beta (the weight of recall in F) must be a number >= 0, got {value!r}")
    return float(value)


def _flag(value, key, name):
    if not isinstance(value, bool):
        raise InputError(f"metric {name!r}: {key} must be True or False, got {value!r}")
    return value


def _persistence(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise InputError(f"metric {name!r}: the persistence p must be a number with 0 < p < 1, got {value!r}")
    return float(value)


def _trec_eval_version(text, name):
    """Whether an interpolated precision's parameters (the text in its parentheses, or None)
    ask for trec_eval 9's recall levels: ``trec_eval=9`` starts level l at relevant item
    (long) (l R + 0.9), as pytrec_eval does; ``trec_eval=10`` (the default) at (long) (l R + 0.5)."""
    params = _parameters(text, name) if text is not None else {}
    version = params.pop("trec_eval", 10)
    if params or version not in (9, 10) or isinstance(version, bool):
        raise InputError(f"metric {name!r}: interpolated precision takes one parameter, trec_eval=9 or 10 (how "
                         "recall levels are rounded), as in 'IPrec(trec_eval=9)@0.3'")
    return version == 9


def _options(base, params, name):
    """The Metric fields a name's parameters set, after checking each (params is emptied)."""
    options = {}
    if base in PERSISTENT:
        options["p"] = _persistence(params.pop("p", DEFAULT_PERSISTENCE), name)
    if base in _TAKES_REL and "rel" in params:
        options["rel"] = _relevance_level(params.pop("rel"), name)
    if base in _TAKES_GAIN:
        options["gain"] = _gain_parameter(params, name)
    if "judged_only" in params:
        options["judged_only"] = _flag(params.pop("judged_only"), "judged_only", name)
    if base == "P" and "relative" in params:
        options["relative"] = _flag(params.pop("relative"), "relative", name)
    if base == "F1" and "beta" in params:
        options["beta"] = _beta(params.pop("beta"), name)
    if params:
        known = [key for key, ok in (("p", base in PERSISTENT), ("beta", base == "F1"), ("relative", base == "P"),
                                     ("rel", base in _TAKES_REL),
                                     ("dcg, gain, gains", base in _TAKES_GAIN), ("judged_only", True)) if ok]
        raise InputError(f"metric {name!r}: {base} takes no parameter {', '.join(map(repr, params))} "
                         f"(its parameters: {', '.join(known) or 'none'})")
    return options


def _parse_one(name: str) -> list[Metric]:
    eleven_point = _ELEVEN_POINT.match(name)
    if eleven_point:
        return [Metric("11pt", trec_eval_9=_trec_eval_version(eleven_point.group(1), name))]
    recall_match = _RECALL_LEVEL.match(name)
    if recall_match:
        level = float(recall_match.group(2))
        if not 0.0 <= level <= 1.0:
            raise InputError(f"metric {name!r}: IPrec takes a recall level from 0 to 1, as in 'IPrec@0.25', "
                             f"got {level}")
        return [Metric("IPrec", recall=level, trec_eval_9=_trec_eval_version(recall_match.group(1), name))]
    translated = from_trec_eval(name)
    if translated != [name]:
        return [metric for part in translated for metric in _parse_one(part)]
    radius_match = _RADIUS.match(name)
    if radius_match:
        base = _BASES.get(radius_match.group(1).lower())
        radius = int(radius_match.group(2))
        if base not in _RADIUS_BASES:
            raise _unknown(name)
        if radius < 0:
            raise InputError(f"metric {name!r}: radius must be >= 0")
        radius = min(radius, MAX_CUTOFF)  # any radius past n_bits holds the whole database
        return [Metric(base, radius=radius)]
    match = _NAME.match(name)
    if not match:
        raise _unknown(name)
    alias = match.group(1).lower()
    suffix = match.group(3)
    if alias in _AT_R_STEMS and suffix is not None and suffix.upper() == "R":
        alias, suffix = "map_at_r", None  # MAP@R: the cutoff is each query's R
    base, preset = _PRESETS.get(alias, (_BASES.get(alias), {}))
    if base is None:
        raise _unknown(name)
    params = _parameters(match.group(2), name) if match.group(2) is not None else {}
    if alias in ("setf", "set_f") and "beta" in params:
        # ir_measures' SetF(beta=b) is trec_eval's set_F: (1 + b) P R / (b P + R), recall
        # weighted by b where F's beta enters squared
        params["beta"] = math.sqrt(_beta(params["beta"], name))
    for key, value in preset.items():  # ranx's ndcg_burges is nDCG(gain='exp2'): that gain, no other
        if key in params or (key == "gain" and {"dcg", "gains"} & params.keys()):
            raise InputError(f"metric {name!r}: {match.group(1)} is {_TARGETS[alias]} (ranx's formula); "
                             f"to choose the gain, name {base}(...) instead")
        params[key] = value
    options = _options(base, params, name)
    if suffix is None:
        return [Metric(base, **options)]
    if base in _NO_CUTOFF:
        raise InputError(f"metric {name!r}: {base} takes no cutoff")
    return [Metric(base, k, **options) for k in parse_cutoffs(suffix, name, whole_list=True)]


def passes(metrics) -> list:
    """The metrics grouped by the settings their own parameters change (relevance level, gain):
    [((rel, gain), metrics)], None meaning the call's option; each group is one finalizer pass."""
    groups = {}
    for metric in metrics:
        gain = metric.gain_table()
        key = (metric.rel, tuple(sorted(gain.items())) if isinstance(gain, dict) else gain)
        groups.setdefault(key, []).append(metric)
    return list(groups.items())
