"""ir_measures' measures, tie-aware: ``from fasttie.ir_measures import AP, nDCG, P, ...``.

Each measure here is an ``ir_measures.Measure`` with ir_measures' name and parameters
(``cutoff`` / ``@k``, ``rel``, ``judged_only``, ``dcg``, ``gains``, ``p``, ``beta``, ...) plus
``ties``, the order inside tied scores: ``"average"`` (the default: the exact mean over every
order of each tie), ``"trec"`` (trec_eval's: document id descending, the order of ir_measures'
pytrec_eval provider), ``"pyndeval"`` (document id ascending, its judged and pyndeval
providers'), ``"optimistic"``, ``"pessimistic"`` (by grade, and within a grade judged documents
first / last: docs/ties.md). ``ir_measures.calc_aggregate``, ``iter_calc``, ``calc``,
``evaluator`` and PyTerrier's ``pt.Experiment(eval_metrics=[...])`` hand them to
:class:`FasttieProvider`, ir_measures' runtime provider with ir_measures' query set, which this
module puts first in ir_measures' default pipeline; :func:`fasttie.trec.evaluate` computes the
values.

What ir_measures does, these do: the same queries (every query of the qrels, a dict's keys
without judgments too; a query not both judged and in the run scores ``DEFAULT``, 0, for every
measure, NumQ and NumRel included, by ir_measures' evaluator; run queries without judgments are
left out), the same aggregation (the mean; NumRet, NumRel, NumQ summed), the same formulas
(trec_eval's, gdeval's ERR). The cutoff is the metric's own (``AP@10`` is trec_eval's ``map_cut_10``): the run is not
cut before the measure sees its ties, as ir_measures' ``define(support_cutoff=True)`` would.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

try:
    import ir_measures
    from ir_measures.measures.base import Measure, ParamInfo
except ImportError as error:  # an optional dependency: say how to get it
    raise ImportError("fasttie.ir_measures needs ir_measures: pip install ir_measures") from error

from .errors import InputError
from .trec.evaluation import evaluate
from .trec.measure_objects import metric_names_of
from .trec.records import Qrels, Run

__all__ = ["AP", "MAP", "nDCG", "NDCG", "P", "Precision", "R", "Recall", "RR", "MRR", "Rprec", "RPrec", "Bpref",
           "BPref", "ERR", "RBP", "Judged", "NumRet", "NumRelRet", "NumRel", "NumQ", "SetP", "SetRelP", "SetR",
           "SetF", "SetAP", "Success", "infAP", "TIES", "MEASURES", "FasttieMeasure", "FasttieProvider", "PROVIDER",
           "register"]

TIES = ("average", "trec", "pyndeval", "optimistic", "pessimistic")

# the ir_measures measures fasttie computes, by ir_measures' name; each takes the parameters of
# ir_measures' own class (its SUPPORTED_PARAMS) and ties. IPrec is left out: fasttie's IPrec
# takes no rel / judged_only.
MEASURES = ("AP", "nDCG", "P", "R", "RR", "Rprec", "Bpref", "ERR", "RBP", "Judged", "NumRet", "NumRel", "NumQ",
            "SetP", "SetR", "SetF", "SetAP", "Success", "infAP")


class _Inputs:
    """The qrels and run of one ir_measures evaluation as fasttie records, converted once for
    all its measures (ir_measures' runtime evaluator hands every measure the same two frames)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._qrels = self._run = None  # (weak reference to the frame, what it became)

    def _cached(self, slot, frame, build):
        with self._lock:
            held = getattr(self, slot)
            if held is not None and held[0]() is frame:
                return held[1]
        value = build(frame)
        ref = weakref.ref(frame)
        with self._lock:
            setattr(self, slot, (ref, value))
        weakref.finalize(frame, self._forget, slot, ref)  # the records go with the frame
        return value

    def _forget(self, slot, ref):
        with self._lock:
            held = getattr(self, slot)
            if held is not None and held[0] is ref:
                setattr(self, slot, None)

    def qrels(self, frame):
        """(Qrels, {str(qid): qid as given}) of ir_measures' qrels frame."""
        return self._cached("_qrels", frame, _qrels_of)

    def run(self, frame):
        """Run of ir_measures' run frame, or None when it has no row."""
        return self._cached("_run", frame, _run_of)


def _qrels_of(frame):
    columns = [c for c in ("query_id", "doc_id", "relevance", "iteration") if c in frame.columns]
    qrels = Qrels.from_frame(frame[columns])
    ids = {str(q): q for q in frame["query_id"].unique().tolist()}  # ir_measures' ids, as it keys queries
    return qrels, ids


def _run_of(frame):
    # only the three columns: PyTerrier's frames carry more (Terrier's numeric docid, rank, query)
    return Run.from_frame(frame[["query_id", "doc_id", "score"]]) if len(frame) else None


_INPUTS = _Inputs()


class FasttieMeasure(Measure):
    """An ir_measures measure computed by fasttie with a tie rule (``ties``, default "average").

    Subclasses are made from :data:`MEASURES`; ``NAME`` differs from ir_measures' own (so no
    other provider claims the measure and ignores its ties), ``__name__`` is ir_measures' name,
    which ``str(measure)`` shows: ``nDCG(ties='trec')@10``; the default ``ties`` is not shown.
    A fasttie measure equals only a fasttie measure of the same name and parameters.
    """

    RUN_INPUTS = ["query_id", "doc_id", "score"]  # what ir_measures.run_inputs reports (PyTerrier reads it)
    QREL_INPUTS = ["query_id", "doc_id", "relevance"]
    DEFAULT = 0.0  # ir_measures' value for a judged query the run lacks

    def validate_params(self) -> None:
        """ir_measures' checks of the parameters, after a ValueError for a ``ties`` it does not take."""
        ties = self.params.get("ties", "average")
        if ties not in TIES:
            raise InputError(f"{self.__name__}(ties={ties!r}): ties must be one of {TIES}")
        super().validate_params()

    def metric_name(self) -> str:
        """The fasttie metric name of this measure, without ``ties`` (e.g. ``nDCG@10``)."""
        return metric_names_of([self], self["ties"])[0]

    def runtime_impl(self, qrels: Any, run: Any) -> Iterator[Any]:
        """Per-query values for ir_measures' runtime provider.

        Parameters
        ----------
        qrels : pandas.DataFrame
            ``query_id, doc_id, relevance[, iteration]``, as ir_measures' runtime provider
            passes it.
        run : pandas.DataFrame
            ``query_id, doc_id, score`` (other columns ignored).

        Yields
        ------
        ir_measures.Metric
            One per query both judged and in the run, keyed by ir_measures' query id; ir_measures
            gives the other queries of its query set ``DEFAULT``.
        """
        judged, ids = _INPUTS.qrels(qrels)
        retrieved = _INPUTS.run(run)
        if retrieved is None or not np.intersect1d(judged.query_ids, retrieved.query_ids).size:
            return  # nothing both judged and retrieved: every judged query takes DEFAULT
        result = evaluate(judged, retrieved, [self.metric_name()], ties=self["ties"])
        (values,) = result.per_query.values()
        assert result.query_ids is not None  # fasttie.trec.evaluate names the queries
        for qid, value in zip(result.query_ids, values.tolist()):
            yield ir_measures.Metric(query_id=ids[qid], measure=self, value=value)

    def aggregator(self) -> Any:
        """ir_measures' own aggregator of this measure (a mean; a sum for NumRet, NumRel, NumQ)."""
        return ir_measures.measures.registry[self.__name__].aggregator()

    def __eq__(self, other):
        return isinstance(other, FasttieMeasure) and repr(self) == repr(other)

    def __hash__(self):
        return hash(("fasttie", repr(self)))


class FasttieProvider(ir_measures.providers.RuntimeProvider):
    """ir_measures' runtime provider for the fasttie measures, with ir_measures' query set.

    The runtime provider reads its query set (the queries that take ``DEFAULT`` when no value
    comes) from the qrels frame it makes, which has no row for a query of a qrels dict without
    judgments (``{"q2": {}}``): that query would leave the mean, where ir_measures' pytrec_eval
    and judged providers, and ranx, count it at 0. This provider takes the dict's keys as they
    do. It serves only :class:`FasttieMeasure` measures, ahead of the runtime provider in
    ``ir_measures.DefaultPipeline`` (put there once, on import).
    """

    NAME = "fasttie"

    def supports(self, measure: Any) -> bool:
        """Whether ``measure`` is a fasttie measure (after ir_measures' checks of its parameters)."""
        measure.validate_params()
        return isinstance(measure, FasttieMeasure)

    def _evaluator(self, measures, qrels):
        evaluator = super()._evaluator(measures, qrels)
        if isinstance(qrels, dict):  # as ir_measures' pytrec_eval and judged providers read a dict
            evaluator.qrel_qids = set(evaluator.qrel_qids) | set(qrels)
        return evaluator


PROVIDER = ir_measures.providers.register(FasttieProvider())
if not any(isinstance(p, FasttieProvider) for p in ir_measures.DefaultPipeline.providers):
    ir_measures.DefaultPipeline.providers.insert(0, PROVIDER)


def _measure_class(name: str) -> type:
    """The fasttie class of ir_measures' measure ``name``: its parameters plus ``ties``."""
    upstream = type(ir_measures.measures.registry[name])
    params = dict(upstream.SUPPORTED_PARAMS)
    params["ties"] = ParamInfo(dtype=str, choices=TIES, default="average",
                               desc="order inside tied scores: the exact mean over all orders, or one order")
    doc = (f"ir_measures' {name}, tie-aware (fasttie): {getattr(upstream, 'SHORT_DESC', '') or name} "
           f"Parameters: {', '.join(params)}; ties in {TIES}, default 'average'.")
    return type(f"_{name}", (FasttieMeasure,), {
        "__name__": name, "NAME": f"fasttie.{name}", "SUPPORTED_PARAMS": params, "__doc__": doc,
        "AT_PARAM": upstream.AT_PARAM, "PRETTY_NAME": getattr(upstream, "PRETTY_NAME", name),
        "SHORT_DESC": getattr(upstream, "SHORT_DESC", ""), "__module__": __name__,
    })


_CLASSES = {name: _measure_class(name) for name in MEASURES}

AP = MAP = _CLASSES["AP"]()
nDCG = NDCG = _CLASSES["nDCG"]()
P = Precision = _CLASSES["P"]()
R = Recall = _CLASSES["R"]()
RR = MRR = _CLASSES["RR"]()
Rprec = RPrec = _CLASSES["Rprec"]()
Bpref = BPref = _CLASSES["Bpref"]()
ERR = _CLASSES["ERR"]()
RBP = _CLASSES["RBP"]()
Judged = _CLASSES["Judged"]()
NumRet = _CLASSES["NumRet"]()
NumRelRet = NumRet(rel=1)
NumRel = _CLASSES["NumRel"]()
NumQ = _CLASSES["NumQ"]()
SetP = _CLASSES["SetP"]()
SetRelP = SetP(relative=True)
SetR = _CLASSES["SetR"]()
SetF = _CLASSES["SetF"]()
SetAP = _CLASSES["SetAP"]()
Success = _CLASSES["Success"]()
infAP = _CLASSES["infAP"]()


def register(prefix: str = "ft_") -> list[str]:
    """Name the measures in ir_measures' registry, for ``ir_measures.parse_measure``.

    Parameters
    ----------
    prefix : str, default "ft_"
        Put before each name (``ft_AP``, ``ft_nDCG``): ir_measures' own names stay its own
        measures. Calling again with the same prefix changes nothing.

    Returns
    -------
    list of str
        The names registered.

    Raises
    ------
    ValueError
        A name already taken by a measure that is not fasttie's (an empty prefix takes
        ir_measures' own names), or a prefix that makes no identifier.

    Examples
    --------
    >>> import ir_measures
    >>> names = register()
    >>> ir_measures.parse_measure("ft_nDCG(ties='trec')@10")
    nDCG(ties='trec')@10
    """
    registry = ir_measures.measures.registry
    names = [f"{prefix}{name}" for name in MEASURES]
    for name in names:
        if not name.isidentifier():
            raise InputError(f"register(prefix={prefix!r}) makes {name!r}, not a name parse_measure reads; "
                             f"use letters, digits and _, e.g. prefix='ft_'")
        taken = registry.get(name)
        if taken is not None and not isinstance(taken, FasttieMeasure):
            raise InputError(f"ir_measures already names {name!r} ({taken!r}); pick another prefix, e.g. prefix='ft_'")
    for name, measure in zip(names, MEASURES):
        registry[name] = _CLASSES[measure]()
    return names
