"""fasttie.result: Result round trips: to_dict/from_dict, JSON, save/load (.json, .csv) and to_frame.

The round trip is checked without any ``__eq__``: ``to_dict()`` of the restored Result equals the
original's, and every array comes back with the same dtype and bits
(``assert_array_equal(..., strict=True)``; NaN compares equal to NaN there).
"""

import csv
import json
import importlib.util
import math
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fasttie as ft
from fasttie.result import Result
from helpers import random_codes


def _hashing_result(curves=True, empty="skip"):
    rng = np.random.default_rng(3)
    queries, database = rng.integers(0, 2, (9, 12)), rng.integers(0, 2, (80, 12))
    # class 3 exists only among queries: those queries have no relevant item (NaN under "skip")
    query_labels, db_labels = np.array([0, 1, 2, 3, 0, 1, 3, 2, 0]), rng.integers(0, 3, 80)
    return ft.evaluate(
        queries, database, query_labels, db_labels, metrics=["AP", "AP@10", "nDCG@5", "P@3", "P(radius=2)"],
        empty=empty, curves=curves,
    )


def _ranking_result():
    y_true = [2, 0, 1, 0, 0, 0, 1, 1, 0]
    y_pred = [0.3, 0.2, 0.2, 0.9, 0.1, 0.5, 0.5, 0.4, 0.0]
    return ft.rank_evaluate(y_true, y_pred, qid=["q7", "q7", "q7", "b", "b", "b", "z", "z", "z"], metrics=["AP", "nDCG@2"])


def assert_same(restored, original):
    assert restored.to_dict() == original.to_dict()
    assert list(restored.per_query) == list(original.per_query)
    for name, values in original.per_query.items():
        np.testing.assert_array_equal(restored.per_query[name], values, strict=True)
    assert list(restored.curves) == list(original.curves)
    for name, values in original.curves.items():
        np.testing.assert_array_equal(restored.curves[name], np.asarray(values), strict=True)
    for name, value in original.mean.items():
        assert type(restored.mean[name]) is float
        assert restored.mean[name] == value or (math.isnan(value) and math.isnan(restored.mean[name]))
    assert (restored.n_queries, restored.n_empty, restored.settings) == (original.n_queries, original.n_empty, original.settings)
    assert type(restored.n_queries) is int and type(restored.n_empty) is int
    assert restored.query_ids == original.query_ids


def test_hashing_result_round_trip_through_dict_and_json():
    original = _hashing_result()
    assert original.n_empty == 2 and np.isnan(original.per_query["AP"]).sum() == 2
    assert original.curves["radius"].dtype == np.int64 and original.curves["n"].dtype == np.int64
    assert_same(Result.from_dict(original.to_dict()), original)
    text = original.to_json()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"JSON contains {c}"))  # no NaN/Infinity tokens
    restored = Result.from_json(text)
    assert_same(restored, original)
    assert restored.curves["radius"].dtype == np.int64 and restored.curves["precision_by_radius"].dtype == np.float64


def test_nan_in_curves_round_trips():
    # every query empty under "skip": recall curves are NaN everywhere
    rng = np.random.default_rng(0)
    original = ft.evaluate(rng.integers(0, 2, (3, 6)), rng.integers(0, 2, (20, 6)), [5, 5, 5], rng.integers(0, 2, 20),
                           metrics="AP", empty="skip", curves=[1, 4])
    assert np.isnan(original.curves["recall_by_radius"]).all() and math.isnan(original.mean["AP"])
    text = original.to_json()
    assert "NaN" not in text
    assert_same(Result.from_json(text), original)


def test_ranking_result_keeps_query_ids():
    original = _ranking_result()
    assert original.query_ids == ["b", "q7", "z"]
    assert_same(Result.from_json(original.to_json()), original)


