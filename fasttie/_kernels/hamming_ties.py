"""From Hamming histograms to tie sequences, and the parallel drivers of the finalizer.

* average: one tie per non-empty distance bucket;
* optimistic / pessimistic: each bucket split by grade, highest (lowest) grade first, so every
  tie is homogeneous and the finalizer's expectation is the fixed value;
* stable (ties in database index order): one pass over the database in index order counts the
  items at each distance and notes, for every relevant item, how many items at its distance
  came before it; once the pass is over, its rank is the start of its distance plus that
  number, with no sort, and :func:`.finalize.finalize_ranked` walks the relevant items only.
  Queries of one class share their relevant items, so up to :data:`GROUP` of them go through
  one sweep of the database (where few items are relevant, as the lanes of a vector:
  :mod:`.stable_lanes`). When every metric has a cutoff, the pass ranks only the items at
  distances that reach it; where few queries share sweeps, :mod:`.stable_top` instead counts
  and grades only the items near enough (:func:`scan_top` here for codes of more than two
  words). A database in parts (shards, tiles) takes the same scans; :func:`ranks_of_records`
  turns each part's records into global ranks.
"""

import numpy as np

from ._jit import jit, jit_pair, jit_variants
from .filled import filled
from .err import err_ranked
from .finalize import call_finalize_ties, finalize_ranked, ranked_optional_sums
from .modes import AVERAGE, CLASS, LISTED, MULTIHOT, OPTIMISTIC
from .popcount import distance, popcount64
from .stable_lanes import BLOCK, HIGH_ROWS, N_LANES, sweep_class_lanes
from .tie_arrays import empty_ties



@jit(inline="always")
def _ideal_runs(hist_q, gains):
    """Runs (gain, count) of the ideal order: grades descending, positive grades only."""
    n_dist, n_grades = hist_q.shape
    ideal_gain = np.empty(n_grades, dtype=np.float64)
    ideal_count = np.empty(n_grades, dtype=np.int64)
    n_runs = 0
    for g in range(n_grades - 1, 0, -1):
        count = 0
        for d in range(n_dist):
            count += hist_q[d, g]
        if count > 0:
            ideal_gain[n_runs] = gains[g]
            ideal_count[n_runs] = count
            n_runs += 1
    return ideal_gain[:n_runs], ideal_count[:n_runs]


@jit(inline="always")
def _bucket_ties(hist_q, gains, mode):
    """Tie arrays (n, r, u, grade sum, gain sum) of one query's histogram, in rank order; every
    database item is judged, so a tie's judged non-relevant items u are its n - r."""
    n_dist, n_grades = hist_q.shape
    tie_n, tie_r, tie_u, tie_s, tie_g = empty_ties(n_dist if mode == AVERAGE else n_dist * n_grades)
    m = 0
    for d in range(n_dist):
        if mode == AVERAGE:
            n = 0
            for g in range(n_grades):
                count = hist_q[d, g]
                n += count
                if g > 0:
                    tie_r[m] += count
                    tie_s[m] += g * count
                    tie_g[m] += gains[g] * count
            if n > 0:
                tie_n[m] = n
                tie_u[m] = n - tie_r[m]
                m += 1
        else:
            for step in range(n_grades):
                g = n_grades - 1 - step if mode == OPTIMISTIC else step
                count = hist_q[d, g]
                if count > 0:
                    tie_n[m] = count
                    tie_r[m] = count if g > 0 else 0
                    tie_u[m] = 0 if g > 0 else count
                    tie_s[m] = g * count
                    tie_g[m] = gains[g] * count
                    m += 1
    return tie_n[:m], tie_r[:m], tie_u[:m], tie_s[:m], tie_g[:m]


@jit
def finalize_histograms(hist, gains, mode, cutoffs, log_p, discount, need_ratio, optional, out, scalars, start,
                        stop, walk):
    """Base quantities of queries start..stop-1 from their histograms (average, optimistic,
    pessimistic).

    Parameters
    ----------
    hist : (n_queries, n_bits + 1, n_grades) int64
        Counts by (distance, grade) of every query (grade > 0 relevant); only read here.
    gains : (n_grades,) float64, read-only
        Gain of each grade.
    mode : int
        Tie mode: modes.AVERAGE, OPTIMISTIC or PESSIMISTIC.
    cutoffs : (K,) int64, read-only
        Cutoffs, ascending, >= 1 (past n_db: the whole list).
    log_p : (K,) float64, read-only
        log of RBP's persistence p per cutoff column.
    discount : (D + 1,) float64, read-only
        Cumulative DCG discount, ``discount[i] = sum_{l <= i} 1 / log2(1 + l)``.
    need_ratio : bool
        Compute AP_RET / WAP_RET (the ratios and optional walks only).
    optional : int
        Bit mask of the optional sums (finalize.OPTIONAL_*; the optional walk only).
    out : (n_queries, N_QUANTITIES, K) float64
        Base quantities; rows start..stop-1 are written.
    scalars : (n_queries, N_SCALARS) float64
        Per-query scalars (R, hits@R, bpref sum, ...); rows start..stop-1 are written.
    start, stop : int
        The queries of this block, start..stop-1.
    walk : uint64
        Address of the tie walk (:mod:`.address`): :func:`.finalize.finalize_ties`,
        ``finalize_ties_ratios`` (AP@k over the retrieved relevant items, the default here) or
        ``finalize_ties_optional`` (the optional sums). Not compiled into this kernel: a cold
        first call compiles this driver while a helper compiles the walk
        (:mod:`fasttie.finalize.cold_start`).
    """
    for i in range(start, stop):
        tie_n, tie_r, tie_u, tie_s, tie_g = _bucket_ties(hist[i], gains, mode)
        judged_nonrel = np.int64(0)
        for c in range(tie_u.shape[0]):
            judged_nonrel += tie_u[c]
        ideal_gain, ideal_count = _ideal_runs(hist[i], gains)
        call_finalize_ties(walk, (
            tie_n, tie_r, tie_u, tie_s, tie_g, np.int64(0), judged_nonrel, ideal_gain, ideal_count, cutoffs, log_p,
            discount, np.bool_(need_ratio), np.int64(optional), out[i], scalars[i],
        ))


