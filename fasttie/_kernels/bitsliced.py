"""Bit-sliced counting: the histogram pass of codes up to 64 bits without a memory increment
per code (the fast path on CPUs with AVX-512 VPOPCNTDQ; :mod:`.histogram` is the portable one).

Eight codes at a time (:mod:`.simd` lanes): the distance of each becomes a one-hot word,
``1 << d`` in its lane, and the one-hot words are added up as bit planes, a positional
popcount: sixteen words go through a Harley-Seal tree of carry-save adders (each adder two
``vpternlogq``) into planes of weight 1, 2, 4, 8 and a ripple of planes of weight 16, 32, ...
Each instruction advances 512 (lane, distance) counters; no counter lives in memory. The
planes are turned into integer counts when a counter could overflow and at the end
(:func:`_flush`). The distance 64 of 64-bit codes fits no one-hot word: it is what the counted
codes leave over. (Codes of 65 to 128 bits would need two one-hot words and two adder trees
per code: measured, no faster than the portable pass, which they keep.)

A query's relevant items are one segment of the class-sorted database (:func:`.histogram.hist_segments`):
every code goes into the query's "all" planes and those of its segment into its "relevant"
planes; grade 0 is all minus relevant. Codes outside whole groups of 128 (the database's tail,
the segment's ends) are counted one by one.

The database goes by tiles of ``_TILE`` codes (in L2 while the block's queries pass), each
query keeping its planes in memory between tiles (query blocking: a tile is read from memory
once per block). The counts are bitwise those of the portable pass (exact integers).
"""

import numpy as np

from ._jit import jit
from .popcount import popcount64
from .simd import and_, load, majority, one_hot, popcount, splat, store, sum3, xor

N_PLANES = 10  # ripple planes of weight 16 .. 16 * 2**9: a (lane, distance) counter holds up to 16 * 2**10 - 1
_ROWS = 4 + N_PLANES  # ones, twos, fours, eights, then the ripple planes, 8 lanes each
_GROUP = 128  # codes per Harley-Seal step: 16 words of 8 lanes
_FLUSH = 8 * 16 * (1 << N_PLANES)  # codes a set of planes takes before a counter could overflow
_TILE = 1 << 13  # codes per tile (a multiple of _GROUP, dividing _FLUSH)


@jit(inline="always")
def _csa(a, b, c):
    """Carry-save adder of three words: (carries, sums)."""
    return majority(a, b, c), sum3(a, b, c)


@jit
def _sum_range(db_words, query, start, stop, planes):
    """Add the codes [start, stop) (whole groups of 128) of one-word codes to one set of planes
    (_ROWS, 8): ones, twos, fours and eights in registers, the ripple planes after them."""
    q = splat(query[0])
    ones = load(planes, 0)
    twos = load(planes, 1)
    fours = load(planes, 2)
    eights = load(planes, 3)
    p0 = load(planes, 4)
    p1 = load(planes, 5)
    p2 = load(planes, 6)
    p3 = load(planes, 7)
    p4 = load(planes, 8)
    p5 = load(planes, 9)
    p6 = load(planes, 10)
    p7 = load(planes, 11)
    p8 = load(planes, 12)
    p9 = load(planes, 13)
    for j in range(start, stop, _GROUP):
        twos_a, ones = _csa(ones, _one_hot(db_words, j, q), _one_hot(db_words, j + 8, q))
        twos_b, ones = _csa(ones, _one_hot(db_words, j + 16, q), _one_hot(db_words, j + 24, q))
        fours_a, twos = _csa(twos, twos_a, twos_b)
        twos_a, ones = _csa(ones, _one_hot(db_words, j + 32, q), _one_hot(db_words, j + 40, q))
        twos_b, ones = _csa(ones, _one_hot(db_words, j + 48, q), _one_hot(db_words, j + 56, q))
        fours_b, twos = _csa(twos, twos_a, twos_b)
        eights_a, fours = _csa(fours, fours_a, fours_b)
        twos_a, ones = _csa(ones, _one_hot(db_words, j + 64, q), _one_hot(db_words, j + 72, q))
        twos_b, ones = _csa(ones, _one_hot(db_words, j + 80, q), _one_hot(db_words, j + 88, q))
        fours_a, twos = _csa(twos, twos_a, twos_b)
        twos_a, ones = _csa(ones, _one_hot(db_words, j + 96, q), _one_hot(db_words, j + 104, q))
        twos_b, ones = _csa(ones, _one_hot(db_words, j + 112, q), _one_hot(db_words, j + 120, q))
        fours_b, twos = _csa(twos, twos_a, twos_b)
        eights_b, fours = _csa(fours, fours_a, fours_b)
        carry, eights = _csa(eights, eights_a, eights_b)
        # the sixteens ripple up the planes (a counter stays below 16 * 2**N_PLANES between flushes)
        t = and_(p0, carry)
        p0 = xor(p0, carry)
        t, p1 = and_(p1, t), xor(p1, t)
        t, p2 = and_(p2, t), xor(p2, t)
        t, p3 = and_(p3, t), xor(p3, t)
        t, p4 = and_(p4, t), xor(p4, t)
        t, p5 = and_(p5, t), xor(p5, t)
        t, p6 = and_(p6, t), xor(p6, t)
        t, p7 = and_(p7, t), xor(p7, t)
        t, p8 = and_(p8, t), xor(p8, t)
        p9 = xor(p9, t)
    store(planes, 0, ones)
    store(planes, 1, twos)
    store(planes, 2, fours)
    store(planes, 3, eights)
    store(planes, 4, p0)
    store(planes, 5, p1)
    store(planes, 6, p2)
    store(planes, 7, p3)
    store(planes, 8, p4)
    store(planes, 9, p5)
    store(planes, 10, p6)
    store(planes, 11, p7)
    store(planes, 12, p8)
    store(planes, 13, p9)