def test_numpy_query_ids_become_plain_values():
    original = Result({"RR": 0.5}, {"RR": np.array([1.0, 0.0])}, 2, 0, query_ids=list(np.array([301, 302])))
    restored = Result.from_json(original.to_json())
    assert restored.query_ids == [301, 302] and type(restored.query_ids[0]) is int


def test_summary_dict_without_per_query():
    original = _hashing_result()
    restored = Result.from_dict(original.to_dict(per_query=False))
    assert restored.per_query == {} and restored.to_dict(per_query=False) == original.to_dict(per_query=False)


@given(
    st.lists(st.one_of(st.none(), st.floats(min_value=-1e300, max_value=1e300)), min_size=1, max_size=20),
    st.booleans(),
)
def test_any_float_round_trips_exactly(values, with_ids):
    array = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    kept = array[~np.isnan(array)]
    original = Result(
        mean={"RR": float(np.mean(kept)) if len(kept) else float("nan")}, per_query={"RR": array},
        n_queries=len(array), n_empty=int(np.isnan(array).sum()), settings={"empty": "skip"},
        query_ids=[f"q{i}" for i in range(len(array))] if with_ids else None,
    )
    assert_same(Result.from_json(original.to_json()), original)


def test_save_load_json(tmp_path):
    original = _hashing_result()
    original.save(tmp_path / "r.json")
    assert_same(Result.load(tmp_path / "r.json"), original)
    assert_same(Result.load(str(tmp_path / "r.json")), original)


