"""Relevance: class ids, multi-hot labels or listed (CSR) relevant items -> one spec.

* class ids (1-D integers): relevant = same class, grade 1;
* multi-hot (2-D 0/1): grade = number of shared labels, relevant = grade > 0;
* listed: per query the relevant database ids with optional positive integer grades (CSR),
  for ground truths such as exact Euclidean neighbours.

The kernels see fixed dtypes only: int32 dense class ids, uint64 label words, int64 CSR.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .codes import pack_codes
from .errors import InputError, InputTypeError

__all__ = ["RelevanceSpec", "make_relevance"]

_EMPTY_I32 = np.zeros(0, dtype=np.int32)
_EMPTY_I64 = np.zeros(0, dtype=np.int64)
_EMPTY_WORDS = np.zeros((1, 1), dtype=np.uint64)  # a row to index when unused
_DENSE_IDS = 1 << 16  # class ids below this (or below the number of labels) need no remapping
_ID_CHUNK = 1 << 18  # class ids checked and converted at a time (2 MB of int64: in cache for both)


@dataclass
class RelevanceSpec:
    """Relevance in the form the kernels take (see module docstring).

    kind : "class" | "multihot" | "listed"
    n_grades : number of grade values 0..n_grades-1 (at least 2)
    """

    kind: str
    n_grades: int
    query_labels: np.ndarray = field(default_factory=lambda: _EMPTY_I32)  # int32 dense ids
    db_labels: np.ndarray = field(default_factory=lambda: _EMPTY_I32)
    query_label_words: np.ndarray = field(default_factory=lambda: _EMPTY_WORDS)
    db_label_words: np.ndarray = field(default_factory=lambda: _EMPTY_WORDS)
    indptr: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    indices: np.ndarray = field(default_factory=lambda: _EMPTY_I64)  # sorted within each query
    grades: np.ndarray = field(default_factory=lambda: _EMPTY_I64)
    n_classes: int = 0  # class labels: the ids are 0..n_classes-1

    def rows(self, start: int, stop: int) -> "RelevanceSpec":
        """The spec restricted to queries start..stop-1 (database side unchanged)."""
        spec = RelevanceSpec(self.kind, self.n_grades)
        spec.db_labels = self.db_labels
        spec.db_label_words = self.db_label_words
        spec.n_classes = self.n_classes
        if self.kind == "class":
            spec.query_labels = self.query_labels[start:stop]
        elif self.kind == "multihot":
            spec.query_label_words = self.query_label_words[start:stop]
        else:
            lo, hi = self.indptr[start], self.indptr[stop]
            spec.indptr = self.indptr[start : stop + 1] - lo
            spec.indices = self.indices[lo:hi]
            spec.grades = self.grades[lo:hi]
        return spec


def make_relevance(query_labels: npt.ArrayLike | None, db_labels: npt.ArrayLike | None, relevance: Any, n_queries: int,
                   n_db: int) -> RelevanceSpec:
    """Validate labels or listed relevance and build the spec.

    Raises
    ------
    TypeError, ValueError
        With the argument named: both or neither of labels / relevance given, wrong lengths,
        non-integer class ids, multi-hot values other than 0/1, listed ids out of range or
        repeated within a query, negative or non-integer grades.
    """
    if relevance is not None:
        if query_labels is not None or db_labels is not None:
            raise InputError("give either {query_labels} and {db_labels}, or {relevance}=, not both",
                             argument=("query_labels", "db_labels", "relevance"))
        return _listed(relevance, n_queries, n_db)
    if query_labels is None or db_labels is None:
        raise InputError(
            "{relevance} is undefined: pass {query_labels} and {db_labels} (class ids or multi-hot), "
            "or {relevance}=(indptr, indices[, grades])", argument=("query_labels", "db_labels", "relevance"))
    query_labels = np.asarray(query_labels)
    db_labels = np.asarray(db_labels)
    if query_labels.ndim != db_labels.ndim or query_labels.ndim not in (1, 2):
        raise InputError(
            f"{{query_labels}} and {{db_labels}} must both be 1-D class ids or both 2-D multi-hot, got "
            f"shapes {query_labels.shape} and {db_labels.shape}", argument=("query_labels", "db_labels"))
    if query_labels.shape[0] != n_queries:
        raise InputError(f"{{query_labels}} has {query_labels.shape[0]} rows but there are {n_queries} queries",
                         argument="query_labels")
    if db_labels.shape[0] != n_db:
        raise InputError(f"{{db_labels}} has {db_labels.shape[0]} rows but the database has {n_db} codes",
                         argument="db_labels")
    if query_labels.ndim == 1:
        return _classes(query_labels, db_labels)
    if query_labels.shape[1] == 1:
        # almost always a column of class ids; as multi-hot a class-0 query would match nothing
        raise InputError(
            f"{{query_labels}} and {{db_labels}} have one column (shapes {query_labels.shape} and "
            f"{db_labels.shape}): for class ids pass 1-D arrays (labels.ravel()); multi-hot "
            "labels need two or more columns", argument=("query_labels", "db_labels"))
    return _multihot(query_labels, db_labels)


def _classes(query_labels, db_labels) -> RelevanceSpec:
    for name, labels in (("query_labels", query_labels), ("db_labels", db_labels)):
        if not (np.issubdtype(labels.dtype, np.integer) or labels.dtype == np.bool_):
            raise InputTypeError(
                f"{{{name}}} must hold integer class ids, got dtype {labels.dtype}; for multi-hot "
                "labels pass a 2-D 0/1 matrix", argument=name)
    query_ids, query_lo, query_hi = _as_int32(query_labels)
    db_ids, db_lo, db_hi = _as_int32(db_labels)
    lo, hi = min(query_lo, db_lo), max(query_hi, db_hi)
    if lo >= 0 and hi < max(_DENSE_IDS, len(query_labels) + len(db_labels)):
        # non-negative ids no larger than the data: used as they are (the class sort and the
        # segment table cost O(max id)); larger or negative ids are remapped to 0..n_classes-1
        n_classes = hi + 1
    else:
        classes, inverse = np.unique(np.concatenate([query_labels, db_labels]), return_inverse=True)
        if len(classes) >= (1 << 31):
            raise InputError("more than 2**31 distinct class ids")
        query_ids = inverse[: len(query_labels)].astype(np.int32)
        db_ids = inverse[len(query_labels) :].astype(np.int32)
        n_classes = len(classes)
    return RelevanceSpec("class", 2, query_labels=query_ids, db_labels=db_ids, n_classes=n_classes)


def _as_int32(labels):
    """(labels as int32, their smallest, their largest), a long array chunk by chunk: each chunk
    is read from memory once for the three (three passes over 20M int64 ids took 25 ms, the
    chunks 18). Ids outside int32's range come out wrapped: the caller then remaps them."""
    if labels.dtype == np.int32 or len(labels) <= _ID_CHUNK:
        return labels.astype(np.int32, copy=False), int(labels.min()), int(labels.max())
    ids = np.empty(len(labels), dtype=np.int32)
    lo, hi = int(labels[0]), int(labels[0])
    for start in range(0, len(labels), _ID_CHUNK):
        chunk = labels[start:start + _ID_CHUNK]
        lo, hi = min(lo, int(chunk.min())), max(hi, int(chunk.max()))
        ids[start:start + _ID_CHUNK] = chunk
    return ids, lo, hi


