"""fasttie.lambdarank() against a straightforward numpy implementation and LightGBM's objective.

    python scripts/bench_lambdarank.py --quick       # 1,000 queries x 100 documents (~20 s)
    python scripts/bench_lambdarank.py               # 10,000 queries x 100 documents

Data (``make_lambdarank_data``, seeded): labels 0-4 with MSLR-WEB30K-like frequencies
(51/33/13/2/1 %), scores ``0.5 * label + N(0, 1)`` (distinct), one query per row.

Everything runs in one process, on the same arrays:

* fasttie: ``lambdarank(y_true, y_pred)`` with the defaults (Burges: every pair, exp2 gain) at
  each ``--threads``; the first call (compile or cache load) is timed on its own, then the
  median of ``--repeats`` warm calls.  Also timed with LightGBM's defaults (``k=30,
  damp_score_gap=True, rescale=True``).
* numpy: ``numpy_lambdarank`` below, the textbook vectorisation (one n x n matrix per quantity
  per query, as seed 003 does in torch, with the correct positions) on the first
  ``--numpy-queries`` queries.  Target: fasttie >= 50x faster per query.
* LightGBM (if installed): one boosting round (``lgb.train(num_boost_round=1)``, 10 random
  features, ``init_score`` = the scores) with (a) its built-in ``lambdarank`` objective
  (truncation 30, lambdarank_norm), (b) fasttie as the custom objective with the same settings,
  (c) a custom objective that returns precomputed arrays (the round without any gradient work).
  LightGBM's own gradient time is estimated as (a) - (c); the report gives it beside fasttie's
  call time, plus the whole-round ratio (a) / (b).

Ratios are baseline time / fasttie time (> 1: fasttie faster). Agreement: max |fasttie - numpy|
per document on the numpy queries, and max |(a) - (b)| of the raw scores after the round
(LightGBM's logistic is a table and its gradients float32: ~1e-5 expected).
Each timed block reports "others' CPU" (cores used by other processes, /proc/stat): on a shared
2-core machine wall times, 2-thread ones most, are inflated when it is not ~0.
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
sys.path.insert(1, str(SCRIPTS_DIR.parent))  # prefer the checkout's fasttie over an installed copy
sys.path.insert(2, str(SCRIPTS_DIR.parent / "asv_bench"))  # benchmarks.data: seeded data and baselines, shared with asv

from measure import Table, cpu_model, maxrss_mib, parse_int_list, timed  # noqa: E402
from benchmarks.data.lambdarank import (  # noqa: E402
    LABEL_PROBS, LGB_SETTINGS, make_lambdarank_data, numpy_lambdarank)

TARGET_NUMPY = 50.0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-queries", type=int, default=10_000)
    p.add_argument("--n-docs", type=int, default=100)
    p.add_argument("--threads", default="1,2", help="comma list of thread counts")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--numpy-queries", type=int, default=1000, help="queries timed for the numpy baseline")
    p.add_argument("--lgb-repeats", type=int, default=3)
    p.add_argument("--no-lightgbm", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="1,000 queries, numpy on 200")
    args = p.parse_args(argv)
    if args.quick:
        args.n_queries = min(args.n_queries, 1000)
        args.numpy_queries = min(args.numpy_queries, 200)
    threads_list = parse_int_list(args.threads)
    th_lo, th_hi = threads_list[0], threads_list[-1]
    n_q, n_d = args.n_queries, args.n_docs
    n_np = min(args.numpy_queries, n_q)

    import numba

    from fasttie.lists.lambdarank import lambdarank
    from fasttie.parallel import available_threads

    argv_shown = sys.argv[1:] if argv is None else argv
    print("command: python scripts/bench_lambdarank.py " + " ".join(shlex.quote(a) for a in argv_shown))
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores; python {platform.python_version()}, "
          f"numpy {np.__version__}, numba {numba.__version__}, fasttie threads per call {available_threads()}")
    y_true, y_pred = make_lambdarank_data(n_q, n_d, args.seed)
    pairs = int(((y_true[:, :, None] > y_true[:, None, :]).sum(axis=(1, 2))).sum()) if n_q * n_d <= 2_000_000 else -1
    print(f"data: {n_q} queries x {n_d} documents (seed {args.seed}), labels 0-4 with frequencies {LABEL_PROBS}, "
          f"scores 0.5 * label + N(0, 1); pairs with different labels: {pairs:,}")
    print()

    # ---------------- fasttie ----------------
    t0 = time.perf_counter()
    lambdarank(y_true[:2], y_pred[:2], n_threads=th_lo)
    first = time.perf_counter() - t0
    results = {}
    values = {}
    for label, kwargs in (("Burges defaults (all pairs)", {}), ("LightGBM settings (k=30, norm)", LGB_SETTINGS)):
        for th in threads_list:
            values[label, th] = lambdarank(y_true, y_pred, n_threads=th, **kwargs)  # warm-up at this count
            results[label, th] = timed(lambda th=th, kw=kwargs: lambdarank(y_true, y_pred, n_threads=th, **kw),
                                       args.repeats)
    identical = all(np.array_equal(values[lab, th_lo][i], values[lab, th_hi][i])
                    for lab in ("Burges defaults (all pairs)", "LightGBM settings (k=30, norm)") for i in (0, 1))

    # ---------------- numpy ----------------
    numpy_lambdarank(y_true[:2], y_pred[:2])
    np_res = timed(lambda: numpy_lambdarank(y_true[:n_np], y_pred[:n_np]), 1)
    ref_l, ref_h = numpy_lambdarank(y_true[:n_np], y_pred[:n_np])
    ft_l, ft_h = values["Burges defaults (all pairs)", th_hi]
    diff_l = float(np.max(np.abs(ft_l[:n_np] - ref_l)))
    diff_h = float(np.max(np.abs(ft_h[:n_np] - ref_h)))

    # ---------------- LightGBM ----------------
    lgb_lines = []
    if not args.no_lightgbm:
        try:
            import lightgbm as lgb
        except ImportError:
            lgb = None
            lgb_lines.append("LightGBM not installed (pip install lightgbm): skipped")
        if lgb is not None:
            rng = np.random.default_rng(args.seed + 1)
            x = rng.standard_normal((n_q * n_d, 10))
            sizes = np.full(n_q, n_d)
            labels_flat = y_true.ravel().astype(np.float64)
            init = y_pred.ravel()
            dataset = lgb.Dataset(x, labels_flat, group=sizes, init_score=init, free_raw_data=False,
                                  params={"verbose": -1})
            dataset.construct()
            params = {"learning_rate": 0.1, "num_leaves": 31, "verbose": -1, "num_threads": th_hi,
                      "lambdarank_truncation_level": LGB_SETTINGS["k"], "lambdarank_norm": True, "seed": 0}
            grads = lambdarank(y_true, y_pred, n_threads=th_hi, **LGB_SETTINGS)
            flat_grads = (grads[0].ravel(), grads[1].ravel())

            def fasttie_objective(preds, data):
                lam, hes = lambdarank(labels_flat, preds, sizes, n_threads=th_hi, **LGB_SETTINGS)
                return lam, hes

            def precomputed_objective(preds, data):
                return flat_grads

            def one_round(objective):
                booster = lgb.train({**params, "objective": objective}, dataset, num_boost_round=1)
                return booster

            for objective in ("lambdarank", fasttie_objective, precomputed_objective):
                one_round(objective)  # warm-up
            t_builtin = timed(lambda: one_round("lambdarank"), args.lgb_repeats)
            t_fasttie = timed(lambda: one_round(fasttie_objective), args.lgb_repeats)
            t_pre = timed(lambda: one_round(precomputed_objective), args.lgb_repeats)
            ft_lgb_call = results["LightGBM settings (k=30, norm)", th_hi][0]
            pred_a = one_round("lambdarank").predict(x, raw_score=True)
            pred_b = one_round(fasttie_objective).predict(x, raw_score=True)
            lgb_objective = t_builtin[0] - t_pre[0]
            t = Table(["one boosting round", "threads", "median s (min..max)", "others' CPU"])
            for name, (med, times, load) in (("(a) built-in lambdarank", t_builtin),
                                              ("(b) fasttie custom objective", t_fasttie),
                                              ("(c) precomputed gradients", t_pre)):
                t.add(name, th_hi, f"{med:.3f} ({min(times):.3f}..{max(times):.3f})", f"{load.others:.2f} cores")
            lgb_lines.append(t)
            lgb_lines.append(f"LightGBM's gradients, estimated (a) - (c): {lgb_objective:.4f} s; fasttie lambdarank "
                             f"call (same settings, {th_hi} threads): {ft_lgb_call:.4f} s -> ratio "
                             f"{lgb_objective / ft_lgb_call:.2f}x")
            lgb_lines.append(f"whole round, built-in / fasttie objective: {t_builtin[0] / t_fasttie[0]:.2f}x "
                             f"(the custom path also copies arrays through Python)")
            lgb_lines.append(f"agreement after one round: max |raw score (a) - (b)| = "
                             f"{float(np.max(np.abs(pred_a - pred_b))):.2e} (table logistic, float32 in LightGBM)")

    # ---------------- report ----------------
    us = 1e6
    print(f"== fasttie.lambdarank, {n_q} x {n_d} ==")
    print(f"   first call in this process (compile or numba cache load): {first:.3f} s")
    t = Table(["call", "threads", "median s (min..max)", "per-query us", f"speed-up vs {th_lo}t", "others' CPU"])
    for (label, th), (med, times, load) in results.items():
        ref = results[label, th_lo][0]
        t.add(label, th, f"{med:.4f} ({min(times):.4f}..{max(times):.4f})", f"{med / n_q * us:.2f}",
              f"{ref / med:.2f}x", f"{load.others:.2f} cores")
    t.print()
    print(f"   results identical at {th_lo} and {th_hi} threads: {identical}")
    print()
    print("== numpy baseline (n x n matrices per query), same data ==")
    med, times, load = np_res
    np_pq = med / n_np
    t = Table(["baseline", "queries", "s", "per-query us"] + [f"ratio vs ft@{th}t" for th in threads_list]
              + ["target", "others' CPU"])
    t.add("numpy_lambdarank", n_np, f"{med:.3f}", f"{np_pq * us:.1f}",
          *[f"{np_pq / (results['Burges defaults (all pairs)', th][0] / n_q):.1f}x" for th in threads_list],
          f">= {TARGET_NUMPY:g}x", f"{load.others:.2f} cores")
    t.print()
    ratio = np_pq / (results["Burges defaults (all pairs)", th_hi][0] / n_q)
    print(f"   numpy vs fasttie at {th_hi} threads: {ratio:.1f}x, target >= {TARGET_NUMPY:g}x: "
          f"{'MET' if ratio >= TARGET_NUMPY else 'NOT MET'}")
    print(f"   agreement on {n_np} queries: max |lambda diff| {diff_l:.2e}, max |hessian diff| {diff_h:.2e}")
    print()
    if lgb_lines:
        print(f"== LightGBM {getattr(sys.modules.get('lightgbm'), '__version__', '')}: one boosting round on the same "
              f"queries (10 random features, init_score = scores) ==")
        for line in lgb_lines:
            if isinstance(line, Table):
                line.print()
            else:
                print("   " + line)
        print()
    print(f"== peak memory (ru_maxrss): {maxrss_mib():.0f} MiB; inputs {(y_true.nbytes + y_pred.nbytes) / 2**20:.0f} "
          f"MiB; load average now {os.getloadavg()[0]:.2f} ==")
    return 0


if __name__ == "__main__":
    sys.exit(main())
