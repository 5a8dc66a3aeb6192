"""ties="stable" when every metric looks at the top ``depth`` ranks only (no AP or nDCG of the
whole list, no R-precision, bpref or interpolated precision).

The full stable pass (:func:`.hamming_ties.stable_scan`, then :func:`.hamming_ties.finish_stable`)
counts every database item in index order, because any item may be ranked before a relevant one. With cutoffs only, the
counts of ties="average" tell which distances can reach rank ``depth``; a second pass in index
order, :func:`scan_near`, then records only the relevant items at those distances. Every other
item costs a popcount and a compare in a loop of its own (queries in pairs: one load of each
code for two), so the fixed order costs about one more histogram pass instead of a slower
counting pass. The records are finished by the full pass's finish kernel
(:func:`.hamming_ties.finish_stable` with the counts given), one kernel for both passes.
"""

import numpy as np

from ._jit import jit
from .hamming_ties import count_and_record, scan_top
from .modes import CLASS, MULTIHOT
from .popcount import popcount64


@jit(_nrt=False)
def _next_near_two(word_0, word_1, db_words, j, limit_0, limit_1):
    """:func:`.hamming_ties._next_near` for two queries at once: each database code is loaded once for both."""
    n_db = np.uint64(db_words.shape[0])
    while j < n_db:
        x = db_words[j, 0]
        if (popcount64(word_0 ^ x) <= limit_0) | (popcount64(word_1 ^ x) <= limit_1):
            return j
        j += np.uint64(1)
    return j


@jit(inline="always")
def _scan_top_two(word_0, word_1, db_words, kind, label_0, label_1, db_labels, row_0, row_1, db_label_words, ids_0,
                  id_grades_0, ids_1, id_grades_1, limit_0, limit_1, count_0, count_1, records_0, records_1,
                  record_grades_0, record_grades_1):
    """:func:`.hamming_ties.scan_top` of two queries (one-word codes) in one sweep, each into arrays
    of its own. Returns the relevant items recorded for each.

    Parameters
    ----------
    word_0, word_1 : uint64
        The one-word codes of the two queries.
    db_words : (n_db, 1) uint64, read-only
        Database codes, index order.
    kind : int
        Relevance kind: modes.CLASS, MULTIHOT or LISTED.
    label_0, label_1 : int32
        The queries' class ids (CLASS; 0 otherwise).
    db_labels : (n_db,) int32, read-only
        Class id per database item (CLASS).
    row_0, row_1 : (n_label_words,) uint64, read-only
        The queries' label bits (MULTIHOT).
    db_label_words : (n_db, n_label_words) uint64, read-only
        Label bits per database item (MULTIHOT).
    ids_0 : (n_listed_0,) int64, read-only
        Query 0's listed relevant ids, ascending (LISTED).
    id_grades_0 : (n_listed_0,) int64, read-only
        Their grades.
    ids_1 : (n_listed_1,) int64, read-only
        Query 1's listed relevant ids, ascending (LISTED).
    id_grades_1 : (n_listed_1,) int64, read-only
        Their grades.
    limit_0, limit_1 : uint64
        Largest distance scanned per query.
    count_0, count_1 : (n_bits + 1,) uint64
        Items per distance of each query, zeroed by the caller; written.
    records_0, records_1 : (>= relevant items within the limit + 1,) uint64
        Written: each query's records, index order.
    record_grades_0, record_grades_1 : (same as its records,) int64
        Written: their grades.

    Returns
    -------
    m_0, m_1 : int64
        Relevant items recorded per query.
    """
    n_db = db_words.shape[0]
    m_0 = np.int64(0)  # typed, as in scan_top
    m_1 = np.int64(0)
    cursor_0 = np.int64(0)
    cursor_1 = np.int64(0)
    j = _next_near_two(word_0, word_1, db_words, np.uint64(0), limit_0, limit_1)
    while j < n_db:
        x = db_words[j, 0]
        d = popcount64(word_0 ^ x)
        if d <= limit_0:
            m_0, cursor_0 = count_and_record(j, d, kind, label_0, db_labels, row_0, db_label_words, ids_0, id_grades_0,
                                        cursor_0, count_0, records_0, record_grades_0, m_0)
        d = popcount64(word_1 ^ x)
        if d <= limit_1:
            m_1, cursor_1 = count_and_record(j, d, kind, label_1, db_labels, row_1, db_label_words, ids_1, id_grades_1,
                                        cursor_1, count_1, records_1, record_grades_1, m_1)
        j = _next_near_two(word_0, word_1, db_words, j + np.uint64(1), limit_0, limit_1)
    return m_0, m_1


@jit
def scan_near(query_words, db_words, kind, query_labels, db_labels, query_label_words, db_label_words, indptr, listed_ids,
              listed_grades, tops, start, record_start, slot_width, records, record_grades, n_found, counts):
    """The records, in index order, of each query's relevant items at distances up to ``tops``
    (the distance that holds the deepest rank a metric reads), for
    :func:`.hamming_ties.finish_stable` with the counts given; queries in pairs.

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
        for d in range(counts.shape[1]):
            counts[t, d] = np.uint64(0)
    for t in range(0, n, 2):
        a = record_start[t]
        a_end = a + slot_width[t]
        i = start + t
        if t + 1 < n and db_words.shape[1] == 1:
            b = record_start[t + 1]
            b_end = b + slot_width[t + 1]
            n_found[t], n_found[t + 1] = _scan_top_two(
                query_words[i, 0], query_words[i + 1, 0], db_words, kind,
                query_labels[i] if kind == CLASS else np.int32(0),
                query_labels[i + 1] if kind == CLASS else np.int32(0), db_labels,
                query_label_words[i] if kind == MULTIHOT else query_label_words[0],
                query_label_words[i + 1] if kind == MULTIHOT else query_label_words[0], db_label_words,
                listed_ids[indptr[i] : indptr[i + 1]], listed_grades[indptr[i] : indptr[i + 1]],
                listed_ids[indptr[i + 1] : indptr[i + 2]], listed_grades[indptr[i + 1] : indptr[i + 2]],
                tops[t], tops[t + 1], counts[t], counts[t + 1], records[a:a_end], records[b:b_end],
                record_grades[a:a_end], record_grades[b:b_end],
            )
        else:
            for h in range(min(2, n - t)):
                q = i + h
                at = record_start[t + h]
                end = at + slot_width[t + h]
                n_found[t + h] = scan_top(
                    query_words[q], db_words, kind, query_labels[q] if kind == CLASS else np.int32(0), db_labels,
                    query_label_words[q] if kind == MULTIHOT else query_label_words[0], db_label_words,
                    listed_ids[indptr[q] : indptr[q + 1]], listed_grades[indptr[q] : indptr[q + 1]], tops[t + h],
                    counts[t + h], records[at:end], record_grades[at:end],
                )