def _multihot(query_labels, db_labels) -> RelevanceSpec:
    if query_labels.shape[1] != db_labels.shape[1]:
        raise InputError(
            f"{{query_labels}} has {query_labels.shape[1]} label columns but {{db_labels}} has "
            f"{db_labels.shape[1]}", argument=("query_labels", "db_labels"))
    for name, labels in (("query_labels", query_labels), ("db_labels", db_labels)):
        if labels.shape[1] == 0:
            raise InputError(f"{{{name}}} has no label columns", argument=name)
        if labels.dtype != np.bool_ and not np.issubdtype(labels.dtype, np.number):
            raise InputTypeError(f"{{{name}}} must be a 0/1 or bool matrix, got dtype {labels.dtype}",
                                 argument=name)
        if labels.dtype != np.bool_ and ((labels != 0) & (labels != 1)).any():
            raise InputError(
                f"{{{name}}} must be multi-hot 0/1 (2-D); for class ids pass a 1-D array, for graded "
                "relevance use {relevance}=(indptr, indices, grades)", argument=(name, "relevance"))
    # checked 0/1 above: as bool, packing skips the checks of codes' values
    query_words = pack_codes(query_labels.astype(np.bool_, copy=False), name="query_labels").words
    db_words = pack_codes(db_labels.astype(np.bool_, copy=False), name="db_labels").words
    max_labels = int(np.bitwise_count(query_words).sum(axis=1).max())
    return RelevanceSpec(
        "multihot", max(2, max_labels + 1), query_label_words=query_words, db_label_words=db_words
    )


