"""The histogram pass: per query, counts of database items by (Hamming distance, grade).

This is a counting sort by distance: the finalizers only need how many items of each grade sit
at each distance, never their order. Everything else in fasttie costs under a percent of this
pass, so its inner loops are written for the hardware:

* popcount through LLVM's ``ctpop`` (``popcnt``), indices kept unsigned (no wraparound checks);
* class labels never enter the hot loop: for a query of class ``c`` the relevant items are one
  contiguous segment and the grade is constant on each range of the loop. For one-word codes the
  engine orders the database by class (a counting sort, O(n_db)); wider codes are ordered tile by
  tile, in cache, as each tile is copied (no class-sorted copy of the database);
* query blocking: the database goes by tiles that stay in cache while every query of the block
  passes over them, so a database larger than the cache is read from memory once per block, not
  once per query;
* queries go in pairs, so each database code is loaded once for two queries; at most 64 bits
  the pair shares one joint (distance_0, distance_1) histogram: half the memory increments,
  spread over (bits+1)^2 buckets rather than queueing on the few most common distances. The
  marginals are summed afterwards. The cells of a chunk of codes are computed first, in a loop
  LLVM vectorizes (``vpopcntq`` on AVX-512, a nibble-table popcount on AVX2), then counted,
  the uint16 cells read four per load (the counting loop is bound by its loads and stores). On
  AVX-512 these loops are vectorized on whole zmm registers (:func:`.simd.full_width`: LLVM's
  tuning for Intel servers would take ymm; the multi-hot pass 10-14 % faster);
* from two words (65 bits) on, where scalar popcounts bound the loop, the tiles are copied to
  word-major order (rows padded off a multiple of 4 KB: one L1 set would hold a whole column),
  so LLVM vectorizes the distances of a pair to a whole tile (a vpshufb popcount on AVX2); up to
  four words each query then counts into four interleaved histograms, since its distances crowd
  into few buckets and one bucket's increments would wait on each other. On AVX-512 the
  distances of eight codes (``vpopcntq`` on zmm registers) and the counting of those of a few
  groups before share one loop (:func:`_count_range_fused`), so that the vector unit and the
  load and store ports work at once;
* on CPUs with AVX-512 VPOPCNTDQ, codes of one and two words are counted bit-sliced instead
  (:mod:`.bitsliced`, chosen by :mod:`.cpu`): no memory increment per code at all, and no
  class-sorted copy of the database.

Counts are int32 inside a database slice of at most 2**30 items and flushed to int64."""

import functools

import numpy as np
from ._jit import jit, jit_variants
from .filled import filled_rows
from .class_sort import block_classes, block_workspace
from .cpu import target_has_avx512
from .popcount import distance, popcount64
from .simd import add, full_width, load, popcount, shift_left, splat, store, xor

_SLICE = 1 << 30  # database items per int32 accumulation round
_TILE = 4096  # codes per tile of the tiled pass: 32 KB per word, stays in L2 while a block of queries passes
# words of padding after each row of a word-major tile: rows 32 KB apart put word w of every code of
# a column in one L1 set, which more than 8 words overflow (1024 bits: the copy took 3.5x as long)
_TILE_PAD = 8  # also the lanes that the fused pass reads past a tile's last code (at most 7)
_TILE_ROWS = 1 << 15  # codes per tile of the row-major passes (one word, multi-hot): read from memory once per block
_JOINT_BLOCK = 32  # queries per block of the joint pass (even): 16 joint histograms of 68 KB
_CELLS = 2048  # codes whose joint-histogram cells are computed at once (4 KB of uint16, in L1)
# rows of a joint histogram: 65 whatever the width (distances 0..64 of a word), a constant the
# cells' loop multiplies by in a shift and an add, where a runtime stride takes a vpmullq
_JOINT_STRIDE = 65
_COPIES = 4  # histograms a query in the tiled pass (_count_tile_range is unrolled for four)
# up to four words in the two-loop kernel: wider codes spread their distances over more buckets,
# and four copies of their longer histograms crowd L1 (512 and 1024 bits: 3-5 % slower with them);
# the fused kernel counts into four copies at every width
_COPIES_WORDS = 4
_LAG = 4  # groups of eight codes between their distances and their counting in the fused tiled pass
_RING = 8  # ring rows of the fused tiled pass, a group each (a power of two above _LAG)


