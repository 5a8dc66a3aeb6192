"""Locating each retrieved document among its query's judgments (the join of a run with qrels).

Keys are uint64: the query's index in the high bits, a hash of the document id in the low bits
(:func:`fasttie.trec.join.align`). Per query, the judgments' keys go into a small open-addressing
hash table (a few hundred judgments: it stays in L1 cache), and each retrieved document's key is
looked up there: about one probe, where a binary search takes log2(judgments) dependent steps and
one ``np.searchsorted`` over all judgments of a 10M-line run walks memory.

Serial, nogil, no global state: query blocks run in parallel on :mod:`fasttie.parallel`.
"""

import numpy as np

from ._jit import jit
from .filled import filled


@jit
def locate_keys(run_keys, run_offsets, judged_keys, judged_offsets, position, start, stop):
    """For queries ``start..stop-1``: ``position[i]`` = the index of ``run_keys[i]`` in
    ``judged_keys``, or -1 where the query has no judgment with that key.

    ``run_keys[run_offsets[q]:run_offsets[q + 1]]`` are query q's retrieved documents;
    ``judged_keys[judged_offsets[q]:judged_offsets[q + 1]]`` its judgments, without repeats.
    """
    widest = np.int64(1)
    for q in range(start, stop):
        widest = max(widest, judged_offsets[q + 1] - judged_offsets[q])
    size = np.int64(2)
    while size < 2 * widest:  # load factor <= 1/2: short probe sequences, misses included
        size *= 2
    table = filled(np.empty(size, dtype=np.int64), -1)  # slot -> index into judged_keys, -1: empty
    for q in range(start, stop):
        first = judged_offsets[q]
        end = judged_offsets[q + 1]
        used = np.int64(1)
        while used < 2 * (end - first):
            used *= 2
        mask = np.uint64(used - 1)
        for j in range(first, end):  # the low bits of a key are hash bits: use them as the slot
            slot = judged_keys[j] & mask
            while table[slot] >= 0:
                slot = (slot + np.uint64(1)) & mask
            table[slot] = j
        for i in range(run_offsets[q], run_offsets[q + 1]):
            key = run_keys[i]
            slot = key & mask
            found = np.int64(-1)
            while table[slot] >= 0:
                if judged_keys[table[slot]] == key:
                    found = table[slot]
                    break
                slot = (slot + np.uint64(1)) & mask
            position[i] = found
        for j in range(first, end):  # empty the slots this query used
            slot = judged_keys[j] & mask
            while table[slot] >= 0:
                table[slot] = -1
                slot = (slot + np.uint64(1)) & mask
