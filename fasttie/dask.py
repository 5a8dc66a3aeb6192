"""Exact evaluation beyond one machine, on Dask: shards -> tie statistics -> tree sum -> metrics.

Each task counts, for every query of a block, the database items of one shard by (Hamming
distance, grade) (:func:`fasttie.tie_stats`); Dask sums the counts with a tree reduction and the
metrics are finalized once. The counts are integers, so the result is bitwise identical to
:func:`fasttie.evaluate` on the concatenated data, for any chunking, any number of workers and
any scheduler (the default threaded one, ``distributed.LocalCluster``, a real cluster).

Ranked lists scale by query instead: :func:`rank_evaluate` evaluates a dask DataFrame one
partition at a time after grouping each query's rows into one partition, and
:func:`trec_evaluate` evaluates many TREC run files in parallel, one task per file.

Needs the optional extra ``fasttie[dask]`` (dask and distributed). Each task runs its kernels
on ``threads_per_task`` threads (default 1): a worker's threads are Dask's, never oversubscribed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy.typing as npt

from .codes import PackedCodes
from .conventions import HAMMING as _HAMMING_DOOR, takes_convention
from .errors import InputError
from .hamming import stats
from .hamming.dask_tasks import DaskShards, import_dask
from .hamming.engine import hashing_metrics, stable_depth
from .hamming.options import HammingOptions
from .lists.facade import rank_evaluate as evaluate_lists
from .result import Result
from .trec import Qrels, Run, evaluate as evaluate_run
from .trec.readers import as_qrels

__all__ = ["evaluate", "rank_evaluate", "tie_stats", "trec_evaluate"]


# mirrors fasttie.evaluate's signature on purpose (same inputs and options), plus the sharding options
@takes_convention(_HAMMING_DOOR)
def evaluate(
    queries: npt.ArrayLike | PackedCodes,
    database: Any,
    query_labels: npt.ArrayLike | None = None,
    db_labels: npt.ArrayLike | None = None,
    *,
    relevance: Any = None,
    metrics: str | Sequence[str] = ("AP",),
    ties: str = "average",
    ap_denominator: str = "retrieved",
    gain: str = "exp2",
    empty: str = "zero",
    curves: bool | Sequence[int] = False,
    spread: bool | str = False,
    packed: bool = False,
    n_bits: int | None = None,
    bitorder: str = "big",
    query_chunk: int | None = None,
    threads_per_task: int = 1,
    split_every: int = 8,
) -> Result:
    """:func:`fasttie.evaluate` over a database sharded along rows, on the active Dask scheduler.

    Parameters
    ----------
    queries : array_like or PackedCodes
        Query codes (numpy; a dask array is computed first: queries are small).
    database : dask array, numpy array or list of .npy paths
        Codes, (n_db, n_bits) ±1 / 0-1 / bool, or (n_db, n_bytes) uint8 bytes with ``packed=True``,
        chunked along rows (every row chunk is one shard; columns in one chunk). A list of
        ``.npy`` paths is one shard per file, each memory-mapped by the task that reads it.
        Any layout: shards of any sizes, empty ones (0 rows) included, which add nothing.
    query_labels, db_labels : array_like, optional
        As in :func:`fasttie.evaluate`; ``db_labels`` a dask or numpy array with one row per
        database row (rechunked to the database's shards), or a list of .npy paths matching
        ``database``.
    relevance : tuple or scipy.sparse matrix, optional
        Listed relevance with global database ids, as in :func:`fasttie.evaluate`.
    convention : str, optional
        "deephash" or "hashnet": one word for ``ties``, ``gain``, ``ap_denominator`` and ``empty``
        as :func:`fasttie.evaluate` takes it; options passed explicitly win.
    metrics, ties, ap_denominator, gain, empty, curves
        As in :func:`fasttie.evaluate`. ``ties="stable"`` takes a second pass: each shard's
        counts give every shard, per query and distance, the number of items ranked before it
        (a prefix sum over shards in order); each shard then ranks its relevant items, and
        their ranks (8 bytes each, per query) are sorted and finalized on the client.
    spread : bool or "range", default False
        The spread over tie orders as :func:`fasttie.evaluate` computes it (``tie_std``,
        ``tie_min``, ``tie_max`` and their means; with ``ties="average"``): from the summed
        counts, on the client (:meth:`TieStats.finalize`).
    packed, n_bits, bitorder
        Read the database shards as packed bytes (see :func:`fasttie.pack_codes`).
    query_chunk : int, optional
        Queries per block (default: all in one block); each block is reduced on its own.
    threads_per_task : int, default 1
        Kernel threads inside each task.
    split_every : int, default 8
        Fan-in of the tree reduction.

    Returns
    -------
    Result
        Bitwise identical to ``fasttie.evaluate`` on the concatenated database.

    Raises
    ------
    ValueError, TypeError
        As :func:`fasttie.evaluate`; a bad shard (another bit width, NaN, a wrong dtype) fails
        the whole call with an error that names the shard and its rows, before any result.
    """
    # refused options fail before any task runs
    parsed = hashing_metrics(metrics)
    options = HammingOptions.resolve(parsed, ties=ties, ap_denominator=ap_denominator, gain=gain, empty=empty,
                                     curves=curves, spread=spread)
    plan = DaskShards(queries, database, query_labels, db_labels, relevance, packed, n_bits, bitorder, query_chunk,
                      threads_per_task)
    if not options.stable:
        return stats.finalized(plan.summed(split_every), metrics, options)
    counted, ranked = plan.stable(stable_depth(parsed, options.curves, plan.n_db, plan.queries.n_bits))
    return stats.finalized(counted, metrics, options, ranked=ranked)


def tie_stats(
    queries: npt.ArrayLike | PackedCodes, database: Any, query_labels: npt.ArrayLike | None = None,
    db_labels: npt.ArrayLike | None = None, *, relevance: Any = None, packed: bool = False, n_bits: int | None = None,
    bitorder: str = "big", query_chunk: int | None = None, threads_per_task: int = 1, split_every: int = 8,
) -> stats.TieStats:
    """:func:`fasttie.tie_stats` of a sharded database, summed by a Dask tree reduction.

    Parameters and errors as in :func:`evaluate`.

    Returns
    -------
    TieStats
    """
    plan = DaskShards(queries, database, query_labels, db_labels, relevance, packed, n_bits, bitorder, query_chunk,
                      threads_per_task)
    return plan.summed(split_every)


def rank_evaluate(frame: Any, metrics: str | Sequence[str] = ("AP", "nDCG@10", "P@10", "RR"), *, query: str = "query_id",
                  label: str = "relevance", score: str = "score", doc: str | None = None, grouped: bool = False,
                  threads_per_task: int = 1, **options: Any) -> Result:
    """:func:`fasttie.rank_evaluate` of a (dask) DataFrame of scored rows, one partition at a time.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame or pandas.DataFrame
        One row per (query, document) with a query id, a grade and a score column.
    metrics : str or sequence of str
        As in :func:`fasttie.rank_evaluate`.
    query, label, score : str
        Column names (ir_measures / ranx style defaults).
    doc : str, optional
        Document id column, for ``ties="trec"`` (``doc_ids``).
    grouped : bool, default False
        True when every query's rows already sit in one partition; otherwise the frame is
        shuffled on ``query`` first. A shuffle moves rows, so ``ties="stable"`` ranks equal
        scores in the order of the frame's index.
    threads_per_task : int, default 1
    **options
        ``ties``, ``gain``, ``log_base``, ``ap_denominator``, ``empty``, ``relevance_level``.

    Returns
    -------
    pandas.DataFrame
        One row per query (index ``query``, sorted), one column per metric: the per-query
        values of ``fasttie.rank_evaluate(..., qid=frame[query])`` on the whole frame.
    """
    missing = [c for c in (query, label, score, doc) if c is not None and c not in frame.columns]
    if missing:
        raise InputError(f"frame has no column {missing[0]!r}; name the columns with query=, label=, score=, doc=")
    return _by_query(frame, query, grouped, _rank_partition, (metrics, query, label, score, doc, threads_per_task,
                                                               options), "frame has no rows: there is nothing to rank")


def _by_query(frame, query, grouped, function, args, nothing):
    """``function(partition, *args)`` (a per-query DataFrame, or None) on every partition once each
    query's rows share one, concatenated and sorted by query."""
    dask, _ = import_dask()
    import dask.dataframe as dd
    import pandas as pd

    if isinstance(frame, pd.DataFrame):
        frame = dd.from_pandas(frame, npartitions=1)
    if not grouped:
        frame = frame.shuffle(on=query)
    task = dask.delayed(function, pure=True)
    pieces = [p for p in dask.compute(*[task(part, *args) for part in frame.to_delayed()]) if p is not None]
    if not pieces:
        raise InputError(nothing)
    out = pd.concat(pieces)
    if out.index.has_duplicates:
        raise InputError(f"a query's rows span several partitions; leave grouped=False to shuffle on {query!r}")
    return out.sort_index()


def _rank_partition(part, metrics, query, label, score, doc, threads, options):

    if len(part) == 0:
        return None
    if options.get("ties") == "stable":  # equal scores in index order, whatever a shuffle did
        part = part.sort_index(kind="stable")
    result = evaluate_lists(part[label].to_numpy(), part[score].to_numpy(), qid=part[query].to_numpy(),
                            metrics=metrics, doc_ids=None if doc is None else part[doc].to_numpy(),
                            n_threads=threads, **options)
    return result.to_frame()


def trec_evaluate(qrels: Any, runs: Any, metrics: str | Sequence[str], *, threads_per_task: int = 1,
                  query: str = "query_id", doc: str = "doc_id", score: str = "score", grouped: bool = False,
                  **options: Any) -> Any:
    """:func:`fasttie.trec.evaluate` of many run files against one qrels, one Dask task per run,
    or of one run held in a (dask) DataFrame, one task per partition.

    Parameters
    ----------
    qrels : str, os.PathLike, fasttie.trec.Qrels or dict
        The judgments (a file is read by each task, or once for a DataFrame run).
    runs : str, sequence of paths, or DataFrame
        A glob (``"runs/*.txt"``, sorted by name) or a list of run files; or one run as a dask
        (or pandas) DataFrame with ``query``, ``doc`` and ``score`` columns, shuffled so each
        query's rows share a partition unless ``grouped=True``. trec_eval's ``complete``
        (``-c``) is for files only.
    metrics : str or sequence of str
        As in :func:`fasttie.trec.evaluate`.
    threads_per_task : int, default 1
    **options
        As in :func:`fasttie.trec.evaluate` (``ties``, ``relevance_level``, ``complete``, ...).

    Returns
    -------
    pandas.DataFrame
        Index (``run``: the file name without folder, ``query``), one column per metric: each
        run's per-query values of ``fasttie.trec.evaluate``; for a DataFrame run, index
        ``query`` (sorted).
    """
    dask, _ = import_dask()
    import glob

    import pandas as pd

    if hasattr(runs, "columns"):
        return _trec_frame(qrels, runs, metrics, query, doc, score, grouped, threads_per_task, options)

    paths = sorted(glob.glob(runs)) if isinstance(runs, str) else [os.fspath(p) for p in runs]
    if not paths:
        raise InputError(f"runs: no run file matches {runs!r}")
    task = dask.delayed(_trec_run, pure=True)
    frames = dask.compute(*[task(os.fspath(qrels), path, metrics, threads_per_task, options) for path in paths])
    names = [os.path.basename(p) for p in paths]
    return pd.concat(frames, keys=names, names=["run", "query"])


def _trec_run(qrels, path, metrics, threads, options):

    return evaluate_run(qrels, path, metrics, n_threads=threads, **options).to_frame()


def _trec_frame(qrels, frame, metrics, query, doc, score, grouped, threads, options):
    """One run as a DataFrame: per partition, the partition's queries against their judgments."""
    if options.get("complete"):
        raise InputError("complete=True (trec_eval -c) needs the whole run: evaluate run files, not a DataFrame")
    missing = [c for c in (query, doc, score) if c not in frame.columns]
    if missing:
        raise InputError(f"runs has no column {missing[0]!r}; name the columns with query=, doc=, score=")
    judgments = as_qrels(qrels).to_dict()
    return _by_query(frame, query, grouped, _trec_partition, (judgments, metrics, query, doc, score, threads, options),
                     "runs has no judged query: there is nothing to evaluate")


def _trec_partition(part, judgments, metrics, query, doc, score, threads, options):

    qids = {str(q) for q in part[query].unique()} & set(judgments)
    if not qids:
        return None
    run = Run.from_frame(part[[query, doc, score]].set_axis(["query_id", "doc_id", "score"], axis=1))
    qrels = Qrels.from_dict({q: judgments[q] for q in sorted(qids)})
    return evaluate_run(qrels, run, metrics, n_threads=threads, **options).to_frame()