@jit(inline="always")
def _one_hot(db_words, j, q):
    """The one-hot words of the eight codes from row j: 1 << their distance to the query."""
    return one_hot(popcount(xor(load(db_words, j), q)))


@jit
def _flush(planes, counts):
    """counts[d] += the count of bit d in the planes (_ROWS, 8) uint64, which go back to zero;
    counts (64,) int64."""
    for row in range(_ROWS):
        weight = np.int64(1) << np.int64(row)
        for lane in range(8):
            word = planes[row, lane]
            planes[row, lane] = 0
            while word:
                low = word & (~word + np.uint64(1))  # the lowest set bit
                counts[popcount64(low - np.uint64(1))] += weight
                word ^= low


@jit(inline="always")
def _count_one(hist, i, query, db_words, j, grade):
    """hist[i, distance(query, row j), grade] += 1, and -= 1 at grade 0 when ``grade`` is 1 (an
    item of the segment, counted among all items already)."""
    d = popcount64(query[0] ^ db_words[j, 0])
    hist[i, d, grade] += 1
    if grade == 1:
        hist[i, d, 0] -= 1


@jit
def hist_segments_bitsliced(query_words, db_words, rel_segments, n_bits, hist, start, stop):
    """:func:`.histogram.hist_segments` by bit-sliced counting, codes of one word.

    Queries start..stop-1 form the block: the database goes by tiles, each tile through every
    query's "all" planes and, where it meets the query's segment, its "relevant" planes.
    """
    n_db = db_words.shape[0]
    n_queries = stop - start
    # planes[u, stream]: query start + u, stream 0 all items, 1 the segment's
    planes = np.zeros((n_queries, 2, _ROWS, 8), dtype=np.uint64)
    counts = np.zeros((n_queries, 2, 64), dtype=np.int64)
    summed = np.zeros((n_queries, 2), dtype=np.int64)  # codes added to the planes
    whole = n_db // _GROUP * _GROUP  # codes [0, whole) go by groups of 128, the tail one by one
    for lo_flush in range(0, whole, _FLUSH):
        hi_flush = min(lo_flush + _FLUSH, whole)
        for lo in range(lo_flush, hi_flush, _TILE):
            hi = min(lo + _TILE, hi_flush)
            for u in range(n_queries):
                i = start + u
                query = query_words[i]
                _sum_range(db_words, query, lo, hi, planes[u, 0])
                summed[u, 0] += hi - lo
                first = max(rel_segments[i, 0], lo)
                last = min(rel_segments[i, 1], hi)
                if first < last:  # the segment's whole groups by planes, its ends one by one
                    inner_first = min((first + _GROUP - 1) // _GROUP * _GROUP, last)
                    inner_last = max(last // _GROUP * _GROUP, inner_first)
                    if inner_first < inner_last:
                        _sum_range(db_words, query, inner_first, inner_last, planes[u, 1])
                        summed[u, 1] += inner_last - inner_first
                    for j in range(first, inner_first):
                        _count_one(hist, i, query, db_words, j, 1)
                    for j in range(inner_last, last):
                        _count_one(hist, i, query, db_words, j, 1)
        for u in range(n_queries):
            for stream in range(2):
                _flush(planes[u, stream], counts[u, stream])
    for u in range(n_queries):
        i = start + u
        for d in range(min(n_bits + 1, 64)):
            hist[i, d, 1] += counts[u, 1, d]
            hist[i, d, 0] += counts[u, 0, d] - counts[u, 1, d]
        if n_bits == 64:  # the one distance no one-hot word holds: what the others leave over
            left_all = summed[u, 0] - counts[u, 0].sum()
            left_relevant = summed[u, 1] - counts[u, 1].sum()
            hist[i, 64, 1] += left_relevant
            hist[i, 64, 0] += left_all - left_relevant
        segment_first, segment_last = rel_segments[i, 0], rel_segments[i, 1]
        for j in range(whole, n_db):
            _count_one(hist, i, query_words[i], db_words, j, 0)
            if segment_first <= j < segment_last:
                _count_one(hist, i, query_words[i], db_words, j, 1)
