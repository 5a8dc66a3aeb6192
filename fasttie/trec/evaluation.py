"""trec_eval-compatible evaluation of a run against qrels: :func:`evaluate`.

The run is joined with its judgments (:func:`fasttie.trec.align`); ranking metrics go to
:func:`fasttie.rank_evaluate` with the joined grades, trec_eval's tie order and the relevant
documents the run misses; alpha-nDCG goes to the diversity engine (:mod:`fasttie.trec.subtopics`).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..options import TREC_TIES
from .._kernels.trec_order import trec_tie_keys
from ..diversity.inputs import TIE_RULES, empty_value
from ..errors import InputError, InputTypeError
from ..metrics import GRADED, aggregate, diversity_settings, parse_metrics, split_metric_names
from ..metrics.families import asked_names
from ..finalize.cold_start import ranked_walk_in_helper
from ..lists.facade import OWN_PASSES, rank_lists, walk_kernels
from ..lists.options import ListOptions
from ..result import Result
from ..lists.score_floor import merged_results
from ..validation import check_empty_policy, mean_of_kept
from .dict_join import align_dicts
from .join import Aligned, align
from .measure_objects import metric_names_of
from .readers import as_qrels, queries_without_judgments
from .subtopics import diversity_columns
from .trec_only import trec_only_columns

__all__ = ["evaluate"]


def _rank_order_rows(score, offsets):
    """Each query's rows in rank order (score descending), as the tie keys' kernel takes them.

    A run file is usually written in rank order: then the rows are their own order. Only the
    queries with a row scored above the one before it are sorted, by numpy (numba's sort would
    compile for a second on a cold first call).

    Parameters
    ----------
    score : (n,) float64
        The rows' scores.
    offsets : (n_queries + 1,) int64
        Query q's rows are offsets[q]:offsets[q + 1].

    Returns
    -------
    (n,) int64
    """
    ranked = np.arange(len(score), dtype=np.int64)
    query = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    rising = np.flatnonzero((score[1:] > score[:-1]) & (query[1:] == query[:-1])) + 1
    if rising.size:
        unsorted = np.isin(query, query[rising])
        rows = ranked[unsorted]
        ranked[unsorted] = rows[np.lexsort((-score[rows], query[rows]))]
    return ranked


def _trec_tie_keys(aligned: Aligned):
    """Integer stand-ins for document ids that order every tie as trec_eval does.

    Only documents tied with another of their query need a key: each tie's ids are sorted on
    their own (a key is the rank of its id in its tie), far cheaper than sorting every id as a
    string.
    """
    if aligned.tie_keys is not None:
        return aligned.tie_keys
    ids = aligned.docno
    if len(ids) < 2 or ids.dtype.kind != "U":
        return ids
    ids = np.ascontiguousarray(ids)
    chars = ids.view(np.uint32).reshape(len(ids), ids.dtype.itemsize // 4)
    keys = np.empty(len(ids), dtype=np.int64)
    score = np.ascontiguousarray(aligned.score, dtype=np.float64)
    trec_tie_keys(chars, score, _rank_order_rows(score, aligned.offsets), aligned.offsets, keys)
    return keys


def ascending_tie_keys(aligned: Aligned, ties: str) -> np.ndarray:
    """int64 keys, one per row, whose ascending order inside each tie is trec_eval's (``ties="trec"``:
    document id descending) or pyndeval's ("pyndeval": ascending)."""
    ids = _trec_tie_keys(aligned)
    rank = ids.astype(np.int64) if ids.dtype.kind in "iu" else \
        np.unique(ids, return_inverse=True)[1].ravel().astype(np.int64)
    return -rank if ties == "trec" else rank


def _every_judged(relevance_level) -> bool:
    """Whether ``relevance_level`` is 0, every judged document relevant (trec_eval ``-l 0``);
    a negative level is refused here, any other value is
    :meth:`fasttie.lists.options.ListOptions.resolve`'s to check."""
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, numbers.Real) \
            or not relevance_level <= 0:
        return False
    if relevance_level < 0:
        raise InputError(f"{{relevance_level}} must be >= 0 (0: every judged document is relevant, grade 0 too), "
                         f"got {relevance_level!r}; trec_eval's negative -l reads its codes for a retrieved document "
                         "without a judgment (-1) and one with a negative grade (-2) as grades, relevant in P, map, "
                         "recip_rank, ... but not in num_rel, num_rel_ret, bpref or infAP: fasttie does not reproduce it",
                         argument="relevance_level")
    return True