@jit(inline="always")
def _item_grade(kind, j, query_label, db_labels, query_label_row, db_label_words, listed_ids, listed_grades, cursor):
    """Grade of database item j for one query; for LISTED, ``cursor`` walks the sorted ids."""
    if kind == CLASS:
        return np.int64(1 if db_labels[j] == query_label else 0), cursor
    if kind == MULTIHOT:
        g = np.uint64(0)
        for w in range(db_label_words.shape[1]):
            g += popcount64(query_label_row[w] & db_label_words[j, w])
        return np.int64(g), cursor
    if cursor < listed_ids.shape[0] and listed_ids[cursor] == j:
        return listed_grades[cursor], cursor + 1
    return np.int64(0), cursor


DISTANCE_BITS = np.uint64(16)  # a record packs (items before it at its distance) << 16 | distance
DISTANCE_MASK = np.uint64(0xFFFF)


@jit(_nrt=False)  # per item: see _jit.py on reference counting
def count_and_record(j, d, kind, query_label, db_labels, label_row, db_label_words, ids, id_grades, cursor, count,
                      records, record_grades, m):
    """Count item j at distance d and, when it is relevant, record (items at d before it) << 16
    | d and its grade; returns the records and the cursor in the listed ids. Items may be
    passed over (:func:`scan_top`).

    Parameters
    ----------
    j : uint64
        Database index of the item.
    d : uint64
        Its Hamming distance to the query.
    kind : int
        Relevance kind: modes.CLASS, MULTIHOT or LISTED.
    query_label : int32
        The query's class id (CLASS; 0 otherwise).
    db_labels : (n_db,) int32, read-only
        Class id of every database item (CLASS).
    label_row : (n_label_words,) uint64, read-only
        The query's label bits (MULTIHOT).
    db_label_words : (n_db, n_label_words) uint64, read-only
        Label bits of every database item (MULTIHOT).
    ids : (n_listed,) int64, read-only
        The query's listed relevant ids, ascending (LISTED).
    id_grades : (n_listed,) int64, read-only
        Their grades (LISTED).
    cursor : int64
        Position in ``ids`` of the first id not yet passed.
    count : (n_bits + 1,) uint64
        Items counted so far at each distance; count[d] is incremented.
    records : (>= relevant items + 1,) uint64
        Records of the query's relevant items; records[m] is written when j is relevant.
    record_grades : (same as records,) int64
        Their grades; record_grades[m] is written when j is relevant.
    m : int64
        Relevant items recorded so far.

    Returns
    -------
    m, cursor : int64
        The updated record count and cursor.
    """
    if kind == LISTED:  # the listed ids are sorted: skip those of the items passed over
        while cursor < ids.shape[0] and ids[cursor] < j:
            cursor += 1
    g, cursor = _item_grade(kind, j, query_label, db_labels, label_row, db_label_words, ids, id_grades, cursor)
    c = count[d]
    if g > 0:
        records[m] = (c << DISTANCE_BITS) | d
        record_grades[m] = g
        m += 1
    count[d] = c + np.uint64(1)
    return m, cursor


@jit(inline="always")
def _record_graded(j, d, label_row, db_label_words, count, records, record_grades, m):
    """:func:`count_and_record` of multi-hot item j at distance d without a branch: its record and
    grade (shared labels) are written at m whatever it is, and kept (m + 1) when the grade is
    positive; about a fifth of the items of a multi-hot database are relevant, a branch taken at
    random. Returns m."""
    g = np.uint64(0)
    for w in range(db_label_words.shape[1]):
        g += popcount64(label_row[w] & db_label_words[j, w])
    c = count[d]
    records[m] = (c << DISTANCE_BITS) | d
    record_grades[m] = np.int64(g)
    count[d] = c + np.uint64(1)
    return m + (g > np.uint64(0))


@jit(inline="always")
def _scan_in_index_order(query, db_words, kind, query_label, db_labels, label_row, db_label_words, ids, id_grades,
                         count, records, record_grades):
    """One pass over the database in index order: count[d] += 1 for every item, and for each
    relevant item (in index order) a record (items at its distance before it) << 16 | distance,
    and its grade. Returns the number of relevant items recorded.

    The histogram is complete only after the pass, so the ranks (start of distance d + that
    number) are assigned afterwards: one pass instead of a histogram pass and a rank pass.
    ``records`` needs one slot more than the relevant items: the class-label loop writes every
    item's record and keeps it only when the item is relevant (no mispredicted branch).

    Parameters
    ----------
    query : (n_words,) uint64, read-only
        The query's code.
    db_words : (n_db, n_words) uint64, read-only
        The database codes, in index order.
    kind : int
        Relevance kind: modes.CLASS, MULTIHOT or LISTED.
    query_label : int32
        The query's class id (CLASS; 0 otherwise).
    db_labels : (n_db,) int32, read-only
        Class id of every database item (CLASS).
    label_row : (n_label_words,) uint64, read-only
        The query's label bits (MULTIHOT).
    db_label_words : (n_db, n_label_words) uint64, read-only
        Label bits of every database item (MULTIHOT).
    ids : (n_listed,) int64, read-only
        The query's listed relevant ids, ascending (LISTED).
    id_grades : (n_listed,) int64, read-only
        Their grades (LISTED).
    count : (n_bits + 1,) uint64
        Items per distance, zeroed by the caller; written.
    records : (>= relevant items + 1,) uint64
        Written: one record per relevant item, index order.
    record_grades : (same as records,) int64
        Written: their grades.
    """
    n_db = db_words.shape[0]
    n_words = db_words.shape[1]
    m = np.int64(0)  # typed: a literal 0 would compile count_and_record twice
    if kind == CLASS and n_words == 1:  # the common case, branch-free
        q0 = query[0]
        for j in range(np.uint64(n_db)):
            d = popcount64(q0 ^ db_words[j, 0])
            c = count[d]
            records[m] = (c << DISTANCE_BITS) | d
            m += db_labels[j] == query_label
            count[d] = c + np.uint64(1)
        for p in range(m):
            record_grades[p] = 1
        return m
    if kind == MULTIHOT:  # branch-free too: every item's record and grade, kept when relevant
        if n_words == 1:
            q0 = query[0]
            for j in range(np.uint64(n_db)):
                m = _record_graded(j, popcount64(q0 ^ db_words[j, 0]), label_row, db_label_words, count, records,
                                   record_grades, m)
        else:
            for j in range(np.uint64(n_db)):
                m = _record_graded(j, distance(query, db_words, j, n_words), label_row, db_label_words, count,
                                   records, record_grades, m)
        return m
    cursor = np.int64(0)
    for j in range(np.uint64(n_db)):
        m, cursor = count_and_record(j, distance(query, db_words, j, n_words), kind, query_label, db_labels,
                                      label_row, db_label_words, ids, id_grades, cursor, count, records,
                                      record_grades, m)
    return m


