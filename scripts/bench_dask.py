"""fasttie.dask on a LocalCluster against fasttie.evaluate in one process (never a timed test).

    python scripts/bench_dask.py                                   # 1000 queries x 10M codes, 10 shards
    python scripts/bench_dask.py --n-db 1000000 --n-queries 200    # quick
    python scripts/bench_dask.py --n-db 1000000 --n-queries 200 --ties stable --metrics AP@1000,P@1000

Seeded data (``fasttie.datasets.synthetic_hashing``, 64 bits, 10 classes, flip 0.25) is written
as .npy shards in a temporary folder (packed bytes, one shard per file, class ids beside them),
deleted at the end. First a small case checks that shard files read by ``fasttie.dask.evaluate``
(packed, bitorder little and big, uneven shards, one or several query blocks) give per-query
values bitwise equal to ``fasttie.evaluate``. Then, on the full data, metrics AP, AP@1000,
nDCG@1000, P@1000 (``--metrics``, ``--ties``), every configuration once as a warm-up, then ``--repeats`` rounds that call
each configuration once, in an order rotated every round (the machine may be shared: a burst
of someone else's load then hits every configuration alike):

* baseline: ``ft.evaluate(..., n_threads=T)`` in this process, T = 1 and 2;
* ``fasttie.dask.evaluate`` over the list of shard paths, on ``distributed.LocalCluster(
  n_workers=W, threads_per_worker=1, processes=True)``, W = 1 and 2, all clusters open at once
  (each call is sent to its own cluster with ``dask.config.set(scheduler=client)``); the
  workers inherit this process's environment and load the kernels from numba's cache during
  the warm-up. Every call is checked bitwise against ft.evaluate (2 threads).

"others" is the CPU (cores) used meanwhile by processes other than this one and the clusters'
workers, from /proc/stat; a call is clean when it stays <= ``--clean`` (0.2) cores, and the
ratios use the median of the clean calls of each configuration (of all calls, flagged, where
there is none). "worker cores" / "client cores": CPU of the run's workers / of this process
(client, schedulers, nannies) per second of wall time.

Reported: overhead = dask (2 workers x 1 thread) / ft.evaluate (2 threads) (target <= 1.25);
scaling = dask 1 worker / dask 2 workers (target >= 1.7); peak RSS per worker (VmHWM, the peak
since the worker's exec; ru_maxrss is printed too, but on Linux it is inherited across fork and
exec, so spawned workers report this script's larger peak); the tie statistics moved between
workers. Each (query block, shard) task returns n_queries x (n_bits + 1) x n_grades int64
counts; the bound is that times the number of shards (strictly: times the tree's non-root
nodes, shards plus merges but the root); "measured" counts the results the workers fetched from
other workers (their ``transfer_incoming_log``) times that size; dask's own byte count of those
fetches (``dask.sizeof``, which TieStats answers with the size of its counts) is printed beside it.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import shlex
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from contextlib import ExitStack
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))
sys.path.insert(1, str(SCRIPTS_DIR.parent))

import numpy as np  # noqa: E402

import fasttie as ft  # noqa: E402
import fasttie.dask as ftd  # noqa: E402
from measure import LoadMeter, Table, cpu_model, maxrss_mib, parse_int_list  # noqa: E402

METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000")
N_BITS = 64


# ----------------------------------------------------------------------------- data and shards

def shard_bounds(n, n_shards):
    return np.linspace(0, n, n_shards + 1).round().astype(np.int64)


def packed_bytes(codes, bitorder):
    """(n, n_bits / 8) uint8 of PackedCodes: the words' bytes (little) or np.packbits (big)."""
    if bitorder == "little":  # bit b is bit b % 64 of word b // 64: little-endian bytes, LSB first
        return np.ascontiguousarray(codes.words.astype("<u8", copy=False)).view(np.uint8)
    return np.packbits(ft.unpack_codes(codes), axis=1, bitorder="big")


def write_shards(folder, database, db_labels, bounds, bitorder, tag="db"):
    """One .npy of packed codes and one of class ids per shard; returns (code paths, label paths)."""
    code_paths, label_paths = [], []
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        code_path = os.path.join(folder, f"{tag}-{bitorder}-{i:03d}.npy")
        label_path = os.path.join(folder, f"{tag}-labels-{i:03d}.npy")
        np.save(code_path, packed_bytes(database[int(lo):int(hi)], bitorder))
        np.save(label_path, np.ascontiguousarray(db_labels[lo:hi]))
        code_paths.append(code_path)
        label_paths.append(label_path)
    return code_paths, label_paths


