"""pytrec_eval's interface over fasttie: ``import fasttie.compat.pytrec_eval as pytrec_eval``.

The same calls, keys, values and order as pytrec-eval-terrier 0.5 (trec_eval 9 in a Python
extension, what BEIR, mteb and sentence-transformers call): :class:`RelevanceEvaluator` with
``evaluate(run) -> {qid: {measure: value}}``, :data:`supported_measures`,
:data:`supported_nicknames`, :func:`parse_qrel`, :func:`parse_run` and
:func:`compute_aggregated_measure`. One keyword more, ``ties``: "trec" (the default) orders equal
scores by document id descending, as trec_eval, and gives pytrec_eval's values; "average" gives
the exact mean over every order of the tied documents under the same keys, the one-word fix for
scores that tie (dense retrievers with quantized scores, rerankers that saturate).

As pytrec_eval:

- Queries: those of the run that have judgments, in the run's order; a run query without
  judgments, or whose judgments are an empty dict, is left out. A judged query with an empty
  ranking (``{}``, as BEIR leaves a query whose only result was itself) is evaluated as a ranking
  of no documents: ``num_q`` 1, ``num_ret`` 0, ``num_rel`` its relevant documents, ``gm_map``
  and ``gm_bpref`` log(1e-5), 0 for the other measures but NaN (trec_eval's 0 / 0) for
  ``iprec_at_recall`` at the levels that start at relevant document 0 (0.0 always; every level
  when nothing is relevant) and for ``11pt_avg``, as for any query that retrieves nothing (also
  under ``-J``). A query judged without relevant documents scores 0.
- Measures: in trec_eval's order (its measure table; cutoffs ascending), whatever the order
  asked. A nickname (``official``, ``set``, ``all_trec``) stands for its measures; ``name.p1,p2``
  and ``name_p1,p2`` (``P_5,10``, ``ndcg_cut_10``, ``iprec_at_recall.0.5``) give parameters,
  read as pytrec_eval reads them: the name followed by ``.`` or ``_`` and numbers, whatever
  follows (``P_5abc`` is ``P.5``). A measure named several times takes the union of its
  parameters, a plain name adding none: ``{"P", "P.5"}`` is ``P_5`` alone, ``{"P.5", "P_10"}``
  ``P_5`` and ``P_10``. Cutoffs are read as trec_eval's ``atol`` (``P.1.5`` is ``P_1``), must be
  positive and differ (where pytrec_eval aborts the process, this raises ``ValueError``).
  Without parameters ``P``, ``recall``, ``map_cut``, ``ndcg_cut`` and ``relative_P`` take
  trec_eval's (5, 10, 15, 20, 30, 100, 200, 500, 1000), ``success`` (1, 5, 10), ``Rprec_mult``
  (0.2, 0.4, ..., 2.0; keys ``Rprec_mult_0.20``),
  ``iprec_at_recall`` the eleven levels 0.0, 0.1, ..., 1.0 (keys ``iprec_at_recall_0.10``); it
  takes any levels (``iprec_at_recall.0.25,0.333``, keys ``iprec_at_recall_0.25`` and
  ``iprec_at_recall_0.33``, trec_eval's ``%3.2f``: two levels printed alike share the key, which
  holds the higher level's value), each level starting at relevant document
  (long) (level R + 0.9), trec_eval 9's rounding (10.0's, in :func:`fasttie.trec.evaluate`,
  differs). ``set_F.b`` is F with trec_eval's beta b; the other
  measures without parameters ignore any given. ``gm_map`` and ``gm_bpref`` per query are the
  logarithms of max(value, 1e-5), which :func:`compute_aggregated_measure` turns into the
  geometric mean.
- Arguments: ``relevance_level`` and ``judged_docs_only_flag`` are C ints (an ``int``, ``bool``
  or numpy integer, else ``TypeError``); ``relevance_level`` < 1 raises ``TypeError``.

Where it differs: ``runid`` is accepted and left out (pytrec_eval reports uninitialised memory
under it); interpolated precision at levels above 1 (0 in pytrec_eval: the recall is never
reached), ``11pt_avg`` and ``ndcg`` with parameters raise ``ValueError`` (fasttie averages the
eleven levels; trec_eval refuses ``ndcg``'s parameters in pytrec_eval's spelling); a negative
``relevance_level`` raises ``TypeError`` (pytrec_eval reads it as 2**32 plus it: nothing
relevant). pytrec_eval evaluates
the run's queries up to its first judged query with a non-empty ranking and a judgment >= 0
from trec_eval's uninitialised cache: an empty ranking there, or a ranking whose judgments are
all negative, gets its first measure (in trec_eval's order) 0 and the others as if nothing were
relevant or retrieved (``num_rel`` 0, ``num_ret`` 0), or a crash; this module gives trec_eval's
values wherever the query stands. For an empty ranking the measures that are 0 either way
(``map``, ``ndcg``, ``ndcg_cut``, ``P``, ``recall``, ``recip_rank``, BEIR's) agree.
``relstring`` (text, which pytrec_eval reports as 0.0; see :func:`fasttie.trec.relstring`) and
the preference measures raise ``ValueError`` naming them.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable, Mapping

import numpy as np

from ..errors import InputError, InputTypeError
from ..metrics import GEOMETRIC_FLOOR
from ..metrics.trec_eval_measures import TREC_EVAL_MEASURES, TREC_EVAL_NICKNAMES
from ..trec import evaluate as trec_evaluate

__all__ = ["RelevanceEvaluator", "compute_aggregated_measure", "parse_qrel", "parse_run", "supported_measures",
           "supported_nicknames"]

# trec_eval 9's measure table (inside pytrec_eval), in its order: trec_eval 10.0's less the
# measures 10.0 added
_TABLE = [name for name in TREC_EVAL_MEASURES if name not in ("rbp", "rbp_resid", "unj")]
_ORDER = {name: i for i, name in enumerate(_TABLE)}
# measure -> fasttie metric (one value, key = the measure's name), and measure with cutoffs ->
# (fasttie metric with {} for the cutoff, default cutoffs; key measure_k); interpolated precision
# with trec_eval 9's recall levels; relstring is text, which pytrec_eval's dict of floats cannot
# hold (it reports 0.0)
_PLAIN = {name: metric for name, (metric, defaults) in TREC_EVAL_MEASURES.items()
          if name in _ORDER and metric and defaults is None and name != "relstring"}
_PLAIN["11pt_avg"] = "11pt(trec_eval=9)"
_CUT = {name: (metric, defaults) for name, (metric, defaults) in TREC_EVAL_MEASURES.items()
        if name in _ORDER and metric and defaults is not None and name not in ("iprec_at_recall", "Rprec_mult")}
_MULTIPLES = TREC_EVAL_MEASURES["Rprec_mult"]  # (template, default multiples of R); keys Rprec_mult_0.20
_LEVELS = TREC_EVAL_MEASURES["iprec_at_recall"][1]
_INTERPOLATED = ("iprec_at_recall", "11pt_avg")
_LOGARITHMIC = ("gm_map", "gm_bpref")  # per query log(max(value, 1e-5)), as trec_eval 9 reports them
# pytrec_eval's RE_BASE: a measure's name, "." or "_", then numbers (matched at the start only)
_WITH_PARAMETERS = r"{}[\._]([0-9]+(\.[0-9]+)?(,[0-9]+(\.[0-9]+)?)*)"

#: The measures this module computes (pytrec_eval's names; ``runid`` is accepted and left out).
supported_measures = frozenset({*_PLAIN, *_CUT, "iprec_at_recall", "Rprec_mult", "runid"})
_NOT_COMPUTED = ("relstring",)  # text: fasttie.trec.relstring

#: pytrec_eval's nicknames, as far as fasttie computes their measures.
supported_nicknames = {
    "official": frozenset(TREC_EVAL_NICKNAMES["official"]),
    "set": frozenset(TREC_EVAL_NICKNAMES["set"]) & supported_measures,  # the members computed (set holds utility)
    "all_trec": frozenset(supported_measures),
}


def _not_computed(measure):
    return InputError(f"measure {measure!r} is one of trec_eval's that fasttie does not compute; it computes "
                      f"{', '.join(sorted(supported_measures))}", argument="measures")


def _parameters_of(measures):
    """pytrec_eval's reading of a measure set: ``{name: parameter string or None}``, each
    name's parameters (the union over its mentions) sorted as strings and joined by commas, as
    pytrec_eval hands them to trec_eval."""
    if isinstance(measures, str) or not isinstance(measures, Iterable):
        raise InputTypeError(f"{{measures}} must be a set of names such as {{'map', 'ndcg_cut.10'}}, got "
                             f"{measures!r}", argument="measures")
    parameters = {}
    for given in measures:
        if not isinstance(given, str):
            raise InputTypeError(f"{{measures}} must be strings such as 'map' or 'ndcg_cut.10', got {given!r}",
                                 argument="measures")
        for measure in sorted(supported_nicknames[given]) if given in supported_nicknames else [given]:
            if measure in _ORDER:
                parameters.setdefault(measure, set())
                continue
            # no name of the table followed by "_" and a digit starts another: one match at most
            match = next(((name, found) for name in _TABLE
                          if (found := re.match(_WITH_PARAMETERS.format(re.escape(name)), measure))), None)
            if match is not None:
                parameters.setdefault(match[0], set()).update(match[1].group(1).split(","))
            elif measure.startswith("prefs") or measure.endswith("_avgjg"):
                raise _not_computed(measure)
            else:
                raise InputError(f"unknown measure {measure!r}; pytrec_eval's names are "
                                 f"{', '.join(sorted(supported_measures))}, with parameters as in 'P.5,10' or "
                                 f"'ndcg_cut_10', and the nicknames {', '.join(supported_nicknames)}",
                                 argument="measures")
    return {name: ",".join(sorted(values)) if values else None for name, values in parameters.items()}


def _sorted_distinct(values, measure):
    """trec_eval's parameter list: sorted, each value once (trec_eval refuses a repeat)."""
    values = sorted(values)
    if any(a == b for a, b in zip(values, values[1:])):
        raise InputError(f"measure {measure!r}: a cutoff is given twice (trec_eval refuses duplicate cutoffs; "
                         "pytrec_eval aborts); give each once", argument="measures")
    return values


