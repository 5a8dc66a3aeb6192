"""Bit-sliced counting: the histogram pass of codes up to 128 bits without a memory increment
per code (the fast path on CPUs with AVX-512 VPOPCNTDQ; :mod:`.histogram` is the portable one).

Eight lanes at a time (:mod:`.simd`): the distance of each code becomes a one-hot word, ``1 << d``
in its lane, and the one-hot words are added up as bit planes, a positional popcount: sixteen
words go through a Harley-Seal tree of carry-save adders (each adder two ``vpternlogq``) into
planes of weight 1, 2, 4, 8 and a ripple of planes of weight 16, 32, ... Each instruction
advances 512 (lane, distance) counters; no counter lives in memory. The planes are turned into
integer counts when a counter could overflow and at the end (:func:`_flush`).

One-word codes take a lane each, eight codes per word. A two-word code takes a pair of lanes,
read as they lie in memory (four codes per word): the pair's popcounts are summed in both lanes
(``vpshufd``, ``vpaddq``), and the first lane holds the distances 0-63, the second 64-127; one
adder tree serves both, where a lane per code would need two one-hot words and two trees (tried:
the registers ran out, no faster than the portable pass). The distance 64 of 64-bit codes (128 of
128-bit ones) fits no one-hot word: it is what the counted codes leave over.

A query's relevant items are one segment of the class-sorted database (:func:`.histogram.hist_segments`):
every code goes into the query's "all" planes and those of its segment into its "relevant"
planes; grade 0 is all minus relevant. Codes outside whole groups (of 128 one-word codes, 64
two-word ones: the database's tail, the segment's ends) are counted one by one.

The database goes by tiles of ``_TILE`` codes (in L2 while the block's queries pass), each
query keeping its planes in memory between tiles (query blocking: a tile is read from memory
once per block). The counts are bitwise those of the portable pass (exact integers).
"""

import numpy as np

from ._jit import jit, jit_variants
from .popcount import distance, popcount64
from .simd import add, and_, load, majority, one_hot, popcount, splat, splat_pairs, store, sub, sum3, swap_pairs, xor

N_PLANES = 10  # ripple planes of weight 16 .. 16 * 2**9: a (lane, distance) counter holds up to 16 * 2**10 - 1
_ROWS = 4 + N_PLANES  # ones, twos, fours, eights, then the ripple planes, 8 lanes each
_GROUP = 128  # one-word codes per Harley-Seal step: 16 words of 8 lanes (two-word codes: 64)
# one-word codes a set of planes takes before a counter could overflow (two-word: half): a
# (lane, distance) counter gains at most one per word of lanes, 16 per group, and holds 16 * 2**N_PLANES - 1
_FLUSH = 8 * 16 * ((1 << N_PLANES) - 1)
_TILE = 1 << 13  # codes per tile (a multiple of _GROUP)


@jit(inline="always")
def _csa(a, b, c):
    """Carry-save adder of three words: (carries, sums)."""
    return majority(a, b, c), sum3(a, b, c)


@jit(inline="always")
def _add_four(ones, twos, a, b, c, d):
    """Four one-hot words into the ones and twos: (the fours carried out, twos, ones)."""
    twos_a, ones = _csa(ones, a, b)
    twos_b, ones = _csa(ones, c, d)
    fours, twos = _csa(twos, twos_a, twos_b)
    return fours, twos, ones


@jit(inline="always")
def _ripple(sixteens, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9):
    """A word of sixteens up the ripple planes (a counter stays below 16 * 2**N_PLANES between
    flushes, so nothing carries out of p9)."""
    t = and_(p0, sixteens)
    p0 = xor(p0, sixteens)
    t, p1 = and_(p1, t), xor(p1, t)
    t, p2 = and_(p2, t), xor(p2, t)
    t, p3 = and_(p3, t), xor(p3, t)
    t, p4 = and_(p4, t), xor(p4, t)
    t, p5 = and_(p5, t), xor(p5, t)
    t, p6 = and_(p6, t), xor(p6, t)
    t, p7 = and_(p7, t), xor(p7, t)
    t, p8 = and_(p8, t), xor(p8, t)
    return p0, p1, p2, p3, p4, p5, p6, p7, p8, xor(p9, t)


@jit(inline="always")
def _one_hot_one_word(db_words, j, q):
    """The one-hot words of the eight one-word codes from row j: 1 << their distance to the query."""
    return one_hot(popcount(xor(load(db_words, j), q)))


