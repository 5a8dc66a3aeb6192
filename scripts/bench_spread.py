"""fasttie.evaluate with and without spread: the cost of the standard deviation and the extremes over tie orders.

    python scripts/bench_spread.py                     # 1,000 queries x 1,000,000 64-bit codes
    python scripts/bench_spread.py --n-db 200000       # smaller, on a busy machine
    python scripts/bench_spread.py --metrics AP@1000   # hashing's mAP@1000 alone
    python scripts/bench_spread.py --metrics WAP@1000 --multihot 3 --classes 24  # graded ties

Data (seeded): random ±1 codes, class labels of ``--classes`` classes (relevant = same class);
with ``--multihot L``, multi-hot labels of L random labels each out of ``--classes`` (grade = shared
labels: graded ties, which WAP weighs).
Metrics: AP (the whole list: every distance bucket, most of them longer than the rank-by-rank
limit), AP@1000 (over the relevant items retrieved, hashing's mAP@1000 and evaluate's default;
``--ap-denominator total`` or ``min`` for the others), nDCG@1000, P@100 and RR. Each call is run
once to compile or load the numba cache, then ``--repeats`` times alternating without spread,
with ``spread=True`` (the standard deviation and the extremes) and with ``spread="range"`` (the
extremes alone); the minima and the medians are reported, and their ratios to the call without
spread, with the CPU other processes used meanwhile (scripts/measure.py). Both come
from the same counts: one more walk of each query's n_bits + 1 distance buckets for the standard
deviation (for AP@1000 over the retrieved relevant items, a hypergeometric mixture over the tie
that rank 1000 cuts), the counts finalized in the two grade orders (and the cut tie's relevant
counts for AP@k) for the extremes; no second pass over the database.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import fasttie as ft

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import LoadMeter  # noqa: E402

METRICS = ["AP", "AP@1000", "nDCG@1000", "P@100", "RR"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--n-db", type=int, default=1_000_000)
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--metrics", nargs="+", default=METRICS)
    parser.add_argument("--ap-denominator", choices=("retrieved", "total", "min"), default="retrieved")
    parser.add_argument("--multihot", type=int, default=0, help="labels per item (0: one class label)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    queries = ft.pack_codes(rng.integers(0, 2, (args.n_queries, args.bits), dtype=np.uint8))
    database = ft.pack_codes(rng.integers(0, 2, (args.n_db, args.bits), dtype=np.uint8))
    if args.multihot:
        def multihot(n):
            labels = np.zeros((n, args.classes), dtype=np.uint8)
            rows = np.repeat(np.arange(n), args.multihot)
            labels[rows, rng.integers(0, args.classes, n * args.multihot)] = 1
            return labels
        query_labels, db_labels = multihot(args.n_queries), multihot(args.n_db)
    else:
        query_labels = rng.integers(0, args.classes, args.n_queries)
        db_labels = np.sort(rng.integers(0, args.classes, args.n_db))  # in class order: no class-sorted copy

    def call(spread):
        start = time.perf_counter()
        result = ft.evaluate(queries, database, query_labels, db_labels,
                             metrics=args.metrics, ap_denominator=args.ap_denominator, spread=spread,
                             n_threads=args.threads)
        return time.perf_counter() - start, result

    modes = (False, True, "range")
    for spread in modes:  # compile or load the cache
        call(spread)
    times = {spread: [] for spread in modes}
    with LoadMeter() as load:
        for _ in range(args.repeats):
            for spread in modes:
                elapsed, result = call(spread)
                times[spread].append(elapsed)
                if spread is True:
                    with_std = result
    best = {spread: min(times[spread]) for spread in modes}
    median = {spread: statistics.median(times[spread]) for spread in modes}
    print(f"fasttie {ft.__version__}, numpy {np.__version__}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, threads={args.threads or 'default'}")
    print(f"{args.n_queries} queries x {args.n_db} codes of {args.bits} bits, {args.classes} classes, "
          f"metrics {args.metrics} (ap_denominator={args.ap_denominator!r}), min of {args.repeats}")
    print(f"without spread: {best[False]:.3f} s   spread=True: {best[True]:.3f} s (ratio "
          f"{best[True] / best[False]:.3f})   spread='range': {best['range']:.3f} s (ratio "
          f"{best['range'] / best[False]:.3f})")
    print(f"medians: without spread {median[False]:.3f} s   spread=True {median[True]:.3f} s (ratio "
          f"{median[True] / median[False]:.3f})   spread='range' {median['range']:.3f} s (ratio "
          f"{median['range'] / median[False]:.3f}); others' CPU {load.others:.2f} cores")
    for name in args.metrics:
        print(f"  {name:10s} mean {with_std.mean[name]:.6f} ± {with_std.mean_tie_std[name]:.2e} (std of the mean over "
              f"tie orders; median per-query std {np.median(with_std.tie_std[name]):.2e}), range over tie orders "
              f"[{with_std.mean_tie_min[name]:.6f}, {with_std.mean_tie_max[name]:.6f}]")


if __name__ == "__main__":
    main()
