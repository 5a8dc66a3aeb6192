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
adder tree serves both (a lane per code would need two one-hot words and two trees, more
registers than there are). The distance 64 of 64-bit codes (128 of 128-bit ones) fits no
one-hot word: it is what the counted codes leave over.

The database is read as it lies (no class-sorted copy), by tiles of ``_TILE`` codes that stay
in L2 while every query of the block passes over them: a database larger than the cache is read
from memory once per block of queries, not once per query (query blocking). Each tile goes
through every query's "all" planes; its items of the block's classes are gathered by class into
runs in cache (:func:`_gather_classes`, a counting sort of the tile), each run padded with zero
codes to whole groups, and each query's run goes through its "relevant" planes; grade 0 is all
minus relevant, and the zero codes are taken out at their distance, the query's popcount. The
database's tail outside whole groups (of 128 one-word codes, 64 two-word ones) is counted one
code at a time. The counts are bitwise those of the portable pass (exact integers).
"""

import numpy as np
from numba import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from ._jit import jit, jit_variants
from .class_sort import block_classes, block_workspace
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
def csa(a, b, c):
    """Carry-save adder of three words: (carries, sums)."""
    return majority(a, b, c), sum3(a, b, c)


@jit(inline="always")
def add_four(ones, twos, a, b, c, d):
    """Four one-hot words into the ones and twos: (the fours carried out, twos, ones)."""
    twos_a, ones = csa(ones, a, b)
    twos_b, ones = csa(ones, c, d)
    fours, twos = csa(twos, twos_a, twos_b)
    return fours, twos, ones


@jit(inline="always")
def ripple(sixteens, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9):
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
        fours_a, twos, ones = add_four(ones, twos, _one_hot_one_word(db_words, j, q),
                                        _one_hot_one_word(db_words, j + 8, q), _one_hot_one_word(db_words, j + 16, q),
                                        _one_hot_one_word(db_words, j + 24, q))
        fours_b, twos, ones = add_four(ones, twos, _one_hot_one_word(db_words, j + 32, q),
                                        _one_hot_one_word(db_words, j + 40, q), _one_hot_one_word(db_words, j + 48, q),
                                        _one_hot_one_word(db_words, j + 56, q))
        eights_a, fours = csa(fours, fours_a, fours_b)
        fours_a, twos, ones = add_four(ones, twos, _one_hot_one_word(db_words, j + 64, q),
                                        _one_hot_one_word(db_words, j + 72, q), _one_hot_one_word(db_words, j + 80, q),
                                        _one_hot_one_word(db_words, j + 88, q))
        fours_b, twos, ones = add_four(ones, twos, _one_hot_one_word(db_words, j + 96, q),
                                        _one_hot_one_word(db_words, j + 104, q), _one_hot_one_word(db_words, j + 112, q),
                                        _one_hot_one_word(db_words, j + 120, q))
        eights_b, fours = csa(fours, fours_a, fours_b)
        sixteens, eights = csa(eights, eights_a, eights_b)
        p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = ripple(sixteens, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9)
    _store_planes(planes, ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9)


@jit
def _sum_two_words(db_words, q, start, stop, planes):
    """:func:`_sum_one_word` for two-word codes (whole groups of _GROUP // 2)."""
    ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = _load_planes(planes)
    for j in range(start, stop, _GROUP // 2):  # 16 words of four codes
        fours_a, twos, ones = add_four(ones, twos, _one_hot_two_words(db_words, j, q),
                                        _one_hot_two_words(db_words, j + 4, q), _one_hot_two_words(db_words, j + 8, q),
                                        _one_hot_two_words(db_words, j + 12, q))
        fours_b, twos, ones = add_four(ones, twos, _one_hot_two_words(db_words, j + 16, q),
                                        _one_hot_two_words(db_words, j + 20, q), _one_hot_two_words(db_words, j + 24, q),
                                        _one_hot_two_words(db_words, j + 28, q))
        eights_a, fours = csa(fours, fours_a, fours_b)
        fours_a, twos, ones = add_four(ones, twos, _one_hot_two_words(db_words, j + 32, q),
                                        _one_hot_two_words(db_words, j + 36, q), _one_hot_two_words(db_words, j + 40, q),
                                        _one_hot_two_words(db_words, j + 44, q))
        fours_b, twos, ones = add_four(ones, twos, _one_hot_two_words(db_words, j + 48, q),
                                        _one_hot_two_words(db_words, j + 52, q), _one_hot_two_words(db_words, j + 56, q),
                                        _one_hot_two_words(db_words, j + 60, q))
        eights_b, fours = csa(fours, fours_a, fours_b)
        sixteens, eights = csa(eights, eights_a, eights_b)
        p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = ripple(sixteens, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9)
    _store_planes(planes, ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9)


@jit(inline="always")
def _query_lanes(query):
    """A query as the lanes its database codes meet: eight copies of one word, or four of a pair."""
    if query.shape[0] == 1:
        return splat(query[0])
    return splat_pairs(query[0], query[1])


@jit(inline="always")
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


@intrinsic
def _read_only(typingctx, array):
    """The array typed read-only (the same data): the runs then meet :func:`_sum_one_word` and
    :func:`_sum_two_words` in the type of the database the engine passes, one compile each."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])  # a reference of its own

    return array.copy(readonly=True)(array), codegen


@jit(inline="always")
def _gather_classes(db_words, db_ids, lo, hi, slot_of, n_slots, run_start, tallies, runs):
    """The codes of rows lo..hi-1 (a multiple of four rows) whose class has a slot (slot_of[class]
    = slot + 1, 0 for none), written to ``runs`` by slot in row order: slot s's run from runs[run_start[s]] to
    run_start[s + 1], its codes then zero codes to a whole number of groups (their distance to a
    query is its popcount). Returns nothing; tallies: (4, n_slots or more) int64 scratch, row 0
    left holding each run's length."""
    n_words = db_words.shape[1]
    group = _GROUP // n_words
    # four tallies, one per row mod 4: rows of one class in a row would queue on one counter
    for r in range(4):
        for s in range(n_slots):
            tallies[r, s] = 0
    for j in range(np.uint64(lo), np.uint64(hi), np.uint64(4)):
        for r in range(4):
            s = slot_of[db_ids[j + np.uint64(r)]] - 1
            if s >= 0:
                tallies[r, s] += 1
    position = 0
    for s in range(n_slots):
        tallies[0, s] += tallies[1, s] + tallies[2, s] + tallies[3, s]
        run_start[s] = position
        tallies[1, s] = position  # the run's next free row
        position += (tallies[0, s] + group - 1) // group * group
    run_start[n_slots] = position
    for j in range(np.uint64(lo), np.uint64(hi)):
        s = slot_of[db_ids[j]] - 1
        if s >= 0:
            free = np.uint64(tallies[1, s])
            tallies[1, s] = free + 1
            if n_words == 1:
                runs[free, 0] = db_words[j, 0]
            else:
                runs[free, 0] = db_words[j, 0]
                runs[free, 1] = db_words[j, 1]
    for s in range(n_slots):
        for t in range(run_start[s] + tallies[0, s], run_start[s + 1]):
            for w in range(n_words):
                runs[t, w] = 0


def _make_pass(two_words):
    """The pass for codes of one word, or of two (a constant to numba: each kernel compiles only
    its own loop)."""

    def hist_classes_bitsliced(query_words, query_ids, db_words, db_ids, n_bits, hist, start, stop, workspace):
        """Counts by (distance, grade) of queries start..stop-1 by bit-sliced counting (codes of one
        word; the ``_two_words`` kernel: of two), grade 1 the database items of the query's class.

        The database is read as it lies, by tiles: each tile goes through every query's "all"
        planes, and the tile's items of the block's classes, gathered by class into runs
        (:func:`_gather_classes`, in cache), each query's run through its "relevant" planes. No
        class-sorted copy of the database is made.

        Parameters
        ----------
        query_words : (n_queries, n_words) uint64
        query_ids : (n_queries,) int32
            Class ids in [0, n_classes), or -1: no class (every item grade 0).
        db_words : (n_db, n_words) uint64
        db_ids : (n_db,) int32
            Class ids in [0, n_classes); not read when no query of the block has a class (it may
            then be empty).
        n_bits : int
        hist : (n_queries, n_bits + 1, n_grades >= 2) int64
            Zero on entry for rows start..stop-1; hist[i, d, g] = items of grade g at distance d.
        start, stop : int
            The queries to count.
        workspace : tuple of arrays
            Scratch from :func:`workspace` (numpy allocates it: each kind of array numba allocated
            here would add a compile to the first call).
        """
        n_db = db_words.shape[0]
        n_queries = stop - start
        n_words = 2 if two_words else 1
        group = _GROUP // n_words  # codes per Harley-Seal step
        flush = _FLUSH // n_words  # codes the planes take between flushes
        n_one_hot = 64 * n_words  # distances the one-hot words hold; 64 * n_words is left over
        # the block's classes, a slot each; the tile's items of those classes are gathered by slot
        slot_of, query_slot, run_start, tallies, runs, planes, counts, summed, padding, relevant = workspace
        n_slots = block_classes(query_ids, start, stop, slot_of, query_slot)
        run_length = tallies[0]
        runs_read = _read_only(runs)
        whole = n_db // group * group  # codes [0, whole) go by groups, the tail one by one
        for lo_flush in range(0, whole, flush):
            hi_flush = min(lo_flush + flush, whole)
            for lo in range(lo_flush, hi_flush, _TILE):
                hi = min(lo + _TILE, hi_flush)
                if n_slots > 0:
                    _gather_classes(db_words, db_ids, lo, hi, slot_of, n_slots, run_start, tallies, runs)
                for u in range(n_queries):
                    q = _query_lanes(query_words[start + u])
                    if two_words:
                        _sum_two_words(db_words, q, lo, hi, planes[u, 0])
                    else:
                        _sum_one_word(db_words, q, lo, hi, planes[u, 0])
                    summed[u, 0] += hi - lo
                    s = query_slot[u] - 1
                    if s >= 0 and run_length[s] > 0:
                        first, last = run_start[s], run_start[s + 1]
                        if two_words:
                            _sum_two_words(runs_read, q, first, last, planes[u, 1])
                        else:
                            _sum_one_word(runs_read, q, first, last, planes[u, 1])
                        summed[u, 1] += last - first
                        padding[u] += last - first - run_length[s]
            for u in range(n_queries):
                for stream in range(2):
                    _flush(planes[u, stream], counts[2 * u + stream])
        for u in range(n_queries):
            i = start + u
            query = query_words[i]
            left_all, left_relevant = summed[u, 0], summed[u, 1]
            for d in range(min(n_bits + 1, n_one_hot)):  # distances above n_bits count nothing
                relevant[d] = counts[2 * u + 1, d]
                hist[i, d, 0] += counts[2 * u, d]
                left_relevant -= counts[2 * u + 1, d]
                left_all -= counts[2 * u, d]
            if n_bits == n_one_hot:  # the one distance no one-hot word holds: what the others leave over
                relevant[n_bits] = left_relevant
                hist[i, n_bits, 0] += left_all
            zero_code_distance = np.uint64(0)
            for w in range(n_words):
                zero_code_distance += popcount64(query[w])
            relevant[zero_code_distance] -= padding[u]  # the zero codes that pad the runs
            for d in range(n_bits + 1):
                hist[i, d, 1] += relevant[d]
                hist[i, d, 0] -= relevant[d]
            k = query_ids[i]
            for j in range(whole, n_db):
                d = distance(query, db_words, np.uint64(j), db_words.shape[1])
                hist[i, d, 1 if k >= 0 and db_ids[j] == k else 0] += 1

    return hist_classes_bitsliced


hist_classes_bitsliced, hist_classes_bitsliced_two_words = jit_variants(
    _make_pass, {"": (False,), "_two_words": (True,)})


def workspace(n_classes, n_queries, n_words, n_bits):
    """The scratch of :func:`hist_classes_bitsliced` for a block of ``n_queries`` queries: the
    block's class slots (:func:`.class_sort.block_workspace`), each slot's run start and four
    tallies, the runs (a tile and a padded group a slot), the planes (query, stream: 0 all items,
    1 its class's), their counts (row 2u + stream), the codes summed into each set of planes, the
    zero codes padding the relevant ones, and a row of relevant counts."""
    group = _GROUP // n_words
    return (*block_workspace(n_classes, n_queries),
            np.zeros(n_queries + 1, dtype=np.int64),
            np.zeros((4, n_queries), dtype=np.int64),
            np.zeros((_TILE + n_queries * group, n_words), dtype=np.uint64),
            np.zeros((n_queries, 2, _ROWS, 8), dtype=np.uint64),
            np.zeros((2 * n_queries, 64 * n_words), dtype=np.int64),
            np.zeros((n_queries, 2), dtype=np.int64),
            np.zeros(n_queries, dtype=np.int64),
            np.zeros(n_bits + 1, dtype=np.int64))


def hist_classes(query_words, query_ids, db_words, db_ids, n_classes, n_bits, hist, start, stop):
    """:func:`hist_classes_bitsliced` for codes of one word, its ``_two_words`` twin for two, with
    its :func:`workspace` (see there for the arguments; n_classes: the class ids' range)."""
    n_words = db_words.shape[1]
    kernel = hist_classes_bitsliced if n_words == 1 else hist_classes_bitsliced_two_words
    kernel(query_words, query_ids, db_words, db_ids, n_bits, hist, start, stop,
           workspace(n_classes, stop - start, n_words, n_bits))
