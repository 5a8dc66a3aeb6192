"""trec_eval 10.0's measure table: what ``-m`` selects, what each measure is in fasttie, and
the names and order trec_eval prints them in.

``-m`` takes a measure (``map``), a measure with parameters (``P.5,10``, ``ndcg_cut.10``,
``iprec_at_recall..10,.50``, ``ndcg.1=3,2=9``), or a nickname (``official``, trec_eval's default;
``set``; ``all_trec``). trec_eval prints the measures in the order of its table, whatever the
order asked, each cutoff as ``P_5`` (cutoffs sorted, repeats once, ``23.4`` read as 23), each
other parameter list verbatim after a ``_`` (``ndcg_1=3,2=9``); a measure named twice prints
once, with the first parameters given for it. ``runid``, ``num_q``,
``gm_map`` and ``gm_bpref`` have an ``all`` line only.

``Rprec_mult``, ``utility``, ``binG``, ``G``, ``ndcg_rel``, ``Rndcg`` and ``unj`` are trec_eval's own
measures (:mod:`fasttie.metrics.trec_eval_only`), which only :func:`fasttie.trec.evaluate`
computes; ``Rprec_mult``'s multiples print with two decimals (``Rprec_mult_0.20``), sorted.
``relstring`` (text) maps to ``relstring@length``, which ``fasttie trec`` prints through
:func:`fasttie.trec.relstring`. Interpolated precision takes any levels in [0, 1]
(``iprec_at_recall.0.25``, printed ``iprec_at_recall_0.25``); two levels printed alike (0.331 and
0.334: ``iprec_at_recall_0.33``) print once, with the higher level's value, where trec_eval prints
a line for each. trec_eval's measures that fasttie does not compute (interpolated precision at
levels outside [0, 1] and ``11pt_avg`` with levels) are reported as left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .conventions import STANDARD_RECALL_LEVELS
from .trec_eval_names import TREC_EVAL_PERSISTENCE, from_trec_eval
from .trec_eval_only import parse_trec_only_metric

__all__ = ["TREC_EVAL_MEASURES", "TREC_EVAL_NICKNAMES", "TrecEvalSelection", "is_trec_eval_measure", "measure_named",
           "select_trec_eval"]

_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_MULTIPLES = tuple(i / 5 for i in range(1, 11))  # Rprec_mult's: 0.2, 0.4, ..., 2.0

# trec_eval 10.0's table in its print order: name -> (fasttie metric, or a template with {} for
# a cutoff / level, or None where fasttie has no such measure; default parameters)
_TABLE = {
    "runid": (None, None), "num_q": ("NumQ", None), "num_ret": ("NumRet", None), "num_rel": ("NumRel", None),
    "num_rel_ret": ("NumRelRet", None), "map": ("AP", None), "gm_map": ("GMAP", None), "Rprec": ("Rprec", None),
    "bpref": ("Bpref", None), "recip_rank": ("RR", None), "iprec_at_recall": ("IPrec@{!r}", STANDARD_RECALL_LEVELS),
    "P": ("P@{}", _CUTOFFS), "relstring": ("relstring@{}", None), "recall": ("R@{}", _CUTOFFS), "infAP": ("infAP", None),
    "gm_bpref": ("GMBpref", None), "Rprec_mult": ("Rprec_mult(x={:g})", _MULTIPLES), "utility": ("utility", None),
    "11pt_avg": ("11pt", None), "binG": ("binG", None), "G": ("G", None), "ndcg": ("nDCG", None),
    "ndcg_rel": ("ndcg_rel", None), "Rndcg": ("Rndcg", None),
    "ndcg_cut": ("nDCG@{}", _CUTOFFS), "map_cut": ("AP@{}", _CUTOFFS),
    "relative_P": ("P(relative=True)@{}", _CUTOFFS), "success": ("Success@{}", (1, 5, 10)), "set_P": ("P", None),
    "set_relative_P": ("P(relative=True)", None), "set_recall": ("R", None), "set_map": ("SetAP", None),
    "set_F": ("F1", None), "num_nonrel_judged_ret": ("NumNonRelJudgedRet", None),
    "rbp": (f"RBP(p={TREC_EVAL_PERSISTENCE})", None), "rbp_resid": (f"RBPResid(p={TREC_EVAL_PERSISTENCE})", None),
    "unj": ("unj@{}", (5, 10, 20)),
}
_ORDER = {name: i for i, name in enumerate(_TABLE)}
# measures whose trec_eval init reads no parameters (te_init_meas_s_double, _s_long, _empty):
# trec_eval ignores any given (`-m map.5` prints map), and so does the selection
_NO_PARAMETERS = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                  "recip_rank", "infAP", "gm_bpref", "set_P", "set_relative_P", "set_recall", "set_map",
                  "num_nonrel_judged_ret")
#: trec_eval's measures in its print order: name -> (fasttie metric, a template with ``{}`` for
#: the cutoff or level, or None where fasttie has none; the default cutoffs or levels, or None).
TREC_EVAL_MEASURES = _TABLE
#: trec_eval's nicknames (``-m official`` is its default).
TREC_EVAL_NICKNAMES = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
    "all_trec": tuple(_TABLE),
}
_PRINTED = re.compile(r"^(P|recall|ndcg_cut|map_cut|relative_P|success|unj)_(\d+)$"
                      r"|^(iprec_at_recall|Rprec_mult)_(\d+\.\d+)$")


@dataclass
class TrecEvalSelection:
    """The measures one set of ``-m`` arguments selects, as trec_eval would print them.

    Attributes
    ----------
    keys : dict of str to str
        Printed name (``map``, ``P_10``, ``iprec_at_recall_0.10``) -> fasttie metric, in
        trec_eval's print order.
    runid : bool
        Whether trec_eval would print its ``runid`` line.
    left_out : list of str
        Printed names of selected measures fasttie does not compute.
    """

    keys: dict = field(default_factory=dict)
    runid: bool = False
    left_out: list = field(default_factory=list)


def is_trec_eval_measure(spec: str) -> bool:
    """Whether ``spec`` is a trec_eval measure, nickname, or printed name (``P_10``), as
    ``-m`` of trec_eval takes it, rather than a fasttie metric name."""
    name = spec.strip().split(".", 1)[0]
    return name in _TABLE or name in TREC_EVAL_NICKNAMES or bool(_PRINTED.match(spec.strip()))


def measure_named(spec: str) -> str:
    """The trec_eval measure or nickname a ``-m`` argument names.

    Parameters
    ----------
    spec : str
        A trec_eval ``-m`` argument (see :func:`is_trec_eval_measure`).

    Returns
    -------
    str

    Examples
    --------
    >>> measure_named("P.5,10"), measure_named("P_10"), measure_named("iprec_at_recall_0.10"), measure_named("all_trec")
    ('P', 'P', 'iprec_at_recall', 'all_trec')
    """
    printed = _PRINTED.match(spec.strip())
    if printed:
        return printed.group(1) or printed.group(3)
    return spec.strip().partition(".")[0]


def select_trec_eval(specs) -> TrecEvalSelection:
    """The measures trec_eval prints for these ``-m`` arguments, mapped to fasttie's metrics.

    Parameters
    ----------
    specs : iterable of str
        trec_eval ``-m`` arguments (see :func:`is_trec_eval_measure`), one measure or nickname
        each. As in trec_eval, a measure given twice is printed once, with the parameters of
        its first ``-m`` that has any (``-m P.5 -m P.10`` prints ``P_5``; ``-m ndcg.1=3,2=9
        -m ndcg`` prints ``ndcg_1=3,2=9``: trec_eval's measure takes the first command-line
        parameters under its name, meas_init.c, and a plain ``-m`` only marks it). Printed
        names (``P_5``, ``P_10``: fasttie's, trec_eval refuses them) add their cutoffs.

    Returns
    -------
    TrecEvalSelection

    Raises
    ------
    ValueError
        Parameters a measure cannot take (``P.x``, ``P.0``, ``P.``).

    Examples
    --------
    >>> sel = select_trec_eval(["P.10,5", "map", "relstring", "unj.5", "iprec_at_recall..25", "11pt_avg..5"])
    >>> sel.keys, sel.left_out
    ({'map': 'AP', 'iprec_at_recall_0.25': 'IPrec@0.25', 'P_5': 'P@5', 'P_10': 'P@10', 'relstring': \
'relstring@10', 'unj_5': 'unj@5'}, ['11pt_avg_.5'])
    >>> select_trec_eval(["P.5", "P.10"]).keys
    {'P_5': 'P@5'}
    """
    marked, given = {}, {}  # measure -> cutoffs named by printed names; measure -> its first parameters
    for spec in specs:
        spec = spec.strip()
        printed = _PRINTED.match(spec)
        if printed:  # a printed name such as P_10: that one cutoff
            name, value = (printed.group(1), printed.group(2)) if printed.group(1) else printed.group(3, 4)
            marked.setdefault(name, []).append(value)
            continue
        name, dot, text = spec.partition(".")
        if dot and not text:  # trec_eval: "improper measure in parameter"
            raise ValueError(f"-m {spec}: no parameters after the '.'; give them ('{name}.5,10') or drop the '.'")
        if dot:
            given.setdefault(name, text)  # the first parameters count (nickname parameters: ignored, as trec_eval)
        for member in TREC_EVAL_NICKNAMES.get(name, (name,)):
            marked.setdefault(member, [])
    selection = TrecEvalSelection()
    for name in sorted(marked, key=_ORDER.__getitem__):
        text = ",".join(filter(None, [given.get(name), *marked[name]])) or None
        _add(selection, name, text)
    return selection


def _add(selection, name, text):
    metric, defaults = _TABLE[name]
    if name == "runid":
        selection.runid = True
        return
    if name == "relstring":  # text, not a value: fasttie trec prints it (fasttie.trec.relstring)
        length = _numbers(name, text, int)[-1:] if text is not None else [10]
        if not length:
            raise ValueError(f"-m relstring.{text}: the length is an integer, as in 'relstring.20'")
        selection.keys[name if text is None else f"{name}_{text}"] = metric.format(length[0])
        return
    if defaults is None:  # a plain measure: parameters only where trec_eval's measure takes them
        key = name
        if text is not None and name not in _NO_PARAMETERS:
            key, metric = f"{name}_{text}", _with_parameters(name, text)
        if metric is None:
            selection.left_out.append(key)
            return
        selection.keys[key] = metric
        return
    if name == "Rprec_mult":
        for multiple in (_numbers(name, text, float) if text is not None else defaults):
            selection.keys[f"{name}_{multiple:.2f}"] = metric.format(multiple)
        return
    if name == "iprec_at_recall":
        levels = _numbers(name, text, float) if text is not None else defaults
        for level in levels:
            key = f"{name}_{level:.2f}"
            if 0.0 <= level <= 1.0:
                selection.keys[key] = metric.format(level)
            else:
                selection.left_out.append(key)
        return
    for k in (_numbers(name, text, lambda x: int(float(x))) if text is not None else defaults):
        if k <= 0:
            raise ValueError(f"-m {name}.{text}: cutoffs are positive integers, as in '{name}.5,10'")
        selection.keys[f"{name}_{k}"] = metric.format(k)


def _numbers(name, text, convert):
    try:
        return sorted({convert(x) for x in text.split(",") if x})
    except ValueError:
        raise ValueError(f"-m {name}.{text}: parameters are numbers separated by commas, as in '{name}.5,10'") from None


def _with_parameters(name, text):
    """The fasttie metric of a plain measure given parameters, or None where fasttie has none."""
    spelt = f"{name}.{text}"
    translated = from_trec_eval(spelt)  # ndcg.1=3,2=9, set_F.0.5, rbp.p=0.95, rbp_resid.p=0.95
    if translated != [spelt]:
        return translated[0]
    if name in ("utility", "G", "ndcg_rel", "Rndcg"):  # utility.2,-1,0,0, G.1=3,2=9
        return parse_trec_only_metric(spelt)[0].name
    if name == "11pt_avg":
        return None  # fasttie lacks its custom levels
    raise ValueError(f"-m {spelt}: parameters trec_eval's {name} does not take")
