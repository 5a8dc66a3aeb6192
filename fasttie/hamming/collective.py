"""A database sharded over the ranks of a collective group: each rank holds all the queries and
one shard, and every rank returns bitwise :func:`fasttie.evaluate` of the whole database.

Each rank counts its shard's items by (Hamming distance, grade) per query
(:func:`fasttie.tie_stats`); one all-reduce of those int64 counts gives every rank the counts of
the whole database, and every rank finalizes the same metrics. ``ties="stable"`` also needs each
relevant item's rank in database order: the stable pass over parts (:mod:`fasttie.hamming.stable`)
runs over a transport of the group's collectives (each rank one part). No code, score or
distance leaves its rank; what moves is O(n_queries x (n_bits + 1) x grades) integers.

The group is any object with four collectives on int64 numpy arrays (``rank``, ``size``,
``all_gather(vector)``, ``all_reduce(array, op)``, ``reduce_sum_to(array, target)``):
:mod:`fasttie.torch` gives torch.distributed's; an MPI communicator would be another such object.
Every rank calls the collectives in the same order, and an input error on one rank is raised on
every rank (its own error there, one naming it elsewhere), never a hang.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .. import _device
from ..codes import PackedCodes, pack_codes
from ..errors import InputError, InputTypeError
from ..metrics import Metric
from ..relevance import make_relevance
from ..result import Result
from . import gpu, stats
from .engine import shard_ranks, stable_depth
from .options import HammingOptions
from .stable import gathered_ranks, plan_ranks
from .streamed import listed_rows

__all__ = ["Collectives", "evaluate_on_ranks"]

_KINDS = ("class", "multihot", "listed")
_NO_OFFSET, _START, _INDICES = 0, 1, 2  # how db_offset places a shard's rows
# the vector every rank shares first: its failure flag and what the ranks must agree on
_FAILED, _N_BITS, _N_QUERIES, _N_ROWS, _PLACEMENT, _START_AT, _N_DB, _KIND, _MAX_INDEX = range(9)


class Collectives(Protocol):
    """A group's collectives on int64 numpy arrays, called in the same order on every rank."""

    rank: int  # this rank's index in the group
    size: int  # the group's number of ranks

    def all_gather(self, vector: np.ndarray) -> np.ndarray:
        """(size, len) array: every rank's vector (the same length on every rank)."""

    def all_reduce(self, array: np.ndarray, op: str, dtype: Any = np.int64) -> np.ndarray:
        """The elementwise ``op`` ("sum", "max", "min") of every rank's array, on every rank."""

    def reduce_sum_to(self, array: np.ndarray, target: int) -> np.ndarray | None:
        """The sum over ranks of ``array`` on rank ``target``; None elsewhere."""