@pytest.mark.parametrize("make", [_hashing_result, _ranking_result])
def test_save_load_csv(tmp_path, make):
    original = make()
    path = tmp_path / "r.csv"
    original.save(path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["query", *original.per_query]
    assert len(rows) == original.n_queries + 1  # one row per query
    ids = original.query_ids if original.query_ids is not None else list(range(original.n_queries))
    assert [r[0] for r in rows[1:]] == [str(i) for i in ids]
    loaded = Result.load(path)
    assert loaded.n_queries == original.n_queries and loaded.settings == {}
    assert loaded.query_ids == original.query_ids  # strings here; None for positions 0..n-1
    for name, values in original.per_query.items():
        np.testing.assert_array_equal(loaded.per_query[name], values, strict=True)
        assert loaded.mean[name] == original.mean[name]  # same reduction as the evaluation
    # skipped queries (every cell empty) are the only n_empty a CSV can recover
    assert loaded.n_empty == int(np.isnan(np.column_stack(list(original.per_query.values()))).all(axis=1).sum())


def test_csv_is_what_pandas_reads(tmp_path):
    pd = pytest.importorskip("pandas")
    original = _hashing_result()
    original.save(tmp_path / "r.csv")
    frame = pd.read_csv(tmp_path / "r.csv", index_col="query")
    for name, values in original.per_query.items():
        np.testing.assert_array_equal(frame[name].to_numpy(), values)


def test_save_load_errors(tmp_path):
    original = _hashing_result()
    for name in ("r.txt", "r", "r.json.gz"):
        with pytest.raises(ValueError, match=r"\.json or \.csv"):
            original.save(tmp_path / name)
        with pytest.raises(ValueError, match=r"\.json or \.csv"):
            Result.load(tmp_path / name)
    (tmp_path / "bad.csv").write_text("qid,AP\n0,0.5\n")
    with pytest.raises(ValueError, match="header 'query"):
        Result.load(tmp_path / "bad.csv")
    (tmp_path / "ragged.csv").write_text("query,AP\n0,0.5,1\n")
    with pytest.raises(ValueError, match="line 2"):
        Result.load(tmp_path / "ragged.csv")
    (tmp_path / "text.csv").write_text("query,AP\n0,high\n")
    with pytest.raises(ValueError, match="not a number"):
        Result.load(tmp_path / "text.csv")
    summary = Result.from_dict(original.to_dict(per_query=False))
    with pytest.raises(ValueError, match="no per-query values"):
        summary.save(tmp_path / "s.csv")
    with pytest.raises(TypeError, match="dict"):
        Result.from_dict("{}")
    with pytest.raises(ValueError, match="n_queries"):
        Result.from_dict({"mean": {}})
    with pytest.raises(ValueError, match="has 1 values but n_queries is 2"):
        Result.from_dict({"mean": {}, "n_queries": 2, "n_empty": 0, "per_query": {"AP": [0.5]}})


def test_to_frame():
    pd = pytest.importorskip("pandas")
    original = _hashing_result()
    frame = original.to_frame()
    assert list(frame.columns) == list(original.per_query) and frame.index.name == "query"
    assert frame.index.tolist() == list(range(original.n_queries))
    for name, values in original.per_query.items():
        np.testing.assert_array_equal(frame[name].to_numpy(), values, strict=True)
    # pandas' mean skips NaN exactly as the skip policy does
    assert frame.mean().to_dict() == pytest.approx(original.mean, rel=1e-15)
    means = original.to_frame(per_query=False)
    assert means.shape == (1, len(original.mean)) and means.loc["mean"].to_dict() == original.mean
    ranked = _ranking_result().to_frame()
    assert ranked.index.tolist() == ["b", "q7", "z"] and isinstance(ranked, pd.DataFrame)


def test_to_frame_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'fasttie\[frame\]'"):
        _ranking_result().to_frame()


def test_result_to_dict_and_json_round_trip():
    import json

    q, db, ql, dl = random_codes()
    ql[0] = 99  # one empty query
    res = ft.evaluate(q, db, ql, dl, metrics=["AP", "P@5"], empty="skip")
    data = json.loads(res.to_json())
    assert data["n_empty"] == res.n_empty == 1 and data["n_queries"] == 7
    assert data["per_query"]["AP"][0] is None
    assert data["mean"]["AP"] == pytest.approx(np.nanmean(res.per_query["AP"]))
    assert data["settings"]["ties"] == "average"


def test_results_are_keyed_as_asked_and_found_by_any_spelling(tmp_path):
    queries, database, query_labels, db_labels = ft.datasets.synthetic_hashing(20, 500, seed=2)
    asked = ["mAP@100", "ndcg@10", "P@[5,10]", "mrr", "AP@100"]
    res = ft.evaluate(queries, database, query_labels, db_labels, metrics=asked)
    assert list(res.mean) == ["mAP@100", "ndcg@10", "P@5", "P@10", "mrr", "AP@100"] == list(res.per_query)
    canonical = ft.evaluate(queries, database, query_labels, db_labels, metrics=["AP@100", "nDCG@10", "P@5", "RR"])
    for name in ("AP@100", "map@100", "nDCG@10", "precision@5", "RR", "recip_rank"):
        assert name in res.mean and res.mean[name] == canonical.mean[name]
        np.testing.assert_array_equal(res.per_query[name], canonical.per_query[name])
    assert res.mean.get("P@20") is None and "P@20" not in res.mean and "nonsense" not in res.mean
    with pytest.raises(KeyError):
        res.mean["R@5"]
    for path in (tmp_path / "r.json", tmp_path / "r.csv"):  # saved and loaded: the same keys, the same lookups
        res.save(path)
        loaded = ft.Result.load(path)
        assert list(loaded.per_query) == list(res.per_query) and loaded.per_query["AP@100"][3] == res.per_query["mAP@100"][3]
    if importlib.util.find_spec("pandas") is not None:  # an optional extra (not in the minimum-versions job)
        assert list(res.to_frame().columns) == list(res.per_query)
    by_trec = ft.trec.evaluate({"q": {"a": 1, "b": 0}}, {"q": {"a": 0.5, "b": 0.5}}, ["map", "P.1,2"])
    assert list(by_trec.mean) == ["map", "P_1", "P_2"] and by_trec.mean["AP"] == by_trec.mean["map"]
