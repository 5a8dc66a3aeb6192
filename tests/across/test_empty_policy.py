"""Which queries are empty for which metric, and HashNet's protocol (empty="skip_missed").

* Graded metrics (DCG, nDCG, ACG, WAP) take every grade > 0, binary metrics the grades >=
  relevance_level; a query is empty for a metric when it has no item of that kind (for the
  ratio metrics exactly when the metric is 0/0). Checked against scikit-learn's
  ``dcg_score`` / ``ndcg_score`` on fractional grades with ties and against trec_eval's
  nDCG under ``-l 2``.
* HashNet's evaluation: mean over the queries with a relevant item in their top R of AP@R.
  With stable ties it equals a numpy restatement of HashNet's code; under ties="average" it is
  the average over the tie orders that retrieve a relevant item, checked against enumeration.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import dcg_score, ndcg_score

import fasttie as ft
import oracle


@settings(max_examples=60)
@given(st.integers(0, 2**32 - 1))
def test_fractional_grades_match_sklearn(seed):
    """Grades in [0, 1) (below the default relevance level 1): DCG and nDCG still count them."""
    rng = np.random.default_rng(seed)
    n_q, n_docs = int(rng.integers(1, 6)), int(rng.integers(2, 12))
    y_true = np.round(rng.random((n_q, n_docs)) * rng.choice([0.99, 3.0]), 2)
    y_true[rng.random((n_q, n_docs)) < 0.3] = 0.0
    y_pred = rng.integers(0, 3, (n_q, n_docs)).astype(float)  # plenty of ties
    k = int(rng.integers(1, n_docs + 2))
    res = ft.rank_evaluate(y_true, y_pred, metrics=[f"DCG@{k}", f"nDCG@{k}", "nDCG"])
    for i in range(n_q):
        row_t, row_p = y_true[i : i + 1], y_pred[i : i + 1]
        assert res.per_query[f"DCG@{k}"][i] == pytest.approx(dcg_score(row_t, row_p, k=k), rel=1e-12, abs=1e-15)
        assert res.per_query[f"nDCG@{k}"][i] == pytest.approx(ndcg_score(row_t, row_p, k=k), rel=1e-12, abs=1e-15)
    assert res.mean[f"DCG@{k}"] == pytest.approx(dcg_score(y_true, y_pred, k=k), rel=1e-12, abs=1e-15)
    assert res.mean[f"nDCG@{k}"] == pytest.approx(ndcg_score(y_true, y_pred, k=k), rel=1e-12, abs=1e-15)
    assert res.mean["nDCG"] == pytest.approx(ndcg_score(y_true, y_pred), rel=1e-12, abs=1e-15)


def test_fractional_grades_issue_example():
    res = ft.rank_evaluate([0.5, 0.2], [1.0, 0.0], metrics=["DCG", "nDCG"])
    assert res.mean == pytest.approx({"DCG": 0.5 + 0.2 / math.log2(3), "nDCG": 1.0}, rel=1e-15)
    assert res.n_empty == 0
    # empty="one" touches neither: the query has positive grades
    assert ft.rank_evaluate([0.5, 0.2], [1.0, 0.0], metrics=["DCG", "nDCG"], empty="one").mean == res.mean
    # it is empty for the binary metrics (nothing reaches relevance level 1)
    one = ft.rank_evaluate([0.5, 0.2], [1.0, 0.0], metrics=["AP", "P@1", "DCG"], empty="one")
    assert one.mean == pytest.approx({"AP": 1.0, "P@1": 0.0, "DCG": res.mean["DCG"]})
    assert one.n_empty == 1


def test_empty_is_per_metric_kind():
    y_true = [[0.0, 0.0, 0.0], [1.0, 0.0, 2.0], [0.5, 0.0, 0.0]]
    y_pred = [[3.0, 2.0, 1.0]] * 3
    names = ["AP", "nDCG", "DCG", "P@2"]
    skip = ft.rank_evaluate(y_true, y_pred, metrics=names, empty="skip")
    assert np.isnan(skip.per_query["AP"][[0, 2]]).all() and not np.isnan(skip.per_query["AP"][1])
    assert np.isnan(skip.per_query["nDCG"][0]) and skip.per_query["nDCG"][2] == 1.0
    assert skip.per_query["DCG"][2] == 0.5
    assert skip.n_empty == 2  # empty for at least one requested metric
    graded_only = ft.rank_evaluate(y_true, y_pred, metrics=["nDCG"], empty="skip")
    assert graded_only.n_empty == 1
    # "error" raises only when a requested metric has an empty query
    ft.rank_evaluate(y_true[1:], y_pred[1:], metrics=["nDCG", "DCG"], empty="error")
    with pytest.raises(ValueError, match="1 of 2 queries"):
        ft.rank_evaluate(y_true[1:], y_pred[1:], metrics=["nDCG", "AP"], empty="error")


def test_trec_eval_ndcg_uses_every_grade_under_relevance_level(tmp_path):
    """qrels q1 0 d1 1 / q1 0 d2 0; run d2 above d1: trec_eval -l2 -m ndcg gives 0.6309."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    run.write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 2.0 t\n")
    res = ft.trec.evaluate(str(qrels), str(run), ["nDCG", "AP"], relevance_level=2)
    assert res.per_query["nDCG"][0] == pytest.approx(1 / math.log2(3), rel=1e-15)
    assert res.per_query["AP"][0] == 0.0


