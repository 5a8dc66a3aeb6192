"""Diversity evaluation: ndeval's measures of ranked lists judged per subtopic (TREC Web track).

Every measure of ndeval 4.5 (the Web track's tool; pyndeval and ir_measures wrap it), with its
definitions, at any cutoff, and tie-aware. For a query with S subtopics that have a relevant
judged document, the alpha-gain of the document at rank r is
g_r = sum over its subtopics s of (1 - alpha)^(documents with s ranked above it), and:

====================  =====================================================================
``alpha_nDCG@k``      sum_{r<=k} g_r / log2(1 + r), over the same sum of ndeval's greedy ideal
``alpha_DCG@k``       the same sum over its "ideal ideal": S (1 - alpha)^(r-1) at every rank
``nERR_IA@k``         sum_{r<=k} g_r / r, over the same sum of the greedy ideal
``ERR_IA@k``          the same sum over its "ideal ideal" (ndeval's intent-aware ERR: each
                      subtopic's ERR with probability of relevance alpha, averaged)
``nNRBP``             sum_r g_r beta^(r-1) over the whole run, over that of the greedy ideal
``NRBP``              (1 - (1 - alpha) beta) / S * sum_r g_r beta^(r-1)
``P_IA@k``            relevant (document, subtopic) pairs in the top k / (k S)
``AP_IA``             mean over the S subtopics of AP (ndeval's MAP-IA)
``StRecall@k``        subtopics with a relevant document in the top k / S
====================  =====================================================================

Defaults alpha = 0.5, beta = 0.5 (ndeval's); names take ir_measures' parameters
(``alpha_nDCG(alpha=0.3)@20``, ``NRBP(alpha=0.5,beta=0.8)``) and ndeval's column names
(``alpha-nDCG@20``, ``ERR-IA@20``, ``MAP-IA``, ``P-IA@10``, ``strec@10``).

The facade validates everything and packs each document's subtopics into uint64 bit masks;
``_kernels/diversity_measures.py`` walks each query's run (fixed order) or
``_kernels/diversity_ties.py`` its ties (``ties="average"``), each with ndeval's greedy ideal
(``_kernels/alpha_ndcg.py``), parallel over queries; this module divides.

Public: :func:`diversity_evaluate` (any set of measures, a :class:`fasttie.Result`) and
:func:`alpha_ndcg` (alpha-nDCG as an array). Package-internal layer, shared with
:func:`fasttie.trec.evaluate`: :func:`diversity_values` (validated inputs -> per-query values
before the empty-query policy) and :func:`alpha_dcg` (run and ideal alpha-DCG). The measures'
names are read by :mod:`fasttie.metrics.diversity_names` (the one metric grammar; its names stay
importable from here), the inputs validated and packed by :mod:`fasttie.diversity.inputs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

from .._kernels.diversity_measures import (
    AP_SUM, AVERAGE, COVERED, FULL_IDEAL, FULL_RUN, IDEAL, IDEAL_DCG, IDEAL_ERR, IDEAL_NRBP, N_CUT, N_SCALARS,
    N_SUBTOPICS, PAIRS, RUN_DCG, RUN_ERR, RUN_NRBP, WANT_AP, diversity_queries, query_sums,
)
from .._kernels.diversity_ties import average_queries
from ..finalize.cold_start import callee_addresses
from .._kernels.radix_sort import sort_keys_into
from .inputs import TIE_RULES, DiversityInputs, check_cutoffs, empty_value, is_scalar_k, prepare_inputs
from ..errors import InputError
from ..metrics.families import asked_names
from ..metrics.diversity_names import (
    ALPHA_FREE, DEFAULT_ALPHA, DEFAULT_BETA, TAKES_BETA, DiversityMetric, check_alpha, diversity_metric_name,
    diversity_settings, is_diversity_metric, parse_diversity_metric, parse_diversity_metrics,
)
from ..parallel import resolve_threads, run_blocks
from ..result import Result
from ..finalize.values import read_only
from ..validation import mean_of_kept

# the public functions, then names of the grammar and of the input checks that stay importable
# from here, where they were before they moved (fasttie.metrics, fasttie.diversity.inputs)
__all__ = [
    "alpha_ndcg", "diversity_evaluate",
    "TIE_RULES", "diversity_settings", "empty_value", "is_diversity_metric", "parse_diversity_metric",
]


def diversity_evaluate(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    metrics: str | Sequence[str] = ("alpha_nDCG@20", "ERR_IA@20", "StRecall@20"),
    ties: str = "average",
    empty: str = "zero",
    doc_ids: npt.ArrayLike | None = None,
    n_threads: int | None = None,
) -> Result:
    """ndeval's diversity measures of ranked lists judged per subtopic, tie-aware.

    Parameters
    ----------
    y_true : array_like of 0/1 (bool, int or float), shape (n, n_subtopics)
        One row per document of each query (judged, retrieved or both): ``y_true[i, s] = 1``
        when document i is relevant to subtopic s. Rows of the queries are consecutive; a
        query's subtopics are the columns with a 1 among its rows.
    y_pred : array_like of float, shape (n,)
        Run scores, ranked descending. ``-inf`` marks a judged document the run does not
        retrieve: it counts for the ideal and the AP denominators only. NaN and +inf are errors.
    group : array_like of int, optional
        Sizes of consecutive queries (LightGBM / XGBoost style), summing to n; None = one query.
    metrics : str or sequence of str
        Names of the module table: ``alpha_nDCG@k``, ``alpha_DCG@k``, ``ERR_IA@k``,
        ``nERR_IA@k``, ``NRBP``, ``nNRBP``, ``P_IA@k``, ``AP_IA``, ``StRecall@k``; list cutoffs
        as ``@[5,10,20]``; alpha and beta as ``alpha_nDCG(alpha=0.3)@10``,
        ``NRBP(alpha=0.5,beta=0.8)``. ndeval's spellings (``ERR-IA@20``, ``MAP-IA``,
        ``strec@10``) are accepted.
    ties : {"average", "stable", "trec", "pyndeval"}, default "average"
        "average": the exact mean of every measure over all orders inside ties (docs/ties.md,
        section 8). Fixed orders of equal scores: "stable" keeps input order; "trec" puts the
        larger document id first (trec_eval, ``ndeval -traditional``); "pyndeval" the smaller
        (pyndeval and ir_measures); these two need ``doc_ids``.
    empty : float or {"zero", "skip", "one", "error"}, default "zero"
        Value of every measure for a query without any relevant subtopic: 0 (ndeval, except
        nNRBP, which ndeval leaves 0/0), NaN ("skip", left out of the means), 1, or raise.
    doc_ids : array_like of str or int, shape (n,), optional
        Document ids: the greedy ideal's ties go to the greatest (ndeval's ``strcmp``), and
        they order the "trec" / "pyndeval" ties. Without them, the row position. A document
        may appear only once per query.
    n_threads : int, optional
        Threads for this call (see :mod:`fasttie.parallel`); results do not depend on it.

    Returns
    -------
    Result
        ``per_query[name]`` float64 arrays of shape (n_queries,) and their means, under the
        canonical names (``ERR-IA@20`` -> ``ERR_IA@20``, ``MAP-IA`` -> ``AP_IA``);
        ``n_empty`` counts the queries without a relevant subtopic; ``settings`` holds ties,
        empty and the alpha / beta values used.

    Raises
    ------
    TypeError
        Non-numeric inputs, metric names that are not strings, a bad ``empty`` / ``ties``.
    ValueError
        An unknown or malformed metric name, y_true not 2-D 0/1, y_pred not 1-D of length n,
        NaN or +inf scores, group sizes not >= 1 or not summing to n, doc_ids of the wrong
        length, a document twice in one query, ties="trec"/"pyndeval" without doc_ids, or an
        empty query with ``empty="error"``.

    Notes
    -----
    Conventions of ndeval 4.5: a judgment with rel > 0 is relevant (grades count as 1), the
    normalised measures divide by the greedy ideal over every judged document (retrieved or
    not; ties of gain to the greatest id; a run can score above 1), NRBP, nNRBP and AP_IA use
    the whole run. Unlike ndeval, cutoffs are not limited to 20, and alpha_DCG@1 and
    ERR_IA@1 are divided by their ideal-ideal value S like every other cutoff (ndeval's loop
    starts its division at rank 2; it prints only @5, @10, @20, but pyndeval and ir_measures
    at @1 report S times fasttie's value). P_IA@k divides by k also past the end of the list.

    Examples
    --------
    Two subtopics; documents b and c tie:

    >>> import numpy as np
    >>> from fasttie.diversity import diversity_evaluate
    >>> y_true = np.array([[1, 0], [1, 0], [0, 1]])
    >>> res = diversity_evaluate(y_true, [2.0, 1.0, 1.0], metrics=["alpha_nDCG@2", "StRecall@2", "P_IA@2"])
    >>> {name: round(value, 4) for name, value in res.mean.items()}
    {'alpha_nDCG@2': 0.9033, 'StRecall@2': 0.75, 'P_IA@2': 0.5}
    >>> res = diversity_evaluate(y_true, [2.0, 1.0, 1.0], metrics=["StRecall@2"], ties="stable")
    >>> res.mean
    {'StRecall@2': 0.5}
    """
    parsed = parse_diversity_metrics(metrics)
    fill = empty_value(empty)
    inputs = prepare_inputs(y_true, y_pred, group, doc_ids, ties)
    values, is_empty = _compute(inputs, list(parsed.values()), ties, n_threads)
    n_empty = int(is_empty.sum())
    if fill is None and n_empty:
        raise InputError(f"{n_empty} of {len(is_empty)} queries have no relevant subtopic; "
                         f"choose empty='zero', 'skip' or 'one'")
    per_query = {}
    for name, column in values.items():
        column[is_empty] = fill
        per_query[name] = column
    settings = {"ties": ties, "empty": empty}
    settings.update(diversity_settings(parsed.values()))
    return Result(mean={name: mean_of_kept(v) for name, v in per_query.items()}, per_query=per_query,
                  n_queries=len(is_empty), n_empty=n_empty, settings=settings).keyed_as(asked_names(metrics))


def alpha_ndcg(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    k: int | Sequence[int] = 10,
    alpha: float = DEFAULT_ALPHA,
    empty: float | str = 0.0,
    doc_ids: npt.ArrayLike | None = None,
    ties: str = "stable",
    n_threads: int | None = None,
) -> np.ndarray:
    """alpha-nDCG@k of ranked lists judged per subtopic (novelty and diversity).

    The gain of the document at rank r is the sum over its subtopics s of
    ``(1 - alpha) ** c_s``, where ``c_s`` counts the documents ranked above it that have
    subtopic s; alpha-DCG@k sums gain / log2(1 + r) over r <= k, and alpha-nDCG@k divides it
    by the alpha-DCG@k of the greedy ideal ordering of all judged documents of the query
    (ndeval's definition, the one TREC Web track results use).

    Parameters
    ----------
    y_true : array_like of 0/1 (bool, int or float), shape (n, n_subtopics)
        One row per document of each query (judged, retrieved or both): ``y_true[i, s] = 1``
        when document i is relevant to subtopic s. Rows of the queries are consecutive.
    y_pred : array_like of float, shape (n,)
        Run scores, ranked descending. ``-inf`` marks a judged document the run does not
        retrieve: it counts for the ideal only. NaN and +inf are errors.
    group : array_like of int, optional
        Sizes of consecutive queries (LightGBM / XGBoost style), summing to n; None = one query.
    k : int or sequence of int, default 10
        Cutoff(s) >= 1. A sequence gives one output column per cutoff, in the order given.
    alpha : float, default 0.5
        Redundancy penalty in [0, 1]; 0 gives the graded nDCG with grade = number of subtopics.
    empty : float or {"zero", "skip", "one", "error"}, default 0.0
        Value of a query without any relevant subtopic (its ideal alpha-DCG is 0): a number
        (ndeval reports 0.0), "skip" = NaN, or "error" to raise ``ValueError``.
    doc_ids : array_like of str or int, shape (n,), optional
        Document ids. They decide the greedy's ties (the greatest id is picked first, as
        ndeval's ``strcmp``) and the "trec" / "pyndeval" run orders; a document may appear
        only once per query. Without them a document's id is its row position, so the greedy
        picks the later row of a tie.
    ties : {"stable", "trec", "pyndeval", "average"}, default "stable"
        Order of equal scores in the run: "stable" keeps input order; "trec" puts the larger
        document id first (trec_eval, ``ndeval -traditional``); "pyndeval" the smaller
        (pyndeval and ir_measures sort by score, then docno ascending); these two need
        ``doc_ids``. "average": the exact mean over every order inside ties (docs/ties.md,
        section 8).
    n_threads : int, optional
        Threads for this call (see :mod:`fasttie.parallel`); results do not depend on it.

    Returns
    -------
    ndarray of float64, shape (n_queries,) for an int k, (n_queries, len(k)) for a sequence

    Raises
    ------
    TypeError
        Non-numeric inputs, a non-integer k, a non-numeric alpha, a bad ``empty`` / ``ties``.
    ValueError
        y_true not 2-D 0/1, y_pred not 1-D of length n, NaN or +inf scores, alpha outside
        [0, 1], k < 1, group sizes not >= 1 or not summing to n, doc_ids of the wrong length,
        a document twice in one query, ties="trec"/"pyndeval" without doc_ids, or an empty
        query with ``empty="error"``.

    Notes
    -----
    The ideal is ndeval's greedy: at each rank, the document with the largest gain given those
    already placed; ties go to the greatest document id. Finding the best ordering is
    NP-hard and the greedy is not always optimal, so a run can score above 1 (as in ndeval);
    values are not clipped. Gains are added in ascending subtopic (column) order, as ndeval
    does, so ties between equal float64 gains resolve as ndeval's for any alpha (pyndeval
    numbers subtopics by first appearance in its qrels instead: at an alpha whose powers are
    not exact in binary, e.g. 0.3, a near-tie can then fall the other way). Discount
    1/log2(1 + r) at rank r (1-based). Past the end of a list, alpha-DCG@k equals its value at
    the list's length. Cost per query: O(n x k x words) for the greedy, k picks only.

    Examples
    --------
    Two subtopics; the run repeats subtopic 0 before covering subtopic 1:

    >>> import numpy as np, fasttie as ft
    >>> y_true = np.array([[1, 0], [1, 0], [0, 1]])
    >>> ft.alpha_ndcg(y_true, [3.0, 2.0, 1.0], k=[1, 2, 3]).round(4)
    array([[1.    , 0.8066, 0.9652]])

    Documents "b" and "c" tie: input order ranks "b" second, trec's order "c" (larger id):

    >>> ft.alpha_ndcg(y_true, [2.0, 1.0, 1.0], k=2).round(4)
    array([0.8066])
    >>> ft.alpha_ndcg(y_true, [2.0, 1.0, 1.0], k=2, ties="trec", doc_ids=["a", "b", "c"]).round(4)
    array([1.])

    The average over both orders of the tie: (0.8066 + 1) / 2

    >>> ft.alpha_ndcg(y_true, [2.0, 1.0, 1.0], k=2, ties="average").round(4)
    array([0.9033])
    """
    ks, columns = check_cutoffs(k)
    alpha = check_alpha(alpha)
    metrics = [DiversityMetric(diversity_metric_name("alpha_nDCG", int(v), alpha, DEFAULT_BETA), "alpha_nDCG",
                               int(v), alpha, DEFAULT_BETA) for v in ks]
    fill = empty_value(empty)
    inputs = prepare_inputs(y_true, y_pred, group, doc_ids, ties)
    values, is_empty = _compute(inputs, metrics, ties, n_threads)
    if fill is None and is_empty.any():
        raise InputError(f"{int(is_empty.sum())} of {len(is_empty)} queries have no relevant subtopic; "
                         f"choose empty=0.0, 1.0 or 'skip'")
    table = np.stack([values[m.name] for m in metrics], axis=1)
    table[is_empty] = fill
    table = table[:, columns]
    return table[:, 0] if is_scalar_k(k) else table


def _run_kernel(inputs: DiversityInputs, cutoffs, alpha, betas, options, n_threads):
    """cut (n_queries, N_CUT, n_cutoffs), scalars (n_queries, N_SCALARS), nrbp (n_queries, 2, n_betas)."""
    sizes = inputs.sizes
    n_queries = len(sizes)
    depth = int(min(cutoffs[-1], sizes.max()))
    discount = read_only(1.0 / np.log2(np.arange(2, depth + 2, dtype=np.float64)))
    cutoffs = read_only(np.asarray(cutoffs, dtype=np.int64))
    betas = read_only(np.asarray(betas, dtype=np.float64))
    cut = np.empty((n_queries, N_CUT, len(cutoffs)))
    scalars = np.empty((n_queries, N_SCALARS))
    nrbp = np.empty((n_queries, 2, len(betas)))
    work = (int(sizes.sum()) if options & (FULL_RUN | FULL_IDEAL) else int(min(cutoffs[-1], 64))) * int(sizes.sum())
    kernel = average_queries if options & AVERAGE else diversity_queries  # the tie walk compiles only if asked
    arguments = (inputs.masks, inputs.scores, inputs.run_keys, inputs.ideal_keys, inputs.offsets, cutoffs, alpha, betas,
                 discount, options, cut, scalars, nrbp)
    # the sums and the sort through their addresses: on a cold cache a helper compiles them while
    # this process compiles the driver
    sums, sort = callee_addresses([query_sums, sort_keys_into], n_threads,
                                  lambda: kernel(*arguments, 0, 0, np.uint64(0), np.uint64(0)))
    run_blocks(lambda lo, hi: kernel(*arguments, lo, hi, sums, sort), n_queries,
               resolve_threads(n_threads, min(work, 1 << 40)))
    return cut, scalars, nrbp


def _ideal_ideal(k, alpha, discount):
    """sum_{r<=k} (1 - alpha)^(r-1) x discount(r): ndeval's "ideal ideal" for one subtopic."""
    ranks = np.arange(1, k + 1, dtype=np.float64)
    weights = (1.0 - alpha) ** (ranks - 1)
    return float(np.sum(weights * (1.0 / np.log2(ranks + 1) if discount == "log" else 1.0 / ranks)))


def _compute(inputs: DiversityInputs, metrics, ties, n_threads):
    """Per-query values of parsed metrics ({name: float64 array}, empty queries at 0) and the
    boolean mask of queries without a relevant subtopic."""
    n_queries = len(inputs.sizes)
    values = {}
    n_subtopics = None
    by_alpha: dict[float, list[DiversityMetric]] = {}
    for metric in metrics:  # P_IA, AP_IA, StRecall do not read alpha: they join any pass
        if metric.base not in ALPHA_FREE:
            by_alpha.setdefault(metric.alpha, []).append(metric)
    free = [m for m in metrics if m.base in ALPHA_FREE]
    if free:
        by_alpha.setdefault(next(iter(by_alpha), DEFAULT_ALPHA), []).extend(free)
    for alpha, group in by_alpha.items():
        bases = {m.base for m in group}
        cutoffs = sorted({m.k for m in group if m.k is not None}) or [1]
        betas = sorted({m.beta for m in group if m.base in TAKES_BETA}) or [DEFAULT_BETA]
        options = AVERAGE if ties == "average" else 0
        if bases & {"NRBP", "nNRBP", "AP_IA"}:
            options |= FULL_RUN
        if bases & {"alpha_nDCG", "nERR_IA", "nNRBP"}:
            options |= IDEAL
        if "nNRBP" in bases:
            options |= FULL_IDEAL
        if "AP_IA" in bases:
            options |= WANT_AP
        cut, scalars, nrbp = _run_kernel(inputs, cutoffs, alpha, betas, options, n_threads)
        n_subtopics = scalars[:, N_SUBTOPICS]
        has = n_subtopics > 0
        for m in group:
            c = cutoffs.index(m.k) if m.k is not None else 0
            b = betas.index(m.beta) if m.base in TAKES_BETA else 0
            if m.base == "alpha_nDCG":
                num, den = cut[:, RUN_DCG, c], cut[:, IDEAL_DCG, c]
            elif m.base == "alpha_DCG":
                num, den = cut[:, RUN_DCG, c], n_subtopics * _ideal_ideal(m.k, alpha, "log")
            elif m.base == "nERR_IA":
                num, den = cut[:, RUN_ERR, c], cut[:, IDEAL_ERR, c]
            elif m.base == "ERR_IA":
                num, den = cut[:, RUN_ERR, c], n_subtopics * _ideal_ideal(m.k, alpha, "harmonic")
            elif m.base == "nNRBP":
                num, den = nrbp[:, RUN_NRBP, b], nrbp[:, IDEAL_NRBP, b]
            elif m.base == "NRBP":
                num, den = nrbp[:, RUN_NRBP, b] * (1.0 - (1.0 - alpha) * m.beta), n_subtopics
            elif m.base == "P_IA":
                num, den = cut[:, PAIRS, c], n_subtopics * float(cast(int, m.k))  # P_IA has a cutoff
            elif m.base == "AP_IA":
                num, den = scalars[:, AP_SUM], n_subtopics
            else:  # StRecall
                num, den = cut[:, COVERED, c], n_subtopics
            column = np.zeros(n_queries)
            np.divide(num, den, out=column, where=has & (den > 0))
            values[m.name] = column
    return {m.name: values[m.name] for m in metrics}, n_subtopics == 0


def diversity_values(y_true: npt.ArrayLike, y_pred: npt.ArrayLike, group: npt.ArrayLike | None = None, *,
                     metrics: Sequence[DiversityMetric], doc_ids: npt.ArrayLike | None = None, ties: str = "stable",
                     n_threads: int | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per-query values of parsed diversity metrics, before the empty-query policy.

    Parameters as in :func:`diversity_evaluate`, with ``metrics`` a sequence of
    :class:`DiversityMetric` (from :func:`parse_diversity_metric`).

    Returns
    -------
    values : dict of str to ndarray of float64, shape (n_queries,)
        Keyed by canonical name; 0 for a query without any relevant subtopic.
    is_empty : ndarray of bool, shape (n_queries,)
        The queries without any relevant subtopic.
    """
    inputs = prepare_inputs(y_true, y_pred, group, doc_ids, ties)
    return _compute(inputs, list(metrics), ties, n_threads)


def alpha_dcg(y_true: npt.ArrayLike, y_pred: npt.ArrayLike, group: npt.ArrayLike | None = None, *,
              k: int | Sequence[int] = 10, alpha: float = DEFAULT_ALPHA, doc_ids: npt.ArrayLike | None = None,
              ties: str = "stable", n_threads: int | None = None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run and ideal alpha-DCG (unnormalised) at the sorted unique cutoffs, after validating
    every input.

    Parameters and raises as in :func:`alpha_ndcg` (without ``empty``): alpha-nDCG is
    ``dcg / idcg`` where ``idcg > 0``; a query with ``idcg == 0`` has no relevant subtopic.

    Returns
    -------
    dcg, idcg : ndarray of float64, shape (n_queries, n_unique_cutoffs)
        alpha-DCG of the run (its expectation under ties="average") and of the greedy ideal.
    sizes : ndarray of int64, shape (n_queries,)
        Rows per query.
    columns : ndarray of int, shape (len(k),)
        The column of each requested cutoff, in the order asked.
    """
    cutoffs, columns = check_cutoffs(k)
    alpha = check_alpha(alpha)
    inputs = prepare_inputs(y_true, y_pred, group, doc_ids, ties)
    options = IDEAL | (AVERAGE if ties == "average" else 0)
    cut, _, _ = _run_kernel(inputs, cutoffs, alpha, [DEFAULT_BETA], options, n_threads)
    return cut[:, RUN_DCG].copy(), cut[:, IDEAL_DCG].copy(), inputs.sizes, columns

