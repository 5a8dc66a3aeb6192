"""spread=True in the reports (issue 40, item 3): ft.compare's tie standard deviation of each
mean difference, held to the per-query arrays and to an enumeration of both methods' tie orders;
tie_std through JSON and CSV; TieStats.finalize and fasttie.dask.evaluate with spread, bitwise
ft.evaluate's; the demo's and `fasttie compare`'s columns."""

import csv
import io
import itertools
import json
import math
import re

import numpy as np
import pytest

import fasttie as ft
from fasttie import cli as _cli
from fasttie.report.tables import format_csv, format_trec_csv

pytest.importorskip("scipy")  # ft.compare's t-test


class cli:  # noqa: N801 (reads as the module)
    """fasttie.cli.main with every argument as text (paths included)."""

    @staticmethod
    def main(argv):
        return _cli.main([str(a) for a in argv])


# ---------------------------------------------------------------- compare against the arrays


def _result(values, stds):
    """A Result of given per-query values and tie std (NaN: a skipped query)."""
    per_query = {k: np.asarray(v, dtype=np.float64) for k, v in values.items()}
    mean = {k: float(np.nanmean(v)) for k, v in per_query.items()}
    n = len(next(iter(per_query.values())))
    return ft.Result(mean, per_query, n, 0, tie_std={k: np.asarray(v, dtype=np.float64) for k, v in stds.items()})


@pytest.mark.parametrize("seed", range(6))
def test_tie_std_diff_from_the_per_query_arrays(seed):
    """sqrt(sum of both methods' variances on the queries both keep) / their number, NaN queries
    of either method left out, the flag |mean diff| <= 2 std; computed here with math.fsum."""
    rng = np.random.default_rng(seed)
    n, names = int(rng.integers(3, 30)), ["x", "y", "z"]
    results = {}
    for name in names:
        values = rng.random(n)
        values[rng.random(n) < 0.2] = np.nan  # skipped queries, not the same for every method
        stds = np.where(np.isnan(values), np.nan, rng.random(n) * rng.choice([1e-3, 0.05, 0.3]))
        results[name] = _result({"AP": values}, {"AP": stds})
    comparison = ft.compare(results, n_permutations=50)
    assert len(comparison.tests) == 3
    for test in comparison.tests:
        a, b = results[test["a"]], results[test["b"]]
        keep = [q for q in range(n) if not math.isnan(a.per_query["AP"][q]) and not math.isnan(b.per_query["AP"][q])]
        if not keep:
            assert math.isnan(test["tie_std_diff"]) and test["within_tie_noise"] is False
            continue
        variance = math.fsum([a.tie_std["AP"][q] ** 2 for q in keep] + [b.tie_std["AP"][q] ** 2 for q in keep])
        expected = math.sqrt(variance) / len(keep)
        assert test["tie_std_diff"] == pytest.approx(expected, rel=1e-13)
        diff = math.fsum(a.per_query["AP"][q] - b.per_query["AP"][q] for q in keep) / len(keep)
        assert test["within_tie_noise"] == (abs(diff) <= 2 * expected)


