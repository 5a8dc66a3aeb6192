"""Names of every family in one list: which grammar reads each name.

:func:`fasttie.trec.evaluate` and ``fasttie trec`` take ranking metrics, ndeval's diversity
measures and trec_eval's own measures (:mod:`fasttie.metrics.trec_eval_only`) side by side; a
name belongs to the diversity family when
:func:`~fasttie.metrics.diversity_names.is_diversity_metric` says so (an ndeval measure, or any
name starting with ``alpha``: a misspelt alpha-nDCG then gets a diversity suggestion), to
trec_eval's when :func:`~fasttie.metrics.trec_eval_only.is_trec_only_metric` does, else to the
ranking family.
"""

from __future__ import annotations

import re

from ..errors import InputError, InputTypeError
from .diversity_names import DiversityMetric, is_diversity_metric, parse_diversity_metric
from .ranking_names import Metric, metric_names, parse_metrics
from .trec_eval_only import TrecOnlyMetric, is_trec_only_metric, parse_trec_only_metric


def parse_metric(name: str, *, diversity: bool = True) -> list[Metric | DiversityMetric | TrecOnlyMetric]:
    """One metric name of any family, parsed by its own grammar.

    Parameters
    ----------
    name : str
    diversity : bool, default True
        Whether diversity names and trec_eval's own measures are accepted (those of
        :func:`fasttie.trec.evaluate`); False reads every name as a ranking metric.

    Returns
    -------
    list of Metric, list of DiversityMetric or list of TrecOnlyMetric
        One per listed cutoff (a ranking name's repeats dropped).

    Raises
    ------
    ValueError
        An unknown or malformed name, with the closest valid one of its family.

    Examples
    --------
    >>> [m.name for m in parse_metric("map_cut.5,10")], [m.name for m in parse_metric("alpha-nDCG@20")]
    (['AP@5', 'AP@10'], ['alpha_nDCG@20'])
    """
    if diversity and is_diversity_metric(name):
        return parse_diversity_metric(name)
    if diversity and is_trec_only_metric(name):
        return parse_trec_only_metric(name)
    return parse_metrics([name])


def split_metric_names(metrics):
    """Ranking metric names, parsed diversity metrics and trec_eval's own measures, plus the
    output order.

    Parameters
    ----------
    metrics : str or iterable of str

    Returns
    -------
    ranking : list of str
        The ranking names as given (each checked), for :func:`fasttie.rank_evaluate`.
    diversity : dict of str to DiversityMetric
        Keyed by canonical name.
    trec_only : dict of str to TrecOnlyMetric
        Keyed by canonical name.
    order : list of str
        Canonical names of every family in the order asked, each once.

    Raises
    ------
    TypeError
        A name that is not a string.
    ValueError
        A name its grammar rejects, or no name at all.
    """
    ranking, diversity, trec_only, order = [], {}, {}, []
    for name in metric_names(metrics):
        if not isinstance(name, str):
            raise InputTypeError(f"metric names must be strings, got {name!r}")
        parsed = parse_metric(name)  # never empty
        if isinstance(parsed[0], DiversityMetric):
            diversity.update((metric.name, metric) for metric in parsed)
        elif isinstance(parsed[0], TrecOnlyMetric):
            trec_only.update((metric.name, metric) for metric in parsed)
        else:
            ranking.append(name)
        order.extend(metric.name for metric in parsed if metric.name not in order)
    if not order:
        raise InputError("metrics is empty; ask for at least one metric, e.g. metrics=('AP',)")
    return ranking, diversity, trec_only, order


_LIST = re.compile(r"^(.*@\s*)\[(.*)\](.*)$")  # P@[5,10], alpha_nDCG@[5,10]
_TREC_EVAL_LIST = re.compile(r"^([A-Za-z_]+)[._]((?:\d+,)*\d+,?)$")  # P.5,10 / ndcg_cut.5,10 / P.5


def asked_names(metrics, *, diversity: bool = True) -> dict:
    """The keys a result takes: each name as the caller spelt it, with its canonical name.

    A list is spelt item by item in the caller's words (``P@[5,10]`` -> ``P@5``, ``P@10``;
    trec_eval's ``P.5,10`` -> ``P_5``, ``P_10``, as trec_eval prints them); a name asked twice,
    or two spellings of one metric, are kept once each, in the order asked.

    Parameters
    ----------
    metrics : str or iterable of str
    diversity : bool, default True
        Whether diversity names are read by their own grammar (see :func:`parse_metric`).

    Returns
    -------
    dict of str to str
        Asked spelling -> canonical name, in the order asked.

    Examples
    --------
    >>> asked_names(["mAP@1000", "P@[5,10]", "ndcg_cut.5,10", "AP@1000"])
    {'mAP@1000': 'AP@1000', 'P@5': 'P@5', 'P@10': 'P@10', 'ndcg_cut_5': 'nDCG@5', 'ndcg_cut_10': 'nDCG@10', \
'AP@1000': 'AP@1000'}
    """
    out = {}
    for name in metric_names(metrics):
        if not isinstance(name, str):
            raise InputTypeError(f"metric names must be strings, got {name!r}")
        canonical = [metric.name for metric in parse_metric(name, diversity=diversity)]
        for spelt, metric in zip(_spelt(name.strip(), len(canonical)) or canonical, canonical):
            out.setdefault(spelt, metric)
    return out


def _spelt(name, n):
    """The caller's spelling of each of the n metrics a name stands for; None when it has none."""
    match = _LIST.match(name)
    if match:
        items = [item.strip() for item in match.group(2).split(",") if item.strip()]
        if len(items) == n:
            return [f"{match.group(1).rstrip()}{item}{match.group(3)}" for item in items]
    match = _TREC_EVAL_LIST.match(name)
    if match:
        items = [item for item in match.group(2).split(",") if item]
        if len(items) == n:
            return [f"{match.group(1)}_{item}" for item in items]
    return [name] if n == 1 else None
