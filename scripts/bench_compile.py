"""First-call cost of every front door: cold (empty numba cache) and warm (from the cache).

    python scripts/bench_compile.py [--repeat N] [--asm] [--skip-demo] [--doors DOOR ...]
    python scripts/bench_compile.py --cuda [--repeat N]    # the device="cuda" doors (needs a GPU)

Each measurement runs in a fresh Python process with its own ``NUMBA_CACHE_DIR``:

1. per front door, cold: an empty cache, ``import fasttie`` and one first call on tiny data
   (wall seconds and CPU seconds of the call, compile included);
2. per front door, warm: a second fresh process on that cache; the first call's time over the
   same call repeated in that process (what loading the cache adds), also in a process that
   imported scipy.linalg before (numba's CPU target imports it on first use where scipy is
   installed: 0.2 s that a process using scipy or scikit-learn has already paid), and in one
   where scipy cannot be imported, as on the README's install (numpy, numba and tqdm only);
3. all 13 call variants (front doors x tie modes) cold, one after the other in one process;
4. the README's first command, ``fasttie demo``, cold and warm (whole process wall time).

Wall times on a 2-core machine shared with other work are noisy: ``--repeat`` takes the
minimum of N runs. ``--asm`` compiles once more without a cache and counts ``popcnt`` /
``vpopcnt`` / ``vpternlog`` (the bit-sliced pass's carry-save adders) in every kernel's
assembly (``inspect_asm`` is empty for kernels loaded from the cache) and lists kernels with
more than one signature.

``--cuda`` times the GPU doors instead (``evaluate`` in the average and stable modes and
``search`` with ``device="cuda"``), each in fresh processes on one cache folder: cold (nothing
cached), then with the CPU kernels cached but the GPU kernels' files removed (what every new
process paid before the GPU kernels were cached: NVVM compiles them again), then warm.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from measure import cpu_flags, cpu_model  # noqa: E402  (no fasttie: the cold runs import it)

SETUP = r"""
import json, os, sys, time
if os.environ.get("BENCH_HIDE_SCIPY"):  # as on the README's install (numpy, numba, tqdm): no scipy to import
    sys.modules["scipy"] = None
import numpy as np
t = time.perf_counter()
import fasttie as ft
import_s = time.perf_counter() - t
rng = np.random.default_rng(0)
# more codes than the deepest cutoff: AP@1000 over the retrieved relevant items, the default, takes the
# expected ratios (hypergeometric sums) of the tie walk, as on a real database
q = rng.integers(0, 2, (10, 64)).astype(bool); db = rng.integers(0, 2, (2000, 64)).astype(bool)
ql = rng.integers(0, 10, 10); dl = rng.integers(0, 10, 2000)
mq = rng.integers(0, 2, (10, 8)); mdb = rng.integers(0, 2, (2000, 8))  # multi-hot labels (NUS-WIDE, COCO)
sizes = np.array([400, 600]); y_true = rng.integers(0, 5, 1000).astype(float); y_pred = rng.integers(0, 20, 1000) / 4.0
docs = np.array([f"d{i}" for i in range(1000)])
subtopics = rng.integers(0, 2, (1000, 4))
M = ("AP", "AP@1000", "nDCG@1000", "P@1000")
R = ("AP", "nDCG@10", "P@10", "RR")
import os, tempfile
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "qrels"), "w") as f:
    f.writelines(f"q{i % 7} 0 d{i} {i % 3}\n" for i in range(300))
with open(os.path.join(folder, "run"), "w") as f:
    f.writelines(f"q{i % 7} Q0 d{i} {i} {i % 17} t\n" for i in range(600))