def test_within_flag_both_ways_and_only_with_tie_std():
    """A difference of 0.01 is within twice a tie std of 0.01 and beyond twice one of 0.001; a
    metric that one method has no tie_std for gets neither field, and format_tests says so."""
    base = np.array([0.5, 0.6, 0.7, 0.8])
    wide, narrow = np.full(4, 0.01 * math.sqrt(2)), np.full(4, 0.001 * math.sqrt(2))
    # per-query std s on 4 queries, both methods: std of the mean difference = sqrt(8 s^2) / 4 = s / sqrt(2)
    a = _result({"AP": base + 0.01, "P@5": base}, {"AP": wide, "P@5": narrow})
    b = _result({"AP": base, "P@5": base + 0.01}, {"AP": wide, "P@5": narrow})
    c = _result({"AP": base, "P@5": base, "RR": base}, {"AP": wide})
    tests = {t["metric"]: t for t in ft.compare({"a": a, "b": b}, n_permutations=20).tests}
    assert tests["AP"]["tie_std_diff"] == pytest.approx(0.01)
    assert tests["AP"]["within_tie_noise"] is True
    assert tests["P@5"]["tie_std_diff"] == pytest.approx(0.001)
    assert tests["P@5"]["within_tie_noise"] is False
    comparison = ft.compare({"a": a, "c": c}, n_permutations=20)
    fields = {t["metric"]: t for t in comparison.tests}
    assert "tie_std_diff" in fields["AP"] and "tie_std_diff" not in fields["P@5"]
    lines = comparison.format_tests().splitlines()
    assert "tie std" in lines[0] and "tie noise" in lines[0]
    assert re.search(r"^AP\s+a\s+c\s+\+0\.0100\s+0\.01\s+within\s", lines[1]), lines[1]
    assert "within" not in lines[2] and "beyond" not in lines[2]
    frame = comparison.to_frame(pairs=True)
    assert bool(frame.loc[("AP", "a", "c"), "within_tie_noise"]) is True
    assert math.isnan(frame.loc[("P@5", "a", "c"), "tie_std_diff"])
    data = json.loads(comparison.to_json())
    assert data["tests"][0]["within_tie_noise"] is True and "tie_std_diff" not in data["tests"][1]
    plain = ft.compare({"a": _result({"AP": base}, {}), "b": _result({"AP": base + 0.01}, {})}, n_permutations=20)
    assert "tie_std_diff" not in plain.tests[0] and "tie" not in plain.format_tests()


def test_a_tie_std_of_the_wrong_length_is_refused():
    a = _result({"AP": [0.5, 0.6]}, {"AP": [0.1, 0.1, 0.1]})
    b = _result({"AP": [0.5, 0.7]}, {"AP": [0.1, 0.1]})
    with pytest.raises(ValueError, match=r"tie_std\['AP'\] has shape \(3,\)"):
        ft.compare({"a": a, "b": b})


# ---------------------------------------------------------------- compare against every tie order


def _metric(name, labels):
    """The metric of one fixed order from its definition (labels in rank order, every relevant
    document in the list; linear gain)."""
    relevant = [g > 0 for g in labels]
    if name == "AP":
        hits, total = 0, 0.0
        for i, rel in enumerate(relevant):
            if rel:
                hits += 1
                total += hits / (i + 1)
        return total / sum(relevant)
    if name == "P@2":
        return sum(relevant[:2]) / 2
    if name == "RR":
        return next(1 / (i + 1) for i, rel in enumerate(relevant) if rel)
    if name == "nDCG@3":
        def dcg(gains):
            return math.fsum(g / math.log2(i + 2) for i, g in enumerate(gains[:3]))
        return dcg(labels) / dcg(sorted(labels, reverse=True))
    raise AssertionError(name)


def _orders(labels, scores):
    """The labels in rank order for every order inside ties (scores descending)."""
    groups = [[labels[i] for i in range(len(labels)) if scores[i] == s] for s in sorted(set(scores), reverse=True)]
    return [sum(map(list, parts), []) for parts in itertools.product(*(itertools.permutations(g) for g in groups))]


def _tiny_case(seed):
    rng = np.random.default_rng(seed)
    while True:
        n_queries = int(rng.integers(1, 4))
        labels = [list(rng.integers(0, 3, 4)) for _ in range(n_queries)]
        scores = {m: [list(rng.integers(0, 3, 4)) for _ in range(n_queries)] for m in ("a", "b")}
        counts = [len(_orders(labels[q], scores[m][q])) for m in scores for q in range(n_queries)]
        if all(sum(g > 0 for g in lab) for lab in labels) and math.prod(counts) <= 20000:
            return labels, scores


