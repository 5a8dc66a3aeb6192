"""fasttie.alpha_ndcg against pyndeval (ndeval.c) on the same seeded diversity data.

    python scripts/bench_alpha_ndcg.py --quick   # 100 queries (smoke size, ~1 min with pyndeval)
    python scripts/bench_alpha_ndcg.py           # 1,000 queries x 1,000 judged documents x 20 subtopics

Data (``make_diversity_data``, seeded): n_queries x n_docs judged documents x n_subtopics;
document i is relevant to subtopic s with probability ``--density`` (default 0.05: about 64 %
of the documents cover 1-3 subtopics, the others are judged non-relevant); every judged
document is retrieved, with scores rounded to ``--decimals`` decimals so that many tie. alpha = 0.5, k = 20 (ndeval's deepest cutoff).

* fasttie: ``alpha_ndcg(y_true, y_pred, group, k=20, doc_ids=..., ties="pyndeval")`` on the
  (n_queries * n_docs, n_subtopics) 0/1 matrix, at each ``--threads``; the first call in the
  process (compile or numba cache load) is timed on its own, then the median of ``--repeats``.
  ``ties="pyndeval"`` ranks equal scores by document id ascending, as pyndeval does, so the
  values agree per query.
* pyndeval: ``RelevanceEvaluator(qrels, ["alpha-nDCG@20"])`` (builds ndeval's ideal: ndeval's
  greedy runs over every judged document, O(n_docs^2 x subtopics) per query) plus
  ``evaluate(run)``, timed on the first ``--pyndeval-queries`` queries (single-threaded C behind
  a Python loop). Its inputs are the tuples ndeval reads (qid, subtopic, docno, rel): one line
  per relevant (document, subtopic) pair, and one rel-0 line for a judged non-relevant
  document. Building those Python lists is not timed.

The ratio is pyndeval's per-query time / fasttie's per-query time (> 1: fasttie faster);
target (issue): >= 10x. Cross-check: per-query agreement to 1e-9 on the pyndeval queries.
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
sys.path.insert(1, str(SCRIPTS_DIR.parent))  # prefer the checkout's fasttie
sys.path.insert(2, str(SCRIPTS_DIR.parent / "asv_bench"))  # benchmarks.data: seeded data and baselines, shared with asv

from measure import LoadMeter, Table, cpu_model, maxrss_mib, parse_int_list, timed  # noqa: E402
from benchmarks.data.diversity import make_diversity_data, pyndeval_inputs  # noqa: E402

TARGET_RATIO = 10.0
TOLERANCE = 1e-9
K = 20
ALPHA = 0.5


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-queries", type=int, default=1000)
    p.add_argument("--n-docs", type=int, default=1000, help="judged (and retrieved) documents per query")
    p.add_argument("--n-subtopics", type=int, default=20)
    p.add_argument("--density", type=float, default=0.05, help="P(document relevant to a subtopic)")
    p.add_argument("--decimals", type=int, default=1, help="scores rounded to this many decimals (ties)")
    p.add_argument("--threads", default="1,2", help="comma list of fasttie thread counts")
    p.add_argument("--repeats", type=int, default=3, help="warm fasttie calls per setting (median)")
    p.add_argument("--pyndeval-queries", type=int, default=None,
                   help="queries timed for pyndeval (default: all; its cost is per query)")
    p.add_argument("--no-pyndeval", action="store_true")
    p.add_argument("--random-seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="100 queries, all of them for pyndeval")
    args = p.parse_args(argv)
    if args.quick:
        args.n_queries = 100
    argv_shown = sys.argv[1:] if argv is None else argv

    import fasttie
    from fasttie.diversity import alpha_ndcg

    print("command: python scripts/bench_alpha_ndcg.py " + " ".join(shlex.quote(a) for a in argv_shown))
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores; python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print(f"fasttie {getattr(fasttie, '__version__', '?')} from {Path(fasttie.__file__).parent}")
    t0 = time.perf_counter()
    data = make_diversity_data(args.n_queries, args.n_docs, args.n_subtopics, args.density, args.decimals,
                               args.random_seed)
    n_q, n_d = data.n_queries, args.n_docs
    relevant_docs = float(data.y_true.any(axis=1).mean())
    print(f"data: {n_q} queries x {n_d} judged documents x {args.n_subtopics} subtopics (seed "
          f"{args.random_seed}, {time.perf_counter() - t0:.1f} s); density {args.density}: "
          f"{100 * relevant_docs:.0f} % of documents relevant to a subtopic; "
          f"{len(np.unique(data.y_pred[:n_d]))} distinct scores in query 0")
    print(f"metric: alpha-nDCG@{K}, alpha = {ALPHA}, ties by document id ascending (pyndeval's order)")
    print()

    def ft_call(threads):
        return alpha_ndcg(data.y_true, data.y_pred, data.sizes, k=K, alpha=ALPHA, doc_ids=data.doc_ids,
                          ties="pyndeval", n_threads=threads)

    threads = parse_int_list(args.threads)
    t0 = time.perf_counter()
    first = ft_call(threads[0])
    first_s = time.perf_counter() - t0
    rows, results = [], {}
    for th in threads:
        med, times, load = timed(lambda th=th: ft_call(th), args.repeats)
        results[th] = ft_call(th)
        rows.append((th, med, times, load))
    ft_best = min(med for _, med, _, _ in rows)
    identical = all(np.array_equal(results[threads[0]], r) for r in results.values())
    print(f"== fasttie.alpha_ndcg, {n_q} x {n_d} x {args.n_subtopics}, k = {K} ==")
    print(f"   first call in this process (compile or numba cache load, {threads[0]} thread(s)): {first_s:.2f} s")
    t = Table(["threads", "warm s (min..max)", "per-query us", "others' CPU"])
    for th, med, times, load in rows:
        t.add(th, f"{med:.4f} ({min(times):.4f}..{max(times):.4f})", f"{med / n_q * 1e6:.1f}", f"{load.others:.2f}")
    t.print()
    print(f"   per-query results identical across thread counts: {identical}; mean alpha-nDCG@{K} = "
          f"{first.mean():.6f}; max RSS {maxrss_mib():.0f} MiB")
    print()

    if args.no_pyndeval:
        return 0
    try:
        import pyndeval
    except ImportError:
        print("pyndeval not installed (pip install pyndeval): baseline skipped")
        return 0
    n_p = min(args.pyndeval_queries or n_q, n_q)
    qrels, run = pyndeval_inputs(data, n_p)
    with LoadMeter() as load:
        t0 = time.perf_counter()
        evaluator = pyndeval.RelevanceEvaluator(qrels, measures=[f"alpha-nDCG@{K}"], alpha=ALPHA)
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        expected = evaluator.evaluate(run)
        eval_s = time.perf_counter() - t0
    total_s = build_s + eval_s
    got = results[threads[-1]][:n_p]
    want = np.array([expected[f"{q:06d}"][f"alpha-nDCG@{K}"] for q in range(n_p)])
    max_diff = float(np.max(np.abs(got - want)))
    ratio = (total_s / n_p) / (ft_best / n_q)
    print(f"== pyndeval {getattr(pyndeval, '__version__', '')} on the first {n_p} queries ==")
    t = Table(["step", "s", "per-query us", "others' CPU"])
    t.add("RelevanceEvaluator(qrels) (ideal)", f"{build_s:.3f}", f"{build_s / n_p * 1e6:.0f}", f"{load.others:.2f}")
    t.add("evaluate(run)", f"{eval_s:.3f}", f"{eval_s / n_p * 1e6:.0f}", "")
    t.add("total", f"{total_s:.3f}", f"{total_s / n_p * 1e6:.0f}", "")
    t.print()
    print(f"   agreement with fasttie per query: max |diff| = {max_diff:.2e} "
          f"({'OK' if max_diff <= TOLERANCE else 'FAIL'}, tolerance {TOLERANCE:g})")
    print()
    print(f"ratio pyndeval / fasttie per query (fasttie best of {threads}): {ratio:.0f}x "
          f"(target >= {TARGET_RATIO:.0f}x: {'met' if ratio >= TARGET_RATIO else 'NOT met'})")
    return 0 if max_diff <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
