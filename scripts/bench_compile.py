"""Cold compile time and warm-from-cache first call of fasttie.evaluate() and rank_evaluate().

    python scripts/bench_compile.py [--keep-cache] [--asm]

Runs fresh Python subprocesses that share one new, empty ``NUMBA_CACHE_DIR``:

1. cold:  empty cache -> ``import fasttie`` and the first ``evaluate`` on tiny data compile
          every kernel they touch (and write the cache);
2. warm:  same cache dir, new process -> the first call loads the compiled kernels from disk;
3. (for reference) cold again with ``FASTTIE_NO_CACHE=1``: what a user pays every time if
   caching is switched off.

Inside each process it also times a second identical call (the steady-state cost of a tiny
call, the per-call overhead), a call at another width (256 bits) and with int32 labels and
another thread count: none of these should compile again if the facade coerces to one signature.
Ratios are against the fastest of 5 further identical calls in the same process.  ``--asm`` then compiles once
more without cache and counts ``popcnt`` / ``vpopcnt`` instructions in every kernel's assembly
(inspect_asm is empty for kernels loaded from cache) and the number of signatures per kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
t_np = time.perf_counter()
import fasttie as ft
t_import = time.perf_counter() - t_np

def data(n_q, n_db, n_bits, seed, label_dtype=np.int64):
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 2, size=(n_q, n_bits)).astype(bool)
    db = rng.integers(0, 2, size=(n_db, n_bits)).astype(bool)
    ql = rng.integers(0, 10, size=n_q).astype(label_dtype)
    dl = rng.integers(0, 10, size=n_db).astype(label_dtype)
    return q, db, ql, dl

METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000")
out = {"import_s": t_import}

def timed(name, args, **kw):
    t = time.perf_counter()
    try:
        ft.evaluate(*args, metrics=METRICS, **kw)
    except Exception as exc:  # an option not implemented yet must not hide the other timings
        out[name] = None
        out.setdefault("errors", {})[name] = repr(exc)[:200]
        return
    out[name] = time.perf_counter() - t

d64 = data(10, 1000, 64, 0)
timed("first_call_s", d64)
timed("second_call_s", d64)
steady = []
for _ in range(5):
    timed("_steady", d64)
    steady.append(out.pop("_steady"))
out["warm_min_s"] = min(steady)  # reference for the ratios (tiny calls are noisy on a busy machine)
timed("first_call_256bits_s", data(10, 1000, 256, 1))
timed("first_call_int32_labels_s", data(10, 1000, 64, 2, np.int32))
timed("first_call_1_thread_s", d64, n_threads=1)
timed("first_call_ties_stable_s", d64, ties="stable")

def timed_rank(name, **kw):
    rng = np.random.default_rng(3)
    t = time.perf_counter()
    ft.rank_evaluate(rng.integers(0, 5, 1000), rng.integers(0, 20, 1000) / 4.0, group=[400, 600],
                     metrics=("AP", "nDCG@10", "P@10", "RR"), **kw)
    out[name] = time.perf_counter() - t

timed_rank("first_rank_call_s")
timed_rank("second_rank_call_s")
timed_rank("first_rank_stable_s", ties="stable")
out["process_s"] = time.perf_counter() - t0
print("RESULT " + json.dumps(out))
"""


ASM_CHILD = r"""
import importlib, json, pkgutil, re
import numpy as np
import numba
import fasttie as ft
import fasttie._kernels as kernels_pkg

rng = np.random.default_rng(0)
for n_bits in (64, 128, 256):
    q = rng.integers(0, 2, size=(10, n_bits)).astype(bool)
    db = rng.integers(0, 2, size=(1000, n_bits)).astype(bool)
    ft.evaluate(q, db, rng.integers(0, 10, 10), rng.integers(0, 10, 1000),
                metrics=("AP", "AP@1000", "nDCG@1000", "P@1000"))
rows = []
for info in pkgutil.iter_modules(kernels_pkg.__path__):
    mod = importlib.import_module(f"fasttie._kernels.{info.name}")
    for name, obj in vars(mod).items():
        if not isinstance(obj, numba.core.registry.CPUDispatcher) or obj.__module__ != mod.__name__:
            continue
        if not obj.signatures:
            continue
        row = {"kernel": f"{info.name}.{name}", "n_signatures": len(obj.signatures),
               "popcnt": 0, "vpopcnt": 0, "asm_lines": 0,
               "signatures": [", ".join(str(t) for t in sig) for sig in obj.signatures]}
        for sig in obj.signatures:
            asm = obj.inspect_asm(sig)
            row["popcnt"] += len(re.findall(r"\spopcnt[lq]?\s", asm))
            row["vpopcnt"] += len(re.findall(r"\svpopcnt[bwdq]\s", asm))
            row["asm_lines"] += asm.count(chr(10))
        rows.append(row)
print("RESULT " + json.dumps(rows))
"""


