"""fasttie.torchmetrics against torchmetrics 1.9 (tie-free positive scores), against a brute-force
oracle (ties, any sign), against fasttie.evaluate (HammingRetrieval), in a training-like loop and
synced across two gloo processes.

torchmetrics computes in float32, so agreement with it is to 2e-6; the oracle and fasttie's own
functions are matched to 1e-12 or bitwise.
"""

import itertools
import math
import os
import pickle
import random
import tempfile
import time
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchmetrics = pytest.importorskip("torchmetrics")

import torchmetrics.retrieval as tmr  # noqa: E402

import fasttie as ft  # noqa: E402
import fasttie.torchmetrics as ftm  # noqa: E402

# (fasttie class, torchmetrics class, takes top_k, graded targets)
PAIRS = [
    (ftm.RetrievalMAP, tmr.RetrievalMAP, True, False),
    (ftm.RetrievalNormalizedDCG, tmr.RetrievalNormalizedDCG, True, True),
    (ftm.RetrievalPrecision, tmr.RetrievalPrecision, True, False),
    (ftm.RetrievalRecall, tmr.RetrievalRecall, True, False),
    (ftm.RetrievalMRR, tmr.RetrievalMRR, True, False),
    (ftm.RetrievalRPrecision, tmr.RetrievalRPrecision, False, False),
    (ftm.RetrievalHitRate, tmr.RetrievalHitRate, True, False),
]
ACTIONS = ["neg", "pos", "skip"]


def _rows(rng, *, n_queries, max_len, graded, tie_free, signed, empty_share=0.25):
    """Random (preds, target, indexes) rows, query ids shuffled among the rows."""
    preds, target, indexes = [], [], []
    for q in range(n_queries):
        n = rng.randint(1, max_len)
        if rng.random() < empty_share:
            grades = [0] * n
        else:
            grades = [rng.choice([0, 1, 2, 3]) if graded else rng.randint(0, 1) for _ in range(n)]
        target += grades
        indexes += [q * 7 + 3] * n  # sparse ids, as torchmetrics allows
    order = list(range(len(target)))
    rng.shuffle(order)
    if tie_free:  # distinct float32 values, positive unless signed
        values = [(i + 1) / 64 for i in range(len(target))]
        rng.shuffle(values)
        preds = [v - (0.5 if signed else 0) for v in values]
    else:  # few distinct values: many ties
        preds = [rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0] if signed else [0.25, 0.5, 0.75]) for _ in target]
    preds = torch.tensor([preds[i] for i in order], dtype=torch.float32)
    target = torch.tensor([target[i] for i in order], dtype=torch.float32 if graded else torch.long)
    indexes = torch.tensor([indexes[i] for i in order], dtype=torch.long)
    return preds, target, indexes


def _kwargs(rng, takes_top_k, cls):
    kw = {"empty_target_action": rng.choice(ACTIONS)}
    if takes_top_k:
        kw["top_k"] = rng.choice([None, 1, 2, 3, 5, 9])
    if cls is ftm.RetrievalPrecision:
        kw["adaptive_k"] = rng.random() < 0.5
    return kw


def _root_mean_square(values, dim=None):
    return values.pow(2).mean().sqrt() if dim is None else values.pow(2).mean(dim=dim).sqrt()


