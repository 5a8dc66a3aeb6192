"""pytrec_eval's interface over fasttie: ``import fasttie.compat.pytrec_eval as pytrec_eval``.

The same calls, keys and values as pytrec-eval-terrier (trec_eval 9 in a Python extension, what
BEIR, mteb and sentence-transformers call): :class:`RelevanceEvaluator` with
``evaluate(run) -> {qid: {measure: value}}``, :data:`supported_measures`,
:data:`supported_nicknames`, :func:`parse_qrel`, :func:`parse_run` and
:func:`compute_aggregated_measure`. One keyword more, ``ties``: "trec" (the default) orders equal
scores by document id descending, as trec_eval, and gives pytrec_eval's values; "average" gives
the exact mean over every order of the tied documents under the same keys, the one-word fix for
scores that tie (dense retrievers with quantized scores, rerankers that saturate).

As pytrec_eval: the queries evaluated are those of the run with judgments (a query whose
judgments are an empty dict has none); a query judged without relevant documents scores 0;
``gm_map`` and ``gm_bpref`` per query are the logarithms of max(value, 1e-5), which
:func:`compute_aggregated_measure` turns into the geometric mean; ``P``, ``recall``, ``map_cut``,
``ndcg_cut`` and ``relative_P`` without cutoffs take trec_eval's (5, 10, 15, 20, 30, 100, 200,
500, 1000), ``success`` (1, 5, 10), ``Rprec_mult`` (0.2, 0.4, ..., 2.0); ``iprec_at_recall`` gives
the eleven levels. ``relstring`` (text, which pytrec_eval reports as 0.0; see
:func:`fasttie.trec.relstring`) and the preference measures raise ``ValueError`` naming them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

import numpy as np

from ..errors import InputError, InputTypeError
from ..metrics import GEOMETRIC_FLOOR
from ..metrics.trec_eval_measures import TREC_EVAL_MEASURES, TREC_EVAL_NICKNAMES
from ..trec import evaluate as trec_evaluate

__all__ = ["RelevanceEvaluator", "compute_aggregated_measure", "parse_qrel", "parse_run", "supported_measures",
           "supported_nicknames"]

# trec_eval measure -> fasttie metric (one value, key = the measure's name), and measure with
# cutoffs -> (fasttie metric with {} for the cutoff, default cutoffs; key measure_k): trec_eval
# 10's table less what the trec_eval 9 inside pytrec_eval lacks (rbp, rbp_resid, unj) and
# relstring, text that pytrec_eval's dict of floats cannot hold (it reports 0.0)
_PLAIN = {name: metric for name, (metric, defaults) in TREC_EVAL_MEASURES.items()
          if metric and defaults is None and name not in ("rbp", "rbp_resid", "relstring")}
_CUT = {name: (metric, defaults) for name, (metric, defaults) in TREC_EVAL_MEASURES.items()
        if metric and defaults is not None and name not in ("iprec_at_recall", "Rprec_mult", "unj")}
_MULTIPLES = TREC_EVAL_MEASURES["Rprec_mult"]  # (template, default multiples of R); keys Rprec_mult_0.20
_LEVELS = TREC_EVAL_MEASURES["iprec_at_recall"][1]
_LOGARITHMIC = ("gm_map", "gm_bpref")  # per query log(max(value, 1e-5)), as trec_eval 9 reports them

#: The measures this module computes (pytrec_eval's names; ``runid`` is accepted and left out).
supported_measures = frozenset({*_PLAIN, *_CUT, "iprec_at_recall", "Rprec_mult", "runid"})
_NOT_COMPUTED = ("relstring",)  # text: fasttie.trec.relstring

#: pytrec_eval's nicknames, as far as fasttie computes their measures.
supported_nicknames = {
    "official": frozenset(TREC_EVAL_NICKNAMES["official"]),
    "set": frozenset(TREC_EVAL_NICKNAMES["set"]),
    "all_trec": frozenset(supported_measures),
}


def _expand(measure):
    """(key, fasttie metric) pairs of one measure as pytrec_eval spells it (``P.5,10``, ``ndcg_cut``)."""
    if not isinstance(measure, str):
        raise InputTypeError(f"measures must be strings such as 'map' or 'ndcg_cut.10', got {measure!r}")
    name, _, params = measure.partition(".")
    if name in supported_nicknames and not params:
        return [pair for member in sorted(supported_nicknames[name]) for pair in _expand(member)]
    if name == "runid":
        return []
    if name in _PLAIN and not params:
        return [(name, _PLAIN[name])]
    if name == "iprec_at_recall":
        levels = [float(x) for x in params.split(",") if x] if params else _LEVELS
        bad = [level for level in levels if level not in _LEVELS]
        if bad:
            raise InputError(f"iprec_at_recall takes the levels 0.0, 0.1, ..., 1.0, got {bad[0]}")
        return [(f"iprec_at_recall_{level:.2f}", f"IPrec@{level:.1f}") for level in levels]
    if name == "Rprec_mult":
        template, defaults = _MULTIPLES
        multiples = sorted({float(x) for x in params.split(",") if x}) if params else defaults
        return [(f"Rprec_mult_{x:.2f}", template.format(x)) for x in multiples]
    if name in _CUT:
        template, defaults = _CUT[name]
        if params and not re.fullmatch(r"\d+(,\d+)*,?", params):
            raise InputError(f"measure {measure!r}: cutoffs are positive integers, as in '{name}.5,10'")
        cutoffs = [int(k) for k in params.split(",") if k] if params else defaults
        return [(f"{name}_{k}", template.format(k)) for k in cutoffs]
    if name in _NOT_COMPUTED or name.startswith("prefs") or name.endswith("_avgjg"):
        raise InputError(f"measure {measure!r} is one of trec_eval's that fasttie does not compute; it computes "
                         f"{', '.join(sorted(supported_measures))}")
    raise InputError(f"unknown measure {measure!r}; pytrec_eval's names are {', '.join(sorted(supported_measures))} "
                     f"and the nicknames {', '.join(supported_nicknames)}")


class RelevanceEvaluator:
    """pytrec_eval's ``RelevanceEvaluator``: judgments and measures once, then runs evaluated.

    Parameters
    ----------
    query_relevance : dict of str to dict of str to int
        ``{qid: {docid: grade}}``.
    measures : iterable of str
        pytrec_eval's names (``map``, ``ndcg_cut.10``, ``P.5,10``, ``recip_rank``), or a nickname
        (``official``, ``set``, ``all_trec``).
    relevance_level : int, default 1
        Grades >= this are relevant (trec_eval ``-l``).
    judged_docs_only_flag : bool, default False
        Drop retrieved documents without a judgment before ranking (trec_eval ``-J``).
    ties : {"trec", "average", "stable", "optimistic", "pessimistic"}, default "trec"
        "trec": pytrec_eval's order and values; "average": the expectation over every order of
        tied documents (see :func:`fasttie.trec.evaluate`).

    Examples
    --------
    >>> import fasttie.compat.pytrec_eval as pytrec_eval
    >>> qrels = {"q1": {"d1": 1, "d2": 0}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5}}          # a tie: trec_eval puts d2 first
    >>> pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.1"}).evaluate(run)
    {'q1': {'P_1': 0.0, 'map': 0.5}}
    >>> pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.1"}, ties="average").evaluate(run)
    {'q1': {'P_1': 0.5, 'map': 0.75}}
    """

    def __init__(self, query_relevance, measures, relevance_level=1, judged_docs_only_flag=False, *, ties="trec"):
        if not isinstance(query_relevance, Mapping):
            raise InputTypeError(f"query_relevance must be a dict {{qid: {{docid: grade}}}}, got "
                                 f"{type(query_relevance).__name__}")
        if isinstance(measures, str) or not isinstance(measures, Iterable):
            raise InputTypeError(f"measures must be a set of names such as {{'map', 'ndcg_cut.10'}}, got {measures!r}")
        pairs = {}
        for measure in sorted(measures):  # pytrec_eval takes a set; sorted: one order whatever the set's
            pairs.update(_expand(measure))
        self._keys, self._metrics = list(pairs), list(dict.fromkeys(pairs.values()))
        self._metric_of = pairs
        self._qrels = {str(q): dict(docs) for q, docs in query_relevance.items() if len(docs)}
        self._options = {"relevance_level": relevance_level, "judged_only": bool(judged_docs_only_flag),
                         "ties": ties}

    def evaluate(self, scores):
        """Per query of the run with judgments, ``{measure: value}`` for every measure.

        Parameters
        ----------
        scores : dict of str to dict of str to float
            ``{qid: {docid: score}}``: the run.

        Returns
        -------
        dict of str to dict of str to float
        """
        if not isinstance(scores, Mapping):
            raise InputTypeError(f"scores must be a dict {{qid: {{docid: score}}}}, got {type(scores).__name__}")
        run = {str(q): docs for q, docs in scores.items() if str(q) in self._qrels and len(docs)}
        if not run or not self._keys:
            return {}
        qrels = {q: self._qrels[q] for q in run}
        result = trec_evaluate(qrels, run, self._metrics, **self._options)
        columns = []
        for key, metric in self._metric_of.items():
            column = result.per_query[metric]
            if key in _LOGARITHMIC:  # math.log, as trec_eval's C library log (numpy's may differ in the last bit)
                column = [math.log(max(value, GEOMETRIC_FLOOR)) for value in column.tolist()]
            columns.append(column)
        # one row of Python floats per query (one .tolist()), each zipped with the keys
        rows = np.column_stack(columns).tolist()
        return {str(qid): dict(zip(self._keys, row)) for qid, row in zip(result.query_ids, rows)}


def compute_aggregated_measure(measure, values):
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


def parse_qrel(f_qrel):
    """``{qid: {docid: grade}}`` from an open qrels file (``qid iter docid grade`` lines); blank
    lines skipped, a document judged twice for a query refused (pytrec_eval asserts).

    Parameters
    ----------
    f_qrel : file object of text lines

    Returns
    -------
    dict of str to dict of str to int
    """
    qrel = {}
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


def parse_run(f_run):
    """``{qid: {docid: score}}`` from an open run file (``qid Q0 docid rank score tag`` lines);
    blank lines skipped, a document listed twice for a query refused.

    Parameters
    ----------
    f_run : file object of text lines

    Returns
    -------
    dict of str to dict of str to float
    """
    run = {}
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
