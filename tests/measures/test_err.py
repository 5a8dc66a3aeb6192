"""ERR@k (expected reciprocal rank, Chapelle et al. 2009), tie-aware and exact.

ERR@k = sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i) with gdeval's stop probability
R = (2**g - 1) / 16 (grades 0..4). Checked here: enumeration of every order inside ties in exact
fractions (ranked lists, every tie mode, cutoffs inside ties and past the end); without ties
every mode gives the fixed-order value; a tie of 10,000 items against an exact reference (integer
sums of multivariate hypergeometric terms, mpmath at 60 digits); thread-count independence;
the refusals. gdeval's own values are in tests/conformance/test_err_conformance.py.
"""

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft

MODES = ("average", "stable", "trec", "optimistic", "pessimistic")


def _literal(grades, k):
    """ERR@k of one fixed order, in exact fractions."""
    value, survival = Fraction(0), Fraction(1)
    for rank, g in enumerate(grades[: len(grades) if k is None else k], start=1):
        stop = Fraction(2 ** int(g) - 1, 16)
        value += survival * stop / rank
        survival *= 1 - stop
    return value


def _orders(scores, grades, doc_ids, ties):
    """Every order of the rows that the tie mode allows (rows by score descending)."""
    groups = [[i for i in range(len(scores)) if scores[i] == s] for s in sorted(set(scores), reverse=True)]
    if ties == "stable":
        yield [i for g in groups for i in g]
    elif ties == "trec":
        yield [i for g in groups for i in sorted(g, key=lambda i: doc_ids[i], reverse=True)]
    elif ties in ("optimistic", "pessimistic"):
        sign = -1 if ties == "optimistic" else 1
        yield [i for g in groups for i in sorted(g, key=lambda i: sign * grades[i])]
    else:
        for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
            yield [i for part in parts for i in part]


def _expected(scores, grades, doc_ids, ties, k):
    values = [_literal([grades[i] for i in order], k) for order in _orders(scores, grades, doc_ids, ties)]
    return sum(values, Fraction(0)) / len(values)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(MODES))
