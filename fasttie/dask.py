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

import numpy as np
import numpy.typing as npt

from .codes import PackedCodes, pack_codes
from .conventions import HAMMING as _HAMMING_DOOR, takes_convention
from .errors import InputError
from .hamming.engine import hashing_metrics, result_from_counts, shard_ranks, stable_depth
from .hamming.stable import InProcess, gathered_ranks, plan_ranks
from .hamming import stats, streamed
from .hamming.streamed import listed_rows
from .lists.facade import rank_evaluate as evaluate_lists
from .relevance import make_relevance
from .result import Result
from .finalize.spread import check_spread
from .trec import Qrels, Run, evaluate as evaluate_run
from .trec.readers import as_qrels

__all__ = ["evaluate", "rank_evaluate", "tie_stats", "trec_evaluate"]


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError:
        raise ImportError("fasttie.dask needs dask: pip install 'fasttie[dask]'") from None
    return dask, da


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
    # a refused spread fails before any task runs
    check_spread(spread, hashing_metrics(metrics), ties=ties, ap_denominator=ap_denominator, empty=empty)
    plan = _Plan(queries, database, query_labels, db_labels, relevance, packed, n_bits, bitorder, query_chunk,
                 threads_per_task)
    if ties != "stable":
        return plan.summed(split_every).finalize(metrics, ties=ties, ap_denominator=ap_denominator, gain=gain,
                                                 empty=empty, curves=curves, spread=spread)

    n_db = plan.n_db
    counted, ranked = plan.stable(stable_depth(hashing_metrics(metrics), curves, n_db, plan.queries.n_bits))
    return result_from_counts(counted, metrics, ties="stable", ap_denominator=ap_denominator, gain=gain, empty=empty,
                              curves=curves, n_threads=None, ranked=ranked)


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
    plan = _Plan(queries, database, query_labels, db_labels, relevance, packed, n_bits, bitorder, query_chunk,
                 threads_per_task)
    return plan.summed(split_every)