@jit
def _scan_query(i, query_words, db_words, kind, query_labels, db_labels, query_label_words, db_label_words, indptr,
                listed_ids, listed_grades, count, records, record_grades):
    """:func:`_scan_in_index_order` for query i, its counts zeroed first.

    Parameters
    ----------
    i : int
        Row of the query.
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
        Query i's listed ids are listed_ids[indptr[i]:indptr[i + 1]] (LISTED).
    listed_ids : (nnz,) int64, read-only
        Listed relevant ids, ascending within each query (LISTED).
    listed_grades : (nnz,) int64, read-only
        Their grades (LISTED).
    count : (n_bits + 1,) uint64
        Zeroed, then the items per distance; written.
    records : (>= relevant items + 1,) uint64
        Written: the records of query i's relevant items.
    record_grades : (same as records,) int64
        Written: their grades.

    Returns
    -------
    int64
        The relevant items recorded.
    """
    for d in range(count.shape[0]):
        count[d] = np.uint64(0)
    query_label = query_labels[i] if kind == CLASS else np.int32(0)
    label_row = query_label_words[i] if kind == MULTIHOT else query_label_words[0]
    return _scan_in_index_order(
        query_words[i], db_words, kind, query_label, db_labels, label_row, db_label_words,
        listed_ids[indptr[i] : indptr[i + 1]], listed_grades[indptr[i] : indptr[i + 1]], count, records,
        record_grades,
    )


@jit(_nrt=False)
def _next_near(word, db_words, j, limit):
    """The first item from j on (one-word codes) at distance <= limit, or n_db. Its own function:
    the loop keeps its few values in registers (written inside the scan, it ran at half the speed)."""
    n_db = np.uint64(db_words.shape[0])
    while j < n_db:
        if popcount64(word ^ db_words[j, 0]) <= limit:
            return j
        j += np.uint64(1)
    return j


@jit(inline="always")
def scan_top(query, db_words, kind, query_label, db_labels, label_row, db_label_words, ids, id_grades, limit, count,
              records, record_grades):
    """:func:`_scan_in_index_order` over the items at distance <= ``limit`` only: the others are
    neither counted nor graded. Returns the relevant items recorded.

    Parameters
    ----------
    query : (n_words,) uint64, read-only
        The query's code.
    db_words : (n_db, n_words) uint64, read-only
        Database codes, index order.
    kind : int
        Relevance kind: modes.CLASS, MULTIHOT or LISTED.
    query_label : int32
        The query's class id (CLASS; 0 otherwise).
    db_labels : (n_db,) int32, read-only
        Class id per database item (CLASS).
    label_row : (n_label_words,) uint64, read-only
        The query's label bits (MULTIHOT).
    db_label_words : (n_db, n_label_words) uint64, read-only
        Label bits per database item (MULTIHOT).
    ids : (n_listed,) int64, read-only
        The query's listed relevant ids, ascending (LISTED).
    id_grades : (n_listed,) int64, read-only
        Their grades (LISTED).
    limit : uint64
        Largest distance scanned.
    count : (n_bits + 1,) uint64
        Items per distance up to ``limit``, zeroed by the caller; written.
    records : (>= relevant items + 1,) uint64
        Written: the records of the relevant items within ``limit``.
    record_grades : (same as records,) int64
        Written: their grades.
    """
    n_db = db_words.shape[0]
    n_words = db_words.shape[1]
    m = np.int64(0)
    cursor = np.int64(0)
    if n_words == 1:
        word = query[0]
        j = _next_near(word, db_words, np.uint64(0), limit)
        while j < n_db:
            m, cursor = count_and_record(j, popcount64(word ^ db_words[j, 0]), kind, query_label, db_labels, label_row,
                                    db_label_words, ids, id_grades, cursor, count, records, record_grades, m)
            j = _next_near(word, db_words, j + np.uint64(1), limit)
        return m
    for j in range(np.uint64(n_db)):
        d = distance(query, db_words, j, n_words)
        if d <= limit:
            m, cursor = count_and_record(j, d, kind, query_label, db_labels, label_row, db_label_words, ids, id_grades,
                                    cursor, count, records, record_grades, m)
    return m


@jit(inline="always")
def class_grades(kind, gains, grades, item_gains):
    """Grades and gains of the relevant items of every query of a block, for CLASS relevance
    (all grade 1; :func:`place_records` leaves them alone): filled once, not per query."""
    if kind == CLASS:
        for p in range(grades.shape[0]):
            grades[p] = 1.0
            item_gains[p] = gains[1]


