"""The stable pass's vector sweep (fasttie._kernels.stable_lanes): up to 8 queries of one class as
the lanes of a vector, their running counts bit-sliced, each relevant item's count read out of the
bit planes.

Its counts and records must be bitwise those of the sweep that keeps its counts in memory
(hamming_ties._scan_class_group) on any codes of one word: every width up to 64 bits, distance 64
(a code's complement), databases that end inside a block of sixteen, counts past what the planes
in registers hold. Through ft.evaluate the metrics must be bitwise those of the other sweeps and
equal those of the np.argsort(kind="stable") order. LLVM lowers the vector code on any CPU (split
into the vectors the CPU has), so these run everywhere, whatever pass the CPU would choose.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fasttie as ft
import fasttie.hamming.engine as engine
from fasttie._kernels.hamming_ties import GROUP, GROUP_STRIDE, LANES, ONE_BY_ONE, SWEPT, _scan_class_group
from fasttie._kernels.stable_lanes import BLOCK, HIGH_ROWS, sweep_class_lanes
from helpers import assert_stable_argsort_order
from oracle import grades_from_labels


def _random_words(rng, n, n_bits):
    words = rng.integers(0, 2, (n, 64), dtype=np.uint64)[:, :n_bits] << np.arange(n_bits, dtype=np.uint64)
    return words.sum(axis=1, dtype=np.uint64).reshape(n, 1)


def _both_sweeps(query_words, db_words, db_labels, rows):
    """(m, counts, records) of each sweep for the queries ``rows`` (of class 0), per query row."""
    label = np.int32(0)
    width = int((db_labels == label).sum()) + 1
    out = []
    for sweep, scratch in ((_scan_class_group, ()),
                           (sweep_class_lanes, (np.empty((HIGH_ROWS, 8), dtype=np.uint64),
                                                np.empty((BLOCK + 1, 8), dtype=np.uint64)))):
        count = np.zeros(GROUP * GROUP_STRIDE, dtype=np.uint32)
        records = np.zeros(GROUP * width, dtype=np.uint64)
        m = sweep(query_words, rows, len(rows), db_words, db_labels, label, count, records, width, *scratch)
        out.append((m, [count[r * GROUP_STRIDE : r * GROUP_STRIDE + 65].copy() for r in range(len(rows))],
                    [records[r * width : r * width + m].copy() for r in range(len(rows))]))
    return out


def _assert_same(query_words, db_words, db_labels, rows):
    (m_memory, counts_memory, records_memory), (m_lanes, counts_lanes, records_lanes) = _both_sweeps(
        query_words, db_words, db_labels, rows)
    assert m_lanes == m_memory == int((db_labels == 0).sum())
    for r in range(len(rows)):
        assert counts_lanes[r].tobytes() == counts_memory[r].tobytes(), r
        assert records_lanes[r].tobytes() == records_memory[r].tobytes(), r


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 64), st.integers(0, 120), st.integers(1, 8), st.integers(1, 4),
       st.booleans())
def test_vector_sweep_is_bitwise_the_memory_sweep(seed, n_bits, n_db, n_rows, n_classes, complements):
    rng = np.random.default_rng(seed)
    query_words = _random_words(rng, 8, n_bits)
    db_words = _random_words(rng, n_db, n_bits)
    if complements and n_db:  # codes at every distance from some query, 64 too for 64-bit codes
        mask = np.uint64((1 << n_bits) - 1) if n_bits < 64 else ~np.uint64(0)
        at = rng.integers(0, n_db, max(1, n_db // 4))
        db_words[at, 0] = ~query_words[rng.integers(0, 8, len(at)), 0] & mask
    db_labels = rng.integers(0, n_classes, n_db).astype(np.int32)
    _assert_same(query_words, db_words, db_labels, rng.permutation(8)[:n_rows].astype(np.int64))


@pytest.mark.parametrize("n_bits", [1, 64])
def test_counts_past_the_planes_in_registers(n_bits):
    """40,003 codes at two or three distances: counts pass 16,383 and carry into the planes in
    memory (and back out at the distances read), distance 64 among them for 64-bit codes."""
    rng = np.random.default_rng(n_bits)
    query_words = _random_words(rng, 8, n_bits)
    db_words = np.repeat(query_words[:2], 20002, axis=0)[:40003].copy()
    if n_bits == 64:
        db_words[::3, 0] = ~query_words[0, 0]
    db_labels = (rng.random(40003) < 0.3).astype(np.int32)  # class 0 the larger
    (_, counts, _), _ = _both_sweeps(query_words, db_words, db_labels, np.arange(8, dtype=np.int64))
    assert max(c.max() for c in counts) > 16383
    _assert_same(query_words, db_words, db_labels, np.arange(8, dtype=np.int64))


def test_group_sweeps_choose_by_queries_and_relevant_share():
    sizes = np.array([8, 8, 5, 3, 2, 1])
    relevant = np.array([100, 101, 100, 100, 1, 1])
    assert list(engine.group_sweeps(sizes, relevant, 1000, False)) == [SWEPT, SWEPT, SWEPT] + [ONE_BY_ONE] * 3
    assert list(engine.group_sweeps(sizes, relevant, 1000, True)) == [LANES, SWEPT, LANES, LANES, ONE_BY_ONE,
                                                                      ONE_BY_ONE]


@pytest.mark.parametrize("n_bits", [7, 64])
def test_evaluate_with_vector_sweeps_is_bitwise_the_other_sweeps(monkeypatch, n_bits):
    """Every class group of 3 or more queries through the vector sweep (forced, whatever the CPU),
    bitwise the sweeps with counts in memory and queries one by one, and the argsort order."""
    rng = np.random.default_rng(n_bits)
    q = rng.integers(0, 2, (41, n_bits))
    db = rng.integers(0, 2, (1003, n_bits))  # 1003: the last codes outside whole blocks of 16
    db[:300, : n_bits - 2] = q[0, : n_bits - 2]  # long runs of equal distances
    ql, dl = rng.integers(0, 3, 41), rng.integers(0, 3, 1003)
    metrics = ["AP", "AP@7", "nDCG", "nDCG@10", "P@5", "R@40", "RR", "Rprec", "WAP@20", "ERR", "RBP@30", "Bpref"]
    memory = ft.evaluate(q, db, ql, dl, metrics=metrics, ties="stable", empty="zero")
    swept = []
    real = engine.group_sweeps
    monkeypatch.setattr(engine, "vector_sweeps", lambda kind, n_words, pairs: kind == "class" and n_words == 1)
    monkeypatch.setattr(engine, "LANES_SHARE", 1)
    monkeypatch.setattr(engine, "group_sweeps", lambda *a: swept.append(real(*a)) or swept[-1])
    for threads in (1, 3):
        lanes = ft.evaluate(q, db, ql, dl, metrics=metrics, ties="stable", empty="zero", n_threads=threads)
        for name in metrics:
            assert lanes.per_query[name].tobytes() == memory.per_query[name].tobytes(), name
    assert not any((s == SWEPT).any() for s in swept) and sum((s == LANES).sum() for s in swept) >= 8
    assert_stable_argsort_order(lanes, q, db, grades_from_labels(ql, dl), ["AP", "AP@7", "nDCG@10", "P@5", "Rprec"])
