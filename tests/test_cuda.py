"""The GPU histogram pass (fasttie.cuda) gives the CPU's counts bitwise, so the same metrics.

CI has no GPU: tests/conftest.py turns the CUDA simulator on (NUMBA_ENABLE_CUDASIM=1) where no
NVIDIA device is present, and the same kernel runs on the CPU; on a GPU machine it runs there.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import fasttie as ft

pytest.importorskip("numba_cuda", reason="device='cuda' needs numba-cuda (pip install 'fasttie[cuda]')")

from fasttie import cuda  # noqa: E402
from fasttie.relevance import make_relevance  # noqa: E402

METRICS = ["AP", "AP@10", "nDCG@20", "DCG@5", "P@5", "R@10", "RR", "Rprec", "ACG@5", "WAP@10", "P(radius=3)"]


def _relevance(kind, rng, n_q, n_db):
    if kind == "class":
        return dict(query_labels=rng.integers(0, 3, n_q), db_labels=rng.integers(0, 3, n_db))
    if kind == "multihot":
        return dict(query_labels=rng.integers(0, 2, (n_q, 70)), db_labels=rng.integers(0, 2, (n_db, 70)))
    sizes = rng.integers(0, 25, n_q)
    indptr = np.r_[0, np.cumsum(sizes)]
    indices = np.concatenate([rng.choice(n_db, s, replace=False) for s in sizes])
    return dict(relevance=(indptr, indices, rng.integers(1, 5, len(indices))))


@pytest.mark.parametrize("n_bits", [1, 7, 64, 65, 130, 256])
@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
def test_gpu_counts_equal_cpu_counts(n_bits, kind):
    rng = np.random.default_rng(n_bits)
    n_q, n_db = 9, 300
    queries, database = rng.integers(0, 2, (n_q, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    relevance = _relevance(kind, rng, n_q, n_db)
    q, db = ft.pack_codes(queries), ft.pack_codes(database)
    spec = make_relevance(relevance.get("query_labels"), relevance.get("db_labels"), relevance.get("relevance"),
                          n_q, n_db)
    np.testing.assert_array_equal(cuda.counts(q, db, spec), ft.tie_stats(q, db, **relevance).counts)
    for ties in ("average", "optimistic"):
        on_cpu = ft.evaluate(q, db, **relevance, metrics=METRICS, ties=ties, curves=True)
        on_gpu = ft.evaluate(q, db, **relevance, metrics=METRICS, ties=ties, curves=True, device="cuda")
        assert on_gpu.settings == on_cpu.settings and on_gpu.n_empty == on_cpu.n_empty
        for name in METRICS:
            np.testing.assert_array_equal(on_gpu.per_query[name], on_cpu.per_query[name])
        for key, curve in on_cpu.curves.items():
            np.testing.assert_array_equal(on_gpu.curves[key], curve)


def test_auto_and_errors():
    q, db = np.array([[1, 0, 1]]), np.array([[1, 0, 0], [0, 1, 1]])
    expected = ft.evaluate(q, db, [0], [0, 1], metrics=["AP"])
    assert ft.evaluate(q, db, [0], [0, 1], metrics=["AP"], device="auto").mean == expected.mean
    # stable ranks on the CPU with "auto"; "cuda" says so
    assert ft.evaluate(q, db, [0], [0, 1], metrics=["AP"], ties="stable", device="auto").mean == {"AP": 1.0}
    with pytest.raises(ft.InputError, match="stable.*GPU"):
        ft.evaluate(q, db, [0], [0, 1], ties="stable", device="cuda")
    with pytest.raises(ft.InputError, match="device must be 'cpu', 'cuda' or 'auto'"):
        ft.evaluate(q, db, [0], [0, 1], device="gpu")


def test_without_numba_cuda_the_error_says_how_to_install():
    code = (
        "import sys; sys.modules['numba.cuda'] = None\n"
        "import fasttie as ft\n"
        "try:\n"
        "    ft.evaluate([[1, 0]], [[1, 1]], [0], [0], device='cuda')\n"
        "except ImportError as error:\n"
        "    print(error)\n"
        "print(ft.evaluate([[1, 0]], [[1, 1]], [0], [0], device='auto').mean)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert "pip install 'fasttie[cuda]'" in done.stdout and "{'AP': 1.0}" in done.stdout