@jit(inline="always")
def _one_hot_two_words(db_words, j, q):
    """The one-hot words of the four two-word codes from row j, two lanes each (q holds the query's
    words as pairs): the first lane 1 << d for a distance d below 64, the second 1 << (d - 64) for
    one of 64 to 127 (a negative shift wraps to a huge one, which gives 0)."""
    words = popcount(xor(load(db_words, j), q))
    distances = add(words, swap_pairs(words))
    return one_hot(sub(distances, splat_pairs(np.uint64(0), np.uint64(64))))


@jit(inline="always")
def _load_planes(planes):
    """The 14 rows of a set of planes (_ROWS, 8) as lanes: ones, twos, fours, eights, p0 .. p9."""
    return (load(planes, 0), load(planes, 1), load(planes, 2), load(planes, 3), load(planes, 4), load(planes, 5),
            load(planes, 6), load(planes, 7), load(planes, 8), load(planes, 9), load(planes, 10), load(planes, 11),
            load(planes, 12), load(planes, 13))


@jit(inline="always")
def _store_planes(planes, ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9):
    """:func:`_load_planes` back."""
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


@jit
def _sum_one_word(db_words, q, start, stop, planes):
    """Add the one-word codes [start, stop) (whole groups of _GROUP) to one set of planes
    (_ROWS, 8): ones, twos, fours and eights in registers, the ripple planes after them. q: the
    query as lanes (:func:`_query_lanes`)."""
    ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = _load_planes(planes)
    for j in range(start, stop, _GROUP):  # 16 words of eight codes
        fours_a, twos, ones = _add_four(ones, twos, _one_hot_one_word(db_words, j, q),
                                        _one_hot_one_word(db_words, j + 8, q), _one_hot_one_word(db_words, j + 16, q),
                                        _one_hot_one_word(db_words, j + 24, q))
        fours_b, twos, ones = _add_four(ones, twos, _one_hot_one_word(db_words, j + 32, q),
                                        _one_hot_one_word(db_words, j + 40, q), _one_hot_one_word(db_words, j + 48, q),
                                        _one_hot_one_word(db_words, j + 56, q))
        eights_a, fours = _csa(fours, fours_a, fours_b)
        fours_a, twos, ones = _add_four(ones, twos, _one_hot_one_word(db_words, j + 64, q),
                                        _one_hot_one_word(db_words, j + 72, q), _one_hot_one_word(db_words, j + 80, q),
                                        _one_hot_one_word(db_words, j + 88, q))
        fours_b, twos, ones = _add_four(ones, twos, _one_hot_one_word(db_words, j + 96, q),
                                        _one_hot_one_word(db_words, j + 104, q), _one_hot_one_word(db_words, j + 112, q),
                                        _one_hot_one_word(db_words, j + 120, q))
        eights_b, fours = _csa(fours, fours_a, fours_b)
        sixteens, eights = _csa(eights, eights_a, eights_b)
        p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = _ripple(sixteens, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9)
    _store_planes(planes, ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9)


