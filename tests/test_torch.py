"""fasttie.torch.evaluate_distributed on real gloo process groups: every rank's Result is bitwise
ft.evaluate on the whole database, for random shardings (empty and one-row shards), every tie
mode, class / multi-hot / listed relevance, shards placed by db_offset (an int, or the indices
of a padded DistributedSampler), and the coverage errors are raised on every rank.

One process group of 3 spawned processes runs every case (a fresh group per case would pay
the start-up and the Numba cache load each time); the parent computes the references with
ft.evaluate and compares."""

import os
import pickle
import re
import socket

import numpy as np
import pytest

import fasttie as ft

torch = pytest.importorskip("torch", reason="fasttie.torch needs PyTorch (pip install 'fasttie[torch]')")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():
    pytest.skip("this PyTorch build has no torch.distributed", allow_module_level=True)
fasttie_torch = pytest.importorskip("fasttie.torch")

WORLD = 3
METRICS = ["AP", "nDCG@10", "P@5", "R@50", "RR", "Rprec", "AP@20", "P(radius=3)"]
TIES = ["average", "optimistic", "pessimistic", "stable"]


def _data(seed, n_queries=12, n_db=301, n_bits=12):
    rng = np.random.default_rng(seed)
    queries = rng.choice([-1, 1], size=(n_queries, n_bits)).astype(np.int8)
    database = rng.choice([-1, 1], size=(n_db, n_bits)).astype(np.int8)
    classes = (rng.integers(0, 4, n_queries), rng.integers(0, 4, n_db))
    multihot = ((rng.random((n_queries, 5)) < 0.3).astype(np.int8), (rng.random((n_db, 5)) < 0.3).astype(np.int8))
    indptr, indices, grades = [0], [], []
    for _ in range(n_queries):
        ids = np.sort(rng.choice(n_db, size=rng.integers(0, 15), replace=False))
        indices.extend(ids.tolist())
        grades.extend(rng.integers(1, 4, len(ids)).tolist())
        indptr.append(len(indices))
    listed = tuple(np.array(a, dtype=np.int64) for a in (indptr, indices, grades))
    return queries, database, classes, multihot, listed


def _cut(n, sizes):
    starts = np.concatenate([[0], np.cumsum(sizes)])
    assert starts[-1] == n
    return [np.arange(starts[r], starts[r + 1]) for r in range(len(sizes))]


def _sharded_case(name, data, relevance, rows, ties, metrics=METRICS, offsets=None, n_db=None, tensors=False,
                  expect=None):
    """One case: per rank the call's inputs (rows of the database that rank holds), and the expected
    outcome: ("ok", the whole database's order) or ("error", a regex)."""
    queries, database, classes, multihot, listed = data
    per_rank = []
    for r, own in enumerate(rows):
        kwargs = {"metrics": metrics, "ties": ties, "n_db": n_db}
        if offsets is not None:
            kwargs["db_offset"] = offsets[r]
        if relevance == "class":
            args = (queries, database[own], classes[0], classes[1][own])
        elif relevance == "multihot":
            args = (queries, database[own], multihot[0], multihot[1][own])
        else:
            args = (queries, database[own])
            kwargs["relevance"] = listed
        per_rank.append((args, kwargs))
    return {"name": name, "per_rank": per_rank, "tensors": tensors, "expect": expect or ("ok",),
            "whole": (relevance, metrics, ties)}


