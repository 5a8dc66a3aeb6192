"""ndeval's diversity measures, tie-aware: fasttie.diversity.diversity_evaluate against the
brute-force oracle (tests/oracle_diversity.py), which enumerates the orders inside ties.

Every measure x tie mode ("average" and the fixed "stable", "trec", "pyndeval") x cutoffs,
inside and across ties, on random small queries (hypothesis), at alphas whose powers are exact
in float64 (so that the greedy ideal's ties fall as in the exact oracle); tolerance 1e-12.
Properties: without ties every mode gives the fixed-order value; a large tie, whose
hypergeometric walk keeps only the powers of 1 - alpha above 1e-20, against an exact
hypergeometric sum; results do not depend on the thread count.
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fasttie import trec
from fasttie.diversity import diversity_evaluate

from oracle_diversity import count_orders, query_values

EXACT_ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
BETAS = (0.0, 0.25, 0.5, 1.0)
TOLERANCE = 1e-12


def _metrics(ks, alpha, beta):
    """(fasttie name, base, k) of every measure at the cutoffs ks."""
    a = "" if alpha == 0.5 else f"alpha={alpha!r}"
    b = "" if beta == 0.5 else f"beta={beta!r}"
    both = ",".join(p for p in (a, b) if p)
    out = []
    for k in ks:
        for base in ("alpha_DCG", "alpha_nDCG", "ERR_IA", "nERR_IA"):
            out.append((f"{base}{f'({a})' if a else ''}@{k}", base, k))
        out += [(f"P_IA@{k}", "P_IA", k), (f"StRecall@{k}", "StRecall", k)]
    out += [(f"NRBP{f'({both})' if both else ''}", "NRBP", None), (f"nNRBP{f'({both})' if both else ''}", "nNRBP", None),
            ("AP_IA", "AP_IA", None)]
    return out


@st.composite
def diversity_queries(draw, max_docs=8, max_subtopics=4, max_orders=2000):
    """A list of queries; each a list of (id, subtopic set, score), scores from a small range
    (many ties) or -inf (judged, not retrieved)."""
    queries = []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, max_docs))
        ids = draw(st.permutations(range(20)))[:n]
        docs = []
        for i in ids:
            subtopics = frozenset(draw(st.sets(st.integers(0, max_subtopics - 1), max_size=max_subtopics)))
            score = draw(st.sampled_from([-math.inf, 0.0, 1.0, 1.0, 2.0, 2.0, 2.0]))
            docs.append((i, subtopics, score))
        if count_orders(docs) > max_orders:
            docs = [(i, s, float(j)) if j % 2 else (i, s, sc) for j, (i, s, sc) in enumerate(docs)]
        queries.append(docs)
    return queries


def _arrays(queries, n_subtopics=4):
    rows = [d for docs in queries for d in docs]
    y_true = np.zeros((len(rows), n_subtopics), dtype=np.int8)
    for i, (_, subtopics, _) in enumerate(rows):
        y_true[i, sorted(subtopics)] = 1
    return y_true, np.array([d[2] for d in rows]), [len(docs) for docs in queries], [d[0] for d in rows]


def _check(queries, ks, alpha, beta, ties, n_threads=None):
    metrics = _metrics(ks, alpha, beta)
    y_true, scores, sizes, ids = _arrays(queries)
    res = diversity_evaluate(y_true, scores, sizes, metrics=[m[0] for m in metrics], ties=ties, doc_ids=ids,
                             n_threads=n_threads)
    assert list(res.per_query) == [m[0] for m in metrics]
    for q, docs in enumerate(queries):
        expected = query_values(docs, metrics, alpha, beta, ties)
        for name, _, _ in metrics:
            got = res.per_query[name][q]
            assert got == pytest.approx(float(expected[name]), abs=TOLERANCE, rel=TOLERANCE), (name, q, ties, docs)
    return res


@settings(max_examples=150, deadline=None)
@given(
    queries=diversity_queries(),
    ks=st.lists(st.integers(1, 10), min_size=1, max_size=3, unique=True),
    alpha=st.sampled_from(EXACT_ALPHAS),
    beta=st.sampled_from(BETAS),
    ties=st.sampled_from(["average", "average", "stable", "trec", "pyndeval"]),
)
def test_against_oracle(queries, ks, alpha, beta, ties):
    _check(queries, sorted(ks), alpha, beta, ties)


def test_worked_tie():
    """Three documents tie below a first one; every value by hand-checked enumeration."""
    docs = [(0, frozenset({0}), 2.0), (1, frozenset({0}), 1.0), (2, frozenset({1}), 1.0), (3, frozenset({0, 1}), 1.0),
            (4, frozenset({1}), -math.inf)]
    res = _check([docs], [1, 2, 3, 4], 0.5, 0.5, "average")
    # StRecall@2: subtopic 0 is covered by rank 1; subtopic 1 at rank 2 unless document 1 is there (1/3)
    assert res.per_query["StRecall@2"][0] == pytest.approx(1 / 2 + 1 / 2 * 2 / 3, abs=1e-15)
    # P_IA@2: rank 2 holds 4/3 pairs on average
    assert res.per_query["P_IA@2"][0] == pytest.approx((1 + 4 / 3) / (2 * 2), abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(
    queries=diversity_queries(max_docs=10),
    ks=st.lists(st.integers(1, 12), min_size=1, max_size=3, unique=True),
    alpha=st.floats(0.0, 1.0),
    beta=st.floats(0.0, 1.0),
)
def test_no_ties_every_mode_is_the_fixed_order(queries, ks, alpha, beta):
    distinct = [[(i, s, float(-j) if sc != -math.inf else sc) for j, (i, s, sc) in enumerate(docs)] for docs in queries]
    metrics = [m[0] for m in _metrics(sorted(ks), alpha, beta)]
    y_true, scores, sizes, ids = _arrays(distinct)
    results = [diversity_evaluate(y_true, scores, sizes, metrics=metrics, ties=t, doc_ids=ids).per_query
               for t in ("stable", "trec", "pyndeval", "average")]
    for name in metrics:
        for other in results[1:]:
            np.testing.assert_allclose(other[name], results[0][name], rtol=1e-13, atol=1e-15, err_msg=name)


def _expected_gain_at(n, t, j, q):
    """E[(1-alpha)^X], X ~ Hypergeometric(n - 1 items, t - 1 marked, j draws), exactly."""
    return sum(Fraction(comb(t - 1, x) * comb(n - t, j - x), comb(n - 1, j)) * q ** x
               for x in range(max(0, j - (n - t)), min(t - 1, j) + 1))


@pytest.mark.parametrize("alpha", [0.5, 0.25, 1.0, 0.0])
def test_large_tie_against_exact_hypergeometric_sum(alpha):
    """One tie of 200 documents, 150 of them on subtopic 0 (deep enough that the walk drops
    powers below 1e-20), 30 on subtopic 1, after a document on subtopic 1."""
    n, t0, t1 = 200, 150, 30
    y_true = np.zeros((n + 1, 2), dtype=np.int8)
    y_true[0, 1] = 1
    y_true[1:1 + t0, 0] = 1
    y_true[1 + t0:1 + t0 + t1, 1] = 1
    scores = np.array([1.0] + [0.0] * n)
    ks = [1, 2, 50, 150, 201]
    res = diversity_evaluate(y_true, scores, metrics=[f"ERR_IA(alpha={alpha})@{k}" for k in ks]
                             + [f"StRecall@{k}" for k in ks] + [f"NRBP(alpha={alpha},beta=0.9)"], ties="average")
    q = 1 - Fraction(alpha)
    gains = [Fraction(1)]
    for j in range(n):
        gains.append(Fraction(t0, n) * _expected_gain_at(n, t0, j, q)
                     + Fraction(t1, n) * q * _expected_gain_at(n, t1, j, q))
    for k in ks:
        value = sum(g / r for r, g in enumerate(gains[:k], 1))
        den = 2 * sum(q ** (r - 1) / r for r in range(1, k + 1))
        got = res.per_query[f"ERR_IA(alpha={alpha})@{k}" if alpha != 0.5 else f"ERR_IA@{k}"][0]
        assert got == pytest.approx(float(value / den), rel=1e-13, abs=1e-15), k
        # subtopic 0 first covered inside the tie: P(covered by rank k) = 1 - C(n - t0, k - 1) / C(n, k - 1)
        covered = 1 + (1 - Fraction(comb(n - t0, k - 1), comb(n, k - 1)))
        assert res.per_query[f"StRecall@{k}"][0] == pytest.approx(float(covered / 2), rel=1e-14), k
    nrbp = (1 - q * Fraction(9, 10)) / 2 * sum(g * Fraction(9, 10) ** r for r, g in enumerate(gains))
    name = f"NRBP(alpha={alpha},beta=0.9)" if alpha != 0.5 else "NRBP(beta=0.9)"
    assert res.per_query[name][0] == pytest.approx(float(nrbp), rel=1e-13)


@pytest.mark.parametrize("ties", ["average", "stable"])
def test_bitwise_identical_across_thread_counts(ties):
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 200, 150)
    n = int(sizes.sum())
    y_true = rng.random((n, 9)) < 0.2
    scores = rng.integers(0, 15, n).astype(float)
    metrics = ["alpha_nDCG@[5,20]", "ERR_IA@10", "nERR_IA@10", "NRBP", "nNRBP", "AP_IA", "P_IA@10", "StRecall@10",
               "alpha_DCG(alpha=0.3)@20"]
    one = diversity_evaluate(y_true, scores, sizes, metrics=metrics, ties=ties, n_threads=1)
    two = diversity_evaluate(y_true, scores, sizes, metrics=metrics, ties=ties, n_threads=2)
    for name in one.per_query:
        np.testing.assert_array_equal(one.per_query[name], two.per_query[name])


def test_trec_evaluate_average_equals_arrays():
    """trec.evaluate(ties='average') on files-like objects equals the array front door."""
    docs = [("d1", {"1", "2"}, 2.0), ("d2", {"1"}, 1.0), ("d3", {"3"}, 1.0), ("d4", set(), 1.0), ("d5", {"2"}, None)]
    qid, doc, rel, sub = [], [], [], []
    for d, subtopics, _ in docs:
        for s in sorted(subtopics) or ["1"]:
            qid.append("q")
            doc.append(d)
            rel.append(1 if subtopics else 0)
            sub.append(s)
    qrels = trec.Qrels.from_arrays(qid, doc, rel, sub)
    run = trec.Run.from_arrays(["q"] * 4, [d for d, _, s in docs if s is not None], [s for *_, s in docs if s is not None])
    names = ["alpha_nDCG@[1,2,3]", "ERR_IA@3", "NRBP", "nNRBP", "AP_IA", "P_IA@2", "StRecall@2"]
    got = trec.evaluate(qrels, run, names, ties="average")
    y_true = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 1, 0]])
    want = diversity_evaluate(y_true, [2.0, 1.0, 1.0, 1.0, -np.inf], metrics=names, doc_ids=[d for d, *_ in docs])
    assert got.settings["ties"] == "average"
    for name in want.per_query:
        np.testing.assert_allclose(got.per_query[name], want.per_query[name], rtol=1e-15, err_msg=name)