def _columns(name, params):
    """(key, fasttie metric) pairs of one measure with its parameter string (or None), in
    trec_eval's order."""
    measure = name if params is None else f"{name}.{params}"
    if name == "runid":
        return []
    if name in _NOT_COMPUTED:
        raise _not_computed(measure)
    if name == "iprec_at_recall":  # levels read as atof
        levels = _LEVELS if params is None else _sorted_distinct([float(x) for x in params.split(",")], measure)
        if levels[-1] > 1.0:
            raise InputError(f"measure {measure!r}: fasttie computes interpolated precision at recall levels "
                             f"from 0 to 1, got {levels[-1]}", argument="measures")
        # keys as trec_eval prints them (%3.2f): 0.333 and 0.334 share one, which takes the last
        return [(f"iprec_at_recall_{level:.2f}", f"IPrec(trec_eval=9)@{level!r}") for level in levels]
    if name == "Rprec_mult":  # multiples of R read as atof
        template, defaults = _MULTIPLES
        multiples = defaults if params is None else _sorted_distinct([float(x) for x in params.split(",")], measure)
        return [(f"Rprec_mult_{x:.2f}", template.format(x)) for x in multiples]
    if name in _CUT:  # cutoffs read as atol: "1.5" is 1
        template, defaults = _CUT[name]
        cutoffs = defaults if params is None else _sorted_distinct([int(x.partition(".")[0]) for x in
                                                                    params.split(",")], measure)
        if cutoffs[0] <= 0:
            raise InputError(f"measure {measure!r}: cutoffs must be positive (pytrec_eval aborts on 0)",
                             argument="measures")
        return [(f"{name}_{k}", template.format(k)) for k in cutoffs]
    if params is not None and name == "set_F":  # beta, read as atof of the whole string
        return [(name, f"SetF(beta={float(params.split(',')[0])!r})")]
    if params is not None and name in ("ndcg", "11pt_avg"):
        raise InputError(f"measure {measure!r}: {name} takes no parameters here (trec_eval reads ndcg's as "
                         "rel=gain pairs, which pytrec_eval's names cannot spell; fasttie computes 11pt_avg at "
                         "the eleven levels only); name it without", argument="measures")
    return [(name, _PLAIN[name])]


