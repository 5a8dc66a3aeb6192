"""fasttie.evaluate() against the baselines it replaces, on seeded synthetic hashing data.

    python scripts/bench_hashing.py --quick          # ~100k database, a few seconds per width
    python scripts/bench_hashing.py                  # 1000 queries x 1M database, 64/128/256 bits

Everything runs in one process, on the same codes and labels:

* fasttie: ``ft.evaluate(packed queries, packed db, labels, metrics=(AP, AP@1000, nDCG@1000,
  P@1000))`` at each thread count; the first call (compile or cache load) is timed separately,
  then the median of ``--repeats`` warm calls.  Codes are packed once with ``ft.pack_codes``
  (its time is reported as a one-off).
* seed 000 ``mAP_tie`` (numpy, tie-aware, k = ALL) on the first ``--seed-queries`` queries,
  once, after a 2-query warm-up.
* argsort-based mAP@1000 (numpy, how hashing repositories compute it) on the first
  ``--argsort-queries`` queries: warm-up, then the median of ``--baseline-repeats``.
* faiss ``IndexBinaryFlat`` top-1000 search (no metrics) on all queries, at each thread count
  (median of ``--faiss-repeats`` after a warm-up; its 2-thread times are noisy on small VMs).

Ratios are per-query time of the baseline / per-query time of fasttie (> 1: fasttie faster).
Each timed block also reports "others' CPU": cores used by *other* processes meanwhile
(/proc/stat), since a shared 2-core machine inflates wall times.
The numpy baselines use numpy's default threads (OpenBLAS for the distance product; argsort and
the seed's loops are single-threaded).  Peak memory is ``ru_maxrss`` of this process, which only
grows: fasttie runs first for all widths so its delta is visible on its own.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))
# prefer the checkout's fasttie (scripts/ lives in the repository) over an installed copy
sys.path.insert(1, str(SCRIPTS_DIR.parent))
sys.path.insert(2, str(SCRIPTS_DIR.parent / "asv_bench"))  # benchmarks.data: seeded data and baselines, shared with asv

from measure import LoadMeter, Table, cpu_flags, cpu_model, maxrss_mib, parse_int_list, timed  # noqa: E402
from benchmarks.data import baselines  # noqa: E402
from benchmarks.data.synthetic import make_hashing_data, words_to_bool, words_to_bytes, words_to_pm1  # noqa: E402

METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000")
TOP_K = 1000
# targets from the brief / DESIGN.md section 5 (Zen 5 with AVX-512 VPOPCNTDQ)
TARGET_PAIRS_PER_CORE = {64: 2.5e9, 128: 1.5e9, 256: 1.0e9}
TARGET_RATIO = {"seed": 200.0, "argsort": 30.0, "faiss": 1.0}


def fmt_rate(x: float) -> str:
    if x >= 1e9:
        return f"{x / 1e9:.2f} G"
    if x >= 1e6:
        return f"{x / 1e6:.1f} M"
    return f"{x / 1e3:.1f} k"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-queries", type=int, default=1000)
    p.add_argument("--n-db", type=int, default=1_000_000)
    p.add_argument("--bits", default="64,128,256", help="comma list of code widths (multiples of 64)")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--flip", type=float, default=0.25, help="per-bit flip probability from the class prototype")
    p.add_argument("--threads", default="1,2", help="comma list of thread counts for fasttie and faiss")
    p.add_argument("--repeats", type=int, default=3, help="warm fasttie calls per setting (median reported)")
    p.add_argument("--seed-queries", type=int, default=20, help="queries timed for the seed mAP_tie")
    p.add_argument("--seed-chunk", type=int, default=20, help="queries per seed mAP_tie call")
    p.add_argument("--argsort-queries", type=int, default=50, help="queries timed for argsort mAP@1000")
    p.add_argument("--argsort-chunk", type=int, default=25, help="queries per argsort chunk")
    p.add_argument("--faiss-repeats", type=int, default=3, help="faiss searches per thread count (median)")
    p.add_argument("--baseline-repeats", type=int, default=3, help="argsort mAP@1000 timings (median)")
    p.add_argument("--no-seed", action="store_true")
    p.add_argument("--no-argsort", action="store_true")
    p.add_argument("--no-faiss", action="store_true")
    p.add_argument("--random-seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="small run: 200 queries x 100k database")
    args = p.parse_args(argv)
    if args.quick:
        # only override what the user left at its default
        defaults = {"n_queries": 1000, "n_db": 1_000_000, "seed_queries": 20, "argsort_queries": 50}
        quick = {"n_queries": 200, "n_db": 100_000, "seed_queries": 10, "argsort_queries": 20}
        for name, value in quick.items():
            if getattr(args, name) == defaults[name]:
                setattr(args, name, value)
    bits_list = parse_int_list(args.bits)
    threads_list = parse_int_list(args.threads)
    n_q, n_db = args.n_queries, args.n_db
    pairs = n_q * n_db

    argv_shown = sys.argv[1:] if argv is None else argv
    print("command: python scripts/bench_hashing.py " + " ".join(shlex.quote(a) for a in argv_shown))
    import numba

    print(
        f"machine: {cpu_model()}, {os.cpu_count()} logical cores, flags: {cpu_flags()}; "
        f"python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}"
    )
    thread_vars = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    blas_env = {k: os.environ[k] for k in thread_vars if k in os.environ}
    print(f"numpy baselines: default threads {blas_env or '(no thread env vars set)'}")

    try:
        import fasttie as ft
        from fasttie.parallel import available_threads

        ft.evaluate  # noqa: B018
        have_ft = True
        print(f"fasttie {getattr(ft, '__version__', '?')} from {Path(ft.__file__).parent}; "
              f"NUMBA_CACHE_DIR={os.environ.get('NUMBA_CACHE_DIR', '(default)')}, "
              f"fasttie threads per call: {available_threads()}")
    except (ImportError, AttributeError) as exc:
        have_ft = False
        print(f"fasttie NOT importable ({exc!r}): baselines only, ratios n/a")
    faiss = None
    if not args.no_faiss:
        try:
            import faiss

            print(f"faiss {faiss.__version__}")
        except ImportError:
            print("faiss not installed (pip install faiss-cpu): faiss rows skipped")
    print(
        f"data: {n_q} queries x {n_db} database codes, {args.classes} classes, flip p={args.flip}, "
        f"seed {args.random_seed}; metrics {METRICS}"
    )
    print()

    rss = [("start (imports done)", maxrss_mib())]
    total_load = LoadMeter().__enter__()
    datasets = {}
    ft_result = {}  # (bits, threads) -> dict(first=, median=, times=)
    ft_values = {}  # bits -> per_query dict
    pack_time = {}

    # ---------------- phase 1: data + fasttie ----------------
    for bits in bits_list:
        t0 = time.perf_counter()
        data = make_hashing_data(n_q, n_db, bits, args.classes, args.flip, seed=args.random_seed)
        gen_s = time.perf_counter() - t0
        datasets[bits] = data
        rss.append((f"{bits} bits: data generated ({gen_s:.1f} s)", maxrss_mib()))
        if not have_ft:
            continue
        # pack once from bool codes (the ordinary user path), reported as a one-off cost
        db_bool = words_to_bool(data.db_words, bits)
        q_bool = words_to_bool(data.query_words, bits)
        t0 = time.perf_counter()
        db_packed = ft.pack_codes(db_bool)
        q_packed = ft.pack_codes(q_bool)
        pack_time[bits] = time.perf_counter() - t0
        del db_bool, q_bool
        rss.append((f"{bits} bits: bool codes (temporary) + ft.pack_codes", maxrss_mib()))
        before = maxrss_mib()
        for threads in threads_list:
            def call(threads=threads):
                return ft.evaluate(
                    q_packed, db_packed, data.query_labels, data.db_labels, metrics=METRICS, n_threads=threads
                )

            t0 = time.perf_counter()
            res = call()
            first = time.perf_counter() - t0
            med, times, load = timed(call, args.repeats)
            ft_result[bits, threads] = {"first": first, "median": med, "times": times, "others": load.others,
                                        "cpu": load.cpu / args.repeats / n_q}
            ft_values.setdefault(bits, res.per_query)
        rss.append((f"{bits} bits: after fasttie.evaluate (delta {maxrss_mib() - before:+.0f} MiB)", maxrss_mib()))
        # bitwise identical across thread counts?
        if len(threads_list) > 1:
            res1 = ft.evaluate(q_packed, db_packed, data.query_labels, data.db_labels, metrics=METRICS,
                               n_threads=threads_list[0])
            res2 = ft.evaluate(q_packed, db_packed, data.query_labels, data.db_labels, metrics=METRICS,
                               n_threads=threads_list[-1])
            same = all(np.array_equal(res1.per_query[m], res2.per_query[m], equal_nan=True) for m in METRICS)
            ft_values[bits]["_threads_identical"] = same
            ft_values[bits]["_mean"] = res1.mean

    # ---------------- phase 2: baselines ----------------
    base = {}  # (name, bits, threads) -> seconds per query
    checks = []
    for bits in bits_list:
        data = datasets[bits]
        need_pm1 = not (args.no_seed and args.no_argsort)
        if need_pm1:
            q_pm1 = words_to_pm1(data.query_words, bits)
            db_pm1 = words_to_pm1(data.db_words, bits)
        if not args.no_seed and args.seed_queries > 0:
            ns = min(args.seed_queries, n_q)
            # warm-up on 2 queries (BLAS threads, allocator), like fasttie's warm-up call
            baselines.seed_mAP_tie_chunked(q_pm1[:2], db_pm1, data.query_labels[:2], data.db_labels, k=-1)
            with LoadMeter() as load:
                t0 = time.perf_counter()
                v = baselines.seed_mAP_tie_chunked(
                    q_pm1[:ns], db_pm1, data.query_labels[:ns], data.db_labels, k=-1, chunk=args.seed_chunk
                )
                sec = time.perf_counter() - t0
            base["seed mAP_tie (numpy, k=ALL)", bits, None] = (sec / ns, ns, load.others, load.cpu / ns)
            if have_ft:
                ft_ap = float(np.mean(ft_values[bits]["AP"][:ns]))
                checks.append(f"{bits} bits: seed mAP_tie@ALL {v:.12f} vs fasttie AP {ft_ap:.12f} "
                              f"(first {ns} queries): |diff| {abs(v - ft_ap):.2e}")
            rss.append((f"{bits} bits: after seed mAP_tie", maxrss_mib()))
        if not args.no_argsort and args.argsort_queries > 0:
            na = min(args.argsort_queries, n_q)

            def argsort_call():
                return baselines.argsort_mAP_at_k(
                    q_pm1[:na], db_pm1, data.query_labels[:na], data.db_labels, k=TOP_K, chunk=args.argsort_chunk
                )

            v = argsort_call()  # warm-up (the first call in a process is ~2-3x slower)
            med, _, load = timed(argsort_call, args.baseline_repeats)
            base[f"argsort mAP@{TOP_K} (numpy)", bits, None] = (
                med / na, na, load.others, load.cpu / args.baseline_repeats / na)
            if have_ft:
                ft_ap = float(np.mean(ft_values[bits][f"AP@{TOP_K}"][:na]))
                checks.append(f"{bits} bits: argsort mAP@{TOP_K} {v:.6f} (one arbitrary tie order) vs fasttie "
                              f"tie-aware AP@{TOP_K} {ft_ap:.6f} (first {na} queries)")
            rss.append((f"{bits} bits: after argsort mAP@{TOP_K}", maxrss_mib()))
        if need_pm1:
            del q_pm1, db_pm1
        if faiss is not None:
            q_bytes, db_bytes = words_to_bytes(data.query_words), words_to_bytes(data.db_words)
            t0 = time.perf_counter()
            index = baselines.faiss_build(db_bytes, bits)
            build_s = time.perf_counter() - t0
            for threads in threads_list:
                baselines.faiss_search(index, q_bytes[: min(50, n_q)], TOP_K, threads)  # warm-up (thread pool)
                med, _, load = timed(
                    lambda: baselines.faiss_search(index, q_bytes, TOP_K, threads), args.faiss_repeats
                )
                base[f"faiss IndexBinaryFlat top-{TOP_K}", bits, threads] = (
                    med / n_q, n_q, load.others, load.cpu / args.faiss_repeats / n_q)
            checks.append(f"{bits} bits: faiss index build (add) {build_s * 1e3:.0f} ms, one-off, not in the ratio")
            del index
            rss.append((f"{bits} bits: after faiss", maxrss_mib()))

    total_load.__exit__(None, None, None)
    # ---------------- report ----------------
    print(f"== fasttie.evaluate throughput: {n_q} x {n_db} = {pairs:.3g} pairs per call, metrics {METRICS} ==")
    print(f"   median of {args.repeats} warm calls; first = first call in this process "
          f"(compile or cache load; later widths may reuse the compiled kernel)")
    t = Table(["bits", "threads", "first call s", "first/warm", "warm s (min..max)", "per-query ms",
               "pairs/s", "pairs/s/core", "target/core", "vs target", "speed-up vs 1st thread count",
               "others' CPU"])
    for bits in bits_list:
        for threads in threads_list:
            r = ft_result.get((bits, threads))
            if r is None:
                continue
            rate = pairs / r["median"]
            per_core = rate / threads
            target = TARGET_PAIRS_PER_CORE.get(bits)
            one = ft_result.get((bits, threads_list[0]))
            speedup = f"{one['median'] / r['median']:.2f}x" if threads != threads_list[0] else "1.00x (ref)"
            t.add(bits, threads, f"{r['first']:.3f}", f"{r['first'] / r['median']:.1f}x",
                  f"{r['median']:.3f} ({min(r['times']):.3f}..{max(r['times']):.3f})",
                  f"{r['median'] / n_q * 1e3:.4f}", fmt_rate(rate), fmt_rate(per_core),
                  fmt_rate(target) if target else "-",
                  f"{per_core / target:.2f}x" if target else "-", speedup, f"{r['others']:.2f} cores")
    if t.rows:
        t.print()
        for bits in bits_list:
            if bits in pack_time:
                same = ft_values[bits].get("_threads_identical")
                print(f"   {bits} bits: ft.pack_codes(bool) of queries + database {pack_time[bits]:.3f} s (one-off); "
                      f"per-query results identical at {threads_list[0]} and {threads_list[-1]} threads: {same}; "
                      f"means {({k: round(v, 6) for k, v in ft_values[bits].get('_mean', {}).items()})}")
    else:
        print("   (fasttie not available)")
    print()

    print("== baselines vs fasttie (ratio = baseline per-query time / fasttie per-query time) ==")
    print("   wall-clock ratios; 'CPU-time ratio' = CPU seconds this process spent per query (all its threads) /"
          f" fasttie's at {threads_list[0]} thread(s): a work ratio that a shared machine distorts less")
    cols = ["method", "bits", "threads", "queries timed", "per-query ms", "pairs/s"]
    cols += [f"ratio vs ft@{th}t" for th in threads_list] + ["target", "meets", "others' CPU"]
    cols += ["CPU ms/query", f"CPU-time ratio vs ft@{threads_list[0]}t"]
    t = Table(cols)
    for bits in bits_list:
        if have_ft:
            for threads in threads_list:
                r = ft_result[bits, threads]
                t.add("fasttie.evaluate (4 metrics)", bits, threads, n_q, f"{r['median'] / n_q * 1e3:.4f}",
                      fmt_rate(pairs / r["median"]),
                      *[f"{ft_result[bits, th]['median'] / r['median']:.2f}x" for th in threads_list], "-", "-",
                      f"{r['others']:.2f} cores", f"{r['cpu'] * 1e3:.4f}",
                      f"{r['cpu'] / ft_result[bits, threads_list[0]]['cpu']:.2f}x")
        for (name, b, threads), (sec, nq_timed, others, cpu) in base.items():
            if b != bits:
                continue
            ratios = []
            for th in threads_list:
                if have_ft and (threads is None or threads == th):
                    ratios.append(f"{sec / (ft_result[bits, th]['median'] / n_q):.1f}x")
                else:
                    ratios.append("-")
            kind = "seed" if name.startswith("seed") else "argsort" if name.startswith("argsort") else "faiss"
            # the brief's targets: seed and argsort vs fasttie at the most threads; faiss at equal threads
            ref_th = threads if threads is not None else threads_list[-1]
            if have_ft:
                ratio = sec / (ft_result[bits, ref_th]["median"] / n_q)
                meets = f"{'yes' if ratio >= TARGET_RATIO[kind] else 'NO'} (@{ref_th}t)"
            else:
                meets = "n/a"
            t.add(name, bits, threads if threads is not None else "numpy", nq_timed, f"{sec * 1e3:.3f}",
                  fmt_rate(n_db / sec), *ratios, f">= {TARGET_RATIO[kind]:g}x", meets, f"{others:.2f} cores",
                  f"{cpu * 1e3:.3f}",
                  f"{cpu / ft_result[bits, threads_list[0]]['cpu']:.1f}x" if have_ft else "-")
    t.print()
    print()
    for line in checks:
        print("   " + line)
    print()

    print(f"== machine load: other processes used {total_load.others:.2f} of {os.cpu_count()} cores on average "
          f"during the measurements; load average now {os.getloadavg()[0]:.2f} ==")
    if total_load.others > 0.25:
        print("   WARNING: the machine was shared; wall times (2-thread runs most) are inflated and the ratios "
              "are noisy. Re-run on an idle machine for publishable numbers.")
    print()
    print("== peak memory (ru_maxrss of this process, monotone) ==")
    inputs = sum(d.query_words.nbytes + d.db_words.nbytes + d.query_labels.nbytes + d.db_labels.nbytes
                 for d in datasets.values())
    print(f"   inputs held for all widths: {inputs / 2**20:.0f} MiB as uint64 words + int64 labels; "
          f"an Nq x Ndb float64 matrix would be {pairs * 8 / 2**30:.1f} GiB")
    for label, mib in rss:
        print(f"   {mib:9.0f} MiB  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
