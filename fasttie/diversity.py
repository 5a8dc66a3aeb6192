"""Diversity evaluation: alpha-nDCG@k (Clarke et al., SIGIR 2008) with ndeval's greedy ideal.

The facade validates everything and packs each document's subtopics into uint64 bit masks;
``_kernels/alpha_ndcg.py`` ranks, scores and builds the greedy ideal, parallel over queries.
It also holds the grammar of the diversity metric names that :func:`fasttie.trec.evaluate`
accepts (``alpha_nDCG@k``, ``alpha_nDCG(alpha=0.3)@k``).

Package-internal layer, shared by :func:`alpha_ndcg` and :func:`fasttie.trec.evaluate`:
:func:`alpha_dcg` (validated inputs -> run and ideal alpha-DCG at every cutoff, before the
division and the empty-query policy) and :func:`empty_value` (the value of a query without any
relevant subtopic).
"""

from __future__ import annotations

import math
import numbers
import re

import numpy as np

from ._kernels.alpha_ndcg import alpha_dcg_queries, first_duplicate, pack_subtopics
from .parallel import resolve_threads, run_blocks
from .scoring import group_sizes, read_only
from .errors import InputError, InputTypeError
from .validation import numeric_array

__all__ = ["alpha_ndcg"]

DEFAULT_ALPHA = 0.5
TIE_RULES = ("stable", "trec", "pyndeval")
_EMPTY_WORDS = {"zero": 0.0, "skip": math.nan, "one": 1.0}


def alpha_ndcg(
    y_true,
    y_pred,
    group=None,
    *,
    k=10,
    alpha: float = DEFAULT_ALPHA,
    empty=0.0,
    doc_ids=None,
    ties: str = "stable",
    n_threads: int | None = None,
) -> np.ndarray:
    """alpha-nDCG@k of ranked lists judged per subtopic (novelty and diversity).

    The gain of the document at rank r is the sum over its subtopics s of
    ``(1 - alpha) ** c_s``, where ``c_s`` counts the documents ranked above it that have
    subtopic s; alpha-DCG@k sums gain / log2(1 + r) over r <= k, and alpha-nDCG@k divides it
    by the alpha-DCG@k of the greedy ideal ordering of all judged documents of the query
    (ndeval's definition, the one TREC Web track results use).

    Parameters
    ----------
    y_true : array_like of 0/1 (bool, int or float), shape (n, n_subtopics)
        One row per document of each query (judged, retrieved or both): ``y_true[i, s] = 1``
        when document i is relevant to subtopic s. Rows of the queries are consecutive.
    y_pred : array_like of float, shape (n,)
        Run scores, ranked descending. ``-inf`` marks a judged document the run does not
        retrieve: it counts for the ideal only. NaN and +inf are errors.
    group : array_like of int, optional
        Sizes of consecutive queries (LightGBM / XGBoost style), summing to n; None = one query.
    k : int or sequence of int, default 10
        Cutoff(s) >= 1. A sequence gives one output column per cutoff, in the order given.
    alpha : float, default 0.5
        Redundancy penalty in [0, 1]; 0 gives the graded nDCG with grade = number of subtopics.
    empty : float or {"zero", "skip", "one", "error"}, default 0.0
        Value of a query without any relevant subtopic (its ideal alpha-DCG is 0): a number
        (ndeval reports 0.0), "skip" = NaN, or "error" to raise ``ValueError``.
    doc_ids : array_like of str or int, shape (n,), optional
        Document ids. They decide the greedy's ties (the greatest id is picked first, as
        ndeval's ``strcmp``) and the "trec" / "pyndeval" run orders; a document may appear
        only once per query. Without them a document's id is its row position, so the greedy
        picks the later row of a tie.
    ties : {"stable", "trec", "pyndeval"}, default "stable"
        Order of equal scores in the run: "stable" keeps input order; "trec" puts the larger
        document id first (trec_eval, ``ndeval -traditional``); "pyndeval" the smaller
        (pyndeval and ir_measures sort by score, then docno ascending). The last two need
        ``doc_ids``.
    n_threads : int, optional
        Threads for this call (see :mod:`fasttie.parallel`); results do not depend on it.

    Returns
    -------
    ndarray of float64, shape (n_queries,) for an int k, (n_queries, len(k)) for a sequence

    Raises
    ------
    TypeError
        Non-numeric inputs, a non-integer k, a non-numeric alpha, a bad ``empty`` / ``ties``.
    ValueError
        y_true not 2-D 0/1, y_pred not 1-D of length n, NaN or +inf scores, alpha outside
        [0, 1], k < 1, group sizes not >= 1 or not summing to n, doc_ids of the wrong length,
        a document twice in one query, ties="trec"/"pyndeval" without doc_ids, or an empty
        query with ``empty="error"``.

    Notes
    -----
    The ideal is ndeval's greedy: at each rank, the document with the largest gain given those
    already placed; ties go to the greatest document id. Finding the best ordering is
    NP-hard and the greedy is not always optimal, so a run can score above 1 (as in ndeval);
    values are not clipped. Gains are added in ascending subtopic (column) order, as ndeval
    does, so ties between equal float64 gains resolve as ndeval's for any alpha (pyndeval
    numbers subtopics by first appearance in its qrels instead: at an alpha whose powers are
    not exact in binary, e.g. 0.3, a near-tie can then fall the other way). Discount
    1/log2(1 + r) at rank r (1-based). Past the end of a list, alpha-DCG@k equals its value at
    the list's length. Cost per query: O(n x k x words) for the greedy, k picks only.

    Examples
    --------
    Two subtopics; the run repeats subtopic 0 before covering subtopic 1:

    >>> import numpy as np, fasttie as ft
    >>> y_true = np.array([[1, 0], [1, 0], [0, 1]])
    >>> ft.alpha_ndcg(y_true, [3.0, 2.0, 1.0], k=[1, 2, 3]).round(4)
    array([[1.    , 0.8066, 0.9652]])

    Documents "b" and "c" tie: input order ranks "b" second, trec's order "c" (larger id):

    >>> ft.alpha_ndcg(y_true, [2.0, 1.0, 1.0], k=2).round(4)
    array([0.8066])
    >>> ft.alpha_ndcg(y_true, [2.0, 1.0, 1.0], k=2, ties="trec", doc_ids=["a", "b", "c"]).round(4)
    array([1.])
    """
    dcg, idcg, sizes, columns = alpha_dcg(y_true, y_pred, group, k=k, alpha=alpha, doc_ids=doc_ids, ties=ties,
                                          n_threads=n_threads)
    fill = empty_value(empty)
    is_empty = idcg[:, -1] == 0.0  # no relevant subtopic: every ideal gain is 0
    if fill is None and is_empty.any():
        raise InputError(f"{int(is_empty.sum())} of {len(sizes)} queries have no relevant subtopic; "
                         f"choose empty=0.0, 1.0 or 'skip'")
    values = np.zeros_like(dcg)
    np.divide(dcg, idcg, out=values, where=idcg > 0)
    values[is_empty] = fill
    values = values[:, columns]
    return values[:, 0] if _is_scalar_k(k) else values


