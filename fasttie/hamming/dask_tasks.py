"""The Hamming door's database shards as Dask tasks: counts per (query block, shard), a tree sum,
and for ``ties="stable"`` the ranks of each shard's relevant items (:mod:`fasttie.dask`'s faces).

A shard is a block of a dask array, a numpy array cut in one block, or a ``.npy`` file (read
memory-mapped in its task); its labels are cut the same way. Each task counts its shard tile by
tile (:data:`fasttie.hamming.streamed.TILE_ROWS`), as :func:`fasttie.evaluate` reads a
memory-mapped database. The stable pass over parts (:mod:`fasttie.hamming.stable`) runs with the
driver as its transport (:class:`~fasttie.hamming.stable.InProcess`): the shards' counts and
ranks come back to it. An error in a shard names the shard and its rows.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..codes import PackedCodes, pack_codes
from ..errors import InputError
from ..relevance import make_relevance
from . import stats, streamed
from .engine import shard_ranks
from .stable import InProcess, gathered_ranks, plan_ranks
from .streamed import listed_rows

__all__ = ["DaskShards", "import_dask"]


def import_dask() -> tuple[Any, Any]:
    """(dask, dask.array), or ImportError naming the extra that installs them."""
    try:
        import dask
        import dask.array as da
    except ImportError:
        raise ImportError("fasttie.dask needs dask: pip install 'fasttie[dask]'") from None
    return dask, da


class DaskShards:
    """Validated inputs and the (query block, shard) tasks of one sharded evaluation."""
    def __init__(self, queries: Any, database: Any, query_labels: Any, db_labels: Any, relevance: Any, packed: bool,
                 n_bits: int | None, bitorder: str, query_chunk: int | None, threads_per_task: int) -> None:
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
        self.threads_per_task = threads_per_task

    def _tasks(self, function, q0, q1, extra=None):
        """One delayed call per shard for queries q0..q1-1."""
        dask, _ = import_dask()
        task = dask.delayed(function, pure=True)
        words = self.queries.words[q0:q1]
        labels = None if self.query_labels is None else self.query_labels[q0:q1]
        out = []
        for position, (index, lo, shard, rows, shard_labels) in enumerate(self.shards):
            local = None if self.listed is None else listed_rows(self.listed, q0, q1, lo, lo + rows)
            args = (index, lo, shard, shard_labels, words, self.queries.n_bits, labels, local, self.options)
            out.append(task(*args) if extra is None else task(*args, *extra[position]))
        return out

    def summed(self, split_every: int) -> stats.TieStats:
        """TieStats of every query over the whole database: tree sums per query block."""
        dask, _ = import_dask()

        merge_task = dask.delayed(stats.merge, pure=True)
        roots = []
        for q0, q1 in self.blocks:
            nodes = self._tasks(_shard_stats, q0, q1)
            while len(nodes) > 1:
                nodes = [merge_task(nodes[i : i + split_every]) for i in range(0, len(nodes), split_every)]
            roots.append(nodes[0])
        return stats.stack(dask.compute(*roots))

    def stable(self, depth: int) -> tuple[stats.TieStats, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(TieStats, (indptr, ranks, grades)): counts, then the global rank in database index
        order of every relevant item, sorted per query; with ``depth`` (the ranks the metrics look
        at, see :func:`fasttie.hamming.engine.rank_depth`) below the database size, of those at
        the distances that reach it only (the bounded pass of fasttie.evaluate)."""
        dask, _ = import_dask()

        per_block = dask.compute(*[self._tasks(_shard_stats, q0, q1) for q0, q1 in self.blocks])
        rank_tasks, totals, limits = [], [], []
        for (q0, q1), shard_stats in zip(self.blocks, per_block):
            total = stats.merge(shard_stats)
            totals.append(total)
            plan = plan_ranks(_DRIVER, [part.counts for part in shard_stats], total.counts, depth, self.n_db,
                              self.queries.n_bits)
            limits.append(plan.limits)
            extra = [(first, n_relevant, plan.limits) for first, n_relevant in zip(plan.firsts, plan.n_relevant)]
            rank_tasks.append(self._tasks(_shard_ranks, q0, q1, extra))
        pieces = dask.compute(*rank_tasks)  # every block's shards ranked at once
        blocks = [gathered_ranks(_DRIVER, block_pieces, total.counts, block_limits, n_threads=self.threads_per_task)
                  for total, block_limits, block_pieces in zip(totals, limits, pieces)]
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
    _, da = import_dask()
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
    _, da = import_dask()
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
