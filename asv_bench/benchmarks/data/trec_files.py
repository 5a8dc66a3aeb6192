"""Seeded qrels and run files for ``trec.evaluate`` (asv's bench_trec and
scripts/bench_trec_eval.py), and pytrec_eval's side of the comparison.

``write_files``: n_queries queries x n_docs retrieved documents each (ids like ``doc01234567``),
in rank order; graded qrels 0..3 for n_judged of each query's retrieved documents plus
n_unretrieved judged documents the run misses. Scores are ``0.8 * grade + N(0, 1)`` rounded to 2
decimals, so about 3 in 4 documents share theirs. ``SHARED``: trec_eval's default measures plus
nDCG@10 as fasttie names them -> pytrec_eval's per-query keys.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

GRADE_P = (0.55, 0.25, 0.12, 0.08)  # grades 0, 1, 2, 3

# trec_eval's default measure set, as fasttie names it (fasttie/cli/common.py TREC_METRICS)
# -> pytrec_eval's per-query key
IPREC = {f"IPrec@{level / 10:.1f}": f"iprec_at_recall_{level / 10:.2f}" for level in range(11)}
# fasttie follows trec_eval 10.0: recall level l starts at relevant item (long)(l * R + 0.5);
# pytrec_eval-terrier bundles an older trec_eval that adds 0.9 instead, so the two differ where
# l * R has a fractional part in [0.1, 0.5) (e.g. R = 59, l = 0.7: item 41 vs 42).
IPREC_NOTE = ("the two trec_eval versions round recall levels differently "
              "(10.0, as fasttie: (long)(l*R + 0.5); pytrec_eval's older copy: (long)(l*R + 0.9))")
P_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
SHARED = {
    "NumQ": "num_q", "NumRet": "num_ret", "NumRel": "num_rel", "NumRelRet": "num_rel_ret",
    "AP": "map", "GMAP": "gm_map", "Rprec": "Rprec", "Bpref": "bpref", "RR": "recip_rank",
    **IPREC, **{f"P@{k}": f"P_{k}" for k in P_CUTOFFS}, "nDCG@10": "ndcg_cut_10",
}
PYTREC_MEASURES = {
    "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "ndcg_cut.10",
}


def write_files(qrels_path: Path, run_path: Path, n_queries: int, n_docs: int, n_judged: int,
                n_unretrieved: int, seed: int = 0) -> None:
    """Seeded qrels and run (see the module docstring), written once to .partial then renamed."""
    rng = np.random.default_rng(seed)
    q_tmp, r_tmp = qrels_path.with_suffix(".partial"), run_path.with_suffix(".partial")
    with open(q_tmp, "w") as fq, open(r_tmp, "w") as fr:
        for q in range(n_queries):
            qid = 100000 + 7 * q
            ids = rng.choice(50_000_000, n_docs + n_unretrieved, replace=False)
            grades = rng.choice(4, n_docs + n_unretrieved, p=GRADE_P)  # hidden grade of every doc
            judged = np.concatenate((rng.choice(n_docs, n_judged, replace=False),
                                     np.arange(n_docs, n_docs + n_unretrieved)))
            scores = np.round(0.8 * grades[:n_docs] + rng.normal(0.0, 1.0, n_docs), 2) + 0.0  # no -0.00
            order = np.argsort(-scores, kind="stable")
            fq.writelines(f"{qid} 0 doc{ids[i]:08d} {grades[i]}\n" for i in np.sort(judged))
            fr.writelines(f"{qid} Q0 doc{ids[i]:08d} {r} {scores[i]:.2f} fasttie_bench\n"
                          for r, i in enumerate(order, start=1))
    q_tmp.replace(qrels_path)
    r_tmp.replace(run_path)


def pytrec_table(pytrec_eval, qrels_path, run_path):
    """Parse + evaluate + means, as pytrec_eval's users do: (means, per-query dict)."""
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)
    names = next(iter(per_query.values())).keys()
    means = {name: pytrec_eval.compute_aggregated_measure(name, [v[name] for v in per_query.values()])
             for name in names}
    return means, per_query
