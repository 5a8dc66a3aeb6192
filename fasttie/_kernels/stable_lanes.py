"""The stable pass's sweep of a class's queries with the queries as vector lanes: the running
counts bit-sliced, no memory increment per (query, item).

:func:`.hamming_ties._scan_class_group` keeps each query's running count of every distance in
memory, one increment per (query, item). Here up to eight queries of one class take the eight
lanes of a vector (:mod:`.simd`), each database code is broadcast to them, and the counts by
(query, distance) are bit-sliced planes as in :mod:`.bitsliced` (whose lanes are codes): the
distance of each query to a code becomes a one-hot word ``1 << d`` in its lane, and sixteen
codes at a time go through a Harley-Seal tree of carry-save adders into planes of weight 1, 2,
4 and 8 and ten ripple planes, all in registers; what carries out of the last (a count past
16,383) ripples on through planes in memory, which a block rarely reaches.

A relevant item's record needs each query's count of the item's distance before it. The planes
hold the counts up to the item's block of sixteen: each plane is tested against the item's
one-hot word (``vptestmq``) and adds its weight where the bit is set; the block's earlier codes
at the same distance add one each (a test per code, for all sixteen, masked to those before the
item: no branch on the item's place). Distance 64 (of 64-bit codes) fits no one-hot word: its
count is the items before less those at the other distances. The database's last codes outside
whole blocks are counted one at a time from the counts the planes leave.

The records and counts are those of :func:`.hamming_ties._scan_class_group`, bitwise (exact
integers); the engine runs this sweep where the histogram pass is bit-sliced (:mod:`.cpu`).
"""

import numpy as np

from ._jit import jit
from .bitsliced import add_four, csa, ripple
from .popcount import popcount64
from .simd import (add, and_, equal_bits, load, nonzero_bits, nonzero_mask, one_hot, popcount, shift_left, splat,
                   store, sub, xor)

BLOCK = 16  # codes per Harley-Seal step
N_LANES = 8  # queries per sweep
HIGH_ROWS = 40  # ripple planes in memory: 16384 * 2**40 codes is past any database
_HIGH_WEIGHT = 1 << 14  # weight of the first plane in memory: the registers' planes hold up to 16 * 2**10 - 1
_DISTANCE_BITS = np.uint64(16)  # a record: (items at its distance before it) << 16 | distance
_ALL_LANES = np.uint64(0xFF)


@jit(inline="always")
def _one_hot(db_words, j, q):
    """1 << the distance of code j to each lane's query (0 for a distance of 64)."""
    return one_hot(popcount(xor(splat(db_words[j, 0]), q)))


@jit(inline="always")
def _weighted(plane, hot, weight):
    """``weight`` in the lanes where ``plane`` has the bit of ``hot`` (that plane's share of a count)."""
    return and_(nonzero_mask(and_(plane, hot)), splat(np.uint64(weight)))


@jit(inline="always")
def _count_of(ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, high, top, hot):
    """Each lane's count, in the planes, of the distance whose one-hot word ``hot`` holds."""
    count = add(add(_weighted(ones, hot, 1), _weighted(twos, hot, 2)),
                add(_weighted(fours, hot, 4), _weighted(eights, hot, 8)))
    count = add(count, add(add(_weighted(p0, hot, 16), _weighted(p1, hot, 32)),
                           add(_weighted(p2, hot, 64), _weighted(p3, hot, 128))))
    count = add(count, add(add(_weighted(p4, hot, 256), _weighted(p5, hot, 512)),
                           add(_weighted(p6, hot, 1024), _weighted(p7, hot, 2048))))
    count = add(count, add(_weighted(p8, hot, 4096), _weighted(p9, hot, 8192)))
    for h in range(top):
        count = add(count, _weighted(load(high, h), hot, np.uint64(_HIGH_WEIGHT) << np.uint64(h)))
    return count


