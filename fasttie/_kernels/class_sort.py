"""Counting sort of the database by class, so each class is one contiguous segment.

Two kernels over chunks of rows, so the sort runs on several threads (:mod:`fasttie.parallel`)
and stays stable: each chunk counts its rows per class, the caller turns the counts into each
chunk's first slot per class (a prefix sum over chunks within each class), and each chunk then
writes its rows there.
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
        in_order = True
        for j in range(bounds[c], bounds[c + 1]):
            counts[c, db_ids[j]] += 1
            if j > bounds[c] and db_ids[j] < db_ids[j - 1]:
                in_order = False
        ascending[c] = in_order


@jit
def scatter_by_class(db_words, db_ids, bounds, cursors, out, start, stop):
    """The rows of chunks start..stop-1 written to ``out`` by class, in row order: chunk c's
    rows of class k from out[cursors[c, k]] on.

    cursors : (n_chunks, n_classes) int64, each chunk's first slot per class (a copy is used).
    out : like db_words, written; allocated by the caller with numpy, which asks for huge pages
    where it can (numba's allocator does not): a 20M-code copy otherwise spends more time in
    page faults than in copying.
    """
    n_words = db_words.shape[1]
    for c in range(start, stop):
        cursor = cursors[c].copy()
        for j in range(bounds[c], bounds[c + 1]):
            slot = cursor[db_ids[j]]
            for w in range(n_words):  # word by word: a row assignment drags in shape-check code
                out[slot, w] = db_words[j, w]
            cursor[db_ids[j]] = slot + 1
