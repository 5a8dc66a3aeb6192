"""The diversity front doors' inputs, validated and packed for the kernels.

:func:`prepare_inputs` checks y_true (a 0/1 subtopic matrix), y_pred, group, doc_ids and ties,
raising errors that name the argument, and packs each document's subtopics into uint64 bit
masks (:class:`DiversityInputs`); :func:`check_cutoffs` reads alpha_ndcg's ``k`` and
:func:`empty_value` the ``empty`` policy. Shared by :func:`fasttie.diversity.diversity_evaluate`,
:func:`fasttie.alpha_ndcg` and :func:`fasttie.trec.evaluate` (through
:func:`fasttie.diversity.diversity_values`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .._kernels.alpha_ndcg import first_duplicate, pack_subtopics
from ..errors import InputError, InputTypeError
from ..finalize.values import group_sizes, read_only
from ..validation import numeric_array

TIE_RULES = ("stable", "trec", "pyndeval", "average")
_EMPTY_WORDS = {"zero": 0.0, "skip": math.nan, "one": 1.0}


def is_scalar_k(k):
    """Whether a cutoff argument is one integer (not a bool), rather than a sequence."""
    return isinstance(k, (numbers.Integral, np.integer)) and not isinstance(k, (bool, np.bool_))


def empty_value(empty):
    """The value given to queries without any relevant subtopic.

    Parameters
    ----------
    empty : float or {"zero", "skip", "one", "error"}
        A number, or a word: "zero" = 0.0, "skip" = NaN, "one" = 1.0.

    Returns
    -------
    float or None
        None for "error" (the caller raises when a query is empty).

    Raises
    ------
    InputError, InputTypeError
        Any other word, or a value that is not a number.
    """
    if isinstance(empty, str):
        if empty == "error":
            return None
        if empty in _EMPTY_WORDS:
            return _EMPTY_WORDS[empty]
        raise InputError(f"empty must be a number or one of 'zero', 'skip', 'one', 'error'; got {empty!r}")
    if isinstance(empty, (bool, np.bool_)) or not isinstance(empty, (numbers.Real, np.floating, np.integer)):
        raise InputTypeError(f"empty must be a number (the value of queries without a relevant subtopic) or "
                             f"'zero' / 'skip' / 'one' / 'error'; got {empty!r}")
    return float(empty)


def check_cutoffs(k):
    """alpha_ndcg's ``k``: sorted unique cutoffs and, per requested k, its column among them.

    Parameters
    ----------
    k : int or sequence of int
        Cutoffs >= 1, in the order the caller wants its output columns.

    Returns
    -------
    unique : ndarray of int64, shape (n_unique,)
        The cutoffs, sorted, each once.
    columns : ndarray of int, shape (len(k),)
        The column of each requested cutoff in ``unique``.

    Raises
    ------
    InputTypeError
        ``k`` not an integer or a sequence of integers.
    InputError
        No cutoff, or one < 1.

    Examples
    --------
    >>> check_cutoffs([20, 5, 20])
    (array([ 5, 20]), array([1, 0, 1]))
    """
    ks = [k] if is_scalar_k(k) else k
    if isinstance(ks, (str, bytes)):
        raise InputTypeError(f"k must be an integer or a sequence of integers, got {k!r}")
    try:
        ks = list(ks)
    except TypeError:
        raise InputTypeError(f"k must be an integer or a sequence of integers, got {k!r}") from None
    if not ks:
        raise InputError("k is empty; give at least one cutoff, e.g. k=10 or k=[5, 10, 20]")
    for value in ks:
        if not is_scalar_k(value):
            raise InputTypeError(f"k must be an integer or a sequence of integers, got {value!r} in k")
        if value < 1:
            raise InputError(f"k must be >= 1, got {int(value)}")
    unique = np.array(sorted({int(v) for v in ks}), dtype=np.int64)
    columns = np.searchsorted(unique, [int(v) for v in ks])
    return unique, columns


def _subtopic_masks(y_true):
    """(n, n_words) uint64 bit masks of a validated 2-D bool matrix (bit j of word w = column 64 w + j)."""
    n, n_subtopics = y_true.shape
    masks = np.empty((n, max(1, -(-n_subtopics // 64))), dtype=np.uint64)
    pack_subtopics(read_only(y_true.view(np.uint8)), masks, 0, n)
    return masks


def _check_y_true(y_true):
    y_true = numeric_array(y_true, "y_true", "a numeric or bool 0/1 matrix")
    if y_true.ndim != 2:
        raise InputError(f"y_true must be 2-D (n_documents, n_subtopics), got shape {y_true.shape}; "
                         f"for one subtopic use y_true.reshape(-1, 1)")
    if y_true.dtype != np.bool_:
        bad = (y_true != 0) & (y_true != 1)
        if bad.any():
            i, s = np.argwhere(bad)[0]
            raise InputError(f"y_true must hold only 0 and 1 (relevant to the subtopic or not); "
                             f"y_true[{i}, {s}] is {y_true[i, s]}")
        y_true = y_true != 0
    return np.ascontiguousarray(y_true)


def _doc_keys(doc_ids, sizes, n):
    """int64 keys ordered as the document ids, after checking one row per document and query."""
    doc_ids = np.asarray(doc_ids)
    if doc_ids.shape != (n,):
        raise InputError(f"doc_ids must have one id per row ({n}), got shape {doc_ids.shape}")
    if doc_ids.dtype.kind not in "iuUS":
        raise InputTypeError(f"doc_ids must be strings or integers, got dtype {doc_ids.dtype}")
    small_ints = doc_ids.dtype.kind == "i" or (doc_ids.dtype.kind == "u" and doc_ids.dtype.itemsize < 8)
    if small_ints and doc_ids.min() > np.iinfo(np.int64).min:  # the key is negated for ties="trec"
        keys = doc_ids.astype(np.int64)  # integers keep their order: no sort needed
    else:
        keys = np.unique(doc_ids, return_inverse=True)[1].ravel().astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    row = first_duplicate(read_only(keys), read_only(offsets))
    if row >= 0:
        query = int(np.searchsorted(offsets, row, side="right") - 1)
        raise InputError(f"document {doc_ids[row].item()!r} appears twice in query {query} (row {row}); "
                         f"each document must be one row (scored, or -inf if not retrieved)")
    return keys


@dataclass(frozen=True)
class DiversityInputs:
    """The kernels' read-only inputs: subtopic bit masks (n, n_words) uint64, scores (n,) float64
    (-inf: not retrieved), run_keys and ideal_keys (n,) int64 (equal scores rank by run key
    ascending; the greedy ideal picks the greatest ideal key), offsets (n_queries + 1,) int64 and
    sizes (n_queries,) int64."""

    masks: np.ndarray
    scores: np.ndarray
    run_keys: np.ndarray
    ideal_keys: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray


def prepare_inputs(y_true, y_pred, group, doc_ids, ties) -> DiversityInputs:
    """Validated, packed kernel inputs.

    Parameters
    ----------
    y_true, y_pred, group, doc_ids, ties
        As in :func:`fasttie.diversity.diversity_evaluate`.

    Returns
    -------
    DiversityInputs

    Raises
    ------
    InputTypeError, InputError
        Naming the argument: y_true not 2-D 0/1 or without rows, y_pred not 1-D of length n,
        NaN or +inf scores, an unknown tie rule, group sizes not >= 1 or not summing to n,
        doc_ids of the wrong length or kind, a document twice in one query,
        ties="trec"/"pyndeval" without doc_ids.
    """
    y_true = _check_y_true(y_true)
    n = y_true.shape[0]
    if n == 0:
        raise InputError("y_true has no rows: there is nothing to rank")
    y_pred = numeric_array(y_pred, "y_pred")
    if y_pred.shape != (n,):
        raise InputError(f"y_pred must be 1-D with one score per row of y_true ({n}), got shape {y_pred.shape}")
    y_pred = y_pred.astype(np.float64)
    bad = np.isnan(y_pred) | (y_pred == np.inf)
    if bad.any():
        raise InputError(f"y_pred has a NaN or +inf score at row {int(np.flatnonzero(bad)[0])}; "
                         f"scores must be finite, or -inf for a judged document the run does not retrieve")
    if not isinstance(ties, str):
        raise InputTypeError(f"ties must be a string, one of {TIE_RULES}; got {ties!r}")
    if ties not in TIE_RULES:
        raise InputError(f"ties must be one of {TIE_RULES}, got {ties!r}")
    sizes = group_sizes(group, n)
    if doc_ids is None:
        if ties in ("trec", "pyndeval"):
            raise InputError(f"ties={ties!r} orders equal scores by document id: pass doc_ids")
        ideal_keys = np.arange(n, dtype=np.int64)
    else:
        ideal_keys = _doc_keys(doc_ids, sizes, n)
    # equal scores rank by key ascending ("average" does not read the keys)
    run_keys = -ideal_keys if ties == "trec" else ideal_keys if ties == "pyndeval" else np.arange(n, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return DiversityInputs(read_only(_subtopic_masks(y_true)), read_only(y_pred), read_only(run_keys),
                           read_only(ideal_keys), read_only(offsets), sizes)
