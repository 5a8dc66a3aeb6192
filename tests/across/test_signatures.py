"""Every compiled function, callees included, has exactly one signature.

A second signature is a second compile (seconds on a first call) and a second cache entry; it
comes from an input dtype, a read-only flag or a literal that the facade did not coerce. A fresh
process calls every front door in every tie mode with the input variants users pass (codes as
int8 / float32 / bool / packed / memory-mapped / read-only, labels as uint8 / int32 / int64,
grades as int / float, one and several threads), then walks every numba dispatcher of fasttie.
Before that, it checks that calls without an optional sum (bpref, IPrec, RBP, a fixed order's WAP)
compile no code of theirs.
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fasttie._kernels as kernels

WORKLOAD = r"""
import importlib, json, pkgutil, tempfile, os
import numpy as np, numba
import fasttie as ft
import fasttie._kernels as kernels
from fasttie.warmup import warmup
from fasttie._kernels.finalize import finalize_ties_optional, ranked_optional_sums

rng = np.random.default_rng(0)
# without bpref, IPrec, RBP or a fixed order's WAP, no kernel compiles those sums, also where AP@k
# over the retrieved items takes the tie walk's ratios (tests/kernels/test_finalize.py)
codes, labels = rng.integers(0, 2, (306, 64)), rng.integers(0, 4, 306)
for ties, metrics in (("stable", ["AP", "P@5"]), ("stable", ["P@5"]), ("average", ["AP", "WAP"]),
                      ("average", ["AP@5", "WAP@5"])):
    ft.evaluate(codes[:6], codes[6:], labels[:6], labels[6:], metrics=metrics, ties=ties)
for ties in ("stable", "average"):
    ft.rank_evaluate(rng.integers(0, 4, 60), rng.random(60), [20, 40], metrics=["AP", "RR"], ties=ties)
sums_compiled = len(ranked_optional_sums.signatures) + len(finalize_ties_optional.signatures)
# spread=True without AP@k over the retrieved items compiles no code of its hypergeometric mixture
from fasttie._kernels.tie_spread import _ap_cut_tie
ft.evaluate(codes[:6], codes[6:], labels[:6], labels[6:], metrics=["AP", "AP@5"], ap_denominator="total", spread=True)
ft.rank_evaluate(rng.integers(0, 4, 60), rng.random(60), [20, 40], metrics=["AP@5"], spread=True)
mixture_compiled = len(_ap_cut_tie.signatures)
warmup()
folder = tempfile.mkdtemp()
q = rng.integers(0, 2, (6, 70)); db = rng.integers(0, 2, (300, 70))
np.save(os.path.join(folder, "db.npy"), db.astype(np.int8))
mapped = np.load(os.path.join(folder, "db.npy"), mmap_mode="r")
frozen = (2 * db - 1).astype(np.float32); frozen.flags.writeable = False
for database in (db, db.astype(bool), frozen, mapped, ft.pack_codes(mapped)):
    for labels in (rng.integers(0, 4, 300).astype(np.uint8), rng.integers(0, 4, 300).astype(np.int32)):
        for ties in ("average", "stable", "optimistic"):
            for n_threads in (1, 2):
                ft.evaluate(q.astype(np.int16), database, rng.integers(0, 4, 6), labels, metrics=["AP@5", "nDCG", "P(radius=3)"],
                            ties=ties, n_threads=n_threads, curves=True)
        ft.evaluate(q, database, rng.integers(0, 4, 6), labels, metrics=["AP@5", "ERR@3"], ties="stable")  # top pass
for n_bits in (8, 64, 128, 256, 300):
    for metrics in (["AP", "RR@3"], ["RR@3"]):
        ft.evaluate(rng.integers(0, 2, (5, n_bits)), rng.integers(0, 2, (40, n_bits)), rng.integers(0, 3, 5),
                    rng.integers(0, 3, 40), metrics=metrics, ties="stable")
    ft.search(rng.integers(0, 2, (5, n_bits)), rng.integers(0, 2, (40, n_bits)), 3)
    ft.evaluate(rng.integers(0, 2, (17, n_bits)), rng.integers(0, 2, (40, n_bits)), rng.integers(0, 3, 17),
                rng.integers(0, 3, 40), metrics=["AP"], n_threads=1)  # 17 queries: the tiled pass from 3 words on
for grades in (rng.integers(0, 4, 60), rng.integers(0, 4, 60).astype(np.float32), rng.random(60)):
    for ties in ("average", "stable", "trec"):
        ft.rank_evaluate(grades, rng.integers(0, 5, 60).astype(np.int32), [20, 40], metrics=["AP", "nDCG@5", "RR"],
                         ties=ties, doc_ids=np.arange(60) if ties == "trec" else None)
    ft.lambdarank(np.floor(grades * 3) if grades.dtype.kind == "f" else grades, rng.random(60), [20, 40])
    ft.alpha_ndcg(rng.integers(0, 2, (60, 3)).astype(bool), rng.random(60).astype(np.float32), [20, 40], k=3)
