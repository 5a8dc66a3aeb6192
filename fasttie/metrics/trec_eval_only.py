"""trec_eval's measures that only :func:`fasttie.trec.evaluate` computes: :class:`TrecOnlyMetric`.

They need what only a joined run has (which documents are judged, the gains of every judged
document for an ideal ranking) and follow trec_eval's definitions to the letter, so they keep
trec_eval's names, with ir_measures' spelling of parameters:

* ``Rprec_mult(x=0.2)``: precision at floor(x R + 0.9) documents (trec_eval's ``Rprec_mult_0.20``);
* ``utility``, ``utility(a=2, b=-1, c=0, d=0)``: a * relevant retrieved + b * non-relevant
  retrieved + c * relevant missed + d * (-relevant - retrieved + relevant retrieved), trec_eval's
  set utility with no collection size (its ``-N`` is 0 unless given, and fasttie has no ``-N``);
* ``binG``, ``G``, ``ndcg_rel``, ``Rndcg``: trec_eval's experimental gain measures, with its
  gains (the grade) unless ``gains={1: 3, 2: 9}`` (trec_eval's ``G.1=3,2=9``);
* ``unj@k``: the fraction of the top k that is unjudged (no qrels line, or a negative grade),
  over k even past the end of the list (trec_eval's ``unj_k``).

trec_eval's spellings are read too: ``Rprec_mult_0.20``, ``Rprec_mult.0.2,0.4``,
``utility.2,-1,0,0``, ``G.1=3,2=9``, ``unj_5``, ``unj.5,10``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..errors import InputError
from .syntax import keyword_parameters, malformed_parameters, parse_cutoffs

__all__ = ["TrecOnlyMetric", "UTILITY_DEFAULT", "is_trec_only_metric", "parse_trec_only_metric"]

UTILITY_DEFAULT = (1.0, -1.0, 0.0, 0.0)  # trec_eval's utility coefficients
_GAINED = ("binG", "G", "ndcg_rel", "Rndcg")  # binG takes no gains: it is G with gains 0 / 1
_NAME = re.compile(r"^\s*(Rprec_mult|utility|binG|G|ndcg_rel|Rndcg|unj)\s*(?:\((.*)\))?\s*(?:@\s*(.+?))?\s*$")
_TREC_SPELLING = re.compile(r"^\s*(Rprec_mult|utility|G|ndcg_rel|Rndcg|unj)[._](.+?)\s*$")
_PAIR = re.compile(r"^-?\d+=-?\d*\.?\d+$")
_NUMBER = re.compile(r"^-?\d*\.?\d+$")


@dataclass(frozen=True)
class TrecOnlyMetric:
    """One of trec_eval's measures computed by :func:`fasttie.trec.evaluate` alone."""

    base: str
    k: int | None = None  # unj's cutoff
    x: float | None = None  # Rprec_mult's multiple of R
    coefficients: tuple = UTILITY_DEFAULT  # utility's a, b, c, d
    gains: tuple | None = None  # ((grade, gain), ...) sorted; None: each grade its own gain

    @property
    def name(self) -> str:
        """Canonical name, the key in Result dictionaries."""
        if self.base == "Rprec_mult":
            return f"Rprec_mult(x={self.x:g})"
        if self.base == "unj":
            return f"unj@{self.k}"
        if self.base == "utility" and self.coefficients != UTILITY_DEFAULT:
            return "utility(" + ", ".join(f"{key}={value:g}" for key, value in zip("abcd", self.coefficients)) + ")"
        if self.gains is not None:
            return f"{self.base}(gains={dict(self.gains)!r})"
        return self.base

    def gain_table(self):
        """{grade: gain} of the grades whose gain is not the grade itself, or None."""
        return None if self.gains is None else dict(self.gains)


def is_trec_only_metric(name) -> bool:
    """Whether ``name`` names one of these measures (in fasttie's or trec_eval's spelling)."""
    return isinstance(name, str) and bool(_NAME.match(name) or _TREC_SPELLING.match(name))


