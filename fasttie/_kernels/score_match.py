"""Rows whose score equals one of a few wanted scores, per query (the join of a run given as
dicts with its judgments: :mod:`fasttie.trec.dict_join`).

A judged document's score is found by one dict lookup; its row is then the row of its query with
that score, when no other row has it. Per query, the wanted scores (a few dozen judged documents)
go into a small open-addressing hash table, and each row's score is looked up there: one probe
per row, into a table 32 times larger than its entries (it stays in L1 cache), so that nearly
every probe meets an empty slot and the branch is predicted.

Serial, nogil, no global state.
"""

import numpy as np

from ._jit import jit
from .filled import filled

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier: the high bits of bits * _GOLDEN pick the slot


@jit
def match_scores(row_bits, offsets, wanted_bits, wanted_offsets, match):
    """For each query q: ``match[r]`` = the first index i of
    ``wanted_bits[wanted_offsets[q]:wanted_offsets[q + 1]]`` equal to row r's bits (rows
    ``offsets[q]:offsets[q + 1]``), or -1 where none is.

    row_bits, wanted_bits : uint64, float64 scores as bits (-0.0 made +0.0, no NaN: bits are
    equal exactly where the scores are); offsets, wanted_offsets : int64, n_queries + 1 each;
    match : int64 (n_rows,), written.
    """
    n_queries = offsets.shape[0] - 1
    widest = np.int64(1)
    for q in range(n_queries):
        widest = max(widest, wanted_offsets[q + 1] - wanted_offsets[q])
    size = np.int64(2)
    while size < 32 * widest:  # load factor <= 1/32: a row's probe nearly always ends at once
        size *= 2
    table = filled(np.empty(size, dtype=np.int64), -1)  # slot -> index into wanted_bits, -1: empty
    for q in range(n_queries):
        first = wanted_offsets[q]
        end = wanted_offsets[q + 1]
        used = np.int64(2)
        shift = np.uint64(63)
        while used < 32 * (end - first):
            used *= 2
            shift -= np.uint64(1)
        mask = used - 1
        table[:used] = -1
        for j in range(first, end):
            slot = np.int64((wanted_bits[j] * _GOLDEN) >> shift)
            while table[slot] >= 0 and wanted_bits[table[slot]] != wanted_bits[j]:
                slot = (slot + 1) & mask
            if table[slot] < 0:
                table[slot] = j
        for r in range(offsets[q], offsets[q + 1]):
            bits = row_bits[r]
            slot = np.int64((bits * _GOLDEN) >> shift)
            found = np.int64(-1)
            while table[slot] >= 0:
                if wanted_bits[table[slot]] == bits:
                    found = table[slot]
                    break
                slot = (slot + 1) & mask
            match[r] = found
