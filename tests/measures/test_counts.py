"""trec_eval's summary measures: the counts NumQ, NumRet, NumRel, NumRelRet (summed over
queries), SetAP (set_map) and GMAP (gm_map, a geometric mean of AP).

Per query each is checked against enumeration of every order inside ties (tests/oracle.py), in
every tie mode, for Hamming rankings and ranked lists; the aggregates against a sum and a
geometric mean computed here; trec_eval's own values are in tests/conformance/test_trec_conformance.py.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
import oracle
from fasttie.metrics import aggregate
from fasttie.report.tables import format_trec

NAMES = ["NumQ", "NumRel", "SetAP", "GMAP"]


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "stable", "optimistic", "pessimistic"]))
def test_against_enumeration(seed, ties):
    rng = np.random.default_rng(seed)
    n_db, n_bits = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    queries, database = rng.integers(0, 2, (3, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    query_labels, db_labels = rng.integers(0, 2, 3), rng.integers(0, 2, n_db)
    cutoffs = sorted({int(k) for k in rng.integers(1, n_db + 3, 2)})
    names = NAMES + [f"{base}@{k}" for k in cutoffs for base in ("NumRet", "NumRelRet", "GMAP")] + ["NumRet"]
    res = ft.evaluate(queries, database, query_labels, db_labels, metrics=names, ties=ties)
    for i in range(3):
        distances = (queries[i] != database).sum(axis=1)
        grades = (db_labels == query_labels[i]).astype(int)
        if not grades.any():  # the empty policy: see test_counts_of_a_query_without_relevant_items
            continue
        for name in names:
            expected = float(oracle.oracle_query_literal(distances, grades, name, ties=ties))
            assert res.per_query[name][i] == pytest.approx(expected, rel=1e-13, abs=1e-15), name
    # the same lists as scored rows: smaller distance = higher score
    if ties != "stable":
        rows = ft.rank_evaluate(
            np.concatenate([(db_labels == query_labels[i]).astype(float) for i in range(3)]),
            np.concatenate([-(queries[i] != database).sum(axis=1).astype(float) for i in range(3)]),
            [n_db] * 3, metrics=names, ties=ties, ap_denominator="retrieved")
        for name in names:
            np.testing.assert_allclose(rows.per_query[name], res.per_query[name], rtol=1e-13, atol=1e-15, err_msg=name)
            assert rows.mean[name] == pytest.approx(res.mean[name], rel=1e-13, nan_ok=True)


def test_counts_are_summed_and_gmap_is_a_geometric_mean():
    rng = np.random.default_rng(4)
    y_true, y_pred = rng.integers(0, 2, 40).astype(float), rng.integers(0, 5, 40).astype(float)
    y_true[:3] = 1.0  # a relevant item in each of the first queries
    sizes = [10, 10, 20]
    res = ft.rank_evaluate(y_true, y_pred, sizes, metrics=["NumQ", "NumRet", "NumRet@5", "NumRel", "NumRelRet@5",
                                                           "GMAP", "AP"])
    assert res.mean["NumQ"] == 3.0 and res.mean["NumRet"] == 40.0 and res.mean["NumRet@5"] == 15.0
    assert res.mean["NumRel"] == y_true.sum()
    assert res.mean["NumRelRet@5"] == pytest.approx(res.per_query["NumRelRet@5"].sum(), rel=1e-15)
    ap = res.per_query["AP"]
    np.testing.assert_array_equal(res.per_query["GMAP"], ap)
    geometric = math.prod(max(v, 1e-5) for v in ap) ** (1 / len(ap))
    assert res.mean["GMAP"] == pytest.approx(geometric, rel=1e-14)
    assert res.mean["GMAP"] < res.mean["AP"]


def test_gmap_floor():
    # AP = 0 counts as 1e-5 (trec_eval's MIN_GEO_MEAN), so one bad query does not zero GMAP
    assert aggregate("GMAP", [0.0, 0.1]) == pytest.approx(math.sqrt(1e-6), rel=1e-14)
    assert aggregate("GMAP@10", [0.25, float("nan"), 1.0]) == pytest.approx(0.5, rel=1e-15)
    assert math.isnan(aggregate("NumRet", [float("nan")]))


@pytest.mark.parametrize("empty", ["zero", "one", "skip"])
def test_counts_of_a_query_without_relevant_items(empty):
    # query 0 has no relevant item: a count is what it is (NumRet = 3), unless skip leaves the
    # query out; SetAP and GMAP are 0/0 there and follow the policy as AP does
    res = ft.rank_evaluate([0, 0, 0, 1, 0], [0.3, 0.2, 0.1, 0.9, 0.5], [3, 2],
                           metrics=["NumRet", "NumRel", "NumRelRet", "NumQ", "SetAP", "GMAP", "AP"], empty=empty)
    if empty == "skip":
        assert math.isnan(res.per_query["NumRet"][0]) and res.mean["NumRet"] == 2.0 and res.mean["NumQ"] == 1.0
    else:
        assert res.per_query["NumRet"].tolist() == [3.0, 2.0] and res.mean["NumRet"] == 5.0
        assert res.per_query["NumRel"].tolist() == [0.0, 1.0] and res.per_query["NumRelRet"].tolist() == [0.0, 1.0]
        assert res.mean["NumQ"] == 2.0
        fill = 1.0 if empty == "one" else 0.0
        assert res.per_query["SetAP"][0] == fill and res.per_query["GMAP"][0] == res.per_query["AP"][0] == fill
    assert res.per_query["SetAP"][1] == 0.5  # 1 relevant of 2 retrieved, R = 1: 1 / (2 x 1)


def test_trec_eval_names_and_printing():
    assert [m.name for m in ft.parse_metrics(["num_q", "num_ret", "num_rel", "num_rel_ret", "gm_map", "set_map",
                                              "set_P", "set_recall", "set_F", "NumRet@10"])] == [
        "NumQ", "NumRet", "NumRel", "NumRelRet", "GMAP", "SetAP", "P", "R", "F1", "NumRet@10"]
    with pytest.raises(ValueError, match="takes no cutoff"):
        ft.parse_metrics("NumRel@10")
    res = ft.rank_evaluate([1, 0, 0, 1], [0.9, 0.5, 0.4, 0.1], [2, 2], metrics=["NumRet", "GMAP", "NumQ", "AP"])
    res.query_ids = ["q1", "q2"]
    lines = format_trec(res, per_query=True).splitlines()
    assert [line.split("\t") for line in lines] == [
        ["NumRet".ljust(22), "q1", "2"], ["AP".ljust(22), "q1", "1.0000"],
        ["NumRet".ljust(22), "q2", "2"], ["AP".ljust(22), "q2", "0.5000"],
        ["NumRet".ljust(22), "all", "4"], ["GMAP".ljust(22), "all", "0.7071"], ["NumQ".ljust(22), "all", "2"],
        ["AP".ljust(22), "all", "0.7500"],
    ]


def test_counts_under_hashnets_protocol():
    # empty="skip_missed" keeps, per metric, the queries (tie orders) that retrieve a relevant
    # item within its cutoff (the whole list without one): the order-free counts keep their
    # value there, NumRelRet@k is E[hits@k | hits@k >= 1]
    rng = np.random.default_rng(7)
    q, db = rng.integers(0, 2, (6, 8)), rng.integers(0, 2, (40, 8))
    ql, dl = rng.integers(0, 3, 6), rng.integers(0, 3, 40)
    names = ["NumRet@3", "NumRel", "NumQ", "NumRelRet@3", "P@3"]
    kept = ft.evaluate(q, db, ql, dl, metrics=names, empty="skip_missed")
    plain = ft.evaluate(q, db, ql, dl, metrics=names + ["Success@3"])
    hit, any_relevant = plain.per_query["Success@3"], plain.per_query["NumRel"]
    assert ((hit == 0) & (any_relevant > 0)).any()  # a query that misses in the top 3 only
    np.testing.assert_array_equal(kept.per_query["NumRet@3"], np.where(hit > 0, plain.per_query["NumRet@3"], np.nan))
    for name in ("NumRel", "NumQ"):
        np.testing.assert_array_equal(kept.per_query[name], np.where(any_relevant > 0, plain.per_query[name], np.nan))
    np.testing.assert_allclose(kept.per_query["NumRelRet@3"], 3 * kept.per_query["P@3"], rtol=1e-14)
    assert kept.mean["NumQ"] == float((any_relevant > 0).sum())
