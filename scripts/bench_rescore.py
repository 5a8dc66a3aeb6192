"""ft.rescore_evaluate against faiss IndexBinaryFlat + numpy rescoring, in one process.

    python scripts/bench_rescore.py                                   # 200 queries x 200k, 1024 bits
    python scripts/bench_rescore.py --n-db 1000000 --n-queries 1000   # the issue's size (4 GB of float32)

Data: ft.datasets.binarized_embeddings (clustered Gaussian unit vectors, dim = bits, codes = signs).
Both sides evaluate nDCG@10 and P@10 (relevant = same cluster) at every candidate count of the
sweep (default 100, 200, 500, 1000: an oversampling of 10x to 100x for k = 10), on the same
number of threads:

* "faiss + numpy": IndexBinaryFlat.search(codes, max candidates) once (its lists are sorted by
  distance, so a prefix is the list of a smaller count), then per count and block of queries the
  float vectors of the candidates gathered, their inner products (np.einsum), a stable argsort and
  the metrics of the top 10. One arbitrary choice of the tied candidates (faiss's heap order).
* "ft.rescore_evaluate": the exact average over every choice of the tied candidates, all counts
  from one Hamming pass.
* with NN-recall@10: faiss adds IndexFlatIP.search(10) for the float ground truth; fasttie adds
  the metric (its exact float search by blocks of BLAS inner products).

The ratio is faiss's median time over fasttie's. "others" is the CPU other processes used
meanwhile (cores): near 0 the timings are clean.
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
from measure import Table, cpu_model, maxrss_mib, parse_int_list, timed  # noqa: E402

_BLOCK = 32  # queries per block of the numpy rescoring


def faiss_pipeline(faiss, data, counts, k, with_truth):
    """(per count: (nDCG@k, P@k, NN-recall@k or None) means) of the faiss + numpy pipeline."""
    n_bits = data.db_codes.n_bits
    index = faiss.IndexBinaryFlat(n_bits)
    index.add(np.ascontiguousarray(data.db_codes.words).view(np.uint8))
    _, ids = index.search(np.ascontiguousarray(data.query_codes.words).view(np.uint8), max(counts))
    truth = None
    if with_truth:
        flat = faiss.IndexFlatIP(data.db_vectors.shape[1])
        flat.add(data.db_vectors)
        _, truth = flat.search(data.query_vectors, k)
    sizes = np.bincount(data.db_labels)
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    out = []
    for c in counts:
        ndcg, prec, nn = [], [], []
        for lo in range(0, len(ids), _BLOCK):
            cand = ids[lo:lo + _BLOCK, :c]
            scores = np.einsum("qcd,qd->qc", data.db_vectors[cand], data.query_vectors[lo:lo + _BLOCK])
            top = np.take_along_axis(cand, np.argsort(-scores, axis=1, kind="stable")[:, :k], axis=1)
            rel = data.db_labels[top] == data.query_labels[lo:lo + _BLOCK, None]
            ideal = np.minimum(sizes[data.query_labels[lo:lo + _BLOCK]], k)
            idcg = np.cumsum(np.concatenate([[0.0], discount]))[ideal]
            ndcg.append((rel * discount).sum(axis=1) / np.where(idcg > 0, idcg, 1))
            prec.append(rel.mean(axis=1))
            if truth is not None:
                nn.append([len(np.intersect1d(a, b)) / k for a, b in zip(top, truth[lo:lo + _BLOCK])])
        out.append((np.concatenate(ndcg).mean(), np.concatenate(prec).mean(),
                    float(np.mean(np.concatenate(nn))) if truth is not None else None))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-db", type=int, default=200_000)
    parser.add_argument("--n-queries", type=int, default=200)
    parser.add_argument("--bits", type=int, default=1024, help="code bits = float dimensions")
    parser.add_argument("--candidates", type=parse_int_list, default=[100, 200, 500, 1000])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        import faiss
    except ImportError:
        print("faiss is not installed: nothing to compare with")
        return 1
    faiss.omp_set_num_threads(args.threads)
    counts = ",".join(map(str, args.candidates))
    print(f"command: python scripts/bench_rescore.py --n-db {args.n_db} --n-queries {args.n_queries} "
          f"--bits {args.bits} --candidates {counts} --k {args.k} --threads {args.threads} --repeats {args.repeats}")
    print(f"cpu: {cpu_model()}, threads: {args.threads}")
    data = ft.datasets.binarized_embeddings(n_db=args.n_db, n_queries=args.n_queries, dim=args.bits,
                                            n_clusters=max(10, args.n_db // 2000), noise=3.0, seed=0)
    k = args.k
    table = Table(["pipeline", "median s", "faiss / fasttie", f"nDCG@{k} (C={args.candidates[0]})",
                   f"NN-recall@{k}", "others (cores)"])
    for with_truth in (False, True):
        metrics = [f"nDCG@{k}", f"P@{k}"] + ([f"NN-recall@{k}"] if with_truth else [])

        def ours(metrics=metrics):
            return ft.rescore_evaluate(data.query_codes, data.db_codes, data.query_vectors, data.db_vectors,
                                       candidates=args.candidates, metrics=metrics, query_labels=data.query_labels,
                                       db_labels=data.db_labels, n_threads=args.threads)

        def theirs(with_truth=with_truth):
            return faiss_pipeline(faiss, data, args.candidates, k, with_truth)

        sweep = ours()  # compile or load from the cache
        ours_s, _, ours_load = timed(ours, args.repeats)
        faiss_values = theirs()
        theirs_s, _, theirs_load = timed(theirs, args.repeats)
        tag = " + NN-recall" if with_truth else ""
        first = sweep.results[0]
        table.add(f"ft.rescore_evaluate (average){tag}", f"{ours_s:.3f}", f"{theirs_s / ours_s:.2f}",
                  f"{first.mean[f'nDCG@{k}']:.4f}", f"{first.mean[f'NN-recall@{k}']:.4f}" if with_truth else "-",
                  f"{ours_load.others:.2f}")
        table.add(f"faiss IndexBinaryFlat + numpy{' + IndexFlatIP' if with_truth else ''}", f"{theirs_s:.3f}", "1.00",
                  f"{faiss_values[0][0]:.4f}", f"{faiss_values[0][2]:.4f}" if with_truth else "-",
                  f"{theirs_load.others:.2f}")
    table.print()
    print(f"peak RSS: {maxrss_mib():.0f} MiB (the float database alone: {data.db_vectors.nbytes / 2**20:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
