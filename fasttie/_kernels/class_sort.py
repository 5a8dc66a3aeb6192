"""Counting sort of the database by class, so each class is one contiguous segment: what the
portable pass of one-word codes reads (wider codes are ordered tile by tile, and the bit-sliced
pass gathers each tile's items by class itself, each slot of a block's classes given by
:func:`block_classes`).

Two kernels over chunks of rows, so the sort runs on several threads (:mod:`fasttie.parallel`)
and stays stable: each chunk counts its rows per class, the caller turns the counts into each
chunk's first slot per class (a prefix sum over chunks within each class), and each chunk then
writes its rows there. Indices are unsigned (no wraparound checks).
"""

import numpy as np

from ._jit import jit


@jit
def count_classes(db_ids, bounds, counts, ascending, start, stop):
    """counts[c, k] = rows of chunk c, ``db_ids[bounds[c]:bounds[c + 1]]``, in class k, and
    ascending[c] = whether the chunk's ids never decrease, for chunks start..stop-1.

    db_ids : (n_db,) int32 dense class ids in [0, n_classes); bounds : (n_chunks + 1,) int64;
    counts : (n_chunks, n_classes) int64, zero on entry; ascending : (n_chunks,) bool.
    """
    for c in range(start, stop):
        row = counts[c]
        lo, hi = np.uint64(bounds[c]), np.uint64(bounds[c + 1])
        for j in range(lo, hi):
            row[np.uint64(db_ids[j])] += 1
        descents = 0
        for j in range(lo + np.uint64(1), hi):  # a separate loop: it vectorizes
            descents += db_ids[j] < db_ids[j - np.uint64(1)]
        ascending[c] = descents == 0


@jit
def scatter_by_class(db_words, db_ids, bounds, cursors, out, start, stop):
    """The rows (one-word codes) of chunks start..stop-1 written to ``out`` by class, in row order:
    chunk c's rows of class k from out[cursors[c, k]] on.

    cursors : (n_chunks, n_classes) int64, each chunk's first slot per class (a copy is used).
    out : like db_words, written; allocated by the caller with numpy, which asks for huge pages
    where it can (numba's allocator does not): a 20M-code copy otherwise spends more time in
    page faults than in copying.
    """
    for c in range(start, stop):
        cursor = cursors[c].astype(np.uint64)
        lo, hi = np.uint64(bounds[c]), np.uint64(bounds[c + 1])
        for j in range(lo, hi):
            k = np.uint64(db_ids[j])
            slot = cursor[k]
            cursor[k] = slot + np.uint64(1)
            out[slot, 0] = db_words[j, 0]


@jit(inline="always")
def block_classes(query_ids, start, stop, slot_of, query_slot):
    """The classes of queries start..stop-1, a slot each from 1 in order of appearance, for the
    passes that gather each tile's items by class: returns the number of slots and fills
    slot_of[class] = its slot (0: no query of the block has it; a table as long as the class
    ids) and query_slot[u] = the slot of query start + u (0: no class, id -1); both zero on entry
    (the caller allocates them: :func:`block_workspace`)."""
    n_slots = 0
    for u in range(stop - start):
        k = query_ids[start + u]
        if k >= 0:
            if slot_of[k] == 0:
                n_slots += 1
                slot_of[k] = n_slots
            query_slot[u] = slot_of[k]
    return n_slots


def block_workspace(n_classes, n_queries):
    """(slot_of, query_slot) for :func:`block_classes`: zero arrays of int32 as long as the class
    ids and of int64 as long as the block."""
    return np.zeros(n_classes, dtype=np.int32), np.zeros(n_queries, dtype=np.int64)