@pytest.mark.parametrize("seed", range(8))
def test_tie_std_diff_is_the_std_over_both_methods_tie_orders(seed):
    """Every order inside the ties of both methods' rankings of every query, each with equal
    chance: the standard deviation of the difference of the means is compare's tie_std_diff, and
    its mean is compare's mean_diff."""
    labels, scores = _tiny_case(seed)
    n_queries = len(labels)
    metrics = ["AP", "P@2", "RR", "nDCG@3"]
    results = {
        m: ft.rank_evaluate(np.concatenate(labels), np.concatenate(scores[m]), [4] * n_queries, metrics=metrics,
                            spread=True)
        for m in ("a", "b")
    }
    tests = {t["metric"]: t for t in ft.compare(results, n_permutations=20).tests}
    for name in metrics:
        # per (method, query): the metric under each tie order
        values = [[[_metric(name, order) for order in _orders(labels[q], scores[m][q])] for q in range(n_queries)]
                  for m in ("a", "b")]
        diffs = [
            (math.fsum(pick[:n_queries]) - math.fsum(pick[n_queries:])) / n_queries
            for pick in itertools.product(*values[0], *values[1])
        ]
        mean = math.fsum(diffs) / len(diffs)
        std = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / len(diffs))
        assert tests[name]["mean_diff"] == pytest.approx(mean, abs=1e-12)
        assert tests[name]["tie_std_diff"] == pytest.approx(std, abs=1e-12)
        assert tests[name]["within_tie_noise"] == (abs(mean) <= 2 * std + 1e-12)


# ---------------------------------------------------------------- tie_std through files


def _hamming_case(seed, n_queries=12, n_db=300, n_bits=8):
    rng = np.random.default_rng(seed)
    return (rng.choice([-1, 1], (n_queries, n_bits)), rng.choice([-1, 1], (n_db, n_bits)),
            rng.integers(0, 4, n_queries), rng.integers(0, 4, n_db))


SPREAD_METRICS = ["mAP", "AP@20", "ndcg@10", "P@[5,10]", "R@10", "RR", "Success@3", "NumRelRet@10",
                  "P(radius=2)"]