@jit(inline="always")
def _count_cells(counts, offset, cells, n):
    """counts[offset + cells[t]] += 1 for t < n, the uint16 cells read four at a time: one load
    of a uint64 for four increments (the loop is bound by its loads and stores; 0.47 -> 0.42 ns
    per code in L2)."""
    four_cells = cells.view(np.uint64)
    low = np.uint64(0xFFFF)
    for t in range(np.uint64(n // 4)):
        v = four_cells[t]
        counts[offset + (v & low)] += 1
        counts[offset + ((v >> np.uint64(16)) & low)] += 1
        counts[offset + ((v >> np.uint64(32)) & low)] += 1
        counts[offset + (v >> np.uint64(48))] += 1
    for t in range(np.uint64(n // 4 * 4), np.uint64(n)):
        counts[offset + cells[t]] += 1


@jit
def _count_range_joint(joint, offset, query_0, query_1, db_words, start, stop, cells):
    """joint[offset + _JOINT_STRIDE * distance_0 + distance_1] += 1 (one word per code), by chunks of
    _CELLS codes: first their cells, in a loop LLVM vectorizes (``vpopcntq`` on AVX-512, a
    nibble-table popcount on AVX2), then one memory increment per code. cells: (_CELLS,) uint16
    scratch."""
    full_width()
    q0 = query_0[0]
    q1 = query_1[0]
    codes = db_words.reshape(db_words.shape[0])  # one word per code: contiguous
    for lo in range(start, stop, _CELLS):
        chunk = codes[lo:min(lo + _CELLS, stop)]
        for t in range(len(chunk)):  # vectorized
            x = chunk[t]
            cells[t] = np.uint16(np.uint64(_JOINT_STRIDE) * popcount64(q0 ^ x) + popcount64(q1 ^ x))
        _count_cells(joint, offset, cells, len(chunk))


@jit
def _tile_distances(query_0, query_1, tile, n, dist_0, dist_1):
    """Distances of two queries to the first n codes of a word-major tile (tile[w, t] = word w
    of code t). The loops over codes are vectorized by LLVM (on AVX2 a vpshufb nibble-table
    popcount of four codes at a time), which scalar popcnt on row-major codes cannot be."""
    # two and four words unrolled (deliberately alike): the query words stay in registers (256 bits:
    # 0.86 G pairs/s against 0.74 for the word-by-word loop below; 128 bits: 2.00 against 1.55)
    if tile.shape[0] == 2:
        a0 = query_0[0]
        a1 = query_0[1]
        b0 = query_1[0]
        b1 = query_1[1]
        t0 = tile[0]
        t1 = tile[1]
        for t in range(n):
            x0 = t0[t]
            x1 = t1[t]
            dist_0[t] = popcount64(a0 ^ x0) + popcount64(a1 ^ x1)
            dist_1[t] = popcount64(b0 ^ x0) + popcount64(b1 ^ x1)
    elif tile.shape[0] == 4:
        a0 = query_0[0]
        a1 = query_0[1]
        a2 = query_0[2]
        a3 = query_0[3]
        b0 = query_1[0]
        b1 = query_1[1]
        b2 = query_1[2]
        b3 = query_1[3]
        t0 = tile[0]
        t1 = tile[1]
        t2 = tile[2]
        t3 = tile[3]
        for t in range(n):
            x0 = t0[t]
            x1 = t1[t]
            x2 = t2[t]
            x3 = t3[t]
            dist_0[t] = popcount64(a0 ^ x0) + popcount64(a1 ^ x1) + popcount64(a2 ^ x2) + popcount64(a3 ^ x3)
            dist_1[t] = popcount64(b0 ^ x0) + popcount64(b1 ^ x1) + popcount64(b2 ^ x2) + popcount64(b3 ^ x3)
    else:  # any width: word by word, each word's loop vectorized
        for t in range(n):
            dist_0[t] = 0
            dist_1[t] = 0
        for w in range(tile.shape[0]):
            a = query_0[w]
            b = query_1[w]
            row = tile[w]
            for t in range(n):
                x = row[t]
                dist_0[t] += popcount64(a ^ x)
                dist_1[t] += popcount64(b ^ x)


@jit(inline="always")
def _sorted_bounds(bounds, rel_0, rel_1, n_db):
    """bounds[:6] = 0, n_db and the ends of both queries' relevant segments, sorted: their grades
    are constant between consecutive bounds."""
    bounds[0], bounds[1], bounds[2], bounds[3], bounds[4], bounds[5] = 0, rel_0[0], rel_0[1], rel_1[0], rel_1[1], n_db
    for a in range(1, 6):  # insertion sort: np.sort would compile a whole quicksort
        b = a
        while b > 0 and bounds[b - 1] > bounds[b]:
            bounds[b - 1], bounds[b] = bounds[b], bounds[b - 1]
            b -= 1


@jit(inline="always")
def _grade_range(bounds, b, lo, hi, rel_0, rel_1):
    """The b-th range between consecutive bounds, cut to the slice [lo, hi), and whether it lies
    in each query's relevant segment: (start, stop, relevant_0, relevant_1)."""
    start = max(bounds[b], lo)
    stop = min(bounds[b + 1], hi)
    r0 = np.uint64(1) if rel_0[0] <= start and stop <= rel_0[1] else np.uint64(0)
    r1 = np.uint64(1) if rel_1[0] <= start and stop <= rel_1[1] else np.uint64(0)
    return start, stop, r0, r1


@jit(inline="always")
def _pair_bounds(rel_segments, n_db, start, stop):
    """(n_pairs, 6) sorted segment ends of each query pair of queries start..stop-1 (an odd
    query out pairs with itself): see :func:`_sorted_bounds`."""
    n_pairs = (stop - start + 1) // 2
    bounds = np.empty((n_pairs, 6), dtype=np.int64)
    for p in range(n_pairs):
        i = start + 2 * p
        j = i + 1 if i + 1 < stop else i
        _sorted_bounds(bounds[p], rel_segments[i], rel_segments[j], n_db)
    return bounds


@jit
def hist_segments_one_word(query_words, db_words, rel_segments, n_bits, hist, start, stop):
    """Counts by (distance, grade) of queries start..stop-1 (start even: queries go in pairs) for
    codes of one word (at most 64 bits), relevant items given as segments of the database (its
    class-sorted copy's; none for listed relevance). Wider codes go through
    :func:`hist_classes_tiled`.

    Each pair shares one joint (distance_0, distance_1) histogram: one increment per code for
    two queries, spread over (bits+1)^2 buckets rather than queueing on the few most common
    distances; the marginals are summed at each flush. The queries go by blocks of _JOINT_BLOCK
    (their joint histograms stay in cache), the database by tiles of _TILE_ROWS codes, each
    read from memory once for every pair of the block (query blocking).

    Parameters
    ----------
    query_words : (n_queries, 1) uint64
    db_words : (n_db, 1) uint64, ordered so that each query's relevant items are
        db_words[rel_segments[i, 0]:rel_segments[i, 1]] (class-sorted database); (0, 0) = none
    rel_segments : (n_queries, 2) int64
    n_bits : int
    hist : (n_queries, n_bits + 1, n_grades >= 2) int64, zero on entry; hist[i, d, g] =
        items of grade g at distance d (grades 0 and 1 only here)
    start, stop : int
        The queries to count.
    """
    for block_start in range(start, stop, _JOINT_BLOCK):
        _one_word_block(query_words, db_words, rel_segments, n_bits, hist, block_start,
                        min(block_start + _JOINT_BLOCK, stop))


@jit
def _one_word_block(query_words, db_words, rel_segments, n_bits, hist, start, stop):
    """:func:`hist_segments_one_word` of one block of queries."""
    n_db = db_words.shape[0]
    n_dist = n_bits + 1
    stride = np.uint64(_JOINT_STRIDE)
    n_pairs = (stop - start + 1) // 2
    joint = filled_rows(np.empty((n_pairs, 4 * _JOINT_STRIDE * _JOINT_STRIDE), dtype=np.int32), 0)
    cells = np.empty(_CELLS, dtype=np.uint16)
    bounds = _pair_bounds(rel_segments, n_db, start, stop)
    for lo_slice in range(0, n_db, _SLICE):
        hi_slice = min(lo_slice + _SLICE, n_db)
        for lo in range(lo_slice, hi_slice, _TILE_ROWS):
            hi = min(lo + _TILE_ROWS, hi_slice)
            for p in range(n_pairs):
                i = start + 2 * p
                j = i + 1 if i + 1 < stop else i
                for b in range(5):
                    first, last, r0, r1 = _grade_range(bounds[p], b, lo, hi, rel_segments[i], rel_segments[j])
                    if first < last:
                        offset = (np.uint64(2) * r0 + r1) * stride * stride
                        _count_range_joint(joint[p], offset, query_words[i], query_words[j], db_words, first, last,
                                           cells)
        # flush before int32 could overflow; the marginals are the two histograms
        for p in range(n_pairs):
            i = start + 2 * p
            j = i + 1 if i + 1 < stop else i
            for r0 in range(2):
                for r1 in range(2):
                    base = (2 * r0 + r1) * _JOINT_STRIDE * _JOINT_STRIDE
                    for d0 in range(n_dist):
                        row = base + d0 * _JOINT_STRIDE
                        for d1 in range(n_dist):
                            c = joint[p, row + d1]
                            if c:
                                hist[i, d0, r0] += c
                                if j > i:
                                    hist[j, d1, r1] += c
                                joint[p, row + d1] = 0


@jit(inline="always")
def _flush_counts(counts, hist, n_dist, start, stop, interleaved):
    """hist[start + q, d, r] += the sum over copies c of counts[q, (2c + r) * n_dist + d], or of
    counts[q, (r * n_dist + d) * copies + c] where ``interleaved`` (int32 to int64; one copy but
    in the tiled pass up to _COPIES_WORDS words, four in its fused kernel), and counts back to 0."""
    copies = counts.shape[1] // (2 * n_dist)
    for q in range(stop - start):
        for c in range(copies):
            for r in range(2):
                for d in range(n_dist):
                    k = (r * n_dist + d) * copies + c if interleaved else (2 * c + r) * n_dist + d
                    hist[start + q, d, r] += counts[q, k]
                    counts[q, k] = 0


@jit
def _count_tile_range(counts_0, counts_1, offset_0, offset_1, dist_0, dist_1, start, stop, copies):
    """counts_q[offset_q + dist_q[t]] += 1 for t in [start, stop) of a tile, in ``copies``
    histograms a query (_COPIES or 1; rows of ``counts_q.reshape(copies, -1)``), the codes into
    the copies in turn: increments of one distance in a row then go to different counters, not
    through one counter's load-add-store chain."""
    one, two, three = np.uint64(1), np.uint64(2), np.uint64(3)  # unsigned: no wraparound checks in the indices
    span = np.uint64(len(counts_0) // _COPIES)
    whole = np.uint64(start if copies == 1 else start + (stop - start) // _COPIES * _COPIES)
    for t in range(np.uint64(start), whole, np.uint64(_COPIES)):
        counts_0[offset_0 + dist_0[t]] += 1
        counts_1[offset_1 + dist_1[t]] += 1
        counts_0[span + offset_0 + dist_0[t + one]] += 1
        counts_1[span + offset_1 + dist_1[t + one]] += 1
        counts_0[two * span + offset_0 + dist_0[t + two]] += 1
        counts_1[two * span + offset_1 + dist_1[t + two]] += 1
        counts_0[three * span + offset_0 + dist_0[t + three]] += 1
        counts_1[three * span + offset_1 + dist_1[t + three]] += 1
    for t in range(whole, np.uint64(stop)):
        counts_0[offset_0 + dist_0[t]] += 1
        counts_1[offset_1 + dist_1[t]] += 1


@jit(inline="always")
def _gather_tile(db_words, db_ids, lo, hi, slot_of, tile, slots, runs):
    """Rows lo..hi-1 of the database copied to word-major order (tile[w, t] = word w of code t),
    ordered by slot (slot_of[class]: 1.. for the block's classes, 0 for the others), in row order
    within a slot; runs[s] = slot s's [start, stop) in the tile for s >= 1 (runs[0] stays (0, 0):
    no segment). slots: (_TILE,) scratch."""
    n_words = db_words.shape[1]
    n_runs = runs.shape[0]
    for s in range(n_runs):
        runs[s, 1] = 0
    for t in range(hi - lo):
        s = slot_of[db_ids[lo + t]]
        slots[t] = s
        runs[s, 1] += 1
    position = runs[0, 1]  # the other classes' codes first
    runs[0, 1] = 0  # cursor of slot 0
    for s in range(1, n_runs):
        runs[s, 0] = position
        position += runs[s, 1]
        runs[s, 1] = runs[s, 0]  # cursor: the run's next free column
    for t in range(hi - lo):
        s = slots[t]
        column = runs[s, 1]
        runs[s, 1] = column + 1
        for w in range(n_words):
            tile[w, column] = db_words[lo + t, w]
    runs[0, 1] = 0


@jit(inline="always")
def _count_group(counts_0, counts_1, ring, row):
    """counts_q[4 * (distance to query q) + k % 4] += 1 for the eight lanes k of a ring row (a group
    of eight codes), lane k holding 4 * the distance to query 0 in its low 32 bits and to query 1
    in its high ones: one load and one store of the ring for both queries (half of them: 5 %
    faster at 256 bits, 10-20 % at 192), and the four copies of a counter side by
    side, lane k into copy k % 4 (see :func:`_count_tile_range`), all at constant offsets from
    one base register."""
    low, high = np.uint64(0xFFFFFFFF), np.uint64(32)
    for k in range(8):  # a constant trip count: LLVM unrolls it, each k % 4 a constant offset
        v = ring[row, k]
        copy = np.uint64(k % 4)
        counts_0[(v & low) + copy] += 1
        counts_1[(v >> high) + copy] += 1


@jit(inline="always")
def _group_four_words(flat, row_length, t, lanes):
    """Distances of the eight four-word codes from column t of a word-major tile (``flat``: the
    tile as one column, row w at w * row_length) to two queries, whose words are ``lanes``
    (splatted: a0..a3, then b0..b3)."""
    a0, a1, a2, a3, b0, b1, b2, b3 = lanes
    x0 = load(flat, t)
    x1 = load(flat, row_length + t)
    x2 = load(flat, 2 * row_length + t)
    x3 = load(flat, 3 * row_length + t)
    d0 = add(add(popcount(xor(x0, a0)), popcount(xor(x1, a1))), add(popcount(xor(x2, a2)), popcount(xor(x3, a3))))
    d1 = add(add(popcount(xor(x0, b0)), popcount(xor(x1, b1))), add(popcount(xor(x2, b2)), popcount(xor(x3, b3))))
    return d0, d1


@jit(inline="always")
def _group_any_words(flat, row_length, t, lanes):
    """:func:`_group_four_words` for codes of any width, the query words (lanes: the two queries)
    broadcast from memory word by word."""
    query_0, query_1 = lanes
    d0 = splat(np.uint64(0))
    d1 = d0
    for w in range(query_0.shape[0]):
        x = load(flat, w * row_length + t)
        d0 = add(d0, popcount(xor(x, splat(query_0[w]))))
        d1 = add(d1, popcount(xor(x, splat(query_1[w]))))
    return d0, d1


@jit(inline="always")
def _pipeline(counts_0, counts_1, flat, row_length, start, stop, ring, distances, lanes):
    """:func:`_count_range_fused` with the group's distances from ``distances(flat, row_length, t,
    lanes)``: the distances of group g + _LAG are computed, and stored to the ring (times four,
    both queries' in one word: :func:`_count_group`), in the iteration that counts group g."""
    two, thirty_four = splat(np.uint64(2)), splat(np.uint64(34))
    n_groups = (stop - start + 7) // 8
    ahead = min(_LAG, n_groups)
    for g in range(ahead):
        d0, d1 = distances(flat, row_length, start + 8 * g, lanes)
        store(ring, g % _RING, add(shift_left(d0, two), shift_left(d1, thirty_four)))
    for g in range(n_groups - ahead):
        d0, d1 = distances(flat, row_length, start + 8 * (g + _LAG), lanes)
        store(ring, (g + _LAG) % _RING, add(shift_left(d0, two), shift_left(d1, thirty_four)))
        _count_group(counts_0, counts_1, ring, g % _RING)
    last = (n_groups - 1) % _RING
    spare = np.uint64(len(counts_0) - 4) + (np.uint64(len(counts_1) - 4) << np.uint64(32))
    for k in range(stop - start - 8 * (n_groups - 1), 8):  # lanes past stop: to the spare counters
        ring[last, k] = spare
    for g in range(n_groups - ahead, n_groups):
        _count_group(counts_0, counts_1, ring, g % _RING)


@jit(_nrt=False)
def _count_range_fused(counts_0, counts_1, query_0, query_1, flat, row_length, start, stop, ring):
    """counts_q[4 * (distance of query_q to code t) + t % 4] += 1 for the codes t in [start, stop)
    of a word-major tile, in four copies side by side (:func:`_count_group`): the distances and
    the counting in one loop, eight codes at a time (:mod:`.simd`: ``vpopcntq`` on zmm
    registers), the query words broadcast from memory word by word (:func:`_count_range_four`:
    four-word codes, the query words in registers). The vector unit computes the
    distances while the load and store ports count those of a few groups before, which two
    loops, one after the other, cannot overlap (1.2-1.9x on AVX-512 at 128 to 512 bits). A
    group's distances go through ``ring`` (_RING, 8) uint64 and are read back _LAG groups
    later: read right after the vector store, each lane would wait for the store to leave the
    store buffer (no forwarding from a 512-bit store to a scalar load): 4.5x slower. The lanes
    of the last group past ``stop`` (the tile is padded) go to four spare counters at the end of
    each histogram row, never read."""
    _pipeline(counts_0, counts_1, flat, row_length, start, stop, ring, _group_any_words, (query_0, query_1))


@jit(_nrt=False)
def _count_range_four(counts_0, counts_1, query_0, query_1, flat, row_length, start, stop, ring):
    """:func:`_count_range_fused` of four-word codes (256 bits), the words of both queries held in
    registers (10-15 % faster than broadcast from memory)."""
    lanes = (splat(query_0[0]), splat(query_0[1]), splat(query_0[2]), splat(query_0[3]),
             splat(query_1[0]), splat(query_1[1]), splat(query_1[2]), splat(query_1[3]))
    _pipeline(counts_0, counts_1, flat, row_length, start, stop, ring, _group_four_words, lanes)


def _make_tiled(fused, four_words):
    """The tiled pass, its distances and counting in two loops (LLVM vectorizes the first) or
    fused (:func:`_count_range_fused`), of codes of any width or of four words only
    (:func:`_count_range_four`); constants to numba: each kernel compiles its own loops."""

    def hist_classes_tiled(query_words, query_ids, db_words, db_ids, n_bits, hist, start, stop, workspace):
        """Counts by (distance, grade) of queries start..stop-1 for codes of two or more words (65
        bits and up), grade 1 the database items of the query's class (the ``_fused`` kernels:
        distances and counting in one loop, the pass on AVX-512; ``_fused_four``: four-word codes
        only; see :func:`tiled_pass`).

        The database is read as it lies, by tiles of _TILE codes: each is copied to word-major
        order once per block of queries, its items of the block's classes gathered by class on the
        way (no class-sorted copy of the database), then every query pair of the block computes its
        distances to the whole tile (vectorized, see :func:`_tile_distances`, or fused with the
        counting: :func:`_count_range_fused`) and counts them range by range of constant grade. A
        tile is read from memory once per block of queries rather than once per pair. The
        arguments are those of :func:`.bitsliced.hist_classes_bitsliced`, the workspace from
        :func:`tiled_workspace` (the engine calls either pass alike: :func:`tiled_pass`).
        """
        n_db = db_words.shape[0]
        n_words = db_words.shape[1]
        n_dist = n_bits + 1
        stride = np.uint64(n_dist)
        n_pairs = (stop - start + 1) // 2
        slot_of, query_slot, all_runs, slots, bounds, counts, tile, flat, ring, dist_0, dist_1 = workspace
        n_slots = block_classes(query_ids, start, stop, slot_of, query_slot)
        runs = all_runs[:n_slots + 1]
        copies = counts.shape[1] // (2 * n_dist)  # int32 histograms a query
        for lo_slice in range(0, n_db, _SLICE):
            hi_slice = min(lo_slice + _SLICE, n_db)
            for lo in range(lo_slice, hi_slice, _TILE):
                hi = min(lo + _TILE, hi_slice)
                n = hi - lo
                if n_slots > 0:
                    _gather_tile(db_words, db_ids, lo, hi, slot_of, tile, slots, runs)
                else:  # no query of the block has a class: every item grade 0
                    for t in range(n):
                        for w in range(n_words):
                            tile[w, t] = db_words[lo + t, w]
                for p in range(n_pairs):
                    i = start + 2 * p
                    j = i + 1 if i + 1 < stop else i
                    if not fused:
                        _tile_distances(query_words[i], query_words[j], tile, n, dist_0, dist_1)
                    rel_0, rel_1 = runs[query_slot[i - start]], runs[query_slot[j - start]]
                    _sorted_bounds(bounds, rel_0, rel_1, n)
                    for b in range(5):
                        first, last, r0, r1 = _grade_range(bounds, b, 0, n, rel_0, rel_1)
                        if first < last:
                            c0, c1 = counts[2 * p], counts[2 * p + 1]
                            if fused and four_words:  # the grade's four interleaved copies
                                _count_range_four(c0[4 * r0 * stride:], c1[4 * r1 * stride:], query_words[i],
                                                  query_words[j], flat, tile.shape[1], first, last, ring)
                            elif fused:
                                _count_range_fused(c0[4 * r0 * stride:], c1[4 * r1 * stride:], query_words[i],
                                                   query_words[j], flat, tile.shape[1], first, last, ring)
                            else:
                                _count_tile_range(c0, c1, r0 * stride, r1 * stride, dist_0, dist_1, first, last,
                                                  copies)
            _flush_counts(counts, hist, n_dist, start, stop, fused)

    return hist_classes_tiled


hist_classes_tiled, hist_classes_tiled_fused, hist_classes_tiled_fused_four = jit_variants(
    _make_tiled, {"": (False, False), "_fused": (True, False), "_fused_four": (True, True)})


def tiled_kernel(n_words):
    """The tiled kernel this target runs for codes of ``n_words`` words: where numba compiles for
    AVX-512 VPOPCNTDQ (:func:`.cpu.target_has_avx512`) :func:`hist_classes_tiled_fused`, or its
    ``_four`` twin for four words (256 bits; each compiles one loop: 1 s less of the first call),
    :func:`hist_classes_tiled` elsewhere: on AVX2 LLVM's vectorized distance loop (a vpshufb
    popcount) beats the fused loop by 13-15 % at 128 and 256 bits."""
    if not target_has_avx512():
        return hist_classes_tiled
    return hist_classes_tiled_fused_four if n_words == 4 else hist_classes_tiled_fused


def tiled_workspace(n_classes, n_queries, n_words, n_bits, fused):
    """The scratch of a tiled kernel for a block of ``n_queries`` queries, allocated by numpy (each
    kind of array numba allocated would add a compile to the first call): the block's class slots
    (:func:`.class_sort.block_workspace`), each slot's columns of the tile (row 0: none), the
    tile's slots and a grade range's bounds, the counts (``copies`` int32 histograms a query, row
    2p + 1 of an odd query out is scratch, flushed to int64 per slice; the fused kernels' four
    spare counters at the end take the lanes past a range's last code), the word-major tile and
    the same rows one after the other (for :func:`.simd.load`), the fused kernels' ring and the
    two-loop kernel's distances."""
    n_dist = n_bits + 1
    copies = _COPIES if fused or n_words <= _COPIES_WORDS else 1
    tile = np.empty((n_words, _TILE + _TILE_PAD), dtype=np.uint64)
    return (*block_workspace(n_classes, n_queries),
            np.zeros((n_queries + 1, 2), dtype=np.int64),
            np.empty(_TILE, dtype=np.int32),
            np.empty(6, dtype=np.int64),
            np.zeros((2 * ((n_queries + 1) // 2), copies * 2 * n_dist + (4 if fused else 0)), dtype=np.int32),
            tile, tile.reshape((tile.size, 1)),
            np.empty((_RING, 8), dtype=np.uint64),
            np.empty(_TILE, dtype=np.uint64), np.empty(_TILE, dtype=np.uint64))


def run_tiled(kernel, query_words, query_ids, db_words, db_ids, n_classes, n_bits, hist, start, stop):
    """``kernel`` (a tiled kernel) on queries start..stop-1 with its :func:`tiled_workspace`; the
    other arguments are those of :func:`.bitsliced.hist_classes` (n_classes: the class ids' range)."""
    fused = kernel is not hist_classes_tiled  # the _fused kernels: four copies at every width and four spares
    kernel(query_words, query_ids, db_words, db_ids, n_bits, hist, start, stop,
           tiled_workspace(n_classes, stop - start, db_words.shape[1], n_bits, fused))


def tiled_pass(n_words):
    """The tiled pass the engine calls for codes of ``n_words`` words: :func:`run_tiled` of
    :func:`tiled_kernel`, called as :func:`.bitsliced.hist_classes`."""
    return functools.partial(run_tiled, tiled_kernel(n_words))


@jit
def _count_range_multihot(counts, stride, query, labels, db_words, db_label_words, start, stop, cells):
    """counts[stride * distance + shared labels] += 1 for the codes start..stop-1 (one word of
    code and one of labels each: cells below 65 * 65), by chunks of _CELLS codes as
    :func:`_count_range_joint`."""
    full_width()
    codes = db_words.reshape(db_words.shape[0])
    label_words = db_label_words.reshape(db_label_words.shape[0])
    for lo in range(start, stop, _CELLS):
        chunk = codes[lo:min(lo + _CELLS, stop)]
        chunk_labels = label_words[lo:min(lo + _CELLS, stop)]
        for t in range(len(chunk)):  # vectorized
            cells[t] = np.uint16(stride * popcount64(query ^ chunk[t]) + popcount64(labels & chunk_labels[t]))
        _count_cells(counts, np.uint64(0), cells, len(chunk))


@jit
def hist_multihot(query_words, db_words, query_label_words, db_label_words, n_bits, hist, start, stop):
    """Histogram pass for graded relevance = number of shared labels (multi-hot), queries
    start..stop-1; the database by tiles of _TILE_ROWS codes, each read once for every query of
    the block.

    query_label_words : (n_queries, n_label_words) uint64, db_label_words : (n_db, n_label_words)
    hist : (n_queries, n_bits + 1, n_grades) int64, zero on entry; grades above n_grades - 1
        cannot occur (the facade sizes n_grades from the queries' label counts).
    """
    n_db = db_words.shape[0]
    n_words = db_words.shape[1]
    n_label_words = db_label_words.shape[1]
    n_grades = hist.shape[2]
    n_cells = (n_bits + 1) * n_grades
    counts = filled_rows(np.empty((stop - start, n_cells), dtype=np.int32), 0)
    cells = np.empty(_CELLS, dtype=np.uint16)
    stride = np.uint64(n_grades)
    for lo_slice in range(0, n_db, _SLICE):
        hi_slice = min(lo_slice + _SLICE, n_db)
        for lo in range(lo_slice, hi_slice, _TILE_ROWS):
            hi = min(lo + _TILE_ROWS, hi_slice)
            for i in range(start, stop):
                query = query_words[i]
                labels = query_label_words[i]
                out = counts[i - start]
                if n_words == 1 and n_label_words == 1:
                    _count_range_multihot(out, stride, query[0], labels[0], db_words, db_label_words, lo, hi, cells)
                else:
                    for j in range(np.uint64(lo), np.uint64(hi)):
                        g = np.uint64(0)
                        for w in range(n_label_words):
                            g += popcount64(labels[w] & db_label_words[j, w])
                        out[stride * distance(query, db_words, j, n_words) + g] += 1
        for i in range(start, stop):  # flush before int32 could overflow
            for d in range(n_bits + 1):
                for g in range(n_grades):
                    hist[i, d, g] += counts[i - start, d * n_grades + g]
                    counts[i - start, d * n_grades + g] = 0


@jit
def move_relevant(query_words, db_words, indptr, indices, grades, hist, start, stop):
    """CSR relevance: move each listed item from grade 0 to its grade in its distance bucket,
    queries start..stop-1.

    hist must hold the grade-0 counts of every item (the pass with no relevant segment).
    """
    n_words = db_words.shape[1]
    for i in range(start, stop):
        query = query_words[i]
        for p in range(indptr[i], indptr[i + 1]):
            d = distance(query, db_words, np.uint64(indices[p]), n_words)
            g = grades[p]
            hist[i, d, 0] -= 1
            hist[i, d, g] += 1
