"""What the finalizer computes for a set of metrics: one plan for the Hamming and ranked-list doors.

Both doors turn tie statistics into base quantities with the kernels of
:mod:`fasttie._kernels.finalize` (through :mod:`fasttie._kernels.hamming_ties` for histograms and
:mod:`fasttie._kernels.score_ties` for scored lists). :func:`finalize_plan` decides, once, what those
kernels are given: the cutoff columns and RBP persistences, the optional sums and the recall levels
of interpolated precision, whether AP@k over the retrieved relevant items needs its hypergeometric
ratios, the discount table, ERR's cutoffs, and which kernel variant runs. A door builds its arrays and calls the variant the plan names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels.finalize import IPREC, N_SCALARS
from .values import (WHOLE_LIST, cutoff_list, dcg_depth, discount_table, optional_sums, read_only, reads_ratio,
                      recall_levels)

__all__ = ["FinalizePlan", "err_columns", "finalize_plan"]


@dataclass(frozen=True)
class FinalizePlan:
    """The finalizer's inputs that depend on the metrics and options only (not on the data).

    Attributes
    ----------
    cutoffs : ndarray of int64, shape (K,)
        Sorted cutoff columns, a cutoff repeated for each RBP persistence asked at it
        (:func:`fasttie.finalize.values.cutoff_list`); read-only.
    log_p : ndarray of float64, shape (K,)
        Log of each column's RBP persistence; read-only.
    optional : int
        Bit mask of the optional sums (``fasttie._kernels.finalize.OPTIONAL_*``).
    need_ratio : bool
        Whether the tie walk computes AP_RET / WAP_RET, E[numerator / hits@k]: only for AP@k,
        WAP@k or GMAP@k over the retrieved relevant items with k below ``depth`` (at or past the
        end of every list hits@k is fixed and :func:`fasttie.finalize.values.metric_values` divides the
        numerator by it instead).
    discount : ndarray of float64, shape (D + 1,)
        DCG discount prefix sums to the depth the DCG metrics need (:func:`fasttie.finalize.values.dcg_depth`);
        read-only.
    err_cutoffs : ndarray of int64, shape (E,)
        Sorted cutoffs of the ERR metrics (WHOLE_LIST for ERR without @k); read-only, empty
        without ERR.
    err_column : dict of int -> int
        Cutoff -> its column in ``err_cutoffs``.
    levels : ndarray of float64, shape (L,)
        The recall levels of interpolated precision, ascending (:func:`fasttie.finalize.values.recall_levels`;
        empty without IPrec or 11pt); :meth:`new_scalars` hands them to the kernels.
    """

    cutoffs: np.ndarray
    log_p: np.ndarray
    optional: int
    need_ratio: bool
    discount: np.ndarray
    err_cutoffs: np.ndarray
    err_column: dict
    levels: np.ndarray

    def new_scalars(self, n) -> np.ndarray:
        """The finalizer's per-query scalars of ``n`` queries, (n, N_SCALARS + L) float64, with
        the recall levels written where the kernels read them and write their interpolated
        precisions (``scalars[:, IPREC:]``, see :mod:`fasttie._kernels.finalize`). The levels
        travel in an array every kernel already takes: no kernel grows an argument, and any set
        of levels runs the code compiled for the eleven standard ones."""
        scalars = np.empty((n, N_SCALARS + len(self.levels)))
        scalars[:, IPREC:] = self.levels
        return scalars

    @property
    def variant(self) -> str:
        """The tie-walk kernel to call: "optional" (the optional sums, and the ratios), "ratios"
        (the ratios only) or "plain". A door without a ratios-only kernel calls "optional" for it;
        the fixed-order kernels compute the ratios anyway (see :attr:`fixed_variant`)."""
        if self.optional:
            return "optional"
        return "ratios" if self.need_ratio else "plain"

    @property
    def fixed_variant(self) -> str:
        """The fixed-order kernel to call (ties in index or key order, whose ratios cost no
        hypergeometric sums): "optional" or "plain"."""
        return "optional" if self.optional else "plain"

    def kernel(self, plain, optional, ratios=None, *, fixed=False, err_in_optional=False):
        """The one picker of a door's finalize kernels: of a door's variants (numba dispatchers
        made from one source, :func:`fasttie._kernels._jit.jit_variants`), the one this plan runs.

        Parameters
        ----------
        plain, optional : numba dispatchers
            Without and with the optional sums (bpref, interpolated precision, RBP, WAP's sums).
        ratios : numba dispatcher, optional
            The tie walk with the ratios alone; a door without one runs ``optional`` for them.
        fixed : bool, default False
            A fixed order's kernels (ties in index or key order): their ratios cost nothing, so
            only the optional sums pick (:attr:`fixed_variant`).
        err_in_optional : bool, default False
            ``optional`` also computes ERR (the stable passes' finish, whose ERR takes the ranks it
            places): a plan with ERR runs it. Other doors run ERR as a pass of its own.

        Returns
        -------
        numba dispatcher
        """
        variant = self.fixed_variant if fixed else self.variant
        if err_in_optional and len(self.err_cutoffs):
            variant = "optional"
        if variant == "ratios":
            return optional if ratios is None else ratios
        return optional if variant == "optional" else plain

    def arguments(self, *, fixed=False) -> tuple:
        """The plan's part of a finalize kernel's arguments, in the order every kernel takes them:
        ``(cutoffs, log_p, discount, need_ratio, optional)`` for a tie walk, without ``need_ratio``
        for a fixed order's kernels (``fixed``: their ratios cost nothing)."""
        if fixed:
            return self.cutoffs, self.log_p, self.discount, self.optional
        return self.cutoffs, self.log_p, self.discount, self.need_ratio, self.optional

    def err_index(self, metric) -> int:
        """The column of ERR metric ``metric`` in ``err_cutoffs``."""
        return self.err_column[WHOLE_LIST if metric.k is None else metric.k]


def err_columns(metrics) -> tuple[np.ndarray, dict]:
    """(sorted int64 cutoffs, cutoff -> column) of the ERR metrics among ``metrics`` (parsed);
    WHOLE_LIST stands for ERR of the whole list."""
    cutoffs = np.array(sorted({WHOLE_LIST if m.k is None else m.k for m in metrics if m.base == "ERR"}),
                       dtype=np.int64)
    return cutoffs, {int(k): i for i, k in enumerate(cutoffs)}


def finalize_plan(metrics, ties, ap_denominator, depth) -> FinalizePlan:
    """The plan of the finalizer for ``metrics`` (parsed) on lists of at most ``depth`` items.

    Parameters
    ----------
    metrics : list of Metric
        The metrics one finalizer pass computes (radius metrics are passed over).
    ties : str
        The tie mode (the optional sums refuse interpolated precision under "average").
    ap_denominator : {"retrieved", "total", "min"}
    depth : int
        The longest ranked list of the call: the database size for Hamming ranking, the longest
        query (retrieved and unretrieved judged documents) for ranked lists.

    Returns
    -------
    FinalizePlan

    Raises
    ------
    fasttie.errors.InputError
        Interpolated precision under ``ties="average"`` (see :func:`fasttie.finalize.values.optional_sums`).
    """
    cutoffs, log_p = cutoff_list(metrics)
    need_ratio = bool(any(reads_ratio(m, ap_denominator, depth) for m in metrics))
    err_cutoffs, err_column = err_columns(metrics)
    return FinalizePlan(
        cutoffs=read_only(cutoffs), log_p=read_only(log_p), optional=optional_sums(metrics, ties),
        need_ratio=need_ratio, discount=read_only(discount_table(dcg_depth(metrics, depth))),
        err_cutoffs=read_only(err_cutoffs), err_column=err_column, levels=recall_levels(metrics),
    )