from fasttie.compat.pytrec_eval import RelevanceEvaluator
QRELS = {f"q{i}": {f"d{j}": (i + j) % 3 for j in range(40)} for i in range(20)}
RUN = {f"q{i}": {f"d{j}": float((i * j) % 11) for j in range(60)} for i in range(20)}
"""

VARIANTS = {
    "evaluate average": "ft.evaluate(q, db, ql, dl, metrics=M)",
    "evaluate stable": "ft.evaluate(q, db, ql, dl, metrics=M, ties='stable')",
    "evaluate optimistic": "ft.evaluate(q, db, ql, dl, metrics=M, ties='optimistic')",
    "evaluate pessimistic": "ft.evaluate(q, db, ql, dl, metrics=M, ties='pessimistic')",
    "search": "ft.search(q, db, 10)",
    "rank_evaluate average": "ft.rank_evaluate(y_true, y_pred, sizes, metrics=R)",
    "rank_evaluate stable": "ft.rank_evaluate(y_true, y_pred, sizes, metrics=R, ties='stable')",
    "rank_evaluate optimistic": "ft.rank_evaluate(y_true, y_pred, sizes, metrics=R, ties='optimistic')",
    "rank_evaluate pessimistic": "ft.rank_evaluate(y_true, y_pred, sizes, metrics=R, ties='pessimistic')",
    "rank_evaluate trec": "ft.rank_evaluate(y_true, y_pred, sizes, metrics=R, ties='trec', doc_ids=docs)",
    "trec.evaluate": "ft.trec.evaluate(os.path.join(folder, 'qrels'), os.path.join(folder, 'run'), R)",
    "lambdarank": "ft.lambdarank(y_true, y_pred, sizes)",
    "alpha_ndcg": "ft.alpha_ndcg(subtopics, y_pred, sizes, k=[5, 20])",
}
CUDA_VARIANTS = {
    "evaluate cuda": "ft.evaluate(q, db, ql, dl, metrics=M, device='cuda')",
    "evaluate cuda stable": "ft.evaluate(q, db, ql, dl, metrics=M, ties='stable', device='cuda')",
    "search cuda": "ft.search(q, db, 10, device='cuda')",
}
# doors timed on their own only (not among the 13 variants): pytrec_eval's face, what a BEIR or mteb
# user who swaps pytrec_eval for fasttie calls first; the stable order with cutoffs only on multi-hot
# labels (the counts, then the near items: a pass of its own)
OTHER_DOORS = {
    "compat.pytrec_eval": "RelevanceEvaluator(QRELS, {'map', 'ndcg_cut.10', 'P.5', 'recall.100'}).evaluate(RUN)",
    "evaluate stable top multi-hot": "ft.evaluate(q, db, mq, mdb, metrics=('AP@100', 'nDCG@100', 'P@100'), ties='stable')",
}
# the front doors timed on their own (one per public function, plus stable mode)
FRONT_DOORS = ["evaluate average", "evaluate stable", "evaluate stable top multi-hot", "search",
               "rank_evaluate average", "trec.evaluate", "compat.pytrec_eval", "lambdarank", "alpha_ndcg"]

TIMED = SETUP + r"""
if os.environ.get("BENCH_PRELOAD_SCIPY"):  # numba's CPU target imports scipy.linalg (BLAS check) on its first use
    try:
        import scipy.linalg
    except ImportError:
        pass
out = {"import_s": import_s}
for name, code in json.loads(sys.argv[1]).items():
    wall, cpu = time.perf_counter(), time.process_time()
    eval(code)
    out[name] = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
    again = []
    for _ in range(3):
        t = time.perf_counter()
        eval(code)
        again.append(time.perf_counter() - t)
    out[name]["again"] = min(again)
print("RESULT " + json.dumps(out))
"""

ASM = r"""
import importlib, json, pkgutil, re
import numpy as np, numba
import fasttie as ft
import fasttie._kernels as kernels
rng = np.random.default_rng(0)
for n_bits in (64, 128, 256):
    q = rng.integers(0, 2, (10, n_bits)).astype(bool); db = rng.integers(0, 2, (1000, n_bits)).astype(bool)
    ft.evaluate(q, db, rng.integers(0, 10, 10), rng.integers(0, 10, 1000), metrics=("AP", "AP@1000", "nDCG@1000", "P@1000"))
rows = []
for info in pkgutil.iter_modules(kernels.__path__):
    module = importlib.import_module(f"fasttie._kernels.{info.name}")
    for name, obj in vars(module).items():
        if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.__module__ == module.__name__ and obj.signatures:
            asm = "".join(obj.inspect_asm(sig) for sig in obj.signatures)
            rows.append({"kernel": f"{info.name}.{name}", "signatures": len(obj.signatures),
                         "popcnt": len(re.findall(r"\spopcnt[lq]?\s", asm)),
                         "vpopcnt": len(re.findall(r"\svpopcnt[bwdq]\s", asm)),
                         "vpternlog": len(re.findall(r"\svpternlog[dq]\s", asm))})