rows, with_cfunc_wrapper = {}, []
for info in pkgutil.iter_modules(kernels.__path__):
    if info.name == "cuda":
        continue  # numba.cuda's kernels, compiled on a GPU call only (tests/hamming/test_gpu.py)
    module = importlib.import_module(f"fasttie._kernels.{info.name}")
    for name, obj in vars(module).items():
        if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.__module__ == module.__name__:
            rows[f"{info.name}.{name}"] = [", ".join(map(str, sig)) for sig in obj.signatures]
            if not obj.targetoptions.get("no_cfunc_wrapper"):
                with_cfunc_wrapper.append(f"{info.name}.{name}")
print("RESULT " + json.dumps({"signatures": rows, "sums_compiled_before_asked": sums_compiled,
                              "mixture_compiled_before_asked": mixture_compiled,
                              "with_cfunc_wrapper": with_cfunc_wrapper}))
"""


@pytest.fixture(scope="module")
def compiled():
    """What a fresh process without a cache compiles for the workload above."""
    # no cache: a kernel loaded from the cache does not compile (or list) its callees
    env = {**os.environ, "FASTTIE_NO_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", WORKLOAD], capture_output=True, text=True, timeout=1200, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


def test_the_optional_sums_compile_only_when_asked(compiled):
    # they cost every kernel that links them up to a second of compile
    assert compiled["sums_compiled_before_asked"] == 0
    for kernel in ("finalize.ranked_optional_sums", "finalize.finalize_ties_optional"):
        assert compiled["signatures"][kernel], kernel  # warmup asks for them


def test_the_spread_of_ap_over_retrieved_compiles_only_when_asked(compiled):
    assert compiled["mixture_compiled_before_asked"] == 0
    assert compiled["signatures"]["tie_spread._ap_cut_tie"]  # warmup asks for it


def test_every_compiled_function_has_one_signature(compiled):
    with_signatures = {name: sigs for name, sigs in compiled["signatures"].items() if sigs}
    assert len(with_signatures) >= 40, sorted(with_signatures)  # the walk found the callees, not only the drivers
    several = {name: sigs for name, sigs in with_signatures.items() if len(sigs) > 1}
    assert not several, json.dumps(several, indent=1)


def test_kernel_allocations_name_their_dtype():
    # numba compiles its np.empty / zeros / ones once per spelling of the dtype: np.zeros(n),
    # np.zeros(n, dtype=float) and np.zeros(n, dtype=np.float64) are three compiles of one array
    # type; the kernels spell every dtype out (np.float64, np.int64, ...), so each is one compile
    dtype_position = {"empty": 1, "zeros": 1, "ones": 1, "full": 2}
    unnamed = []
    for path in sorted(Path(kernels.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "np"
                    and node.func.attr in dtype_position):
                continue
            dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
            if dtype is None and len(node.args) > dtype_position[node.func.attr]:
                dtype = node.args[dtype_position[node.func.attr]]
            if not (isinstance(dtype, ast.Attribute) and isinstance(dtype.value, ast.Name) and dtype.value.id == "np"):
                unnamed.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert not unnamed, "allocations without an np.<type> dtype:\n" + "\n".join(unnamed)


def test_kernels_allocate_with_np_empty_only():
    # numba compiles np.zeros / ones / full once per kind of array in each process, on top of the
    # np.empty of that kind (0.1-0.2 s each of a cold first call): kernels fill np.empty's arrays
    # (fasttie/_kernels/filled.py); Python functions that make a kernel's scratch use numpy's
    import importlib
    import inspect
    import pkgutil
    import textwrap

    import numba

    found, filling = [], []
    for info in pkgutil.iter_modules(kernels.__path__):
        if info.name == "cuda":
            continue  # numba.cuda's kernels allocate nothing of numpy's
        module = importlib.import_module(f"fasttie._kernels.{info.name}")
        for obj in vars(module).values():
            if not isinstance(obj, numba.core.registry.CPUDispatcher):
                continue
            source = textwrap.dedent(inspect.getsource(obj.py_func))
            for node in ast.walk(ast.parse(source)):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "np"):
                    if node.func.attr in ("zeros", "ones", "full", "zeros_like", "ones_like", "full_like"):
                        found.append(f"{info.name}.{obj.py_func.__name__}: {ast.unparse(node)}")
                    elif node.func.attr == "empty":
                        filling.append(obj)
    assert not found, "kernels allocating with np.zeros / ones / full:\n" + "\n".join(sorted(set(found)))
    assert len(filling) >= 20  # the walk saw the kernels' allocations


def test_every_kernel_skips_the_cfunc_wrapper(compiled):
    # a C-callable wrapper per compiled function that nothing calls: compile time only (fasttie/_kernels/_jit.py)
    assert len(compiled["signatures"]) >= 40, len(compiled["signatures"])
    assert not compiled["with_cfunc_wrapper"], (
        "kernels not made by fasttie._kernels._jit.jit: " + ", ".join(compiled["with_cfunc_wrapper"]))
