"""The ranks of a database's parts merged per query in rank order, without a sort.

In a stable pass over a database in parts (:mod:`fasttie.hamming.stable`), each part gives
every query's relevant items their global ranks. Rank order is distance order, then database
index order, and an item's distance follows from its rank: it is the d with
``smaller[d] < rank <= smaller[d + 1]``, where ``smaller[d]`` counts the database's items at
distances below d. So each part's items go straight to their slots, a counting sort by distance
whose slots the relevant counts give: the parts taken in index order fill each distance's slots
in ascending rank order. Linear in the items, where a sort of (query, rank) keys is not.
"""

from ._jit import jit


@jit
def merge_part_ranks(indptr, ranks, grades, smaller, slot_start, slot_end, fill, out_ranks, out_grades, start, stop):
    """One part's items of queries start..stop-1 into their slots by distance.

    Called once per part, the parts in database index order, on the same ``fill``, which starts
    as each distance's first slot.

    Parameters
    ----------
    indptr : (n_queries + 1,) int64, read-only
        Query i's items of the part are ranks / grades[indptr[i]:indptr[i + 1]]; a part's items
        in rank order take one step each to find their distance (any order is right, but slower).
    ranks : (nnz,) int64, read-only
        Global 1-based ranks.
    grades : (nnz,) int64, read-only
        Their grades.
    smaller : (n_queries, n_dist) int64, read-only
        Items of the whole database at distances below d (smaller[i, 0] = 0).
    slot_start, slot_end : (n_queries, n_dist) int64, read-only
        Query i's items at distance d go to out_ranks[slot_start[i, d]:slot_end[i, d]].
    fill : (n_queries, n_dist) int64
        The next slot of each (query, distance); advanced.
    out_ranks : (total,) int64
        Written: the ranks, ascending within each query.
    out_grades : (total,) int64
        Written: their grades.
    start, stop : int
        The queries of this block, start..stop-1.

    Returns
    -------
    bool
        False where an item finds no slot in ascending order (parts out of index order, or counts
        that do not match the ranks): the caller then sorts instead.
    """
    n_dist = smaller.shape[1]
    for i in range(start, stop):
        row = smaller[i]
        d = 0
        for k in range(indptr[i], indptr[i + 1]):
            rank = ranks[k]
            if rank < 1:
                return False
            # the distance of this rank, walked from the last item's: no step for an item at the
            # same distance, a step per distance passed otherwise
            while d + 1 < n_dist and row[d + 1] < rank:
                d += 1
            while row[d] >= rank:
                d -= 1
            s = fill[i, d]
            if s >= slot_end[i, d] or (s > slot_start[i, d] and out_ranks[s - 1] >= rank):
                return False
            out_ranks[s] = rank
            out_grades[s] = grades[k]
            fill[i, d] = s + 1
    return True
