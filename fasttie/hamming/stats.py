"""Tie statistics: the mergeable layer between the histogram pass and the metrics.

Everything fasttie reports for a Hamming ranking comes from one table per query: how many
database items of each grade sit at each Hamming distance. Those counts are additive: the
table of a database is the sum of the tables of its shards, whatever the shard layout. So

    stats = ft.tie_stats(queries, shard_1, ...) + ft.tie_stats(queries, shard_2, ...)
    stats.finalize(["AP", "nDCG@100"])

is exactly (bitwise) ``ft.evaluate(queries, concatenated database, ...)`` for every tie mode but
``"stable"``, which also needs each item's database index. Any engine can produce and sum them
(Dask: :mod:`fasttie.dask`; Ray, Spark, a job array: pickle or ``np.save`` the counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..codes import PackedCodes
from ..errors import InputError
from ..metrics.families import asked_names
from ..result import Result
from .options import HammingOptions
from .spreads import spread_callbacks, with_spreads
from .engine import counts_of, hashing_metrics, result_from_counts

__all__ = ["TieStats", "finalized", "merge", "padded", "stack", "tie_stats"]


@dataclass(frozen=True)
class TieStats:
    """Per-query counts of database items by (Hamming distance, grade).

    Attributes
    ----------
    counts : ndarray of int64, shape (n_queries, n_bits + 1, n_grades)
        ``counts[i, d, g]``: items of grade g at distance d from query i (grade 0 = not
        relevant; binary relevance has grades 0 and 1).
    n_bits : int
        Code length.
    relevance : str
        "class", "multihot" or "listed" (how the grades were defined).

    Two TieStats of the same queries add up (``a + b``, :func:`merge`): exact, associative and
    commutative, since the counts are integers. Tables with fewer grades are padded with zeros.
    """

    counts: np.ndarray
    n_bits: int
    relevance: str

    def __sizeof__(self) -> int:
        # what dask's sizeof (sys.getsizeof) reports: the counts, so that distributed's memory
        # accounting, spilling and transfer costs see the real size of a shard's statistics
        return object.__sizeof__(self) + self.counts.nbytes

    @property
    def n_queries(self) -> int:
        """Number of queries (rows)."""
        return self.counts.shape[0]

    @property
    def n_db(self) -> int:
        """Database items counted (the same for every query)."""
        return int(self.counts[0].sum()) if self.n_queries else 0

    def __add__(self, other: "TieStats") -> "TieStats":
        if not isinstance(other, TieStats):
            return NotImplemented
        if other.n_queries != self.n_queries or other.n_bits != self.n_bits:
            raise InputError(
                f"cannot add tie statistics of {self.n_queries} queries x {self.n_bits} bits and "
                f"{other.n_queries} queries x {other.n_bits} bits: they must describe the same queries"
            )
        if other.relevance != self.relevance:
            raise InputError(f"cannot add tie statistics of {self.relevance!r} and {other.relevance!r} relevance")
        n_grades = max(self.counts.shape[2], other.counts.shape[2])
        total = padded(self.counts, n_grades) + padded(other.counts, n_grades)
        return TieStats(total, self.n_bits, self.relevance)

    def finalize(
        self, metrics: str | Sequence[str] = ("AP",), *, ties: str = "average", ap_denominator: str = "retrieved",
        gain: str = "exp2", empty: str = "zero", curves: bool | Sequence[int] = False, spread: bool | str = False,
        n_threads: int | None = None,
    ) -> Result:
        """Metrics from the counts, as :func:`fasttie.evaluate` computes them.

        Parameters
        ----------
        metrics, ap_denominator, gain, empty, curves, n_threads
            As in :func:`fasttie.evaluate`.
        ties : {"average", "optimistic", "pessimistic"}, default "average"
            ``"stable"`` needs the database order, not only the counts: use
            :func:`fasttie.evaluate` or :func:`fasttie.dask.evaluate`.
        spread : bool or "range", default False
            As :func:`fasttie.evaluate`'s (needs ``ties="average"``): True fills ``tie_std``,
            ``tie_min``, ``tie_max`` and their means, "range" the extremes alone; the spread over
            tie orders is a function of the counts alone, so it is bitwise the same.

        Returns
        -------
        Result
        """
        if ties == "stable":
            raise InputError(
                "ties='stable' needs each item's database index, which tie statistics do not keep; use "
                "fasttie.evaluate (or fasttie.dask.evaluate), or ties='average', 'optimistic' or 'pessimistic'"
            )
        options = HammingOptions.resolve(hashing_metrics(metrics), ties=ties, ap_denominator=ap_denominator,
                                         gain=gain, empty=empty, curves=curves, spread=spread)
        return finalized(self, metrics, options, n_threads=n_threads)


def finalized(stats: TieStats, metrics: str | Sequence[str], options: HammingOptions, *,
              n_threads: int | None = None, ranked: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> Result:
    """The Result of ``metrics`` from tie statistics under checked ``options`` (what
    :meth:`TieStats.finalize` and the sharded doors, :mod:`fasttie.dask` and :mod:`fasttie.torch`,
    return); ``ranked`` as :func:`fasttie.hamming.engine.result_from_counts` takes it (ties="stable")."""
    result = result_from_counts(stats, metrics, options, n_threads=n_threads, ranked=ranked)
    if not options.spread:
        return result
    parsed = hashing_metrics(metrics)
    on_counts, spread_of, extremes_of = spread_callbacks(options, parsed, stats.counts.shape[2], stats.n_db,
                                                         stats.n_bits, stats.relevance)
    hist = np.ascontiguousarray(stats.counts, dtype=np.int64)
    if not hist.flags.writeable:  # writable, as the histogram pass hands its counts over: one kernel signature
        hist = hist.copy()
    on_counts(0, stats.n_queries, hist, n_threads)  # per query: any split into blocks gives the same values
    # the spread is keyed by canonical names; keyed_as gives back the names as asked
    return with_spreads(result, parsed, spread_of, extremes_of).keyed_as(asked_names(metrics, diversity=False))


def padded(counts: np.ndarray, n_grades: int) -> np.ndarray:
    """Counts with the grade axis widened to ``n_grades`` (zeros), as tables of several grades add up."""
    if counts.shape[2] == n_grades:
        return counts
    out = np.zeros(counts.shape[:2] + (n_grades,), dtype=np.int64)
    out[:, :, : counts.shape[2]] = counts
    return out


def merge(stats: Iterable[TieStats]) -> TieStats:
    """Sum tie statistics of the same queries over database shards (any order, any grouping).

    Parameters
    ----------
    stats : iterable of TieStats

    Returns
    -------
    TieStats
    """
    stats = list(stats)
    if not stats:
        raise InputError("merge needs at least one TieStats")
    while len(stats) > 1:  # pairwise: a balanced tree, as a distributed reduction would do
        stats = [stats[i] + stats[i + 1] if i + 1 < len(stats) else stats[i] for i in range(0, len(stats), 2)]
    return stats[0]


def stack(parts: Iterable[TieStats]) -> TieStats:
    """The tie statistics of consecutive blocks of queries as one table (their grade axes padded
    to the widest: listed grades differ from block to block).

    Parameters
    ----------
    parts : sequence of TieStats
        Of the same database, in query order.

    Returns
    -------
    TieStats
    """
    parts = list(parts)
    if not parts:
        raise InputError("stack needs at least one TieStats")
    n_grades = max(p.counts.shape[2] for p in parts)
    return TieStats(np.concatenate([padded(p.counts, n_grades) for p in parts], axis=0), parts[0].n_bits,
                    parts[0].relevance)


def tie_stats(queries: npt.ArrayLike | PackedCodes, database: npt.ArrayLike | PackedCodes,
              query_labels: npt.ArrayLike | None = None, db_labels: npt.ArrayLike | None = None, *,
              relevance: Any = None, n_threads: int | None = None) -> TieStats:
    """Counts of database items by (Hamming distance, grade) for every query: the first half of
    :func:`fasttie.evaluate`, mergeable across database shards.

    Parameters
    ----------
    queries, database, query_labels, db_labels, relevance, n_threads
        As in :func:`fasttie.evaluate`; ``database`` may be one shard of a larger database
        (listed relevance then names the shard's own rows).

    Returns
    -------
    TieStats

    Examples
    --------
    A database cut in two shards gives the counts, and so the metrics, of the whole:

    >>> import numpy as np, fasttie as ft
    >>> q = np.array([[1, 1, 1, 1]]); db = np.array([[1, 1, 1, -1], [1, -1, 1, 1], [-1, -1, 1, 1]])
    >>> whole = ft.evaluate(q, db, [0], [0, 1, 0], metrics=["AP", "P@1"])
    >>> parts = ft.tie_stats(q, db[:2], [0], [0, 1]) + ft.tie_stats(q, db[2:], [0], [0])
    >>> parts.finalize(["AP", "P@1"]).mean == whole.mean
    True
    """
    return TieStats(*counts_of(queries, database, query_labels, db_labels, relevance=relevance, n_threads=n_threads))
