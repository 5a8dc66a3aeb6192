"""Success@k (trec_eval's success_k): 1 when a relevant item is in the top k. Tie-aware it is
P(hits@k >= 1) = 1 - C(n - r, j) / C(n, j) for the tie cut at k (when nothing relevant comes
before it), checked against enumeration of every order inside ties, in every tie mode, for
Hamming rankings and ranked lists; trec_eval's success_1/2/5/10/20 are in
tests/conformance/test_trec_conformance.py."""


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
import oracle


@settings(max_examples=80)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable", "optimistic", "pessimistic"]))
def test_success_against_enumeration(seed, ties):
    rng = np.random.default_rng(seed)
    n_db, n_bits = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    queries, database = rng.integers(0, 2, (3, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    query_labels, db_labels = rng.integers(0, 3, 3), rng.integers(0, 3, n_db)
    cutoffs = sorted({int(k) for k in rng.integers(1, n_db + 3, 3)})
    names = [f"Success@{k}" for k in cutoffs]
    res = ft.evaluate(queries, database, query_labels, db_labels, metrics=names, ties=ties)
    for i in range(3):
        distances = (queries[i] != database).sum(axis=1)
        grades = (db_labels == query_labels[i]).astype(int)
        for name in names:
            expected = float(oracle.oracle_query_literal(distances, grades, name, ties=ties))
            assert res.per_query[name][i] == pytest.approx(expected, rel=1e-13, abs=1e-15)
    # the same lists as scored rows: smaller distance = higher score
    if ties != "stable":
        rows = ft.rank_evaluate(
            np.concatenate([(db_labels == query_labels[i]).astype(float) for i in range(3)]),
            np.concatenate([-(queries[i] != database).sum(axis=1).astype(float) for i in range(3)]),
            [n_db] * 3, metrics=names, ties=ties)
        for name in names:
            np.testing.assert_allclose(rows.per_query[name], res.per_query[name], rtol=1e-13, atol=1e-15)


def test_success_names_and_a_tie():
    assert [m.name for m in ft.parse_metrics(["success_1", "success.2,5", "Success@10"])] == [
        "Success@1", "Success@2", "Success@5", "Success@10"]
    # two items tie for the first place, one relevant: success@1 is 1/2
    assert ft.rank_evaluate([1, 0, 0], [0.5, 0.5, 0.1], metrics=["Success@1", "Success@2"]).mean == {
        "Success@1": 0.5, "Success@2": 1.0}