def _cases():
    rng = np.random.default_rng(7)
    data = _data(1)
    n_db = len(data[1])
    cases = []
    shardings = [[0, 1, n_db - 1], [n_db - 1, 0, 1], list(np.diff(np.sort(np.r_[0, rng.integers(0, n_db, 2), n_db])))]
    for s, sizes in enumerate(shardings):
        for ties in TIES:
            for relevance in ("class", "multihot", "listed"):
                cases.append(_sharded_case(f"sizes{sizes}-{ties}-{relevance}", data, relevance, _cut(n_db, sizes),
                                           ties, tensors=(s == 2), n_db=n_db if s == 1 else None))
    # the bounded stable pass (every metric has a cutoff): only the top distances are ranked
    cases.append(_sharded_case("stable-cutoffs", data, "class", _cut(n_db, [100, 1, 200]), "stable",
                               metrics=["AP@5", "P@3", "nDCG@10"]))
    # shards placed by an int db_offset, out of rank order (rank 0 holds the last block)
    blocks = _cut(n_db, [120, 80, 101])
    placed = [blocks[2], blocks[0], blocks[1]]
    for ties in TIES:
        cases.append(_sharded_case(f"offsets-{ties}", data, "listed", placed, ties,
                                   offsets=[int(b[0]) for b in placed], n_db=n_db))
    # DistributedSampler indices: shuffled, interleaved, padded with 2 repeated indices (301 -> 303)
    from torch.utils.data import DistributedSampler

    sampled = [np.array(list(DistributedSampler(range(n_db), num_replicas=WORLD, rank=r, shuffle=True, seed=3)))
               for r in range(WORLD)]
    assert sum(len(s) for s in sampled) == n_db + 2
    for ties in TIES[:3]:
        for relevance in ("class", "listed"):
            cases.append(_sharded_case(f"sampler-{ties}-{relevance}", data, relevance, sampled, ties,
                                       offsets=sampled, n_db=n_db))
    cases.append(_sharded_case("sampler-no-n_db", data, "multihot", sampled, "average", offsets=sampled))
    # errors, on every rank
    cases.append(_sharded_case("sampler-stable", data, "class", sampled, "stable", offsets=sampled, n_db=n_db,
                               expect=("error", r"ties='stable' needs each rank's rows to be one run")))
    cases.append(_sharded_case("padded-without-offsets", data, "class", sampled, "average", n_db=n_db,
                               expect=("error", r"the shards hold 303 rows in all .* but n_db=301 .*DistributedSampler")))
    cases.append(_sharded_case("n_db-short", data, "class", _cut(n_db, [100, 100, 101]), "average", n_db=n_db + 5,
                               expect=("error", r"the shards hold 301 rows in all .* but n_db=306$")))
    overlapping = [np.arange(0, 120), np.arange(100, 200), np.arange(200, n_db)]
    cases.append(_sharded_case("overlap", data, "class", overlapping, "average", offsets=[0, 100, 200],
                               expect=("error", r"rank 1's rows 100..199 overlap rank 0's")))
    gap = [np.arange(0, 100), np.arange(110, 200), np.arange(200, n_db)]
    cases.append(_sharded_case("gap", data, "class", gap, "average", offsets=[0, 110, 200],
                               expect=("error", r"no rank holds database rows 100..109")))
    missing = [s[s != 5] for s in sampled]
    cases.append(_sharded_case("missing-index", data, "class", missing, "average", offsets=missing, n_db=n_db,
                               expect=("error", r"no rank holds 1 of the n_db=301 database indices \(the first: \[5\]\)")))
    bits = _sharded_case("bits", data, "class", _cut(n_db, [100, 100, 101]), "average",
                         expect=("error", r"(queries have 12 bits but this rank's db_shard has 13)|"
                                          r"(rank\(s\) \[1\] rejected their input)"))
    args, kwargs = bits["per_rank"][1]
    bits["per_rank"][1] = ((args[0], np.hstack([args[1], args[1][:, :1]])) + args[2:], kwargs)
    cases.append(bits)
    return data, cases


def _worker(rank, init, data, cases, out):
    os.environ.setdefault("FASTTIE_NUM_THREADS", "1")
    import torch
    import torch.distributed as dist

    import fasttie.torch as fasttie_torch

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=WORLD)
    results = []
    try:
        for case in cases:
            args, kwargs = case["per_rank"][rank]
            if case["tensors"]:
                args = tuple(torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
                             for a in args)
            try:
                res = fasttie_torch.evaluate_distributed(*args, **kwargs)
                results.append(("ok", res.mean, res.per_query, res.n_empty))
            except (ValueError, TypeError) as error:
                results.append(("error", "ValueError" if isinstance(error, ValueError) else "TypeError", str(error)))
        # a sub-group of ranks 0 and 2 (group ranks 0 and 1): its shards in group-rank order
        sub = dist.new_group([0, 2])
        if rank != 1:
            queries, database, (query_labels, db_labels), _, _ = data
            rows = slice(0, 200) if rank == 0 else slice(200, None)
            for ties in TIES:
                res = fasttie_torch.evaluate_distributed(queries, database[rows], query_labels, db_labels[rows],
                                                         metrics=METRICS, ties=ties, group=sub)
                results.append(("ok", res.mean, res.per_query, res.n_empty))
    finally:
        with open(os.path.join(out, f"rank{rank}.pkl"), "wb") as f:
            pickle.dump(results, f)
        dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    import multiprocessing as mp

    data, cases = _cases()
    out = str(tmp_path_factory.mktemp("ranks"))
    init = f"tcp://127.0.0.1:{_free_port()}"
    context = mp.get_context("spawn")
    processes = [context.Process(target=_worker, args=(r, init, data, cases, out)) for r in range(WORLD)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=240)
    for p in processes:
        if p.is_alive():
            p.kill()
            p.join()
            pytest.fail("a DDP worker did not finish in 240 s")
        assert p.exitcode == 0, f"a DDP worker exited with {p.exitcode}"
    per_rank = []
    for r in range(WORLD):
        with open(os.path.join(out, f"rank{r}.pkl"), "rb") as f:
            per_rank.append(pickle.load(f))
    return data, cases, per_rank


