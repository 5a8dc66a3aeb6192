"""ft.knn_recall against numpy brute force: recall@k of an approximate index, ties averaged.

    python scripts/bench_knn_recall.py                  # 1000 queries x 1M codes of 64 bits, k = 10
    python scripts/bench_knn_recall.py --n-db 100000 --argsort

The "index" returns the exact top k of a random fifth of the database. Baselines, both numpy
with distances by blocks of queries (np.bitwise_count of the XOR: never the whole matrix):
"partition" takes the k-th distance with np.partition and counts the closer and tied items,
then averages the returned tied ids' share, the same tie-aware value as ft.knn_recall (checked);
"argsort" (with --argsort; slow) is what ANN evaluations usually do: a stable argsort for the
true top k and the plain set recall, one arbitrary choice of the tied items. The ratio is the
baseline's median time over ft.knn_recall's. "others" is the CPU other processes used meanwhile
(cores): near 0 the timings are clean.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))
sys.path.insert(1, str(SCRIPTS_DIR.parent))

import fasttie as ft  # noqa: E402
from measure import Table, cpu_model, timed  # noqa: E402

_BLOCK = 16  # queries per block of the numpy baselines: 16 x n_db distances at a time


def _distances(query_words, db_words):
    return np.bitwise_count(query_words[:, None, :] ^ db_words[None, :, :]).sum(axis=2, dtype=np.int64)


def partition_recall(query_words, db_words, returned, k):
    """Tie-averaged recall@k by brute force: the k-th distance by np.partition, then the counts."""
    out = np.empty(len(query_words))
    for lo in range(0, len(query_words), _BLOCK):
        dist = _distances(query_words[lo:lo + _BLOCK], db_words)
        kth = np.partition(dist, k - 1, axis=1)[:, k - 1:k]
        closer, tied = (dist < kth).sum(axis=1), (dist == kth).sum(axis=1)
        got = np.take_along_axis(dist, returned[lo:lo + _BLOCK], axis=1)
        need = k - closer
        out[lo:lo + _BLOCK] = ((got < kth).sum(axis=1) + (got == kth).sum(axis=1) * need / tied) / k
    return out


def argsort_recall(query_words, db_words, returned, k):
    """Plain set recall@k against a stable argsort's top k (one choice of the tied items)."""
    out = np.empty(len(query_words))
    for lo in range(0, len(query_words), _BLOCK):
        truth = np.argsort(_distances(query_words[lo:lo + _BLOCK], db_words), axis=1, kind="stable")[:, :k]
        for i, row in enumerate(truth):
            out[lo + i] = len(set(row.tolist()) & set(returned[lo + i].tolist())) / k
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-db", type=int, default=1_000_000)
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None, help="ft.knn_recall's n_threads (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--argsort", action="store_true", help="also time the argsort baseline (slow)")
    args = parser.parse_args(argv)
    print(f"command: python scripts/bench_knn_recall.py --n-db {args.n_db} --n-queries {args.n_queries} "
          f"--bits {args.bits} --k {args.k} --repeats {args.repeats}" + (" --argsort" if args.argsort else ""))
    print(f"cpu: {cpu_model()}")
    queries, database, _, _ = ft.datasets.synthetic_hashing(args.n_queries, args.n_db, args.bits, 10, flip=0.25, seed=0)
    fifth = np.sort(np.random.default_rng(0).choice(args.n_db, args.n_db // 5, replace=False))
    local, _ = ft.search(queries, ft.PackedCodes(np.ascontiguousarray(database.words[fifth]), args.bits), k=args.k)
    returned = fifth[local]

    def ours():
        return ft.knn_recall(queries, database, returned, args.k, n_threads=args.threads)

    values = ours()  # compile or load from the cache
    mean = values.mean[f"Recall@{args.k}"]
    ours_s, _, ours_load = timed(ours, args.repeats)
    table = Table(["method", "median s", "baseline / knn_recall", f"Recall@{args.k}", "others (cores)"])
    table.add("ft.knn_recall (average)", f"{ours_s:.3f}", "1.00", f"{mean:.6f}", f"{ours_load.others:.2f}")
    baselines = [("numpy partition (average)", partition_recall)]
    if args.argsort:
        baselines.append(("numpy stable argsort (one tie order)", argsort_recall))
    for name, baseline in baselines:
        kept = {}

        def run(baseline=baseline):
            kept["per_query"] = baseline(queries.words, database.words, returned, args.k)

        seconds, _, load = timed(run, 1)  # one run: each takes seconds to minutes
        per_query = kept["per_query"]
        if baseline is partition_recall:
            gap = np.abs(per_query - values.per_query[f"Recall@{args.k}"]).max()
            assert gap < 1e-12, f"the baseline differs from ft.knn_recall by {gap}"
        table.add(name, f"{seconds:.3f}", f"{seconds / ours_s:.1f}", f"{per_query.mean():.6f}", f"{load.others:.2f}")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