def _c_int(value, argument):
    """``value`` as pytrec_eval's argument parser reads a C int: an integer (bool and numpy
    integers too), else TypeError."""
    try:
        number = operator.index(value)
    except TypeError:
        raise InputTypeError(f"{{{argument}}} must be an integer, got {value!r}", argument=argument) from None
    if not -2**31 <= number < 2**31:
        raise InputTypeError(f"{{{argument}}} must fit a C int, got {value!r}", argument=argument)
    return number


class RelevanceEvaluator:
    """pytrec_eval's ``RelevanceEvaluator``: judgments and measures once, then runs evaluated.

    Parameters
    ----------
    query_relevance : dict of str to dict of str to int
        ``{qid: {docid: grade}}``.
    measures : iterable of str
        pytrec_eval's names (``map``, ``ndcg_cut.10``, ``ndcg_cut_10``, ``P.5,10``,
        ``recip_rank``), or a nickname (``official``, ``set``, ``all_trec``); a name given
        several times takes the union of its parameters (see the module's notes).
    relevance_level : int, default 1
        Grades >= this are relevant (trec_eval ``-l``); at least 1.
    judged_docs_only_flag : int or bool, default False
        Drop retrieved documents without a judgment before ranking (trec_eval ``-J``).
    ties : {"trec", "average", "stable", "optimistic", "pessimistic"}, default "trec"
        "trec": pytrec_eval's order and values; "average": the expectation over every order of
        tied documents (see :func:`fasttie.trec.evaluate`).

    Raises
    ------
    ValueError
        An unknown measure, one fasttie does not compute, or parameters trec_eval refuses.
    TypeError
        ``relevance_level`` or ``judged_docs_only_flag`` not an integer, ``relevance_level`` < 1.

    Examples
    --------
    >>> import fasttie.compat.pytrec_eval as pytrec_eval
    >>> qrels = {"q1": {"d1": 1, "d2": 0}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5}}          # a tie: trec_eval puts d2 first
    >>> pytrec_eval.RelevanceEvaluator(qrels, {"P.1", "map"}).evaluate(run)
    {'q1': {'map': 0.5, 'P_1': 0.0}}
    >>> pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.1"}, ties="average").evaluate(run)
    {'q1': {'map': 0.75, 'P_1': 0.5}}
    """

    def __init__(self, query_relevance: Mapping[str, Mapping[str, int]], measures: Iterable[str],
                 relevance_level: int = 1, judged_docs_only_flag: bool = False, *, ties: str = "trec") -> None:
        if not isinstance(query_relevance, Mapping):
            raise InputTypeError(f"{{query_relevance}} must be a dict {{qid: {{docid: grade}}}}, got "
                                 f"{type(query_relevance).__name__}", argument="query_relevance")
        level = _c_int(relevance_level, "relevance_level")
        if level < 1:
            raise InputTypeError(f"{{relevance_level}} must be at least 1, got {relevance_level!r}",
                                 argument="relevance_level")
        judged_only = _c_int(judged_docs_only_flag, "judged_docs_only_flag") != 0
        parameters = _parameters_of(measures)
        pairs = [pair for name in sorted(parameters, key=_ORDER.__getitem__)  # every name is in _ORDER
                 for pair in _columns(name, parameters[name])]
        self._metric_of = dict(pairs)  # a key named twice: the first place, the last value (pytrec_eval's dict)
        self._keys = list(self._metric_of)
        interpolated = [key for key in self._keys if key.startswith(_INTERPOLATED)]
        # NumRet and NumRel tell where interpolated precision is trec_eval's 0 / 0
        self._metrics = list(dict.fromkeys([*self._metric_of.values(), *(["NumRet", "NumRel"] if interpolated
                                                                          else [])]))
        self._qrels = {str(q): dict(docs) for q, docs in query_relevance.items() if len(docs)}
        self._options = {"relevance_level": level, "judged_only": judged_only, "ties": ties}

    def evaluate(self, scores: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """Per query of the run with judgments, in the run's order, ``{measure: value}`` for
        every measure in trec_eval's order.

        Parameters
        ----------
        scores : dict of str to dict of str to float
            ``{qid: {docid: score}}``: the run; a judged query's ``{}`` is an empty ranking.

        Returns
        -------
        dict of str to dict of str to float
        """
        if not isinstance(scores, Mapping):
            raise InputTypeError(f"{{scores}} must be a dict {{qid: {{docid: score}}}}, got "
                                 f"{type(scores).__name__}", argument="scores")
        judged = {str(q): docs for q, docs in scores.items() if str(q) in self._qrels}
        if not judged or not self._keys:
            return {qid: {} for qid in judged}
        ranked = {qid: docs for qid, docs in judged.items() if len(docs)}
        # an empty ranking: a judged query missing from the run, which complete=True evaluates
        result = trec_evaluate({qid: self._qrels[qid] for qid in judged}, ranked, self._metrics,
                               complete=len(ranked) < len(judged), **self._options)
        columns = []
        for key, metric in self._metric_of.items():
            column = result.per_query[metric]
            if key in _LOGARITHMIC:  # math.log, as trec_eval's C library log (numpy's may differ in the last bit)
                column = np.array([math.log(max(value, GEOMETRIC_FLOOR)) for value in column.tolist()])
            elif key.startswith(_INTERPOLATED):
                column = self._zero_over_zero(metric, column, result.per_query)
            columns.append(column)
        # one row of Python floats per query (one .tolist()), each zipped with the keys
        assert result.query_ids is not None  # fasttie.trec.evaluate names the queries
        rows = dict(zip(result.query_ids, np.column_stack(columns).tolist()))
        return {qid: dict(zip(self._keys, rows[qid])) for qid in judged}

    @staticmethod
    def _zero_over_zero(metric, column, per_query):
        """trec_eval 9's interpolated precision (``metric``, fasttie's name) of a query that
        retrieves nothing: NaN (its 0 / 0) at the levels that start at relevant document
        (long) (level R + 0.9) = 0, and so in 11pt_avg. The level is the metric's, not the key's
        (``iprec_at_recall_0.01`` may be level 0.005)."""
        nothing = per_query["NumRet"] == 0
        if metric.startswith("IPrec"):
            level = float(metric.rpartition("@")[2])
            nothing &= (level * per_query["NumRel"] + 0.9).astype(np.int64) == 0
        return np.where(nothing, np.nan, column)


def compute_aggregated_measure(measure: str, values: Iterable[float]) -> float:
    """The value over all queries of one measure's per-query values, as pytrec_eval aggregates:
    the sum for the counts, exp of the mean for ``gm_map`` / ``gm_bpref`` (whose per-query
    values are logarithms), else the mean.

    Parameters
    ----------
    measure : str
        A key of :meth:`RelevanceEvaluator.evaluate`'s output (``map``, ``P_10``, ``num_ret``).
    values : sequence of float

    Returns
    -------
    float
    """
    values = np.asarray(list(values), dtype=np.float64)
    if measure.startswith("num_"):
        return float(values.sum())
    if measure.startswith("gm_"):
        return float(np.exp(values.mean()))
    return float(values.mean())


def parse_qrel(f_qrel: Iterable[str]) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` from an open qrels file (``qid iter docid grade`` lines); blank
    lines skipped, a document judged twice for a query refused (pytrec_eval asserts).

    Parameters
    ----------
    f_qrel : file object of text lines

    Returns
    -------
    dict of str to dict of str to int
    """
    qrel: dict[str, dict[str, int]] = {}
    for number, line in enumerate(f_qrel, start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise InputError(f"qrels line {number}: expected 'qid iter docid grade', got {line.strip()!r}")
        qid, _, docid, grade = fields
        if docid in qrel.setdefault(qid, {}):
            raise InputError(f"qrels line {number}: document {docid!r} judged twice for query {qid!r}")
        qrel[qid][docid] = int(grade)
    return qrel


def parse_run(f_run: Iterable[str]) -> dict[str, dict[str, float]]:
    """``{qid: {docid: score}}`` from an open run file (``qid Q0 docid rank score tag`` lines);
    blank lines skipped, a document listed twice for a query refused.

    Parameters
    ----------
    f_run : file object of text lines

    Returns
    -------
    dict of str to dict of str to float
    """
    run: dict[str, dict[str, float]] = {}
    for number, line in enumerate(f_run, start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 6:
            raise InputError(f"run line {number}: expected 'qid Q0 docid rank score tag', got {line.strip()!r}")
        qid, _, docid, _, score = fields[:5]
        if docid in run.setdefault(qid, {}):
            raise InputError(f"run line {number}: document {docid!r} listed twice for query {qid!r}")
        run[qid][docid] = float(score)
    return run
