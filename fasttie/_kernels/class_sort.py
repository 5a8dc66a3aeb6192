"""Counting sort of the database by class, so each class is one contiguous segment."""

import numpy as np

from ._jit import jit


@jit
def sort_by_class(db_words, db_ids, n_classes):
    """Database words reordered by class (stable) and each class's [start, stop) segment.

    db_ids : (n_db,) int32 dense class ids in [0, n_classes). O(n_db), one copy of the words.
    """
    counts = np.zeros(n_classes, dtype=np.int64)
    for j in range(db_ids.shape[0]):
        counts[db_ids[j]] += 1
    segments = np.empty((n_classes, 2), dtype=np.int64)
    cursor = np.empty(n_classes, dtype=np.int64)  # next free slot of each class
    start = 0
    for c in range(n_classes):
        segments[c, 0] = start
        cursor[c] = start
        start += counts[c]
        segments[c, 1] = start
    n_words = db_words.shape[1]
    out = np.empty_like(db_words)
    for j in range(db_ids.shape[0]):
        slot = cursor[db_ids[j]]
        for w in range(n_words):  # word by word: a row assignment drags in shape-check code
            out[slot, w] = db_words[j, w]
        cursor[db_ids[j]] = slot + 1
    return out, segments