# ------------------------------------------------------------------------------------------
# HashNet's protocol
# ------------------------------------------------------------------------------------------
def hashnet_map(query_codes, db_codes, query_labels, db_labels, top):
    """HashNet's mean AP@top (its numpy evaluation code, restated): rank by Hamming distance
    (here a stable argsort, so the tie order is defined), skip queries with no relevant item in
    the top, AP over the relevant items retrieved."""
    aps = []
    for i in range(len(query_codes)):
        distance = (query_codes[i] != db_codes).sum(axis=1)
        ranked = np.argsort(distance, kind="stable")[:top]
        match = (db_labels[ranked] == query_labels[i]).astype(float)
        found = match.sum()
        if found:
            precision = np.cumsum(match) / np.arange(1, top + 1)
            aps.append(float((precision * match).sum() / found))
    return float(np.mean(aps)), len(aps)


def test_hashnet_protocol_matches_its_evaluation_code():
    rng = np.random.default_rng(7)
    n_q, n_db, n_bits, top = 200, 3000, 16, 100
    db_labels = rng.integers(0, 40, n_db)
    query_labels = rng.integers(0, 40, n_q)
    centers = rng.integers(0, 2, (40, n_bits))
    def flip(labels):  # weak codes
        return centers[labels] ^ (rng.random((len(labels), n_bits)) < 0.4)

    queries, database = flip(query_labels), flip(db_labels)
    expected, kept = hashnet_map(queries, database, query_labels, db_labels, top)
    res = ft.evaluate(queries, database, query_labels, db_labels, metrics=[f"AP@{top}"], ties="stable",
                      empty="skip_missed")
    assert kept < n_q  # the protocol did skip queries
    assert np.count_nonzero(~np.isnan(res.per_query[f"AP@{top}"])) == kept
    assert res.mean[f"AP@{top}"] == pytest.approx(expected, rel=1e-13)
    zero = ft.evaluate(queries, database, query_labels, db_labels, metrics=[f"AP@{top}"], ties="stable")
    assert zero.mean[f"AP@{top}"] == pytest.approx(expected * kept / n_q, rel=1e-13)


def _conditional_oracle(distances, grades, name, ties):
    """Average of the plain metric over the orderings with a relevant item in the top k."""
    spec = oracle.parse_metric(name)
    k = len(grades) if spec.k is None else spec.k
    values = [
        oracle.plain_metric(o, spec, ap_denominator="retrieved", gain="linear")
        for o in oracle.orderings(distances, grades, ties)
        if any(g > 0 for g in o[:k])
    ]
    if not values:
        return math.nan
    if isinstance(values[0], Fraction):
        return float(sum(values, Fraction(0)) / len(values))
    return math.fsum(values) / len(values)


@settings(max_examples=80)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable", "optimistic", "pessimistic"]))
def test_skip_missed_is_the_average_over_orders_that_retrieve(seed, ties):
    rng = np.random.default_rng(seed)
    n_db, n_bits = int(rng.integers(1, 8)), int(rng.integers(1, 4))
    queries = rng.integers(0, 2, (3, n_bits))
    database = rng.integers(0, 2, (n_db, n_bits))
    query_labels = rng.integers(0, 3, 3)
    db_labels = rng.integers(0, 3, n_db)
    k = int(rng.integers(1, n_db + 2))
    names = [f"AP@{k}", f"P@{k}", f"R@{k}", f"RR@{k}", f"nDCG@{k}", "AP"]
    res = ft.evaluate(queries, database, query_labels, db_labels, metrics=names, ties=ties,
                      gain="linear", empty="skip_missed")
    for i in range(3):
        distances = (queries[i] != database).sum(axis=1)
        grades = (db_labels == query_labels[i]).astype(int)
        for name in names:
            expected = _conditional_oracle(distances, grades, name, ties)
            got = res.per_query[name][i]
            if math.isnan(expected):
                assert math.isnan(got), (name, i)
            else:
                assert got == pytest.approx(expected, rel=1e-12, abs=1e-15), (name, i)


def test_skip_missed_is_for_hashing_only():
    with pytest.raises(ValueError, match="skip_missed"):
        ft.rank_evaluate([1, 0], [0.5, 0.2], empty="skip_missed")
