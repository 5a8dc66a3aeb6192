"""fasttie.relevance: class ids, multi-hot labels and listed (CSR) relevance become one spec whose
grades, read back here into a dense (query, item) matrix, are the ones written directly from the
inputs (same class; shared labels, as a matrix product; listed grades), for any class ids (large,
negative), any order of the listed ids, and any block of queries; bad input names the argument."""

import numpy as np
import pytest

from fasttie.relevance import make_relevance


def dense_grades(spec, n_queries, n_db):
    """(n_queries, n_db) grades the spec stands for, read from its public fields."""
    if spec.kind == "class":
        return (spec.query_labels[:, None] == spec.db_labels[None, :]).astype(int)
    if spec.kind == "multihot":
        shared = spec.query_label_words[:, None, :] & spec.db_label_words[None, :, :]
        return np.bitwise_count(shared).sum(axis=2).astype(int)
    out = np.zeros((n_queries, n_db), dtype=int)
    for q in range(n_queries):
        ids = spec.indices[spec.indptr[q]:spec.indptr[q + 1]]
        assert np.all(np.diff(ids) > 0)  # ascending within a query (the kernels' binary search)
        out[q, ids] = spec.grades[spec.indptr[q]:spec.indptr[q + 1]]
    return out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("ids", ["small", "large", "negative"])
def test_class_ids(seed, ids):
    rng = np.random.default_rng(seed)
    n_q, n_db = int(rng.integers(1, 20)), int(rng.integers(1, 50))
    classes = {"small": np.arange(5), "large": np.array([3, 10**12, 2**40, 7, 2**62]),
               "negative": np.array([-5, -1, 0, 4, 9])}[ids]
    ql, dl = rng.choice(classes, n_q), rng.choice(classes, n_db)
    spec = make_relevance(ql, dl, None, n_q, n_db)
    assert spec.kind == "class" and spec.n_grades == 2
    assert spec.query_labels.dtype == np.int32
    assert np.array_equal(dense_grades(spec, n_q, n_db), (ql[:, None] == dl[None, :]).astype(int))
    ids = np.concatenate([spec.query_labels, spec.db_labels])  # the class tables' length: the largest id + 1
    assert ids.min() >= 0 and spec.n_classes == ids.max() + 1
    start, stop = sorted(rng.integers(0, n_q + 1, 2))
    assert spec.rows(start, stop).n_classes == spec.n_classes
    assert np.array_equal(dense_grades(spec.rows(start, stop), stop - start, n_db),
                          (ql[start:stop, None] == dl[None, :]).astype(int))


@pytest.mark.parametrize("ids", ["small", "large", "negative", "uint64"])
@pytest.mark.parametrize("n_db", [2**18 + 2, 2 * 2**18 + 5])
def test_long_class_ids_chunk_by_chunk(ids, n_db):
    """Class ids longer than one conversion chunk: the smallest and largest id sit in the last
    chunk (a chunk left out would miss them), and the grades are those of the ids as given."""
    rng = np.random.default_rng(n_db)
    dtype = np.uint64 if ids == "uint64" else np.int64
    dl = rng.integers(0, 5, n_db).astype(dtype)
    extremes = {"small": (0, 7), "large": (0, 2**40), "negative": (-3, 4), "uint64": (0, 2**64 - 1)}[ids]
    dl[-2:] = np.array(extremes, dtype=dtype)
    ql = np.array([3, 2, 0], dtype=dtype)  # the extremes only in the database
    spec = make_relevance(ql, dl, None, 3, n_db)
    assert np.array_equal(dense_grades(spec, 3, n_db), (ql[:, None] == dl[None, :]).astype(int))
    assert spec.n_classes == (8 if ids == "small" else 6)  # dense ids 0..7; else the six distinct ids, remapped
    assert spec.db_labels.dtype == np.int32


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n_labels", [2, 7, 64, 130])
def test_multihot_grade_is_the_number_of_shared_labels(seed, n_labels):
    rng = np.random.default_rng(seed)
    n_q, n_db = int(rng.integers(1, 12)), int(rng.integers(1, 30))
    ql = (rng.random((n_q, n_labels)) < 0.3).astype(rng.choice([np.uint8, np.int64, np.float32, bool]))
    dl = (rng.random((n_db, n_labels)) < 0.3)
    spec = make_relevance(ql, dl, None, n_q, n_db)
    expected = ql.astype(int) @ dl.astype(int).T
    assert spec.kind == "multihot" and np.array_equal(dense_grades(spec, n_q, n_db), expected)
    assert spec.n_grades == max(2, int(ql.astype(int).sum(axis=1).max()) + 1)
    start, stop = sorted(rng.integers(0, n_q + 1, 2))
    assert np.array_equal(dense_grades(spec.rows(start, stop), stop - start, n_db), expected[start:stop])