def evaluate_on_ranks(comm: Collectives, queries: Any, db_shard: Any, query_labels: Any, db_labels: Any,
                      relevance: Any, metrics: Any, parsed: list[Metric], options: HammingOptions, *,
                      n_threads: int | None, db_offset: Any, n_db: int | None) -> Result:
    """:func:`fasttie.torch.evaluate_distributed` over ``comm`` (its inputs and options; the
    options checked, ``parsed`` the metrics asked): see the module's docstring."""
    # 1. local inputs, then one tiny all_gather: what every rank must agree on, and any failure
    info = np.full(9, -1, dtype=np.int64)
    local, failure = None, None
    try:
        local = _Shard(queries, db_shard, query_labels, db_labels, relevance, db_offset)
        info[[_FAILED, _N_BITS, _N_QUERIES, _N_ROWS, _PLACEMENT, _START_AT, _KIND, _MAX_INDEX]] = [
            0, local.n_bits, local.queries.n, local.n_rows, local.placement, local.start, local.kind, local.max_index]
        info[_N_DB] = -1 if n_db is None else _count(n_db, "n_db")
    except (ValueError, TypeError) as error:
        info[_FAILED], failure = 1, error
    table = comm.all_gather(info)
    _raise_failures(table[:, _FAILED], failure, comm.rank, "input")
    assert local is not None  # a rank whose inputs failed has raised, on every rank
    _check_agreement(table)
    plan = _Coverage(table, comm, local)

    # 2. counts of this rank's rows, then one all_reduce of the grade axis width and of the counts
    counts, failure = None, None
    try:
        counts = local.counts(plan, n_threads)
    except (ValueError, TypeError) as error:
        failure = error
    flags = comm.all_reduce(np.array([failure is not None, 0 if counts is None else counts.shape[2]]), "max")
    if flags[0]:
        failed = comm.all_gather(np.array([failure is not None], dtype=np.int64))[:, 0]
        _raise_failures(failed, failure, comm.rank, "database shard")
    assert counts is not None  # a rank whose counts failed has raised, on every rank
    transport = _RankTransport(comm, plan, int(flags[1]))
    total = stats.TieStats(transport.sum([counts]), local.n_bits, _KINDS[local.kind])
    if not options.stable:
        return stats.finalized(total, metrics, options, n_threads=n_threads)

    # 3. stable: the ranks before this shard, this shard's relevant items ranked, all ranks gathered
    if plan.n_db == 0:
        raise InputError("the database is empty (every shard has 0 rows); need at least one code")
    depth = stable_depth(parsed, options.curves, plan.n_db, local.n_bits)
    mine = plan_ranks(transport, [counts], total.counts, depth, plan.n_db, local.n_bits)
    piece = local.ranks(plan, mine.firsts[0], mine.n_relevant[0], mine.limits, n_threads)
    ranked = gathered_ranks(transport, [piece], total.counts, mine.limits, n_threads=n_threads)
    return stats.finalized(total, metrics, options, n_threads=n_threads, ranked=ranked)


class _RankTransport:
    """The stable pass's transport (:class:`fasttie.hamming.stable.Transport`) over
    torch.distributed: each rank holds one part, its rows."""

    def __init__(self, comm, coverage, n_grades):
        self.comm, self.coverage, self.n_grades = comm, coverage, n_grades

    def sum(self, parts):
        (counts,) = parts
        return self.comm.all_reduce(stats.padded(counts, self.n_grades), "sum")

    def before(self, parts):
        (items,) = parts
        return [self.coverage.earlier_items(items)]

    def gather(self, pieces):
        """Every rank's piece: one all_gather of the sizes, one of the pieces padded to the largest."""
        ((indptr, ranks, grades),) = pieces
        comm, n_queries = self.comm, len(indptr) - 1
        sizes = comm.all_gather(np.array([len(ranks)]))[:, 0]
        width = int(sizes.max())
        payload = np.zeros(n_queries + 2 * width, dtype=np.int64)
        payload[:n_queries] = np.diff(indptr)
        payload[n_queries : n_queries + len(ranks)] = ranks
        payload[n_queries + width : n_queries + width + len(grades)] = grades
        out = []
        for row, size in zip(comm.all_gather(payload), sizes):
            row_ptr = np.concatenate([[0], np.cumsum(row[:n_queries])]).astype(np.int64)
            out.append((row_ptr, row[n_queries : n_queries + size], row[n_queries + width : n_queries + width + size]))
        return out


def _raise_failures(failed, own_error, rank, what):
    """Raise on every rank when any failed: its own error on a failing rank, else one naming them."""
    bad = [int(r) for r in np.flatnonzero(failed)]
    if not bad:
        return
    if own_error:
        raise own_error
    raise InputError(f"evaluate_distributed: rank(s) {bad} rejected their {what} (see the error on those ranks); "
                     f"rank {rank} stops with them")


