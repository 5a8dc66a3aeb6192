"""ties="stable" against ties="average": the cost of the fixed order, in one process.

    python scripts/bench_stable.py                     # 1000 x 1M and 1000 x 10M, 64 bits
    python scripts/bench_stable.py --sizes 1000000 --n-queries 200
    python scripts/bench_stable.py --sizes 2000000 --n-queries 200 --files 2   # a database in files
    python scripts/bench_stable.py --sizes 1000000 --classes 100   # a hundredth of the items relevant

Same packed codes and class labels (10 classes unless ``--classes``, codes correlated with their
class), at 1 and 2 threads, two metric sets in one call each: "whole" = AP, AP@1000, nDCG@1000, P@1000 (AP ranks
every relevant item: the full pass in index order), "top" = AP@1000, nDCG@1000, P@1000
(cutoffs only: the counts, then a pass that grades only the items near enough to reach rank
1000). The ratio is the median stable time over the median average time of the same metrics
(target <= 2). "in-order sum / average", for the whole list: the time of AP's sum alone, k / rank
added in rank order over every relevant item of every query (as many as the call ranks), exact and
not reassociated as the stable pass adds it, over the average pass's time: a part of the whole-list
stable pass that no scan makes shorter (threads split the queries). The two modes' calls alternate (average, stable, average, ...), so a load that
comes and goes on a shared machine falls on both alike; "CPU ratio" is the same ratio of the
process's CPU seconds (at 1 thread the work done, whatever share of a core the process got).
"others" is the CPU other processes used meanwhile (cores): near 0 the timings are clean. The
values of both modes are printed too (they differ only by the order inside ties).

``--files N`` writes the database as N ``.npy`` files of packed bytes in a temporary folder and
evaluates them memory-mapped (``ft.pack_codes(paths, packed=True)``): the streamed pass, whose
stable order runs the protocol of a database in parts (:mod:`fasttie.hamming.stable`) over its
tiles, as Dask's shards and torch.distributed's ranks do.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))
sys.path.insert(1, str(SCRIPTS_DIR.parent))

import fasttie as ft  # noqa: E402
from measure import LoadMeter, Table, cpu_model, parse_int_list  # noqa: E402

METRIC_SETS = {"whole": ("AP", "AP@1000", "nDCG@1000", "P@1000"), "top": ("AP@1000", "nDCG@1000", "P@1000")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000,10000000", help="database sizes (comma list)")
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--classes", type=int, default=10, help="classes of the labels (10: a tenth relevant)")
    parser.add_argument("--files", type=int, default=0,
                        help="the database as this many memory-mapped .npy files (0: in memory)")
    args = parser.parse_args(argv)
    print(f"command: python scripts/bench_stable.py --sizes {args.sizes} --n-queries {args.n_queries} "
          f"--bits {args.bits} --threads {args.threads} --repeats {args.repeats} --classes {args.classes}"
          + (f" --files {args.files}" if args.files else ""))
    print(f"cpu: {cpu_model()}")
    stack = contextlib.ExitStack()
    table = Table(["n_db", "metrics", "threads", "average s", "stable s", "stable / average", "CPU ratio",
                   "in-order sum / average", "others (cores)"])
    for n_db in parse_int_list(args.sizes):
        queries, database, query_labels, db_labels = ft.datasets.synthetic_hashing(
            args.n_queries, n_db, args.bits, args.classes, flip=0.25, seed=0)
        if args.files:
            database = _in_files(database, args.files, stack)
        for label, metrics in METRIC_SETS.items():
            for threads in parse_int_list(args.threads):
                calls = {}
                for ties in ("average", "stable"):
                    def call(ties=ties, metrics=metrics, threads=threads):
                        return ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties,
                                           n_threads=threads)
                    values = call()  # compile or load from the cache
                    calls[ties] = call
                    print(f"  n_db {n_db}, {label}, {threads} thread(s), {ties}: "
                          + ", ".join(f"{k} {v:.6f}" for k, v in values.mean.items()), flush=True)
                wall, cpu, load = _alternating(calls, args.repeats)
                floor = ""
                if "AP" in metrics:  # the whole list: every relevant item ranked
                    relevant = np.bincount(db_labels, minlength=10)[query_labels]
                    floor = f"{_in_order_sum_seconds(relevant, n_db, threads, args.repeats) / wall['average']:.2f}"
                table.add(n_db, label, threads, f"{wall['average']:.3f}", f"{wall['stable']:.3f}",
                          f"{wall['stable'] / wall['average']:.2f}", f"{cpu['stable'] / cpu['average']:.2f}",
                          floor, f"{load.others:.2f}")
    table.print()
    stack.close()
    return 0


def _in_files(database, n_files, stack):
    """The packed codes as ``n_files`` .npy files of bytes in a temporary folder (removed with
    ``stack``), read memory-mapped: a ShardedCodes."""
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-stable-"))
    paths = [os.path.join(folder, f"codes_{i}.npy") for i in range(n_files)]
    for path, part in zip(paths, np.array_split(database.words.view(np.uint8), n_files)):
        np.save(path, part)
    return ft.pack_codes(paths, packed=True, n_bits=database.n_bits, bitorder="little")


@numba.njit(nogil=True)
def _in_order_sum(relevant, n_db, lo, hi):
    """AP's numerator of queries lo..hi-1, each with relevant[q] relevant items spread evenly over
    n_db ranks: k / rank added in rank order (the stable pass's finalizer adds the same way)."""
    total = 0.0
    for q in range(lo, hi):
        ap = 0.0
        step = max(n_db // max(relevant[q], 1), 1)
        for k in range(1, relevant[q] + 1):
            ap += k / (k * step - step // 2)
        total += ap
    return total


def _in_order_sum_seconds(relevant, n_db, threads, repeats):
    """Median seconds of :func:`_in_order_sum` over all queries, split over ``threads`` threads."""
    bounds = np.linspace(0, len(relevant), threads + 1).astype(np.int64)
    _in_order_sum(relevant, n_db, 0, 1)  # compile
    times = []
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            t = time.perf_counter()
            list(pool.map(lambda b: _in_order_sum(relevant, n_db, bounds[b], bounds[b + 1]), range(threads)))
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def _alternating(calls, repeats):
    """Median wall and CPU seconds of each of ``calls`` (a dict of callables), called in turn
    ``repeats`` times, and the LoadMeter that spans them all."""
    wall = {name: [] for name in calls}
    cpu = {name: [] for name in calls}
    with LoadMeter() as load:
        for _ in range(repeats):
            for name, call in calls.items():
                t0, c0 = time.perf_counter(), time.process_time()
                call()
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
    return ({name: statistics.median(v) for name, v in wall.items()},
            {name: statistics.median(v) for name, v in cpu.items()}, load)


if __name__ == "__main__":
    sys.exit(main())
