"""The full stable pass of class labels sweeps the database once for up to 8 queries of a class.

fasttie.hamming.engine.stable_groups orders the queries by class and cuts each class into groups;
hamming_ties._scan_class_group counts and records a whole group per database item. Its values
must be bitwise those of each query scanned alone (a call with that one query takes the
single-query scan), for any thread count, and equal the metrics of np.argsort(kind="stable").
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fasttie as ft
import fasttie.hamming.engine as engine
from fasttie._kernels.hamming_ties import GROUP, GROUP_MIN, ONE_BY_ONE, SWEPT
from helpers import assert_stable_argsort_order
from oracle import grades_from_labels

# whole-list metrics (the full pass), every optional sum of the finalizer, and cutoffs
METRICS = ["AP", "AP@7", "nDCG", "nDCG@10", "P@5", "R@40", "RR", "Rprec", "WAP", "WAP@20", "ERR", "ERR@9", "RBP@30",
           "Bpref", "IPrec@0.3", "11pt", "Success@3", "P(radius=5)"]
ORACLE_METRICS = ["AP", "AP@7", "nDCG", "nDCG@10", "P@5", "R@40", "RR", "Rprec", "WAP", "WAP@20"]


def _inputs(n_q, n_db, n_bits, n_classes, rng):
    """Codes with long runs of equal distances, and class labels."""
    q = rng.integers(0, 2, (n_q, n_bits))
    db = rng.integers(0, 2, (n_db, n_bits))
    db[: n_db // 3, : max(n_bits - 3, 1)] = q[0, : max(n_bits - 3, 1)]
    return q, db, rng.integers(0, n_classes, n_q), rng.integers(0, n_classes, n_db)


def _assert_grouped_is_per_query(q, db, ql, dl, threads=(1, 2, 3)):
    together = [ft.evaluate(q, db, ql, dl, metrics=METRICS, ties="stable", empty="zero", n_threads=t)
                for t in threads]
    alone = [ft.evaluate(q[i : i + 1], db, ql[i : i + 1], dl, metrics=METRICS, ties="stable", empty="zero")
             for i in range(len(q))]
    for name in METRICS:
        expected = np.array([a.per_query[name][0] for a in alone])
        for result in together:
            assert result.per_query[name].tobytes() == expected.tobytes(), name
    return together[0]


@pytest.mark.parametrize("n_bits", [12, 64, 128, 200])
def test_groups_are_bitwise_single_queries_and_the_argsort_order(n_bits):
    rng = np.random.default_rng(n_bits)
    q, db, ql, dl = _inputs(41, 300, n_bits, 3, rng)  # classes of about 14: groups of 8 and remainders
    order, group_ptr = engine.stable_groups("class", ql, np.full(len(ql), 300))
    assert np.diff(group_ptr).max() >= GROUP_MIN  # the sweep of a group runs
    together = _assert_grouped_is_per_query(q, db, ql, dl)
    grades = grades_from_labels(ql, dl)
    assert_stable_argsort_order(together, q, db, grades, ORACLE_METRICS)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(5, 40), st.integers(2, 130), st.integers(1, 160), st.integers(1, 4))
def test_random_groups(seed, n_q, n_bits, n_db, n_classes):
    rng = np.random.default_rng(seed)
    _assert_grouped_is_per_query(*_inputs(n_q, n_db, n_bits, n_classes, rng), threads=(1, 3))


def test_stable_groups_cut_classes_in_order():
    labels = np.array([2, 0, 2, 2, 1] + [0] * 20 + [2] * 3)
    order, group_ptr = engine.stable_groups("class", labels, np.full(len(labels), 10))
    assert sorted(order) == list(range(len(labels)))
    groups = [order[a:b] for a, b in zip(group_ptr[:-1], group_ptr[1:])]
    for members in groups:
        assert 1 <= len(members) <= GROUP and len(set(labels[members])) == 1
        assert list(members) == sorted(members)  # a class keeps the queries' order
    assert sorted(len(g) for g in groups) == [1, 5, 6, 8, 8]  # class 0: 21 = 8 + 8 + 5; class 2: 6; class 1: 1
    assert [len(g) for g in groups] == [8, 8, 6, 5, 1]  # the largest first: the threads end on cheap blocks
    for kind in ("multihot", "listed"):  # their relevant items differ per query: one query per group
        order, group_ptr = engine.stable_groups(kind, labels, np.full(len(labels), 10))
        assert list(order) == list(range(len(labels))) and list(group_ptr) == list(range(len(labels) + 1))


def test_large_classes_go_one_query_at_a_time(monkeypatch):
    """Records of GROUP queries must fit in the scratch budget; beyond it, the single-query scan."""
    rng = np.random.default_rng(5)
    q, db, ql, dl = _inputs(12, 200, 64, 1, rng)
    grouped = ft.evaluate(q, db, ql, dl, metrics=METRICS, ties="stable", empty="zero")
    monkeypatch.setattr(engine, "_GROUP_SCRATCH", GROUP * 8 * 200)  # 200 relevant items + 1 no longer fit
    order, group_ptr = engine.stable_groups("class", ql, np.full(len(ql), 200))
    assert list(group_ptr) == list(range(len(ql) + 1))
    single = ft.evaluate(q, db, ql, dl, metrics=METRICS, ties="stable", empty="zero")
    for name in METRICS:
        assert grouped.per_query[name].tobytes() == single.per_query[name].tobytes(), name


# cutoffs only: with most queries in sweeps, the full pass ranks the items up to the distance that
# holds the deepest cutoff (the bounded pass, hamming_ties.finish_stable with depth < n_db)
TOP_METRICS = ["AP@7", "nDCG@10", "P@5", "R@40", "RR@12", "WAP@20", "ERR@9", "RBP@30", "Success@3", "F1@25"]


@pytest.mark.parametrize("n_bits", [12, 64, 130])
def test_cutoffs_only_in_sweeps_are_bitwise_the_bounded_pass(n_bits, monkeypatch):
    rng = np.random.default_rng(n_bits + 7)
    q, db, ql, dl = _inputs(41, 300, n_bits, 3, rng)
    spec = engine.make_relevance(ql, dl, None, len(ql), len(dl))
    assert engine.swept_share(spec) >= 0.5  # the sweeps run
    calls = []
    real = engine.finish_stable_optional  # WAP and RBP: the kernel with the optional sums
    monkeypatch.setattr(engine, "finish_stable_optional", lambda *a: calls.append(a[8]) or real(*a))
    swept = [ft.evaluate(q, db, ql, dl, metrics=TOP_METRICS, ties="stable", empty="zero", n_threads=t)
             for t in (1, 3)]
    assert calls and min(calls) == 40  # depth: the deepest cutoff, not the whole list
    monkeypatch.setattr(engine, "swept_share", lambda spec: 0.0)  # the counts, then the near scans
    bounded = ft.evaluate(q, db, ql, dl, metrics=TOP_METRICS, ties="stable", empty="zero")
    for name in TOP_METRICS:
        for result in swept:
            assert result.per_query[name].tobytes() == bounded.per_query[name].tobytes(), name
    assert_stable_argsort_order(swept[0], q, db, grades_from_labels(ql, dl), ["AP@7", "nDCG@10", "P@5", "R@40",
                                                                             "WAP@20"])


def test_swept_share_counts_the_queries_of_sweeps(monkeypatch):
    dl = np.arange(300) % 3
    for labels, share in [([0] * 21 + [1] * 4, 21 / 25), ([0] * 4 + [1] * 3, 0.0), ([2] * 16, 1.0)]:
        spec = engine.make_relevance(np.array(labels), dl, None, len(labels), len(dl))
        assert engine.swept_share(spec) == pytest.approx(share)
    monkeypatch.setattr(engine, "_GROUP_SCRATCH", GROUP * 8 * 100)  # classes of 100 no longer fit
    spec = engine.make_relevance(np.array([2] * 16), dl, None, 16, len(dl))
    assert engine.swept_share(spec) == 0.0


# whole-list AP past the deepest cutoff and the discount table: finalize_ranked's tail computes the
# divisions a block at a time (all listed items relevant); whole-list nDCG keeps the item walk
TAIL_METRICS = ["AP", "AP@3", "nDCG@4", "P@6", "Rprec", "RR", "R@9", "Judged@500", "ERR@5"]


@pytest.mark.parametrize("n_bits", [12, 64])
def test_relevant_tail_is_bitwise_the_item_walk(n_bits):
    rng = np.random.default_rng(n_bits + 11)
    q, db, ql, dl = _inputs(23, 700, n_bits, 2, rng)  # about 350 relevant items: tails of several blocks
    tail = ft.evaluate(q, db, ql, dl, metrics=TAIL_METRICS, ties="stable", empty="zero")
    walk = ft.evaluate(q, db, ql, dl, metrics=TAIL_METRICS + ["nDCG"], ties="stable", empty="zero")
    for name in TAIL_METRICS:
        assert tail.per_query[name].tobytes() == walk.per_query[name].tobytes(), name
    assert_stable_argsort_order(tail, q, db, grades_from_labels(ql, dl), ["AP", "AP@3", "nDCG@4", "P@6", "Rprec",
                                                                        "RR", "R@9"])
    # ranked lists whose rows are all relevant take the same tail
    scores = rng.integers(0, 40, (5, 600)).astype(float)
    grades = rng.integers(1, 4, (5, 600)).astype(float)
    tail = ft.rank_evaluate(grades, scores, metrics=TAIL_METRICS[:-1], ties="stable")
    walk = ft.rank_evaluate(grades, scores, metrics=TAIL_METRICS[:-1] + ["nDCG"], ties="stable")
    for name in TAIL_METRICS[:-1]:
        assert tail.per_query[name].tobytes() == walk.per_query[name].tobytes(), name


@pytest.mark.parametrize("budget_items", [1, 300, 2500, 10**6])
def test_scan_batches_cover_the_groups_within_the_budget(monkeypatch, budget_items):
    """The scans go in batches of consecutive groups whose records fit in the budget (or one group
    that alone does not), each query row a slot of its own, larger than its relevant items."""
    monkeypatch.setattr(engine, "_BATCH_RECORDS", budget_items)
    labels = np.array([2, 0, 2, 2, 1] + [0] * 20 + [2] * 3)
    n_relevant = np.array([40, 90, 40, 40, 7] + [90] * 20 + [40] * 3)
    order, group_ptr = engine.stable_groups("class", labels, n_relevant)
    n_groups = len(group_ptr) - 1
    for lo, hi in [(0, n_groups), (1, 4), (3, 3)]:
        batches = list(engine.stable_scan_batches(order, group_ptr, n_relevant, lo, hi, 12))
        assert [b[0] for b in batches] == sorted({b[0] for b in batches})
        covered = []
        for first, slot_start, slot_width, sweeps, records, record_grades, record_start, n_found, counts in batches:
            groups = range(first, first + len(slot_width))
            covered += groups
            sizes = [group_ptr[g + 1] - group_ptr[g] for g in groups]
            assert list(sweeps) == [SWEPT if s >= GROUP_MIN else ONE_BY_ONE for s in sizes]
            rows = [GROUP if s >= GROUP_MIN else s for s in sizes]
            assert list(slot_width) == [n_relevant[order[group_ptr[g]:group_ptr[g + 1]]].max() + 1 for g in groups]
            ends = slot_start + np.array(rows) * slot_width
            assert slot_start[0] == 0 and list(slot_start[1:]) == list(ends[:-1])  # packed, no overlap
            assert ends[-1] <= len(records) == len(record_grades)
            assert len(groups) == 1 or ends[-1] <= budget_items
            assert len(record_start) == len(n_found) == len(counts) == sum(sizes) and counts.shape[1] == 13
        assert covered == list(range(lo, hi))


@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
def test_small_scan_batches_are_bitwise_one_batch(monkeypatch, kind):
    """Batches of one or a few groups (a small scratch budget) give the bits of one batch, and the
    argsort order."""
    rng = np.random.default_rng(11)
    q, db, ql, dl = _inputs(30, 250, 64, 3, rng)
    if kind == "class":
        kwargs = dict(query_labels=ql, db_labels=dl)
    elif kind == "multihot":
        kwargs = dict(query_labels=rng.integers(0, 2, (30, 4)), db_labels=rng.integers(0, 2, (250, 4)))
    else:
        counts = rng.integers(0, 40, 30)
        ids = np.concatenate([np.sort(rng.choice(250, c, replace=False)) for c in counts])
        kwargs = dict(relevance=(np.r_[0, np.cumsum(counts)], ids, rng.integers(1, 4, len(ids))))
    one = ft.evaluate(q, db, metrics=METRICS, ties="stable", empty="zero", **kwargs)
    class_size = np.bincount(dl, minlength=3)
    monkeypatch.setattr(engine, "_BATCH_RECORDS", GROUP * (class_size.max() + 1))  # one sweep a batch
    if kind == "class":
        n_relevant = class_size[ql].astype(np.int64)
        order, group_ptr = engine.stable_groups("class", ql, n_relevant)
        assert np.diff(group_ptr).max() >= GROUP_MIN
        batches = list(engine.stable_scan_batches(order, group_ptr, n_relevant, 0, len(group_ptr) - 1, 64))
        assert len(batches) >= 3
    for threads in (1, 3):
        small = ft.evaluate(q, db, metrics=METRICS, ties="stable", empty="zero", n_threads=threads, **kwargs)
        for name in METRICS:
            assert small.per_query[name].tobytes() == one.per_query[name].tobytes(), name
    if kind == "class":
        assert_stable_argsort_order(one, q, db, grades_from_labels(ql, dl), ORACLE_METRICS)
