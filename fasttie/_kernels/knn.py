"""Exact Hamming k-NN and radius search, ties in database index order, without a sort.

Per query: a distance histogram gives every distance bucket its first output slot; a scan in
index order then drops each kept item into start[d] + seen[d]. The output is the stable sort
of the distances, truncated at k (or at the radius).
"""

import numpy as np
from ._jit import jit
from .filled import filled
from .popcount import distance


@jit
def knn(query_words, db_words, n_bits, k, ids, distances, start, stop):
    """Queries start..stop-1; ids, distances : (n_queries, k) int64 / int32, written; k <= n_db."""
    n_db = db_words.shape[0]
    n_words = db_words.shape[1]
    for i in range(start, stop):
        query = query_words[i]
        counts = filled(np.empty(n_bits + 1, dtype=np.int64), 0)
        for j in range(n_db):
            counts[distance(query, db_words, np.uint64(j), n_words)] += 1
        # first slot of each distance; buckets past the k-th item get no slot
        start = filled(np.empty(n_bits + 1, dtype=np.int64), k)
        placed = 0
        for d in range(n_bits + 1):
            if placed >= k:
                break
            start[d] = placed
            placed += counts[d]
        for j in range(n_db):
            d = distance(query, db_words, np.uint64(j), n_words)
            slot = start[d]
            if slot < k:
                ids[i, slot] = j
                distances[i, slot] = d
                start[d] = slot + 1


@jit
def radius_counts(query_words, db_words, radius, counts, start, stop):
    """counts[i, d] = database items at distance d <= radius from query i, for start <= i < stop."""
    n_db = db_words.shape[0]
    n_words = db_words.shape[1]
    for i in range(start, stop):
        query = query_words[i]
        for j in range(n_db):
            d = distance(query, db_words, np.uint64(j), n_words)
            if d <= radius:
                counts[i, d] += 1


@jit
def radius_fill(query_words, db_words, radius, counts, offsets, ids, distances, start, stop):
    """Fill the items within radius of queries start..stop-1, sorted by (distance, index)."""
    n_db = db_words.shape[0]
    n_words = db_words.shape[1]
    for i in range(start, stop):
        query = query_words[i]
        start = np.empty(radius + 1, dtype=np.int64)
        filled = offsets[i]
        for d in range(radius + 1):
            start[d] = filled
            filled += counts[i, d]
        for j in range(n_db):
            d = distance(query, db_words, np.uint64(j), n_words)
            if d <= radius:
                ids[start[d]] = j
                distances[start[d]] = d
                start[d] += 1