def test_ranked_lists_against_enumeration(seed, ties):
    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(1, 3))
    sizes = rng.integers(1, 8, n_queries)
    grades = rng.integers(0, 5, int(sizes.sum()))
    scores = rng.integers(0, 3, int(sizes.sum())).astype(float)
    doc_ids = rng.permutation(int(sizes.sum()))
    cutoffs = sorted({1, int(rng.integers(1, 9)), int(rng.integers(1, 9)), 12})
    names = [f"ERR@{k}" for k in cutoffs] + ["ERR"]
    result = ft.rank_evaluate(grades, scores, sizes, metrics=names, ties=ties, doc_ids=doc_ids)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    for q in range(n_queries):
        lo, hi = offsets[q], offsets[q + 1]
        for name, k in zip(names, cutoffs + [None]):
            want = _expected(list(scores[lo:hi]), list(grades[lo:hi]), list(doc_ids[lo:hi]), ties, k)
            assert result.per_query[name][q] == pytest.approx(float(want), abs=1e-15, rel=1e-13), (name, q)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_without_ties_every_mode_is_the_fixed_order(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    grades = rng.integers(0, 5, n).astype(float)
    scores = rng.permutation(n).astype(float)
    names = ["ERR@1", "ERR@5", f"ERR@{n}", "ERR"]
    order = np.argsort(-scores)
    want = [float(_literal(list(grades[order]), k)) for k in (1, 5, n, None)]
    for ties in MODES:
        got = ft.rank_evaluate(grades, scores, metrics=names, ties=ties, doc_ids=np.arange(n)).mean
        np.testing.assert_allclose([got[name] for name in names], want, rtol=1e-14, atol=0)


def _tie_reference(prefix, counts, k):
    """ERR@k of a fixed ``prefix`` of grades followed by one tie {grade: count} (grades 0 and up
    to two positive ones), exact up to mpmath's 60 digits: E[survival after p items of the tie]
    is an integer sum over the multivariate hypergeometric counts, and
    ERR = sum_r (E[S_{r-1}] - E[S_r]) / r."""
    mpmath.mp.dps = 60
    value, survival = mpmath.mpf(0), mpmath.mpf(1)
    for rank, g in enumerate(prefix if k is None else prefix[:k], start=1):
        stop = mpmath.mpf(2**g - 1) / 16
        value += survival * stop / rank
        survival *= 1 - stop
    zeros = counts.get(0, 0)
    positive = [(g, c) for g, c in counts.items() if g > 0]
    (g1, c1), (g2, c2) = positive + [(1, 0)] * (2 - len(positive))
    n = zeros + c1 + c2
    t = len(prefix)
    depth = n if k is None else max(min(k - t, n), 0)
    previous = mpmath.mpf(1)
    for p in range(1, depth + 1):
        total = 0
        for a in range(min(c1, p) + 1):
            for b in range(min(c2, p - a) + 1):
                if p - a - b > zeros:
                    continue
                # q = (17 - 2**g) / 16 per item: numerators, with 16 ** (c1 + c2 - a - b) to share one denominator
                total += (math.comb(c1, a) * math.comb(c2, b) * math.comb(zeros, p - a - b)
                          * (17 - 2**g1) ** a * (17 - 2**g2) ** b * 16 ** (c1 + c2 - a - b))
        current = mpmath.mpf(total) / (mpmath.mpf(math.comb(n, p)) * mpmath.mpf(16) ** (c1 + c2))
        value += survival * (previous - current) / (t + p)
        previous = current
    return value


@pytest.mark.parametrize("prefix, counts, cutoffs", [
    ([2, 0, 1], {0: 9950, 1: 30, 4: 20}, [1, 4, 10, 63, 400]),
    ([], {0: 9990, 2: 10}, [1, 2, 100, 1000]),
    ([4], {0: 600, 1: 30, 3: 8}, [300, None]),
    # more positive items than the kernel keeps (s_cut, about 18 and 85 here): its truncations at work
    ([], {0: 100, 4: 100}, [3, 150, None]),
    ([1, 1], {0: 60, 3: 60, 4: 60}, [2, 5, 120, None]),
])
def test_large_tie_against_an_exact_reference(prefix, counts, cutoffs):
    grades = np.array(prefix + [g for g, c in counts.items() for _ in range(c)], dtype=float)
    grades[len(prefix):] = np.random.default_rng(5).permutation(grades[len(prefix):])
    scores = np.concatenate([np.arange(len(prefix), 0, -1) + 1.0, np.zeros(len(grades) - len(prefix))])
    names = [f"ERR@{k}" if k else "ERR" for k in cutoffs]
    got = ft.rank_evaluate(grades, scores, metrics=names).mean
    for name, k in zip(names, cutoffs):
        want = float(_tie_reference(prefix, counts, k))
        assert got[name] == pytest.approx(want, rel=1e-13, abs=0), name


def test_long_list_whole_err_stops_when_the_survival_is_spent():
    rng = np.random.default_rng(3)
    grades = rng.integers(0, 5, 20000).astype(float)
    scores = -np.arange(20000.0)
    want = float(_literal(list(grades[:400]), None))  # the survival after 400 such items is far below 1e-18
    for ties in ("average", "stable"):
        got = ft.rank_evaluate(grades, scores, metrics=["ERR"], ties=ties).mean["ERR"]
        assert got == pytest.approx(want, rel=1e-15)


def test_threads_do_not_change_a_bit():
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 300, 200)
    n = int(sizes.sum())
    grades = rng.integers(0, 5, n) * (rng.random(n) < 0.3)
    scores = rng.integers(0, 20, n).astype(float)
    names = ["ERR@1", "ERR@10", "ERR@20", "ERR"]
    for ties in MODES:
        one, two = (ft.rank_evaluate(grades, scores, sizes, metrics=names, ties=ties, doc_ids=np.arange(n),
                                     n_threads=t) for t in (1, 2))
        for name in names:
            np.testing.assert_array_equal(one.per_query[name], two.per_query[name])


def test_empty_queries_follow_ndcg():
    grades = [0, 0, 1, 0]
    scores = [1.0, 0.5, 1.0, 0.5]
    zero = ft.rank_evaluate(grades, scores, [2, 2], metrics=["ERR@2", "nDCG@2"])
    assert zero.per_query["ERR@2"][0] == 0.0 and zero.n_empty == 1
    skip = ft.rank_evaluate(grades, scores, [2, 2], metrics=["ERR@2"], empty="skip")
    assert np.isnan(skip.per_query["ERR@2"][0]) and skip.mean["ERR@2"] == pytest.approx(1 / 16)
    one = ft.rank_evaluate(grades, scores, [2, 2], metrics=["ERR@2"], empty="one")
    assert one.per_query["ERR@2"][0] == 0.0  # ERR is not 0/0: 0, as DCG
    # a relevant document that was not retrieved makes the query non-empty (as for nDCG)
    kept = ft.rank_evaluate([0, 0], [1.0, 0.5], metrics=["ERR"], empty="skip", unretrieved=[[3]])
    assert kept.per_query["ERR"][0] == 0.0 and kept.n_empty == 0
    with pytest.raises(ValueError, match="no relevant document"):
        ft.rank_evaluate(grades, scores, [2, 2], metrics=["ERR"], empty="error")


