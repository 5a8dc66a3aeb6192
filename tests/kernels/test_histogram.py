"""The histogram pass (fasttie/_kernels/histogram.py, bitsliced.py, cpu.py): the portable and the
bit-sliced pass count bitwise alike and as numpy's distances say, at every code width up to 128
bits (the tiled pass beyond) and around every tile, block and flush boundary, class ids as the
engine passes them (a class-sorted copy's segments to the portable one-word pass, the database as
it lies to the bit-sliced and the tiled pass); the multi-hot pass counts shared labels as numpy
does; FASTTIE_KERNEL picks the pass; on AVX-512 the compiled bit-sliced loop holds vpopcntq and
vpternlogq."""

import functools
import os
import subprocess
import sys

import numpy as np
import pytest

import fasttie as ft
from fasttie._kernels import bitsliced, cpu, histogram
from helpers import random_codes

PASSES = ("portable", "bitsliced")


def _tiled_kernels(n_words):
    """The tiled pass's kernels for codes of n_words words: two loops, fused, and fused for four
    words (the fused ones on any CPU: LLVM splits their vectors where AVX-512 is absent), each
    called as the engine calls a class pass (:func:`histogram.run_tiled`: with its workspace)."""
    four = (histogram.hist_classes_tiled_fused_four,) if n_words == 4 else ()
    return tuple(functools.partial(histogram.run_tiled, kernel)
                 for kernel in (histogram.hist_classes_tiled, histogram.hist_classes_tiled_fused, *four))



def _expected(q, db, grades, n_grades=2):
    """Counts by (distance, grade) from numpy's distances: the argsort-free oracle. grades:
    (n_queries, n_db) bool (relevant or not) or int."""
    dist = (q[:, None, :] != db[None]).sum(axis=2)
    expected = np.zeros((len(q), q.shape[1] + 1, n_grades), dtype=np.int64)
    for i in range(len(q)):
        np.add.at(expected[i], (dist[i], grades[i].astype(np.int64)), 1)
    return expected


def _read_only(*arrays):
    for array in arrays:
        array.setflags(write=False)  # as the engine passes them: one compiled signature per kernel
    return arrays


def _segment_counts(q, db, rel_segments, start, stop):
    """The portable one-word pass (histogram.hist_segments_one_word): relevant items given as
    database segments."""
    query_words, db_words = _read_only(ft.pack_codes(q).words, ft.pack_codes(db).words)
    hist = np.zeros((len(q), q.shape[1] + 1, 2), dtype=np.int64)
    histogram.hist_segments_one_word(query_words, db_words, *_read_only(rel_segments), q.shape[1], hist, start,
                                     stop)
    return hist


def _class_counts(monkeypatch, kernel, q, db, query_ids, db_ids, start, stop, tiled=None):
    """Counts with class ids (query id -1: no class) as the engine takes them on each pass: the
    portable one-word pass on a class-sorted copy (its segments), the bit-sliced and the tiled
    pass (``tiled``, else the one this target runs) on the database as it lies."""
    monkeypatch.setenv("FASTTIE_KERNEL", kernel)
    n_bits, n_classes = q.shape[1], int(max(query_ids.max(), db_ids.max())) + 1
    query_ids, db_ids = query_ids.astype(np.int32), db_ids.astype(np.int32)
    query_words, db_words = ft.pack_codes(q).words, ft.pack_codes(db).words
    hist = np.zeros((len(q), n_bits + 1, 2), dtype=np.int64)
    if cpu.bitsliced_codes(db_words.shape[1]):
        bitsliced.hist_classes(*_read_only(query_words, query_ids, db_words, db_ids), n_classes, n_bits, hist,
                               start, stop)
    elif db_words.shape[1] >= 2:
        tiled = tiled or histogram.tiled_pass(db_words.shape[1])
        tiled(*_read_only(query_words, query_ids, db_words, db_ids), n_classes, n_bits, hist, start, stop)
    else:
        order = np.argsort(db_ids, kind="stable")
        ends = np.cumsum(np.bincount(db_ids, minlength=n_classes))
        segments = np.stack([ends - np.bincount(db_ids, minlength=n_classes), ends], axis=1)
        rel_segments = np.where(query_ids[:, None] >= 0, segments[query_ids], 0).astype(np.int64)
        histogram.hist_segments_one_word(*_read_only(query_words, db_words[order].copy(), rel_segments), n_bits,
                                         hist, start, stop)
    return hist


