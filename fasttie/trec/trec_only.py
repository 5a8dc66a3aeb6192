"""trec_eval's own measures (:mod:`fasttie.metrics.trec_eval_only`) of a joined run, for
:func:`fasttie.trec.evaluate`: Rprec_mult, utility, binG, G, ndcg_rel, Rndcg and unj.

Each kernel of :mod:`fasttie._kernels.trec_gain` is called only when one of its measures is
asked for, so asking for one compiles none of the others.
"""

from __future__ import annotations

import numpy as np

from .._kernels.modes import TIE_CODES
from .._kernels.trec_gain import (
    bing_rankings, counts_at_rankings, g_rankings, ndcg_rel_rankings, rndcg_rankings,
)
from ..errors import InputError
from ..parallel import resolve_threads, run_blocks
from ..finalize.values import gains_of, read_only
from .join import Aligned

__all__ = ["trec_only_columns"]

# measures whose value is a fact of the whole set of documents (no empty query), and those
# empty without a relevant document (R = 0) or without a positive gain among the judged ones
_ALWAYS_DEFINED = ("utility", "unj")
_EMPTY_WITHOUT_GAIN = ("G", "ndcg_rel")


def trec_only_columns(aligned: Aligned, metrics: dict, ties: str, relevance_level, keys, n_threads):
    """Per-query values of trec_eval's own measures, and where each query is empty.

    Parameters
    ----------
    aligned : Aligned
        The run joined with its judgments (queries of ``complete=True`` without a row have size 0).
    metrics : dict of str to TrecOnlyMetric
        Keyed by canonical name.
    ties : str
        "trec", "pyndeval", "stable", "average", "optimistic" or "pessimistic"; G has no exact
        average over tie orders and is refused under "average".
    relevance_level : number
        Grades >= this are relevant (binG, Rprec_mult, Rndcg's R).
    keys : ndarray of int64 or None
        Tie-break keys, ascending, for the fixed orders "trec" and "pyndeval"; None otherwise.
    n_threads : int or None

    Returns
    -------
    values : dict of str to ndarray of float64
        trec_eval's values (0 for an empty query), keyed as ``metrics``.
    empty : dict of str to ndarray of bool
        The queries empty for each measure (none for utility and unj).
    """
    average = [m.name for m in metrics.values() if m.base == "G"] if ties == "average" else []
    if average:
        raise InputError(f"{', '.join(average)}: no exact average over tie orders (G's discount depends on the "
                         "gain sum of every prefix of a tie); choose ties='trec', 'stable', 'optimistic' or "
                         "'pessimistic'")
    n_queries = len(aligned.query_ids)
    offsets = aligned.offsets.astype(np.int64)
    grade = np.ascontiguousarray(aligned.grade, dtype=np.float64)
    score = np.ascontiguousarray(aligned.score, dtype=np.float64)
    judged = np.ascontiguousarray(aligned.judged, dtype=np.bool_)
    keys = np.zeros(0, dtype=np.int64) if keys is None else np.ascontiguousarray(keys, dtype=np.int64)
    mode = TIE_CODES[ties]
    relevant = judged & (grade >= relevance_level)
    missed = [np.asarray(g, dtype=np.float64) for g in aligned.unretrieved]
    query = np.repeat(np.arange(n_queries), aligned.sizes)
    hits = np.bincount(query[relevant], minlength=n_queries).astype(np.float64)
    n_relevant = hits + np.array([(g >= relevance_level).sum() for g in missed], dtype=np.float64)
    threads = resolve_threads(n_threads, 16 * len(grade))
    common = (offsets, score)

    def run(kernel, *arrays, out_shape=(n_queries,)):
        arrays = [read_only(a) if isinstance(a, np.ndarray) else a for a in arrays]  # one signature each
        out = np.empty(out_shape)
        run_blocks(lambda lo, hi: kernel(*arrays, out, lo, hi), n_queries, threads)
        return out

    values, empty = {}, {}
    ideal_of = {}  # gain table -> (row gains, ideal offsets, ideal gains)
    for name, metric in metrics.items():
        if metric.base == "utility":
            a, b, c, d = metric.coefficients
            retrieved = aligned.sizes.astype(np.float64)
            values[name] = a * hits + b * (retrieved - hits) + c * (n_relevant - hits) + d * (
                hits - retrieved - n_relevant)
        elif metric.base in ("Rprec_mult", "unj"):
            if metric.base == "Rprec_mult":  # trec_eval's cutoff: (long) (x R + 0.9)
                cutoffs = (metric.x * n_relevant + 0.9).astype(np.int64)  # truncation, as C's cast
                flags = relevant
            else:
                cutoffs = np.full(n_queries, metric.k, dtype=np.int64)
                flags = ~judged
            counts = run(counts_at_rankings, *common, flags, keys, grade, mode, cutoffs.reshape(-1, 1),
                         out_shape=(n_queries, 1))[:, 0]
            values[name] = np.divide(counts, cutoffs, out=np.zeros(n_queries), where=cutoffs > 0)
        elif metric.base == "binG":
            sums = run(bing_rankings, *common, relevant, keys, grade, mode)
            values[name] = np.divide(sums, n_relevant, out=np.zeros(n_queries), where=n_relevant > 0)
        else:
            if metric.gains not in ideal_of:
                ideal_of[metric.gains] = _gains_and_ideal(grade, judged, missed, offsets, metric.gain_table())
            gains, ideal_offsets, ideal = ideal_of[metric.gains]
            if ties == "average" and metric.base == "ndcg_rel" and (gains < 0).any():
                raise InputError(f"{name}: trec_eval counts its sum only when positive, which has no exact average "
                                 "over tie orders with a negative gain; choose a fixed tie order or gains >= 0")
            kernel = {"G": g_rankings, "ndcg_rel": ndcg_rel_rankings, "Rndcg": rndcg_rankings}[metric.base]
            values[name] = run(kernel, *common, gains, keys, grade, ideal_offsets, ideal, mode)
            if metric.base == "Rndcg":
                values[name][n_relevant == 0] = 0.0  # trec_eval returns before its mean
        if metric.base in _EMPTY_WITHOUT_GAIN:  # the ideal is sorted: its first gain tells
            _, ideal_offsets, ideal = ideal_of[metric.gains]
            first = np.append(ideal, 0.0)[ideal_offsets[:-1]]  # 0.0: a query without judged documents
            empty[name] = (ideal_offsets[:-1] == ideal_offsets[1:]) | ~(first > 0)
        elif metric.base not in _ALWAYS_DEFINED:
            empty[name] = n_relevant == 0
    return values, empty


def _gains_and_ideal(grade, judged, missed, offsets, table):
    """trec_eval's gain of each retrieved row (0 when unjudged), and per query the gains of every
    judged document, retrieved or not, sorted descending (its ideal ranking)."""
    def gain(grades):
        return gains_of(grades, "linear" if table is None else table)

    gains = np.where(judged, gain(grade), 0.0)
    ideals = [np.sort(np.concatenate([gains[lo:hi][judged[lo:hi]], gain(extra)]))[::-1]
              for lo, hi, extra in zip(offsets[:-1], offsets[1:], missed)]
    ideal_offsets = np.concatenate([[0], np.cumsum([len(i) for i in ideals])]).astype(np.int64)
    ideal = np.ascontiguousarray(np.concatenate(ideals) if ideals else np.zeros(0))
    return gains, ideal_offsets, ideal