def _check_agreement(table):
    """The same ValueError on every rank where the ranks disagree on what must be shared."""
    for column, name, fix in (
        (_N_BITS, "bits per code", "pack every shard and the queries with the same n_bits"),
        (_N_QUERIES, "queries", "pass all the queries on every rank"),
        (_KIND, "relevance kind (0 class ids, 1 multi-hot, 2 listed)", "pass the same kind of labels everywhere"),
        (_PLACEMENT, "db_offset kind (0 none, 1 int, 2 indices)", "pass db_offset on every rank or on none"),
        (_N_DB, "n_db (-1: not given)", "pass the same n_db on every rank"),
    ):
        values = table[:, column]
        if (values != values[0]).any():
            per_rank = ", ".join(f"rank {r}: {int(v)}" for r, v in enumerate(values))
            raise InputError(f"evaluate_distributed: the ranks disagree on the {name} ({per_rank}); {fix}")


def _count(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputTypeError(f"{name} must be an int >= 0, got {value!r}")
    if value < 0:
        raise InputError(f"{name} must be >= 0, got {value}")
    return int(value)


def _host(x):
    """numpy from a torch tensor (CPU, or copied from its device) or anything array-like; None stays."""
    if x is None or isinstance(x, (np.ndarray, PackedCodes)):
        return x
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _on_cuda(x):
    return not isinstance(x, np.ndarray) and getattr(x, "is_cuda", False)


class _Shard:
    """One rank's validated inputs."""

    def __init__(self, queries, db_shard, query_labels, db_labels, relevance, db_offset):
        # codes already on a GPU are counted there (the GPU door); every other input comes to the host
        self.on_gpu = _on_cuda(db_shard) and _on_cuda(queries)
        if isinstance(db_shard, PackedCodes):
            n_rows = db_shard.n
        else:
            n_rows = int(db_shard.shape[0]) if hasattr(db_shard, "shape") else len(db_shard)
        self.n_rows = n_rows
        if self.on_gpu:
            self.queries = pack_codes(queries.detach(), name="queries")
        else:
            self.queries = pack_codes(_host(queries), name="queries").to_host()
        self.n_bits = self.queries.n_bits
        self.database = None
        if n_rows:
            shard = db_shard.detach() if self.on_gpu else _host(db_shard)
            self.database = pack_codes(shard, name="database")
            if not self.on_gpu:
                self.database = self.database.to_host()
            if self.database.n_bits != self.n_bits:
                raise InputError(f"queries have {self.n_bits} bits but this rank's db_shard has "
                                 f"{self.database.n_bits}; pack both with the same n_bits")
        self.query_labels, self.db_labels = _host(query_labels), _host(db_labels)
        if isinstance(relevance, tuple):
            relevance = tuple(_host(x) for x in relevance)
        self.relevance = relevance
        if relevance is not None:
            if query_labels is not None or db_labels is not None:
                raise InputError("give either query_labels and db_labels_shard, or relevance=, not both")
            self.kind = 2
        elif query_labels is None or db_labels is None:
            raise InputError("relevance is undefined: pass query_labels and db_labels_shard (class ids or "
                             "multi-hot), or relevance=(indptr, indices[, grades]) with global database ids")
        else:
            self.kind = 1 if np.ndim(self.query_labels) == 2 else 0
            if len(self.db_labels) != n_rows:
                raise InputError(f"db_labels_shard has {len(self.db_labels)} rows but this rank's db_shard has "
                                 f"{n_rows}; give one label row per database row")
        self.placement, self.start, self.max_index, self.indices = _NO_OFFSET, -1, -1, None
        if db_offset is not None:
            if isinstance(db_offset, (int, np.integer)) and not isinstance(db_offset, bool):
                self.placement, self.start = _START, _count(db_offset, "db_offset")
            else:
                indices = _host(db_offset)
                if indices.ndim != 1 or len(indices) != n_rows or (len(indices) and indices.dtype.kind not in "iu"):
                    raise InputError(f"db_offset must be an int or one integer index per row of db_shard ({n_rows}), "
                                     f"got {indices.dtype} of shape {indices.shape}")
                if len(indices) and indices.min() < 0:
                    raise InputError("db_offset has negative indices; give global database indices >= 0")
                self.placement, self.indices = _INDICES, indices.astype(np.int64)
                self.max_index = int(indices.max()) if len(indices) else -1

    def _rows(self, keep):
        """The kept rows' codes and labels (all of them where nothing is dropped)."""
        if keep is None or self.database is None:
            return self.database, self.db_labels
        words = self.database.words
        if self.on_gpu:
            # a repeated index keeps the lowest rank's copy: the GPU words are gathered on the host
            words = _device.to_host(words)
        codes = PackedCodes(np.ascontiguousarray(words[keep]), self.n_bits)
        return codes, None if self.db_labels is None else np.asarray(self.db_labels)[keep]

    def counts(self, plan, n_threads):
        """This rank's int64 counts (n_queries, n_bits + 1, grades) over its kept rows."""
        database, db_labels = self._rows(plan.keep)
        relevance = plan.local_relevance(self.relevance, self.queries.n)
        n = 0 if database is None else database.n
        if n == 0:  # an empty shard (or every row held by a lower rank) adds nothing
            return np.zeros((self.queries.n, self.n_bits + 1, 1), dtype=np.int64)
        if self.on_gpu and plan.keep is None:
            spec = make_relevance(self.query_labels, db_labels, relevance, self.queries.n, n)
            return np.ascontiguousarray(gpu.counts(self.queries, database, spec), dtype=np.int64)
        result = stats.tie_stats(self.queries.to_host(), database.to_host(), self.query_labels, db_labels,
                                 relevance=relevance, n_threads=n_threads)
        if result.relevance != _KINDS[self.kind]:
            raise InputError(f"relevance kind {result.relevance!r} on this rank, expected {_KINDS[self.kind]!r}")
        return result.counts

    def ranks(self, plan, first, n_relevant, limits, n_threads):
        """(indptr, global stable ranks, grades) of this shard's relevant items (host pass)."""
        database, db_labels = self._rows(plan.keep)
        if database is None or database.n == 0:
            return np.zeros(self.queries.n + 1, dtype=np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        return shard_ranks(self.queries.to_host(), database.to_host(), self.query_labels, db_labels,
                           plan.local_relevance(self.relevance, self.queries.n), first, n_relevant, n_threads,
                           limits)


class _Coverage:
    """Where every rank's rows sit in the database, checked the same way on every rank: n_db,
    this rank's kept rows (repeated indices dropped), each rank's first index (the stable order)."""

    def __init__(self, table, comm, local):
        self.comm, self.keep, self.local_rows = comm, None, local.n_rows
        rows, placement, n_db = table[:, _N_ROWS], int(table[0, _PLACEMENT]), int(table[0, _N_DB])
        given = n_db >= 0
        if placement == _NO_OFFSET:
            self.starts = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
            total = int(rows.sum())
            if given and total != n_db:
                hint = (" (rows held twice? a DistributedSampler pads the last batch with repeated indices: pass "
                        "db_offset=list(sampler) on every rank to drop them, or drop_last=True)" if total > n_db else "")
                raise InputError(f"evaluate_distributed: the shards hold {total} rows in all ({rows.tolist()} per "
                                 f"rank) but n_db={n_db}{hint}")
            self.n_db = total
        elif placement == _START:
            self.starts = table[:, _START_AT].astype(np.int64)
            self.n_db = self._check_intervals(self.starts, rows, n_db if given else None)
        else:
            self.n_db = n_db if given else int(table[:, _MAX_INDEX].max()) + 1
            self._owned_rows(table, local)
        if self.n_db == 0:
            raise InputError("the database is empty (every shard has 0 rows); need at least one code")

    @staticmethod
    def _check_intervals(starts, rows, n_db):
        """Shards placed by their first index must tile 0 .. n_db - 1: no overlap, no gap."""
        held = [(int(s), int(s + n), r) for r, (s, n) in enumerate(zip(starts, rows)) if n > 0]
        held.sort()
        end, previous = 0, None
        for lo, hi, r in held:
            if lo < end:
                raise InputError(f"evaluate_distributed: rank {r}'s rows {lo}..{hi - 1} overlap rank {previous}'s "
                                 f"(which end at {end - 1}); shards placed by an int db_offset must not overlap: "
                                 "pass one global index per row instead to drop repeated rows")
            if lo > end:
                raise InputError(f"evaluate_distributed: no rank holds database rows {end}..{lo - 1}")
            end, previous = hi, r
        if n_db is not None and end != n_db:
            raise InputError(f"evaluate_distributed: the shards cover rows 0..{end - 1} but n_db={n_db}")
        return end

    def _owned_rows(self, table, local):
        """Indices: each index counts on the lowest rank holding it (a MIN all_reduce of an owner table)."""
        comm, n_db = self.comm, self.n_db
        if int(table[:, _MAX_INDEX].max()) >= n_db:
            bad = int(np.argmax(table[:, _MAX_INDEX]))
            raise InputError(f"evaluate_distributed: rank {bad} holds database index {int(table[bad, _MAX_INDEX])} "
                             f"but n_db={n_db}")
        owner = np.full(n_db, comm.size, dtype=np.int32)
        owner[local.indices] = comm.rank
        owner = comm.all_reduce(owner, "min", dtype=np.int32)
        missing = np.flatnonzero(owner == comm.size)
        if len(missing):
            raise InputError(f"evaluate_distributed: no rank holds {len(missing)} of the n_db={n_db} database "
                             f"indices (the first: {missing[:5].tolist()})")
        # this rank's first row of each index it owns, in its own order
        _, first_row = np.unique(local.indices, return_index=True)
        mine = np.zeros(len(local.indices), dtype=bool)
        mine[first_row] = True
        self.keep = np.flatnonzero(mine & (owner[local.indices] == comm.rank))
        self.global_ids = local.indices[self.keep]
        kept = self.global_ids
        contiguous = int(len(kept) == 0 or bool((kept == kept[0] + np.arange(len(kept))).all()))
        self.stable_ok = bool(comm.all_reduce(np.array([contiguous]), "min")[0])
        starts = comm.all_gather(np.array([kept[0] if len(kept) else n_db]))[:, 0]
        self.starts = starts.astype(np.int64)

    def local_relevance(self, relevance, n_queries):
        """Listed relevance restricted to this rank's kept rows, ids made local (None for labels)."""
        if relevance is None:
            return None
        spec = make_relevance(None, None, relevance, n_queries, self.n_db)
        indptr, indices, grades = spec.indptr, spec.indices, spec.grades
        if self.keep is None:  # contiguous rows from this rank's start
            lo = int(self.starts[self.comm.rank])
            return listed_rows((indptr, indices, grades), 0, n_queries, lo, lo + self.local_rows)
        order = np.argsort(self.global_ids, kind="stable")
        sorted_ids = self.global_ids[order]
        pos = np.searchsorted(sorted_ids, indices)
        found = pos < len(sorted_ids)
        found[found] = sorted_ids[pos[found]] == indices[found]
        query_of = np.repeat(np.arange(n_queries), np.diff(indptr))[found]
        local_ids = order[pos[found]]
        by = np.lexsort((local_ids, query_of))
        new_ptr = np.concatenate([[0], np.cumsum(np.bincount(query_of, minlength=n_queries))]).astype(np.int64)
        return new_ptr, local_ids[by].astype(np.int64), grades[found][by].astype(np.int64)

    def earlier_items(self, mine):
        """Per query and distance, the items of the shards before this rank's in database order:
        one SUM reduce to each rank of the per-distance counts of the ranks placed before it."""
        if self.keep is not None and not self.stable_ok:
            raise InputError("ties='stable' needs each rank's rows to be one run of consecutive database indices "
                             "(a DistributedSampler interleaves them); shard the database in contiguous blocks, or "
                             "use ties='average', 'optimistic' or 'pessimistic'")
        comm, out = self.comm, None
        me = (int(self.starts[comm.rank]), comm.rank)
        for target in range(comm.size):
            before = me < (int(self.starts[target]), target)
            got = comm.reduce_sum_to(mine if before else np.zeros_like(mine), target)
            if got is not None:
                out = got
        return out