@pytest.mark.parametrize("ours, theirs, takes_top_k, graded", PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_equal_to_torchmetrics_without_ties(ours, theirs, takes_top_k, graded):
    for seed in range(24):
        rng = random.Random(seed)
        kw = _kwargs(rng, takes_top_k, ours)
        if seed % 6 == 5:
            kw["aggregation"] = ["median", "min", "max", _root_mean_square][seed // 6]  # each once
        a, b = ours(**kw), theirs(**kw)
        rows = _rows(rng, n_queries=rng.randint(1, 6), max_len=8, graded=graded, tie_free=True, signed=False)
        cuts = sorted(rng.sample(range(1, len(rows[0])), min(2, len(rows[0]) - 1)))
        for chunk in zip(*(torch.tensor_split(x, cuts) for x in rows)):  # a query's rows in several updates
            a.update(*chunk)
            b.update(*chunk)
        got, want = a.compute(), b.compute()
        assert got.dtype == torch.float64
        assert abs(got.item() - want.item()) <= 2e-6, (seed, kw, got, want)


def test_ignore_index_drops_rows_as_torchmetrics():
    rng = random.Random(5)
    for ours, theirs, takes_top_k, graded in PAIRS:
        preds, target, indexes = _rows(rng, n_queries=5, max_len=8, graded=graded, tie_free=True, signed=False)
        target = target.clone()
        target[::3] = -100
        kw = {"ignore_index": -100, **({"top_k": 3} if takes_top_k else {})}
        a, b = ours(**kw), theirs(**kw)
        a.update(preds, target, indexes)
        b.update(preds, target, indexes)
        assert abs(a.compute().item() - b.compute().item()) <= 2e-6, ours.__name__


# --- the oracle: every order of the tied rows, the plain metric of each, their mean -------------

def _plain(name, grades, top_k, adaptive_k=False):
    """A metric of one fixed ranked list of grades (fasttie's ranking: every item, any score)."""
    n = len(grades)
    k = n if top_k is None else top_k
    rel = [1 if g > 0 else 0 for g in grades]
    if name == "AP":  # AP@k over the relevant items in the top k (torchmetrics' denominator)
        hits, precisions = 0, []
        for i in range(min(k, n)):
            if rel[i]:
                hits += 1
                precisions.append(hits / (i + 1))
        return sum(precisions) / len(precisions) if precisions else 0.0
    if name == "P":
        if top_k is None or (adaptive_k and k > n):
            k = n
        return sum(rel[:k]) / k
    if name == "R":
        return sum(rel[:k]) / sum(rel)
    if name == "RR":
        return next((1 / (i + 1) for i in range(min(k, n)) if rel[i]), 0.0)
    if name == "Rprec":
        r = sum(rel)
        return sum(rel[:r]) / r
    if name == "HitRate":
        return float(any(rel[:k]))
    if name == "nDCG":  # linear gain, log2 discount
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(grades[:k]))
        ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(grades, reverse=True)[:k]))
        return dcg / ideal
    raise AssertionError(name)


def _tie_average(name, scores, grades, top_k, adaptive_k=False):
    """Mean of the plain metric over every permutation of the rows inside each run of equal scores."""
    groups = {}
    for s, g in zip(scores, grades):
        groups.setdefault(s, []).append(g)
    blocks = [list(itertools.permutations(groups[s])) for s in sorted(groups, reverse=True)]
    values = [_plain(name, [g for block in choice for g in block], top_k, adaptive_k)
              for choice in itertools.product(*blocks)]
    return math.fsum(values) / len(values)


def _oracle(name, preds, target, indexes, top_k, action, adaptive_k=False):
    per_query = []
    for q in sorted(set(indexes.tolist())):
        rows = (indexes == q).nonzero().flatten().tolist()
        scores, grades = [preds[i].item() for i in rows], [target[i].item() for i in rows]
        if sum(grades) == 0:
            if action != "skip":
                per_query.append(1.0 if action == "pos" else 0.0)
            continue
        per_query.append(_tie_average(name, scores, grades, top_k, adaptive_k))
    return math.fsum(per_query) / len(per_query) if per_query else 0.0


ORACLE_NAMES = {ftm.RetrievalMAP: "AP", ftm.RetrievalNormalizedDCG: "nDCG", ftm.RetrievalPrecision: "P",
                ftm.RetrievalRecall: "R", ftm.RetrievalMRR: "RR", ftm.RetrievalRPrecision: "Rprec",
                ftm.RetrievalHitRate: "HitRate"}