def _judged_relevant(names, rank, grade, judged, unretrieved) -> Result:
    """The ranking metrics ``names`` at relevance level 0: every judged document relevant, grade
    0 too (trec_eval ``-l 0``), and no document without a judgment, though its grade reads 0 too.

    ``rank(names, grades, unretrieved, level)`` evaluates. The metrics that read the call's level
    see each judged document's grade + 1 (retrieved or not) and 0 elsewhere, against level 1: the
    same documents are relevant, in the same grade order (the optimistic and pessimistic ties, the
    extremes). The graded metrics (gains of the grades themselves: trec_eval's ndcg gains are the
    grades whatever -l is, m_ndcg.c) and those with a level of their own (``P(rel=2)@5``, a level >
    0) never read it: they see the grades unchanged.
    """
    reading = [name for name in names if any(m.rel is None and m.base not in GRADED for m in parse_metrics(name))]
    others = [name for name in names if name not in reading]
    results = []
    if reading:
        results.append(rank(reading, np.where(judged, grade + 1, 0), [g + 1 for g in unretrieved], 1))
    if others:
        results.append(rank(others, grade, unretrieved, 1))
    # a query without a judged document has no positive grade either: the first call's empty
    # queries are among the second's, so the union is the larger count
    return merged_results(results, [m.name for m in parse_metrics(names)],
                          n_empty=max(result.n_empty for result in results))


