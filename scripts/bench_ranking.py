"""fasttie.rank_evaluate() against ranx and scikit-learn on seeded ranked lists with tied scores.

    python scripts/bench_ranking.py --quick          # 1,000 queries x 1,000 documents (~30 s)
    python scripts/bench_ranking.py                  # 10,000 queries x 1,000 documents (~2-3 min)
    python scripts/bench_ranking.py --labels sparse  # ~5 % relevant documents (IR-like pools)

Data (``make_ranking_data``, seeded): graded labels 0-4 drawn per document with the frequencies
of ``--labels`` (default "mslr": roughly MSLR-WEB30K's 51/33/13/2/1 %); raw scores
``signal * label + N(0, 1)``; the benchmark scores are the raw scores rounded to ``--decimals``
(default 1) decimals, so a 1,000-document query has only ~60 distinct scores and every document
sits in a tie.  The unrounded raw scores are the TIE-FREE variant used for the ranx cross-check.

Everything runs in one process, on the same arrays:

* fasttie: ``ft.rank_evaluate(y_true, y_pred)`` on the 2-D arrays (one query per row) with
  metrics nDCG@10, AP, RR, P@10 in one call, ties="average" (exact expectation over tie orders),
  at each ``--threads``.  The first call in the process (compile or numba cache load) is timed on
  its own, then the median of ``--repeats`` warm calls.  A nDCG@10-only call is timed as well,
  for the like-for-like comparison with scikit-learn (which computes nDCG only).
* ranx ``evaluate(qrels, run, ["ndcg@10", "map", "mrr", "precision@10"], threads=t)``: numba,
  NOT tie-aware (ties fall in whatever order its argsort leaves them).  Its numba functions are
  compiled (or loaded from ranx's cache) by a warm-up on the first 20 queries before anything is
  timed.  ``Qrels.from_dict`` / ``Run.from_dict`` construction (from Python dicts built from the
  arrays; ``from_df`` goes through the same dicts and is slower) is timed separately from the
  evaluation; the ratio that counts is evaluation only.  ranx's ``evaluate`` converts its typed
  dicts to typed lists on every call (hashing 10 M document ids); that conversion is part of the
  timed evaluation, as a user pays it.  A second row times ``evaluate`` on typed lists converted
  beforehand: ranx's metric kernels alone, its most favourable case.
* scikit-learn ``ndcg_score(y_true, y_score, k=10)`` (ignore_ties=False: tie-averaged, the same
  value as fasttie's) on the first ``--sklearn-queries`` rows; numpy, single-threaded.

Ratios are per-query time of the baseline / per-query time of fasttie (> 1: fasttie faster);
targets (issue 3): ranx >= 3x and scikit-learn >= 50x, with fasttie and ranx at 2 threads.
Cross-checks: on the tie-free scores fasttie and ranx agree per query to 1e-9 on all four
metrics; on the tied scores fasttie's nDCG@10 equals scikit-learn's per query to 1e-9.
Each timed block reports "others' CPU" (cores used by other processes, /proc/stat): on a shared
2-core machine wall times, 2-thread ones most, are inflated when it is not ~0.
ranx's cost per query grows with the number of relevant documents R (its hit list scans the
relevant documents for each ranked document: O(n R) for MAP and MRR), fasttie's does not:
``--labels sparse`` shows the other end.
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

from measure import LoadMeter, Table, cpu_model, maxrss_mib, parse_int_list, timed  # noqa: E402
from benchmarks.data.ranking import (  # noqa: E402
    LABEL_PRESETS, METRICS, RANX_NAMES, make_ranking_data, ranx_objects)

TARGET_RATIO = {"ranx": 3.0, "sklearn": 50.0}
TOLERANCE = 1e-9
def ranx_per_query(qrels, run, threads):
    """ranx per-query values keyed by fasttie's names (query order = row order)."""
    from ranx import evaluate

    out = evaluate(qrels, run, [RANX_NAMES[m] for m in METRICS], return_mean=False, threads=threads,
                   save_results_in_run=False)
    return {m: np.asarray(out[RANX_NAMES[m]], dtype=np.float64) for m in METRICS}