@pytest.mark.parametrize("ours, theirs, takes_top_k, graded", PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_ties_and_signed_scores_against_the_oracle(ours, theirs, takes_top_k, graded):
    for seed in range(20):
        rng = random.Random(1000 + seed)
        kw = _kwargs(rng, takes_top_k, ours)
        preds, target, indexes = _rows(rng, n_queries=rng.randint(1, 5), max_len=7, graded=graded,
                                       tie_free=False, signed=seed % 2 == 1)
        metric = ours(**kw)
        metric.update(preds, target, indexes)
        want = _oracle(ORACLE_NAMES[ours], preds, target, indexes, kw.get("top_k"), kw["empty_target_action"],
                       kw.get("adaptive_k", False))
        assert abs(metric.compute().item() - want) <= 1e-12, (seed, kw)
        if ours is ftm.RetrievalNormalizedDCG:  # torchmetrics averages tied scores too (float32)
            peer = theirs(**kw)
            peer.update(preds, target, indexes)
            assert abs(peer.compute().item() - want) <= 2e-6


def test_torchmetrics_zeroes_targets_scored_at_most_zero():
    """torchmetrics 1.9.0 (functional/retrieval: average_precision, precision, recall,
    reciprocal_rank) replaces the target of every item scored <= 0 by 0; fasttie ranks them."""
    preds = torch.tensor([-0.1, -0.2, -0.3])
    target = torch.tensor([0, 1, 0])
    indexes = torch.zeros(3, dtype=torch.long)
    for ours, theirs, want in [(ftm.RetrievalMAP, tmr.RetrievalMAP, 0.5), (ftm.RetrievalMRR, tmr.RetrievalMRR, 0.5),
                               (ftm.RetrievalRecall, tmr.RetrievalRecall, 1.0),
                               (ftm.RetrievalPrecision, tmr.RetrievalPrecision, 1 / 3)]:
        a, b = ours(), theirs()
        a.update(preds, target, indexes)
        b.update(preds, target, indexes)
        assert a.compute().item() == pytest.approx(want, abs=1e-15)
        assert b.compute().item() == 0.0  # not a fasttie claim: documents the peer's rule


def test_empty_target_error_and_bad_input():
    metric = ftm.RetrievalMAP(empty_target_action="error")
    metric.update(torch.tensor([0.5, 0.2]), torch.tensor([0, 0]), torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="empty_target_action"):
        metric.compute()
    with pytest.raises(ValueError, match="empty_target_action"):
        ftm.RetrievalMAP(empty_target_action="zero")
    with pytest.raises(ValueError, match="top_k"):
        ftm.RetrievalMRR(top_k=0)
    with pytest.raises(ValueError, match="target"):
        ftm.RetrievalMAP().update(torch.tensor([0.5, 0.2]), torch.tensor([2, 0]), torch.tensor([1, 1]))
    with pytest.raises(TypeError, match="preds"):
        ftm.RetrievalMAP().update(torch.tensor([1, 2]), torch.tensor([1, 0]), torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="shape"):
        ftm.RetrievalMAP().update(torch.tensor([0.5, 0.2]), torch.tensor([1, 0]), torch.tensor([1]))


def test_nothing_added_raises_and_empty_updates_add_nothing():
    """One rule for every class: an update with no rows adds nothing, and compute() with no row
    (no database item) at all raises, as torchmetrics' own retrieval metrics do; never a 0.0
    that reads like a measured value."""
    messages = _nothing_anywhere()
    assert len(messages) == 8
    assert all("nothing to score" in m for m in messages), messages
    (preds, target, indexes), (queries, db, ql, dl) = _dataset()
    for name, metric in _metrics().items():
        metric.update(preds[:0], target[:0], indexes[:0])
        with pytest.raises(ValueError, match=r"call update\(\)"):
            metric.compute()
        metric.update(preds, target, indexes)
        alone = _metrics()[name]
        alone.update(preds, target, indexes)
        assert metric.compute().item() == alone.compute().item(), name
    dropped = ftm.RetrievalMAP(ignore_index=0)  # every row dropped: nothing to score either
    dropped.update(preds, torch.zeros_like(target), indexes)
    with pytest.raises(ValueError, match="ignore_index"):
        dropped.compute()
    hamming = _hamming(queries, ql)
    hamming.update(db[:0], dl[:0])
    hamming.update(torch.from_numpy(db[:0]), torch.from_numpy(dl[:0]))
    with pytest.raises(ValueError, match=r"call update\(\)"):
        hamming.compute()
    hamming.update(db, dl)
    assert {k: v.item() for k, v in hamming.compute().items()} == ft.evaluate(
        queries, db, ql, dl, metrics=["AP", "nDCG@10"]).mean
    with pytest.raises(ValueError, match="db_labels"):  # 0 rows still need matching labels
        hamming.update(db[:0], dl[:3])
    listed = ftm.HammingRetrieval(queries, metrics="AP", max_grade=1)
    listed.update(db[:0], relevance=(np.zeros(len(queries) + 1, np.int64), np.zeros(0, np.int64)))
    with pytest.raises(ValueError, match="relevance"):  # a 0-row chunk lists nothing
        listed.update(db[:0], relevance=(np.array([0, 1, 1, 1, 1, 1, 1, 1]), np.array([0])))


def test_low_precision_scores_tie_as_given():
    # bfloat16 logits collide: the metric averages over the collisions instead of picking topk's order
    preds = torch.tensor([0.50, 0.501, 0.2], dtype=torch.bfloat16)  # the first two are the same bfloat16
    metric = ftm.RetrievalMRR()
    metric.update(preds, torch.tensor([1, 0, 0]), torch.zeros(3, dtype=torch.long))
    assert metric.compute().item() == 0.75


# --- HammingRetrieval ---------------------------------------------------------------------------

def _codes(rng, n, n_bits):
    return rng.choice(np.array([-1, 1], dtype=np.int8), size=(n, n_bits))


@pytest.mark.parametrize("labels", ["class", "multihot"])
def test_hamming_retrieval_equals_evaluate_over_chunks(labels):
    rng = np.random.default_rng(7)
    for case in range(4):
        n_bits, n_db = [8, 16, 33, 64][case], 120
        queries, db = _codes(rng, 9, n_bits), _codes(rng, n_db, n_bits)
        if labels == "class":
            ql, dl = rng.integers(0, 4, 9), rng.integers(0, 4, n_db)
        else:
            ql, dl = rng.integers(0, 2, (9, 5)), rng.integers(0, 2, (n_db, 5))
        metrics = ["AP", "nDCG@10", "P@5", "R@20", "RR", "Rprec"]
        for ties in ["average", "optimistic", "pessimistic"]:
            metric = ftm.HammingRetrieval(torch.from_numpy(queries), torch.from_numpy(ql), metrics=metrics, ties=ties)
            cuts = np.sort(rng.choice(np.arange(1, n_db), size=3, replace=False))
            for part, part_labels in zip(np.split(db, cuts), np.split(dl, cuts)):
                metric.update(torch.from_numpy(part), torch.from_numpy(part_labels))
            got = metric.compute()
            want = ft.evaluate(queries, db, ql, dl, metrics=metrics, ties=ties).mean
            assert list(got) == list(want)
            assert {k: v.item() for k, v in got.items()} == want  # bitwise
    single = ftm.HammingRetrieval(ft.pack_codes(queries), ql, metrics="nDCG@10")  # packed codes too
    single.update(ft.pack_codes(db[:50]), dl[:50])
    single.update(db[50:], dl[50:])
    assert single.compute().item() == ft.evaluate(queries, db, ql, dl, metrics="nDCG@10").mean["nDCG@10"]


def test_hamming_retrieval_listed_grades():
    rng = np.random.default_rng(3)
    queries, db = _codes(rng, 5, 16), _codes(rng, 40, 16)
    grades = rng.integers(0, 4, (5, 40)) * (rng.random((5, 40)) < 0.3)
    metric = ftm.HammingRetrieval(queries, metrics=["nDCG@10", "AP"], max_grade=3)
    for lo, hi in [(0, 13), (13, 30), (30, 40)]:
        part = grades[:, lo:hi]
        indptr = np.concatenate([[0], np.cumsum((part > 0).sum(axis=1))])
        rows, cols = np.nonzero(part)
        metric.update(db[lo:hi], relevance=(indptr, cols, part[rows, cols]))
    indptr = np.concatenate([[0], np.cumsum((grades > 0).sum(axis=1))])
    rows, cols = np.nonzero(grades)
    want = ft.evaluate(queries, db, relevance=(indptr, cols, grades[rows, cols]), metrics=["nDCG@10", "AP"]).mean
    assert {k: v.item() for k, v in metric.compute().items()} == want
    small = ftm.HammingRetrieval(queries, metrics="AP", max_grade=1)
    with pytest.raises(ValueError, match="max_grade"):
        small.update(db[:2], relevance=(np.array([0, 1, 1, 1, 1, 1]), np.array([0]), np.array([3])))
    with pytest.raises(ValueError, match="max_grade"):
        ftm.HammingRetrieval(queries, metrics="AP")
    with pytest.raises(ValueError, match="stable"):
        ftm.HammingRetrieval(queries, np.zeros(5, int), ties="stable")


# --- in a loop, and across processes ------------------------------------------------------------

def test_training_loop_update_compute_reset():
    """What Lightning does with a Metric logged per epoch, without Lightning: forward per batch
    (the batch value), compute at the end of the epoch, reset."""
    rng = random.Random(11)
    metric = ftm.RetrievalNormalizedDCG(top_k=5)
    logged = []
    for epoch in range(2):
        batches = [_rows(rng, n_queries=3, max_len=6, graded=True, tie_free=False, signed=True) for _ in range(4)]
        for b, (preds, target, indexes) in enumerate(batches):
            indexes = indexes + 100 * b  # each batch its own queries
            batch_value = metric(preds, target, indexes)
            alone = ftm.RetrievalNormalizedDCG(top_k=5)
            alone.update(preds, target, indexes)
            assert batch_value.item() == alone.compute().item()
        logged.append(metric.compute().item())
        metric.reset()
        preds = torch.cat([p for p, _, _ in batches])
        target = torch.cat([t for _, t, _ in batches])
        indexes = torch.cat([i + 100 * b for b, (_, _, i) in enumerate(batches)])
        want = ft.rank_evaluate(target.double().numpy(), preds.double().numpy(), qid=indexes.numpy(),
                                metrics=["nDCG@5"], empty="zero").mean["nDCG@5"]
        assert logged[-1] == pytest.approx(want, abs=1e-12)
    assert logged[0] != logged[1]


def _dataset():
    rng = random.Random(21)
    rows = _rows(rng, n_queries=6, max_len=9, graded=False, tie_free=False, signed=True)
    g = np.random.default_rng(21)
    hamming = (_codes(g, 7, 24), _codes(g, 90, 24), g.integers(0, 3, 7), g.integers(0, 3, 90))
    return rows, hamming


def _metrics():
    return {"map": ftm.RetrievalMAP(top_k=4), "ndcg": ftm.RetrievalNormalizedDCG(),
            "p": ftm.RetrievalPrecision(top_k=3, empty_target_action="skip"), "recall": ftm.RetrievalRecall(top_k=5),
            "mrr": ftm.RetrievalMRR(), "hit": ftm.RetrievalHitRate(top_k=2), "rprec": ftm.RetrievalRPrecision()}


def _hamming(queries, ql):
    return ftm.HammingRetrieval(queries, ql, metrics=["AP", "nDCG@10"])


# what the last process holds: the others share every row and database item among themselves
#   None: nothing special (every process holds every world-th row), "never": it never calls update,
#   "zero": it adds 0 rows (and a 0-row database chunk), "float16": its scores come as float16
SCENARIOS = [None, "never", "zero", "float16"]


def _evaluate(rank, world, last=None):
    """Each process adds its share of the rows and database items; compute() syncs (when distributed)."""
    (preds, target, indexes), (queries, db, ql, dl) = _dataset()
    holders = world if last in (None, "float16") else world - 1
    mine = slice(rank, None, holders) if rank < holders else slice(0, 0)
    updates = rank < holders or last == "zero"
    if last == "float16" and rank == world - 1:
        preds = preds.to(torch.float16)  # the dataset's scores are exact in float16
    values = {}
    for name, metric in _metrics().items():
        if updates:
            metric.update(preds[mine], target[mine], indexes[mine])
        values[name] = metric.compute().item()
    hamming = _hamming(queries, ql)
    if updates:
        hamming.update(db[mine], dl[mine])
    values.update({k: v.item() for k, v in hamming.compute().items()})
    return values


def _nothing_anywhere():
    """compute() where no process added anything: every metric's error message (on every process:
    none waits for another)."""
    (_, (queries, _, ql, _)) = _dataset()
    messages = []
    for metric in [*_metrics().values(), _hamming(queries, ql)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torchmetrics' "compute before update" (rank 0 only)
            with pytest.raises(ValueError, match=r"call update\(\)") as error:
                metric.compute()
        messages.append(str(error.value))
    return messages


def _worker(rank, world, init_file, out_dir):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        values = {last: _evaluate(rank, world, last) for last in SCENARIOS}
        values["nothing"] = _nothing_anywhere()
        with open(os.path.join(out_dir, f"{rank}.pkl"), "wb") as f:
            pickle.dump(values, f)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 3])
