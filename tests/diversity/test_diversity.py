"""fasttie.diversity: alpha-nDCG@k (alpha_ndcg and alpha_nDCG@k in fasttie.trec.evaluate).

References: the worked example of seed 004 (Clarke et al. 2008, section 5, with the seed's
misprint of CG'[6] corrected), an exact reference below (gains, run order and greedy ideal in
``fractions.Fraction``, no numba; only the final discounting is float), and pyndeval (ndeval.c)
on random diversity runs at alpha = 0.5, k in {5, 10, 20}.

Conventions shared with ndeval and checked here: a subtopic judgment with rel > 0 (rel >=
relevance_level) is relevant, grades above 1 count as 1; the ideal is the greedy over every
judged document (retrieved or not), ties to the greatest document id; unjudged retrieved
documents have no subtopic; a query with no relevant subtopic scores 0. The exact reference
is compared at alphas whose powers are exact in float64 (0, 1/4, 1/2, 3/4, 1): there float64
gains equal the exact ones, so the greedy's ties fall the same way in both.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fasttie import trec
from helpers import diversity_arrays, diversity_objects, trec_ordered_run
from fasttie._kernels import diversity_measures
from fasttie.diversity import alpha_dcg, alpha_ndcg

try:
    import pyndeval
except ImportError:  # a test extra: only the comparisons with it are skipped
    pyndeval = None
needs_pyndeval = pytest.mark.skipif(pyndeval is None, reason="pyndeval (test extra) is not installed")

EXACT_ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)


# ---------------------------------------------------------------------------------------------
# exact reference (no numba)
# ---------------------------------------------------------------------------------------------


def _gain(subtopics, seen, alpha):
    return sum(((1 - alpha) ** seen[s] for s in subtopics), Fraction(0))


def reference_gains(rel_sets, scores, ids, alpha, ties):
    """Exact gain vectors of the run and of the greedy ideal of one query."""
    alpha = Fraction(alpha)
    retrieved = [i for i in range(len(scores)) if scores[i] != -math.inf]
    if ties == "stable":
        order = sorted(retrieved, key=lambda i: -scores[i])
    elif ties == "pyndeval":
        order = sorted(retrieved, key=lambda i: (-scores[i], ids[i]))
    else:  # trec: score descending, then id descending
        order = sorted(sorted(retrieved, key=lambda i: ids[i], reverse=True), key=lambda i: -scores[i])
    seen, run = Counter(), []
    for i in order:
        run.append(_gain(rel_sets[i], seen, alpha))
        seen.update(rel_sets[i])
    seen, ideal, left = Counter(), [], set(range(len(scores)))
    while left:
        best = max(left, key=lambda i: (_gain(rel_sets[i], seen, alpha), ids[i]))
        ideal.append(_gain(rel_sets[best], seen, alpha))
        seen.update(rel_sets[best])
        left.remove(best)
    return run, ideal


def _dcg(gains, k):
    return math.fsum(float(g) / math.log2(r + 2) for r, g in enumerate(gains[:k]))


def reference_alpha_ndcg(rel_sets, scores, ids, ks, alpha, ties, empty=0.0):
    run, ideal = reference_gains(rel_sets, scores, ids, alpha, ties)
    out = []
    for k in ks:
        denominator = _dcg(ideal, k)
        out.append(_dcg(run, k) / denominator if denominator > 0 else empty)
    return out


def _rel_sets(y_true):
    return [frozenset(np.flatnonzero(row).tolist()) for row in y_true]


# ---------------------------------------------------------------------------------------------
# seed 004: the worked example of Clarke et al. 2008
# ---------------------------------------------------------------------------------------------

# A subtopic (nugget) table reproducing every printed vector: documents a..j ranked in that
# order; d has no nugget; b, c, i, j repeat a's nugget 0; f, h repeat e's nugget 2.
SEED_DOCS = list("abcdefghij")
SEED_TABLE = {"a": [0, 1], "b": [0], "c": [0], "d": [], "e": [2, 3], "f": [2], "g": [4], "h": [2], "i": [0],
              "j": [0]}


def _seed_data():
    y_true = np.zeros((10, 5), dtype=np.int64)
    for i, doc in enumerate(SEED_DOCS):
        y_true[i, SEED_TABLE[doc]] = 1
    return y_true, np.arange(10, 0, -1, dtype=np.float64)


def test_seed004_worked_example():
    y_true, scores = _seed_data()
    ks = list(range(1, 11))
    dcg, idcg, _, _ = alpha_dcg(y_true, scores, k=ks, doc_ids=SEED_DOCS)
    discount = np.log2(np.arange(2, 12))
    # G = <2, 1/2, 1/4, 0, 2, 1/2, 1, 1/4, ...> and DCG = <2, 2.315, 2.440, ...>
    gains = np.diff(np.concatenate([[0.0], dcg[0]])) * discount
    np.testing.assert_allclose(gains[:8], [2, 1 / 2, 1 / 4, 0, 2, 1 / 2, 1, 1 / 4], rtol=0, atol=1e-12)
    np.testing.assert_allclose(dcg[0, :3], [2, 2.315, 2.440], atol=5e-4)
    # ideal a-e-g-b-f-c-h-i-j: G' = <2, 2, 1, 1/2, 1/2, 1/4, 1/4, ...>, CG' = <2, 4, 5, 5 1/2, 6,
    # 6 1/4, 6 1/2, ...> (the seed prints 6 1/2 at rank 6: a misprint), DCG' = <2, 3.262, 3.762>
    ideal_gains = np.diff(np.concatenate([[0.0], idcg[0]])) * discount
    np.testing.assert_allclose(ideal_gains[:7], [2, 2, 1, 1 / 2, 1 / 2, 1 / 4, 1 / 4], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.cumsum(ideal_gains)[:7], [2, 4, 5, 5.5, 6, 6.25, 6.5], rtol=0, atol=1e-12)
    np.testing.assert_allclose(idcg[0, :3], [2, 3.262, 3.762], atol=5e-4)
    # the seed's ideal order gives the same gains as the greedy (its ties broken otherwise)
    rel = {d: frozenset(SEED_TABLE[d]) for d in SEED_DOCS}
    seen, printed = Counter(), []
    for doc in "aegbfchij":
        printed.append(_gain(rel[doc], seen, Fraction(1, 2)))
        seen.update(rel[doc])
    np.testing.assert_allclose(ideal_gains[:9], [float(g) for g in printed], rtol=0, atol=1e-12)
    # nDCG = <1, 0.710, 0.649, ...>
    ndcg = alpha_ndcg(y_true, scores, k=[1, 2, 3], doc_ids=SEED_DOCS)[0]
    np.testing.assert_allclose(ndcg, [1, 0.710, 0.649], atol=5e-4)
    assert ndcg == pytest.approx(reference_alpha_ndcg(_rel_sets(y_true), scores, SEED_DOCS, [1, 2, 3], 0.5,
                                                      "stable"), rel=1e-12)


@needs_pyndeval
def test_seed004_against_pyndeval():
    y_true, scores = _seed_data()
    qrels = [("1", str(s), doc, 1) for doc in SEED_DOCS for s in SEED_TABLE[doc]] + [("1", "0", "d", 0)]
    run = [("1", doc, float(score)) for doc, score in zip(SEED_DOCS, scores)]
    ks = [1, 2, 3, 5, 10, 20]
    expected = pyndeval.ndeval(qrels, run, measures=[f"alpha-nDCG@{k}" for k in ks])["1"]
    got = alpha_ndcg(y_true, scores, k=ks, doc_ids=SEED_DOCS)[0]
    np.testing.assert_allclose(got, [expected[f"alpha-nDCG@{k}"] for k in ks], rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# against the exact reference
# ---------------------------------------------------------------------------------------------


@st.composite
def diversity_queries(draw, max_docs=10, max_subtopics=6):
    n_queries = draw(st.integers(1, 4))
    n_subtopics = draw(st.integers(1, max_subtopics))
    sizes = draw(st.lists(st.integers(1, max_docs), min_size=n_queries, max_size=n_queries))
    n = sum(sizes)
    y_true = np.array(draw(st.lists(st.lists(st.booleans(), min_size=n_subtopics, max_size=n_subtopics),
                                    min_size=n, max_size=n)), dtype=bool)
    scores = np.array(draw(st.lists(st.sampled_from([-math.inf, 0.0, 0.5, 1.0, 2.0]), min_size=n, max_size=n)))
    ids = []
    for size in sizes:  # unique within a query, shared across queries
        ids.extend(draw(st.lists(st.integers(0, 30), min_size=size, max_size=size, unique=True)))
    return y_true, scores, np.array(sizes), np.array(ids)


@given(
    data=diversity_queries(),
    alpha=st.sampled_from(EXACT_ALPHAS),
    ks=st.lists(st.integers(1, 12), min_size=1, max_size=4),
    ties=st.sampled_from(["stable", "trec", "pyndeval"]),
    with_ids=st.booleans(),
)
def test_against_exact_reference(data, alpha, ks, ties, with_ids):
    y_true, scores, sizes, ids = data
    if not with_ids:
        ties = "stable"
    got = alpha_ndcg(y_true, scores, sizes, k=ks, alpha=alpha, doc_ids=ids if with_ids else None, ties=ties)
    assert got.shape == (len(sizes), len(ks))
    start = 0
    for q, size in enumerate(sizes):
        rows = slice(start, start + size)
        local_ids = ids[rows].tolist() if with_ids else list(range(size))
        expected = reference_alpha_ndcg(_rel_sets(y_true[rows]), scores[rows].tolist(), local_ids, ks, alpha, ties)
        np.testing.assert_allclose(got[q], expected, rtol=1e-12, atol=1e-12)
        start += size


@pytest.mark.parametrize("seed", range(6))
def test_deep_cutoffs_and_many_subtopics(seed):
    """k > 64 (the run is ranked by sorting, not selection) and > 64 subtopics (several words)."""
    rng = np.random.default_rng(seed)
    n, n_subtopics = 150, [3, 70, 130][seed % 3]
    y_true = rng.random((n, n_subtopics)) < 2.0 / n_subtopics
    scores = rng.integers(0, 20, n).astype(float)
    scores[rng.random(n) < 0.2] = -np.inf
    ids = rng.permutation(1000)[:n]
    ks = [1, 10, 65, 100, 149, 150, 500]
    for ties in ("stable", "trec", "pyndeval"):
        alpha = EXACT_ALPHAS[seed % 5]
        got = alpha_ndcg(y_true, scores, k=ks, alpha=alpha, doc_ids=ids, ties=ties)[0]
        expected = reference_alpha_ndcg(_rel_sets(y_true), scores.tolist(), ids.tolist(), ks, alpha, ties)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@needs_pyndeval
def test_greedy_ideal_not_optimal_values_above_one():
    """Subtopics {0,1}, {2,3}, {1,2}: the greedy starts with the greatest id, {1,2}, and never
    recovers; the run {0,1}, {2,3} beats the 'ideal'. ndeval reports the same value."""
    y_true = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [0, 1, 1, 0]])
    scores = np.array([2.0, 1.0, 0.0])
    for alpha in (0.5, 1.0):
        got = alpha_ndcg(y_true, scores, k=[2, 3], alpha=alpha, doc_ids=["a", "b", "c"])[0]
        assert got[0] > 1.0
        ideal_2 = 2 + (1.5 if alpha == 0.5 else 1.0) / math.log2(3)
        assert got[0] == pytest.approx((2 + 2 / math.log2(3)) / ideal_2, rel=1e-14)
        qrels = [("1", str(s), d, 1) for d, row in zip("abc", y_true) for s in np.flatnonzero(row)]
        run = [("1", d, s) for d, s in zip("abc", scores)]
        expected = pyndeval.ndeval(qrels, run, measures=["alpha-nDCG@2", "alpha-nDCG@3"], alpha=alpha)["1"]
        np.testing.assert_allclose(got, [expected["alpha-nDCG@2"], expected["alpha-nDCG@3"]], rtol=1e-12)


def test_alpha_zero_is_graded_ndcg():
    """alpha = 0: the gain is the number of subtopics, i.e. nDCG with that grade (linear gain)."""
    import fasttie as ft

    rng = np.random.default_rng(5)
    y_true = rng.random((40, 4)) < 0.3
    scores = rng.random(40)
    sizes = np.array([10, 15, 15])
    got = alpha_ndcg(y_true, scores, sizes, k=[3, 10], alpha=0)
    grades = y_true.sum(axis=1).astype(float)
    res = ft.rank_evaluate(grades, scores, sizes, metrics=["nDCG@3", "nDCG@10"], ties="stable")
    np.testing.assert_allclose(got, np.column_stack([res.per_query["nDCG@3"], res.per_query["nDCG@10"]]),
                               rtol=1e-12)


def test_empty_queries_and_policies():
    y_true = np.array([[0, 0], [0, 0], [1, 0], [0, 1]])
    scores = np.array([1.0, 0.5, 1.0, 2.0])
    sizes = np.array([2, 2])
    assert alpha_ndcg(y_true, scores, sizes, k=5).tolist() == [0.0, 1.0]
    assert alpha_ndcg(y_true, scores, sizes, k=5, empty=1.0).tolist() == [1.0, 1.0]
    assert np.isnan(alpha_ndcg(y_true, scores, sizes, k=5, empty="skip")[0])
    assert np.isnan(alpha_ndcg(y_true, scores, sizes, k=5, empty=np.nan)[0])
    with pytest.raises(ValueError, match="1 of 2 queries have no relevant subtopic"):
        alpha_ndcg(y_true, scores, sizes, k=5, empty="error")


def test_unretrieved_documents_count_for_the_ideal_only():
    y_true = np.array([[1, 0], [0, 1], [0, 0]])
    # the run retrieves only the unjudged third row and the first: the second is in the ideal only
    got = alpha_ndcg(y_true, [1.0, -np.inf, 2.0], k=[1, 2, 3])[0]
    ideal = [1, 1 + 1 / math.log2(3), 1 + 1 / math.log2(3)]
    np.testing.assert_allclose(got, [0, (1 / math.log2(3)) / ideal[1], (1 / math.log2(3)) / ideal[2]], rtol=1e-14)


# ---------------------------------------------------------------------------------------------
# against pyndeval (ndeval.c) on random diversity runs
# ---------------------------------------------------------------------------------------------


def random_diversity_run(seed, n_queries=8):
    """Diversity qrels lines (qid, subtopic, docno, rel) and run lines (qid, docno, score).

    Graded judgments (2 counts as 1 in ndeval), judged non-relevant documents, a query without
    any relevant subtopic, unjudged retrieved documents, judged documents the run misses,
    docnos of different lengths (string order is not numeric order), many tied scores, a run
    query without judgments and a judged query without a run (both ignored)."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(n_queries):
        qid = str(100 + q)
        n_subtopics = int(rng.integers(1, 7))
        pool = [f"d{j}" for j in rng.permutation(300)[:60]]
        judged = pool[: int(rng.integers(1, 40))]
        for doc in judged:
            subtopics = [s for s in range(1, n_subtopics + 1) if rng.random() < 0.5] or [1]
            for s in subtopics:
                rel = 0 if q == 0 else int(rng.choice([0, 1, 1, 2]))
                qrels.append((qid, str(s), doc, rel))
        retrieved = [d for d in pool if rng.random() < 0.6][: int(rng.integers(1, 45))]
        for doc in retrieved:
            run.append((qid, doc, float(rng.integers(0, 6))))
    qrels.append(("999", "1", "d1", 1))  # judged, not in the run
    run.append(("998", "d1", 1.0))  # in the run, not judged
    return qrels, run


