"""fasttie.report.tables: the table, CSV and trec_eval lines print a Result's values, read back to the
same floats (CSV: bitwise, through Python's csv module), with the conventions of each metric."""

import csv
import io
import math

import numpy as np
import pytest

import fasttie as ft
from fasttie.report.tables import convention, format_csv, format_table, format_trec, format_trec_csv
from fasttie.result import Result

METRICS = ["AP", "nDCG@5", "P@3", "NumRet", "GMAP", "NumQ"]


def _random_result(seed, spread=False):
    """A trec.evaluate result of random qrels and a run with tied scores (some queries without
    a relevant document)."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(int(rng.integers(3, 8))):
        docs = [f"d{i}" for i in range(int(rng.integers(2, 9)))]
        qrels[f"q{q}"] = {d: int(rng.integers(0, 3)) for d in docs}
        run[f"q{q}"] = {d: float(rng.integers(0, 3)) for d in docs}
    if spread:  # GMAP has no exact spread
        return ft.trec.evaluate(qrels, run, ["AP", "nDCG@5", "P@3", "NumRet"], spread=True, ties="average")
    return ft.trec.evaluate(qrels, run, METRICS)


@pytest.mark.parametrize("seed", range(4))
def test_csv_reads_back_bitwise(seed):
    result = _random_result(seed)
    rows = list(csv.reader(io.StringIO(format_trec_csv(result, per_query=True))))
    assert rows[0] == ["metric", "query", "value"]
    per_query = {(m, q): float(v) for m, q, v in rows[1:] if q != "all"}
    for name, values in result.per_query.items():
        for qid, value in zip(result.query_ids, values):
            if name in ("GMAP", "NumQ"):  # trec_eval prints these in the all lines only
                assert (name, str(qid)) not in per_query
            else:
                assert per_query[(name, str(qid))] == value or (math.isnan(value) and math.isnan(per_query[(name, str(qid))]))
    means = {m: float(v) for m, q, v in rows[1:] if q == "all"}
    assert means == result.mean
    assert list(csv.reader(io.StringIO(format_csv(result))))[1:] == [[m, "all", repr(v)] for m, v in result.mean.items()]


def test_csv_spread_column():
    result = _random_result(7, spread=True)
    rows = list(csv.reader(io.StringIO(format_csv(result))))
    assert rows[0] == ["metric", "query", "value", "tie_std"]
    for metric, _, value, std in rows[1:]:
        assert float(value) == result.mean[metric]
        assert (std == "") == (metric not in result.mean_tie_std)
        if std:
            assert float(std) == result.mean_tie_std[metric]


@pytest.mark.parametrize("seed", range(3))
def test_trec_lines_round_as_trec_eval(seed):
    result = _random_result(seed)
    lines = format_trec(result, per_query=True, runid="r1").splitlines()
    shown = [name for name in METRICS if name not in ("GMAP", "NumQ")]
    assert len(lines) == len(result.query_ids) * len(shown) + 1 + len(METRICS)
    for line in lines:
        name, qid, text = line.split("\t")
        name = name.rstrip()
        assert len(line.split("\t")[0]) >= 22  # trec_eval's %-22s
        if name == "runid":
            assert (qid, text) == ("all", "r1")
            continue
        value = result.mean[name] if qid == "all" else result.per_query[name][list(map(str, result.query_ids)).index(qid)]
        expected = str(int(value)) if name in ("NumRet", "NumQ") else f"{value:.4f}"
        assert text == expected


def test_table_values_and_conventions():
    result = _random_result(2)
    lines = format_table(result, digits=6).splitlines()
    assert lines[0].split() == ["metric", "value", "convention"]
    for line in lines[1:]:
        name, value, conv = line.split(None, 2)
        mean = result.mean[name]
        assert value == (str(int(mean)) if name in ("NumRet", "NumQ") else f"{mean:.6f}")
        assert conv == convention(name, result.settings, result.n_empty, result.n_queries,
                                  int(np.isnan(result.per_query[name]).sum()))
    assert "sum over queries" in dict((ln.split(None, 1)[0], ln) for ln in lines)["NumRet"]


def test_convention_text():
    settings = {"ties": "stable", "ap_denominator": "min", "gain": "linear", "empty": "one"}
    assert convention("AP@10", settings, 3, 50) == (
        "denominator = min(k, R); ties = stable; empty = one (3 of 50 queries without relevant items)"
    )
    assert convention("AP", settings, 0, 5).startswith("ties = stable")  # denominators agree at ALL
    assert convention("nDCG@5", {**settings, "log_base": math.e}, 0, 5).startswith("gain = linear (g), discount log base 2.71828")
    assert convention("R(radius=3)", settings, 0, 5).startswith("distance <= 3, no tie order")
    assert convention("P@5", {}, 1, 5) == "1 of 5 queries without relevant items"  # a result read from CSV


def test_table_and_trec_format_nan():
    result = Result({"AP": float("nan"), "P@5": 0.25}, {"AP": np.array([np.nan]), "P@5": np.array([0.25])}, 1, 1,
                    settings={"ties": "average", "empty": "skip"}, query_ids=["q9"])
    table = format_table(result, digits=2).splitlines()
    assert table[1].split()[:2] == ["AP", "nan"] and table[2].split()[:2] == ["P@5", "0.25"]
    assert format_trec(result, per_query=True).splitlines()[1] == "P@5" + " " * 19 + "\tq9\t0.2500"