def _expected(data, case):
    queries, database, classes, multihot, listed = data
    relevance, metrics, ties = case["whole"]
    if relevance == "class":
        return ft.evaluate(queries, database, *classes, metrics=metrics, ties=ties)
    if relevance == "multihot":
        return ft.evaluate(queries, database, *multihot, metrics=metrics, ties=ties)
    return ft.evaluate(queries, database, relevance=listed, metrics=metrics, ties=ties)


def test_every_rank_gets_ft_evaluate_of_the_whole_database(ran):
    data, cases, per_rank = ran
    checked = 0
    for i, case in enumerate(cases):
        if case["expect"][0] != "ok":
            continue
        want = _expected(data, case)
        for r in range(WORLD):
            got = per_rank[r][i]
            assert got[0] == "ok", (case["name"], r, got)
            _, mean, per_query, n_empty = got
            assert mean == want.mean, (case["name"], r)
            assert list(mean) == list(want.mean)
            assert n_empty == want.n_empty
            for name, values in want.per_query.items():
                assert np.array_equal(per_query[name], values, equal_nan=True), (case["name"], r, name)
            checked += 1
    assert checked == WORLD * 48  # 36 shardings x modes x kinds, 1 bounded stable, 4 offsets, 7 sampler


def test_the_stable_order_is_the_database_order(ran):
    # the stable results differ from the average ones on this data: the order really is checked
    data, cases, per_rank = ran
    by_name = {case["name"]: i for i, case in enumerate(cases)}
    stable = per_rank[0][by_name["offsets-stable"]][2]["AP"]
    average = per_rank[0][by_name["offsets-average"]][2]["AP"]
    assert not np.array_equal(stable, average)
    shuffled = list(data)
    shuffled[1] = data[1][::-1]  # another database order gives other stable values
    assert not np.array_equal(ft.evaluate(shuffled[0], shuffled[1], relevance=data[4], ties="stable").per_query["AP"],
                              stable)


def test_coverage_and_input_errors_on_every_rank(ran):
    _, cases, per_rank = ran
    checked = 0
    for i, case in enumerate(cases):
        if case["expect"][0] != "error":
            continue
        for r in range(WORLD):
            got = per_rank[r][i]
            assert got[0] == "error", (case["name"], r, got)
            assert got[1] == "ValueError"
            assert re.search(case["expect"][1], got[2]), (case["name"], r, got[2])
            checked += 1
    assert checked == WORLD * 7


def test_not_initialized_and_missing_torch_messages():
    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    q = np.array([[1, 1]])
    with pytest.raises(ImportError, match="init_process_group first"):
        fasttie_torch.evaluate_distributed(q, q, [0], [0])


def test_a_sub_group_of_two_ranks(ran):
    # ranks 0 and 2 of the world form the group; rank 1 only takes part in creating it
    data, cases, per_rank = ran
    queries, database, classes, _, _ = data
    assert len(per_rank[1]) == len(cases)
    for r in (0, 2):
        got = per_rank[r][len(cases):]
        assert len(got) == len(TIES)
        for ties, (status, mean, per_query, _) in zip(TIES, got):
            want = ft.evaluate(queries, database, *classes, metrics=METRICS, ties=ties)
            assert status == "ok" and mean == want.mean, (r, ties)
            for name, values in want.per_query.items():
                assert np.array_equal(per_query[name], values), (r, ties, name)