@jit
def _sum_two_words(db_words, q, start, stop, planes):
    """:func:`_sum_one_word` for two-word codes (whole groups of _GROUP // 2)."""
    ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = _load_planes(planes)
    for j in range(start, stop, _GROUP // 2):  # 16 words of four codes
        fours_a, twos, ones = _add_four(ones, twos, _one_hot_two_words(db_words, j, q),
                                        _one_hot_two_words(db_words, j + 4, q), _one_hot_two_words(db_words, j + 8, q),
                                        _one_hot_two_words(db_words, j + 12, q))
        fours_b, twos, ones = _add_four(ones, twos, _one_hot_two_words(db_words, j + 16, q),
                                        _one_hot_two_words(db_words, j + 20, q), _one_hot_two_words(db_words, j + 24, q),
                                        _one_hot_two_words(db_words, j + 28, q))
        eights_a, fours = _csa(fours, fours_a, fours_b)
        fours_a, twos, ones = _add_four(ones, twos, _one_hot_two_words(db_words, j + 32, q),
                                        _one_hot_two_words(db_words, j + 36, q), _one_hot_two_words(db_words, j + 40, q),
                                        _one_hot_two_words(db_words, j + 44, q))
        fours_b, twos, ones = _add_four(ones, twos, _one_hot_two_words(db_words, j + 48, q),
                                        _one_hot_two_words(db_words, j + 52, q), _one_hot_two_words(db_words, j + 56, q),
                                        _one_hot_two_words(db_words, j + 60, q))
        eights_b, fours = _csa(fours, fours_a, fours_b)
        sixteens, eights = _csa(eights, eights_a, eights_b)
        p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = _ripple(sixteens, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9)
    _store_planes(planes, ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9)


@jit(inline="always")
def _query_lanes(query):
    """A query as the lanes its database codes meet: eight copies of one word, or four of a pair."""
    if query.shape[0] == 1:
        return splat(query[0])
    return splat_pairs(query[0], query[1])


@jit
def _flush(planes, counts):
    """counts[d] += the count of distance d in the planes (_ROWS, 8) uint64, which go back to
    zero; counts (128,) int64. Bit b of a lane stands for distance b, or 64 + b in the second
    lane of a two-word code's pair (odd lanes; :func:`_one_hot_two_words`)."""
    pairs = counts.shape[0] // 64 - 1  # 0: one-word lanes, 1: two-word pairs
    for row in range(_ROWS):
        weight = np.int64(1) << np.int64(row)
        for lane in range(8):
            word = planes[row, lane]
            planes[row, lane] = 0
            base = 64 * (lane & pairs)
            while word:
                low = word & (~word + np.uint64(1))  # the lowest set bit
                counts[base + popcount64(low - np.uint64(1))] += weight
                word ^= low


@jit(inline="always")
def _count_one(hist, i, query, db_words, j, grade):
    """hist[i, distance(query, row j), grade] += 1, and -= 1 at grade 0 when ``grade`` is 1 (an
    item of the segment, counted among all items already)."""
    d = distance(query, db_words, np.uint64(j), db_words.shape[1])
    hist[i, d, grade] += 1
    if grade == 1:
        hist[i, d, 0] -= 1


def _make_pass(two_words):
    """The pass for codes of one word, or of two (a constant to numba: each kernel compiles only
    its own loop)."""

    def hist_segments_bitsliced(query_words, db_words, rel_segments, n_bits, hist, start, stop):
        """:func:`.histogram.hist_segments` by bit-sliced counting (codes of one word; the
        ``_two_words`` kernel: of two).

        Queries start..stop-1 form the block: the database goes by tiles, each tile through every
        query's "all" planes and, where it meets the query's segment, its "relevant" planes.
        """
        n_db = db_words.shape[0]
        n_queries = stop - start
        n_words = 2 if two_words else 1
        group = _GROUP // n_words  # codes per Harley-Seal step
        flush = _FLUSH // n_words  # codes the planes take between flushes
        n_one_hot = 64 * n_words  # distances the one-hot words hold; 64 * n_words is left over
        # planes[u, stream]: query start + u, stream 0 all items, 1 the segment's
        planes = np.zeros((n_queries, 2, _ROWS, 8), dtype=np.uint64)
        counts = np.zeros((n_queries, 2, n_one_hot), dtype=np.int64)
        summed = np.zeros((n_queries, 2), dtype=np.int64)  # codes added to the planes
        whole = n_db // group * group  # codes [0, whole) go by groups, the tail one by one
        for lo_flush in range(0, whole, flush):
            hi_flush = min(lo_flush + flush, whole)
            for lo in range(lo_flush, hi_flush, _TILE):
                hi = min(lo + _TILE, hi_flush)
                for u in range(n_queries):
                    i = start + u
                    query = query_words[i]
                    q = _query_lanes(query)
                    if two_words:
                        _sum_two_words(db_words, q, lo, hi, planes[u, 0])
                    else:
                        _sum_one_word(db_words, q, lo, hi, planes[u, 0])
                    summed[u, 0] += hi - lo
                    first = max(rel_segments[i, 0], lo)
                    last = min(rel_segments[i, 1], hi)
                    if first < last:  # the segment's whole groups by planes, its ends one by one
                        inner_first = min((first + group - 1) // group * group, last)
                        inner_last = max(last // group * group, inner_first)
                        if inner_first < inner_last:
                            if two_words:
                                _sum_two_words(db_words, q, inner_first, inner_last, planes[u, 1])
                            else:
                                _sum_one_word(db_words, q, inner_first, inner_last, planes[u, 1])
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
            for d in range(min(n_bits + 1, n_one_hot)):
                hist[i, d, 1] += counts[u, 1, d]
                hist[i, d, 0] += counts[u, 0, d] - counts[u, 1, d]
            if n_bits == n_one_hot:  # the one distance no one-hot word holds: what the others leave over
                left_all = summed[u, 0] - counts[u, 0].sum()
                left_relevant = summed[u, 1] - counts[u, 1].sum()
                hist[i, n_bits, 1] += left_relevant
                hist[i, n_bits, 0] += left_all - left_relevant
            segment_first, segment_last = rel_segments[i, 0], rel_segments[i, 1]
            for j in range(whole, n_db):
                _count_one(hist, i, query_words[i], db_words, j, 0)
                if segment_first <= j < segment_last:
                    _count_one(hist, i, query_words[i], db_words, j, 1)

    return hist_segments_bitsliced


hist_segments_bitsliced, hist_segments_bitsliced_two_words = jit_variants(
    _make_pass, {"": (False,), "_two_words": (True,)})