PYNDEVAL_MEASURES = ["alpha-nDCG@5", "alpha-nDCG@10", "alpha-nDCG@20"]


@needs_pyndeval
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ties", ["pyndeval", "trec"])
def test_trec_evaluate_against_pyndeval(seed, ties):
    qrels, run = random_diversity_run(seed)
    reference_run = run if ties == "pyndeval" else trec_ordered_run(run)
    expected = pyndeval.ndeval(qrels, sorted(reference_run), measures=PYNDEVAL_MEASURES, alpha=0.5)
    q, r = diversity_objects(qrels, run)
    res = trec.evaluate(q, r, ["alpha_nDCG@[5,10,20]"], ties=ties)
    assert res.query_ids == sorted(expected)
    assert list(res.per_query) == ["alpha_nDCG@5", "alpha_nDCG@10", "alpha_nDCG@20"]
    assert res.settings["alpha"] == 0.5
    for i, qid in enumerate(res.query_ids):
        for k in (5, 10, 20):
            diff = abs(res.per_query[f"alpha_nDCG@{k}"][i] - expected[qid][f"alpha-nDCG@{k}"])
            assert diff <= 1e-9, (qid, k)
    assert res.n_empty == 1  # query 100 has judgments, none relevant: ndeval scores it 0
    assert res.per_query["alpha_nDCG@10"][0] == 0.0