class _Plan:
    """Validated inputs and the (query block, shard) tasks of one sharded evaluation."""
    def __init__(self, queries, database, query_labels, db_labels, relevance, packed, n_bits, bitorder, query_chunk,
                 threads_per_task):

        self.queries = pack_codes(_computed(queries), name="queries")
        shards = _shards(database, "database")
        label_shards = _label_shards(db_labels, shards)
        self.query_labels = None if query_labels is None else np.asarray(_computed(query_labels))
        starts = np.concatenate([[0], np.cumsum([n for _, n in shards])]).astype(np.int64)
        n_queries, n_db = self.queries.n, int(starts[-1])
        if n_db == 0:
            raise InputError("database is empty (every shard has 0 rows); need at least one code")
        # an empty shard (a chunk filtered to nothing, an empty .npy) holds no item and adds zero
        # counts: left out, it leaves every sum and every later shard's rank base as they are
        self.shards = [(index, int(starts[index]), block, rows, labels)
                       for index, ((block, rows), labels) in enumerate(zip(shards, label_shards)) if rows > 0]
        self.n_db = n_db
        if relevance is not None and (query_labels is not None or db_labels is not None):
            raise InputError("give either {query_labels} and {db_labels}, or {relevance}=, not both",
                             argument=("query_labels", "db_labels", "relevance"))
        self.listed = _listed(relevance, n_queries, n_db) if relevance is not None else None
        if relevance is None and (query_labels is None or db_labels is None):
            raise InputError(
                "{relevance} is undefined: pass {query_labels} and {db_labels} (class ids or multi-hot), "
                "or {relevance}=(indptr, indices[, grades])", argument=("query_labels", "db_labels", "relevance"))
        if self.query_labels is not None and len(self.query_labels) != n_queries:
            raise InputError(f"{{query_labels}} has {len(self.query_labels)} rows but there are {n_queries} queries",
                             argument="query_labels")
        step = n_queries if query_chunk is None else int(query_chunk)
        if step < 1:
            raise InputError(f"query_chunk must be >= 1, got {query_chunk!r}")
        self.blocks = [(q0, min(q0 + step, n_queries)) for q0 in range(0, n_queries, step)]
        self.options = {"packed": packed, "n_bits": n_bits, "bitorder": bitorder, "threads": threads_per_task}

    def _tasks(self, function, q0, q1, extra=None):
        """One delayed call per shard for queries q0..q1-1."""
        dask, _ = _dask()
        task = dask.delayed(function, pure=True)
        words = self.queries.words[q0:q1]
        labels = None if self.query_labels is None else self.query_labels[q0:q1]
        out = []
        for position, (index, lo, shard, rows, shard_labels) in enumerate(self.shards):
            local = None if self.listed is None else listed_rows(self.listed, q0, q1, lo, lo + rows)
            args = (index, lo, shard, shard_labels, words, self.queries.n_bits, labels, local, self.options)
            out.append(task(*args) if extra is None else task(*args, *extra[position]))
        return out

    def summed(self, split_every):
        """TieStats of every query over the whole database: tree sums per query block."""
        dask, _ = _dask()

        merge_task = dask.delayed(stats.merge, pure=True)
        roots = []
        for q0, q1 in self.blocks:
            nodes = self._tasks(_shard_stats, q0, q1)
            while len(nodes) > 1:
                nodes = [merge_task(nodes[i : i + split_every]) for i in range(0, len(nodes), split_every)]
            roots.append(nodes[0])
        return stats.stack(dask.compute(*roots))

    def stable(self, depth):
        """(TieStats, (indptr, ranks, grades)): counts, then the global rank in database index
        order of every relevant item, sorted per query; with ``depth`` (the ranks the metrics look
        at, see :func:`fasttie.hamming.engine.rank_depth`) below the database size, of those at
        the distances that reach it only (the bounded pass of fasttie.evaluate)."""
        dask, _ = _dask()

        per_block = dask.compute(*[self._tasks(_shard_stats, q0, q1) for q0, q1 in self.blocks])
        rank_tasks, totals = [], []
        for (q0, q1), shard_stats in zip(self.blocks, per_block):
            total = stats.merge(shard_stats)
            totals.append(total)
            plan = plan_ranks(_DRIVER, [part.counts for part in shard_stats], total.counts, depth, self.n_db,
                              self.queries.n_bits)
            extra = [(first, n_relevant, plan.limits) for first, n_relevant in zip(plan.firsts, plan.n_relevant)]
            rank_tasks.append(self._tasks(_shard_ranks, q0, q1, extra))
        pieces = dask.compute(*rank_tasks)  # every block's shards ranked at once
        blocks = [gathered_ranks(_DRIVER, block_pieces, q1 - q0) for (q0, q1), block_pieces in zip(self.blocks, pieces)]
        return stats.stack(totals), _stacked(blocks)


# the shards' counts and ranks come back to the driver, which sums them
_DRIVER = InProcess()


def _shard_ranks(index, lo, codes, labels, query_words, n_bits, query_labels, listed, options, first, n_relevant,
                 limits):
    """Global stable ranks of one shard's relevant items for a block of queries (a Dask task)."""
    database = _shard_codes(index, lo, _load(codes), options)
    queries = PackedCodes(np.ascontiguousarray(query_words), n_bits)
    return shard_ranks(queries, database, query_labels, None if labels is None else _load(labels), listed, first,
                       n_relevant, options["threads"], limits)


def _stacked(blocks):
    """One (indptr, ranks, grades) of all queries from those of consecutive blocks of queries."""
    sizes = np.concatenate([np.diff(indptr) for indptr, _, _ in blocks])
    indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return indptr, np.concatenate([r for _, r, _ in blocks]), np.concatenate([g for _, _, g in blocks])


def _computed(array):
    return array.compute() if hasattr(array, "compute") and hasattr(array, "dask") else array