def bitwise_equal(a, b):
    """Same metrics, per-query arrays and means with the same bits (NaN included)."""
    if a.per_query.keys() != b.per_query.keys() or a.mean.keys() != b.mean.keys():
        return False
    for name in a.per_query:
        x = np.asarray(a.per_query[name], dtype=np.float64)
        y = np.asarray(b.per_query[name], dtype=np.float64)
        if x.shape != y.shape or not np.array_equal(x.view(np.uint64), y.view(np.uint64)):
            return False
    return all(np.float64(a.mean[k]).tobytes() == np.float64(b.mean[k]).tobytes() for k in a.mean)


def check_small(folder, metrics=METRICS, ties="average"):
    """Shard files read by fasttie.dask (sync scheduler) == ft.evaluate, both bit orders; uneven shards."""
    import dask

    queries, database, query_labels, db_labels = ft.datasets.synthetic_hashing(
        64, 30_000, N_BITS, 10, flip=0.25, seed=1)
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties, n_threads=1)
    bounds = np.array([0, 7_000, 7_001, 30_000])  # a one-row shard too
    outcomes = []
    with dask.config.set(scheduler="sync"):
        for bitorder in ("little", "big"):
            codes, labels = write_shards(folder, database, db_labels, bounds, bitorder, tag="check")
            for query_chunk in (None, 25):
                got = ftd.evaluate(queries, codes, query_labels, labels, metrics=metrics, ties=ties, packed=True,
                                   n_bits=N_BITS, bitorder=bitorder, query_chunk=query_chunk)
                outcomes.append((bitorder, query_chunk, bitwise_equal(got, expected)))
    for path in Path(folder).glob("check-*.npy"):
        path.unlink()
    return outcomes


# ----------------------------------------------------------------------------- cluster measurements

def _peak_rss_kib():
    """Peak RSS of this process since its exec: VmHWM (Linux), else ru_maxrss.

    Not ru_maxrss on Linux: it survives fork and exec, so a spawned worker reports the peak of
    the process that started it (here: this script, holding the whole database) when that is
    larger than its own.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: KiB


def _rusage_maxrss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _numba_cache_dir():
    import numba

    return numba.config.CACHE_DIR or "(numba default: __pycache__ beside the package)"


def _clear_incoming_log(dask_worker):
    dask_worker.transfer_incoming_log.clear()


def _incoming_log(dask_worker):
    return [(len(entry["keys"]), int(entry["total"])) for entry in dask_worker.transfer_incoming_log]


def _cpu_s(process):
    try:
        t = process.cpu_times()
        return t.user + t.system
    except Exception:  # a worker that died: psutil.NoSuchProcess
        return 0.0


class Run:
    """One configuration: ft.evaluate at T threads, or fasttie.dask on a cluster of W workers."""

    def __init__(self, name, call, client=None, workers=()):
        self.name, self.call, self.client, self.workers = name, call, client, list(workers)  # psutil.Process
        self.times, self.others, self.own_cores, self.worker_cores, self.bitwise = [], [], [], [], []
        self.first_s = self.result = None

    def __call__(self):
        if self.client is None:
            return self.call()
        import dask

        with dask.config.set(scheduler=self.client):  # this run's cluster, whatever else is open
            return self.call()

    def measure(self, everyone):
        """Time one call; 'others' = CPU of all processes but this one and every cluster's workers."""
        cpu0 = {id(r): sum(_cpu_s(p) for p in r.workers) for r in everyone}
        busy0, own0, t0 = LoadMeter._busy_s(), time.process_time(), time.perf_counter()
        result = self()
        wall = time.perf_counter() - t0
        own, busy1 = time.process_time() - own0, LoadMeter._busy_s()
        deltas = {id(r): sum(_cpu_s(p) for p in r.workers) - cpu0[id(r)] for r in everyone}
        self.times.append(wall)
        self.own_cores.append(own / wall)
        self.worker_cores.append(deltas[id(self)] / wall)
        self.others.append(float("nan") if busy0 is None or busy1 is None
                           else max(0.0, (busy1 - busy0 - own - sum(deltas.values())) / wall))
        return result

    def clean(self, limit):
        return [t for t, o in zip(self.times, self.others) if o <= limit]

    def median(self, limit=None):
        """Median of the calls with others <= limit when there is one, else of all (and whether clean)."""
        clean = self.clean(limit) if limit is not None else []
        return (statistics.median(clean), True) if clean else (statistics.median(self.times), False)


