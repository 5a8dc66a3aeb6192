"""Facade for LambdaRank: per-document gradients and hessians for gradient-boosted rankers."""

from __future__ import annotations

import math
import numbers

import numpy as np
import numpy.typing as npt

from .._kernels.lambdarank import lambdarank_queries, pair_rows
from .._kernels.radix_sort import sort_keys_into
from ..finalize.cold_start import callee_addresses
from ..parallel import resolve_threads, run_blocks
from ..finalize.values import gain_table, group_sizes, read_only
from ..errors import InputError, InputTypeError
from ..validation import first_not_finite, numeric_array

__all__ = ["lambdarank"]

_MAX_EXP2_LABEL = 30  # 2**30 - 1: LightGBM's default label_gain stops at label 30
_DENSE_LABELS = 1 << 16  # gain tables up to this many labels; beyond, labels are renumbered


def lambdarank(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    sigma: float = 1.0,
    gain: str = "exp2",
    k: int | None = None,
    ideal_k: str = "k",
    damp_score_gap: bool = False,
    rescale: bool = False,
    hessian_scale: float = 1.0,
    weights: npt.ArrayLike | None = None,
    n_threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """LambdaRank gradients (lambdas) and hessians of nDCG, one per document.

    The defaults are Burges' LambdaRank (MSR-TR-2010-82, section 4): each query's documents are
    ranked by ``y_pred`` (a stable sort: equal scores keep input order, as LightGBM), and every
    pair with ``y_true[i] > y_true[j]`` adds

    * ``lambda_ij = sigma * |delta nDCG_ij| * rho_ij``, ``rho_ij = 1 / (1 + exp(sigma (s_i - s_j)))``,
      subtracted from document i's lambda and added to document j's,
    * ``sigma**2 * |delta nDCG_ij| * rho_ij * (1 - rho_ij)`` to both hessians,

    where ``delta nDCG_ij`` is the change of nDCG when i and j swap their current ranks. So
    ``lambdas`` is dC/ds of ``C = sum |delta nDCG_ij| log(1 + exp(-sigma (s_i - s_j)))`` with the
    weights held fixed: negative for documents that should move up, ``y_pred -= lr * lambdas``
    descends, and the arrays plug into LightGBM and XGBoost custom objectives as they are.

    Parameters
    ----------
    y_true : array_like of int, shape (n,) or (n_queries, n_docs)
        Relevance labels: integers >= 0 (integer-valued floats are accepted).
    y_pred : array_like of float, same shape as y_true
        Current scores, finite.
    group : array_like of int, optional
        Sizes of consecutive queries (LightGBM / XGBoost style), summing to n. Without it a
        1-D input is one query; a 2-D input is one query per row (do not pass group).
    sigma : float, default 1.0
        Steepness of the logistic (LightGBM ``sigmoid``), > 0.
    gain : {"exp2", "linear"} or array_like of float, default "exp2"
        Gain of label l: ``2**l - 1`` (Burges, LightGBM's default ``label_gain``; labels up to
        30), ``l``, or ``gain[l]`` for a per-label table (LightGBM ``label_gain``): finite,
        >= 0, non-decreasing, with an entry for every label present.
    k : int, optional
        Truncation (LightGBM ``lambdarank_truncation_level``): only pairs with at least one
        document in the current top k by ``y_pred``. None: all pairs.
    ideal_k : {"k", "full"}, default "k"
        Normalise by the ideal DCG@k (LightGBM) or by the ideal DCG of the whole list. Only
        matters when ``k`` is given.
    damp_score_gap : bool, default False
        Divide each pair's ``|delta nDCG|`` by ``0.01 + |s_i - s_j|`` (skipped in a query whose
        scores are all equal): the first half of LightGBM's ``lambdarank_norm``.
    rescale : bool, default False
        Multiply a query's lambdas and hessians by ``log2(1 + S) / S``, S = twice the sum of
        the pair lambdas: the second half of LightGBM's ``lambdarank_norm``. Its default
        ``lambdarank_norm=true`` is ``damp_score_gap=True, rescale=True``.
    hessian_scale : float, default 1.0
        Multiplies the hessians (> 0): 2 gives XGBoost's LambdaMART hessians.
    weights : array_like of float, optional
        Query weights (>= 0), multiplying a query's lambdas and hessians: one per query
        (n_queries,), or one per row (n,) constant within each query (LightGBM passes row
        weights). With a 2-D input, one per row of the matrix.
    n_threads : int, optional
        Threads for this call (default: see :mod:`fasttie.parallel`; one thread for tiny
        inputs). The result does not depend on it.

    Returns
    -------
    lambdas : ndarray of float64, shape of y_true
        dC/ds per document, aligned with the input rows.
    hessians : ndarray of float64, shape of y_true
        Diagonal second derivatives (>= 0) per document.

    Raises
    ------
    TypeError
        Non-numeric arrays, non-integer group sizes, options of the wrong type.
    ValueError
        Shape mismatch, NaN or infinite scores, negative or non-integer labels, exp2 labels
        above 30, a gain table too short, bad group sizes, ``sigma <= 0``, ``k < 1``, bad
        weights.

    Notes
    -----
    Positions are the current ranks by ``y_pred``, discount ``1 / log2(1 + rank)``, ideal DCG
    from the labels sorted descending. A query with one document, with all labels equal, or
    with ideal DCG = 0 gets zeros. Per query the cost is one sort and ``n x min(n, k)`` pairs;
    queries run in parallel and each is written by one thread, so results are identical for
    any thread count. LightGBM evaluates the logistic through a table (about 1e-5 relative)
    and returns float32; fasttie computes it in float64 without a table.

    Examples
    --------
    Two equally scored documents: the stable sort keeps the relevant one (row 1) second, so it
    gets a negative lambda (push up) and the other a positive one:

    >>> import fasttie as ft
    >>> lambdas, hessians = ft.lambdarank([0, 1], [0.0, 0.0])
    >>> lambdas.round(6).tolist(), hessians.round(6).tolist()
    ([0.184535, -0.184535], [0.092268, 0.092268])

    A LightGBM custom objective (no sign change; ``group`` = the Dataset's query sizes), here
    with the settings of LightGBM's own ``objective="lambdarank"`` at its defaults:

    >>> def objective(preds, train_data):                             # doctest: +SKIP
    ...     return ft.lambdarank(train_data.get_label(), preds, train_data.get_group(),
    ...                          k=30, damp_score_gap=True, rescale=True)
    >>> booster = lightgbm.train({"objective": objective}, train_set)  # doctest: +SKIP

    XGBoost (``obj=`` of ``xgboost.train``): ``hessian_scale=2.0`` gives the gradients of its
    ``rank:ndcg`` with ``lambdarank_pair_method="topk"``, ``lambdarank_normalization=False``,
    ``lambdarank_score_normalization=False`` and a pair count covering the whole list (checked
    on tie-free scores).
    """
    sigma = _positive_number("sigma", sigma)
    hessian_scale = _positive_number("hessian_scale", hessian_scale)
    for name, flag in (("damp_score_gap", damp_score_gap), ("rescale", rescale)):
        if not isinstance(flag, (bool, np.bool_)):
            raise InputTypeError(f"{name} must be True or False, got {flag!r}")
    if k is not None:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
            raise InputTypeError(f"k must be a positive integer or None, got {k!r}")
        if k < 1:
            raise InputError(f"k must be >= 1 (the truncation level), got {k}; use k=None for all pairs")
    if not isinstance(ideal_k, str) or ideal_k not in ("k", "full"):
        raise InputError(f"ideal_k must be 'k' (ideal DCG@k) or 'full' (whole list), got {ideal_k!r}")

    labels, y_pred, sizes, shape = _validated(y_true, y_pred, group)
    max_label = int(labels.max())
    gain_table = _gain_table(gain, max_label)
    if len(gain_table) <= max_label:  # large linear labels: number the distinct values instead
        values, labels = np.unique(labels, return_inverse=True)
        gain_table = values.astype(np.float64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    query_weights = _query_weights(weights, offsets)

    longest = int(sizes.max())
    discount = 1.0 / np.log2(np.arange(2, longest + 2, dtype=np.float64))
    big = np.iinfo(np.int64).max
    k_pairs = big if k is None else int(k)
    k_ideal = k_pairs if ideal_k == "k" else big
    lambdas = np.empty(len(labels))
    hessians = np.empty(len(labels))
    pairs = int((sizes * np.minimum(sizes, k_pairs)).sum())
    arrays = [read_only(a) for a in (offsets, y_pred, labels, gain_table, discount, query_weights)]
    options = (sigma, k_pairs, k_ideal, bool(damp_score_gap), bool(rescale), hessian_scale)
    # the pair rows and the sort are called through their addresses: on a cold cache a helper
    # compiles them while this process compiles the ranking, the ideal DCG and the layout
    rows, sort = callee_addresses([pair_rows, sort_keys_into], n_threads, lambda: lambdarank_queries(
        *arrays, *options, lambdas, hessians, 0, 0, np.uint64(0), np.uint64(0)))
    run_blocks(lambda lo, hi: lambdarank_queries(*arrays, *options, lambdas, hessians, lo, hi, rows, sort),
               len(sizes), resolve_threads(n_threads, 4 * pairs))
    return lambdas.reshape(shape), hessians.reshape(shape)


def _positive_number(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InputTypeError(f"{name} must be a positive number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{name} must be finite and > 0, got {value!r}")
    return float(value)


def _numeric(name, values):
    return numeric_array(values, name)


def _validated(y_true, y_pred, group):
    """(int64 labels, float64 scores, query sizes, output shape), one pass per check: this runs
    on every boosting round, so it must stay cheap next to the kernel."""
    y_true = _numeric("y_true", y_true)
    y_pred = _numeric("y_pred", y_pred)
    if y_true.shape != y_pred.shape:
        raise InputError(f"y_true has shape {y_true.shape} but y_pred has shape {y_pred.shape}")
    shape = y_true.shape
    if y_true.ndim == 2:
        if group is not None:
            raise InputError("with 2-D y_true / y_pred every row is a query: do not pass group")
        group = np.full(shape[0], shape[1], dtype=np.int64)
    elif y_true.ndim != 1:
        raise InputError(f"y_true must be 1-D (with group) or 2-D (one query per row), got shape {shape}")
    y_true = y_true.ravel()
    y_pred = np.ascontiguousarray(y_pred.ravel(), dtype=np.float64)
    n = len(y_true)
    if n == 0:
        raise InputError("y_true is empty: there is nothing to rank")
    row = first_not_finite(y_pred)
    if row is not None:
        raise InputError(f"y_pred has a NaN or infinite score at row {row}")
    if np.issubdtype(y_true.dtype, np.integer) or y_true.dtype == np.bool_:
        labels = np.asarray(y_true, dtype=np.int64)  # no copy when already int64
        if labels.min() < 0:
            row = int(np.argmin(labels))
            raise InputError(f"y_true must hold labels >= 0; row {row} is {labels[row]}")
    else:
        labels = y_true.astype(np.int64)  # NaN, inf and fractions do not survive the round trip
        bad = labels != y_true
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(f"y_true must hold integer labels (LambdaRank gains are per label); row {row} is "
                             f"{y_true[row]}")
        if labels.min() < 0:
            row = int(np.argmin(labels))
            raise InputError(f"y_true must hold labels >= 0; row {row} is {y_true[row]}")
    return labels, y_pred, group_sizes(group, n), shape


def _gain_table(gain, max_label):
    """Gain of each label 0..max_label, float64."""
    if isinstance(gain, str):
        if gain == "exp2":
            if max_label > _MAX_EXP2_LABEL:
                raise InputError(
                    f"exp2 gain supports labels up to {_MAX_EXP2_LABEL}, got {max_label}; "
                    "use gain='linear' or pass a gain table"
                )
            return gain_table(gain, max_label + 1)
        if gain == "linear":
            return gain_table(gain, min(max_label, _DENSE_LABELS) + 1)
        raise InputError(f"gain must be 'exp2', 'linear' or an array of per-label gains, got {gain!r}")
    table = numeric_array(gain, "gain", "'exp2', 'linear' or a numeric array of per-label gains").astype(np.float64)
    if table.ndim != 1:
        raise InputError(f"a gain table must be 1-D (gain[label]), got shape {table.shape}")
    if len(table) <= max_label:
        raise InputError(
            f"the gain table has {len(table)} entries (labels 0..{len(table) - 1}) but the largest label is "
            f"{max_label}; give one gain per label up to {max_label}"
        )
    if not np.isfinite(table).all() or (table < 0).any():
        raise InputError("gain table entries must be finite and >= 0")
    if (np.diff(table) < 0).any():
        raise InputError("the gain table must be non-decreasing (a higher label must not have a lower gain)")
    return table


def _query_weights(weights, offsets):
    """One float64 weight per query from per-query or per-row (constant within a query) weights."""
    n_queries = len(offsets) - 1
    if weights is None:
        return np.ones(n_queries)
    weights = numeric_array(weights, "weights").astype(np.float64)
    n_rows = int(offsets[-1])
    if weights.ndim != 1 or len(weights) not in (n_queries, n_rows):
        raise InputError(
            f"weights must have one entry per query ({n_queries}) or one per row ({n_rows}), got shape {weights.shape}"
        )
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise InputError("weights must be finite and >= 0")
    if len(weights) == n_queries:
        return weights  # per query (when n_rows == n_queries every query has one row: both readings agree)
    first = weights[offsets[:-1]]
    differs = np.repeat(first, np.diff(offsets)) != weights
    if differs.any():
        row = int(np.flatnonzero(differs)[0])
        q = int(np.searchsorted(offsets, row, side="right") - 1)
        raise InputError(
            f"per-row weights must be constant within each query (query {q} has {first[q]} and {weights[row]}); "
            "pass one weight per query"
        )
    return first