@jit(inline="always")
def _weighted_total(plane, shift):
    """A plane's share of each lane's count over every one-hot distance: its bits << shift."""
    return shift_left(popcount(plane), splat(np.uint64(shift)))


@jit(inline="always")
def _one_hot_total(ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, high, top):
    """Each lane's codes counted in the planes at a distance below 64."""
    total = add(add(_weighted_total(ones, 0), _weighted_total(twos, 1)),
                add(_weighted_total(fours, 2), _weighted_total(eights, 3)))
    total = add(total, add(add(_weighted_total(p0, 4), _weighted_total(p1, 5)),
                           add(_weighted_total(p2, 6), _weighted_total(p3, 7))))
    total = add(total, add(add(_weighted_total(p4, 8), _weighted_total(p5, 9)),
                           add(_weighted_total(p6, 10), _weighted_total(p7, 11))))
    total = add(total, add(_weighted_total(p8, 12), _weighted_total(p9, 13)))
    for h in range(top):
        total = add(total, _weighted_total(load(high, h), 14 + h))
    return total


@jit
def sweep_class_lanes(query_words, rows, n_rows, db_words, db_labels, label, count, records, width, high, block):
    """:func:`.hamming_ties._scan_class_group` for codes of one word, the queries as lanes: the
    counts of query rows[r] at count[r * stride + d] (stride = len(count) // 8), its records at
    records[r * width:r * width + m]; rows past n_rows repeat the first query. Returns m, the
    relevant items (those of class ``label``).

    Parameters
    ----------
    query_words : (n_queries, 1) uint64, read-only
        Query codes.
    rows : (n_rows,) int64
        The group's queries, all of class ``label``.
    n_rows : int
        1 to 8.
    db_words : (n_db, 1) uint64, read-only
        Database codes, index order.
    db_labels : (n_db,) int32, read-only
        Class of every database item.
    label : int32
        The group's class.
    count : (8 * stride,) uint32
        Written: each query's items at each distance (0..64).
    records : (>= 8 * width,) uint64
        Written: each query's records, index order.
    width : int
        Room per query row, more than m.
    high : (HIGH_ROWS, 8) uint64
        Scratch: the ripple planes in memory.
    block : (BLOCK + 1, 8) uint64
        Scratch: a block's one-hot words, and a row to hand lanes to scalars.
    """
    stride = count.shape[0] // N_LANES
    words = np.empty((N_LANES, 1), dtype=np.uint64)
    for r in range(N_LANES):
        words[r, 0] = query_words[rows[min(r, n_rows - 1)], 0]
    q = load(words, 0)
    zero = splat(np.uint64(0))
    one = splat(np.uint64(1))
    ones = twos = fours = eights = zero
    p0 = p1 = p2 = p3 = p4 = p5 = p6 = p7 = p8 = p9 = zero
    top = 0  # the planes in memory below ``top`` may be set
    n_db = db_words.shape[0]
    whole = n_db // BLOCK * BLOCK
    m = 0
    for b in range(0, whole, BLOCK):
        o0 = _one_hot(db_words, b, q)
        o1 = _one_hot(db_words, b + 1, q)
        o2 = _one_hot(db_words, b + 2, q)
        o3 = _one_hot(db_words, b + 3, q)
        o4 = _one_hot(db_words, b + 4, q)
        o5 = _one_hot(db_words, b + 5, q)
        o6 = _one_hot(db_words, b + 6, q)
        o7 = _one_hot(db_words, b + 7, q)
        o8 = _one_hot(db_words, b + 8, q)
        o9 = _one_hot(db_words, b + 9, q)
        o10 = _one_hot(db_words, b + 10, q)
        o11 = _one_hot(db_words, b + 11, q)
        o12 = _one_hot(db_words, b + 12, q)
        o13 = _one_hot(db_words, b + 13, q)
        o14 = _one_hot(db_words, b + 14, q)
        o15 = _one_hot(db_words, b + 15, q)
        relevant = equal_bits(db_labels, b, label)
        if relevant:  # the block's one-hot words, for the relevant codes' counts
            store(block, 0, o0)
            store(block, 1, o1)
            store(block, 2, o2)
            store(block, 3, o3)
            store(block, 4, o4)
            store(block, 5, o5)
            store(block, 6, o6)
            store(block, 7, o7)
            store(block, 8, o8)
            store(block, 9, o9)
            store(block, 10, o10)
            store(block, 11, o11)
            store(block, 12, o12)
            store(block, 13, o13)
            store(block, 14, o14)
            store(block, 15, o15)
        while relevant:
            k = popcount64((relevant & (~relevant + np.uint64(1))) - np.uint64(1))  # the lowest relevant code
            relevant &= relevant - np.uint64(1)
            hot = load(block, k)
            before = _count_of(ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, high, top, hot)
            for i in range(BLOCK):  # the block's codes before it at its distance
                before = add(before, and_(nonzero_mask(and_(load(block, i), hot)), splat(np.uint64(i < k))))
            if nonzero_bits(hot) != _ALL_LANES:  # distance 64 in some lane: the items before at no other
                counted = _one_hot_total(ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, high, top)
                for i in range(k):
                    counted = add(counted, and_(nonzero_mask(load(block, i)), one))
                at_64 = sub(splat(np.uint64(b) + k), counted)
                before = add(before, and_(xor(nonzero_mask(hot), splat(~np.uint64(0))), at_64))
            distances = popcount(xor(splat(db_words[b + k, 0]), q))
            store(block, BLOCK, add(shift_left(before, splat(_DISTANCE_BITS)), distances))
            for r in range(N_LANES):
                records[r * width + m] = block[BLOCK, r]
            m += 1
        fours_a, twos, ones = add_four(ones, twos, o0, o1, o2, o3)
        fours_b, twos, ones = add_four(ones, twos, o4, o5, o6, o7)
        eights_a, fours = csa(fours, fours_a, fours_b)
        fours_a, twos, ones = add_four(ones, twos, o8, o9, o10, o11)
        fours_b, twos, ones = add_four(ones, twos, o12, o13, o14, o15)
        eights_b, fours = csa(fours, fours_a, fours_b)
        sixteens, eights = csa(eights, eights_a, eights_b)
        # the carry out of p9: sixteens carried through every plane below it
        carry = and_(and_(and_(and_(p0, p1), and_(p2, p3)), and_(and_(p4, p5), and_(p6, p7))),
                     and_(and_(p8, p9), sixteens))
        p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = ripple(sixteens, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9)
        if nonzero_bits(carry):  # on into the planes in memory (a count passes 16,383)
            h = 0
            while nonzero_bits(carry):
                if h == top:
                    store(high, h, zero)
                    top += 1
                plane = load(high, h)
                store(high, h, xor(plane, carry))
                carry = and_(plane, carry)
                h += 1
    for d in range(64):
        store(block, BLOCK, _count_of(ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, high, top,
                                      splat(np.uint64(1) << np.uint64(d))))
        for r in range(N_LANES):
            count[r * stride + d] = np.uint32(block[BLOCK, r])
    store(block, BLOCK, sub(splat(np.uint64(whole)),
                            _one_hot_total(ones, twos, fours, eights, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, high,
                                           top)))
    for r in range(N_LANES):
        count[r * stride + 64] = np.uint32(block[BLOCK, r])
    for j in range(np.uint64(whole), np.uint64(n_db)):  # the codes after the whole blocks, one at a time
        x = db_words[j, 0]
        if db_labels[j] == label:
            for r in range(N_LANES):
                d = popcount64(words[r, 0] ^ x)
                at = np.uint64(r * stride) + d
                records[r * width + m] = (np.uint64(count[at]) << _DISTANCE_BITS) | d
                count[at] += np.uint32(1)
            m += 1
        else:
            for r in range(N_LANES):
                count[np.uint64(r * stride) + popcount64(words[r, 0] ^ x)] += np.uint32(1)
    return m