def leftover_children():
    """Live child processes, but multiprocessing's resource tracker (it exits with this process)."""
    import psutil

    left = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.status() == psutil.STATUS_ZOMBIE or "resource_tracker" in " ".join(p.cmdline()):
                continue
            left.append(f"{p.pid} {' '.join(p.cmdline())[-80:]}")
        except psutil.NoSuchProcess:
            continue
    return left


# ----------------------------------------------------------------------------- main

def mib(n_bytes):
    return f"{n_bytes / 2**20:.2f} MiB"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-db", type=int, default=10_000_000, help="database codes")
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=10, help=".npy files the database is cut into")
    parser.add_argument("--workers", default="1,2", help="LocalCluster sizes (1 thread per worker)")
    parser.add_argument("--baseline-threads", default="1,2", help="ft.evaluate thread counts")
    parser.add_argument("--query-chunk", type=int, default=None, help="queries per block (default: all)")
    parser.add_argument("--bitorder", choices=("little", "big"), default="little",
                        help="byte layout of the shard files (little: the uint64 words' bytes)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per configuration, interleaved")
    parser.add_argument("--clean", type=float, default=0.2,
                        help="a call is clean when others' CPU stays <= this many cores")
    parser.add_argument("--tmpdir", default=None, help="where the temporary shard folder goes")
    parser.add_argument("--ties", default="average", help="tie mode of every call (stable: a second pass)")
    parser.add_argument("--metrics", default=",".join(METRICS), help="metrics of every call (comma list)")
    args = parser.parse_args(argv)
    metrics = tuple(m.strip() for m in args.metrics.split(","))
    print("command: python scripts/bench_dask.py" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:]))
    print(f"  (effective: --n-db {args.n_db} --n-queries {args.n_queries} --shards {args.shards} "
          f"--workers {args.workers} --baseline-threads {args.baseline_threads} --query-chunk {args.query_chunk} "
          f"--bitorder {args.bitorder} --repeats {args.repeats} --clean {args.clean} --ties {args.ties} "
          f"--metrics {','.join(metrics)})")
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores; NUMBA_CACHE_DIR={os.environ.get('NUMBA_CACHE_DIR', '(unset)')}")
    import dask
    import distributed
    import psutil
    from distributed import Client, LocalCluster

    print(f"dask {dask.__version__}, distributed {distributed.__version__}")
    worker_counts = parse_int_list(args.workers)
    baseline_threads = parse_int_list(args.baseline_threads)
    reference_threads = 2 if 2 in baseline_threads else max(baseline_threads)

    folder = tempfile.mkdtemp(prefix="fasttie-bench-dask-", dir=args.tmpdir)
    stack = ExitStack()
    try:
        outcomes = check_small(folder, metrics, args.ties)
        print("check, 64 queries x 30000 codes in 3 uneven shards (7000, 1, 22999), sync scheduler: "
              + ", ".join(f"bitorder {b} query_chunk {c}: {'bitwise identical' if ok else 'DIFFERENT'}"
                          for b, c, ok in outcomes), flush=True)
        if not all(ok for *_, ok in outcomes):
            print("the shard layout check failed: fix the benchmark before timing", file=sys.stderr)
            return 1

        t0 = time.perf_counter()
        queries, database, query_labels, db_labels = ft.datasets.synthetic_hashing(
            args.n_queries, args.n_db, N_BITS, 10, flip=0.25, seed=0)
        t_gen = time.perf_counter() - t0
        t0 = time.perf_counter()
        bounds = shard_bounds(args.n_db, args.shards)
        code_paths, label_paths = write_shards(folder, database, db_labels, bounds, args.bitorder)
        on_disk = sum(os.path.getsize(p) for p in code_paths + label_paths)
        print(f"data: {args.n_queries} queries x {args.n_db} codes, {N_BITS} bits, generated in {t_gen:.1f} s; "
              f"{args.shards} shards of ~{args.n_db // args.shards} rows written in {time.perf_counter() - t0:.1f} s "
              f"({mib(on_disk)} with labels)", flush=True)
        n_grades = ft.tie_stats(queries[:2], database[:1000], query_labels[:2], db_labels[:1000],
                                n_threads=1).counts.shape[2]
        block = args.n_queries if args.query_chunk is None else min(args.query_chunk, args.n_queries)
        n_blocks = -(-args.n_queries // block)

        def dask_call():
            return ftd.evaluate(queries, code_paths, query_labels, label_paths, metrics=metrics, ties=args.ties,
                                packed=True, n_bits=N_BITS, bitorder=args.bitorder, query_chunk=args.query_chunk)

        runs = []
        for threads in baseline_threads:
            runs.append(Run(f"ft.evaluate {threads} thread(s)", lambda threads=threads: ft.evaluate(
                queries, database, query_labels, db_labels, metrics=metrics, ties=args.ties, n_threads=threads)))
        base = {threads: run for threads, run in zip(baseline_threads, runs)}
        clusters = {}
        for n_workers in worker_counts:  # all clusters open at once, so the calls can be interleaved
            # dashboard_address=None turns the dashboard off, but the scheduler's HTTP server (health,
            # metrics) still binds :8787 first: the second cluster warns that it is taken
            warnings.filterwarnings("ignore", message="Port 8787 is already in use", category=UserWarning)
            cluster = stack.enter_context(LocalCluster(
                n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                silence_logs=logging.ERROR))
            client = stack.enter_context(Client(cluster, set_as_default=False))
            client.wait_for_workers(n_workers)
            pids = client.run(os.getpid)
            run = Run(f"dask {n_workers} worker(s) x 1 thread", dask_call, client,
                      [psutil.Process(pid) for pid in pids.values()])
            run.cache_dirs = sorted(set(client.run(_numba_cache_dir).values()))
            clusters[n_workers] = run
            runs.append(run)

        for run in runs:  # warm-up: compile or load the kernels (workers: from numba's cache), import
            t0 = time.perf_counter()
            run.result = run()
            run.first_s = time.perf_counter() - t0
        reference = base[reference_threads].result
        for run in runs:
            run.bitwise.append(bitwise_equal(run.result, reference))
            if run.client is not None:
                run.client.run(_clear_incoming_log)
                print(f"  {run.name}: first call {run.first_s:.2f} s; workers' numba cache: {run.cache_dirs}")
        print("  values: " + ", ".join(f"{k} {v:.6f}" for k, v in reference.mean.items()), flush=True)

        for r in range(args.repeats):  # interleaved, the order rotated every round
            order = runs[r % len(runs):] + runs[: r % len(runs)]
            for run in order:
                result = run.measure(runs)
                run.bitwise.append(bitwise_equal(result, reference))
                del result
            print(f"  round {r + 1}: " + ", ".join(
                f"{run.name} {run.times[-1]:.3f} s (others {run.others[-1]:.2f})" for run in runs), flush=True)

        for n_workers, run in clusters.items():
            logs = run.client.run(_incoming_log)
            run.keys_fetched = sum(n for log in logs.values() for n, _ in log)
            run.dask_counted_bytes = sum(b for log in logs.values() for _, b in log)
            run.peak_mib = sorted(kib / 1024.0 for kib in run.client.run(_peak_rss_kib).values())
            run.ru_maxrss_mib = sorted(kib / 1024.0 for kib in run.client.run(_rusage_maxrss_kib).values())
        stack.close()
        left = leftover_children()
        print(f"clusters closed; child processes left (not counting multiprocessing's resource tracker): {len(left)}"
              + (f" ({'; '.join(left)})" if left else ""))
    finally:
        stack.close()
        shutil.rmtree(folder, ignore_errors=True)
        print(f"temporary folder {folder} deleted: {not os.path.exists(folder)}")

    # --- report
    ref_median, ref_clean = base[reference_threads].median(args.clean)
    table = Table(["run", "median s", "clean median s (n)", "best s", "others max", "first call s",
                   f"/ ft.evaluate {reference_threads} thr", "peak RSS MiB", "worker cores", "client cores", "bitwise"])
    for run in runs:
        median, clean = run.median(args.clean)
        rss = (f"{maxrss_mib():.0f} (process)" if run.client is None
               else "/".join(f"{m:.0f}" for m in run.peak_mib) + " (per worker)")
        table.add(run.name, f"{statistics.median(run.times):.3f}",
                  f"{median:.3f} ({len(run.clean(args.clean))})" if clean else "- (0)",
                  f"{min(run.times):.3f}", f"{max(run.others):.2f}", f"{run.first_s:.2f}",
                  f"{median / ref_median:.2f}", rss,
                  "-" if run.client is None else f"{statistics.median(run.worker_cores):.2f}",
                  f"{statistics.median(run.own_cores):.2f}",
                  "reference" if run is base[reference_threads] else all(run.bitwise))
    print()
    table.print()
    print("(ratios from the clean medians, or from all calls where a run had no clean call; "
          f"clean = others <= {args.clean} cores)")
    print()

    stats_bytes = block * (N_BITS + 1) * n_grades * 8
    merges, nodes = 0, args.shards
    while nodes > 1:
        nodes = -(-nodes // 8)  # fasttie.dask's default split_every
        merges += nodes
    non_root = args.shards + merges - 1  # the root is gathered by the client, not moved between workers
    print(f"tie statistics per (query block, shard) task: {block} x ({N_BITS} + 1) x {n_grades} x 8 B = "
          f"{mib(stats_bytes)}; {n_blocks} query block(s), {args.shards} shards")
    print(f"  bound, stats x shards x blocks: {mib(stats_bytes * args.shards * n_blocks)}; strict bound, "
          f"stats x non-root tree nodes ({non_root}: {args.shards} shards + {merges} merges - the root) x blocks: "
          f"{mib(stats_bytes * non_root * n_blocks)}; to the client: "
          f"{mib(args.n_queries * (N_BITS + 1) * n_grades * 8)} per call")
    for n_workers, run in clusters.items():
        keys = run.keys_fetched / args.repeats
        approx = "<= " if args.query_chunk is not None else ""
        print(f"  measured, dask {n_workers} worker(s): {keys:.1f} results fetched between workers per call = "
              f"{approx}{mib(keys * stats_bytes)} per call (dask's own sizeof-based count: "
              f"{run.dask_counted_bytes / args.repeats:.0f} B per call)")

    print()
    medians = {n: run.median(args.clean) for n, run in clusters.items()}
    if 2 in clusters:
        overhead = medians[2][0] / ref_median
        print(f"overhead: dask 2 workers x 1 thread / ft.evaluate {reference_threads} threads = {overhead:.2f}x "
              f"(target <= 1.25: {'met' if overhead <= 1.25 else 'NOT met'})"
              + ("" if medians[2][1] and ref_clean else "  [not from clean calls only]"))
    if 1 in clusters and 2 in clusters:
        scaling = medians[1][0] / medians[2][0]
        print(f"scaling: dask 1 -> 2 workers = {scaling:.2f}x (target >= 1.7: {'met' if scaling >= 1.7 else 'NOT met'})"
              + ("" if medians[1][1] and medians[2][1] else "  [not from clean calls only]"))
    if 1 in base and 2 in base:
        print(f"  for comparison, ft.evaluate 1 -> 2 threads = "
              f"{base[1].median(args.clean)[0] / base[2].median(args.clean)[0]:.2f}x")
    if 1 in clusters and 1 in base:
        print(f"  at one core: dask 1 worker / ft.evaluate 1 thread = "
              f"{medians[1][0] / base[1].median(args.clean)[0]:.2f}x")
    print("peak RSS per worker (VmHWM since the worker's exec, MiB): "
          + "; ".join(f"{n} worker(s): {', '.join(f'{m:.0f}' for m in run.peak_mib)}" for n, run in clusters.items())
          + "  [ru_maxrss, inherited across fork+exec from this process: "
          + "; ".join(", ".join(f"{m:.0f}" for m in run.ru_maxrss_mib) for run in clusters.values()) + "]"
          + f"; this process: {maxrss_mib():.0f}")
    identical = all(all(run.bitwise) for run in runs)
    print(f"every call bitwise identical to ft.evaluate ({reference_threads} threads): {identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