@pytest.mark.parametrize("n_bits", [1, 2, 7, 16, 31, 32, 48, 63, 64, 65, 96, 127, 128])
def test_both_passes_count_what_numpy_distances_give(monkeypatch, n_bits):
    """Every width up to two words; database sizes off every group of the bit-sliced pass (128
    one-word codes, 64 two-word ones); a query without a class, one of a class the database
    lacks, codes at distance 0 and at n_bits (the distance of 64- and 128-bit codes that no
    one-hot word holds)."""
    rng = np.random.default_rng(n_bits)
    for n_db in (1, 63, 64, 65, 127, 128, 129, 1000, 2 * bitsliced._GROUP + 61):
        q, db = rng.integers(0, 2, (9, n_bits)), rng.integers(0, 2, (n_db, n_bits))
        q[0], q[1] = db[0], 1 - db[-1]  # distance 0 and n_bits
        db_ids, query_ids = rng.integers(0, 4, n_db), rng.integers(0, 4, 9)
        query_ids[2], query_ids[3] = -1, 4  # no class; a class no database item has
        expected = _expected(q, db, query_ids[:, None] == db_ids[None])
        for kernel in PASSES:
            for start, stop in ((0, 9), (2, 7)):  # an odd query out; a block that does not start at 0
                hist = _class_counts(monkeypatch, kernel, q, db, query_ids, db_ids, start, stop)
                np.testing.assert_array_equal(hist[start:stop], expected[start:stop], err_msg=f"{kernel} {n_db}")
                assert not hist[:start].any() and not hist[stop:].any()


