"""Metric names (ir_measures style): the grammar every evaluation parses.

Canonical names: ``AP``, ``AP@k``, ``nDCG``, ``nDCG@k``, ``DCG``, ``DCG@k``, ``P@k``, ``R@k``,
``F1@k`` (``F1(beta=2)@k``: F with recall weighted beta), ``RR``, ``RR@k``, ``Success@k``, ``Rprec``, ``ACG@k``, ``WAP``, ``WAP@k``, ``GMAP``,
``SetAP``, ``Bpref``, ``GMBpref``, ``IPrec@r`` (r = 0.0, 0.1, ..., 1.0) and ``11pt`` (fixed
orders only), ``Judged@k``, ``RBP(p=0.8)@k`` and its residual ``RBPResid(p=0.8)@k``, ``infAP``
(ranked lists; trec_eval's inferred AP over a sampled pool), the counts ``NumQ``, ``NumRet``,
``NumRel``, ``NumRelRet``, ``NumNonRelJudgedRet``, ``ERR@k`` (expected reciprocal rank with gdeval's
stop probability (2**g - 1) / 16, grades 0..4; every grade > 0 counts: no ``rel=``), and
``P(radius=r)``, ``R(radius=r)``. No ``@k`` (or ``@ALL``) means the whole list. Parameters go
in parentheses before the cutoff, as in ir_measures: ``RBP(p=0.9)@100``; the binary metrics
take their own relevance level
(``P(rel=2)@5``) and the graded ones their own gain (``nDCG(dcg='exp-log2')@10``,
``nDCG(gains={0: 0, 1: 1, 2: 3})``), else the call's ``relevance_level`` and ``gain``; any
metric of a ranked list may rank the judged documents only (``P(judged_only=True)@10``,
trec_eval's ``-J`` for that metric alone). Aliases such as ``mAP@k``,
``map@k``, ``ndcg@k``, ``precision@k``, ``recall@k``, ``mrr`` and trec_eval's measure names
(``map``, ``P_10``, ``ndcg_cut_10``, ``map_cut.5,10``, ``recall_100``, ``recip_rank``,
``Rprec``, ``gm_map``, ``set_P``, ``set_recall``, ``set_F``, ``set_map``, ``num_ret``, ``rbp``
(p = 0.9), ``rbp_resid``, ``rbp.p=0.95``, ``infAP``, ``num_nonrel_judged_ret``, ...)
normalise to these, and a list form ``P@[1,10,100]`` expands.

Most metrics are averaged over queries; :func:`aggregate` knows the exceptions: the counts are
summed and GMAP and GMBpref are geometric means (trec_eval's and ir_measures' conventions).
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass

import numpy as np

from .errors import InputError, InputTypeError

__all__ = ["Metric", "aggregate", "parse_metrics"]

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
}
_RADIUS_BASES = ("P", "R")
# SetAP = hits^2 / (N R) is not linear in the hits: without a cutoff the hits are fixed
_NO_CUTOFF = ("Rprec", "NumQ", "NumRel", "SetAP", "Bpref", "GMBpref", "infAP")
# metrics whose value is 0/0 for a query without relevant items (see the `empty` policy)
UNDEFINED_WHEN_EMPTY = (
    "AP", "WAP", "GMAP", "nDCG", "R", "RR", "Rprec", "SetAP", "Bpref", "GMBpref", "infAP", "IPrec", "11pt",
    "R(radius)",
)
# AP-like metrics: at a cutoff with ap_denominator="retrieved" the finalizer must compute the
# expected ratio E[numerator / hits@k] (hypergeometric sums)
RATIO_BASES = ("AP", "WAP", "GMAP")
# counts: summed over queries, and their value stands whatever the empty policy (except skip)
COUNTS = ("NumQ", "NumRet", "NumRel", "NumRelRet", "NumNonRelJudgedRet")
# metrics of the judgments, not of the relevant items: their value stands too (except under skip)
KEPT_WHEN_EMPTY = COUNTS + ("Judged", "RBPResid")
_LEVELS = tuple(i / 10 for i in range(11))
GEOMETRIC_FLOOR = 1e-5  # trec_eval's MIN_GEO_MEAN: GMAP takes log(max(AP, 1e-5))
GEOMETRIC = ("GMAP", "GMBpref")  # geometric means of AP and Bpref (trec_eval's gm_map, gm_bpref)
# interpolated precision is a maximum over ranks: no exact average over tie orders
FIXED_ORDER_ONLY = ("IPrec", "11pt")
_RECALL_LEVEL = re.compile(r"^\s*(?:IPrec|iprec|iprec_at_recall)\s*[@_]\s*(\d*\.?\d+)\s*$")
# graded metrics take every grade > 0; the others count items with grade >= the relevance level
GRADED = ("DCG", "nDCG", "ACG", "WAP", "RBP", "ERR")
# rank-biased precision and its residual take the persistence p (Moffat & Zobel 2008)
PERSISTENT = ("RBP", "RBPResid")
DEFAULT_PERSISTENCE = 0.8  # ir_measures' default; trec_eval's rbp takes 0.9
TREC_EVAL_PERSISTENCE = 0.9

_NAME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_\-]*)\s*(?:\((.*)\))?\s*(?:@\s*(.+?))?\s*$")
_RADIUS = re.compile(r"^\s*([A-Za-z]+)\s*\(\s*radius\s*=\s*(-?\d+)\s*\)\s*$")


@dataclass(frozen=True)
class Metric:
    """One metric: ``base`` name, cutoff ``k`` (None = whole list) or Hamming ``radius``."""

    base: str
    k: int | None = None
    radius: int | None = None
    recall: float | None = None  # IPrec's recall level, one of 0.0, 0.1, ..., 1.0
    p: float | None = None  # RBP's persistence
    rel: float | None = None  # relevance level of this metric (None: the call's relevance_level)
    gain: tuple | None = None  # (parameter, value) as written, e.g. ("dcg", "exp-log2"); None: the call's gain
    judged_only: bool = False  # rank the judged documents only (ir_measures' judged_only, trec_eval -J)
    relative: bool = False  # P over min(k, R) instead of k (trec_eval's relative_P, ir_measures' SetP(relative=True))
    beta: float | None = None  # F's weight of recall (None: 1, F1)

    @property
    def name(self) -> str:
        """Canonical name, the key in Result dictionaries."""
        if self.radius is not None:
            return f"{self.base}(radius={self.radius})"
        if self.recall is not None:
            return f"{self.base}@{self.recall:.1f}"
        params = [f"p={self.p:g}"] if self.p not in (None, DEFAULT_PERSISTENCE) else []
        params += [f"beta={self.beta:g}"] if self.beta not in (None, 1.0) else []
        params += [f"rel={self.rel:g}"] if self.rel is not None else []
        if self.gain is not None:
            key, value = self.gain
            params.append(f"{key}={dict(value)!r}" if key == "gains" else f"{key}={value!r}")
        params += ["relative=True"] if self.relative else []
        params += ["judged_only=True"] if self.judged_only else []
        base = f"{self.base}({', '.join(params)})" if params else self.base
        return base if self.k is None else f"{base}@{self.k}"

    def gain_table(self):
        """The metric's own gain: None (the call's), "linear", "exp2" or {grade: gain}."""
        if self.gain is None:
            return None
        key, value = self.gain
        return dict(value) if key == "gains" else _GAIN_NAMES[value]

    @property
    def family(self) -> str:
        """Base name, or 'P(radius)' / 'R(radius)' for set metrics within a radius."""
        return f"{self.base}(radius)" if self.radius is not None else self.base


KNOWN = (
    "Known: AP, AP@k, nDCG, nDCG@k, DCG@k, P@k, R@k, F1@k, RR, RR@k, Success@k, Rprec, ACG@k, WAP@k, "
    "GMAP, SetAP, Bpref, GMBpref, infAP, IPrec@0.0..1.0, 11pt, Judged@k, RBP(p=0.8)@k, RBPResid(p=0.8)@k, "
    "ERR@k, NumQ, NumRet, NumRel, NumRelRet, NumNonRelJudgedRet, P(radius=r), R(radius=r); "
    "aliases mAP@k, ndcg@k, "
    "precision@k, recall@k, mrr and trec_eval's names; lists P@[1,10]"
)
MAX_CUTOFF = (1 << 63) - 2  # int64, below the whole-list sentinel


def base_of(name: str) -> str:
    """The base of a canonical metric name: ``"GMAP@10"`` -> ``"GMAP"``, ``"P(radius=2)"`` -> ``"P"``."""
    return re.split(r"[@(]", name, maxsplit=1)[0]


def aggregate(name, values) -> float:
    """A metric's value over all queries: the mean of the kept (non-NaN) per-query values; the
    sum for the counts (NumQ, NumRet, NumRel, NumRelRet, NumNonRelJudgedRet); for GMAP and GMBpref the geometric
    mean of max(value, 1e-5), as trec_eval's gm_map and gm_bpref. NaN when no query is kept.

    Parameters
    ----------
    name : str or Metric
        Canonical name (``"GMAP@10"``) or Metric.
    values : array_like of float
        Per-query values, NaN for queries left out.

    Returns
    -------
    float

    Examples
    --------
    >>> aggregate("NumRet@10", [10.0, 7.0]), aggregate("GMAP", [0.1, 0.4]), aggregate("AP", [0.5, float("nan")])
    (17.0, 0.2, 0.5)
    """
    base = name.base if isinstance(name, Metric) else base_of(name)
    values = np.asarray(values, dtype=np.float64)
    kept = values[~np.isnan(values)]
    if not len(kept):
        return float("nan")
    if base in COUNTS:
        return float(np.sum(kept))
    if base in GEOMETRIC:
        return float(np.exp(np.mean(np.log(np.maximum(kept, GEOMETRIC_FLOOR)))))
    return float(np.mean(kept))


def suggest(name):
    """The closest valid metric name to a misspelt one, keeping its cutoff or radius
    (``ndgc@10`` -> ``nDCG@10``), or None."""
    match = re.match(r"^\s*([A-Za-z][A-Za-z0-9_\-]*)\s*(.*?)\s*$", name)
    if not match:
        return None
    base, rest = match.groups()
    if re.match(r"^\(\s*\w*\s*=\s*\d+\s*\)$", rest):  # P(radus=2) -> P(radius=2)
        radius = re.search(r"\d+", rest).group()
        close = difflib.get_close_matches(base.lower(), ["p", "r", "precision", "recall"], n=1, cutoff=0.5)
        return f"{_BASES[close[0]]}(radius={radius})" if close else None
    close = difflib.get_close_matches(base.lower(), list(_BASES), n=1, cutoff=0.5)
    if not close:
        return None
    return _BASES[close[0]] + (rest if rest.startswith("@") else "")


def _unknown(name):
    parts = [p.strip() for p in re.split(r"[,;\s]+", name) if p.strip()] if re.search(r"[,;\s]", name.strip()) else []
    if len(parts) > 1 and not re.search(r"[\[(]", name):
        hint = f"; give one name per entry, e.g. {parts!r}"  # 'AP,P@10' -> ['AP', 'P@10']
    else:
        close = suggest(name)
        hint = f"; did you mean {close!r}?" if close else ""
    return ValueError(f"unknown metric {name!r}{hint} {KNOWN}")


def _cutoff(text, name):
    if text.upper() == "ALL":
        return None
    try:
        k = int(text)
    except ValueError:
        raise InputError(f"metric {name!r}: cutoff {text!r} is not an integer (use @10, @ALL or @[1,10])") from None
    if k <= 0:
        raise InputError(f"metric {name!r}: cutoff must be >= 1, got {k}")
    if k > MAX_CUTOFF:
        raise InputError(f"metric {name!r}: cutoff {k} is too large (at most {MAX_CUTOFF}; @ALL means the whole list)")
    return k


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


_TREC_EVAL_NAME = re.compile(r"^(map_cut|ndcg_cut|P|relative_P|recall|success)[_.]([\d,]+)$")
_TREC_EVAL_BASE = {"map_cut": "AP", "ndcg_cut": "nDCG", "P": "P", "relative_P": "P(relative=True)", "recall": "R",
                   "success": "Success"}
_TREC_EVAL_GAINS = re.compile(r"^ndcg[_.](\d+=\d*\.?\d+(?:,\d+=\d*\.?\d+)*)$")
_TREC_EVAL_RBP = re.compile(r"^(rbp|rbp_resid)(?:\.p=(\d*\.?\d+))?$")


def from_trec_eval(name: str) -> list[str]:
    """trec_eval measure names (``P_10``, ``ndcg_cut.5,10``, ``map_cut_100``, ``recall_5``,
    ``success_10``, ``relative_P_10``, ``set_relative_P``, ``rbp``, ``rbp_resid``, ``rbp.p=0.95``, ``ndcg.1=3,2=9``) as fasttie names; any other name is
    returned as it is (``map``, ``ndcg``, ``recip_rank`` and ``Rprec`` are aliases already).
    trec_eval's RBP persistence is 0.9 unless given."""
    if name.strip() in ("set_relative_P", "SetRelP"):  # relevant retrieved / min(retrieved, R)
        return ["P(relative=True)"]
    match = _TREC_EVAL_NAME.match(name.strip())
    if match:
        base = _TREC_EVAL_BASE[match.group(1)]
        return [f"{base}@{k}" for k in match.group(2).split(",") if k]
    match = _TREC_EVAL_GAINS.match(name.strip())
    if match:  # ndcg.1=3,2=9: nDCG with these gains (trec_eval's measure parameters)
        return [f"nDCG(gains={{{match.group(1).replace('=', ': ')}}})"]
    match = _TREC_EVAL_RBP.match(name.strip())
    if match:
        base = "RBP" if match.group(1) == "rbp" else "RBPResid"
        return [f"{base}(p={match.group(2) or TREC_EVAL_PERSISTENCE})"]
    return [name]