def _is_scalar_k(k):
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


def check_alpha(alpha, name="alpha"):
    """alpha as a float in [0, 1], or TypeError / ValueError naming it."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, (numbers.Real, np.floating, np.integer)):
        raise InputTypeError(f"{name} must be a number in [0, 1], got {alpha!r}")
    alpha = float(alpha)
    if not 0.0 <= alpha <= 1.0:  # also rejects NaN
        raise InputError(f"{name} must be in [0, 1] (the redundancy penalty), got {alpha!r}")
    return alpha


def _cutoffs(k):
    """Sorted unique cutoffs and, per requested k, its column among them."""
    ks = [k] if _is_scalar_k(k) else k
    if isinstance(ks, (str, bytes)):
        raise InputTypeError(f"k must be an integer or a sequence of integers, got {k!r}")
    try:
        ks = list(ks)
    except TypeError:
        raise InputTypeError(f"k must be an integer or a sequence of integers, got {k!r}") from None
    if not ks:
        raise InputError("k is empty; give at least one cutoff, e.g. k=10 or k=[5, 10, 20]")
    for value in ks:
        if not _is_scalar_k(value):
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


def alpha_dcg(y_true, y_pred, group=None, *, k=10, alpha=DEFAULT_ALPHA, doc_ids=None, ties="stable",
              n_threads=None):
    """Run and ideal alpha-DCG at the sorted unique cutoffs, after validating every input.

    Parameters and raises as in :func:`alpha_ndcg` (without ``empty``): alpha-nDCG is
    ``dcg / idcg`` where ``idcg > 0``; a query with ``idcg == 0`` has no relevant subtopic and
    is left to the caller's empty-query policy.

    Returns
    -------
    dcg, idcg : ndarray of float64, shape (n_queries, n_unique_cutoffs)
        alpha-DCG of the run and of the greedy ideal.
    sizes : ndarray of int64, shape (n_queries,)
        Rows per query.
    columns : ndarray of int, shape (len(k),)
        The column of each requested cutoff, in the order asked.
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
    alpha = check_alpha(alpha)
    cutoffs, columns = _cutoffs(k)
    if not isinstance(ties, str):
        raise InputTypeError(f"ties must be a string, one of {TIE_RULES}; got {ties!r}")
    if ties not in TIE_RULES:
        raise InputError(f"ties must be one of {TIE_RULES}, got {ties!r}")
    sizes = group_sizes(group, n)
    if doc_ids is None:
        if ties != "stable":
            raise InputError(f"ties={ties!r} orders equal scores by document id: pass doc_ids")
        ideal_keys = np.arange(n, dtype=np.int64)
    else:
        ideal_keys = _doc_keys(doc_ids, sizes, n)
    # equal scores rank by key ascending
    run_keys = {"stable": np.arange(n, dtype=np.int64), "trec": -ideal_keys, "pyndeval": ideal_keys}[ties]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    depth = int(min(cutoffs[-1], sizes.max()))
    discount = 1.0 / np.log2(np.arange(2, depth + 2, dtype=np.float64))
    dcg = np.empty((len(sizes), len(cutoffs)))
    idcg = np.empty((len(sizes), len(cutoffs)))
    arrays = [read_only(a) for a in (_subtopic_masks(y_true), y_pred, run_keys, ideal_keys, offsets, cutoffs)]
    discount = read_only(discount)
    run_blocks(
        lambda lo, hi: alpha_dcg_queries(*arrays, alpha, discount, dcg, idcg, lo, hi),
        len(sizes), resolve_threads(n_threads, int(min(cutoffs[-1], 64)) * n),
    )
    return dcg, idcg, sizes, columns


