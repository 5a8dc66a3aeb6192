"""Counting sort of the database by class, so each class is one contiguous segment."""

import numpy as np

from ._jit import jit


@jit
def sort_by_class(db_words, db_ids, n_classes):
    """Database words reordered by class (stable) and each class's [start, stop) segment.

    db_ids : (n_db,) int32 dense class ids in [0, n_classes). O(n_db), one copy of the words.
    """
    counts = np.zeros(n_classes + 1, dtype=np.int64)
    for j in range(db_ids.shape[0]):
        counts[db_ids[j] + 1] += 1
    starts = np.cumsum(counts)  # starts[c] = first slot of class c
    segments = np.empty((n_classes, 2), dtype=np.int64)
    for c in range(n_classes):
        segments[c, 0] = starts[c]
        segments[c, 1] = starts[c + 1]
    cursor = starts[:n_classes].copy()
    out = np.empty_like(db_words)
    for j in range(db_ids.shape[0]):
        c = db_ids[j]
        out[cursor[c]] = db_words[j]
        cursor[c] += 1
    return out, segments