def test_gloo_sync_is_exact_with_empty_processes(world):
    """Over 2 and 3 gloo processes, each value is bitwise the single process's on all the data:
    rows split over every process; one process that never calls update() (every ranked-list
    class and HammingRetrieval), or adds 0 rows, or float16 scores where the others give float32;
    and compute() with nothing added anywhere raises on every process."""
    import torch.multiprocessing as mp

    single = _evaluate(0, 1)
    assert _evaluate(0, 2) != single  # half the data alone differs: equality below needs the sync
    with tempfile.TemporaryDirectory() as tmp:
        context = mp.start_processes(_worker, args=(world, os.path.join(tmp, "init"), tmp), nprocs=world,
                                     join=False, start_method="spawn")
        deadline = time.monotonic() + 240
        # join returns after any one process ends (False while others run) and raises if one failed
        while not context.join(timeout=max(0.0, deadline - time.monotonic())):
            if time.monotonic() < deadline:
                continue
            for p in context.processes:
                if p.is_alive():
                    p.terminate()
            pytest.fail(f"the {world} gloo processes did not finish in 240 s")
        for rank in range(world):
            with open(os.path.join(tmp, f"{rank}.pkl"), "rb") as f:
                got = pickle.load(f)
            for last in SCENARIOS:
                assert got[last] == single, (rank, last)  # bitwise, on every rank
            assert got["nothing"] == _nothing_anywhere()
