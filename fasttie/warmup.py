"""Compile every kernel once (``fasttie warmup``), and tell which front doors are cached.

numba compiles a kernel on its first call and caches the machine code (``cache=True``); later
processes load it in a fraction of a second. ``warmup()`` makes those first calls on tiny data,
for container images and cluster nodes that should not compile on a user's first call.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence

import numpy as np

from . import trec
from ._device import available
from .options import HAMMING_TIES
from ._kernels.cached import FRONT_DOORS, cache_status, door_kernels, door_state, kernel_at, kernel_cached
from ._kernels.cpu import bitsliced_pass
from .codes import PackedCodes
from .diversity import alpha_ndcg
from .lists.lambdarank import lambdarank
from .hamming import evaluate, search
from .finalize.cold_start import Helper, start_helper
from .lists.facade import rank_evaluate
from .hamming.engine import LANES_PAIRS
from .hamming.rescore import rescore_evaluate

# the cache's state per door lives with the kernels (fasttie._kernels.cached), where the front doors read it
__all__ = ["FRONT_DOORS", "cache_status", "compile_in_helper", "door_kernels", "door_state", "kernel_at",
           "kernel_cached", "warmup"]

_HELPER_CALL = """
import numpy as np, fasttie as ft
rng = np.random.default_rng(0)
ft.evaluate(rng.integers(0, 2, (4, {n_bits})), rng.integers(0, 2, (50, {n_bits})), rng.integers(0, 3, 4),
            rng.integers(0, 3, 50), metrics={metrics!r}, ties={ties!r}, n_threads=1)
"""
# the tie walk's driver first, while the caller compiles its counting pass (which comes before it)
_WALK_DRIVER_CALL = """
from fasttie.hamming.engine import compile_walk_driver
compile_walk_driver({metrics!r}, n_db={n_db}, n_bits={n_bits}, n_grades={n_grades})
"""
# the extremes' own kernels (spread=True or "range"), on made-up counts: the tie walks they also
# run are the average's (optimistic and pessimistic are modes of one kernel), left to the caller
_EXTREMES_CALL = """
from fasttie.finalize.extremes import hamming_extremes
from fasttie.metrics import parse_metrics
parsed = parse_metrics({metrics!r})
on_counts, _ = hamming_extremes(parsed, lambda hist, ties: {{m.name: np.zeros(len(hist)) for m in parsed}},
                                {ap_denominator!r})
