"""ties="stable" against ties="average": the cost of the fixed order, in one process.

    python scripts/bench_stable.py                     # 1000 x 1M and 1000 x 10M, 64 bits
    python scripts/bench_stable.py --sizes 1000000 --n-queries 200

Same packed codes and class labels (10 classes, codes correlated with their class), at 1 and 2
threads, two metric sets in one call each: "whole" = AP, AP@1000, nDCG@1000, P@1000 (AP ranks
every relevant item: the full pass in index order), "top" = AP@1000, nDCG@1000, P@1000
(cutoffs only: the counts, then a pass that grades only the items near enough to reach rank
1000). The ratio is the median stable time over the median average time of the same metrics
(target <= 2). "others" is the CPU other processes used meanwhile (cores): near 0 the timings
are clean. The values of both modes are printed too (they differ only by the order inside ties).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))
sys.path.insert(1, str(SCRIPTS_DIR.parent))

import fasttie as ft  # noqa: E402
from measure import Table, cpu_model, parse_int_list, timed  # noqa: E402

METRIC_SETS = {"whole": ("AP", "AP@1000", "nDCG@1000", "P@1000"), "top": ("AP@1000", "nDCG@1000", "P@1000")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000,10000000", help="database sizes (comma list)")
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"command: python scripts/bench_stable.py --sizes {args.sizes} --n-queries {args.n_queries} "
          f"--bits {args.bits} --threads {args.threads} --repeats {args.repeats}")
    print(f"cpu: {cpu_model()}")
    table = Table(["n_db", "metrics", "threads", "average s", "stable s", "stable / average", "others (cores)"])
    for n_db in parse_int_list(args.sizes):
        queries, database, query_labels, db_labels = ft.datasets.synthetic_hashing(
            args.n_queries, n_db, args.bits, 10, flip=0.25, seed=0)
        for label, metrics in METRIC_SETS.items():
            for threads in parse_int_list(args.threads):
                times = {}
                for ties in ("average", "stable"):
                    def call(ties=ties, metrics=metrics, threads=threads):
                        return ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties,
                                           n_threads=threads)
                    values = call()  # compile or load from the cache
                    times[ties] = timed(call, args.repeats)
                    print(f"  n_db {n_db}, {label}, {threads} thread(s), {ties}: "
                          + ", ".join(f"{k} {v:.6f}" for k, v in values.mean.items()), flush=True)
                others = max(times["average"][2].others, times["stable"][2].others)
                table.add(n_db, label, threads, f"{times['average'][0]:.3f}", f"{times['stable'][0]:.3f}",
                          f"{times['stable'][0] / times['average'][0]:.2f}", f"{others:.2f}")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
