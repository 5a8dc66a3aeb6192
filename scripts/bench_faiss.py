"""fasttie.evaluate() against faiss IndexBinaryFlat.search(k=1000), the peer a hashing user would
otherwise call, on the same codes and threads, in one process.

    python scripts/bench_faiss.py                                  # 256 queries x 1M, 64 bits, 1 and 2 threads
    python scripts/bench_faiss.py --n-queries 64 --n-db 20000000   # the 20M case

faiss returns the ids of the 1000 nearest codes and nothing else (no metric, no tie handling);
fasttie returns tie-aware AP, AP@1000, nDCG@1000 and P@1000 of every query over the whole
database. Both get the same packed codes (faiss: bytes in its little bit order, built into the
index once, not timed); the two are timed alternately, ``--repeats`` times each after a
warm-up, and the ratio of the medians is printed (> 1: fasttie is faster). Needs faiss-cpu
(the bench extra).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))
sys.path.insert(1, str(SCRIPTS_DIR.parent))
sys.path.insert(2, str(SCRIPTS_DIR.parent / "asv_bench"))  # benchmarks.data: seeded data and baselines, shared with asv

import fasttie as ft  # noqa: E402
from measure import cpu_model, parse_int_list  # noqa: E402
from benchmarks.data import baselines  # noqa: E402
from benchmarks.data.synthetic import make_hashing_data, words_to_bytes  # noqa: E402

METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000")
TOP_K = 1000


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-queries", type=int, default=256)
    p.add_argument("--n-db", type=int, default=1_000_000)
    p.add_argument("--bits", default="64", help="comma list of code widths (multiples of 8)")
    p.add_argument("--threads", default="1,2", help="comma list of thread counts (both libraries)")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    try:
        import faiss
    except ImportError:
        print("faiss is not installed: pip install faiss-cpu (or the bench extra)")
        return 1
    from fasttie._kernels.cpu import bitsliced_pass

    print(f"{cpu_model()}; fasttie {ft.__version__} ({'bit-sliced' if bitsliced_pass() else 'portable'} pass), "
          f"faiss {faiss.__version__}; {args.n_queries} queries x {args.n_db:,} codes")
    for bits in parse_int_list(args.bits):
        data = make_hashing_data(args.n_queries, args.n_db, -(-bits // 64) * 64, seed=0)  # the first `bits` used
        queries = ft.pack_codes(data.query_words.view("u1")[:, : bits // 8], packed=True, n_bits=bits, bitorder="little")
        database = ft.pack_codes(data.db_words.view("u1")[:, : bits // 8], packed=True, n_bits=bits, bitorder="little")
        index = baselines.faiss_build(words_to_bytes(data.db_words)[:, : bits // 8], bits)
        q_bytes = words_to_bytes(data.query_words)[:, : bits // 8]
        for threads in parse_int_list(args.threads):
            def run_fasttie():
                ft.evaluate(queries, database, data.query_labels, data.db_labels, metrics=METRICS, n_threads=threads)

            def run_faiss():
                baselines.faiss_search(index, q_bytes, TOP_K, threads)

            run_fasttie()
            run_faiss()
            times = {"fasttie": [], "faiss": []}
            for _ in range(args.repeats):
                for name, run in (("fasttie", run_fasttie), ("faiss", run_faiss)):
                    started = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - started)
            med = {name: statistics.median(t) for name, t in times.items()}
            pairs = args.n_queries * args.n_db
            print(f"{bits:4d} bits, {threads} thread(s): fasttie {med['fasttie']:.3f} s "
                  f"({pairs / med['fasttie'] / 1e9:.2f} G pairs/s), faiss top-{TOP_K} {med['faiss']:.3f} s, "
                  f"fasttie / faiss speed = {med['faiss'] / med['fasttie']:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