@jit(inline="always")
def place_records(kind, records, record_grades, n_found, top, first, rel_first, gains, ranks, grades, item_gains):
    """Ranks, grades and gains of the recorded relevant items at distances up to ``top``, in rank
    order: by distance, then index order within a distance (records are in index order).
    first[d] = items before distance d; rel_first[d] = recorded items before distance d
    (advanced here). For CLASS relevance the ranks only: every grade is 1, and the caller fills
    grades and gains once for all its queries (:func:`class_grades`).

    Parameters
    ----------
    kind : int
        Relevance kind: modes.CLASS, MULTIHOT or LISTED.
    records : (>= n_found,) uint64
        The query's records, index order (:func:`_scan_in_index_order`).
    record_grades : (>= n_found,) int64
        Their grades (not read for CLASS).
    n_found : int64
        Records to place.
    top : uint64
        Largest distance whose items are ranked.
    first : (n_bits + 1,) int64
        Items before each distance.
    rel_first : (n_bits + 1,) int64
        Recorded items before each distance; advanced (written).
    gains : (n_grades,) float64, read-only
        Gain of each grade.
    ranks : (>= ranked items,) int64
        Written: 1-based rank of each placed item, in rank order.
    grades : (>= ranked items,) float64
        Written (not for CLASS): their grades.
    item_gains : (>= ranked items,) float64
        Written (not for CLASS): their gains.
    """
    if kind == CLASS:  # one scattered store per item instead of three (2.2x faster)
        for p in range(n_found):
            d = records[p] & DISTANCE_MASK
            if d <= top:
                slot = rel_first[d]
                rel_first[d] = slot + 1
                ranks[slot] = first[d] + np.int64(records[p] >> DISTANCE_BITS) + 1
        return
    for p in range(n_found):
        d = records[p] & DISTANCE_MASK
        if d > top:
            continue
        slot = rel_first[d]
        rel_first[d] = slot + 1
        ranks[slot] = first[d] + np.int64(records[p] >> DISTANCE_BITS) + 1
        grades[slot] = record_grades[p]
        item_gains[slot] = gains[record_grades[p]]


@jit(inline="always")
def _fixed_order_totals(hist_q, gains):
    """Items, relevant items and the ideal order's runs (gain, count) of one query's counts."""
    n_dist, n_grades = hist_q.shape
    items = np.int64(0)
    n_rel = np.int64(0)
    for d in range(n_dist):
        for g in range(n_grades):
            items += hist_q[d, g]
            n_rel += hist_q[d, g] if g > 0 else 0
    ideal_gain, ideal_count = _ideal_runs(hist_q, gains)
    return items, n_rel, ideal_gain, ideal_count


@jit(inline="always")
def finalize_fixed_order(hist_q, ranks, grades, item_gains, relevant, gains, cutoffs, log_p, discount, optional, out_q,
                         scalars_q):
    """Base quantities of one query in a fixed order, from the ranks of its ranked relevant items
    (ascending) and its counts ``hist_q``: relevant items of ``hist_q`` left unranked (a bounded
    pass) count in R only. ERR takes the same ranks and grades (:func:`.err.err_ranked`), where
    the caller computes it.

    Parameters
    ----------
    hist_q : (n_bits + 1, n_grades) int64
        The query's counts by (distance, grade).
    ranks : (m,) int64
        1-based ranks of the ranked relevant items, ascending.
    grades : (m,) float64
        Their grades.
    item_gains : (m,) float64
        Their gains.
    relevant : (m,) bool
        All True (every ranked item is relevant); also passed as ``judged``.
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
        The query's base quantities; written.
    scalars_q : (N_SCALARS,) float64
        The query's scalars; written.
    """
    items, n_rel, ideal_gain, ideal_count = _fixed_order_totals(hist_q, gains)
    # every database item is judged: the ranked ones are relevant, the others not (np.bool_: a
    # literal True would type finalize_ranked once more than the ranked lists' False)
    finalize_ranked(
        ranks, grades, item_gains, relevant, relevant, items, np.bool_(True), n_rel - ranks.shape[0], items - n_rel,
        ideal_gain, ideal_count, cutoffs, log_p, discount, optional, out_q, scalars_q,
    )


@jit(inline="always")
def fixed_order_optional_sums(hist_q, ranks, grades, item_gains, relevant, gains, cutoffs, log_p, optional, out_q,
                              scalars_q):
    """The optional sums (:func:`.finalize.ranked_optional_sums`) of a query that
    :func:`finalize_fixed_order` has finalized, the same arguments.

    Parameters
    ----------
    hist_q : (n_bits + 1, n_grades) int64
        The query's counts by (distance, grade).
    ranks : (m,) int64
        1-based ranks of the ranked relevant items, ascending.
    grades : (m,) float64
        Their grades.
    item_gains : (m,) float64
        Their gains.
    relevant : (m,) bool
        All True; also passed as ``judged``.
    gains : (n_grades,) float64, read-only
        Gain of each grade.
    cutoffs : (K,) int64, read-only
        Cutoffs, ascending.
    log_p : (K,) float64, read-only
        log of RBP's persistence per cutoff column.
    optional : int
        Bit mask of the optional sums (finalize.OPTIONAL_*).
    out_q : (N_QUANTITIES, K) float64
        The query's base quantities; the optional rows are written.
    scalars_q : (N_SCALARS,) float64
        The query's scalars; bpref's sum and the interpolated precisions are written.
    """
    items, n_rel, ideal_gain, _ = _fixed_order_totals(hist_q, gains)
    ranked_optional_sums(ranks, grades, item_gains, relevant, relevant, items, np.bool_(True), items - n_rel,
                         ideal_gain, cutoffs, log_p, optional, out_q, scalars_q)