@needs_pyndeval
@pytest.mark.parametrize("seed", range(6))
def test_arrays_against_pyndeval(seed):
    """The array facade on the same data: one row per judged or retrieved document."""
    qrels, run = random_diversity_run(seed, n_queries=5)
    expected = pyndeval.ndeval(qrels, sorted(run), measures=PYNDEVAL_MEASURES)
    y_true, scores, sizes, doc_ids = diversity_arrays(qrels, run, sorted(expected))
    got = alpha_ndcg(y_true, scores, sizes, k=[5, 10, 20], doc_ids=doc_ids, ties="pyndeval")
    want = np.array([[expected[qid][m] for m in PYNDEVAL_MEASURES] for qid in sorted(expected)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


@needs_pyndeval
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("alpha", [0.25, 0.3, 0.9])
def test_pyndeval_other_alphas(seed, alpha):
    """Any alpha, bit for bit up to the last rounding, once both add gains in one subtopic order.

    fasttie (like ndeval.c) adds a document's subtopic weights in numeric subtopic order;
    pyndeval numbers subtopics by first appearance in its qrels. At a non-dyadic alpha the two
    sums can differ in the last bit and flip a greedy tie (seen: 5e-4 on seed 2 at alpha 0.3),
    so a first line per subtopic, in numeric order, aligns pyndeval's numbering with ndeval's."""
    qrels, run = random_diversity_run(seed)
    aligned = [("000", str(s), "x", 1) for s in range(1, 7)] + qrels  # "000" has no run: ignored
    expected = pyndeval.ndeval(aligned, sorted(run), measures=PYNDEVAL_MEASURES, alpha=alpha)
    res = trec.evaluate(*diversity_objects(qrels, run), [f"alpha_nDCG(alpha={alpha})@[5,10,20]"], ties="pyndeval")
    assert res.settings["alpha"] == alpha
    for i, qid in enumerate(res.query_ids):
        for k in (5, 10, 20):
            assert res.per_query[f"alpha_nDCG(alpha={alpha})@{k}"][i] == pytest.approx(
                expected[qid][f"alpha-nDCG@{k}"], abs=1e-12)


# ---------------------------------------------------------------------------------------------
# trec.evaluate: names, order, merging with ranking metrics
# ---------------------------------------------------------------------------------------------


def test_trec_evaluate_names_order_and_merge():
    qrels, run = random_diversity_run(1)
    q, r = diversity_objects(qrels, run)
    asked = ["P@5", "alpha-nDCG@10", "AP", "alpha_nDCG(alpha=0.25)@5", "alpha_nDCG@5(alpha=0.5)", "nDCG@[3,5]"]
    res = trec.evaluate(q, r, asked)
    assert list(res.per_query) == ["P@5", "alpha-nDCG@10", "AP", "alpha_nDCG(alpha=0.25)@5", "alpha_nDCG@5(alpha=0.5)",
                                   "nDCG@3", "nDCG@5"]  # as asked; the canonical names find them too
    assert "alpha_nDCG@10" in res.per_query and "alpha_nDCG@5" in res.mean
    assert list(res.mean) == list(res.per_query)
    assert res.settings["alpha"] == [0.25, 0.5]
    ranking_only = trec.evaluate(q, r, ["P@5", "AP", "nDCG@[3,5]"])
    for name in ranking_only.per_query:
        np.testing.assert_array_equal(res.per_query[name], ranking_only.per_query[name])
    diversity_only = trec.evaluate(q, r, ["alpha_nDCG@[5,10]"])
    np.testing.assert_array_equal(res.per_query["alpha_nDCG@10"], diversity_only.per_query["alpha_nDCG@10"])
    np.testing.assert_array_equal(res.per_query["alpha_nDCG@5"], diversity_only.per_query["alpha_nDCG@5"])
    assert res.n_empty == diversity_only.n_empty == ranking_only.n_empty == 1
    assert diversity_only.mean["alpha_nDCG@5"] == pytest.approx(np.mean(diversity_only.per_query["alpha_nDCG@5"]))


@needs_pyndeval
def test_trec_evaluate_files_complete_and_empty(tmp_path):
    qrels, run = random_diversity_run(2, n_queries=4)
    (tmp_path / "div.qrels").write_text("".join(f"{q} {s} {d} {rel}\n" for q, s, d, rel in qrels))
    (tmp_path / "div.run").write_text("".join(f"{q} Q0 {d} {i} {s} tag\n" for i, (q, d, s) in enumerate(run)))
    res = trec.evaluate(tmp_path / "div.qrels", tmp_path / "div.run", "alpha_nDCG@20", ties="pyndeval")
    expected = pyndeval.ndeval(qrels, sorted(run), measures=["alpha-nDCG@20"])
    np.testing.assert_allclose(res.per_query["alpha_nDCG@20"], [expected[q]["alpha-nDCG@20"] for q in res.query_ids],
                               atol=1e-9)
    full = trec.evaluate(tmp_path / "div.qrels", tmp_path / "div.run", "alpha_nDCG@20", complete=True)
    assert full.query_ids == res.query_ids + ["999"] and full.per_query["alpha_nDCG@20"][-1] == 0.0
    skipped = trec.evaluate(tmp_path / "div.qrels", tmp_path / "div.run", "alpha_nDCG@20", empty="skip",
                            ties="pyndeval")
    assert np.isnan(skipped.per_query["alpha_nDCG@20"][0])
    assert skipped.mean["alpha_nDCG@20"] == pytest.approx(np.mean(res.per_query["alpha_nDCG@20"][1:]), rel=1e-15)
    with pytest.raises(ValueError, match="no relevant document"):
        trec.evaluate(tmp_path / "div.qrels", tmp_path / "div.run", "alpha_nDCG@20", empty="error")


@pytest.mark.parametrize(
    "metrics, kwargs, match",
    [
        (["alpha_nDCG"], {}, "needs a cutoff"),
        (["alpha_nDCG@0"], {}, "cutoff must be >= 1"),
        (["alpha_nDCG@x"], {}, "not an integer"),
        (["alpha_nDCG(alpha=1.5)@5"], {}, r"in \[0, 1\]"),
        (["alpha_nDCG(alpha=x)@5"], {}, "not a number"),
        (["alpha_nDCG(alpha=0.1)@5(alpha=0.2)"], {}, "give the parameters once"),
        (["alpha_nDGC@5"], {}, "unknown diversity metric"),
        (["alpha_nDCG@5"], {"ties": "optimistic"}, "take ties in"),
        (["alpha_nDCG@5"], {"empty": "never"}, "empty must be one of"),
    ],
)
def test_trec_evaluate_errors(metrics, kwargs, match):
    q, r = diversity_objects(*random_diversity_run(0, n_queries=2))
    with pytest.raises(ValueError, match=match):
        trec.evaluate(q, r, metrics, **kwargs)


# ---------------------------------------------------------------------------------------------
# errors of the array facade
# ---------------------------------------------------------------------------------------------

Y = np.array([[1, 0], [0, 1], [1, 1]])
S = np.array([1.0, 0.5, 0.2])


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        ((Y[:, 0], S), {}, ValueError, "y_true must be 2-D"),
        ((Y * 2, S), {}, ValueError, r"only 0 and 1.*y_true\[0, 0\] is 2"),
        ((np.where(Y > 0, np.nan, 0.0), S), {}, ValueError, "only 0 and 1"),
        ((Y.astype(str), S), {}, TypeError, "y_true must be a numeric"),
        ((Y, S[:2]), {}, ValueError, r"one score per row of y_true \(3\)"),
        ((Y, np.array([1.0, np.nan, 0.0])), {}, ValueError, "NaN or \\+inf score at row 1"),
        ((Y, np.array([1.0, np.inf, 0.0])), {}, ValueError, "NaN or \\+inf score at row 1"),
        ((Y, S), {"alpha": 1.5}, ValueError, r"alpha must be in \[0, 1\]"),
        ((Y, S), {"alpha": -0.1}, ValueError, r"alpha must be in \[0, 1\]"),
        ((Y, S), {"alpha": float("nan")}, ValueError, r"alpha must be in \[0, 1\]"),
        ((Y, S), {"alpha": "0.5"}, TypeError, "alpha must be a number"),
        ((Y, S), {"k": 0}, ValueError, "k must be >= 1"),
        ((Y, S), {"k": [5, -1]}, ValueError, "k must be >= 1"),
        ((Y, S), {"k": 2.5}, TypeError, "k must be an integer"),
        ((Y, S), {"k": []}, ValueError, "k is empty"),
        ((Y, S, [1, 1]), {}, ValueError, "group sizes sum to 2 but y_true has 3 rows"),
        ((Y, S, [3, 0]), {}, ValueError, "group sizes must be >= 1"),
        ((Y, S, [1.5, 1.5]), {}, TypeError, "group must be a 1-D array of integer"),
        ((Y, S), {"doc_ids": ["a", "b", "a"]}, ValueError, "document 'a' appears twice in query 0"),
        ((Y, S, [1, 2]), {"doc_ids": ["a", "b", "b"]}, ValueError, "document 'b' appears twice in query 1"),
        ((Y, S), {"doc_ids": ["a", "b"]}, ValueError, "doc_ids must have one id per row"),
        ((Y, S), {"ties": "trec"}, ValueError, "pass doc_ids"),
        ((Y, S), {"ties": "optimistic"}, ValueError, "ties must be one of"),
        ((Y, S), {"empty": "never"}, ValueError, "empty must be a number or one of"),
        ((Y, S), {"empty": None}, TypeError, "empty must be a number"),
        ((Y[:0], S[:0]), {}, ValueError, "no rows"),
    ],
)
def test_errors(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        alpha_ndcg(*args, **kwargs)


def test_same_document_in_two_queries_is_fine():
    got = alpha_ndcg(Y[[0, 2, 0, 2]], [0.5, 1.0, 1.0, 0.5], [2, 2], k=2, doc_ids=["a", "b", "a", "b"])
    assert got[0] == 1.0 and got[1] < 1.0


# ---------------------------------------------------------------------------------------------
# engine properties
# ---------------------------------------------------------------------------------------------


def _random_lists(seed, n_queries, max_size, n_subtopics, p_relevant, n_scores):
    """Per-query lists of random sizes: subtopic judgments (bool) and integer scores (ties)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size, n_queries)
    n = int(sizes.sum())
    return rng.random((n, n_subtopics)) < p_relevant, rng.integers(0, n_scores, n).astype(float), sizes


def test_bitwise_identical_across_thread_counts():
    y_true, scores, sizes = _random_lists(11, 200, 300, 12, 0.15, 30)
    one = alpha_ndcg(y_true, scores, sizes, k=[5, 20], alpha=0.3, n_threads=1)
    two = alpha_ndcg(y_true, scores, sizes, k=[5, 20], alpha=0.3, n_threads=2)
    np.testing.assert_array_equal(one, two)


def test_one_kernel_signature(tmp_path):
    np.save(tmp_path / "y.npy", Y.astype(np.int8))
    mapped = np.load(tmp_path / "y.npy", mmap_mode="r")
    frozen = Y.astype(np.float32)
    frozen.flags.writeable = False
    for y_true in (Y, Y.astype(bool), frozen, mapped, np.asfortranarray(Y)):
        for scores in (S, S.astype(np.float32), np.array([3, 2, 1])):
            for ids in (None, ["a", "b", "c"], np.array([5, 3, 9], dtype=np.uint16)):
                alpha_ndcg(y_true, scores, k=[1, 2], alpha=1, doc_ids=ids)
    assert len(diversity_measures.diversity_queries.signatures) == 1, diversity_measures.diversity_queries.signatures


def test_average_ties_match_diversity_evaluate():
    """ties='average' in the array facade is diversity_evaluate's exact tie average."""
    from fasttie.diversity import diversity_evaluate

    y_true, scores, sizes = _random_lists(3, 30, 40, 5, 0.3, 4)
    got = alpha_ndcg(y_true, scores, sizes, k=[3, 10], ties="average")
    res = diversity_evaluate(y_true, scores, sizes, metrics=["alpha_nDCG@[3,10]"], ties="average")
    np.testing.assert_array_equal(got, np.stack([res.per_query["alpha_nDCG@3"], res.per_query["alpha_nDCG@10"]], 1))
    stable = alpha_ndcg(y_true, scores, sizes, k=[3, 10])
    assert not np.array_equal(got, stable)  # ties matter here
