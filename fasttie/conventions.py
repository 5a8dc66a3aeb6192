"""Named conventions: one word for the options that make a metric name mean what another library
means by it.

One metric name is several formulas: LightGBM's ``ndcg@10`` takes gains 2**g - 1, keeps tied
documents in input order and gives 1 to a query without relevant documents; scikit-learn's
``ndcg_score`` takes the grade as gain and averages over ties. ``convention="lightgbm"`` on
:func:`fasttie.rank_evaluate` sets ``gain``, ``ties``, ``ap_denominator``, ``empty``,
``relevance_level`` and ``log_base`` as LightGBM computes them; an option passed explicitly
wins over the preset. :data:`CONVENTIONS` is the table (data, as ir_measures declares its
providers); :func:`takes_convention` gives a front door the ``convention`` keyword.

Where a library orders tied items with an unstable sort (``torch.topk``, numpy's default
``argsort``, a heap), its order is neither reproducible from the input nor expressible: the
preset takes ``ties="average"``, the exact expectation over the orders inside ties, and agrees
with the library on tie-free scores. What a preset cannot express is listed in its
``not_expressible`` entry, and in docs/metrics.md ("Conventions").
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import InputError, InputTypeError
from .lists.score_floor import ScoreFloor

__all__ = ["CONVENTIONS", "Convention", "convention_options", "takes_convention"]

LISTS, HAMMING = "lists", "hamming"  # the doors: fasttie.rank_evaluate, fasttie.evaluate
_DOOR_FUNCTION = {LISTS: "fasttie.rank_evaluate", HAMMING: "fasttie.evaluate"}


@dataclass(frozen=True)
class Convention:
    """What one library means by its metric names, as fasttie options per door.

    Attributes
    ----------
    lists, hamming : dict or None
        The options the preset sets at :func:`fasttie.rank_evaluate` / :func:`fasttie.evaluate`;
        None where the library ranks no such input.
    cutoffs : str
        What the library's ``@k`` does past the end of a list and which fasttie names match.
    not_expressible : str
        What the library does that no fasttie option reproduces ("" when nothing).
    source : str
        Where the convention was read (library version, file), for the docs table.
    names : dict
        The library's metric names -> fasttie's (for the docs table).
    """

    lists: dict | None
    hamming: dict | None
    cutoffs: str
    not_expressible: str = ""
    source: str = ""
    names: dict = field(default_factory=dict)


_TREC = {"ties": "trec", "gain": "linear", "log_base": 2, "ap_denominator": "total", "empty": "zero",
         "relevance_level": 1}
_BOOSTING = {"ties": "stable", "gain": "exp2", "log_base": 2, "ap_denominator": "min", "empty": "one",
             "relevance_level": 1}
_ARBITRARY_ORDER = ("ties in the order of an unstable sort, not reproducible from the input (the preset "
                    "averages over tie orders; equal on tie-free scores)")

CONVENTIONS = {
    "trec_eval": Convention(
        lists=_TREC, hamming=None,
        cutoffs="P@k divides by k past the end of the list; AP@k, nDCG@k cut the ranking at k",
        not_expressible="the query set (the run's judged queries) is the caller's, as fasttie.trec chooses it",
        source="trec_eval 10.0 (m_map.c, m_ndcg_cut.c); needs doc_ids= for ties='trec'",
        names={"map": "AP", "map_cut_k": "AP@k", "ndcg_cut_k": "nDCG@k", "P_k": "P@k", "recip_rank": "RR"}),
    "ir_measures": Convention(
        lists=_TREC, hamming=None,
        cutoffs="as trec_eval (its default provider is pytrec_eval)",
        not_expressible="measures served by providers other than pytrec_eval follow theirs",
        source="ir_measures 0.4.3 with the pytrec_eval provider; needs doc_ids= for ties='trec'",
        names={"AP": "AP", "AP@k": "AP@k", "nDCG@k": "nDCG@k", "P@k": "P@k", "RR": "RR"}),
    "ranx": Convention(
        lists={**_TREC, "ties": "average"}, hamming=None,
        cutoffs="as trec_eval",
        not_expressible=_ARBITRARY_ORDER + " (numba's argsort; on short lists the run's order)",
        source="ranx 0.3.21 (ranx/metrics/*.py)",
        names={"map@k": "AP@k", "ndcg@k": "nDCG@k", "ndcg_burges@k": "nDCG@k with gain 2**g - 1",
               "precision@k": "P@k", "mrr": "RR"}),
    "lightgbm": Convention(
        lists=_BOOSTING, hamming=None,
        cutoffs="ndcg@k, map@k past the end of a list: the whole list (k = n)",
        not_expressible="relevance for map@k is label > 0.5 (fasttie: >= relevance_level; equal for the "
                        "integer labels LightGBM's ranking requires); label_gain= other than 2**g - 1",
        source="LightGBM 4.7 (src/metric/rank_metric.hpp, map_metric.hpp; measured: stable order, NDCG and "
               "MAP 1 for a query without relevant documents, MAP over min(k, R))",
        names={"ndcg@k": "nDCG@k", "map@k": "AP@k"}),
    "xgboost": Convention(
        lists=_BOOSTING, hamming=None,
        cutoffs="ndcg@k, map@k past the end of a list: the whole list",
        not_expressible="the '-' suffix (ndcg@k-, map@k-: 0 for a query without relevant documents) is "
                        "empty='zero'; ndcg_exp_gain=false is gain='linear'",
        source="XGBoost 3.2 (measured: stable order, 2**g - 1, 1 for an empty query, MAP over min(k, R))",
        names={"ndcg@k": "nDCG@k", "map@k": "AP@k"}),
    "sklearn": Convention(
        lists={"ties": "average", "gain": "linear", "log_base": 2, "ap_denominator": "total", "empty": "zero",
               "relevance_level": 1}, hamming=None,
        cutoffs="ndcg_score(k=) cuts the ranking and the ideal at k",
        not_expressible="average_precision_score ranks tied scores as one threshold (neither an order nor "
                        "their average): equal to AP on tie-free scores only",
        source="scikit-learn 1.9 (metrics/_ranking.py: _tie_averaged_dcg; ndcg_score gives 0 to a query "
               "whose ideal DCG is 0)",
        names={"ndcg_score": "nDCG / nDCG@k", "dcg_score": "DCG", "average_precision_score": "AP"}),
    "torchmetrics": Convention(
        lists={"ties": "average", "gain": "linear", "log_base": 2, "ap_denominator": "retrieved",
               "empty": "zero", "relevance_level": 1,
               # AP, P, R and RR never find an item scored <= 0 (its grade still counts in R)
               "score_floor": ScoreFloor(bases=frozenset({"AP", "P", "R", "RR"}), at_most=0.0)}, hamming=None,
        cutoffs="retrieval_precision divides by top_k (adaptive_k=False); AP@k over the hits in the top k",
        not_expressible=_ARBITRARY_ORDER + " (torch.topk, torch.argsort) in AP, P, R, RR; adaptive_k=True; "
                        "scores cast to float32 (distinct float64 scores may tie or reach 0 there)",
        source="torchmetrics 1.9 (functional/retrieval/*.py; nDCG averages over ties as scikit-learn; AP, P, R "
               "and RR zero the target of an item scored <= 0, R keeping the full R)",
        names={"retrieval_normalized_dcg": "nDCG@k", "retrieval_average_precision": "AP@k",
               "retrieval_precision": "P@k", "retrieval_recall": "R@k", "retrieval_reciprocal_rank": "RR@k",
               "retrieval_r_precision": "Rprec", "retrieval_hit_rate": "Success@k"}),
    "pytorch_metric_learning": Convention(
        lists={"ties": "average", "gain": "linear", "log_base": 2, "ap_denominator": "total", "empty": "skip",
               "relevance_level": 1},
        hamming=None,
        cutoffs="AccuracyCalculator's k (default: every reference item) is the AP cutoff: "
                "mean_average_precision = AP@k over R",
        not_expressible="leaving the query out of the reference (ref_includes_query) is the caller's; "
                        + _ARBITRARY_ORDER + " (faiss / torch.topk k-NN)",
        source="pytorch-metric-learning 2.9 (utils/accuracy_calculator.py: lone queries left out)",
        names={"mean_average_precision": "AP@k (k = AccuracyCalculator's k)",
               "mean_average_precision_at_r": "MAP@R", "r_precision": "Rprec",
               "precision_at_1": "P@1", "mean_reciprocal_rank": "RR"}),
    "sentence_transformers": Convention(
        lists={"ties": "pyndeval", "gain": "linear", "log_base": 2, "ap_denominator": "min", "empty": "skip",
               "relevance_level": 1}, hamming=None,
        cutoffs="precision@k divides by k; map@k over min(k, R); accuracy@k is Success@k",
        not_expressible="graded relevance (its judgments are sets)",
        source="sentence-transformers 6.2 (sentence_transformer/evaluation/information_retrieval.py, "
               "compute_all_metrics and compute_metrics: hits sorted by (-score, corpus_id), so ties by corpus "
               "id ascending; needs doc_ids= for ties='pyndeval'; queries without relevant documents are "
               "dropped at construction; 5.2.0.dev0, commit 85ec6455, still kept its top hits in a heap, whose "
               "tie order is not reproducible)",
        names={"map@k": "AP@k", "mrr@k": "RR@k", "ndcg@k": "nDCG@k", "recall@k": "R@k", "precision@k": "P@k",
               "accuracy@k": "Success@k"}),
    "deephash": Convention(
        lists=None, hamming={"ties": "average", "gain": "exp2", "ap_denominator": "retrieved", "empty": "zero"},
        cutoffs="CalcTopMap(topk): AP@k over the hits in the top k; a query without a hit counts 0",
        not_expressible=_ARBITRARY_ORDER + " (np.argsort's default quicksort of the Hamming distances)",
        source="DeepHash-pytorch (utils/tools.py, CalcTopMap)",
        names={"CalcTopMap": "AP@k"}),
    "hashnet": Convention(
        lists=None,
        hamming={"ties": "average", "gain": "exp2", "ap_denominator": "retrieved", "empty": "skip_missed"},
        cutoffs="mean_average_precision(R): AP@k, k its fixed R (not MAP@R), over the hits in the top R; queries "
                "without a hit left out",
        not_expressible=_ARBITRARY_ORDER + " (np.argsort's default quicksort of -inner products)",
        source="HashNet (pytorch/src/test.py, mean_average_precision)",
        names={"mean_average_precision": "AP@k"}),
}


def convention_options(convention: str, door: str) -> dict[str, Any]:
    """The options ``convention`` sets at ``door``.

    Parameters
    ----------
    convention : str
        A key of :data:`CONVENTIONS`.
    door : {"lists", "hamming"}
        :func:`fasttie.rank_evaluate` or :func:`fasttie.evaluate`.

    Returns
    -------
    dict
        Option name -> value (a copy).

    Raises
    ------
    TypeError
        ``convention`` is not a string.
    ValueError
        An unknown name (with the closest known one), or a library that ranks nothing this door
        takes (naming the door that does).

    Examples
    --------
    >>> convention_options("lightgbm", "lists")["gain"]
    'exp2'
    """
    if not isinstance(convention, str):
        raise InputTypeError(f"{{convention}} must be a string, one of {tuple(CONVENTIONS)}; got {convention!r}",
                             argument="convention")
    if convention not in CONVENTIONS:
        close = difflib.get_close_matches(convention.lower().replace("-", "_"), CONVENTIONS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(f"unknown {{convention}} {convention!r}{hint}; known: {', '.join(CONVENTIONS)}",
                         argument="convention")
    options = getattr(CONVENTIONS[convention], door)
    if options is None:
        other = HAMMING if door == LISTS else LISTS
        raise InputError(f"{{convention}} {convention!r} has no meaning for {_DOOR_FUNCTION[door]}: the library "
                         f"ranks what {_DOOR_FUNCTION[other]} takes; use it there", argument="convention")
    return dict(options)


_R = TypeVar("_R")  # what the door returns: the decorated door returns it too (its parameters gain convention=)


def takes_convention(door: str) -> Callable[[Callable[..., _R]], Callable[..., _R]]:
    """Give a front door the keyword ``convention``: the preset's options fill those the call does
    not pass (an explicit keyword wins), and the door's signature lists ``convention=None``. An
    :class:`~fasttie.errors.InputError` about an option the preset filled names the convention.

    Parameters
    ----------
    door : {"lists", "hamming"}

    Returns
    -------
    callable
        A decorator.
    """
    def decorate(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def door_call(*args, convention=None, **kwargs):
            if convention is None:
                return function(*args, **kwargs)
            filled = {name: value for name, value in convention_options(convention, door).items()
                      if name not in kwargs}
            return _filled_call(function, convention, filled, args, kwargs)

        parameters = list(signature.parameters.values())
        if "convention" not in signature.parameters:  # shown after metrics, where readers look for options
            where = next(i for i, p in enumerate(parameters) if p.name == "metrics") + 1
            parameters.insert(where, inspect.Parameter("convention", inspect.Parameter.KEYWORD_ONLY, default=None))
        door_call.__signature__ = signature.replace(parameters=parameters)
        return door_call

    return decorate


def _filled_call(function, convention, filled, args, kwargs):
    """``function`` with the preset's options ``filled`` in; an InputError about one of them
    says that the convention set it."""
    try:
        return function(*args, **{**filled, **kwargs})
    except InputError as error:  # an option the caller did not pass: say where it came from
        named = [name for name in filled if name in error.arguments or f"{name}=" in error.template]
        if not named:
            raise
        sets = ", ".join(f"{name}={filled[name]!r}" for name in named)
        raise error.prefixed(f"convention={convention!r} sets {sets}: ") from error