def _listed(relevance, n_queries, n_db) -> RelevanceSpec:
    if hasattr(relevance, "tocsr"):  # scipy.sparse matrix or array
        matrix = relevance.tocsr()
        if matrix.shape != (n_queries, n_db):
            raise InputError(
                f"{{relevance}} matrix has shape {matrix.shape}, expected (n_queries, n_db) = "
                f"({n_queries}, {n_db})", argument="relevance")
        matrix.sum_duplicates()
        indptr, indices, grades = matrix.indptr, matrix.indices, matrix.data
    elif isinstance(relevance, tuple) and len(relevance) in (2, 3):
        indptr, indices = relevance[0], relevance[1]
        grades = relevance[2] if len(relevance) == 3 else None
    else:
        raise InputTypeError(
            "{relevance} must be (indptr, indices), (indptr, indices, grades) or a scipy.sparse "
            f"matrix of shape (n_queries, n_db); got {type(relevance).__name__}", argument="relevance")
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    if not np.issubdtype(indptr.dtype, np.integer) or not np.issubdtype(indices.dtype, np.integer):
        raise InputTypeError("{relevance} indptr and indices must be integer arrays", argument="relevance")
    if indptr.ndim != 1 or len(indptr) != n_queries + 1:
        raise InputError(f"{{relevance}} indptr must have n_queries + 1 = {n_queries + 1} entries, got {indptr.shape}",
                         argument="relevance")
    if indptr[0] != 0 or (np.diff(indptr) < 0).any() or indptr[-1] != len(indices) or indices.ndim != 1:
        raise InputError("{relevance} indptr must start at 0, not decrease, and end at len(indices)",
                         argument="relevance")
    if len(indices) and (indices.min() < 0 or indices.max() >= n_db):
        raise InputError(f"{{relevance}} indices must be database ids in [0, {n_db})", argument="relevance")
    if grades is None:
        grades = np.ones(len(indices), dtype=np.int64)
    else:
        grades = np.asarray(grades)
        if grades.shape != indices.shape:
            raise InputError(f"{{relevance}} grades has shape {grades.shape}, indices {indices.shape}",
                             argument="relevance")
        if np.issubdtype(grades.dtype, np.floating):
            if not np.isfinite(grades).all() or (grades != np.round(grades)).any():
                raise InputError("{relevance} grades must be whole numbers (grade levels), no NaN",
                                 argument="relevance")
        elif not (np.issubdtype(grades.dtype, np.integer) or grades.dtype == np.bool_):
            raise InputTypeError(f"{{relevance}} grades must be integers, got dtype {grades.dtype}",
                                 argument="relevance")
        if len(grades) and grades.min() < 0:
            raise InputError("{relevance} grades must be >= 0", argument="relevance")
        if len(grades) and grades.max() > 62:
            raise InputError("{relevance} grades above 62 are not supported (2**g - 1 must fit)", argument="relevance")
    indptr = indptr.astype(np.int64)
    query_of = np.repeat(np.arange(n_queries), np.diff(indptr))
    order = np.lexsort((indices, query_of))  # ids ascending within each query
    indices = indices[order].astype(np.int64)
    grades = grades[order].astype(np.int64)
    repeated = (np.diff(indices) == 0) & (np.diff(query_of) == 0)
    if repeated.any():
        q = int(query_of[1:][repeated][0])
        raise InputError(f"{{relevance}} lists database id {int(indices[1:][repeated][0])} twice for query {q}",
                         argument="relevance")
    keep = grades > 0  # grade 0 = judged non-relevant: same as not listed
    if not keep.all():
        indices, grades = indices[keep], grades[keep]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(query_of[keep], minlength=n_queries))]).astype(np.int64)
    n_grades = max(2, int(grades.max()) + 1 if len(grades) else 2)
    return RelevanceSpec("listed", n_grades, indptr=indptr, indices=indices, grades=grades)
