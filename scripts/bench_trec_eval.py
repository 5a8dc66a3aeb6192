"""``fasttie trec`` against pytrec_eval: parse + evaluate, trec_eval's default measures and more.

    python scripts/bench_trec_eval.py --queries 1000 --cli-lines 1000000   # ~1M-line run, ~1 min
    python scripts/bench_trec_eval.py                                      # 10,000 x 1,000 (10M lines)

Data (seeded, written once to ``--dir`` and reused): ``--queries`` queries x ``--docs``
retrieved documents each (ids like ``doc01234567``), written in rank order as most toolkits do;
graded qrels 0..3 for ``--judged`` of each query's retrieved documents (the others are unjudged)
plus ``--unretrieved`` judged documents the run misses (some relevant: recall < 1). Scores are
``0.8 * grade + N(0, 1)`` rounded to 2 decimals (unjudged documents draw a hidden grade too), so
a 1,000-document query has ~500 distinct scores and about 3 in 4 documents share theirs: the tie
order decides the values, and both sides must break ties as trec_eval does (score descending,
then document id descending; fasttie ``ties="trec"``).

Measures: trec_eval's default set (``num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref
recip_rank iprec_at_recall_* P_5..P_1000``, what ``fasttie trec`` computes without ``-m``) plus
``ndcg_cut_10``, and on fasttie's side also ``rbp`` (``RBP(p=0.9)``; pytrec_eval-terrier has no
RBP) and ``ERR@20`` when fasttie's metric grammar accepts it (pytrec_eval has no ERR). Timed, in
one process, alternating, best of ``--repeats`` (one untimed round first warms the page cache and
numba's compile cache):

* fasttie, all measures: ``fasttie.trec.evaluate(qrels_path, run_path, measures, ties="trec")``
  (parse + join + evaluate + means; all threads);
* fasttie, the shared measures only (what pytrec_eval computes: the like-for-like ratio);
* pytrec_eval: ``parse_qrel`` and ``parse_run`` on the same files, ``RelevanceEvaluator(qrels,
  measures).evaluate(run)`` and the means of its per-query dict with
  ``pytrec_eval.compute_aggregated_measure`` (geometric mean for gm_map, sums for num_*), as its
  users do: the same table. pytrec_eval is single-threaded.

Before any timing, both sides are checked to agree: every shared measure per query (gm_map on
the aggregate) and every mean, within 1e-9. Ratios are pytrec_eval / fasttie (> 1: fasttie
faster; target >= 5x). "others" is the CPU (in cores) other processes used during that call,
from /proc/stat: near 0 means clean timings on a shared machine. Then fasttie's time stage by
stage: ``read_qrels``, ``read_run``, ``align`` (the join) and ``evaluate`` from the records.

``--cli-lines N`` (default 10,000,000; 0 skips) then times the command line ``fasttie trec
QRELS RUN`` (a subprocess, default measures, output discarded: start-up, imports and numba cache
load included) on a run of N lines (N // --docs queries, same generator), and the library call
``trec.evaluate`` with the same measures in this process, as lines/s. A 10M-line run is ~0.4 GB
of text; pytrec_eval's dicts for it take a few GB.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SCRIPTS_DIR = Path(__file__).resolve().parent
REPO = SCRIPTS_DIR.parent
sys.path.insert(0, str(SCRIPTS_DIR))  # measure.py
sys.path.insert(1, str(REPO))  # the checkout's fasttie
sys.path.insert(2, str(SCRIPTS_DIR.parent / "asv_bench"))  # benchmarks.data: seeded data and baselines, shared with asv

import numba  # noqa: E402
from measure import LoadMeter, best_of, cpu_model  # noqa: E402
from benchmarks.data.trec_files import (  # noqa: E402
    GRADE_P, IPREC, IPREC_NOTE, SHARED, pytrec_table, write_files)

import fasttie as ft  # noqa: E402
from fasttie import trec  # noqa: E402

TOLERANCE = 1e-9

FASTTIE_ONLY = ["RBP(p=0.9)"]  # trec_eval's rbp; pytrec_eval-terrier has no RBP


def err_available() -> bool:
    try:
        ft.parse_metrics("ERR@20")
    except ValueError:
        return False
    return True


def data_files(directory: Path, n_queries: int, args) -> tuple[Path, Path]:
    tag = f"{n_queries}x{args.docs}-j{args.judged}-u{args.unretrieved}"
    qrels_path, run_path = directory / f"qrels-{tag}.txt", directory / f"run-{tag}.txt"
    if not (qrels_path.exists() and run_path.exists()):
        t = time.perf_counter()
        write_files(qrels_path, run_path, n_queries, args.docs, args.judged, args.unretrieved)
        print(f"wrote {run_path} and {qrels_path.name} in {time.perf_counter() - t:.1f} s")
    return qrels_path, run_path


def check(result, means, per_query) -> bool:
    """Every shared measure per query (gm_map: its aggregate) and every mean within TOLERANCE."""
    qids = list(result.query_ids)
    if sorted(qids) != sorted(per_query):
        print("MISMATCH: different query sets", file=sys.stderr)
        return False
    worst_q, worst_m = 0.0, 0.0
    ok = True
    n_rel = np.asarray(result.per_query["NumRel"], dtype=np.float64)
    n_convention = 0
    for ours, theirs in SHARED.items():
        if theirs != "gm_map":
            mine = np.asarray(result.per_query[ours], dtype=np.float64)
            other = np.array([per_query[q][theirs] for q in qids])
            if ours in IPREC:  # see IPREC_NOTE: compare where both roundings agree
                level = float(ours.split("@")[1])
                same = np.floor(level * n_rel + 0.5) == np.floor(level * n_rel + 0.9)
                n_convention += int(np.count_nonzero(~same))
                mine, other = mine[same], other[same]
            diff = float(np.max(np.abs(mine - other), initial=0.0))
            worst_q = max(worst_q, diff)
            if diff > TOLERANCE:
                i = int(np.argmax(np.abs(mine - other)))
                print(f"MISMATCH {ours} / {theirs}: query {qids[i]}: fasttie {mine[i]!r}, "
                      f"pytrec_eval {other[i]!r}", file=sys.stderr)
                ok = False
        if ours in IPREC and n_convention:
            continue  # the means include the queries where the conventions differ
        diff = abs(result.mean[ours] - means[theirs])
        worst_m = max(worst_m, diff)
        if diff > TOLERANCE:
            print(f"MISMATCH mean {ours} / {theirs}: fasttie {result.mean[ours]!r}, "
                  f"pytrec_eval {means[theirs]!r}", file=sys.stderr)
            ok = False
    if ok:
        print(f"check: {len(SHARED)} shared measures agree on {len(qids)} queries: max |diff| per "
              f"query {worst_q:.1e}, of the means {worst_m:.1e} (tolerance {TOLERANCE:g}); "
              f"e.g. map {means['map']:.6f}, bpref {means['bpref']:.6f}, "
              f"ndcg_cut_10 {means['ndcg_cut_10']:.6f}, gm_map {means['gm_map']:.6f}")
        if n_convention:
            print(f"  iprec_at_recall: {n_convention} (query, level) pairs of {11 * len(qids)} left out of "
                  f"the check (and the 11 iprec means), where {IPREC_NOTE}")
    return ok


def alternate(candidates, repeats):
    """{label: (best seconds, others during it, all times)}, the candidates called in turn."""
    times = {label: [] for label in candidates}
    others = {label: [] for label in candidates}
    for _ in range(repeats):
        for label, fn in candidates.items():
            t, o, _ = best_of(fn, 1)
            times[label].append(t)
            others[label].append(o)
    out = {}
    for label in candidates:
        i = int(np.argmin(times[label]))
        out[label] = (times[label][i], others[label][i], times[label])
    return out


def stage_times(qrels_path, run_path, measures, repeats):
    """{stage: best_of(...)} of the parts of ``trec.evaluate``: the readers, the join, and the
    evaluation from records (join included)."""
    qrels, run = trec.read_qrels(qrels_path), trec.read_run(run_path)
    stages = {
        "read_qrels": lambda: trec.read_qrels(qrels_path),
        "read_run": lambda: trec.read_run(run_path),
        "align": lambda: trec.align(qrels, run),
        "evaluate from Run/Qrels": lambda: trec.evaluate(qrels, run, measures, ties="trec"),
    }
    return {label: best_of(fn, repeats) for label, fn in stages.items()}


def cli_command():
    exe = Path(sys.executable).with_name("fasttie")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("fasttie")
    return [found] if found else [sys.executable, "-m", "fasttie"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--docs", type=int, default=1000, help="retrieved documents per query")
    p.add_argument("--judged", type=int, default=100, help="judged documents among each query's retrieved")
    p.add_argument("--unretrieved", type=int, default=30, help="judged documents per query the run misses")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cli-lines", type=int, default=10_000_000, help="run lines for the CLI timing (0: skip)")
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "fasttie-bench-trec-eval"),
                   help="where the synthetic files are written and reused")
    args = p.parse_args(argv)

    try:
        import pytrec_eval
    except ImportError:
        print("pytrec_eval is not installed (pip install pytrec-eval-terrier)", file=sys.stderr)
        return 2
    try:
        from importlib.metadata import version
        pytrec_version = version("pytrec-eval-terrier")
    except Exception:  # noqa: BLE001 - metadata missing: only the printout loses
        pytrec_version = "?"

    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    print(f"python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
          f"pytrec_eval-terrier {pytrec_version}, {os.cpu_count()} CPUs ({cpu_model()}), "
          f"{platform.machine()}, FASTTIE_NUM_THREADS={os.environ.get('FASTTIE_NUM_THREADS', 'unset (all usable CPUs)')}")
    qrels_path, run_path = data_files(directory, args.queries, args)
    print(f"data: {args.queries} queries x {args.docs} documents ({os.path.getsize(run_path) / 2**20:.0f} MiB run), "
          f"{args.judged} judged retrieved + {args.unretrieved} judged unretrieved per query, grades 0-3 "
          f"({', '.join(f'{x:.0%}' for x in GRADE_P)}), 2-decimal scores")

    shared = list(SHARED)
    extra = list(FASTTIE_ONLY)
    if err_available():
        extra.append("ERR@20")
        print("ERR@20: accepted by fasttie's grammar, included (fasttie-only work, like RBP)")
    else:
        print("ERR@20: not in fasttie's metric grammar yet, left out")
    everything = shared + extra

    def ours_all():
        return trec.evaluate(qrels_path, run_path, everything, ties="trec")

    def ours_shared():
        return trec.evaluate(qrels_path, run_path, shared, ties="trec")

    def theirs():
        return pytrec_table(pytrec_eval, qrels_path, run_path)

    with LoadMeter() as first:
        result = ours_all()  # compile or numba cache load, page cache
    print(f"first fasttie call (compile / cache load included): {first.wall:.2f} s (others {first.others:.2f})")
    means, per_query = theirs()
    if not check(result, means, per_query):
        return 1
    del result, means, per_query

    labels = {f"fasttie, {len(everything)} measures (+{', '.join(extra)})": ours_all,
              f"fasttie, the {len(shared)} shared measures": ours_shared,
              f"pytrec_eval, the {len(shared)} shared measures": theirs}
    timings = alternate(labels, args.repeats)
    print(f"\nparse + evaluate, best of {args.repeats} (alternating):")
    width = max(map(len, labels))
    for label, (best, others, times) in timings.items():
        print(f"  {label:<{width}}  best {best:7.3f} s  (others {others:.2f} cores)  "
              f"all {', '.join(f'{t:.3f}' for t in times)}")
    (t_all, _, _), (t_shared, _, _), (t_py, _, _) = timings.values()
    print(f"  ratio pytrec_eval / fasttie, same measures       = {t_py / t_shared:.2f}x (target >= 5x)")
    print(f"  ratio pytrec_eval / fasttie with RBP{', ERR' if 'ERR@20' in extra else ''} on top = "
          f"{t_py / t_all:.2f}x")
    staged = stage_times(qrels_path, run_path, shared, args.repeats)
    print("  of fasttie's time (shared measures), stage by stage: "
          + ", ".join(f"{label} {t:.3f} s (others {o:.2f})" for label, (t, o, _) in staged.items())
          + "; evaluate from Run/Qrels includes align")

    if args.cli_lines:
        n_queries = max(1, args.cli_lines // args.docs)
        cli_qrels, cli_run = data_files(directory, n_queries, args)
        n_lines = n_queries * args.docs
        trec_default = [name for name in shared if name != "nDCG@10"]
        command = [*cli_command(), "trec", str(cli_qrels), str(cli_run)]
        print(f"\ncommand line, {n_lines:,} run lines: {' '.join(command)}")

        def cli():
            """Wall seconds, others' CPU without the subprocess's own (LoadMeter counts it as others)."""
            child0 = os.times()
            with LoadMeter() as meter:
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=REPO)
            child1 = os.times()
            child_cpu = (child1.children_user - child0.children_user) + (child1.children_system - child0.children_system)
            return meter.wall, max(0.0, meter.others - child_cpu / meter.wall)

        def library():
            return trec.evaluate(cli_qrels, cli_run, trec_default, ties="trec")  # the CLI's defaults

        cli()  # page cache, numba cache
        library()
        cli_runs, lib_runs = [], []
        for _ in range(args.repeats):  # alternate
            cli_runs.append(cli())
            t, o, _ = best_of(library, 1)
            lib_runs.append((t, o))
        timings = {}
        for label, runs in (("fasttie trec (subprocess)", cli_runs), ("trec.evaluate (this process)", lib_runs)):
            i = min(range(len(runs)), key=lambda j: runs[j][0])
            timings[label] = (runs[i][0], runs[i][1], [t for t, _ in runs])
        for label, (best, others, times) in timings.items():
            print(f"  {label:<29} best {best:7.3f} s  {n_lines / best / 1e6:5.2f} M lines/s  "
                  f"(others {others:.2f} cores)  all {', '.join(f'{t:.3f}' for t in times)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
