"""fasttie.evaluate with and without spread=True: the cost of the standard deviation over tie orders.

    python scripts/bench_spread.py                 # 1,000 queries x 1,000,000 64-bit codes
    python scripts/bench_spread.py --n-db 200000   # smaller, on a busy machine

Data (seeded): random ±1 codes, class labels of ``--classes`` classes (relevant = same class).
Metrics: AP (the whole list: every distance bucket, most of them longer than the rank-by-rank
limit), AP@1000 and nDCG@1000 (``ap_denominator="total"``: AP@k over the retrieved relevant
items has no exact spread), P@100 and RR. Each call is run once to compile or load the numba
cache, then ``--repeats`` times alternating without / with spread; the minima are reported,
and their ratio (issue 40: at most 1.5). The spread comes from the same counts in one more walk
of each query's n_bits + 1 distance buckets (no second pass over the database).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import fasttie as ft

METRICS = ["AP", "AP@1000", "nDCG@1000", "P@100", "RR"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--n-db", type=int, default=1_000_000)
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    queries = ft.pack_codes(rng.integers(0, 2, (args.n_queries, args.bits), dtype=np.uint8))
    database = ft.pack_codes(rng.integers(0, 2, (args.n_db, args.bits), dtype=np.uint8))
    query_labels = rng.integers(0, args.classes, args.n_queries)
    db_labels = np.sort(rng.integers(0, args.classes, args.n_db))  # in class order: no class-sorted copy

    def call(spread):
        start = time.perf_counter()
        result = ft.evaluate(queries, database, query_labels, db_labels, metrics=METRICS, ap_denominator="total",
                             spread=spread, n_threads=args.threads)
        return time.perf_counter() - start, result

    call(False), call(True)  # compile or load the cache
    times = {False: [], True: []}
    for _ in range(args.repeats):
        for spread in (False, True):
            elapsed, result = call(spread)
            times[spread].append(elapsed)
    plain, spread = min(times[False]), min(times[True])
    print(f"fasttie {ft.__version__}, numpy {np.__version__}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, threads={args.threads or 'default'}")
    print(f"{args.n_queries} queries x {args.n_db} codes of {args.bits} bits, {args.classes} classes, "
          f"metrics {METRICS}, min of {args.repeats}")
    print(f"without spread: {plain:.3f} s   with spread=True: {spread:.3f} s   ratio {spread / plain:.3f}")
    for name in METRICS:
        print(f"  {name:10s} mean {result.mean[name]:.6f} ± {result.mean_tie_std[name]:.2e} (std of the mean over "
              f"tie orders; median per-query std {np.median(result.tie_std[name]):.2e})")


if __name__ == "__main__":
    main()