counts = np.zeros((2, {n_bits} + 1, 2), dtype=np.int64)
counts[:, 0] = 1
on_counts(0, 2, counts, 1)
"""


def compile_in_helper(ties: str, metrics: Sequence[str], n_bits: int, *,
                      extremes: str | None = None, walk_driver: tuple[int, int] | None = None) -> Helper | None:
    """Start compiling ``evaluate``'s kernels for one tie mode in a helper process.

    numba compiles one function at a time per process, so a job that needs several sets of
    kernels on a cold cache (``fasttie demo``: the average and the stable pass) can have a second
    process compile and cache one set while it compiles the other; once the helper is done, this
    process loads that set from the cache. The helper evaluates tiny random data with the same
    ``ties``, ``metrics`` and code width (the kernels compiled depend on those, not on the data).

    Parameters
    ----------
    ties : str
    metrics : sequence of str
    n_bits : int
    extremes : str, optional
        An ``ap_denominator``: then also the kernels of the extremes over tie orders
        (``spread=True`` or ``"range"`` under it) for ``metrics``, after ``ties``' kernels;
        the tie walks the extremes run are the average's, which the caller compiles.
    walk_driver : (int, int), optional
        ``(n_db, n_grades)`` of the caller's counts: then first the average tie walk's driver for
        ``metrics`` (not the walk), which the caller needs after its counting pass.

    Returns
    -------
    fasttie.finalize.cold_start.Helper or None
        The helper (``wait()`` for it before the call that needs its kernels; if it failed, that
        call compiles them itself), or None where it would not help
        (:func:`fasttie.finalize.cold_start.start_helper`: caching off, fewer than two usable CPUs).
    """
    names = [str(m) for m in metrics]
    code = _HELPER_CALL.format(n_bits=int(n_bits), metrics=names, ties=str(ties))
    if walk_driver is not None:
        n_db, n_grades = walk_driver
        code = _WALK_DRIVER_CALL.format(metrics=names, n_db=int(n_db), n_bits=int(n_bits), n_grades=int(n_grades)) + code
    if extremes is not None:
        code += _EXTREMES_CALL.format(n_bits=int(n_bits), metrics=names, ap_denominator=str(extremes))
    return start_helper(code)


def warmup(progress: Callable[[str, float], object] | None = None) -> dict[str, float]:
    """Call every front door in every tie mode on tiny data, so every kernel is compiled and
    cached; on a machine with a GPU that numba-cuda finds, the ``device="cuda"`` passes too.

    Parameters
    ----------
    progress : callable, optional
        Called with (name, seconds) after each call.

    Returns
    -------
    dict of str to float
        Seconds per call (compile included where the cache was empty).
    """
    rng = np.random.default_rng(0)
    q, db = rng.integers(0, 2, (4, 64)), rng.integers(0, 2, (50, 64))
    ql, dl = rng.integers(0, 3, 4), rng.integers(0, 3, 50)
    mh_q, mh_db = rng.integers(0, 2, (4, 3)), rng.integers(0, 2, (50, 3))
    csr = (np.array([0, 2, 3, 3, 5]), np.array([1, 7, 3, 0, 9]), np.array([1, 2, 1, 3, 1]))
    sizes = np.array([20, 30])
    y_true, y_pred = rng.integers(0, 4, 50).astype(float), rng.integers(0, 9, 50) / 2.0
    metrics = ("AP", "AP@10", "nDCG@10", "P@10", "RR", "ERR@10")
    ranked = metrics + ("infAP",)  # ranked lists only
    calls: dict[str, Callable[..., object]] = {}
    for ties in HAMMING_TIES:
        calls[f"evaluate {ties}"] = lambda t=ties, **device: evaluate(q, db, ql, dl, metrics=metrics, ties=t,
                                                                         **device)
    wide_q, wide_db = rng.integers(0, 2, (4, 128)), rng.integers(0, 2, (50, 128))
    calls["evaluate 128 bits"] = lambda **device: evaluate(wide_q, wide_db, ql, dl, metrics=metrics, **device)
    tiled_q, tiled_db = rng.integers(0, 2, (4, 256)), rng.integers(0, 2, (50, 256))
    calls["evaluate 256 bits"] = lambda **device: evaluate(tiled_q, tiled_db, ql, dl, metrics=metrics,
                                                             **device)  # the tiled pass (on AVX-512: of four words)
    odd_q, odd_db = rng.integers(0, 2, (4, 192)), rng.integers(0, 2, (50, 192))
    calls["evaluate 192 bits"] = lambda: evaluate(odd_q, odd_db, ql, dl, metrics=metrics)  # on AVX-512: any width
    # AP@k over the retrieved relevant items (the default here) takes the tie walk's _ratios kernel: one call without
    calls["evaluate average total"] = lambda: evaluate(q, db, ql, dl, metrics=metrics, ap_denominator="total")
    calls["evaluate multi-hot"] = lambda **device: evaluate(q, db, mh_q, mh_db, metrics=metrics, **device)
    calls["evaluate listed"] = lambda **device: evaluate(q, db, relevance=csr, metrics=metrics, **device)
    calls["evaluate stable multi-hot"] = lambda: evaluate(q, db, mh_q, mh_db, metrics=metrics, ties="stable")
    if bitsliced_pass():  # the full stable pass's vector sweep: large passes only (engine.LANES_PAIRS)
        many_q = PackedCodes(rng.integers(0, 2**63, (LANES_PAIRS >> 16, 1), dtype=np.uint64), 64)
        many_db = PackedCodes(rng.integers(0, 2**63, (1 << 16, 1), dtype=np.uint64), 64)
        calls["evaluate stable large"] = lambda: evaluate(many_q, many_db, np.arange(many_q.n) % 100,
                                                          np.arange(many_db.n) % 100, metrics=("AP",), ties="stable")
    top = ("AP@10", "nDCG@10", "P@10", "ERR@10")  # cutoffs only: the bounded stable pass
    calls["evaluate stable top"] = lambda **device: evaluate(q, db, ql, dl, metrics=top, ties="stable", **device)
    # the near scan has a kernel per code width: two words, and any wider; without ERR, the stable
    # finish's plain kernel (ERR and the optional sums take its _optional one)
    calls["evaluate stable top 128 bits"] = lambda: evaluate(wide_q, wide_db, ql, dl, metrics=top[:3], ties="stable")
    calls["evaluate stable top 256 bits"] = lambda: evaluate(tiled_q, tiled_db, ql, dl, metrics=top[:3],
                                                             ties="stable")
    # the ..._optional kernels: with the optional sums (bpref, interpolated precision, RBP, WAP)
    summed = ("Bpref", "RBP(p=0.8)", "WAP", "WAP@10", "RBP(p=0.8)@10")
    for ties in ("average", "stable"):
        calls[f"evaluate {ties} optional sums"] = lambda t=ties: evaluate(q, db, ql, dl, metrics=summed, ties=t)
    calls["evaluate stable top optional sums"] = lambda: evaluate(q, db, ql, dl, metrics=summed[3:], ties="stable")
    # spread=True / "range": the standard deviation's and the extremes' kernels on the counts and on lists
    calls["evaluate spread"] = lambda: evaluate(q, db, ql, dl, metrics=("AP", "nDCG@10", "P@10", "RR"), spread=True)
    # AP@k over the retrieved relevant items (the default here) takes the spread's _retrieved kernel
    calls["evaluate spread retrieved"] = lambda: evaluate(q, db, ql, dl, metrics=("AP@10",), spread=True)
    calls["evaluate spread range"] = lambda: evaluate(q, db, ql, dl, metrics=metrics[:5], spread="range")
    # WAP's columns take the _wap variants (WAP@k over the retrieved relevant items: _retrieved_wap)
    calls["evaluate spread WAP"] = lambda: evaluate(q, db, ql, dl, metrics=("WAP",), spread=True)
    calls["evaluate spread WAP@k"] = lambda: evaluate(q, db, ql, dl, metrics=("WAP@10",), spread=True)
    calls["search"] = lambda **device: (search(q, db, 5, **device), search(q, db, radius=20, **device))
    for ties in HAMMING_TIES:
        calls[f"rank_evaluate {ties}"] = lambda t=ties: rank_evaluate(y_true, y_pred, sizes, metrics=ranked, ties=t)
    calls["rank_evaluate trec"] = lambda: rank_evaluate(
        y_true, y_pred, sizes, metrics=ranked, ties="trec", doc_ids=np.arange(50))
    for ties in ("average", "stable"):
        calls[f"rank_evaluate {ties} optional sums"] = lambda t=ties: rank_evaluate(
            y_true, y_pred, sizes, metrics=("Bpref", "RBP"), ties=t)
    calls["rank_evaluate spread"] = lambda: rank_evaluate(y_true, y_pred, sizes, metrics=("AP", "nDCG@10", "RR"),
                                                          spread=True)
    calls["rank_evaluate spread retrieved"] = lambda: rank_evaluate(y_true, y_pred, sizes, metrics=("AP@10",),
                                                                    ap_denominator="retrieved", spread=True)
    calls["rank_evaluate spread range"] = lambda: rank_evaluate(y_true, y_pred, sizes, metrics=ranked,
                                                                ap_denominator="retrieved", spread="range")
    calls["trec.evaluate"] = lambda: _trec_files()
    # dicts (pytrec_eval's layout) take a join of their own (fasttie.trec.dict_join)
    calls["trec.evaluate dicts"] = lambda: trec.evaluate({"q1": {"d1": 1, "d2": 0}}, {"q1": {"d1": 2.0, "d2": 2.0}},
                                                         ["AP", "nDCG@10", "P@5"])
    # float32 vectors (embeddings); float64 ones compile a second variant on first use
    vectors = rng.standard_normal((54, 8)).astype(np.float32)
    calls["rescore_evaluate"] = lambda: rescore_evaluate(
        q, db, vectors[:4], vectors[4:], candidates=[5, 10], metrics=("nDCG@10", "RR", "NN-recall@5"),
        query_labels=mh_q, db_labels=mh_db, spread=True)
    calls["lambdarank"] = lambda: lambdarank(y_true, y_pred, sizes)
    subtopics = rng.integers(0, 2, (50, 3))
    calls["alpha_ndcg"] = lambda: alpha_ndcg(subtopics, y_pred, sizes, k=[5, 10], ties="trec", doc_ids=np.arange(50))
    calls["alpha_ndcg average"] = lambda: alpha_ndcg(subtopics, y_pred, sizes, k=[5, 10], ties="average")
    if _gpu_present():  # the GPU kernels are cached too (numba-cuda: PTX and cubin for this GPU)
        for name in ("evaluate average", "evaluate stable", "evaluate stable top", "evaluate 128 bits",
                     "evaluate 256 bits", "evaluate multi-hot", "evaluate listed", "search"):
            calls[f"{name} cuda"] = lambda call=calls[name]: call(device="cuda")
    seconds = {}
    for name, call in calls.items():
        started = time.perf_counter()
        call()
        seconds[name] = time.perf_counter() - started
        if progress is not None:
            progress(name, seconds[name])
    return seconds


def _gpu_present():
    """A real GPU that numba-cuda finds (not the simulator, whose kernels compile nothing)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    return available()


def _trec_files():
    with tempfile.TemporaryDirectory() as folder:
        qrels, run = os.path.join(folder, "qrels"), os.path.join(folder, "run")
        with open(qrels, "w") as f:
            f.write("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
        with open(run, "w") as f:
            f.write("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 2.0 t\nq2 Q0 d4 1 1.0 t\n")
        return trec.evaluate(qrels, run, ["AP", "nDCG@10", "P@5"])