def test_json_and_csv_round_trip_tie_std(tmp_path):
    q, db, ql, dl = _hamming_case(1)
    ql[0] = 9  # a query without relevant items: skipped, NaN in tie_std
    res = ft.evaluate(q, db, ql, dl, metrics=SPREAD_METRICS, ap_denominator="total", empty="skip", spread=True)
    assert np.isnan(res.tie_std["mAP"][0]) and res.n_empty == 1
    for ext in ("json", "csv"):
        path = tmp_path / f"r.{ext}"
        res.save(path)
        back = ft.Result.load(path)
        assert list(back.tie_std) == list(res.tie_std) == list(back.per_query)
        for name in res.tie_std:
            np.testing.assert_array_equal(back.tie_std[name], res.tie_std[name])
            np.testing.assert_array_equal(back.per_query[name], res.per_query[name])
        assert back.mean_tie_std == res.mean_tie_std  # the CSV recomputes them: the same formula, bitwise
        for name in res.tie_min:
            np.testing.assert_array_equal(back.tie_min[name], res.tie_min[name])
            np.testing.assert_array_equal(back.tie_max[name], res.tie_max[name])
        assert back.mean_tie_min == res.mean_tie_min and back.mean_tie_max == res.mean_tie_max
        assert back.n_empty == 1
    header = (tmp_path / "r.csv").read_text().splitlines()[0]
    assert header.startswith("query,mAP,") and ",tie_std(P(radius=2)),tie_min(mAP)," in header
    assert header.endswith(",tie_max(P(radius=2))")  # tie_std, tie_min, tie_max: a block of columns each
    plain = ft.evaluate(q, db, ql, dl, metrics=["AP"], empty="skip")
    plain.save(tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text().splitlines()[0] == "query,AP"
    assert not ft.Result.load(tmp_path / "p.csv").tie_std
    (tmp_path / "bad.csv").write_text("query,AP,tie_std(P@5)\n0,0.5,0.1\n")
    with pytest.raises(ValueError, match=r"tie_std\(P@5\).*no metric column"):
        ft.Result.load(tmp_path / "bad.csv")


def test_csv_rows_carry_tie_std_only_when_present():
    q, db, ql, dl = _hamming_case(2)
    res = ft.evaluate(q, db, ql, dl, metrics=["AP", "P@5"], spread=True)
    rows = list(csv.DictReader(io.StringIO(format_csv(res))))
    assert [r["metric"] for r in rows] == ["AP", "P@5"]
    for r in rows:
        assert float(r["value"]) == res.mean[r["metric"]] and float(r["tie_std"]) == res.mean_tie_std[r["metric"]]
    rows = list(csv.DictReader(io.StringIO(format_trec_csv(res, per_query=True))))
    per_query = [r for r in rows if r["query"] != "all"]
    assert len(per_query) == 2 * res.n_queries
    for r in per_query:
        assert float(r["tie_std"]) == res.tie_std[r["metric"]][int(r["query"])]
    plain = ft.evaluate(q, db, ql, dl, metrics=["AP"])
    assert format_csv(plain).splitlines()[0] == "metric,query,value"
    assert all(line.count(",") == 2 for line in format_trec_csv(plain, per_query=True).splitlines())
    assert "AP=" in repr(res) and f"± {res.mean_tie_std['AP']:.2g}" in repr(res)


# ---------------------------------------------------------------- the other Hamming doors


@pytest.mark.parametrize("seed", range(3))
def test_tie_stats_finalize_spread_is_evaluates_bitwise(seed):
    q, db, ql, dl = _hamming_case(seed, n_queries=15, n_db=400)
    options = dict(metrics=SPREAD_METRICS, ap_denominator=["total", "min"][seed % 2], gain=["exp2", "linear"][seed % 2],
                   empty="skip" if seed == 2 else "zero")
    if seed == 2:
        ql[3] = 7
    expected = ft.evaluate(q, db, ql, dl, spread=True, **options)
    stats = ft.tie_stats(q, db[:150], ql, dl[:150]) + ft.tie_stats(q, db[150:], ql, dl[150:])
    got = stats.finalize(spread=True, **options)
    assert list(got.tie_std) == list(expected.tie_std) == list(expected.mean)
    for name in expected.mean:
        np.testing.assert_array_equal(got.tie_std[name], expected.tie_std[name])
        np.testing.assert_array_equal(got.per_query[name], expected.per_query[name])
        assert got.mean_tie_std[name] == expected.mean_tie_std[name] or (
            math.isnan(got.mean_tie_std[name]) and math.isnan(expected.mean_tie_std[name]))
    assert not stats.finalize(["AP"]).tie_std
    with pytest.raises(ValueError, match="ties"):
        stats.finalize(["AP"], ties="optimistic", spread=True)
    with pytest.raises(ValueError, match="GMAP@20"):
        stats.finalize(["WAP@20", "GMAP@20"], spread=True)  # GMAP: no exact method (docs/ties.md)
    assert stats.finalize(["WAP@20"], spread=True).tie_std["WAP@20"].shape == (len(q),)


def test_dask_spread_is_evaluates_bitwise():
    da = pytest.importorskip("dask.array")
    import fasttie.dask as ftd

    q, db, ql, dl = _hamming_case(5, n_queries=10, n_db=350)
    options = dict(metrics=["AP", "nDCG@10", "P@5", "RR"], ap_denominator="total")
    expected = ft.evaluate(q, db, ql, dl, spread=True, **options)
    got = ftd.evaluate(q, da.from_array(db, chunks=(90, 8)), ql, da.from_array(dl, chunks=90), spread=True,
                       query_chunk=4, **options)
    for name in expected.mean:
        np.testing.assert_array_equal(got.tie_std[name], expected.tie_std[name])
        assert got.mean_tie_std[name] == expected.mean_tie_std[name]
    with pytest.raises(ValueError, match="ties"):
        ftd.evaluate(q, da.from_array(db, chunks=(90, 8)), ql, dl, ties="stable", spread=True, **options)


# ---------------------------------------------------------------- the command line


def test_demo_prints_the_tie_std_of_the_average(capsys):
    assert cli.main(["demo", "--queries", "40", "--db", "3000", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    data = ft.datasets.synthetic_hashing(40, 3000, 64, 10, flip=0.25, seed=0)
    supported = ["AP", "AP@1000", "nDCG@1000", "P@1000", "R@1000", "P(radius=12)", "P(radius=20)"]
    expected = ft.evaluate(*data, metrics=supported, spread=True)
    lines = {line.split()[0]: line.split() for line in out.split("\n\n")[1].splitlines()}  # the table
    assert lines["metric"][:3] == ["metric", "average", "tie"]  # "tie std" follows the average
    for name in supported:
        assert lines[name][1] == f"{expected.mean[name]:.6f}" and lines[name][2] == f"{expected.mean_tie_std[name]:.6f}"
    legend = " ".join(out.split("\n\n")[-1].split())
    assert "tie std = standard deviation of the average" in legend and "exact: docs/ties.md, section 9" in legend


def test_compare_command_prints_the_tie_noise_column(tmp_path, capsys):
    q, db, ql, dl = _hamming_case(6, n_queries=20, n_db=300)
    q2 = np.random.default_rng(60).choice([-1, 1], q.shape)
    paths = {}
    for name, array in {"q": q, "q2": q2, "db": db, "ql": ql, "dl": dl}.items():
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], array)
    files = {"A": tmp_path / "a.json", "B": tmp_path / "b.csv"}
    for (method, path), queries in zip(files.items(), ("q", "q2")):
        assert cli.main(["evaluate", "--queries", paths[queries], "--database", paths["db"], "--query-labels",
                         paths["ql"], "--db-labels", paths["dl"], "-m", "AP", "P@10", "--spread", "--quiet",
                         "--per-query-file", path]) == 0
    capsys.readouterr()
    results = {m: ft.Result.load(p) for m, p in files.items()}
    expected = {t["metric"]: t for t in ft.compare(results).tests}
    assert cli.main(["compare", *(f"{m}={p}" for m, p in files.items()), "--spread"]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[-1].splitlines()
    assert table[0].split()[:6] == ["metric", "a", "b", "mean(a-b)", "tie", "std"]
    for line in table[1:3]:
        cells = line.split()
        test = expected[cells[0]]
        assert cells[4] == f"{test['tie_std_diff']:.2g}"
        assert cells[5] == ("within" if test["within_tie_noise"] else "beyond")
    assert table[3].startswith("tie std: standard deviation of mean(a-b)")
    # --method evaluates with spread itself: the same numbers as from the files
    assert cli.main(["compare", "--database", paths["db"], "--query-labels", paths["ql"], "--db-labels", paths["dl"],
                     "--method", f"A={paths['q']}", "--method", f"B={paths['q2']}", "-m", "AP", "P@10", "--spread",
                     "--quiet", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for test in data["tests"]:
        assert test["tie_std_diff"] == expected[test["metric"]]["tie_std_diff"]
    # a file without tie_std under --spread: a usage error that says how to write one
    plain = tmp_path / "plain.json"
    assert cli.main(["evaluate", "--queries", paths["q"], "--database", paths["db"], "--query-labels", paths["ql"],
                     "--db-labels", paths["dl"], "-m", "AP", "--quiet", "--per-query-file", plain]) == 0
    capsys.readouterr()
    assert cli.main(["compare", f"A={files['A']}", f"P={plain}", "-m", "AP", "--spread"]) == 2
    assert "--spread" in capsys.readouterr().err
