"""ties="stable" when every metric looks at the top ``depth`` ranks only (no AP or nDCG of the
whole list, no R-precision, bpref or interpolated precision).

The full stable pass (:func:`.hamming_ties.stable_scan`, then :func:`.hamming_ties.finish_stable`)
counts every database item in index order, because any item may be ranked before a relevant
one. With cutoffs only, the counts of ties="average" tell which distances can reach rank
``depth``; a second pass in index order, the near scan (:func:`near_scan`), then records only
the relevant items at those distances. Every other item costs a popcount and a compare: for
codes of one or two words eight words at a time, in vector registers, each load shared by
:data:`NEAR_QUERIES` queries and each tile of the database by every query of the batch (1,000 x
1M 64-bit codes: under half the histogram pass); wider codes one query and one code at a time.
The records are finished by the full pass's finish kernel (:func:`.hamming_ties.finish_stable`
with the counts given), one kernel for both passes.
"""

import numpy as np

from ._jit import jit, jit_variants
from .filled import filled
from .hamming_ties import DISTANCE_BITS, count_and_record, scan_top
from .modes import CLASS, MULTIHOT
from .popcount import distance, popcount64
from .simd import (N_LANES, add, compress, consecutive, load, or_, popcount, shift_right, splat, splat_pairs, store_at,
                   sub, swap_pairs, top_bits, xor)


# queries whose codes meet each load of eight words of database codes (eight one-word codes, four
# two-word ones) in the near scan
NEAR_QUERIES = 8
PAIRS = N_LANES // 2  # two-word codes per load
# database codes per tile of that scan (128 KB): in L2 while every query of the batch passes over
# it, so the database is read from memory once per batch, not once per query
NEAR_TILE = 16384


@jit(inline="always")
def _below(codes, word, bound):
    """Per lane, the distance of ``codes`` (eight one-word codes) to ``word`` minus ``bound``: its
    top bit is set where the distance is below the bound (distances and bounds are at most 129)."""
    return sub(popcount(xor(codes, splat(word))), splat(bound))


@jit(inline="always")
def _below_pairs(codes, word_0, word_1, bound):
    """:func:`_below` of four two-word codes, each in a pair of lanes as they lie in memory: the
    pair's popcounts summed in both its lanes."""
    ones = popcount(xor(codes, splat_pairs(word_0, word_1)))
    return sub(add(ones, swap_pairs(ones)), splat(bound))


@jit(inline="always")
def _near_one_word(query_words, rows, bounds, db_words, lo, hi, hits, n_hits):
    """The items lo..hi-1 (whole groups of eight one-word codes) at distance below ``bounds[r]``
    from the code of query row ``rows[r]``, for each of the :data:`NEAR_QUERIES` rows r: their
    indices at hits[r, :n_hits[r]], in index order.

    Eight codes take a ``vpxorq``, ``vpopcntq``, ``vpsubq`` and ``vporq`` per query and one test
    for all: an item near a query is rare (those that reach the top ranks and their ties), and
    only then are the queries' lanes looked at one by one, without a branch (``vpcompressq`` of
    the near items' indices)."""
    words = np.empty(NEAR_QUERIES, dtype=np.uint64)
    for r in range(NEAR_QUERIES):
        words[r] = query_words[rows[r], 0]
        n_hits[r] = 0
    for j in range(lo, hi, N_LANES):
        codes = load(db_words, j)
        any_near = _below(codes, words[0], bounds[0])
        for r in range(1, NEAR_QUERIES):
            any_near = or_(any_near, _below(codes, words[r], bounds[r]))
        if top_bits(any_near) == np.uint64(0):
            continue
        items = consecutive(np.uint64(j))
        for r in range(NEAR_QUERIES):
            near = top_bits(_below(codes, words[r], bounds[r]))
            store_at(hits, r, n_hits[r], compress(items, near))
            n_hits[r] += popcount64(near)