# queries of one class that share a sweep of the stable pass: the loop over them is unrolled, so
# their codes stay in registers and each database code is loaded once for all of them. 200 x 1M
# (64 bits, 10 classes, one thread): 0.86 ns per (query, item) one by one, 0.30 in sweeps of 16
# (AVX-512 machine). Eight, not 16: on an AVX2 EPYC (16 general registers) the 16-wide loop spills
# its count pointers and runs 1.2 ns per (query, item) against 1.0 for eight (320 queries x 1M,
# CPU time); eight queries' records fit the scratch budget for classes twice as large (a 20M
# database's classes of 2M relevant items are swept, not scanned one query at a time), and classes
# of 5-8 queries (64 queries, 10 classes) take one sweep of eight, not of 16 (docs/performance.md)
GROUP = 8
GROUP_MIN = 5  # smaller groups go one by one: a sweep of 8 costs what 3-4 single scans do (64 bits: 4.6 vs 1.47 ms per 1M codes)
# how a group is scanned (engine.group_sweeps): its queries one by one, one sweep with the counts
# in memory (_scan_class_group), or one sweep with the queries as vector lanes (.stable_lanes)
ONE_BY_ONE, SWEPT, LANES = 0, 1, 2


# row stride of a group's counts for codes of one word (distances 0..64): a constant folds each
# query's row into the increment's address, and rows 320 bytes apart share no cache line (200 x 1M,
# 64 bits, one thread on the AVX2 EPYC: 0.75 -> 0.57 ns per (query, item); a (GROUP, 65) array 0.63,
# a stride read at run time 0.69)
GROUP_STRIDE = 80