def _parameters(text: str, name: str) -> dict:
    """``p=0.9, rel=2`` -> {"p": 0.9, "rel": 2}: keyword arguments with literal values (ir_measures'
    syntax), read without evaluating any code."""
    try:
        call = ast.parse(f"f({text})", mode="eval").body
        if call.args:
            raise ValueError
        return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    except (SyntaxError, ValueError, TypeError):
        raise InputError(f"metric {name!r}: parameters must be name=value pairs, e.g. RBP(p=0.9)@10") from None


# relevance levels apply to the binary metrics; gains to the graded ones (ir_measures' parameters)
_TAKES_REL = ("AP", "P", "R", "F1", "RR", "Success", "Rprec", "GMAP", "SetAP", "Bpref", "GMBpref", "infAP", "IPrec",
              "11pt", "NumRel", "NumRelRet", "NumNonRelJudgedRet", "NumRet", "RBP")
_TAKES_GAIN = ("DCG", "nDCG", "RBP")
_GAIN_NAMES = {"linear": "linear", "exp2": "exp2", "log2": "linear", "exp-log2": "exp2"}


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


def _parse_one(name: str) -> list[Metric]:
    if name.strip().lower() in ("11pt", "11pt_avg"):
        return [Metric("11pt")]
    recall_match = _RECALL_LEVEL.match(name)
    if recall_match:
        level = float(recall_match.group(1))
        if level not in _LEVELS:
            raise InputError(f"metric {name!r}: IPrec takes the recall levels 0.0, 0.1, ..., 1.0 (trec_eval's), "
                             f"got {level}")
        return [Metric("IPrec", recall=level)]
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
    base = _BASES.get(match.group(1).lower())
    if base is None:
        raise _unknown(name)
    params = _parameters(match.group(2), name) if match.group(2) is not None else {}
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
    suffix = match.group(3)
    if suffix is None:
        return [Metric(base, **options)]
    if base in _NO_CUTOFF:
        raise InputError(f"metric {name!r}: {base} takes no cutoff")
    if suffix.startswith("[") and suffix.endswith("]"):
        parts = [part.strip() for part in suffix[1:-1].split(",") if part.strip()]
        if not parts:
            raise InputError(f"metric {name!r}: empty cutoff list")
        return [Metric(base, _cutoff(part, name), **options) for part in parts]
    return [Metric(base, _cutoff(suffix, name), **options)]


def passes(metrics) -> list:
    """The metrics grouped by the settings their own parameters change (relevance level, gain):
    [((rel, gain), metrics)], None meaning the call's option; each group is one finalizer pass."""
    groups = {}
    for metric in metrics:
        gain = metric.gain_table()
        key = (metric.rel, tuple(sorted(gain.items())) if isinstance(gain, dict) else gain)
        groups.setdefault(key, []).append(metric)
    return list(groups.items())
