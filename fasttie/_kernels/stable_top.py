"""ties="stable" when every metric looks at the top ``depth`` ranks only (no AP or nDCG of the
whole list, no R-precision, bpref or interpolated precision).

The full stable pass (:func:`.hamming_ties.stable_scan`, then :func:`.hamming_ties.finish_stable`)
counts every database item in index order, because any item may be ranked before a relevant one. With cutoffs only, the
counts of ties="average" tell which distances can reach rank ``depth``; a second pass in index
order then counts and grades only the items at those distances. Every other item costs a
popcount and a compare in a loop of its own (queries in pairs: one load of each code for two),
so the fixed order costs about one more histogram pass instead of a slower counting pass.
"""

import numpy as np

from ._jit import jit, jit_pair
from .hamming_ties import (
    DISTANCE_MASK, count_and_record, scan_top, top_distance, class_grades,
    finalize_fixed_order, fixed_order_optional_sums, place_records,
)
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
                  id_grades_0, ids_1, id_grades_1, limit_0, limit_1, count, records, record_grades):
    """:func:`.hamming_ties.scan_top` of two queries (one-word codes) in one sweep; row q of count / records /
    record_grades is query q's. Returns the relevant items recorded for each.

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
    count : (2, n_bits + 1) uint64
        Items per distance, zeroed by the caller; written.
    records : (2, capacity + 1) uint64
        Written: each query's records, index order.
    record_grades : (2, capacity + 1) int64
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
                                        cursor_0, count[0], records[0], record_grades[0], m_0)
        d = popcount64(word_1 ^ x)
        if d <= limit_1:
            m_1, cursor_1 = count_and_record(j, d, kind, label_1, db_labels, row_1, db_label_words, ids_1, id_grades_1,
                                        cursor_1, count[1], records[1], record_grades[1], m_1)
        j = _next_near_two(word_0, word_1, db_words, j + np.uint64(1), limit_0, limit_1)
    return m_0, m_1


@jit
def _finalize_top(kind, hist_q, first, records, record_grades, n_found, top, gains, cutoffs, log_p, discount,
                  optional, out_q, scalars_q, err_cutoffs, err_row, rel_first, ranks, grades, item_gains, relevant):
    """One query of :func:`finalize_stable_top` after its scan: ranks of the recorded relevant
    items, then the finalizers (the relevant items past the top distances count in R only).

    Parameters
    ----------
    kind : int
        Relevance kind: modes.CLASS, MULTIHOT or LISTED.
    hist_q : (n_bits + 1, n_grades) int64
        The query's counts by (distance, grade) (the pass of ties="average").
    first : (n_bits + 1,) int64
        Items before each distance.
    records : (capacity + 1,) uint64
        The query's records from its scan, index order.
    record_grades : (capacity + 1,) int64
        Their grades.
    n_found : int64
        Relevant items recorded.
    top : uint64
        The distance that holds rank ``depth``.
    gains : (n_grades,) float64, read-only
        Gain of each grade.
    cutoffs : (K,) int64, read-only
        Cutoffs, ascending.
    log_p : (K,) float64, read-only
        log of RBP's persistence per cutoff column.
    discount : (D + 1,) float64, read-only
        Cumulative DCG discount.
    optional : int
        Bit mask of the optional sums (finalize.OPTIONAL_*).
    out_q : (N_QUANTITIES, K) float64
        Written: the query's base quantities.
    scalars_q : (N_SCALARS,) float64
        Written: the query's scalars.
    err_cutoffs : (n_err,) int64, read-only
        ERR cutoffs, ascending; empty: no ERR.
    err_row : (n_err,) float64
        Written: the query's ERR values.
    rel_first : (n_bits + 1,) int64
        Scratch: recorded items before each distance.
    ranks : (capacity,) int64
        Scratch: ranks of the recorded items.
    grades : (capacity,) float64
        Scratch: their grades (filled once by class_grades for CLASS).
    item_gains : (capacity,) float64
        Scratch: their gains.
    relevant : (capacity,) bool
        All True.
    """
    for d in range(rel_first.shape[0]):
        rel_first[d] = 0
    for p in range(n_found):
        rel_first[records[p] & DISTANCE_MASK] += 1
    below = np.int64(0)
    for d in range(rel_first.shape[0]):
        at_d = rel_first[d]
        rel_first[d] = below
        below += at_d
    place_records(kind, records, record_grades, n_found, top, first, rel_first, gains, ranks, grades, item_gains)
    finalize_fixed_order(
        hist_q, ranks[:n_found], grades[:n_found], item_gains[:n_found], relevant[:n_found], gains, cutoffs, log_p,
        discount, optional, out_q, scalars_q, err_cutoffs, err_row,
    )


def _finalize_stable_top_kernel(optional_sums):
    """:func:`finalize_stable_top`, and with ``optional_sums`` ``finalize_stable_top_optional``:
    one source, two kernels (:func:`._jit.jit_pair`)."""

    def finalize_stable_top(
        query_words, db_words, kind, query_labels, db_labels, query_label_words, db_label_words, indptr, listed_ids,
        listed_grades, depth, hist, gains, cutoffs, log_p, discount, optional, out, scalars, err_cutoffs, err_out,
        start, stop,
    ):
        """The full stable pass (:func:`.hamming_ties.finish_stable`) for metrics that look at the top
        ``depth`` ranks only, from the queries' histograms ``hist`` (given: the pass of ties="average").

        The order of the items past the distance that holds rank ``depth`` matters to no metric, so
        the pass in index order counts and grades only the items up to that distance, queries in
        pairs; every other item costs a popcount and a compare (the full pass counts every item).
        Quantities at cutoffs up to ``depth`` are bitwise those of the full pass; the relevant items
        left out count in R. ``optional`` must not ask for sums over the whole list
        (bpref, interpolated precision), nor may a metric read R-precision or MAP@R (HITS_AT_R, AP_AT_R).

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
        depth : int
            The deepest rank a metric reads.
        hist : (n_queries, n_bits + 1, n_grades) int64
            Counts by (distance, grade), from the pass of ties="average"; only read.
        gains : (n_grades,) float64, read-only
            Gain of each grade.
        cutoffs : (K,) int64, read-only
            Cutoffs, ascending, up to ``depth``.
        log_p : (K,) float64, read-only
            log of RBP's persistence per cutoff column.
        discount : (D + 1,) float64, read-only
            Cumulative DCG discount.
        optional : int
            Bit mask of the optional sums (RBP, WAP only; the ``_optional`` kernel only).
        out : (n_queries, N_QUANTITIES, K) float64
            Written: base quantities, rows start..stop-1.
        scalars : (n_queries, N_SCALARS) float64
            Written: scalars, rows start..stop-1.
        err_cutoffs : (n_err,) int64, read-only
            ERR cutoffs, ascending; empty: no ERR.
        err_out : (n_queries, n_err) float64
            Written: ERR, rows start..stop-1.
        start, stop : int
            The queries of this block, start..stop-1.
        """
        n_dist = hist.shape[1]
        n_grades = hist.shape[2]
        first = np.empty((2, n_dist), dtype=np.int64)  # items before distance d, per query of a pair
        count = np.empty((2, n_dist), dtype=np.uint64)
        rel_first = np.empty(n_dist, dtype=np.int64)
        capacity = np.int64(0)
        for i in range(start, stop):
            top = top_distance(hist[i], depth, first[0])
            found = np.int64(0)
            for d in range(n_dist):
                for g in range(1, n_grades):
                    found += hist[i, d, g] if np.uint64(d) <= top else 0
            capacity = max(capacity, found)
        records = np.empty((2, capacity + 1), dtype=np.uint64)
        record_grades = np.empty((2, capacity + 1), dtype=np.int64)
        ranks = np.empty(capacity, dtype=np.int64)
        grades = np.empty(capacity, dtype=np.float64)
        item_gains = np.empty(capacity, dtype=np.float64)
        class_grades(kind, gains, grades, item_gains)
        relevant = np.ones(capacity, dtype=np.bool_)
        for i in range(start, stop, 2):
            n_pair = min(2, stop - i)
            # per pair, not hoisted out of the loop: hoisted, they cost the pair scan 14 % (measured)
            tops = np.empty(2, dtype=np.uint64)
            found = np.empty(2, dtype=np.int64)
            for h in range(n_pair):
                tops[h] = top_distance(hist[i + h], depth, first[h])
                for d in range(n_dist):
                    count[h, d] = np.uint64(0)
            if n_pair == 2 and db_words.shape[1] == 1:
                found[0], found[1] = _scan_top_two(
                    query_words[i, 0], query_words[i + 1, 0], db_words, kind,
                    query_labels[i] if kind == CLASS else np.int32(0),
                    query_labels[i + 1] if kind == CLASS else np.int32(0), db_labels,
                    query_label_words[i] if kind == MULTIHOT else query_label_words[0],
                    query_label_words[i + 1] if kind == MULTIHOT else query_label_words[0], db_label_words,
                    listed_ids[indptr[i] : indptr[i + 1]], listed_grades[indptr[i] : indptr[i + 1]],
                    listed_ids[indptr[i + 1] : indptr[i + 2]], listed_grades[indptr[i + 1] : indptr[i + 2]],
                    tops[0], tops[1], count, records, record_grades,
                )
            else:
                for h in range(n_pair):
                    q = i + h
                    found[h] = scan_top(
                        query_words[q], db_words, kind, query_labels[q] if kind == CLASS else np.int32(0), db_labels,
                        query_label_words[q] if kind == MULTIHOT else query_label_words[0], db_label_words,
                        listed_ids[indptr[q] : indptr[q + 1]], listed_grades[indptr[q] : indptr[q + 1]], tops[h],
                        count[h], records[h], record_grades[h],
                    )
            for h in range(n_pair):
                _finalize_top(
                    kind, hist[i + h], first[h], records[h], record_grades[h], found[h], tops[h], gains, cutoffs,
                    log_p, discount, optional, out[i + h], scalars[i + h], err_cutoffs, err_out[i + h], rel_first,
                    ranks, grades, item_gains, relevant,
                )
                if optional_sums:
                    n = found[h]
                    fixed_order_optional_sums(hist[i + h], ranks[:n], grades[:n], item_gains[:n], relevant[:n],
                                              gains, cutoffs, log_p, optional, out[i + h], scalars[i + h])

    return finalize_stable_top


finalize_stable_top, finalize_stable_top_optional = jit_pair(_finalize_stable_top_kernel)

