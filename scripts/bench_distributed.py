"""fasttie.torch.evaluate_distributed on a gloo process group, against ft.evaluate in one process
and against torchmetrics' RetrievalMAP under the same DDP sharding (never a timed test).

    python scripts/bench_distributed.py                                  # 1000 queries x 200,000 codes
    python scripts/bench_distributed.py --n-queries 200 --n-db 50000     # quick
    python scripts/bench_distributed.py --skip-torchmetrics

Seeded data (``fasttie.datasets.synthetic_hashing``, 64 bits, 10 classes); the database is cut in
``--ranks`` contiguous blocks, one per rank of a gloo group of spawned processes, each running
its kernels on one thread (``FASTTIE_NUM_THREADS=1``), all queries on every rank; fasttie gets
packed codes (``PackedCodes``) in both configurations, so packing is timed in neither.

* baseline: ``ft.evaluate(queries, whole database, metrics=AP)`` in this process, 1 and 2 threads;
* fasttie: ``evaluate_distributed`` on every rank, checked bitwise against the baseline; the
  time is the slowest rank's, after a barrier, median of ``--repeats`` calls after a warm-up;
  "bytes per rank" adds up the int64 tensors each rank hands to the collectives (the
  all_reduce of the counts and the small vectors);
* torchmetrics: ``RetrievalMAP`` (what a Lightning model would log), each rank scoring its
  shard (``65 - hamming distance`` from a ±1 float matmul: torchmetrics 1.9's AP counts only
  items scored > 0) and calling ``update(preds, target,
  indexes)``; ``compute()`` all-gathers the list states (preds float32, target bool, indexes
  int64 of every (query, code) pair) to every rank. Timed: the scoring, update and compute of
  one evaluation, median of ``--repeats`` (a fresh metric each time). torchmetrics ranks ties
  in an arbitrary order: its MAP is checked to lie between fasttie's pessimistic and
  optimistic AP (the exact bounds over tie orders of the whole-list AP).

Peak memory per rank: VmHWM of /proc/self/status (the peak resident set since the spawned
process started; ``resource.getrusage(...).ru_maxrss`` is printed beside it, but on Linux it
survives exec, so a spawned process can report its parent's larger peak), after loading the data
("base") and after the evaluations. fasttie and torchmetrics run in separate process groups, so
neither peak includes the other's.
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR.parent))

import numpy as np  # noqa: E402


def _vm_hwm_mib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _maxrss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _data(args):
    import fasttie as ft

    queries, database, query_labels, db_labels = ft.datasets.synthetic_hashing(
        args.n_queries, args.n_db, 64, 10, seed=args.seed)
    return queries, database, np.asarray(query_labels), np.asarray(db_labels)


def _rows(args, rank):
    return np.array_split(np.arange(args.n_db), args.ranks)[rank]


def _fasttie_rank(rank, init, args, out):
    os.environ["FASTTIE_NUM_THREADS"] = "1"
    import torch.distributed as dist

    import fasttie.torch as fasttie_torch
    from fasttie.codes import PackedCodes

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=args.ranks)
    queries, database, query_labels, db_labels = _data(args)
    rows = _rows(args, rank)
    shard = PackedCodes(np.ascontiguousarray(database.words[rows]), database.n_bits)  # packed, as the baseline's
    shard_labels = db_labels[rows]
    base = _vm_hwm_mib()

    sent = [0]  # bytes handed to collectives by this rank (the int64/int32 tensors)
    comm = fasttie_torch._Comm
    originals = {name: getattr(comm, name) for name in ("all_gather", "all_reduce", "reduce_sum_to")}

    def counting(name):
        def call(self, array, *rest, **kw):
            sent[0] += np.asarray(array).size * (4 if kw.get("dtype") is np.int32 or np.int32 in rest else 8)
            return originals[name](self, array, *rest, **kw)
        return call

    for name in originals:
        setattr(comm, name, counting(name))

    def once():
        return fasttie_torch.evaluate_distributed(queries, shard, query_labels, shard_labels, metrics=["AP"],
                                                  n_db=args.n_db, n_threads=1)

    once()  # warm-up: the kernels come from numba's cache
    times = []
    for _ in range(args.repeats):
        dist.barrier()
        sent[0] = 0
        start = time.perf_counter()
        result = once()
        dist.barrier()
        times.append(time.perf_counter() - start)
    moved = sent[0]
    bounds = {t: once_ties(fasttie_torch, queries, shard, query_labels, shard_labels, args, t)
              for t in ("optimistic", "pessimistic")}
    with open(os.path.join(out, f"fasttie{rank}.pkl"), "wb") as f:
        pickle.dump({"times": times, "per_query": result.per_query["AP"], "mean": result.mean["AP"],
                     "bytes": moved, "base": base, "hwm": _vm_hwm_mib(), "maxrss": _maxrss_mib(),
                     "bounds": bounds}, f)
    dist.destroy_process_group()


def once_ties(fasttie_torch, queries, shard, query_labels, shard_labels, args, ties):
    return fasttie_torch.evaluate_distributed(queries, shard, query_labels, shard_labels, metrics=["AP"],
                                              ties=ties, n_db=args.n_db, n_threads=1).mean["AP"]


def _torchmetrics_rank(rank, init, args, out):
    import torch
    import torch.distributed as dist
    from torchmetrics.retrieval import RetrievalMAP

    import fasttie as ft

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=args.ranks)
    queries, database, query_labels, db_labels = _data(args)
    rows = _rows(args, rank)
    q = torch.from_numpy(ft.unpack_codes(queries).astype(np.float32) * 2 - 1)
    shard = torch.from_numpy(ft.unpack_codes(database)[rows].astype(np.float32) * 2 - 1)
    relevant = torch.from_numpy(query_labels)[:, None] == torch.from_numpy(db_labels[rows])[None, :]
    base = _vm_hwm_mib()

    def once():
        metric = RetrievalMAP()
        # 65 - Hamming distance: higher is better, and > 0 (torchmetrics 1.9 drops items scored <= 0)
        preds = (66 + q @ shard.T) / 2
        indexes = torch.arange(len(q))[:, None].expand(-1, len(rows))
        metric.update(preds.reshape(-1), relevant.reshape(-1), indexes.reshape(-1))
        return float(metric.compute())

    times, value = [], None
    for _ in range(args.repeats):
        dist.barrier()
        start = time.perf_counter()
        value = once()
        dist.barrier()
        times.append(time.perf_counter() - start)
    n_pairs = args.n_queries * len(rows)
    with open(os.path.join(out, f"torchmetrics{rank}.pkl"), "wb") as f:
        pickle.dump({"times": times, "mean": value, "bytes": n_pairs * (4 + 1 + 8), "base": base,
                     "hwm": _vm_hwm_mib(), "maxrss": _maxrss_mib()}, f)
    dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _group(target, args, out, name, timeout):
    import multiprocessing as mp

    context = mp.get_context("spawn")
    init = f"tcp://127.0.0.1:{_free_port()}"
    processes = [context.Process(target=target, args=(r, init, args, out)) for r in range(args.ranks)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout)
    for p in processes:
        if p.is_alive():
            p.kill()
            p.join()
            raise SystemExit(f"{name}: a rank did not finish in {timeout} s")
        if p.exitcode != 0:
            raise SystemExit(f"{name}: a rank exited with {p.exitcode}")
    reports = []
    for r in range(args.ranks):
        with open(os.path.join(out, f"{name}{r}.pkl"), "rb") as f:
            reports.append(pickle.load(f))
    return reports


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--n-db", type=int, default=200_000)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--skip-torchmetrics", action="store_true")
    args = parser.parse_args(argv)

    import fasttie as ft

    queries, database, query_labels, db_labels = _data(args)
    print(f"{args.n_queries} queries x {args.n_db} codes, 64 bits, 10 classes; {args.ranks} gloo ranks x 1 thread; "
          f"{os.cpu_count()} CPUs")
    baseline = {}
    for threads in (1, 2):
        ft.evaluate(queries, database, query_labels, db_labels, metrics=["AP"], n_threads=threads)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            whole = ft.evaluate(queries, database, query_labels, db_labels, metrics=["AP"], n_threads=threads)
            times.append(time.perf_counter() - start)
        baseline[threads] = statistics.median(times)
        print(f"ft.evaluate, one process, {threads} thread(s): {baseline[threads]:.3f} s")

    with tempfile.TemporaryDirectory() as out:
        ranks = _group(_fasttie_rank, args, out, "fasttie", args.timeout)
        for r, report in enumerate(ranks):
            assert np.array_equal(report["per_query"], whole.per_query["AP"]), f"rank {r} differs from ft.evaluate"
            assert report["mean"] == whole.mean["AP"]
        slowest = max(statistics.median(rep["times"]) for rep in ranks)
        counts_bytes = args.n_queries * 65 * 2 * 8
        print(f"evaluate_distributed, {args.ranks} ranks: {slowest:.3f} s (bitwise equal to ft.evaluate on every "
              f"rank); / ft.evaluate 2 threads = {slowest / baseline[2]:.2f}, / 1 thread = "
              f"{slowest / baseline[1]:.2f}")
        print(f"  bytes handed to collectives per rank: {ranks[0]['bytes']:,} (the counts: {counts_bytes:,} = "
              f"{args.n_queries} x 65 x 2 grades x 8)")
        for r, rep in enumerate(ranks):
            print(f"  rank {r}: peak RSS {rep['hwm']:.0f} MiB (after loading the data {rep['base']:.0f} MiB; "
                  f"ru_maxrss {rep['maxrss']:.0f} MiB)")
        mean, (optimistic, pessimistic) = whole.mean["AP"], (ranks[0]["bounds"]["optimistic"],
                                                             ranks[0]["bounds"]["pessimistic"])
        print(f"  mAP: {mean:.6f} (tie orders: {pessimistic:.6f} .. {optimistic:.6f})")
        if args.skip_torchmetrics:
            return
        try:
            import torchmetrics  # noqa: F401
        except ImportError:
            print("torchmetrics is not installed: pip install torchmetrics")
            return
        tm = _group(_torchmetrics_rank, args, out, "torchmetrics", args.timeout)
        tm_time = max(statistics.median(rep["times"]) for rep in tm)
        print(f"torchmetrics RetrievalMAP, {args.ranks} ranks: {tm_time:.3f} s; / evaluate_distributed = "
              f"{tm_time / slowest:.1f}")
        print(f"  bytes gathered to every rank: {sum(rep['bytes'] for rep in tm):,} (preds float32 + target bool + "
              f"indexes int64 of every pair); / fasttie's = {sum(rep['bytes'] for rep in tm) / ranks[0]['bytes']:.0f}")
        for r, rep in enumerate(tm):
            print(f"  rank {r}: peak RSS {rep['hwm']:.0f} MiB (after loading the data {rep['base']:.0f} MiB; "
                  f"ru_maxrss {rep['maxrss']:.0f} MiB); / fasttie's peak = {rep['hwm'] / ranks[r]['hwm']:.1f}")
        inside = pessimistic - 1e-12 <= tm[0]["mean"] <= optimistic + 1e-12
        print(f"  its mAP {tm[0]['mean']:.6f} (one arbitrary tie order): "
              f"{'within' if inside else 'OUTSIDE'} fasttie's tie-order bounds")


if __name__ == "__main__":
    main()