@jit
def _scan_class_group(query_words, rows, n_rows, db_words, db_labels, label, count, records, width):
    """:func:`_scan_in_index_order` for the queries ``rows[:n_rows]`` (at most :data:`GROUP`, all
    of class ``label``) in one sweep: the counts of query rows[r] at count[r * stride + d]
    (stride :data:`GROUP_STRIDE` for one-word codes, else len(count) // GROUP) and its records
    at records[r * width:r * width + m] (``width`` > m). Rows past n_rows repeat the first query
    (their results are not read). Returns m, the relevant items.

    The relevant items are the same for the whole group, so one branch per relevant item
    (mispredicted about once each) serves every query: each item costs a count per query, and
    a record only where it is relevant (the single-query scan writes one for every item).
    """
    n_words = db_words.shape[1]
    words = np.empty((GROUP, n_words), dtype=np.uint64)
    for r in range(GROUP):
        for w in range(n_words):
            words[r, w] = query_words[rows[min(r, n_rows - 1)], w]
    for k in range(count.shape[0]):
        count[k] = 0
    m = 0
    if n_words == 1:
        stride = np.uint64(GROUP_STRIDE)
        for j in range(np.uint64(db_words.shape[0])):
            x = db_words[j, 0]
            for r in range(GROUP):
                count[np.uint64(r) * stride + popcount64(words[r, 0] ^ x)] += np.uint32(1)
            if db_labels[j] == label:
                for r in range(GROUP):
                    d = popcount64(words[r, 0] ^ x)
                    before = np.uint64(count[np.uint64(r) * stride + d] - np.uint32(1))  # items at d before it
                    records[r * width + m] = (before << DISTANCE_BITS) | d
                m += 1
        return m
    stride = np.uint64(count.shape[0] // GROUP)
    distances = np.empty(GROUP, dtype=np.uint64)
    for j in range(np.uint64(db_words.shape[0])):
        for r in range(GROUP):
            distances[r] = 0
        for w in range(n_words):  # word by word: each database word is loaded once for the group
            x = db_words[j, w]
            for r in range(GROUP):
                distances[r] += popcount64(words[r, w] ^ x)
        for r in range(GROUP):
            count[np.uint64(r) * stride + distances[r]] += np.uint32(1)
        if db_labels[j] == label:
            for r in range(GROUP):
                d = distances[r]
                before = np.uint64(count[np.uint64(r) * stride + d] - np.uint32(1))
                records[r * width + m] = (before << DISTANCE_BITS) | d
            m += 1
    return m


@jit(inline="always")
def top_distance(hist_q, depth, first):
    """first[d] = items before distance d; returns the distance that holds rank ``depth`` >= 1
    (the last one a metric at cutoff ``depth`` looks at), as uint64."""
    n_dist, n_grades = hist_q.shape
    items = np.int64(0)
    top = np.uint64(0)
    for d in range(n_dist):
        first[d] = items
        if items < depth:
            top = np.uint64(d)
        for g in range(n_grades):
            items += hist_q[d, g]
    return top


@jit(inline="always")
def _finish_stable_query(kind, records, record_grades, n_found, count, counted, depth, hist_q, first, rel_first,
                         gains, ranks, grades, item_gains, relevant, cutoffs, log_p, discount, optional, out_q,
                         scalars_q):
    """One query's counts ``hist_q`` and base quantities from its scan: ``count[d]`` items at
    distance d and the records of its n_found relevant items (index order); or, ``counted``, the
    counts given and the records of the relevant items up to the distance that holds rank
    ``depth`` (:mod:`.stable_top`). Only the items at distances that reach rank ``depth`` are
    ranked (the others count in R). Returns the number of ranked items (ranks[:n]).

    Parameters
    ----------
    kind : int
        Relevance kind: modes.CLASS, MULTIHOT or LISTED.
    records : (>= n_found,) uint64
        The query's records from its scan, index order.
    record_grades : (>= n_found,) int64
        Their grades.
    n_found : int64
        Relevant items recorded.
    count : (n_bits + 1,) uint64
        Items at each distance (not read where ``counted``).
    counted : bool
        ``hist_q`` holds the query's counts already (the pass of ties="average").
    depth : int
        The deepest rank a metric reads.
    hist_q : (n_bits + 1, n_grades) int64
        The query's counts by (distance, grade): written, or read where ``counted``.
    first : (n_bits + 1,) int64
        Scratch: items before each distance.
    rel_first : (n_bits + 1,) int64
        Scratch: relevant items before each distance.
    gains : (n_grades,) float64, read-only
        Gain of each grade.
    ranks : (capacity,) int64
        Scratch: ranks of the ranked relevant items.
    grades : (capacity,) float64
        Scratch: their grades (for CLASS filled once by the caller: all 1.0).
    item_gains : (capacity,) float64
        Scratch: their gains.
    relevant : (capacity,) bool
        All True.
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
    """
    n_dist, n_grades = hist_q.shape
    if counted or kind == CLASS:  # the recorded items at each distance, from the records
        for d in range(n_dist):
            rel_first[d] = 0
        for p in range(n_found):
            rel_first[records[p] & DISTANCE_MASK] += 1
    if not counted:
        for d in range(n_dist):
            for g in range(n_grades):
                hist_q[d, g] = 0
        if kind == CLASS:  # grade 1: no grade read
            for d in range(n_dist):
                hist_q[d, 1] = rel_first[d]
        else:  # by grade, in the one pass over the records
            for p in range(n_found):
                hist_q[records[p] & DISTANCE_MASK, record_grades[p]] += 1
            for d in range(n_dist):
                at_d = np.int64(0)
                for g in range(1, n_grades):
                    at_d += hist_q[d, g]
                rel_first[d] = at_d
        for d in range(n_dist):
            hist_q[d, 0] = np.int64(count[d]) - rel_first[d]
    n_rel = np.int64(0)
    for d in range(n_dist):
        at_d = rel_first[d]
        rel_first[d] = n_rel
        n_rel += at_d
    top = top_distance(hist_q, depth, first)
    n_ranked = n_rel if top == np.uint64(n_dist - 1) else rel_first[top + np.uint64(1)]  # relevant items up to top
    place_records(kind, records, record_grades, n_found, top, first, rel_first, gains, ranks, grades, item_gains)
    finalize_fixed_order(
        hist_q, ranks[:n_ranked], grades[:n_ranked], item_gains[:n_ranked], relevant[:n_ranked], gains, cutoffs,
        log_p, discount, optional, out_q, scalars_q,
    )
    return n_ranked


def _stable_scan_kernel(lanes):
    """:func:`stable_scan`, and with ``lanes`` ``stable_scan_lanes``, whose sweeps of one-word codes
    are :func:`.stable_lanes.sweep_class_lanes` (run where the histogram pass is bit-sliced,
    :mod:`.cpu`): one source, two kernels; the first compiles no vector sweep."""

    def stable_scan(query_words, db_words, kind, query_labels, db_labels, query_label_words, db_label_words, indptr,
                    listed_ids, listed_grades, order, group_ptr, first_group, slot_start, slot_width, sweeps, records,
                    record_grades, record_start, n_found, counts):
        """The scans of the full stable pass for a batch of query groups: each query's counts by
        distance and the records of its relevant items, in index order, for :func:`finish_stable`.

        The batch's groups are first_group..first_group + len(slot_width) - 1. Group g holds the
        queries order[group_ptr[g]:group_ptr[g + 1]]: for CLASS relevance up to :data:`GROUP` queries
        of one class, swept in one pass as ``sweeps`` says (its slot then holds GROUP rows);
        otherwise one query each. Queries are numbered by their position in the
        batch, t = position in ``order`` - group_ptr[first_group].

        Parameters
        ----------
        query_words, db_words, kind, query_labels, db_labels
            The codes and the relevance, as :func:`_scan_query` takes them;
        query_label_words, db_label_words, indptr, listed_ids, listed_grades
            likewise.
        order : (n_queries,) int64
            The queries, those of one group consecutive (engine.stable_groups).
        group_ptr : (n_groups + 1,) int64
            Group g is order[group_ptr[g]:group_ptr[g + 1]].
        first_group : int
            The batch's first group.
        slot_start : (n_batch_groups,) int64
            Where each group's records start in ``records``.
        slot_width : (n_batch_groups,) int64
            Room per query row of each group: more than its queries' relevant items.
        sweeps : (n_batch_groups,) int64
            How each group is scanned: ONE_BY_ONE, SWEPT (:func:`_scan_class_group`) or, in the
            ``_lanes`` kernel, LANES (:func:`.stable_lanes.sweep_class_lanes`, codes of one word).
        records : (slots,) uint64
            Written: the records of the batch's queries (row r of a group at its start + r x width).
        record_grades : (slots,) int64
            Written by the scans of one query: their grades (a sweep's items, all grade 1, get none).
        record_start : (n_batch_queries,) int64
            Written: where the records of query t start.
        n_found : (n_batch_queries,) int64
            Written: its relevant items recorded.
        counts : (n_batch_queries, n_bits + 1) uint64
            Written: its items at each distance.
        """
        n_dist = counts.shape[1]
        # a sweep's counts, flat: GROUP rows of GROUP_STRIDE (one-word codes) or n_dist
        stride = GROUP_STRIDE if db_words.shape[1] == 1 else n_dist
        group_count = np.empty(GROUP * stride, dtype=np.uint32)
        if lanes:  # the lanes' sweep's scratch: its ripple planes in memory, a block's one-hot words
            high = np.empty((HIGH_ROWS, N_LANES), dtype=np.uint64)
            block = np.empty((BLOCK + 1, N_LANES), dtype=np.uint64)
        base = group_ptr[first_group]
        for k in range(slot_width.shape[0]):
            g = first_group + k
            lo = group_ptr[g]
            n_rows = group_ptr[g + 1] - lo
            width = slot_width[k]
            at = slot_start[k]
            if sweeps[k] != ONE_BY_ONE:
                rows = order[lo : lo + n_rows]
                if lanes and sweeps[k] == LANES:
                    m = sweep_class_lanes(query_words, rows, n_rows, db_words, db_labels, query_labels[rows[0]],
                                          group_count, records[at : at + GROUP * width], width, high, block)
                else:
                    m = _scan_class_group(query_words, rows, n_rows, db_words, db_labels, query_labels[rows[0]],
                                          group_count, records[at : at + GROUP * width], width)
                for r in range(n_rows):
                    t = lo + r - base
                    record_start[t] = at + r * width
                    n_found[t] = m
                    for d in range(n_dist):
                        counts[t, d] = group_count[r * stride + d]
            else:
                for r in range(n_rows):
                    t = lo + r - base
                    slot = at + r * width
                    record_start[t] = slot
                    n_found[t] = _scan_query(
                        order[lo + r], query_words, db_words, kind, query_labels, db_labels, query_label_words,
                        db_label_words, indptr, listed_ids, listed_grades, counts[t], records[slot : slot + width],
                        record_grades[slot : slot + width],
                    )

    return stable_scan


stable_scan, stable_scan_lanes = jit_variants(_stable_scan_kernel, {"": (False,), "_lanes": (True,)})


def _finish_stable_kernel(optional_sums):
    """:func:`finish_stable`, and with ``optional_sums`` ``finish_stable_optional``, which also
    computes ERR (a call that asks for neither the optional sums nor ERR compiles neither): one
    source, two kernels (:func:`._jit.jit_pair`)."""

    def finish_stable(kind, records, record_grades, record_start, n_found, counts, counted, rows, depth, hist, gains,
                      cutoffs, log_p, discount, optional, out, scalars, err_cutoffs, err_out, ranks, grades,
                      item_gains, relevant):
        """Histograms and base quantities, ties broken by database index (np.argsort(kind="stable")
        order), of the queries a :func:`stable_scan` scanned, or, ``counted``, base quantities of
        the queries whose counts ``hist`` holds and whose near items
        :func:`.stable_top.near_scan` recorded: query t of the batch is row rows[t].

        The scans and this finish are kernels of their own (called one after the other per batch)
        so that a cold first call compiles them side by side (:mod:`fasttie.finalize.cold_start`),
        and the two stable passes share the finish.

        Parameters
        ----------
        kind : int
            Relevance kind: modes.CLASS, MULTIHOT or LISTED.
        records : (slots,) uint64
            The batch's records (:func:`stable_scan`).
        record_grades : (slots,) int64
            Their grades (not read for CLASS).
        record_start : (n_batch,) int64
            Where the records of query t start.
        n_found : (n_batch,) int64
            Its relevant items recorded.
        counts : (n_batch, n_bits + 1) uint64
            Its items at each distance (not read where ``counted``).
        counted : bool
            ``hist`` holds the rows' counts (the pass of ties="average"), and the records are those
            up to the distance that holds rank ``depth``.
        rows : (n_batch,) int64
            The row of query t in ``hist`` and the outputs.
        depth : int
            The deepest rank a metric reads: items at distances past it are not ranked.
        hist : (n_queries, n_bits + 1, n_grades) int64
            Counts by (distance, grade) of the rows ``rows``: written, or read where ``counted``.
        gains : (n_grades,) float64, read-only
            Gain of each grade.
        cutoffs : (K,) int64, read-only
            Cutoffs, ascending.
        log_p : (K,) float64, read-only
            log of RBP's persistence per cutoff column.
        discount : (D + 1,) float64, read-only
            Cumulative DCG discount.
        optional : int
            Bit mask of the optional sums (finalize.OPTIONAL_*; the ``_optional`` kernel only).
        out : (n_queries, N_QUANTITIES, K) float64
            Written: base quantities of those rows.
        scalars : (n_queries, N_SCALARS) float64
            Written: their scalars.
        err_cutoffs : (n_err,) int64, read-only
            ERR cutoffs, ascending; empty: no ERR (the ``_optional`` kernel only).
        err_out : (n_queries, n_err) float64
            Written: ERR of those rows (the ``_optional`` kernel only).
        ranks : (>= max(n_found),) int64
            Scratch: ranks of a query's ranked relevant items.
        grades : (same,) float64
            Scratch: their grades; for CLASS all 1.0, filled by the caller (not written here).
        item_gains : (same,) float64
            Scratch: their gains; for CLASS all the gain of grade 1, filled by the caller.
        relevant : (same,) bool
            All True.

        The scratch comes from the caller, allocated once for all the batches of a block: allocated
        per batch, its pages were faulted in again for every group (64 x 20M codes, one thread:
        148k minor faults against 6k, 10-20 % of the pass).
        """
        n_dist = hist.shape[1]
        first = np.empty(n_dist, dtype=np.int64)  # items before distance d
        rel_first = np.empty(n_dist, dtype=np.int64)  # relevant items before distance d
        for t in range(rows.shape[0]):
            i = rows[t]
            at = record_start[t]
            n_ranked = _finish_stable_query(
                kind, records[at:], record_grades[at:], n_found[t], counts[t], counted, depth, hist[i], first, rel_first,
                gains, ranks, grades, item_gains, relevant, cutoffs, log_p, discount, optional, out[i], scalars[i],
            )
            if optional_sums:
                if err_cutoffs.shape[0] > 0:
                    err_ranked(ranks[:n_ranked], grades[:n_ranked], err_cutoffs, err_out[i])
                fixed_order_optional_sums(hist[i], ranks[:n_ranked], grades[:n_ranked], item_gains[:n_ranked],
                                          relevant[:n_ranked], gains, cutoffs, log_p, optional, out[i], scalars[i])

    return finish_stable


finish_stable, finish_stable_optional = jit_pair(_finish_stable_kernel)


@jit
def ranks_of_records(kind, records, record_grades, record_start, n_found, rows, first, out_indptr, out_ranks,
                     out_grades):
    """Global ranks (ties in database index order) and grades of the relevant items a batch of
    scans recorded (:func:`stable_scan`, :func:`.stable_top.near_scan`) in one part of the
    database: the stable pass of a database in parts, and the ranks within a radius.

    Query t of the batch is row rows[t]; its records (index order) go to out_ranks /
    out_grades[out_indptr[row]:out_indptr[row + 1]] in rank order: by distance, index order
    within one (a counting sort by distance, as :func:`place_records`).

    Parameters
    ----------
    kind : int
        Relevance kind: modes.CLASS (every grade 1: the scans write none), MULTIHOT or LISTED.
    records : (slots,) uint64, read-only
        The batch's records.
    record_grades : (slots,) int64, read-only
        Their grades (not read for CLASS).
    record_start : (n_batch,) int64, read-only
        Where the records of query t start.
    n_found : (n_batch,) int64, read-only
        Its relevant items recorded.
    rows : (n_batch,) int64, read-only
        The row of query t.
    first : (n_queries, n_bits + 1) int64, read-only
        Items ranked before the part's first item at each distance.
    out_indptr : (n_queries + 1,) int64, read-only
        Row i's slots in out_ranks / out_grades: as many as its records.
    out_ranks : (out_indptr[-1],) int64
        Written: global 1-based ranks, ascending per row, of the batch's rows.
    out_grades : (out_indptr[-1],) int64
        Written: their grades.

    Returns
    -------
    bool
        False where a query's records are not as many as its slots (nothing of it written).
    """
    n_dist = first.shape[1]
    slot = np.empty(n_dist, dtype=np.int64)
    for t in range(rows.shape[0]):
        i = rows[t]
        at = record_start[t]
        if out_indptr[i + 1] - out_indptr[i] != n_found[t]:
            return False
        for d in range(n_dist):
            slot[d] = 0
        for p in range(at, at + n_found[t]):
            slot[records[p] & DISTANCE_MASK] += 1
        start = out_indptr[i]
        for d in range(n_dist):
            n_at = slot[d]
            slot[d] = start
            start += n_at
        for p in range(at, at + n_found[t]):
            d = records[p] & DISTANCE_MASK
            s = slot[d]
            slot[d] = s + 1
            out_ranks[s] = first[i, d] + np.int64(records[p] >> DISTANCE_BITS) + 1
            out_grades[s] = 1 if kind == CLASS else record_grades[p]
    return True


def _finalize_ranked_queries_kernel(optional_sums):
    """:func:`finalize_ranked_queries`, and with ``optional_sums``
    ``finalize_ranked_queries_optional``: one source, two kernels (:func:`._jit.jit_pair`)."""

    def finalize_ranked_queries(hist, indptr, ranks, grade_of, gains, cutoffs, log_p, discount, optional, out, scalars,
                                err_cutoffs, err_out, start, stop):
        """Base quantities of queries start..stop-1 from the sorted global ranks and grades of
        their relevant items (query i: ranks / grade_of[indptr[i]:indptr[i + 1]], ascending ranks)
        and their whole-database counts ``hist``: what :func:`finish_stable` (or, with the items of
        the bounded pass only, :func:`.stable_top.finalize_stable_top`) computes on one machine,
        with the same arithmetic (so the same bits).

        Parameters
        ----------
        hist : (n_queries, n_bits + 1, n_grades) int64
            Whole-database counts by (distance, grade).
        indptr : (n_queries + 1,) int64, read-only
            Query i's relevant items are ranks / grade_of[indptr[i]:indptr[i + 1]].
        ranks : (nnz,) int64, read-only
            Global 1-based ranks, ascending within each query.
        grade_of : (nnz,) int64, read-only
            Their grades.
        gains : (n_grades,) float64, read-only
            Gain of each grade.
        cutoffs : (K,) int64, read-only
            Cutoffs, ascending.
        log_p : (K,) float64, read-only
            log of RBP's persistence per cutoff column.
        discount : (D + 1,) float64, read-only
            Cumulative DCG discount.
        optional : int
            Bit mask of the optional sums (finalize.OPTIONAL_*; the ``_optional`` kernel only).
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
        capacity = 0
        for i in range(start, stop):
            capacity = max(capacity, indptr[i + 1] - indptr[i])
        # the ranks copied (writable): the finalizers then take the types of every other caller,
        # one compiled signature (:mod:`.address`)
        query_ranks = np.empty(capacity, dtype=np.int64)
        grades = np.empty(capacity, dtype=np.float64)
        item_gains = np.empty(capacity, dtype=np.float64)
        relevant = filled(np.empty(capacity, dtype=np.bool_), True)
        for i in range(start, stop):
            lo = indptr[i]
            n_found = indptr[i + 1] - lo
            for p in range(n_found):
                query_ranks[p] = ranks[lo + p]
                grades[p] = grade_of[lo + p]
                item_gains[p] = gains[grade_of[lo + p]]
            # a bounded pass (cutoffs only) ranks the relevant items near enough: the others count in R only
            finalize_fixed_order(
                hist[i], query_ranks[:n_found], grades[:n_found], item_gains[:n_found], relevant[:n_found], gains,
                cutoffs, log_p, discount, optional, out[i], scalars[i],
            )
            if err_cutoffs.shape[0] > 0:
                err_ranked(query_ranks[:n_found], grades[:n_found], err_cutoffs, err_out[i])
            if optional_sums:
                fixed_order_optional_sums(hist[i], query_ranks[:n_found], grades[:n_found], item_gains[:n_found],
                                          relevant[:n_found], gains, cutoffs, log_p, optional, out[i], scalars[i])

    return finalize_ranked_queries


finalize_ranked_queries, finalize_ranked_queries_optional = jit_pair(_finalize_ranked_queries_kernel)