@pytest.mark.parametrize("seed", range(8))
def test_listed_relevance_in_any_order_and_scipy(seed):
    rng = np.random.default_rng(seed)
    n_q, n_db = int(rng.integers(1, 12)), int(rng.integers(1, 40))
    expected = np.zeros((n_q, n_db), dtype=int)
    indptr, indices, grades = [0], [], []
    for q in range(n_q):
        ids = rng.choice(n_db, int(rng.integers(0, n_db + 1)), replace=False)  # unsorted
        g = rng.integers(1, 5, len(ids))
        expected[q, ids] = g
        indices += ids.tolist()
        grades += g.tolist()
        indptr.append(len(indices))
    spec = make_relevance(None, None, (np.array(indptr), np.array(indices), np.array(grades)), n_q, n_db)
    assert spec.kind == "listed" and np.array_equal(dense_grades(spec, n_q, n_db), expected)
    binary = make_relevance(None, None, (np.array(indptr), np.array(indices)), n_q, n_db)
    assert np.array_equal(dense_grades(binary, n_q, n_db), (expected > 0).astype(int))
    sparse = pytest.importorskip("scipy.sparse")
    from_scipy = make_relevance(None, None, sparse.csr_matrix(expected), n_q, n_db)
    assert np.array_equal(dense_grades(from_scipy, n_q, n_db), expected)
    start, stop = sorted(rng.integers(0, n_q + 1, 2))
    assert np.array_equal(dense_grades(spec.rows(start, stop), stop - start, n_db), expected[start:stop])


@pytest.mark.parametrize("arguments, error, fragment", [
    ((np.zeros(2, int), np.zeros(3, int), ([0, 0, 0], [])), ValueError, "not both"),
    ((None, np.zeros(3, int), None), ValueError, "relevance is undefined"),
    ((np.zeros(3, int), np.zeros(3, int), None), ValueError, "query_labels has 3 rows but there are 2 queries"),
    ((np.zeros(2, float), np.zeros(3, float), None), TypeError, "query_labels must hold integer class ids"),
    ((np.zeros((2, 1)), np.zeros((3, 1)), None), ValueError, "have one column"),
    ((np.full((2, 3), 2), np.zeros((3, 3)), None), ValueError, "must be multi-hot 0/1"),
    ((None, None, ([0, 1, 2], [0, 3])), ValueError, "indices must be database ids in [0, 3)"),
    ((None, None, ([0, 2, 2], [1, 1])), ValueError, "lists database id 1 twice for query 0"),
    ((None, None, ([0, 1, 1], [0], [-1])), ValueError, "grades must be >= 0"),
    ((None, None, ([0, 1, 1], [0], [1.5])), ValueError, "whole numbers"),
    ((None, None, ([0, 1], [0])), ValueError, "indptr must have n_queries + 1 = 3 entries"),
    ((None, None, [[0, 1, 1], [0]]), TypeError, "relevance must be (indptr, indices)"),
])
def test_bad_input_names_the_argument(arguments, error, fragment):
    with pytest.raises(error) as raised:
        make_relevance(*arguments, 2, 3)
    assert fragment in str(raised.value), str(raised.value)
