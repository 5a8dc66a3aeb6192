"""Engine properties: one compiled signature per kernel, thread-count independence, lazy
compilation, the class-sorted copy, fixed orders on wide codes, and the suite's kernel cache
folder."""

import os
import subprocess
import sys

import numpy as np
import pytest

import fasttie as ft
from fasttie._kernels import bitsliced, class_sort, cpu, finalize, hamming_ties, histogram
from fasttie.hamming import engine
from fasttie.relevance import make_relevance
from helpers import random_codes



def test_import_compiles_nothing():
    code = (
        "import fasttie, numba.core.registry as r\n"
        "from fasttie._kernels import histogram, hamming_ties\n"
        "from fasttie._kernels import bitsliced\n"
        "assert not histogram.hist_segments_one_word.signatures and not bitsliced.hist_classes_bitsliced.signatures\n"
        "assert not hamming_ties.finalize_histograms.signatures\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_one_signature_per_kernel(tmp_path):
    q, db, ql, dl = random_codes()
    np.save(tmp_path / "db.npy", db.astype(np.int8))
    mapped = np.load(tmp_path / "db.npy", mmap_mode="r")
    frozen = db.astype(np.float32)
    frozen.flags.writeable = False
    for database in (db, db.astype(bool), frozen, mapped, ft.pack_codes(mapped)):
        for labels in (dl, dl.astype(np.uint8), dl.astype(np.int64)):
            for ties in ("average", "stable"):
                ft.evaluate(q, database, ql.astype(np.int16), labels, metrics=["AP@5", "nDCG"], ties=ties)
    if cpu.bitsliced_pass():  # the database as it lies: no class sort
        one_word = (bitsliced.hist_classes_bitsliced,)
    else:
        one_word = (histogram.hist_segments_one_word, class_sort.count_classes, class_sort.scatter_by_class)
    q, db, ql, dl = random_codes(n_bits=256)
    for labels in (dl, dl.astype(np.uint8)):
        ft.evaluate(q, db, ql.astype(np.int16), labels, metrics=["AP@5", "nDCG"])
    ft.evaluate(q, db, relevance=([0, 1, 1, 2, 2, 3, 3, 3], [4, 9, 0], [1, 2, 1]), metrics=["AP@5", "nDCG"])
    for kernel in (*one_word, histogram.tiled_kernel(4), hamming_ties.finalize_histograms, finalize.finalize_ties_ratios,
                   hamming_ties.stable_scan, hamming_ties.finish_stable):
        assert len(kernel.signatures) == 1, (kernel, kernel.signatures)


@pytest.mark.parametrize("ties", ["average", "stable", "optimistic"])
@pytest.mark.parametrize("labels", ["class", "multihot", "listed"])
def test_bitwise_identical_across_thread_counts(ties, labels):
    q, db, ql, dl = random_codes(n_bits=32, n_q=9, n_db=2000, seed=3)
    if labels == "class":
        kwargs = dict(query_labels=ql, db_labels=dl)
    elif labels == "multihot":
        rng = np.random.default_rng(1)
        kwargs = dict(query_labels=rng.integers(0, 2, (9, 5)), db_labels=rng.integers(0, 2, (2000, 5)))
    else:
        rng = np.random.default_rng(2)
        counts = rng.integers(0, 30, 9)
        indices = np.concatenate([rng.choice(2000, c, replace=False) for c in counts])
        kwargs = dict(relevance=(np.r_[0, np.cumsum(counts)], indices, rng.integers(1, 4, len(indices))))
    metrics = ["AP", "AP@50", "nDCG@20", "WAP@30", "RR", "Rprec", "P(radius=10)"]
    one = ft.evaluate(q, db, metrics=metrics, ties=ties, n_threads=1, **kwargs)
    two = ft.evaluate(q, db, metrics=metrics, ties=ties, n_threads=2, **kwargs)
    for name in one.per_query:
        assert one.per_query[name].tobytes() == two.per_query[name].tobytes()
        assert one.mean[name] == two.mean[name]


@pytest.mark.parametrize("n_bits", [64, 128, 256])
@pytest.mark.parametrize("labels", ["class", "listed"])
def test_database_split_over_threads_counts_as_numpy(monkeypatch, n_bits, labels):
    """Few queries a thread: the gathering passes split the database over the threads (whole
    tiles a slice, the last one partial) and sum the counts: the same counts as numpy's
    distances and bitwise the same values as one thread and as the split over queries."""
    rng = np.random.default_rng(n_bits)
    n_db = 3 * engine._SPLIT_ALIGN + 77
    q, db = rng.integers(0, 2, (7, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    q[:, : n_bits // 2] = db[0, : n_bits // 2]  # spread the distances
    if labels == "class":
        ql, dl = rng.integers(0, 4, 7), rng.integers(0, 4, n_db)
        ql[3] = 9  # a class no database item has
        grades = (ql[:, None] == dl[None]).astype(np.int64)
        kwargs = dict(query_labels=ql, db_labels=dl)
    else:
        counts = rng.integers(0, 40, 7)
        indices = np.concatenate([rng.choice(n_db, c, replace=False) for c in counts])
        listed = rng.integers(1, 4, len(indices))
        grades = np.zeros((7, n_db), dtype=np.int64)
        grades[np.repeat(np.arange(7), counts), indices] = listed
        kwargs = dict(relevance=(np.r_[0, np.cumsum(counts)], indices, listed))
    dist = (q[:, None, :] != db[None]).sum(axis=2)
    expected = np.zeros((7, n_bits + 1, grades.max() + 1), dtype=np.int64)
    for i in range(7):
        np.add.at(expected[i], (dist[i], grades[i]), 1)
    db_codes = ft.pack_codes(db)
    spec = make_relevance(kwargs.get("query_labels"), kwargs.get("db_labels"), kwargs.get("relevance"), 7, n_db)
    for threads in (2, 3):
        database_pass = engine._DatabasePass(db_codes, spec, stable=False, n_threads=threads)
        # one-word codes have a gathering pass only where the bit-sliced one runs (AVX-512); on
        # other CPUs the portable pass splits over the queries, and the counts below are its
        assert database_pass.splits_database(7, threads) == (database_pass.class_pass is not None)
        assert database_pass.class_pass is not None or (n_bits == 64 and not cpu.bitsliced_codes(1))
        stats = ft.tie_stats(q, db, n_threads=threads, **kwargs)
        np.testing.assert_array_equal(stats.counts[:, :, : expected.shape[2]], expected)
        assert not stats.counts[:, :, expected.shape[2]:].any()
    metrics = ["AP", "AP@50", "nDCG@20", "RR", "P(radius=10)"]
    one = ft.evaluate(q, db, metrics=metrics, n_threads=1, **kwargs)
    split = ft.evaluate(q, db, metrics=metrics, n_threads=3, **kwargs)
    monkeypatch.setattr(engine, "_SPLIT_QUERIES", 0)  # the split over queries
    by_queries = ft.evaluate(q, db, metrics=metrics, n_threads=3, **kwargs)
    for name in one.per_query:
        assert one.per_query[name].tobytes() == split.per_query[name].tobytes() == by_queries.per_query[name].tobytes()


@pytest.mark.parametrize("n_bits", [1, 63, 64, 96, 128, 192, 256, 1024])
@pytest.mark.parametrize("labels", ["class", "multihot", "listed"])
def test_histogram_pass_matches_numpy_distances(n_bits, labels):
    """P and R within every radius are differences of the (distance, relevant) histogram."""
    rng = np.random.default_rng(n_bits)
    q, db = rng.integers(0, 2, (5, n_bits)), rng.integers(0, 2, (120, n_bits))
    q[:, : n_bits // 2] = db[0, : n_bits // 2]  # spread the distances
    if labels == "class":
        ql, dl = rng.integers(0, 3, 5), rng.integers(0, 3, 120)
        relevant = ql[:, None] == dl[None]
        kwargs = dict(query_labels=ql, db_labels=dl)
    elif labels == "multihot":
        ql, dl = rng.integers(0, 2, (5, 4)), rng.integers(0, 2, (120, 4))
        relevant = (ql @ dl.T) > 0
        kwargs = dict(query_labels=ql, db_labels=dl)
    else:
        relevant = rng.random((5, 120)) < 0.2
        kwargs = dict(relevance=(np.r_[0, np.cumsum(relevant.sum(1))], np.flatnonzero(relevant) % 120))
    dist = (q[:, None, :] != db[None]).sum(axis=2)
    radii = sorted({0, 1, n_bits // 4, n_bits // 2, n_bits})
    metrics = [f"{m}(radius={r})" for r in radii for m in ("P", "R")]
    res = ft.evaluate(q, db, metrics=metrics, **kwargs)
    for r in radii:
        within = dist <= r
        hits = (within & relevant).sum(1)
        precision = np.divide(hits, within.sum(1), out=np.zeros(5), where=within.sum(1) > 0)
        recall = np.divide(hits, relevant.sum(1), out=np.zeros(5), where=relevant.sum(1) > 0)
        np.testing.assert_array_equal(res.per_query[f"P(radius={r})"], precision)
        np.testing.assert_array_equal(res.per_query[f"R(radius={r})"], recall)


@pytest.mark.parametrize("n_classes", [1, 7, 3000])
def test_class_sorted_copy(monkeypatch, n_classes):
    """The portable one-word pass's class-sorted copy is numpy's stable sort by class, with each
    class's segment, whatever the chunks (one, several, fewer where the classes are many) and
    threads; a database already in class order is used as it is."""
    from fasttie.hamming import engine

    rng = np.random.default_rng(n_classes)
    n_db = 5003
    db_words = rng.integers(0, 2**63, (n_db, 1), dtype=np.int64).view(np.uint64)
    db_ids = rng.integers(0, n_classes, n_db).astype(np.int32)
    db_ids[-1] = n_classes - 1  # the largest id occurs
    order = np.argsort(db_ids, kind="stable")
    in_order, one_descent = np.ascontiguousarray(db_words[order]), np.roll(db_ids[order], 1)  # largest id first
    ids_in_order = db_ids[order]
    for array in (db_words, db_ids, in_order, one_descent, ids_in_order):
        array.setflags(write=False)  # as the engine passes them: one compiled signature per kernel
    ends = np.cumsum(np.bincount(db_ids, minlength=n_classes))
    expected_segments = np.stack([ends - np.bincount(db_ids, minlength=n_classes), ends], axis=1)
    for chunk, counters in ((1 << 20, 1 << 23), (1000, 1 << 23), (999, 9000), (1000, 2)):
        monkeypatch.setattr(engine, "_SORT_CHUNK", chunk)
        monkeypatch.setattr(engine, "_SORT_COUNTERS", counters)  # 3000 classes: 3 chunks, 1 chunk
        for n_threads in (1, 2):
            words, segments = engine._class_sorted(db_words, db_ids, n_classes, n_threads)
            np.testing.assert_array_equal(words, db_words[order])
            np.testing.assert_array_equal(segments, expected_segments)
        assert engine._class_sorted(in_order, ids_in_order, n_classes, 2)[0] is in_order
        words, _ = engine._class_sorted(in_order, one_descent, n_classes, 2)
        np.testing.assert_array_equal(words, in_order[np.argsort(one_descent, kind="stable")])


@pytest.mark.parametrize("n_bits", [128, 192, 256, 1024])
@pytest.mark.parametrize("ties", ["stable", "optimistic"])
def test_fixed_orders_on_wide_codes(n_bits, ties):
    """The stable pass and the grade-split ties on multi-word codes, against plain metrics."""
    from oracle import parse_metric, plain_metric

    rng = np.random.default_rng(n_bits)
    q, db = rng.integers(0, 2, (4, n_bits)), rng.integers(0, 2, (300, n_bits))
    db[:150, : n_bits - 6] = q[0, : n_bits - 6]  # many ties for query 0
    ql, dl = rng.integers(0, 2, (4, 5)), rng.integers(0, 2, (300, 5))
    grades = ql @ dl.T
    dist = (q[:, None, :] != db[None]).sum(axis=2)
    names = ["AP", "AP@20", "nDCG@10", "RR", "WAP@50", "Rprec"]
    res = ft.evaluate(q, db, ql, dl, metrics=names, ties=ties)
    for i in range(4):
        if grades[i].max() == 0:
            assert all(res.per_query[name][i] == 0 for name in names)  # empty="zero"
            continue
        key = (dist[i], -grades[i]) if ties == "optimistic" else (dist[i],)
        order = np.lexsort(key[::-1]) if ties == "optimistic" else np.argsort(dist[i], kind="stable")
        for name in names:
            expected = float(plain_metric(list(grades[i][order]), parse_metric(name)))
            assert res.per_query[name][i] == pytest.approx(expected, rel=1e-12, abs=1e-12), (i, name)


def test_the_suite_compiles_into_the_folder_keyed_by_the_kernel_sources():
    # numba reads NUMBA_CACHE_DIR once, on import: anything that imports numba before
    # tests/conftest.py sets it (a pytest warning filter naming a numba class did) would let
    # kernels compiled from older callees load from the package's cache
    import numba

    # the folder tests/conftest.py names, or the caller's own NUMBA_CACHE_DIR (CI's jobs set one)
    assert numba.config.CACHE_DIR == os.environ["NUMBA_CACHE_DIR"] != ""