@pytest.mark.parametrize("n_bits", [1, 16, 63, 64])
def test_portable_pass_on_any_segments(n_bits):
    """The portable one-word pass with relevant items given as segments of the database (the
    class-sorted copy's, or none for listed relevance): segments that are everything, nothing,
    one item."""
    rng = np.random.default_rng(n_bits)
    for n_db in (1, 127, 128, 129, 1000):
        q, db = rng.integers(0, 2, (9, n_bits)), rng.integers(0, 2, (n_db, n_bits))
        rel_segments = np.sort(rng.integers(0, n_db + 1, (9, 2)), axis=1)
        rel_segments[2], rel_segments[3], rel_segments[4] = (0, n_db), (0, 0), (n_db // 2, n_db // 2 + 1)
        relevant = (np.arange(n_db) >= rel_segments[:, :1]) & (np.arange(n_db) < rel_segments[:, 1:])
        for start, stop in ((0, 9), (2, 7)):
            hist = _segment_counts(q, db, rel_segments, start, stop)
            np.testing.assert_array_equal(hist[start:stop], _expected(q, db, relevant)[start:stop], err_msg=str(n_db))


@pytest.mark.parametrize(("n_bits", "n_labels"), [(7, 5), (64, 64), (64, 70), (100, 24)])
def test_multihot_pass_counts_shared_labels(n_bits, n_labels):
    """The multi-hot pass (grade = labels shared) against numpy: one word of code and of labels
    (cells counted four per load), and wider ones; database sizes off the 2,048-code chunk of cells
    and off the tile; a block of queries that does not start at 0."""
    rng = np.random.default_rng(n_bits + n_labels)
    for n_db in (1, 3, 2047, 2049, histogram._TILE_ROWS + 5):
        q, db = rng.integers(0, 2, (6, n_bits)), rng.integers(0, 2, (n_db, n_bits))
        query_labels, db_labels = rng.integers(0, 2, (6, n_labels)), rng.integers(0, 2, (n_db, n_labels))
        n_grades = max(2, int(query_labels.sum(axis=1).max()) + 1)
        expected = _expected(q, db, query_labels @ db_labels.T, n_grades)
        hist = np.zeros_like(expected)
        words = [ft.pack_codes(a.astype(bool)).words for a in (q, db, query_labels, db_labels)]
        histogram.hist_multihot(*_read_only(*words), n_bits, hist, 1, 5)
        np.testing.assert_array_equal(hist[1:5], expected[1:5], err_msg=str(n_db))
        assert not hist[0].any() and not hist[5].any()


@pytest.mark.parametrize("n_bits", [65, 128, 130, 192, 256, 320, 1024])
def test_tiled_pass_gathers_classes_tile_by_tile(monkeypatch, n_bits):
    """Codes of two words and more (the tiled pass, both its kernels; at two words the portable
    one, the bit-sliced pass on the other FASTTIE_KERNEL): several tiles,
    the last one partial; a class only in the first rows, one whose run crosses a tile boundary,
    one in every tile, one of no tile but the last; a query without a class, one of a class the
    database lacks; an odd query out, a block that does not start at 0, a block of one query."""
    rng = np.random.default_rng(n_bits)
    n_db, n_q = 2 * histogram._TILE + 37, 19
    q, db = rng.integers(0, 2, (n_q, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    q[:, : n_bits // 2] = db[0, : n_bits // 2]  # spread the distances
    db_ids = rng.integers(0, 3, n_db)
    db_ids[:5] = 3  # only in the first rows
    db_ids[histogram._TILE - 40:histogram._TILE + 60] = 4  # a run across a tile boundary
    db_ids[-3:] = 5  # only in the last, partial tile
    query_ids = np.resize(np.arange(6), n_q)
    query_ids[6], query_ids[7] = -1, 9  # no class; a class no database item has
    expected = _expected(q, db, query_ids[:, None] == db_ids[None])
    for kernel in PASSES:
        for tiled in _tiled_kernels(-(-n_bits // 64)):
            for start, stop in ((0, n_q), (2, 9), (4, 5)):
                hist = _class_counts(monkeypatch, kernel, q, db, query_ids, db_ids, start, stop, tiled)
                np.testing.assert_array_equal(hist[start:stop], expected[start:stop],
                                              err_msg=f"{kernel} {tiled.args[0].__name__} {start}")
                assert not hist[:start].any() and not hist[stop:].any()


@pytest.mark.parametrize("n_db", [3, 29, histogram._TILE + 5])
@pytest.mark.parametrize("n_bits", [128, 192, 256])
def test_tiled_pass_without_classes(n_bits, n_db):
    """No query of the block has a class (listed relevance: every item counted at grade 0, the
    database's class ids empty and never read); databases of fewer codes than a group of eight
    and than the fused kernel's lag of groups."""
    rng = np.random.default_rng(n_bits)
    q, db = rng.integers(0, 2, (5, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    query_words, db_words = ft.pack_codes(q).words, ft.pack_codes(db).words
    query_ids, db_ids = np.full(5, -1, dtype=np.int32), np.zeros(0, dtype=np.int32)
    _read_only(query_words, query_ids, db_words, db_ids)
    for tiled in _tiled_kernels(db_words.shape[1]):
        hist = np.zeros((5, n_bits + 1, 2), dtype=np.int64)
        tiled(query_words, query_ids, db_words, db_ids, 0, n_bits, hist, 0, 5)
        np.testing.assert_array_equal(hist, _expected(q, db, np.zeros((5, n_db), dtype=bool)), err_msg=tiled.args[0].__name__)


@pytest.mark.parametrize("n_bits", [64, 128])
def test_tiles_and_flushes(monkeypatch, n_bits):
    """A database over several tiles of both passes and past the bit-sliced pass's flush (its
    counters would overflow): classes of every size, one item to most of the database, spread
    over tiles and flushes."""
    rng = np.random.default_rng(7)
    n_db = bitsliced._FLUSH + histogram._TILE_ROWS + 555
    db = rng.integers(0, 2, (n_db, n_bits), dtype=np.int8)
    db_ids = rng.choice(5, n_db, p=[0.7, 0.2, 0.09, 0.00999, 0.00001])
    db_ids[bitsliced._TILE - 3:bitsliced._TILE + 900] = 3  # a run across a tile boundary
    q = rng.integers(0, 2, (6, n_bits), dtype=np.int8)
    q[0] = db[3]
    query_ids = np.array([0, 1, 2, 3, 4, -1])
    expected = _expected(q, db, query_ids[:, None] == db_ids[None])
    for kernel in PASSES:
        np.testing.assert_array_equal(_class_counts(monkeypatch, kernel, q, db, query_ids, db_ids, 0, 6), expected,
                                      err_msg=kernel)


@pytest.mark.parametrize("n_bits", [16, 64, 128])
def test_every_code_at_one_distance(monkeypatch, n_bits):
    """A database of one code repeated past two flushes of the bit-sliced pass (a collapsed hash
    model gives the same code to everything): every (lane, distance) counter takes a code per
    word of lanes until the flush, the most a counter must hold."""
    n_db = 2 * bitsliced._FLUSH + 300
    db = np.zeros((n_db, n_bits), dtype=np.int8)
    db_ids = np.zeros(n_db, dtype=np.int64)
    db_ids[:5], db_ids[n_db - 7:] = 1, 1
    q = np.zeros((2, n_bits), dtype=np.int8)
    q[1] = 1  # at distance n_bits from every code
    query_ids = np.array([0, 1])
    expected = np.zeros((2, n_bits + 1, 2), dtype=np.int64)
    expected[0, 0] = 12, n_db - 12
    expected[1, n_bits] = n_db - 12, 12
    for kernel in PASSES:
        np.testing.assert_array_equal(_class_counts(monkeypatch, kernel, q, db, query_ids, db_ids, 0, 2), expected,
                                      err_msg=kernel)


@pytest.mark.parametrize("n_bits", [32, 128])
def test_many_classes_in_one_block(monkeypatch, n_bits):
    """More classes in a block of queries than a tile holds groups: the bit-sliced pass gathers
    each tile's items of the block's classes into runs padded to whole groups with zero codes,
    which it takes out again."""
    rng = np.random.default_rng(3)
    n_db, n_classes = 20_000, 300
    db, db_ids = rng.integers(0, 2, (n_db, n_bits)), rng.integers(0, n_classes, n_db)
    q, query_ids = rng.integers(0, 2, (150, n_bits)), rng.permutation(n_classes)[:150]
    q[:5] = 0  # at the zero codes' distance, popcount(query) = 0
    expected = _expected(q, db, query_ids[:, None] == db_ids[None])
    for kernel in PASSES:
        np.testing.assert_array_equal(_class_counts(monkeypatch, kernel, q, db, query_ids, db_ids, 0, 150), expected,
                                      err_msg=kernel)


@pytest.mark.parametrize("labels", ["class", "multihot", "listed"])
@pytest.mark.parametrize("n_bits", [24, 64, 100])
def test_evaluate_is_bitwise_the_same_on_both_passes(monkeypatch, labels, n_bits):
    """Whole evaluations, every relevance kind and tie mode, 1 to 3 threads: the passes agree
    to the bit."""
    q, db, ql, dl = random_codes(n_bits=n_bits, n_q=11, n_db=3000, seed=n_bits)
    rng = np.random.default_rng(n_bits)
    if labels == "class":
        kwargs = dict(query_labels=ql, db_labels=dl)
    elif labels == "multihot":
        kwargs = dict(query_labels=rng.integers(0, 2, (11, 5)), db_labels=rng.integers(0, 2, (3000, 5)))
    else:
        counts = rng.integers(0, 40, 11)
        indices = np.concatenate([rng.choice(3000, c, replace=False) for c in counts])
        kwargs = dict(relevance=(np.r_[0, np.cumsum(counts)], indices, rng.integers(1, 4, len(indices))))
    metrics = ["AP", "AP@50", "nDCG@20", "P@10", "RR", "Rprec", "P(radius=10)"]
    for ties in ("average", "stable", "optimistic", "pessimistic"):
        results = []
        for kernel in PASSES:
            monkeypatch.setenv("FASTTIE_KERNEL", kernel)
            for threads in (1, 2, 3):
                results.append(ft.evaluate(q, db, metrics=metrics, ties=ties, n_threads=threads, **kwargs))
        for name in metrics:
            assert len({r.per_query[name].tobytes() for r in results}) == 1, (name, ties)


def test_the_choice_of_pass(monkeypatch):
    monkeypatch.setenv("FASTTIE_KERNEL", "portable")
    assert not cpu.bitsliced_pass()
    monkeypatch.setenv("FASTTIE_KERNEL", "bitsliced")
    assert cpu.bitsliced_pass()
    monkeypatch.delenv("FASTTIE_KERNEL")
    assert cpu.bitsliced_pass() == cpu.host_has_avx512() == ({"avx512f", "avx512vpopcntdq"} <= cpu.host_features())
    monkeypatch.setenv("FASTTIE_KERNEL", "fast")
    with pytest.raises(ValueError, match=r"FASTTIE_KERNEL must be one of \('auto', 'portable', 'bitsliced'\)"):
        ft.evaluate(*random_codes(n_bits=8, n_q=2, n_db=10))


# a class pass's first call on tiny codes of n_words words, in the code of a fresh process
_CLASS_PASS_CALL = (
    "    w = np.zeros((256, n_words), np.uint64); w.setflags(write=False)\n"
    "    ids = np.zeros(256, np.int32); ids.setflags(write=False)\n"
    "    {kernel}(w[:2], ids[:2], w, ids, 1, 64 * n_words, np.zeros((2, 64 * n_words + 1, 2), np.int64), 0, 2)\n")


def _fresh_compile(code):
    """``code`` run in a fresh process without numba's cache (code loaded from it has no assembly)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "FASTTIE_NO_CACHE": "1"})


@pytest.mark.skipif(not cpu.host_has_avx512(), reason="the instructions of the bit-sliced pass need AVX-512 "
                    "F and VPOPCNTDQ, which this CPU lacks (the pass still runs here, split into narrower vectors)")
def test_bit_sliced_loop_is_avx512():
    """The compiled loops of the bit-sliced pass, one- and two-word codes: vector popcounts,
    variable shifts and ternary logic on zmm registers, and the pair sums of two-word codes
    (a fresh compile: code loaded from numba's cache has no assembly)."""
    code = (
        "import numpy as np\n"
        "from fasttie._kernels import bitsliced\n"
        "for n_words in (1, 2):\n"
        + _CLASS_PASS_CALL.format(kernel="bitsliced.hist_classes") +
        "    for loop in (bitsliced._sum_one_word, bitsliced._sum_two_words)[n_words - 1:n_words]:\n"
        "        asm = ''.join(loop.inspect_asm().values())\n"
        "        print(*(asm.count(i) for i in ('vpopcntq', 'vpternlogq', 'vpsllvq', 'vpshufd', 'zmm')))\n"
    )
    out = _fresh_compile(code)
    one_word, two_words = (list(map(int, line.split())) for line in out.stdout.splitlines())
    for popcounts, ternary, shifts, _, zmm in (one_word, two_words):  # 16 one-hot words per step
        assert popcounts >= 16 and ternary >= 16 and shifts >= 16 and zmm > 100, out.stdout
    assert two_words[3] >= 16, out.stdout  # the pair sums of two-word codes


@pytest.mark.skipif(not cpu.host_has_avx512(), reason="the fused tiled pass and full_width take zmm registers on "
                    "AVX-512 F and VPOPCNTDQ, which this CPU lacks")
def test_fused_tiled_and_cells_loops_are_zmm():
    """On AVX-512 the tiled passes this target runs are the fused ones, whose loops take vector
    popcounts on zmm registers (four-word codes, and codes of any width); the portable one-word
    and the multi-hot cells loops are vectorized on zmm too (LLVM's tuning for Intel servers
    would take ymm), a fresh compile as above."""
    assert histogram.tiled_kernel(4) is histogram.hist_classes_tiled_fused_four
    assert histogram.tiled_kernel(2) is histogram.tiled_kernel(5) is histogram.hist_classes_tiled_fused
    code = (
        "import numpy as np\n"
        "from fasttie._kernels import histogram as h\n"
        "for n_words in (4, 5):\n"
        + _CLASS_PASS_CALL.format(kernel="h.tiled_pass(n_words)") +
        "w = np.zeros((256, 1), np.uint64); w.setflags(write=False)\n"
        "segments = np.zeros((2, 2), np.int64); segments.setflags(write=False)\n"
        "h.hist_segments_one_word(w[:2], w, segments, 64, np.zeros((2, 65, 2), np.int64), 0, 2)\n"
        "h.hist_multihot(w[:2], w, w[:2], w, 64, np.zeros((2, 65, 65), np.int64), 0, 2)\n"
        "for loop in (h._count_range_four, h._count_range_fused, h._count_range_joint, h._count_range_multihot):\n"
        "    print(''.join(loop.inspect_asm().values()).count('vpopcntq\\t%zmm'))\n"
    )
    out = _fresh_compile(code)
    four, fused, joint, multihot = map(int, out.stdout.split())
    assert four >= 8 and fused >= 2 and joint >= 2 and multihot >= 2, out.stdout  # four: 4 words of 2 queries