def asm_report() -> None:
    """Compile without cache, count popcnt / vpopcnt in every compiled fasttie kernel."""
    env = dict(os.environ, FASTTIE_NO_CACHE="1")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", ASM_CHILD], cwd=str(REPO), env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print("asm check failed:\n" + proc.stderr[-2000:])
        return
    rows = json.loads([x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1][len("RESULT "):])
    print()
    print("== assembly of the kernels compiled by evaluate() at 64/128/256 bits (FASTTIE_NO_CACHE=1) ==")
    print("   (popcnt / vpopcnt / asm lines summed over a kernel's signatures; vpopcnt needs AVX-512 VPOPCNTDQ)")
    print(f"{'kernel':<40} {'signatures':>10} {'popcnt':>7} {'vpopcnt':>8} {'asm lines':>10}")
    for r in rows:
        print(f"{r['kernel']:<40} {r['n_signatures']:>10} {r['popcnt']:>7} {r['vpopcnt']:>8} {r['asm_lines']:>10}")
    multi = [r for r in rows if r["n_signatures"] > 1]
    if multi:
        print("kernels with more than one signature (each one is compiled and cached separately):")
        for r in multi:
            print(f"   {r['kernel']}: " + " | ".join(f"({x})" for x in r["signatures"]))


def run_child(cache_dir: str, no_cache: bool = False) -> tuple[dict, float]:
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("FASTTIE_NO_CACHE", None)
    if no_cache:
        env["FASTTIE_NO_CACHE"] = "1"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=str(REPO), env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"child process failed with exit code {proc.returncode}")
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):]), wall


def cache_files(cache_dir: str) -> int:
    return sum(1 for p in Path(cache_dir).rglob("*") if p.suffix in (".nbi", ".nbc"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keep-cache", action="store_true", help="do not delete the temporary cache dir")
    p.add_argument("--asm", action="store_true", help="also count popcnt/vpopcnt in the compiled kernels")
    args = p.parse_args(argv)
    print("command: python scripts/bench_compile.py" + (" --keep-cache" if args.keep_cache else "")
          + (" --asm" if args.asm else ""))
    print(f"python {sys.version.split()[0]}; tiny data: 10 queries x 1000 db, 64 bits, 4 metrics")

    cache_dir = tempfile.mkdtemp(prefix="fasttie_numba_cache_")
    try:
        runs = []
        cold, cold_wall = run_child(cache_dir)
        n_files = cache_files(cache_dir)
        runs.append(("cold (empty NUMBA_CACHE_DIR)", cold, cold_wall))
        warm, warm_wall = run_child(cache_dir)
        runs.append(("warm (same cache dir, new process)", warm, warm_wall))
        nocache_dir = tempfile.mkdtemp(prefix="fasttie_numba_nocache_")
        try:
            nocache, nocache_wall = run_child(nocache_dir, no_cache=True)
            n_files_nocache = cache_files(nocache_dir)
        finally:
            shutil.rmtree(nocache_dir, ignore_errors=True)
        runs.append(("cold, FASTTIE_NO_CACHE=1", nocache, nocache_wall))
    finally:
        if args.keep_cache:
            print(f"cache kept at {cache_dir}")
        else:
            shutil.rmtree(cache_dir, ignore_errors=True)

    keys = [
        ("import_s", "import fasttie"),
        ("first_call_s", "1st evaluate (64 bits)"),
        ("second_call_s", "2nd evaluate (same data)"),
        ("warm_min_s", "warm: min of 5 more calls"),
        ("first_call_256bits_s", "1st at 256 bits"),
        ("first_call_int32_labels_s", "1st with int32 labels"),
        ("first_call_1_thread_s", "1st with n_threads=1"),
        ("first_call_ties_stable_s", "1st with ties='stable'"),
        ("first_rank_call_s", "1st rank_evaluate (after evaluate)"),
        ("second_rank_call_s", "2nd rank_evaluate"),
        ("first_rank_stable_s", "1st rank_evaluate ties='stable'"),
        ("process_s", "whole child (after interpreter start)"),
    ]
    print()
    name_w = max(len(k[1]) for k in keys)
    header = f"{'seconds':<{name_w}}" + "".join(f"  {r[0]:>36}" for r in runs)
    print(header)
    print("-" * len(header))
    for key, label in keys:
        cells = []
        for _, res, _ in runs:
            v = res.get(key)
            if v is None:
                cells.append("error (see below)")
                continue
            ratio = v / res["warm_min_s"] if key not in ("import_s", "process_s", "warm_min_s") and "rank" not in key else None
            cells.append(f"{v:10.4f}" + (f" ({ratio:9.1f}x warm)" if ratio is not None else " " * 17))
        print(f"{label:<{name_w}}" + "".join(f"  {c:>36}" for c in cells))
    walls = "".join(f"  {w:36.3f}" for _, _, w in runs)
    print(f"{'subprocess wall incl. interpreter':<{name_w}}" + walls)
    print()
    c, w = cold["first_call_s"], warm["first_call_s"]
    print(f"cold compile, first evaluate: {c:.3f} s;  warm from cache, first evaluate: {w:.3f} s "
          f"(cache saves {c / w:.1f}x);  cache files written: {n_files} (.nbi/.nbc), "
          f"with FASTTIE_NO_CACHE=1: {n_files_nocache}")
    print(f"import fasttie: cold {cold['import_s']:.3f} s, warm {warm['import_s']:.3f} s "
          "(importing should compile nothing)")
    for name, res, _ in runs:
        for key, err in res.get("errors", {}).items():
            print(f"error in {name}, {key}: {err}")
    for key, label in keys[4:8]:
        if warm.get(key) is not None and warm[key] > 5 * warm["warm_min_s"] + 0.05:
            print(f"note: '{label}' costs {warm[key]:.3f} s on the warm run: a new specialization, a kernel "
                  f"not loaded from cache, or (tiny multi-threaded calls on a busy machine) thread wake-up")
    if args.asm:
        asm_report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