@jit(inline="always")
def _near_two_words(query_words, rows, bounds, db_words, lo, hi, hits, n_hits):
    """:func:`_near_one_word` of two-word codes, four per load (a ``vpshufd`` and a ``vpaddq``
    more per query: :func:`_below_pairs`)."""
    words_0 = np.empty(NEAR_QUERIES, dtype=np.uint64)
    words_1 = np.empty(NEAR_QUERIES, dtype=np.uint64)
    for r in range(NEAR_QUERIES):
        words_0[r] = query_words[rows[r], 0]
        words_1[r] = query_words[rows[r], 1]
        n_hits[r] = 0
    first_lanes = np.uint64(0x55)  # a code's distance is in both its lanes: one bit per code
    for j in range(lo, hi, PAIRS):
        codes = load(db_words, j)
        any_near = _below_pairs(codes, words_0[0], words_1[0], bounds[0])
        for r in range(1, NEAR_QUERIES):
            any_near = or_(any_near, _below_pairs(codes, words_0[r], words_1[r], bounds[r]))
        if top_bits(any_near) == np.uint64(0):
            continue
        items = shift_right(consecutive(np.uint64(2 * j)), splat(np.uint64(1)))  # lane k: code j + k // 2
        for r in range(NEAR_QUERIES):
            near = top_bits(_below_pairs(codes, words_0[r], words_1[r], bounds[r])) & first_lanes
            store_at(hits, r, n_hits[r], compress(items, near))
            n_hits[r] += popcount64(near)


@jit(inline="always")
def _record_near(t, i, kind, query_words, db_words, query_labels, db_labels, query_label_words, db_label_words,
                 indptr, listed_ids, listed_grades, hits, r, n_items, record_start, slot_width, records,
                 record_grades, n_found, cursors, counts):
    """Count and record (:func:`.hamming_ties.count_and_record`) the items hits[r, :n_items] of
    query row i (query t of the batch), in index order, after those it has recorded so far.
    Class labels take no slice of an array (a reference count each, once per tile and query)."""
    if n_items == 0:
        return
    query = query_words[i]
    n_words = db_words.shape[1]
    at = record_start[t]
    m = n_found[t]
    if kind == CLASS:  # branch-free: every item's record written, kept when relevant
        label = query_labels[i]
        for h in range(n_items):
            j = hits[r, h]
            d = distance(query, db_words, j, n_words)
            c = counts[t, d]
            records[at + m] = (c << DISTANCE_BITS) | d
            m += db_labels[j] == label
            counts[t, d] = c + np.uint64(1)
        n_found[t] = m
        return
    end = at + slot_width[t]
    ids = listed_ids[indptr[i] : indptr[i + 1]]
    id_grades = listed_grades[indptr[i] : indptr[i + 1]]
    row = query_label_words[i] if kind == MULTIHOT else query_label_words[0]
    cursor = cursors[t]
    for h in range(n_items):
        j = hits[r, h]
        m, cursor = count_and_record(j, distance(query, db_words, j, n_words), kind, np.int32(0), db_labels, row,
                                     db_label_words, ids, id_grades, cursor, counts[t], records[at:end],
                                     record_grades[at:end], m)
    n_found[t] = m
    cursors[t] = cursor


