"""A database read tile by tile: :func:`fasttie.evaluate` of memory-mapped codes and of shards.

A database that lives in files (a memory-mapped ``.npy`` packed without a copy, or a
:class:`~fasttie.codes.ShardedCodes` of several) is never loaded whole: for each block of
queries the database is read in tiles of at most ``2**23`` rows, each tile is counted as a
database of its own (:func:`fasttie.hamming.engine.counts_of`: its class sort, its labels as
int32, all tile-sized), and the tiles' counts by (distance, grade) add up. The counts are
integers, so the sum is the counts of the whole database and the metrics, finalized by the same
code, are bitwise those of the in-memory pass. Memory beyond the inputs: one tile's temporaries
and one block's counts. ``ties="stable"`` also keeps each tile's counts of the block and, as
:mod:`fasttie.dask` does, the ranks of the relevant items it ranks (every one for metrics
without a cutoff), for sub-blocks of queries whose ranks fit in _RANK_BUDGET (each reads the
database once more; a query whose own ranks pass it is a sub-block alone).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from ..codes import ShardedCodes
from ..errors import InputError
from ..metrics.families import asked_names
from ..parallel import resolve_threads
from ..relevance import make_relevance
from .engine import HIST_BUDGET, counts_of, result_from_blocks, shard_ranks, stable_depth, wants_progress
from .spreads import spread_callbacks, with_spreads
from .stable import InProcess, gathered_ranks, plan_ranks, rank_limits, relevant_ranked

__all__ = ["TILE_ROWS", "evaluate_streamed", "listed_rows"]

TILE_ROWS = 1 << 23  # database rows per tile: 64 MB of one-word codes, a few times that of temporaries
_RANK_BUDGET = 256 << 20  # bytes of ranks (ties="stable") per sub-block of queries


def evaluate_streamed(query_codes, database: ShardedCodes, query_labels, db_labels, relevance, parsed, metrics,
                      options, *, n_threads, progress):
    """:func:`fasttie.evaluate` of a database read tile by tile under ``options`` (a
    :class:`~fasttie.hamming.options.HammingOptions`: the facade has checked them and packed the
    queries); see the module's docstring."""
    n_queries, n_db, n_bits = query_codes.n, database.n, database.n_bits
    if query_codes.n_bits != n_bits:
        raise InputError(f"queries have {query_codes.n_bits} bits but database has {n_bits}; pack both with the "
                         "same {n_bits}", argument="n_bits")
    labels_of = _label_tiles(db_labels, database)
    listed = None
    if relevance is not None:
        if query_labels is not None or db_labels is not None:
            raise InputError("give either {query_labels} and {db_labels}, or {relevance}=, not both",
                             argument=("query_labels", "db_labels", "relevance"))
        spec = make_relevance(None, None, relevance, n_queries, n_db)  # validated, ids sorted per query
        listed, kind, n_grades = (spec.indptr, spec.indices, spec.grades), spec.kind, spec.n_grades
    else:  # the queries alone decide the grades of labels: check them against a first item
        shard = int(np.flatnonzero(np.diff(database.starts))[0])
        start = int(database.starts[shard])
        spec = make_relevance(query_labels, None if labels_of is None else labels_of(shard, start, start + 1), None,
                              n_queries, 1)
        kind, n_grades = spec.kind, spec.n_grades
    query_labels = None if query_labels is None else np.asarray(query_labels)
    tile_rows = TILE_ROWS
    tiles = [(shard, start, min(start + tile_rows, int(database.starts[shard + 1])))
             for shard in range(len(database.shards))
             for start in range(int(database.starts[shard]), int(database.starts[shard + 1]), tile_rows)]
    # queries per block: each block reads the database once, its counts within HIST_BUDGET (with
    # ties="stable", every tile's counts, for the rank bases)
    stable = options.stable
    per_query = (n_bits + 1) * n_grades * 8 * (len(tiles) + 1 if stable else 1)
    chunk = _block_size(n_queries, per_query)
    depth = stable_depth(parsed, options.curves, n_db, n_bits)
    threads = resolve_threads(n_threads, n_queries * n_db)
    bar = None
    if wants_progress(progress, n_queries, n_db, database.n_words, threads):
        from tqdm import tqdm

        bar = tqdm(total=n_queries * n_db * (2 if stable else 1), unit="pair", unit_scale=True,
                   desc="fasttie", file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
    on_counts, spread_of, extremes_of = spread_callbacks(options, parsed, n_grades, n_db, n_bits, kind)
    read = _Reader(database, labels_of, query_codes, query_labels, listed, n_threads, bar)

    def blocks():
        for q0 in range(0, n_queries, chunk):
            q1 = min(q0 + chunk, n_queries)
            hist = np.zeros((q1 - q0, n_bits + 1, n_grades), dtype=np.int64)
            per_tile = [] if stable else None
            for tile in tiles:
                counts = read.counts(q0, q1, tile)
                hist[:, :, : counts.shape[2]] += counts
                if per_tile is not None:
                    per_tile.append(counts)
            if on_counts is not None:
                on_counts(q0, q1, hist, n_threads)
            if per_tile is None:
                yield hist, None
                continue
            for a, b in _rank_blocks(hist, depth, n_db, n_bits):  # the ranks of a sub-block within _RANK_BUDGET
                yield hist[a:b], _ranks(read, q0 + a, q0 + b, tiles, hist[a:b], [c[a:b] for c in per_tile], depth,
                                        n_db, n_bits)

    try:
        result = result_from_blocks(blocks(), n_queries, n_db, n_bits, n_grades, kind, metrics, options,
                                    n_threads=n_threads)
    finally:
        if bar is not None:
            bar.close()
    if not options.spread:
        return result
    return with_spreads(result, parsed, spread_of, extremes_of).keyed_as(asked_names(metrics, diversity=False))


class _Reader:
    """One tile's part of a block of queries: its counts, and with ``ties="stable"`` its ranks."""

    def __init__(self, database, labels_of, query_codes, query_labels, listed, n_threads, bar):
        self.database, self.labels_of, self.query_codes = database, labels_of, query_codes
        self.query_labels, self.listed, self.n_threads, self.bar = query_labels, listed, n_threads, bar
        self.started, self.pairs, self.bytes = time.perf_counter(), 0, 0

    def inputs(self, q0, q1, tile):
        shard, lo, hi = tile
        codes = self.database.tile(shard, lo, hi)
        labels = None if self.labels_of is None else self.labels_of(shard, lo, hi)
        local = None if self.listed is None else listed_rows(self.listed, q0, q1, lo, hi)
        query_labels = None if self.query_labels is None else self.query_labels[q0:q1]
        return self.query_codes[q0:q1], codes, query_labels, labels, local

    def counts(self, q0, q1, tile):
        queries, codes, query_labels, labels, local = self.inputs(q0, q1, tile)
        try:
            counts, _, _ = counts_of(queries, codes, query_labels, labels, relevance=local, n_threads=self.n_threads)
        except (ValueError, TypeError) as error:
            raise type(error)(f"database rows {tile[1]}..{tile[2] - 1}: {error}") from None
        self.tick(q1 - q0, tile, codes.words.nbytes)
        return counts

    def ranks(self, q0, q1, tile, first, n_relevant, limits):
        queries, codes, query_labels, labels, local = self.inputs(q0, q1, tile)
        out = shard_ranks(queries, codes, query_labels, labels, local, first, n_relevant, self.n_threads, limits)
        self.tick(q1 - q0, tile, codes.words.nbytes)
        return out

    def tick(self, n_queries, tile, n_bytes):
        if self.bar is None:
            return
        self.pairs += n_queries * (tile[2] - tile[1])
        self.bytes += n_bytes
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self.bar.set_postfix_str(f"{self.bytes / elapsed / 1e6:.0f} MB/s of codes", refresh=False)
        self.bar.update(n_queries * (tile[2] - tile[1]))


def _rank_blocks(hist, depth, n_db, n_bits):
    """[(a, b)]: consecutive sub-blocks of a block's queries whose relevant items to rank (16
    bytes each) fit in _RANK_BUDGET, a query alone where its own do not; each sub-block reads
    the database once more."""
    limits = rank_limits(hist.sum(axis=2), depth, n_db, n_bits)
    n_relevant = relevant_ranked(hist, limits)
    blocks, start, held = [], 0, 0
    for i, n in enumerate(n_relevant.tolist()):
        if i > start and held + n > _RANK_BUDGET // 16:
            blocks.append((start, i))
            start, held = i, 0
        held += n
    return blocks + [(start, len(n_relevant))]


def _ranks(read, q0, q1, tiles, hist, per_tile, depth, n_db, n_bits):
    """(indptr, ranks, grades) of the block's relevant items in database index order: the tiles
    are the parts of a stable pass (:mod:`fasttie.hamming.stable`), all held here."""
    plan = plan_ranks(_TILES, per_tile, hist, depth, n_db, n_bits)
    pieces = [read.ranks(q0, q1, tile, first, n_relevant, plan.limits)
              for tile, first, n_relevant in zip(tiles, plan.firsts, plan.n_relevant)]
    return gathered_ranks(_TILES, pieces, hist, plan.limits, n_threads=read.n_threads)


# the tiles are read one after another by this process: their sums are plain sums
_TILES = InProcess()


def _block_size(n_queries, bytes_per_query):
    """Queries per block: all of them where their counts fit in HIST_BUDGET, else as many as fit."""
    return max(1, min(n_queries, HIST_BUDGET // bytes_per_query))


def _label_tiles(db_labels, database):
    """``labels_of(shard, lo, hi)``: the database labels of global rows lo..hi-1 (within one shard),
    from one array of n_db rows (memory-mapped or not) or a list of per-shard arrays or .npy paths;
    None without labels."""
    if db_labels is None:
        return None
    if isinstance(db_labels, (list, tuple)) and db_labels and all(
            isinstance(x, (str, os.PathLike, np.ndarray)) for x in db_labels):
        if len(db_labels) != len(database.shards):
            raise InputError(f"{{db_labels}} lists {len(db_labels)} arrays but the database has "
                             f"{len(database.shards)} shards", argument="db_labels")
        parts = [np.load(x, mmap_mode="r", allow_pickle=False) if isinstance(x, (str, os.PathLike)) else x
                 for x in db_labels]
        for index, part in enumerate(parts):
            if len(part) != len(database.shards[index]):
                raise InputError(f"{{db_labels}} shard {index} has {len(part)} rows but the database shard has "
                                 f"{len(database.shards[index])}", argument="db_labels")
        starts = database.starts
        return lambda shard, lo, hi: parts[shard][lo - starts[shard]: hi - starts[shard]]
    labels = db_labels if isinstance(db_labels, np.ndarray) else np.asarray(db_labels)
    if labels.ndim == 0 or len(labels) != database.n:
        raise InputError(f"{{db_labels}} has {labels.shape[0] if labels.ndim else 0} rows but the database has "
                         f"{database.n} codes", argument="db_labels")
    return lambda shard, lo, hi: labels[lo:hi]


def listed_rows(listed, q0, q1, lo, hi):
    """Queries q0..q1-1 of the global CSR (ids sorted per query), restricted to database rows
    lo..hi-1, ids made local."""
    indptr, indices, grades = listed
    keep_ptr, keep_ids, keep_grades = [0], [], []
    for q in range(q0, q1):
        ids = indices[indptr[q] : indptr[q + 1]]
        a, b = np.searchsorted(ids, [lo, hi])
        keep_ids.append(ids[a:b] - lo)
        keep_grades.append(grades[indptr[q] + a : indptr[q] + b])
        keep_ptr.append(keep_ptr[-1] + (b - a))
    return (np.array(keep_ptr, dtype=np.int64), np.concatenate(keep_ids).astype(np.int64),
            np.concatenate(keep_grades).astype(np.int64))