print("RESULT " + json.dumps(rows))
"""


def _env(cache_dir, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "FASTTIE_NO_CACHE")}
    env["NUMBA_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _child(code, cache_dir, *args, **extra):
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=str(REPO), env=_env(cache_dir, **extra),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"child failed:\n{proc.stdout}{proc.stderr}")
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def _timed(variants, cache_dir, **extra):
    code = {**VARIANTS, **OTHER_DOORS, **CUDA_VARIANTS}
    return _child(TIMED, cache_dir, json.dumps({name: code[name] for name in variants}), **extra)


def _demo_wall(cache_dir):
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fasttie", "demo"], cwd=str(REPO), env=_env(cache_dir),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"fasttie demo failed:\n{proc.stderr}")
    return time.perf_counter() - t


def _drop_gpu_kernels(cache_dir):
    """Remove the cached GPU kernels (files of fasttie/_kernels/cuda.py) and keep the CPU ones."""
    for path in Path(cache_dir).rglob("cuda.*"):
        path.unlink()


def _cuda_table(repeat):
    runs = []
    for _ in range(repeat):
        run = {}
        for door in CUDA_VARIANTS:
            cache = tempfile.mkdtemp(prefix="fasttie-bench-cache-")
            try:
                cold = _timed([door], cache)[door]
                _drop_gpu_kernels(cache)
                gpu_cold = _timed([door], cache)[door]
                warm = _timed([door], cache)[door]
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            run[door] = {"cold": cold["wall"], "gpu_cold": gpu_cold["wall"] - gpu_cold["again"],
                         "warm": warm["wall"] - warm["again"], "again": warm["again"]}
        runs.append(run)
    print(f"{'GPU door, first call':<22} {'cold s':>8} {'GPU kernels compiled, s over the work':>38} "
          f"{'warm, s over the work':>22} {'repeat s':>9}")
    for door in CUDA_VARIANTS:
        best = {field: _best(runs, door, field) for field in ("cold", "gpu_cold", "warm", "again")}
        print(f"{door:<22} {best['cold']:8.2f} {best['gpu_cold']:38.2f} {best['warm']:22.3f} {best['again']:9.4f}")
    print("cold: an empty cache; GPU kernels compiled: the CPU kernels cached, the GPU kernels' cache files\n"
          "removed (every new process before the GPU kernels were cached); warm: everything cached")


def _best(runs, key, field):
    return min(r[key][field] for r in runs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1, help="take the minimum of N cold/warm runs (default 1)")
    parser.add_argument("--asm", action="store_true", help="count popcnt/vpopcnt/vpternlog in the compiled kernels")
    parser.add_argument("--skip-demo", action="store_true", help="do not time `fasttie demo`")
    parser.add_argument("--cuda", action="store_true", help="time the device='cuda' doors instead (needs a GPU)")
    parser.add_argument("--doors", nargs="+", choices=FRONT_DOORS, metavar="DOOR",
                        help="time only these front doors (their table only: not the 13 variants nor the demo); "
                             f"of {', '.join(FRONT_DOORS)}")
    args = parser.parse_args(argv)
    # fasttie's bytecode up to date, as pip writes it at install: a stale or missing .pyc (an edited
    # checkout, PYTHONDONTWRITEBYTECODE) would add up to 0.25 s of compiling Python to every import
    compileall.compile_dir(str(REPO / "fasttie"), quiet=1)
    print(f"command: python scripts/bench_compile.py --repeat {args.repeat}" + (" --asm" if args.asm else "")
          + (" --cuda" if args.cuda else "") + (" --skip-demo" if args.skip_demo else "")
          + (f" --doors {shlex.join(args.doors)}" if args.doors else ""))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs ({cpu_model()}, flags: {cpu_flags()}); tiny data (10 x 2000 codes, "
          "1000 ranked rows)")
    print()
    if args.cuda:
        _cuda_table(args.repeat)
        return 0
    doors = args.doors or FRONT_DOORS
    cold_runs, warm_runs, preloaded_runs, bare_runs, all_runs = [], [], [], [], []
    for _ in range(args.repeat):
        cold, warm, preloaded, bare = {}, {}, {}, {}
        for door in doors:
            cache = tempfile.mkdtemp(prefix="fasttie-bench-cache-")
            try:
                cold.update({k: v for k, v in _timed([door], cache).items() if k == door})
                warm.update({k: v for k, v in _timed([door], cache).items() if k == door})
                preloaded.update({k: v for k, v in _timed([door], cache, BENCH_PRELOAD_SCIPY="1").items() if k == door})
                bare.update({k: v for k, v in _timed([door], cache, BENCH_HIDE_SCIPY="1").items() if k == door})
            finally:
                shutil.rmtree(cache, ignore_errors=True)
        cold_runs.append(cold)
        warm_runs.append(warm)
        preloaded_runs.append(preloaded)
        bare_runs.append(bare)
        if args.doors:
            continue
        cache = tempfile.mkdtemp(prefix="fasttie-bench-cache-")
        try:
            all_runs.append(_timed(list(VARIANTS), cache))
        finally:
            shutil.rmtree(cache, ignore_errors=True)

    print(f"{'front door, first call':<26} {'cold wall s':>12} {'cold CPU s':>11} {'warm first s':>13} "
          f"{'warm repeat s':>14} {'warm overhead s':>16} {'scipy loaded':>13} {'no scipy':>9}")
    for door in doors:
        warm_first = _best(warm_runs, door, "wall")
        again = _best(warm_runs, door, "again")
        print(f"{door:<26} {_best(cold_runs, door, 'wall'):12.2f} {_best(cold_runs, door, 'cpu'):11.2f} "
              f"{warm_first:13.3f} {again:14.4f} {warm_first - again:16.3f} "
              f"{_best(preloaded_runs, door, 'wall') - _best(preloaded_runs, door, 'again'):13.3f} "
              f"{_best(bare_runs, door, 'wall') - _best(bare_runs, door, 'again'):9.3f}")
    print("warm overhead: the first call in a new process over a repeat of it (numba's CPU target set-up, which\n"
          "imports scipy.linalg where scipy is installed, and loading the cached kernels); 'scipy loaded': the same\n"
          "in a process that imported scipy.linalg before (any process using scipy or scikit-learn); 'no scipy':\n"
          "the same where scipy cannot be imported (the README's install: numpy, numba, tqdm)")
    print()
    if args.doors:
        return 0
    total_wall = min(sum(r[name]["wall"] for name in VARIANTS) for r in all_runs)
    total_cpu = min(sum(r[name]["cpu"] for name in VARIANTS) for r in all_runs)
    print(f"all {len(VARIANTS)} call variants cold in one process: {total_wall:.1f} s wall, {total_cpu:.1f} CPU-s "
          f"(import fasttie {min(r['import_s'] for r in all_runs):.2f} s)")
    for name in VARIANTS:
        print(f"  {name:<26} {min(r[name]['wall'] for r in all_runs):7.2f} s")
    if not args.skip_demo:
        cold_demo, warm_demo = [], []
        for _ in range(args.repeat):
            cache = tempfile.mkdtemp(prefix="fasttie-bench-cache-")
            try:
                cold_demo.append(_demo_wall(cache))
                warm_demo.append(_demo_wall(cache))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
        print()
        print(f"fasttie demo (whole process, interpreter start included): cold {min(cold_demo):.1f} s, "
              f"warm {min(warm_demo):.1f} s")
    if args.asm:
        cache = tempfile.mkdtemp(prefix="fasttie-bench-cache-")
        try:
            rows = _child(ASM, cache, FASTTIE_NO_CACHE="1")
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        print()
        print("kernels compiled by evaluate() at 64/128/256 bits (no cache): signatures, popcnt, vpopcnt, vpternlog")
        for row in rows:
            print(f"  {row['kernel']:<40} {row['signatures']:>3} {row['popcnt']:>5} {row['vpopcnt']:>5} "
                  f"{row['vpternlog']:>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
