"""The plan of a stable pass over a database in parts: the same for Dask shards and for the
chunks of a database too large for the GPU's memory.

``ties="stable"`` ranks ties in database index order, so each relevant item needs its global
rank: the items at smaller distances, wherever they are, and those before it at its distance.
With the database in parts (shards, chunks) in index order, a part needs per query and distance
how many items come before its own first one (:func:`part_rank_bases`); metrics with cutoffs
only need the items at the distances that reach their deepest rank (:func:`rank_limits`); and
the ranks the parts return are merged per query in rank order (:func:`ranks_by_query`). Counts
are integers, so every layout gives the ranks of one pass over the whole database.
"""

from __future__ import annotations

import numpy as np

from .._kernels.radix_sort import argsort_ascending

__all__ = ["part_rank_bases", "rank_limits", "ranked_distances", "ranks_by_query"]


def rank_limits(items, depth, n_db, n_bits):
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


def ranked_distances(limits, n_dist):
    """(n_queries, n_dist) bool: the distances whose items are ranked (those up to the limit)."""
    return np.arange(n_dist)[None, :] <= np.asarray(limits)[:, None]


def part_rank_bases(per_part):
    """Items ranked before each part's first item, per query and distance.

    Parameters
    ----------
    per_part : sequence of ndarray of int64, shape (n_queries, n_dist)
        Items of each part (in database index order) at each distance.

    Returns
    -------
    ndarray of int64, shape (n_parts, n_queries, n_dist)
        Every part's items at smaller distances, plus the earlier parts' items at that distance.
    """
    counts = np.stack(per_part)
    total = counts.sum(axis=0)
    return (np.cumsum(total, axis=1) - total)[None] + (np.cumsum(counts, axis=0) - counts)


def ranks_by_query(query_of, ranks, grades, n_queries):
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
