"""fasttie.compat.pytrec_eval against pytrec_eval itself, from the dicts BEIR and mteb hand it.

    python scripts/bench_pytrec_compat.py                      # 1,000 queries x 1,000 documents
    python scripts/bench_pytrec_compat.py --queries 5000 --repeats 5

Data (seeded): ``--queries`` queries x ``--docs`` scored documents each as ``{qid: {docid:
score}}``, in no particular order (as a retriever's top-k dict), scores rounded to ``--decimals``
(3: a dense retriever's scores printed to three places, many ties at 1,000 documents); qrels of
10-30 judged documents per query, grades 0..2, some outside the run. Measures: BEIR's
(``map_cut``, ``ndcg_cut``, ``recall``, ``P`` at 1, 3, 5, 10, 100, 1000). Timed in one process,
alternating, best of ``--repeats`` after an untimed round: ``RelevanceEvaluator(qrels,
measures).evaluate(run)`` of pytrec_eval, of fasttie's stand-in with ``ties="trec"`` (checked
equal to pytrec_eval's values, 1e-12, before timing) and with ``ties="average"``. Ratios are
pytrec_eval / fasttie (> 1: fasttie faster).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def make_data(n_queries, n_docs, decimals, seed=0):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        docs = [f"doc{i}" for i in rng.choice(10 * n_docs * 10, n_docs, replace=False)]
        scores = np.round(rng.normal(size=n_docs), decimals)
        run[f"q{q}"] = dict(zip(docs, scores.tolist()))
        judged = rng.choice(docs, rng.integers(10, 31), replace=False).tolist() + [f"gone{q}"]  # str, not np.str_
        qrels[f"q{q}"] = {d: int(rng.integers(0, 3)) for d in judged}
    return qrels, run


def best_of(calls, repeats):
    """Best time of each call, alternating: {name: seconds}."""
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - started)
    return {name: min(values) for name, values in times.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--docs", type=int, default=1000, help="scored documents per query")
    p.add_argument("--decimals", type=int, default=3, help="decimals of the scores (fewer: more ties)")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)

    import pytrec_eval

    import fasttie.compat.pytrec_eval as compat

    qrels, run = make_data(args.queries, args.docs, args.decimals)
    cutoffs = "1,3,5,10,100,1000"
    measures = {f"map_cut.{cutoffs}", f"ndcg_cut.{cutoffs}", f"recall.{cutoffs}", f"P.{cutoffs}"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    ours = compat.RelevanceEvaluator(qrels, measures).evaluate(run)
    worst = max(abs(ours[q][m] - v) for q, values in theirs.items() for m, v in values.items())
    assert set(ours) == set(theirs) and worst <= 1e-12, f"values differ by {worst}"
    calls = {
        "pytrec_eval": lambda: pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run),
        "fasttie trec": lambda: compat.RelevanceEvaluator(qrels, measures).evaluate(run),
        "fasttie average": lambda: compat.RelevanceEvaluator(qrels, measures, ties="average").evaluate(run),
    }
    best_of(calls, 1)  # warm: numba's cache, the allocator
    seconds = best_of(calls, args.repeats)
    print(f"{args.queries} queries x {args.docs} documents ({args.decimals} decimals), {len(measures)} measures "
          f"x 6 cutoffs; values equal to pytrec_eval's (max difference {worst:.1e})")
    for name, value in seconds.items():
        ratio = "" if name == "pytrec_eval" else f"  {seconds['pytrec_eval'] / value:5.2f}x pytrec_eval"
        print(f"{name:<16} {value:7.3f} s{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
