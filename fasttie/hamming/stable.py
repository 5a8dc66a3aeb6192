"""A stable pass over a database in parts, written once for every back end that holds one.

``ties="stable"`` ranks ties in database index order, so each relevant item needs its global
rank: the items at smaller distances, wherever they are, and those before it at its distance.
With the database in parts (Dask shards, torch.distributed ranks, the tiles of a streamed
database, GPU chunks) in index order, the parts exchange three things, a :class:`Transport`:

1. ``sum``: the whole database's counts per query and distance (and grade), from every part's;
2. ``before``: for each part, the items of the parts before it at each distance (an exclusive
   prefix over the parts);
3. ``gather``: the ranks every part gives its relevant items, collected.

:func:`plan_ranks` turns the counts into what each part needs to rank its items (the items
ranked before its first one, its relevant items, the distances to rank), the back end ranks
them (a Dask task, a torch rank, a tile or chunk pass), and :func:`gathered_ranks` merges the
pieces per query in rank order. Metrics with cutoffs only need the items at the distances that
reach their deepest rank (:func:`rank_limits`). Counts are integers, so every layout gives the
ranks of one pass over the whole database. :class:`InProcess` is the transport of parts held by
one process (Dask's driver, a streamed database's tiles, GPU chunks); torch.distributed's is in
:mod:`fasttie.torch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .._kernels.part_ranks import merge_part_ranks
from .._kernels.radix_sort import argsort_ascending
from ..parallel import resolve_threads, run_blocks

__all__ = ["InProcess", "PartRanks", "Transport", "gathered_ranks", "plan_ranks", "rank_limits", "ranked_distances",
           "ranks_by_query", "relevant_ranked"]

Piece = tuple[np.ndarray, np.ndarray, np.ndarray]  # (indptr, ranks, grades) int64 of one part: its relevant items per query, in index order


class Transport(Protocol):
    """What the parts of a database exchange in a stable pass. A process passes the parts it
    holds, in database index order: all of them (one process), or its own (one rank of many)."""

    def sum(self, parts: list[np.ndarray]) -> np.ndarray:
        """The whole database's counts from the held parts' (n_queries, n_dist, ...) int64."""

    def before(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        """For each held part, the items of the parts before it, (n_queries, n_dist) int64."""

    def gather(self, pieces: list[Piece]) -> list[Piece]:
        """Every part's pieces, from the held parts' (in any order)."""


class InProcess:
    """The transport of parts that one process holds: the sums are plain sums."""

    def sum(self, parts: list[np.ndarray]) -> np.ndarray:
        return np.sum(np.stack(parts), axis=0)

    def before(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        counts = np.stack(parts)
        return list(np.cumsum(counts, axis=0) - counts)

    def gather(self, pieces: list[Piece]) -> list[Piece]:
        return list(pieces)


@dataclass
class PartRanks:
    """What each held part needs to rank its relevant items (:func:`plan_ranks`).

    firsts : per part, (n_queries, n_dist) int64, the items ranked before the part's first item
        at each distance; n_relevant : per part, (n_queries,) int64, its relevant items at the
        distances ranked; limits : (n_queries,) int64, the largest distance ranked per query.
    """

    firsts: list[np.ndarray]
    n_relevant: list[np.ndarray]
    limits: np.ndarray


def plan_ranks(transport: Transport, parts: list[np.ndarray], total: np.ndarray, depth: int, n_db: int,
               n_bits: int) -> PartRanks:
    """Each held part's rank bases, relevant items and the distances to rank.

    Parameters
    ----------
    transport : Transport
    parts : list of ndarray of int64, shape (n_queries, n_bits + 1, n_grades)
        Counts of the held parts, in database index order (grade 0: not relevant).
    total : ndarray of int64, shape (n_queries, n_bits + 1, n_grades)
        ``transport.sum(parts)`` (the caller finalizes it too).
    depth : int
        The deepest rank a metric looks at (:func:`fasttie.hamming.engine.rank_depth`).
    n_db, n_bits : int

    Returns
    -------
    PartRanks
    """
    items = total.sum(axis=2)
    limits = rank_limits(items, depth, n_db, n_bits)
    smaller = np.cumsum(items, axis=1) - items  # every part's items at smaller distances
    bases = transport.before([part.sum(axis=2) for part in parts])
    return PartRanks([smaller + base for base in bases], [relevant_ranked(part, limits) for part in parts], limits)


def gathered_ranks(transport: Transport, pieces: list[Piece], total: np.ndarray, limits: np.ndarray, *,
                   n_threads: int | None = None) -> Piece:
    """(indptr, ranks, grades) int64 of every query's relevant items, ranks ascending per query,
    from the held parts' pieces (the ranks each part gave its items, :data:`Piece`).

    The pieces, in database index order, go to their slots by distance
    (:func:`fasttie._kernels.part_ranks.merge_part_ranks`, query blocks over ``n_threads``);
    pieces that do not fit (another order) are sorted by (query, rank) instead.

    Parameters
    ----------
    transport : Transport
    pieces : list of Piece
        The held parts' pieces.
    total : ndarray of int64, shape (n_queries, n_bits + 1, n_grades)
        The whole database's counts (:meth:`Transport.sum`).
    limits : ndarray of int64, shape (n_queries,)
        The largest distance ranked per query (:attr:`PartRanks.limits`).
    n_threads : int, optional
        Threads (:func:`fasttie.parallel.resolve_threads`).

    Returns
    -------
    Piece
    """
    gathered = transport.gather(pieces)
    n_queries = len(total)
    items = total.sum(axis=2)
    relevant = total[:, :, 1:].sum(axis=2) * ranked_distances(limits, total.shape[1])
    slot_end = np.cumsum(relevant.ravel()).reshape(relevant.shape)  # each (query, distance)'s slots, in order
    slot_start = slot_end - relevant
    size = int(slot_end[-1, -1]) if n_queries else 0
    if sum(len(ranks) for _, ranks, _ in gathered) == size:
        smaller = np.cumsum(items, axis=1) - items
        fill = slot_start.copy()
        out_ranks, out_grades = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
        threads = resolve_threads(n_threads, size)
        fits = []
        for indptr, ranks, grades in gathered:  # in database index order: each distance's slots fill in rank order
            indptr, ranks, grades = (np.asarray(a, dtype=np.int64) for a in (indptr, ranks, grades))
            run_blocks(lambda lo, hi: fits.append(merge_part_ranks(indptr, ranks, grades, smaller, slot_start,
                                                                    slot_end, fill, out_ranks, out_grades, lo, hi)),
                       n_queries, threads)
        if all(fits) and np.array_equal(fill, slot_end):
            return np.concatenate([[0], slot_end[:, -1]]).astype(np.int64), out_ranks, out_grades
    query_of = [np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(indptr)) for indptr, _, _ in gathered]
    return ranks_by_query(_concatenated(query_of), _concatenated([r for _, r, _ in gathered]),
                          _concatenated([g for _, _, g in gathered]), n_queries)


def _concatenated(arrays: list[np.ndarray]) -> np.ndarray:
    """One int64 array of ``arrays`` (empty where there are none)."""
    return np.concatenate([np.asarray(a, dtype=np.int64) for a in arrays] or [np.zeros(0, dtype=np.int64)])


def rank_limits(items: np.ndarray, depth: int, n_db: int, n_bits: int) -> np.ndarray:
    """Per query the largest distance whose items are ranked.

    Parameters
    ----------
    items : ndarray of int64, shape (n_queries, n_bits + 1)
        Items of the whole database at each distance.
    depth : int
        The deepest rank a metric looks at (:func:`fasttie.hamming.engine.rank_depth`).
    n_db, n_bits : int

    Returns
    -------
    ndarray of int64, shape (n_queries,)
        ``n_bits`` (every distance) when ``depth`` reaches the whole database, else the distance
        holding rank ``depth``.
    """
    if depth >= n_db:
        return np.full(len(items), n_bits, dtype=np.int64)
    return (np.cumsum(items, axis=1) < depth).sum(axis=1).astype(np.int64)


def relevant_ranked(counts: np.ndarray, limits: np.ndarray) -> np.ndarray:
    """(n_queries,) int64: the relevant items (grade > 0) of ``counts`` (n_queries, n_dist,
    n_grades) at the distances ranked (up to ``limits``): the rank slots a pass fills."""
    ranked = ranked_distances(limits, counts.shape[1])
    return (counts[:, :, 1:].sum(axis=2) * ranked).sum(axis=1).astype(np.int64)


def ranked_distances(limits: np.ndarray, n_dist: int) -> np.ndarray:
    """(n_queries, n_dist) bool: the distances whose items are ranked (those up to the limit)."""
    return np.arange(n_dist)[None, :] <= np.asarray(limits)[:, None]


def ranks_by_query(query_of: np.ndarray, ranks: np.ndarray, grades: np.ndarray, n_queries: int) -> Piece:
    """(indptr, ranks, grades) int64 of every query's items, ranks ascending per query, from the
    items of the parts in any order (ranks are distinct within a query)."""
    query_of = np.asarray(query_of, dtype=np.int64)
    span = int(ranks.max()) + 1 if len(ranks) else 1
    if n_queries * span < 2**62:  # one int64 key (query, rank): a radix sort, 5.7x np.lexsort on 20M ranks
        order = argsort_ascending(query_of * span + ranks)
    else:
        order = np.lexsort((ranks, query_of))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(query_of, minlength=n_queries))]).astype(np.int64)
    return indptr, np.asarray(ranks)[order].astype(np.int64), np.asarray(grades)[order].astype(np.int64)