def parse_trec_only_metric(name: str) -> list[TrecOnlyMetric]:
    """The measures a name stands for (one per listed cutoff or multiple).

    Parameters
    ----------
    name : str
        ``Rprec_mult(x=0.2)``, ``utility``, ``utility(a=2, b=-1, c=0, d=0)``, ``binG``, ``G``,
        ``G(gains={1: 3, 2: 9})``, ``ndcg_rel``, ``Rndcg``, ``unj@5``, ``unj@[5,10]``, or
        trec_eval's spelling (module docstring).

    Returns
    -------
    list of TrecOnlyMetric

    Raises
    ------
    ValueError
        A parameter the measure does not take or a malformed value.

    Examples
    --------
    >>> [m.name for m in parse_trec_only_metric("Rprec_mult.0.2,0.4")]
    ['Rprec_mult(x=0.2)', 'Rprec_mult(x=0.4)']
    >>> [m.name for m in parse_trec_only_metric("G.1=3,2=9") + parse_trec_only_metric("unj_10")]
    ['G(gains={1.0: 3.0, 2.0: 9.0})', 'unj@10']
    """
    spelt = _TREC_SPELLING.match(name)
    if spelt and not _NAME.match(name):
        return _from_trec_eval(name, spelt.group(1), spelt.group(2))
    base, inside, cutoff = _NAME.match(name).groups()
    params = dict(keyword_parameters(inside, name, "G(gains={1: 3, 2: 9})")) if inside else {}
    values = {key: _literal(text, name) for key, text in params.items()}
    if base == "unj":
        if values or cutoff is None:
            raise InputError(f"metric {name!r}: unj takes a cutoff and no parameters, e.g. unj@10")
        return [TrecOnlyMetric("unj", k=k) for k in parse_cutoffs(cutoff, name, whole_list=False)]
    if cutoff is not None:
        raise InputError(f"metric {name!r}: {base} takes no cutoff")
    if base == "Rprec_mult":
        if set(values) != {"x"}:
            raise InputError(f"metric {name!r}: give the multiple of R, e.g. Rprec_mult(x=0.2)")
        return [TrecOnlyMetric("Rprec_mult", x=_multiple(values["x"], name))]
    if base == "utility":
        if set(values) - set("abcd"):
            raise InputError(f"metric {name!r}: utility takes the coefficients a, b, c, d, e.g. "
                             "utility(a=2, b=-1, c=0, d=0)")
        coefficients = tuple(_number(values.get(key, default), name)
                             for key, default in zip("abcd", UTILITY_DEFAULT))
        return [TrecOnlyMetric("utility", coefficients=coefficients)]
    if set(values) - ({"gains"} if base != "binG" else set()):
        raise InputError(f"metric {name!r}: {base} takes " + ("no parameters" if base == "binG" else
                                                              "gains only, e.g. G(gains={1: 3, 2: 9})"))
    gains = values.get("gains")
    if gains is not None and (not isinstance(gains, dict) or not gains or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for item in gains.items() for v in item)):
        raise InputError(f"metric {name!r}: gains must map grades to gains, e.g. gains={{1: 3, 2: 9}}")
    table = None if gains is None else tuple(sorted((float(g), float(v)) for g, v in gains.items()))
    return [TrecOnlyMetric(base, gains=table)]


def _from_trec_eval(name, base, text):
    """trec_eval's ``measure.params`` or printed ``measure_params``."""
    items = [item for item in text.split(",") if item]
    if base == "unj":
        if not items or not all(item.isdigit() and int(item) > 0 for item in items):
            raise InputError(f"metric {name!r}: unj's cutoffs are positive integers, as in unj.5,10")
        return [TrecOnlyMetric("unj", k=k) for k in sorted({int(item) for item in items})]
    if not items or not all(_PAIR.match(item) if base in _GAINED else _NUMBER.match(item) for item in items):
        raise InputError(f"metric {name!r}: malformed trec_eval parameters")
    if base == "Rprec_mult":
        return [TrecOnlyMetric("Rprec_mult", x=_multiple(float(item), name)) for item in sorted(set(items), key=float)]
    if base == "utility":
        if len(items) != 4:
            raise InputError(f"metric {name!r}: utility takes four coefficients, as in utility.1,-1,0,0")
        return [TrecOnlyMetric("utility", coefficients=tuple(float(item) for item in items))]
    pairs = dict(item.split("=") for item in items)
    return [TrecOnlyMetric(base, gains=tuple(sorted((float(g), float(v)) for g, v in pairs.items())))]


def _literal(text, name):
    try:  # literals only: nothing runs
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise malformed_parameters(name, "G(gains={1: 3, 2: 9})") from None


def _number(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"metric {name!r}: utility's coefficients are numbers, got {value!r}")
    return float(value)


def _multiple(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InputError(f"metric {name!r}: the multiple of R is a number >= 0, got {value!r}")
    return float(value)
