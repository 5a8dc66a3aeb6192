"""The histogram pass on an NVIDIA GPU (numba-cuda): the same counts, so the same metrics.

Everything fasttie reports for a Hamming ranking comes from per-query counts of database items
by (Hamming distance, grade) (:class:`fasttie.TieStats`). This module computes those counts on
the GPU; the finalizers are the CPU code every other path uses, so ``ft.evaluate(...,
device="cuda")`` gives bitwise the results of the CPU (the counts are integers).

Needs the optional extra ``fasttie[cuda]`` (``numba-cuda``); nothing CUDA is imported unless a
call asks for the GPU. The CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) runs the same kernel on
a CPU-only machine, which is how the tests check it.

The kernel is in :mod:`fasttie._kernels_cuda` (outside `_kernels`, whose CPU kernels need no CUDA) (first version: integer atomics straight
to global memory; shared-memory tiles are the next step for speed).
"""

from __future__ import annotations

import numpy as np

from .errors import InputError

__all__ = ["available", "counts"]


def _cuda():
    try:
        from numba import cuda
    except ImportError:
        raise ImportError("device='cuda' needs numba-cuda: pip install 'fasttie[cuda]'") from None
    return cuda


def available() -> bool:
    """True when numba-cuda is installed and finds a GPU (or the CUDA simulator is on)."""
    try:
        return bool(_cuda().is_available())
    except ImportError:
        return False


def counts(query_codes, db_codes, spec, db_blocks=None):
    """Per-query counts (n_queries, n_bits + 1, n_grades) int64, computed on the GPU.

    Parameters
    ----------
    query_codes, db_codes : PackedCodes
    spec : RelevanceSpec
        From :func:`fasttie.relevance.make_relevance`; listed grades are moved on the CPU.
    db_blocks : int, optional
        Blocks along the database (default: enough for about 64k threads per query tile).

    Returns
    -------
    ndarray of int64
    """
    cuda = _cuda()
    if not cuda.is_available():
        raise InputError("device='cuda': numba-cuda finds no GPU (set NUMBA_ENABLE_CUDASIM=1 for the simulator, "
                         "or use device='cpu' / 'auto')")
    from ._kernels_cuda import CLASS, MULTIHOT, NONE, QUERY_TILE, THREADS, hist_kernel

    n_queries, n_db, n_bits = query_codes.n, db_codes.n, db_codes.n_bits
    kind = {"class": CLASS, "multihot": MULTIHOT, "listed": NONE}[spec.kind]
    hist = np.zeros((n_queries, n_bits + 1, spec.n_grades), dtype=np.int64)
    device_hist = cuda.to_device(hist)
    arrays = [cuda.to_device(np.ascontiguousarray(a)) for a in (
        query_codes.words, db_codes.words, spec.query_labels if len(spec.query_labels) else np.zeros(1, np.int32),
        spec.db_labels if len(spec.db_labels) else np.zeros(1, np.int32), spec.query_label_words,
        spec.db_label_words)]
    blocks = db_blocks or max(1, min(512, -(-n_db // THREADS)))
    grid = (-(-n_queries // QUERY_TILE), blocks)
    hist_kernel[grid, THREADS](arrays[0], arrays[1], kind, arrays[2], arrays[3], arrays[4], arrays[5], device_hist)
    hist = device_hist.copy_to_host()
    if spec.kind == "listed":  # listed items: from grade 0 to their grade, on the CPU
        from ._kernels.histogram import move_relevant
        from .scoring import read_only

        move_relevant(read_only(query_codes.words), read_only(db_codes.words), read_only(spec.indptr),
                      read_only(spec.indices), read_only(spec.grades), hist, 0, n_queries)
    return hist