def _shards(database, name):
    """[(delayed or array block, rows)] along rows, from a dask array, a numpy array or paths."""
    _, da = _dask()
    if isinstance(database, (list, tuple)) and database and all(isinstance(p, (str, os.PathLike)) for p in database):
        shards = []
        for path in database:
            try:
                shape = np.load(path, mmap_mode="r").shape
            except (OSError, ValueError) as error:
                raise InputError(f"{name} shard {path}: cannot read it as a .npy file ({error})") from None
            shards.append((os.fspath(path), int(shape[0])))
        return shards
    if not isinstance(database, da.Array):
        database = np.asarray(database)
        if database.ndim != 2:
            raise InputError(f"{name} must be 2-D (n_codes, {{n_bits}}), got shape {database.shape}", argument="n_bits")
        database = da.from_array(database, chunks=(max(1, database.shape[0]), database.shape[1]))
    if database.ndim != 2:
        raise InputError(f"{name} must be 2-D (n_codes, {{n_bits}}), got shape {database.shape}", argument="n_bits")
    if len(database.chunks[1]) != 1:
        database = database.rechunk({1: -1})  # one shard holds whole codes
    blocks = database.to_delayed().ravel()
    return list(zip(blocks, (int(n) for n in database.chunks[0])))


def _label_shards(db_labels, shards):
    """db_labels cut like the database shards (None where there are no labels)."""
    if db_labels is None:
        return [None] * len(shards)
    _, da = _dask()
    if isinstance(db_labels, (list, tuple)) and db_labels and all(isinstance(p, (str, os.PathLike)) for p in db_labels):
        if len(db_labels) != len(shards):
            raise InputError(f"{{db_labels}} lists {len(db_labels)} files but the database has {len(shards)} shards",
                             argument="db_labels")
        return [os.fspath(p) for p in db_labels]
    if not isinstance(db_labels, da.Array):
        db_labels = da.from_array(np.asarray(db_labels), chunks=-1)
    rows = tuple(n for _, n in shards)
    if db_labels.shape[0] != sum(rows):
        raise InputError(f"{{db_labels}} has {db_labels.shape[0]} rows but the database has {sum(rows)} codes",
                         argument="db_labels")
    chunks = (rows,) + tuple((n,) for n in db_labels.shape[1:])
    return list(db_labels.rechunk(chunks).to_delayed().ravel())


def _listed(relevance, n_queries, n_db):
    """Validated global CSR (indptr, indices, grades), ids sorted within each query."""
    spec = make_relevance(None, None, relevance, n_queries, n_db)
    return spec.indptr, spec.indices, spec.grades


def _load(block):
    return np.load(block, mmap_mode="r") if isinstance(block, str) else block


def _shard_codes(index, lo, codes, options):
    """A shard's codes packed, errors naming the shard and its rows."""
    try:
        if options["packed"]:
            return pack_codes(codes, packed=True, n_bits=options["n_bits"], bitorder=options["bitorder"],
                              name="database")
        return pack_codes(codes, n_bits=options["n_bits"], name="database")
    except (ValueError, TypeError) as error:
        raise type(error)(f"database shard {index} (rows {lo}..{lo + len(codes) - 1}): {error}") from None


def _shard_stats(index, lo, codes, labels, query_words, n_bits, query_labels, listed, options):
    """TieStats of one shard for one block of queries (runs in a Dask task)."""
    codes = _load(codes)
    database = _shard_codes(index, lo, codes, options)
    labels = None if labels is None else _load(labels)
    try:
        queries = PackedCodes(np.ascontiguousarray(query_words), n_bits)
        # tile by tile, as fasttie.evaluate reads a memory-mapped database: a shard's temporaries
        # (class sort, labels as int32) stay a tile's
        parts = []
        for start in range(0, database.n, streamed.TILE_ROWS):
            stop = min(start + streamed.TILE_ROWS, database.n)
            parts.append(stats.tie_stats(
                queries, database[start:stop], query_labels, None if labels is None else labels[start:stop],
                relevance=None if listed is None else listed_rows(listed, 0, queries.n, start, stop),
                n_threads=options["threads"]))
        return stats.merge(parts)
    except (ValueError, TypeError) as error:
        raise type(error)(f"database shard {index} (rows {lo}..{lo + len(codes) - 1}): {error}") from None


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
    dask, _ = _dask()
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
    dask, _ = _dask()
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
