"""Reading TREC run files: fasttie.trec.read_run against pytrec_eval's reader path.

    python scripts/bench_trec_read.py --lines 1000000          # ~50 MB file, seconds
    python scripts/bench_trec_read.py                          # 10 million lines (~0.5 GB)

A seeded synthetic run (``--queries`` queries, ``--lines / --queries`` documents each, ids like
``msmarco_doc_01234567``, 3-decimal scores with ties, as written by most toolkits) is written
once to ``--dir`` (reused when it exists) and read, in the same process and alternating, by

* fasttie: ``fasttie.trec.read_run(path)`` (columnar arrays, duplicates and numbers checked);
* pytrec_eval: ``with open(path) as f: pytrec_eval.parse_run(f)`` (package pytrec-eval-terrier),
  the reader its users call before ``RelevanceEvaluator.evaluate``: a dict of dicts.

Each is timed ``--repeats`` times after one untimed read that warms the page cache; the best
time is reported with the ratio pytrec_eval / fasttie (> 1: fasttie faster; target >= 2 at 10M
lines). "others" is the CPU (in cores) other processes used meanwhile, from /proc/stat: near 0
means clean timings on a shared machine. ``--qrels`` also times ``read_qrels`` against
``pytrec_eval.parse_qrel`` on a qrels file with 1/10 of the lines.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))  # measure.py
sys.path.insert(1, str(SCRIPTS_DIR.parent))  # the checkout's fasttie

from measure import best_of  # noqa: E402

from fasttie import trec  # noqa: E402


def write_run(path: Path, n_lines: int, n_queries: int, seed: int = 0) -> None:
    """Seeded run file: n_queries queries, n_lines // n_queries documents each, sorted by score."""
    rng = np.random.default_rng(seed)
    per_query = n_lines // n_queries
    tmp = path.with_suffix(".partial")
    with open(tmp, "w") as f:
        for q in range(n_queries):
            docs = rng.choice(50_000_000, per_query, replace=False)
            scores = np.round(rng.normal(10.0, 3.0, per_query), 3)  # about 1 in 10 scores tied
            order = np.argsort(-scores, kind="stable")
            qid = 100000 + 7 * q
            f.writelines(
                f"{qid} Q0 msmarco_doc_{docs[i]:08d} {r} {scores[i]:.3f} fasttie_bench\n"
                for r, i in enumerate(order, start=1)
            )
    tmp.replace(path)


def write_qrels(path: Path, n_lines: int, n_queries: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    per_query = n_lines // n_queries
    tmp = path.with_suffix(".partial")
    with open(tmp, "w") as f:
        for q in range(n_queries):
            docs = rng.choice(50_000_000, per_query, replace=False)
            grades = rng.integers(0, 4, per_query)
            qid = 100000 + 7 * q
            f.writelines(f"{qid} 0 msmarco_doc_{d:08d} {g}\n" for d, g in zip(docs, grades))
    tmp.replace(path)


def compare(label, path, ours, theirs, repeats):
    ours()  # page cache and imports warm
    theirs()
    ours_o, ours_all = [], []
    theirs_o, theirs_all = [], []
    for _ in range(repeats):  # alternate, so both see the same machine load
        t, o, _ = best_of(ours, 1)
        ours_all.append(t)
        ours_o.append(o)
        t, o, _ = best_of(theirs, 1)
        theirs_all.append(t)
        theirs_o.append(o)
    i, j = int(np.argmin(ours_all)), int(np.argmin(theirs_all))
    best_ours, best_theirs = ours_all[i], theirs_all[j]
    size = os.path.getsize(path) / 2**20
    print(f"{label}: {path} ({size:.0f} MiB)")
    print(f"  fasttie.trec   best {best_ours:7.3f} s  (others {ours_o[i]:.2f} cores)  all {', '.join(f'{t:.3f}' for t in ours_all)}")
    print(f"  pytrec_eval    best {best_theirs:7.3f} s  (others {theirs_o[j]:.2f} cores)  all {', '.join(f'{t:.3f}' for t in theirs_all)}")
    print(f"  ratio pytrec_eval / fasttie = {best_theirs / best_ours:.2f}x")
    return best_theirs / best_ours


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lines", type=int, default=10_000_000, help="run lines (default 10 million)")
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "fasttie-bench-trec"),
                   help="where the synthetic files are written and reused")
    p.add_argument("--qrels", action="store_true", help="also time read_qrels vs pytrec_eval.parse_qrel")
    p.add_argument("--no-check", action="store_true", help="skip checking that both readers agree")
    args = p.parse_args(argv)

    try:
        import pytrec_eval
    except ImportError:
        print("pytrec_eval is not installed (pip install pytrec-eval-terrier)", file=sys.stderr)
        return 2

    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    run_path = out / f"run-{args.lines}x{args.queries}.txt"
    if not run_path.exists():
        t = time.perf_counter()
        write_run(run_path, args.lines, args.queries)
        print(f"wrote {run_path} in {time.perf_counter() - t:.1f} s")
    print(f"python {platform.python_version()}, numpy {np.__version__}, pytrec_eval "
          f"{getattr(pytrec_eval, '__version__', '?')}, {os.cpu_count()} CPUs, {platform.machine()}")

    def ours():
        return trec.read_run(run_path)

    def theirs():
        with open(run_path) as f:
            return pytrec_eval.parse_run(f)

    if not args.no_check:
        run = ours()
        if run.to_dict() != theirs():
            print("MISMATCH: fasttie and pytrec_eval read different runs", file=sys.stderr)
            return 1
        print(f"check: both readers give the same {len(run)} (qid, docno, score) rows")
        del run
    compare("read_run vs parse_run", run_path, ours, theirs, args.repeats)

    if args.qrels:
        qrels_path = out / f"qrels-{args.lines // 10}x{args.queries}.txt"
        if not qrels_path.exists():
            write_qrels(qrels_path, args.lines // 10, args.queries)

        def ours_q():
            return trec.read_qrels(qrels_path)

        def theirs_q():
            with open(qrels_path) as f:
                return pytrec_eval.parse_qrel(f)

        if not args.no_check and ours_q().to_dict() != theirs_q():
            print("MISMATCH: fasttie and pytrec_eval read different qrels", file=sys.stderr)
            return 1
        compare("read_qrels vs parse_qrel", qrels_path, ours_q, theirs_q, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