def evaluate(
    qrels: Any,
    run: Any,
    metrics: str | Sequence[str],
    *,
    ties: str = "trec",
    ap_denominator: str = "total",
    gain: str = "linear",
    relevance_level: float = 1,
    empty: str = "zero",
    complete: bool = False,
    max_retrieved: int | None = None,
    judged_only: bool = False,
    **options: Any,
) -> Result:
    """Evaluate a TREC run against qrels with trec_eval's semantics (ndeval's for diversity).

    Parameters
    ----------
    qrels : str, os.PathLike, Qrels, dict, pandas.DataFrame or ranx.Qrels
        A qrels file (``qid iter docno rel``), a :class:`Qrels`, ``{qid: {docno: rel}}``
        (pytrec_eval, ranx), a DataFrame with columns ``query_id, doc_id, relevance`` and
        optionally ``iteration`` (ir_measures, ranx; ``qid, docno, rel`` or ``label`` also
        work), or a ranx ``Qrels``. For the diversity measures, diversity qrels
        ``qid subtopic docno rel`` (TREC Web track, ndeval, ir_measures): the iteration
        column names the subtopic.
    run : str, os.PathLike, Run, dict, pandas.DataFrame or ranx.Run
        A run file (``qid Q0 docno rank score tag``), a :class:`Run`,
        ``{qid: {docno: score}}``, a DataFrame with columns ``query_id, doc_id, score`` (or
        ``qid, docno, score``), or a ranx ``Run``. Every form gives the same result.
    metrics : str or sequence of str
        Names as in :func:`fasttie.rank_evaluate`: ``AP``, ``AP@k``, ``nDCG``, ``nDCG@k``,
        ``P@k``, ``R@k``, ``RR``, ``Rprec``, ... (trec_eval's ``map``, ``map_cut_k``, ``P_k``,
        ``recall_k``, ``ndcg``, ``ndcg_cut_k``, ``recip_rank``, ``Rprec``), and ndeval's
        diversity measures (:func:`fasttie.diversity.diversity_evaluate`): ``alpha_nDCG@k``,
        ``alpha_DCG@k``, ``ERR_IA@k``, ``nERR_IA@k``, ``NRBP``, ``nNRBP``, ``P_IA@k``,
        ``AP_IA``, ``StRecall@k`` (also ndeval's ``alpha-nDCG@k``, ``MAP-IA``, ``strec@k``, and
        lists ``alpha_nDCG@[5,10,20]``), with alpha = beta = 0.5 unless named as
        ``alpha_nDCG(alpha=0.3)@k``, ``NRBP(alpha=0.5,beta=0.8)`` (ir_measures' form), and
        trec_eval's own measures (:mod:`fasttie.metrics.trec_eval_only`): ``Rprec_mult(x=0.2)``,
        ``utility``, ``binG``, ``G``, ``ndcg_rel``, ``Rndcg`` (``G(gains={1: 3})``) and ``unj@k``
        (also as trec_eval spells them: ``Rprec_mult_0.20``, ``utility.2,-1,0,0``, ``unj_5``);
        its ``relstring`` is text: :func:`fasttie.trec.relstring`.
        Output columns follow the order asked. ir_measures ``Measure`` objects
        (``ir_measures.nDCG@10``, :mod:`fasttie.ir_measures`' ``AP(ties="average")``) are read as
        their names (``str(measure)``).
    ties : {"trec", "pyndeval", "average", "stable", "optimistic", "pessimistic"}, default "trec"
        "trec": score descending, then document id descending (string order), trec_eval's and
        ``ndeval -traditional``'s order. "pyndeval": score descending, then document id
        ascending, the order of pyndeval and ir_measures. "average": the exact expectation
        over all orders inside ties. "stable": file order inside ties. "optimistic" /
        "pessimistic": inside ties higher / lower grades first, and within a grade the judged
        documents, then those with a negative grade (pooled, unjudged), first / last
        (docs/ties.md): one order, whose values every measure takes. The diversity measures
        take "trec", "pyndeval", "stable" and "average"; trec_eval's ``G`` every order but
        "average".
    ap_denominator : {"total", "retrieved", "min"}, default "total"
        AP@k denominator; "total" (R) is trec_eval's ``map_cut``.
    gain : {"linear", "exp2"}, default "linear"
        DCG gain; trec_eval's ``ndcg`` uses the grade itself.
    relevance_level : number >= 0, default 1
        A document is relevant when it has a judgment (grade >= 0) and its grade is >= this
        (trec_eval ``-l``): 0 makes every judged document relevant, grade 0 too, and none without
        a judgment (trec_eval ``-l 0``). A fractional level compares with the grade as it is
        (``fasttie trec -l 1.5`` truncates to 1, as trec_eval does). trec_eval's ndcg, rbp and the
        other graded measures use every grade whatever the level. For the diversity measures, a
        judgment with rel >= this marks the document relevant to that subtopic (ndeval: rel > 0).
    empty : {"zero", "skip", "one", "error"}, default "zero"
        Queries whose judgments have no relevant document: trec_eval and ndeval score them 0
        and keep them in the mean ("zero").
    complete : bool, default False
        Average over every query of the qrels, as trec_eval and ndeval ``-c``, ir_measures and
        ranx (``make_comparable=True``) do: those of a qrels mapping without any judgment
        (``{"q2": {}}``, what filtering to positive grades leaves) included. A query not both
        judged and in the run is scored as an empty ranking, as trec_eval ``-c`` scores it:
        every metric 0 but NumQ (1: it is averaged over) and NumRel (its relevant documents).
        ir_measures gives those two 0 as well (its default value for a query it has no result
        for): :mod:`fasttie.ir_measures` gives its values. Without ``complete``, only queries
        both judged and in the run count, as in trec_eval 9 and pytrec_eval (trec_eval 10.0
        refuses a run that lacks a judged query unless ``-c`` is given).
    max_retrieved : int, optional
        Evaluate only the first ``max_retrieved`` documents of each query in trec_eval's
        order, score descending, then document id descending (trec_eval ``-M``). The cut is
        made on the input, the same for every ``ties`` mode; ties are then resolved among the
        documents kept (see Notes). Relevant documents cut off count as not retrieved.
    judged_only : bool, default False
        Drop retrieved documents without a judgment (grade >= 0) before ranking, so the
        others move up (trec_eval ``-J``, pytrec_eval ``judged_docs_only_flag``). Applied
        after ``max_retrieved``, as in trec_eval.
    **options
        Passed to :func:`fasttie.rank_evaluate` (``log_base``, ``n_threads``, ``spread``, with
        ``ties="average"``: True, the standard deviation over tie orders in ``Result.tie_std``
        and the extremes in ``tie_min`` / ``tie_max``; "range", the extremes alone);
        ``n_threads`` also to the diversity pass.

    Returns
    -------
    Result
        Per-query values in the order of ``Result.query_ids`` (sorted as strings); settings
        include ``complete``, ``max_retrieved``, ``judged_only``, the query set
        (``judged_not_in_run``: judged queries the run lacks, left out of the means or, with
        ``complete=True``, scored as an empty ranking; ``in_run_not_judged``: run queries
        without judgments, ignored, or with ``complete=True`` and a qrels mapping that names
        them, scored as an empty ranking), and ``alpha`` (a float, or a sorted list when several) when a diversity measure
        was asked for (and ``beta`` for NRBP). ``Result.to_frame()`` gives the per-query values
        as a pandas DataFrame indexed by query id.

    Raises
    ------
    ValueError
        Malformed files (see :func:`read_run`, :func:`read_qrels`), no query both judged and
        retrieved, a tie mode the diversity measures do not take, a negative
        ``relevance_level`` (trec_eval's negative ``-l`` makes unjudged documents relevant for
        some measures and not others), and the errors of
        :func:`fasttie.rank_evaluate` and :func:`fasttie.alpha_ndcg`.

    Notes
    -----
    trec_eval semantics: queries of the run without judgments are ignored; retrieved
    documents without a judgment are non-relevant at every level, 0 included (gain 0), as are
    negative grades; relevant
    documents the run misses count in R (recall, R-precision, AP) and in the ideal DCG. A
    document judged under several subtopics (diversity qrels) takes its highest grade.

    The diversity measures follow ndeval 4.5 (the TREC Web track tool; pyndeval, ir_measures;
    see :mod:`fasttie.diversity`): the ideal is the greedy ordering of every judged document of
    the query, retrieved or not (ties: the greatest docno); unjudged retrieved documents have no
    subtopic; queries without any relevant subtopic score 0 under ``empty="zero"`` (ndeval's
    nNRBP is 0/0 there); no depth limit (ndeval stops at 20).
    Each query's subtopics are numbered in numeric order (string order unless all are
    integers), the order in which ndeval adds their gains.
    Values can exceed 1 (the greedy ideal is not always optimal): they are not clipped.

    ``max_retrieved`` with ties: trec_eval keeps the first documents of its own order, so a
    cut inside a run of equal scores keeps the greater document ids. fasttie makes the same
    cut whatever ``ties`` is, so every mode evaluates the same documents, and
    ``ties="average"`` then averages over the orders of the documents kept (the cut is part
    of the input, not of the random order).

    Examples
    --------
    Documents ``d1`` and ``d2`` tie; trec_eval ranks the larger id, ``d2``, first:

    >>> qrels = {"q1": {"d1": 1, "d3": 1}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5, "d4": 0.1}}
    >>> evaluate(qrels, run, ["RR", "P@1", "R@3"]).mean
    {'RR': 0.5, 'P@1': 0.0, 'R@3': 0.5}
    >>> evaluate(qrels, run, ["RR"], ties="average").mean
    {'RR': 0.75}

    trec_eval's own measures: binG (d1 below one non-relevant document in trec_eval's order, below
    none or one on average) and the unjudged share of the top 2:

    >>> {k: round(v, 4) for k, v in evaluate(qrels, run, ["binG", "unj@2"]).mean.items()}
    {'binG': 0.3155, 'unj@2': 0.5}
    >>> {k: round(v, 4) for k, v in evaluate(qrels, run, ["binG", "unj@2"], ties="average").mean.items()}
    {'binG': 0.4077, 'unj@2': 0.5}

    Only the first document (``d2``, trec_eval's order), or only judged documents:

    >>> evaluate(qrels, run, ["RR", "NumRet"], max_retrieved=1).mean
    {'RR': 0.0, 'NumRet': 1.0}
    >>> evaluate(qrels, run, ["RR", "NumRet"], judged_only=True).mean
    {'RR': 1.0, 'NumRet': 1.0}

    At level 0 (trec_eval ``-l 0``) ``d1``, judged with grade 0, is relevant and ``d2``, tied with it
    but unjudged, is not:

    >>> judged_0 = {"q1": {"d1": 0, "d3": 1}}
    >>> evaluate(judged_0, run, ["P@2", "NumRel"], relevance_level=0).mean
    {'P@2': 0.5, 'NumRel': 2.0}

    Diversity qrels: ``d1`` covers subtopics 1 and 2, ``d2`` subtopic 1, ``d3`` subtopic 3:

    >>> from fasttie.trec import Qrels
    >>> div = Qrels.from_arrays(["q1"] * 4, ["d1", "d1", "d2", "d3"], [1, 1, 1, 1], ["1", "2", "1", "3"])
    >>> run = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}
    >>> {k: round(v, 4) for k, v in evaluate(div, run, ["alpha_nDCG@[2,3]", "P@2"]).mean.items()}
    {'alpha_nDCG@2': 0.8801, 'alpha_nDCG@3': 0.9773, 'P@2': 1.0}
    """
    metrics = metric_names_of(metrics, ties)
    ranking, diversity, trec_only, order = split_metric_names(metrics)
    unknown = set(options) - {"n_threads", "log_base", "spread"}
    if unknown:
        raise InputTypeError(f"evaluate() got unexpected keyword argument(s) {sorted(unknown)}")
    if trec_only and options.get("spread"):
        raise InputError(f"spread=True has no exact method for trec_eval's own measures ({', '.join(trec_only)}); "
                         "leave them out")
    if diversity and options.get("spread"):
        raise InputError(f"spread=True has no exact method for the diversity measures ({', '.join(diversity)}); "
                         "leave them out")
    every_judged = _every_judged(relevance_level)
    # every option checked once, before any work, as the ranked lists take them (level 0 evaluates
    # the judged documents at level 1); the diversity and trec_eval-only passes read the same values
    ranked = ListOptions.resolve(
        parse_metrics(ranking) if ranking else [], tie_modes=TREC_TIES, ties=ties, gain=gain, log_base=options.get("log_base", 2),
        ap_denominator=ap_denominator, empty=empty, relevance_level=1 if every_judged else relevance_level,
        spread=options.get("spread", False))
    if diversity and ties not in TIE_RULES:
        raise InputError(f"the diversity measures ({', '.join(diversity)}) take ties in {TIE_RULES} "
                         f"(no optimistic or pessimistic order of subtopics), got {ties!r}")
    aligned = None
    if not (diversity or complete or max_retrieved is not None) and ties in ("trec", "pyndeval", "average"):
        # dicts join without arrays of document ids; None: inputs that the general join takes
        aligned = align_dicts(qrels, run, judged_only=judged_only, tie_keys=ties != "average")
    helper = None
    walked = [m for m in parse_metrics(ranking) if m.base not in OWN_PASSES] if ranking else []
    if aligned is None and walked:
        # on a cold cache the driver of the walk over the ranked lists compiles in a helper while this process
        # compiles the readers, the join, the tie keys, the passes of ERR and infAP and the walk's finalizers
        # (dicts joined above have none of the first three to compile meanwhile)
        helper = ranked_walk_in_helper(
            walk_kernels(ties)[0], [m.name for m in walked], max((m.k or 0 for m in walked), default=0),
            options=ranked.keywords(), keyed=ties in ("trec", "pyndeval"), n_threads=options.get("n_threads"))
    if aligned is None:
        without_judgments = queries_without_judgments(qrels)  # before the Qrels, which cannot hold them
        qrels = as_qrels(qrels, n_threads=options.get("n_threads"))
        aligned = align(qrels, run, complete=complete, max_retrieved=max_retrieved, judged_only=judged_only,
                        n_threads=options.get("n_threads"), without_judgments=without_judgments)
    n_queries = len(aligned.query_ids)
    if n_queries == 0:
        raise InputError("no query of the run has judgments in the qrels: nothing to evaluate")

    result = None
    if ranking:
        grade, score, sizes, judged, pooled = aligned.grade, aligned.score, aligned.sizes, aligned.judged, aligned.pooled
        # trec_eval's order inside a tie: document id descending; ndeval's: ascending (rank_lists' tie keys)
        doc_ids = _trec_tie_keys(aligned) if ties in ("trec", "pyndeval") else None
        empty_rows = np.flatnonzero(sizes == 0)
        if empty_rows.size:
            # a judged query missing from the run (complete=True): one unjudged placeholder row
            # scores exactly as an empty ranking (every metric's numerator is 0) and keeps R
            at = aligned.offsets[empty_rows]
            grade, score = np.insert(grade, at, 0), np.insert(score, at, 0.0)
            judged, pooled = np.insert(judged, at, False), np.insert(pooled, at, False)
            if doc_ids is not None:
                doc_ids = np.insert(doc_ids, at, "" if doc_ids.dtype.kind == "U" else 0)
            sizes = np.maximum(sizes, 1)

        def rank(names, grades, unretrieved, level):
            return rank_lists(grades, score, sizes, qid=None, metrics=names, options=ranked.at_level(level),
                              n_threads=options.get("n_threads"), doc_ids=doc_ids, unretrieved=unretrieved,
                              judged=judged, pooled=pooled, tie_keys=True, walk_helper=helper)

        if every_judged:
            result = _judged_relevant(ranking, rank, grade, judged, aligned.unretrieved)
            result.settings["relevance_level"] = relevance_level
        else:
            result = rank(ranking, grade, aligned.unretrieved, relevance_level)
        if empty_rows.size:  # the placeholder row was not retrieved
            for name, values in result.per_query.items():
                if parse_metrics(name)[0].base == "NumRet":
                    values[empty_rows] = np.where(np.isnan(values[empty_rows]), np.nan, 0.0)
                    result.mean[name] = aggregate(name, values)
        if helper is not None:  # done where the walk ran (rank_lists waited); else it compiled only other passes
            helper.wait()
    if diversity:
        parts, is_empty = diversity_columns(qrels, aligned, diversity, ties, relevance_level,
                                            options.get("n_threads"))
        n_empty = int(is_empty.sum())
        check_empty_policy(empty, n_empty, n_queries, "relevant document")
        fill = empty_value(empty)
        if result is None:
            result = Result(mean={}, per_query={}, n_queries=n_queries, n_empty=n_empty,
                            settings={"ties": ties, "empty": empty, "relevance_level": relevance_level})
        for name, values in parts.items():
            values[is_empty] = fill
            result.per_query[name] = values
            result.mean[name] = mean_of_kept(values)
        result.settings.update(diversity_settings(diversity.values()))
    if trec_only:
        keys = ascending_tie_keys(aligned, ties) if ties in ("trec", "pyndeval") else None
        values, is_empty = trec_only_columns(aligned, trec_only, ties, relevance_level, keys,
                                             options.get("n_threads"))
        empty_any = np.zeros(n_queries, dtype=bool)
        for flags in is_empty.values():
            empty_any |= flags
        check_empty_policy(empty, int(empty_any.sum()), n_queries, "relevant document")
        fill = empty_value(empty)
        if result is None:
            result = Result(mean={}, per_query={}, n_queries=n_queries, n_empty=int(empty_any.sum()),
                            settings={"ties": ties, "empty": empty, "relevance_level": relevance_level})
        for name, column in values.items():
            if name in is_empty:
                column[is_empty[name]] = fill
            result.per_query[name] = column
            result.mean[name] = mean_of_kept(column)
    assert result is not None  # every metric asked is a ranking, diversity or trec_eval-only one
    result.per_query = {name: result.per_query[name] for name in order}
    result.mean = {name: result.mean[name] for name in order}
    result.query_ids = aligned.query_ids.tolist()
    result.settings["complete"] = bool(complete)
    result.settings["max_retrieved"] = None if max_retrieved is None else int(max_retrieved)
    result.settings["judged_only"] = bool(judged_only)
    result.settings["judged_not_in_run"] = int(aligned.judged_not_in_run)
    result.settings["in_run_not_judged"] = int(aligned.in_run_not_judged)
    return result.keyed_as(asked_names(metrics))