def _near_kernel(width):
    """The near scan of codes of ``width`` words (1 or 2; 0: any width), one source, three
    kernels (:func:`._jit.jit_variants`): a call compiles the loop of its width only."""

    def scan_near(query_words, db_words, kind, query_labels, db_labels, query_label_words, db_label_words, indptr,
                  listed_ids, listed_grades, tops, start, record_start, slot_width, records, record_grades, n_found,
                  counts):
        """The records, in index order, of each query's relevant items at distances up to ``tops``
        (the distance that holds the deepest rank a metric reads), for
        :func:`.hamming_ties.finish_stable` with the counts given.

        The batch's queries are start..start + len(n_found) - 1, query t of the batch the row start + t.

        Parameters
        ----------
        query_words : (n_queries, n_words) uint64, read-only
            Query codes.
        db_words : (n_db, n_words) uint64, read-only
            Database codes, index order.
        kind : int
            Relevance kind: modes.CLASS, MULTIHOT or LISTED.
        query_labels : (n_queries,) int32, read-only
            Class id per query (CLASS; else empty).
        db_labels : (n_db,) int32, read-only
            Class id per database item (CLASS).
        query_label_words : (n_queries, n_label_words) uint64, read-only
            Label bits per query (MULTIHOT; else one unused row).
        db_label_words : (n_db, n_label_words) uint64, read-only
            Label bits per database item (MULTIHOT).
        indptr : (n_queries + 1,) int64, read-only
            Row pointers of the listed ids (LISTED).
        listed_ids : (nnz,) int64, read-only
            Listed relevant ids, ascending within each query (LISTED).
        listed_grades : (nnz,) int64, read-only
            Their grades (LISTED).
        tops : (n_batch,) uint64
            Largest distance scanned per query of the batch.
        start : int
            The row of the batch's first query.
        record_start : (n_batch,) int64
            Where the records of query t start.
        slot_width : (n_batch,) int64
            Its room: more than its relevant items up to its top distance.
        records : (slots,) uint64
            Written: the records.
        record_grades : (slots,) int64
            Written: their grades.
        n_found : (n_batch,) int64
            Written: relevant items recorded per query.
        counts : (n_batch, n_bits + 1) uint64
            Written: items per distance up to the query's top distance (zero past it).
        """
        n = n_found.shape[0]
        for t in range(n):
            n_found[t] = 0
            for d in range(counts.shape[1]):
                counts[t, d] = np.uint64(0)
        if width == 0:  # one query and one code at a time
            for t in range(n):
                q = start + t
                at = record_start[t]
                end = at + slot_width[t]
                n_found[t] = scan_top(
                    query_words[q], db_words, kind, query_labels[q] if kind == CLASS else np.int32(0), db_labels,
                    query_label_words[q] if kind == MULTIHOT else query_label_words[0], db_label_words,
                    listed_ids[indptr[q] : indptr[q + 1]], listed_grades[indptr[q] : indptr[q + 1]], tops[t],
                    counts[t], records[at:end], record_grades[at:end],
                )
        else:  # tile by tile, the batch's queries in blocks of NEAR_QUERIES: their near items, then their records
            n_db = db_words.shape[0]
            whole = n_db - n_db % (N_LANES // width)  # the codes in whole groups of eight words
            cursors = filled(np.empty(n, dtype=np.int64), 0)
            rows = np.empty(NEAR_QUERIES, dtype=np.int64)
            bounds = np.empty(NEAR_QUERIES, dtype=np.uint64)
            hits = np.empty((NEAR_QUERIES, NEAR_TILE + N_LANES), dtype=np.uint64)  # each store writes eight lanes
            n_hits = np.empty(NEAR_QUERIES, dtype=np.int64)
            for lo in range(0, n_db, NEAR_TILE):
                hi = min(lo + NEAR_TILE, n_db)
                for t0 in range(0, n, NEAR_QUERIES):
                    block = min(NEAR_QUERIES, n - t0)
                    for r in range(NEAR_QUERIES):  # rows past the batch: bound 0, no item is near
                        rows[r] = start + t0 + min(r, block - 1)
                        bounds[r] = tops[t0 + r] + np.uint64(1) if r < block else np.uint64(0)
                    if width == 1:
                        _near_one_word(query_words, rows, bounds, db_words, lo, min(hi, whole), hits, n_hits)
                    else:
                        _near_two_words(query_words, rows, bounds, db_words, lo, min(hi, whole), hits, n_hits)
                    for r in range(block):
                        for j in range(np.uint64(max(lo, whole)), np.uint64(hi)):  # the codes after the last group
                            if distance(query_words[rows[r]], db_words, j, db_words.shape[1]) < bounds[r]:
                                hits[r, n_hits[r]] = j
                                n_hits[r] += 1
                        _record_near(t0 + r, rows[r], kind, query_words, db_words, query_labels, db_labels,
                                     query_label_words, db_label_words, indptr, listed_ids, listed_grades, hits, r,
                                     n_hits[r], record_start, slot_width, records, record_grades, n_found, cursors,
                                     counts)

    return scan_near


scan_near_one_word, scan_near_two_words, scan_near_wide = jit_variants(
    _near_kernel, {"_one_word": (1,), "_two_words": (2,), "_wide": (0,)})


def near_scan(n_words):
    """The near scan kernel for codes of ``n_words`` 64-bit words."""
    return {1: scan_near_one_word, 2: scan_near_two_words}.get(n_words, scan_near_wide)
