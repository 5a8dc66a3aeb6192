"""Exact evaluation across PyTorch DDP ranks: tie statistics summed with one ``all_reduce``.

Every rank holds all queries and one shard of the database. Each rank counts its shard's items
by (Hamming distance, grade) per query (:func:`fasttie.tie_stats`), one ``all_reduce`` of those
int64 counts gives every rank the counts of the whole database, and every rank finalizes the
same metrics: bitwise :func:`fasttie.evaluate` on the concatenated database. No code, score or
distance leaves its rank; what moves is O(n_queries x (n_bits + 1) x grades) integers.

``ties="stable"`` also needs each relevant item's rank in database order: the ranks before each
shard come from the earlier shards' per-distance counts (one ``reduce`` to each rank), each rank
ranks its own relevant items, and those ranks (8 bytes each, only the ones the metrics look
at) are gathered, as :mod:`fasttie.dask` does on a client.

Needs the optional extra ``fasttie[torch]``; works on any backend that reduces int64 tensors
(gloo on the CPU, nccl with the collectives on each rank's current CUDA device).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .codes import PackedCodes
from .conventions import HAMMING as _HAMMING_DOOR, takes_convention
from .hamming.collective import evaluate_on_ranks
from .hamming.engine import hashing_metrics
from .hamming.options import HammingOptions
from .result import Result

__all__ = ["evaluate_distributed"]


def _torch():
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        raise ImportError("fasttie.torch needs PyTorch: pip install 'fasttie[torch]'") from None
    return torch, dist


@takes_convention(_HAMMING_DOOR)
def evaluate_distributed(
    queries: npt.ArrayLike | PackedCodes,
    db_shard: npt.ArrayLike | PackedCodes,
    query_labels: npt.ArrayLike | None = None,
    db_labels_shard: npt.ArrayLike | None = None,
    *,
    relevance: Any = None,
    metrics: str | Sequence[str] = ("AP",),
    ties: str = "average",
    ap_denominator: str = "retrieved",
    gain: str = "exp2",
    empty: str = "zero",
    curves: bool | Sequence[int] = False,
    n_threads: int | None = None,
    group: Any = None,
    db_offset: int | None = None,
    n_db: int | None = None,
) -> Result:
    """:func:`fasttie.evaluate` of a database sharded over the ranks of a ``torch.distributed`` group.

    Call it on every rank of ``group`` (a collective call, like ``all_reduce``), each with all
    the queries and its own shard of the database; every rank returns the same Result.

    Parameters
    ----------
    queries : array_like or torch.Tensor of shape (n_queries, n_bits), or PackedCodes
        All queries, the same on every rank: ±1 / 0-1 / bool codes (numpy, torch CPU or CUDA).
    db_shard : array_like or torch.Tensor of shape (n_rows, n_bits), or PackedCodes
        This rank's rows of the database (0 rows allowed: the rank adds nothing). Codes on a
        CUDA device are counted there (:mod:`fasttie.hamming.gpu`, ``fasttie[cuda]``).
    query_labels, db_labels_shard : array_like or torch.Tensor, optional
        Class ids (1-D) or multi-hot rows (2-D) of all queries and of this shard's rows.
    relevance : tuple or scipy.sparse matrix, optional
        Listed relevance with **global** database ids, the same on every rank, as in
        :func:`fasttie.evaluate`. Each rank keeps the ids of its own rows: those of the shards
        before it in rank order, or those ``db_offset`` places.
    convention : str, optional
        "deephash" or "hashnet": one word for ``ties``, ``gain``, ``ap_denominator`` and ``empty``
        as :func:`fasttie.evaluate` takes it; options passed explicitly win.
    metrics, ties, ap_denominator, gain, empty, curves, n_threads
        As in :func:`fasttie.evaluate`. ``ties="stable"`` ranks ties in database order: rank
        r's shard before rank r + 1's, or the order ``db_offset`` gives.
    group : torch.distributed.ProcessGroup, optional
        The group whose ranks hold the shards (default: the whole world).
    db_offset : int or array_like of int, optional
        Where this shard's rows sit in the database: an int, the global index of its first row
        (rows ``db_offset .. db_offset + n_rows - 1``); or one global index per row, e.g. the
        indices a ``DistributedSampler`` gave this rank (``list(sampler)``). With indices, an
        index held more than once (the sampler's padding repeats the first indices so every
        rank gets as many) is counted once, on the lowest rank holding it; with int offsets,
        overlapping shards are refused. Every rank passes the same kind (all None, all int or
        all indices).
    n_db : int, optional
        The database size, checked: the shards must cover indices 0 .. n_db - 1 exactly once
        (after dropping repeated indices). Without ``db_offset`` the shard sizes must add up to
        it, so a sampler's padding is refused instead of counted twice.

    Returns
    -------
    Result
        On every rank, bitwise equal to ``fasttie.evaluate`` on the database in order (the
        shards in rank order, or each row at its ``db_offset`` index).

    Raises
    ------
    ImportError
        PyTorch is missing, or ``torch.distributed`` is not initialized.
    ValueError, TypeError
        On every rank, never a hang: the ranks disagree on the number of bits or queries, the
        relevance kind or the ``db_offset`` kind; the shards overlap, miss rows, or do not add up
        to ``n_db``; or an input error of :func:`fasttie.evaluate` on any rank (that rank raises
        its own error, the others name the rank).

    Notes
    -----
    Traffic per call: a few tiny vectors, then one ``all_reduce`` of n_queries x (n_bits + 1) x
    grades int64 counts; with ``db_offset`` indices an int32 owner table of n_db entries; with
    ``ties="stable"`` one reduce per rank of n_queries x (n_bits + 1) counts and the ranks of
    the relevant items the metrics see (all of them for metrics without a cutoff). Without
    ``db_offset`` or ``n_db`` the shards are taken as disjoint, in rank order.

    Examples
    --------
    On one process (a group of one), the result of :func:`fasttie.evaluate`:

    >>> import numpy as np, fasttie as ft, torch.distributed as dist, fasttie.torch
    >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29517", rank=0, world_size=1)
    >>> q = np.array([[1, 1]]); db = np.array([[1, -1], [-1, 1]])
    >>> fasttie.torch.evaluate_distributed(q, db, [0], [0, 1], metrics=["AP"]).mean
    {'AP': 0.75}
    >>> dist.destroy_process_group()
    """
    torch, dist = _torch()
    if not dist.is_available() or not dist.is_initialized():
        raise ImportError("fasttie.torch.evaluate_distributed: torch.distributed is not initialized; call "
                          "torch.distributed.init_process_group first (on every rank)")
    parsed = hashing_metrics(metrics)  # the same on every rank: errors here raise everywhere
    options = HammingOptions.resolve(parsed, ties=ties, ap_denominator=ap_denominator, gain=gain, empty=empty,
                                     curves=curves)
    return evaluate_on_ranks(_Comm(torch, dist, group), queries, db_shard, query_labels, db_labels_shard, relevance,
                             metrics, parsed, options, n_threads=n_threads, db_offset=db_offset, n_db=n_db)


class _Comm:
    """torch.distributed's collectives on int64 numpy arrays (a
    :class:`fasttie.hamming.collective.Collectives`), through tensors on the backend's device."""

    def __init__(self, torch, dist, group):
        self.torch, self.dist, self.group = torch, dist, group
        self.size = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        on_gpu = str(dist.get_backend(group)) == "nccl"
        self.device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")

    def _tensor(self, array, dtype=np.int64):
        # a copy: collectives write into their tensor (and reduce leaves junk on the other ranks)
        return self.torch.from_numpy(np.array(array, dtype=dtype, copy=True)).to(self.device)

    @staticmethod
    def _array(tensor):
        return tensor.cpu().numpy()

    def all_gather(self, vector):
        """(size, len) array: every rank's vector (the same length on every rank)."""
        mine = self._tensor(vector)
        out = [self.torch.empty_like(mine) for _ in range(self.size)]
        self.dist.all_gather(out, mine, group=self.group)
        return np.stack([self._array(t) for t in out])

    def all_reduce(self, array, op, dtype=np.int64):
        ops = {"sum": self.dist.ReduceOp.SUM, "max": self.dist.ReduceOp.MAX, "min": self.dist.ReduceOp.MIN}
        tensor = self._tensor(array, dtype)
        self.dist.all_reduce(tensor, op=ops[op], group=self.group)
        return self._array(tensor)

    def reduce_sum_to(self, array, target):
        """The sum over ranks of ``array`` on rank ``target`` (group rank); None elsewhere."""
        tensor = self._tensor(array)
        dst = target if self.group is None else self.dist.get_global_rank(self.group, target)
        self.dist.reduce(tensor, dst=dst, op=self.dist.ReduceOp.SUM, group=self.group)
        return self._array(tensor) if self.rank == target else None