# ---------------------------------------------------------------------------------------------
# metric names for fasttie.trec.evaluate
# ---------------------------------------------------------------------------------------------

_PARAMS = r"(?:\(\s*alpha\s*=\s*([^()]*?)\s*\))?"
_DIVERSITY_NAME = re.compile(
    r"^\s*alpha[-_]?ndcg\s*" + _PARAMS + r"\s*(?:@\s*(\[[^\]]*\]|[^\s(\[]+))?\s*" + _PARAMS + r"\s*$",
    re.IGNORECASE,
)


def is_diversity_metric(name) -> bool:
    """Whether a metric name belongs to the diversity family (``alpha...``)."""
    return isinstance(name, str) and name.strip().lower().startswith("alpha")


def diversity_metric_name(k: int, alpha: float) -> str:
    """Canonical name: ``alpha_nDCG@k``, with ``(alpha=...)`` unless alpha is 0.5."""
    return f"alpha_nDCG@{k}" if alpha == DEFAULT_ALPHA else f"alpha_nDCG(alpha={alpha!r})@{k}"


def parse_diversity_metric(name: str) -> list[tuple[str, int, float]]:
    """``alpha_nDCG@k``, ``alpha-nDCG@[5,10]``, ``alpha_nDCG(alpha=0.3)@20`` (ir_measures) or
    ``alpha_nDCG@20(alpha=0.3)`` -> [(canonical name, k, alpha)].

    Raises
    ------
    ValueError
        A name of the family that does not parse, a missing or bad cutoff, a bad alpha.
    """
    match = _DIVERSITY_NAME.match(name)
    if not match:
        raise InputError(f"unknown diversity metric {name!r}; fasttie computes alpha_nDCG@k, "
                         f"optionally with (alpha=a), e.g. 'alpha_nDCG@20' or 'alpha_nDCG(alpha=0.3)@10'")
    before, cutoff, after = match.groups()
    if before is not None and after is not None:
        raise InputError(f"metric {name!r}: give alpha once")
    if cutoff is None:
        raise InputError(f"metric {name!r}: alpha_nDCG needs a cutoff, e.g. 'alpha_nDCG@20' "
                         f"(the greedy ideal costs judged documents x k per query)")
    text = before if before is not None else after
    alpha = DEFAULT_ALPHA
    if text is not None:
        try:
            alpha = float(text)
        except ValueError:
            raise InputError(f"metric {name!r}: alpha {text!r} is not a number") from None
        alpha = check_alpha(alpha, f"alpha of metric {name!r}")
    parts = [p.strip() for p in cutoff[1:-1].split(",")] if cutoff.startswith("[") else [cutoff]
    out = []
    for part in parts:
        try:
            k = int(part)
        except ValueError:
            raise InputError(f"metric {name!r}: cutoff {part!r} is not an integer (use @20 or @[5,10,20])") from None
        if k < 1:
            raise InputError(f"metric {name!r}: cutoff must be >= 1, got {k}")
        out.append((diversity_metric_name(k, alpha), k, alpha))
    return out