def tie_stats(y_pred, n_rows=200):
    """Mean distinct scores per query, mean size of the tie a document sits in, share of
    documents tied with at least one other (first n_rows queries)."""
    distinct, tie_size, tied = [], [], []
    for row in y_pred[:n_rows]:
        _, counts = np.unique(row, return_counts=True)
        distinct.append(len(counts))
        tie_size.append(float((counts * counts).sum() / counts.sum()))
        tied.append(float(counts[counts > 1].sum() / counts.sum()))
    return float(np.mean(distinct)), float(np.mean(tie_size)), float(np.mean(tied))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-queries", type=int, default=10_000)
    p.add_argument("--n-docs", type=int, default=1000)
    p.add_argument("--labels", default="mslr", choices=sorted(LABEL_PRESETS), help="label 0-4 frequencies")
    p.add_argument("--label-probs", default=None, help="comma list of label frequencies (overrides --labels)")
    p.add_argument("--decimals", type=int, default=1, help="scores rounded to this many decimals (ties)")
    p.add_argument("--signal", type=float, default=0.5, help="score = signal * label + N(0, 1)")
    p.add_argument("--threads", default="1,2", help="comma list of thread counts (fasttie and ranx)")
    p.add_argument("--repeats", type=int, default=3, help="warm fasttie calls per setting (median)")
    p.add_argument("--ranx-repeats", type=int, default=3, help="ranx evaluate calls per setting (median)")
    p.add_argument("--sklearn-queries", type=int, default=None, help="rows timed for scikit-learn (default all)")
    p.add_argument("--sklearn-repeats", type=int, default=3)
    p.add_argument("--check-queries", type=int, default=2000,
                   help="queries of the tie-free fasttie-vs-ranx cross-check (own Qrels/Run objects)")
    p.add_argument("--no-ranx", action="store_true")
    p.add_argument("--no-sklearn", action="store_true")
    p.add_argument("--no-ndcg-only", action="store_true", help="skip the fasttie nDCG@10-only timing")
    p.add_argument("--random-seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="1,000 queries, check on 500")
    args = p.parse_args(argv)
    if args.quick:
        if args.n_queries == 10_000:
            args.n_queries = 1000
        if args.check_queries == 2000:
            args.check_queries = 500
    threads_list = parse_int_list(args.threads)
    th_lo, th_hi = threads_list[0], threads_list[-1]
    probs = (tuple(float(x) for x in args.label_probs.split(",")) if args.label_probs
             else LABEL_PRESETS[args.labels])
    n_q, n_d = args.n_queries, args.n_docs
    n_sk = min(args.sklearn_queries or n_q, n_q)
    n_check = min(args.check_queries, n_q)

    argv_shown = sys.argv[1:] if argv is None else argv
    print("command: python scripts/bench_ranking.py " + " ".join(shlex.quote(a) for a in argv_shown))
    import numba

    import fasttie as ft
    from fasttie.parallel import available_threads

    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores; python {platform.python_version()}, "
          f"numpy {np.__version__}, numba {numba.__version__}, fasttie threads per call {available_threads()}")
    print(f"fasttie {getattr(ft, '__version__', '?')} from {Path(ft.__file__).parent}; "
          f"NUMBA_CACHE_DIR={os.environ.get('NUMBA_CACHE_DIR', '(default)')}")
    ranx = sklearn = None
    if not args.no_ranx:
        t0 = time.perf_counter()
        try:
            from importlib.metadata import version

            import ranx

            print(f"ranx {version('ranx')} (import {time.perf_counter() - t0:.1f} s)")
        except ImportError:
            print("ranx not installed (pip install ranx): ranx rows skipped")
    if not args.no_sklearn:
        try:
            import sklearn
            from sklearn.metrics import ndcg_score

            print(f"scikit-learn {sklearn.__version__}")
        except ImportError:
            print("scikit-learn not installed: scikit-learn rows skipped")

    t0 = time.perf_counter()
    data = make_ranking_data(n_q, n_d, probs, args.decimals, args.signal, args.random_seed)
    gen_s = time.perf_counter() - t0
    distinct, tie_size, tied_share = tie_stats(data.y_pred)
    n_rel = (data.y_true >= 1).sum(axis=1)
    print(f"data: {n_q} queries x {n_d} documents (seed {args.random_seed}, {gen_s:.1f} s); labels 0-4 with "
          f"frequencies {probs} ('{'custom' if args.label_probs else args.labels}'): relevant (>= 1) per query "
          f"mean {n_rel.mean():.1f} (min {n_rel.min()}, max {n_rel.max()}), queries without any: "
          f"{int((n_rel == 0).sum())}")
    print(f"      scores = {args.signal} * label + N(0,1) rounded to {args.decimals} decimal(s): "
          f"{distinct:.1f} distinct scores per query, a document's tie holds {tie_size:.1f} documents on average, "
          f"{100 * tied_share:.1f} % of documents tied (first 200 queries)")
    print(f"metrics: fasttie {METRICS} (ties='average', gain='linear', ap_denominator='total'); "
          f"ranx {[RANX_NAMES[m] for m in METRICS]}")
    print()

    rss = [("start (imports, data)", maxrss_mib())]
    total_load = LoadMeter().__enter__()

    # ---------------- fasttie ----------------
    def ft_call(threads, metrics=METRICS, y_pred=data.y_pred):
        return ft.rank_evaluate(data.y_true, y_pred, metrics=metrics, n_threads=threads)

    t0 = time.perf_counter()
    ft_call(th_lo)
    ft_first = time.perf_counter() - t0
    ft_res = {}  # (label, threads) -> (median, times, load)
    ft_values = {}
    for threads in threads_list:
        ft_values[threads] = ft_call(threads).per_query  # also the warm-up at this thread count
        ft_res["4 metrics", threads] = timed(lambda threads=threads: ft_call(threads), args.repeats)
    if not args.no_ndcg_only:
        ft_call(th_lo, ("nDCG@10",))
        for threads in threads_list:
            ft_res["nDCG@10 only", threads] = timed(lambda threads=threads: ft_call(threads, ("nDCG@10",)),
                                                    args.repeats)
    identical = all(np.array_equal(ft_values[th_lo][m], ft_values[th_hi][m]) for m in METRICS)
    ft_mean = {m: float(np.mean(ft_values[th_hi][m])) for m in METRICS}
    rss.append(("after fasttie", maxrss_mib()))

    # ---------------- ranx ----------------
    ranx_res = {}  # (label, threads) -> (median, times, load)
    ranx_info = {}
    checks = []
    if ranx is not None:
        from ranx import evaluate as ranx_evaluate

        names = [RANX_NAMES[m] for m in METRICS]
        # warm-up: compile (or load from ranx's numba cache) construction, conversion and metrics
        t0 = time.perf_counter()
        n_w = min(20, n_q)
        wq, wr, *_ = ranx_objects(data.y_true[:n_w], data.y_pred[:n_w])
        for threads in threads_list:
            ranx_evaluate(wq, wr, names, threads=threads)
            ranx_evaluate(wq.to_typed_list(), wr.to_typed_list(), names, threads=threads)
        ranx_info["warm-up"] = time.perf_counter() - t0

        qrels, run, s_dicts, s_qrels, s_run = ranx_objects(data.y_true, data.y_pred)
        ranx_info.update({"dicts": s_dicts, "Qrels.from_dict": s_qrels, "Run.from_dict": s_run})
        rss.append(("after ranx Qrels/Run construction", maxrss_mib()))
        for threads in threads_list:
            ranx_evaluate(qrels, run, names, threads=threads)  # warm at this thread count (pool, pages)
            ranx_res["evaluate(Qrels, Run)", threads] = timed(
                lambda threads=threads: ranx_evaluate(qrels, run, names, threads=threads), args.ranx_repeats)
        t0 = time.perf_counter()
        tq, tr = qrels.to_typed_list(), run.to_typed_list()
        ranx_info["to_typed_list"] = time.perf_counter() - t0
        for threads in threads_list:
            ranx_evaluate(tq, tr, names, threads=threads)
            ranx_res["kernels only (typed lists)", threads] = timed(
                lambda threads=threads: ranx_evaluate(tq, tr, names, threads=threads), args.ranx_repeats)
        ranx_tied = ranx_per_query(tq, tr, th_hi)
        ranx_info["mean"] = {m: float(np.mean(ranx_tied[m])) for m in METRICS}
        del tq, tr, qrels, run
        rss.append(("after ranx evaluate", maxrss_mib()))

        # cross-check on tie-free scores, own (smaller) Qrels / Run
        yd = data.y_pred_distinct[:n_check]
        dup_rows = int((np.diff(np.sort(yd, axis=1), axis=1) == 0).any(axis=1).sum())
        cq, cr, *_ = ranx_objects(data.y_true[:n_check], yd)
        rx = ranx_per_query(cq, cr, th_hi)
        fx = ft.rank_evaluate(data.y_true[:n_check], yd, metrics=METRICS, n_threads=th_hi).per_query
        diffs = {m: float(np.max(np.abs(rx[m] - fx[m]))) for m in METRICS}
        ok = all(d <= TOLERANCE for d in diffs.values())
        checks.append(f"TIE-FREE scores, first {n_check} queries ({dup_rows} rows with a repeated score): "
                      f"max |fasttie - ranx| per query: "
                      + ", ".join(f"{m} {d:.2e}" for m, d in diffs.items())
                      + f"  -> {'PASS' if ok else 'FAIL'} (<= {TOLERANCE:g})")
        for m in METRICS:
            checks.append(f"   tie-free means {m:8s} fasttie {np.mean(fx[m]):.12f}  ranx {np.mean(rx[m]):.12f}")
        tied_diff = {m: ft_mean[m] - ranx_info["mean"][m] for m in METRICS}
        checks.append("TIED scores, all queries (ranx is not tie-aware: one arbitrary order per tie): mean fasttie "
                      "- mean ranx: " + ", ".join(f"{m} {d:+.2e}" for m, d in tied_diff.items()))
        del cq, cr

    # ---------------- scikit-learn ----------------
    sk_res = None
    if sklearn is not None:
        ndcg_score(data.y_true[:10], data.y_pred[:10], k=10)  # warm-up
        sk_value = [None]

        def sk_call():
            sk_value[0] = ndcg_score(data.y_true[:n_sk], data.y_pred[:n_sk], k=10)

        sk_res = timed(sk_call, args.sklearn_repeats)
        ft_ndcg = ft_values[th_hi]["nDCG@10"][:n_sk]
        d_mean = abs(sk_value[0] - float(np.mean(ft_ndcg)))
        line = (f"TIED scores, first {n_sk} queries: scikit-learn ndcg_score(k=10) {sk_value[0]:.15f} vs fasttie "
                f"mean nDCG@10 {np.mean(ft_ndcg):.15f}: |diff| {d_mean:.2e}")
        try:  # per query (a private helper of scikit-learn; the mean above is the public value)
            from sklearn.metrics._ranking import _ndcg_sample_scores

            per_q = _ndcg_sample_scores(data.y_true[:n_sk], data.y_pred[:n_sk], k=10, ignore_ties=False)
            d_max = float(np.max(np.abs(per_q - ft_ndcg)))
            line += f"; max per-query |diff| {d_max:.2e}"
        except ImportError:
            d_max = d_mean
            line += "; (per-query helper not available: mean only)"
        checks.append(line + f"  -> {'PASS' if max(d_mean, d_max) <= TOLERANCE else 'FAIL'} (<= {TOLERANCE:g})")
    rss.append(("after scikit-learn", maxrss_mib()))
    # drift check on a shared machine: fasttie again, after the baselines
    ft_again = {th: timed(lambda th=th: ft_call(th), args.repeats) for th in threads_list}
    total_load.__exit__(None, None, None)

    # ---------------- report ----------------
    us = 1e6
    print(f"== fasttie.rank_evaluate, {n_q} x {n_d} ({n_q * n_d / 1e6:.0f} M ranked rows) ==")
    print(f"   first call in this process (compile or numba cache load, {th_lo} thread(s), 4 metrics): "
          f"{ft_first:.3f} s; then median of {args.repeats} warm calls")
    t = Table(["call", "threads", "warm s (min..max)", "per-query us", "ns per row", f"speed-up vs {th_lo}t",
               "CPU us/query", "others' CPU"])
    for (label, threads), (med, times, load) in ft_res.items():
        ref = ft_res[label, th_lo][0]
        t.add(label, threads, f"{med:.3f} ({min(times):.3f}..{max(times):.3f})", f"{med / n_q * us:.1f}",
              f"{med / (n_q * n_d) * 1e9:.1f}", f"{ref / med:.2f}x", f"{load.cpu / len(times) / n_q * us:.1f}",
              f"{load.others:.2f} cores")
    t.print()
    print(f"   per-query results identical at {th_lo} and {th_hi} threads: {identical}; means "
          f"{ {m: round(v, 6) for m, v in ft_mean.items()} }")
    print("   drift check, 4 metrics re-timed after the baselines (not used in the ratios): "
          + ", ".join(f"{th}t {med:.3f} s (others' CPU {load.others:.2f})" for th, (med, _, load) in ft_again.items()))
    print()

    if ranx is not None:
        print("== ranx (one-off costs, not in the ratio) ==")
        print(f"   warm-up (compile / cache load, 20 queries, all paths): {ranx_info['warm-up']:.2f} s")
        cons = ranx_info["dicts"] + ranx_info["Qrels.from_dict"] + ranx_info["Run.from_dict"]
        print(f"   construction on the full data: python dicts {ranx_info['dicts']:.2f} s + Qrels.from_dict "
              f"{ranx_info['Qrels.from_dict']:.2f} s + Run.from_dict {ranx_info['Run.from_dict']:.2f} s = "
              f"{cons:.2f} s ({cons / n_q * us:.0f} us/query)")
        print(f"   to_typed_list() of both (done inside every evaluate(Qrels, Run)): "
              f"{ranx_info['to_typed_list']:.2f} s")
        print()

    print("== baselines vs fasttie (ratio = baseline per-query time / fasttie 4-metric per-query time) ==")
    cols = ["baseline", "threads", "queries", "warm s (min..max)", "per-query us"]
    cols += [f"ratio vs ft@{th}t" for th in threads_list] + ["target", "meets", "others' CPU"]
    t = Table(cols)
    ft_pq = {th: ft_res["4 metrics", th][0] / n_q for th in threads_list}
    verdicts = []
    for (label, threads), (med, times, load) in ranx_res.items():
        pq = med / n_q
        counts = label.startswith("evaluate")
        target, meets = "-", "-"
        if threads == th_hi:
            ratio = pq / ft_pq[th_hi]
            target = f">= {TARGET_RATIO['ranx']:g}x" + ("" if counts else " (info)")
            meets = f"{'yes' if ratio >= TARGET_RATIO['ranx'] else 'NO'} (@{th_hi}t)"
            if counts:
                met = "MET" if ratio >= TARGET_RATIO["ranx"] else "NOT MET"
                verdicts.append(f"ranx evaluate vs fasttie, both at {th_hi} threads: {ratio:.2f}x, target "
                                f">= {TARGET_RATIO['ranx']:g}x: {met}")
            else:
                verdicts.append(f"(ranx kernels only, typed lists prepared beforehand, at {th_hi} threads: "
                                f"{ratio:.2f}x)")
        t.add(f"ranx {label}", threads, n_q, f"{med:.3f} ({min(times):.3f}..{max(times):.3f})",
              f"{pq * us:.1f}", *[f"{pq / ft_pq[th]:.2f}x" for th in threads_list], target, meets,
              f"{load.others:.2f} cores")
    if ranx is not None:
        cons = ranx_info["dicts"] + ranx_info["Qrels.from_dict"] + ranx_info["Run.from_dict"]
        t.add("ranx construction (dicts + from_dict)", "-", n_q, f"{cons:.3f}", f"{cons / n_q * us:.1f}",
              *[f"{cons / n_q / ft_pq[th]:.2f}x" for th in threads_list], "(info)", "-", "-")
    if sk_res is not None:
        med, times, load = sk_res
        pq = med / n_sk
        ratio = pq / ft_pq[th_hi]
        t.add("scikit-learn ndcg_score(k=10)", "numpy", n_sk, f"{med:.3f} ({min(times):.3f}..{max(times):.3f})",
              f"{pq * us:.1f}", *[f"{pq / ft_pq[th]:.2f}x" for th in threads_list],
              f">= {TARGET_RATIO['sklearn']:g}x", f"{'yes' if ratio >= TARGET_RATIO['sklearn'] else 'NO'} (@{th_hi}t)",
              f"{load.others:.2f} cores")
        verdicts.append(f"scikit-learn ndcg_score vs fasttie (4 metrics) at {th_hi} threads: {ratio:.2f}x, target "
                        f">= {TARGET_RATIO['sklearn']:g}x: {'MET' if ratio >= TARGET_RATIO['sklearn'] else 'NOT MET'}")
        if ("nDCG@10 only", th_hi) in ft_res:
            r1 = pq / (ft_res["nDCG@10 only", th_hi][0] / n_q)
            r0 = pq / (ft_res["nDCG@10 only", th_lo][0] / n_q)
            verdicts.append(f"(like for like, fasttie nDCG@10 only: {r1:.2f}x at {th_hi} threads, {r0:.2f}x at "
                            f"{th_lo} thread(s))")
    if t.rows:
        t.print()
    print()
    for line in verdicts:
        print("   " + line)
    print()
    print("== agreement checks ==")
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
    inputs = data.y_true.nbytes + data.y_pred.nbytes + data.y_pred_distinct.nbytes
    print(f"   inputs: 3 float64 arrays of {n_q} x {n_d}: {inputs / 2**20:.0f} MiB")
    for label, mib in rss:
        print(f"   {mib:9.0f} MiB  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