def test_names_and_refusals():
    result = ft.rank_evaluate([1, 0], [0.5, 0.5], metrics=["err@2", "ERR@ALL", "ERR@[1,2]"])
    assert list(result.per_query) == ["err@2", "ERR@ALL", "ERR@1", "ERR@2"]  # as asked, lists item by item
    assert result.per_query["ERR"] is result.per_query["ERR@ALL"]
    assert result.mean["ERR@1"] == pytest.approx(1 / 32)
    with pytest.raises(ValueError, match="0..4"):
        ft.rank_evaluate([5, 0], [1.0, 0.0], metrics=["ERR@10"])
    with pytest.raises(ValueError, match="no parameter 'rel'"):
        ft.rank_evaluate([1, 0], [1.0, 0.0], metrics=["ERR(rel=2)"])
    codes = np.zeros((2, 8), dtype=np.uint8)
    listed = (np.array([0, 1, 1]), np.array([0]), np.array([5]))
    with pytest.raises(ValueError, match="0..4"):
        ft.evaluate(codes, codes, relevance=listed, metrics=["ERR@10"])


def _hamming_case(rng, n_queries=3, n_db=9, n_bits=3):
    """Codes and listed graded relevance (grades 0..4), and the same as dense grades and scores."""
    queries = rng.integers(0, 2, (n_queries, n_bits)).astype(np.uint8)
    database = rng.integers(0, 2, (n_db, n_bits)).astype(np.uint8)
    grades = rng.integers(0, 5, (n_queries, n_db)) * (rng.random((n_queries, n_db)) < 0.6)
    indptr = np.concatenate([[0], np.cumsum((grades > 0).sum(axis=1))])
    indices = np.concatenate([np.flatnonzero(row) for row in grades])
    listed = (indptr, indices, np.concatenate([row[row > 0] for row in grades]))
    distances = (queries[:, None, :] != database[None, :, :]).sum(axis=2)
    return queries, database, listed, grades, distances


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable", "optimistic", "pessimistic"]))
def test_hamming_ranking_against_enumeration(seed, ties):
    """fasttie.evaluate: the items at a distance are a tie (stable: database index order)."""
    rng = np.random.default_rng(seed)
    queries, database, listed, grades, distances = _hamming_case(rng, n_db=int(rng.integers(1, 8)))
    cutoffs = sorted({1, int(rng.integers(1, 9)), 10})
    names = [f"ERR@{k}" for k in cutoffs] + ["ERR"]
    result = ft.evaluate(queries, database, relevance=listed, metrics=names, ties=ties)
    for q in range(len(queries)):
        scores = list(-distances[q].astype(float))
        for name, k in zip(names, cutoffs + [None]):
            want = _expected(scores, list(grades[q]), list(range(len(scores))), ties, k)
            assert result.per_query[name][q] == pytest.approx(float(want), abs=1e-15, rel=1e-13), (name, q)


@pytest.mark.parametrize("ties", ["average", "stable", "optimistic", "pessimistic"])
def test_hamming_ranking_equals_rank_evaluate_on_distances(ties):
    """Larger: 40 queries x 3,000 items on 6 bits (ties of hundreds), against the ranked-list path."""
    queries, database, listed, grades, distances = _hamming_case(np.random.default_rng(2), 40, 3000, 6)
    names = ["ERR@1", "ERR@20", "ERR@500", "ERR"]
    got = ft.evaluate(queries, database, relevance=listed, metrics=names + ["nDCG@10"], ties=ties, empty="skip")
    want = ft.rank_evaluate(grades.astype(float), -distances.astype(float), metrics=names, ties=ties, empty="skip")
    for name in names:
        np.testing.assert_allclose(got.per_query[name], want.per_query[name], rtol=1e-13, atol=1e-16)
    assert got.n_empty == want.n_empty


def test_sharded_stable_pass_is_bitwise_the_same():
    """fasttie.dask (a database cut into shards: the sorted global ranks of the relevant items)
    gives the bits of one ft.evaluate, ERR included."""
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    import fasttie.dask as fd

    rng = np.random.default_rng(0)
    queries = rng.integers(0, 2, (20, 16)).astype(np.uint8)
    database = rng.integers(0, 2, (900, 16)).astype(np.uint8)
    query_labels, db_labels = rng.integers(0, 3, 20), rng.integers(0, 3, 900)
    names = ["ERR@10", "ERR", "AP"]
    with dask.config.set(scheduler="threads"):
        for ties in ("average", "stable"):
            one = ft.evaluate(queries, database, query_labels, db_labels, metrics=names, ties=ties)
            sharded = fd.evaluate(queries, da.from_array(database, chunks=(450, 16)), query_labels, db_labels,
                                  metrics=names, ties=ties, query_chunk=9)
            for name in names:
                np.testing.assert_array_equal(one.per_query[name], sharded.per_query[name])
