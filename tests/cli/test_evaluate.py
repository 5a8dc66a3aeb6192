"""``fasttie evaluate``: the numbers printed equal the library's, machine formats round-trip,
per-query files have one row per query, every input form (.npy, .npz keys, packed bytes,
multi-hot, listed relevance) gives the same values, and the plot options reach the plot."""

import json

import numpy as np
import pytest

import fasttie as ft
from fasttie import cli
from fasttie.cli.loaders import load_array, load_relevance
from fasttie.result import Result

from cli.shared import N_QUERIES, N_DB, METRICS, run_main, label_args, library, parse_table


# --------------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------------


def test_evaluate_table_equals_library(data, capsys):
    code, out, err = run_main(capsys, "evaluate", *label_args(data), "-m", *METRICS[:3], "-m", *METRICS[3:],
                              "--digits", "12", "--quiet")
    assert code == 0 and err == ""
    expected = library(data)
    rows = parse_table(out)
    assert list(rows) == METRICS
    for name in METRICS:
        assert rows[name][0] == pytest.approx(expected.mean[name], abs=1e-12)
    assert f"{N_QUERIES} queries x {N_DB} database codes, 64 bits" in out
    assert rows["AP@50"][1].startswith("denominator = retrieved; ties = average; empty = zero")
    assert "gain = exp2" in rows["nDCG@50"][1]
    assert f"({expected.n_empty} of {N_QUERIES} queries without relevant items)" in rows["AP"][1]


def test_evaluate_conventions_reach_the_library(data, capsys):
    options = {"ties": "pessimistic", "ap_denominator": "total", "gain": "linear", "empty": "skip"}
    argv = ["evaluate", *label_args(data), "-m", *METRICS, "--quiet", "--digits", "12"]
    for key, value in options.items():
        argv += [f"--{key.replace('_', '-')}", value]
    code, out, _ = run_main(capsys, *argv)
    assert code == 0
    expected = library(data, **options)
    rows = parse_table(out)
    for name in METRICS:
        assert rows[name][0] == pytest.approx(expected.mean[name], abs=1e-12)
    assert rows["AP@50"][1].startswith("denominator = total (R); ties = pessimistic; empty = skip")


def test_default_metrics_and_protocol(data, capsys):
    code, out, _ = run_main(capsys, "evaluate", *label_args(data), "--quiet")
    assert code == 0 and list(parse_table(out)) == list(cli.DEFAULT_METRICS)
    code, out, _ = run_main(capsys, "evaluate", *label_args(data), "--quiet", "--protocol", "imagenet100", "-m", "P@5")
    assert code == 0 and list(parse_table(out)) == ["AP@1000", "P@5"]
    assert "protocol imagenet100" in out


def test_json_round_trips(data, capsys):
    code, out, _ = run_main(capsys, "evaluate", *label_args(data), "-m", *METRICS, "--json", "--quiet")
    assert code == 0
    parsed = Result.from_json(out)
    expected = library(data)
    assert parsed.mean == expected.mean  # exact: JSON floats round-trip
    assert parsed.n_queries == N_QUERIES and parsed.n_empty == expected.n_empty
    assert parsed.settings == expected.settings
    assert json.loads(out) == expected.to_dict(per_query=False)


def test_csv_prints_exact_means(data, capsys):
    code, out, _ = run_main(capsys, "evaluate", *label_args(data), "-m", *METRICS, "--csv", "--quiet")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "metric,query,value" and len(lines) == len(METRICS) + 1  # the columns of trec --csv
    expected = library(data)
    for line in lines[1:]:
        name, query, value = line.rsplit(",", 2)
        assert query == "all" and float(value) == expected.mean[name]


@pytest.mark.parametrize("ext", [".csv", ".json"])
def test_per_query_file_has_one_row_per_query(data, capsys, ext):
    path = data["dir"] / f"per_query{ext}"
    code, _, err = run_main(capsys, "evaluate", *label_args(data), "-m", *METRICS, "--per-query-file", path)
    assert code == 0 and f"wrote {path}" in err
    if ext == ".csv":
        lines = path.read_text().strip().splitlines()
        assert lines[0] == "query," + ",".join(METRICS) and len(lines) == N_QUERIES + 1
    loaded = Result.load(path)
    expected = library(data)
    assert loaded.n_queries == N_QUERIES
    for name in METRICS:
        np.testing.assert_array_equal(loaded.per_query[name], expected.per_query[name])


def test_npz_keys_packed_bytes_and_npy_agree(data, capsys):
    base = run_main(capsys, "evaluate", *label_args(data), "-m", *METRICS, "--json", "--quiet")[1]
    npz = str(data["dir"] / "all.npz")
    by_default_key = run_main(capsys, "evaluate", "--queries", npz, "--database", npz, "--query-labels", npz,
                              "--db-labels", npz, "-m", *METRICS, "--json", "--quiet")
    by_key = run_main(capsys, "evaluate", "--queries", f"{npz}:queries", "--database", f"{npz}:database",
                      "--query-labels", f"{npz}:query_labels", "--db-labels", f"{npz}:db_labels", "-m", *METRICS,
                      "--json", "--quiet")
    p = data["paths"]
    packed = run_main(capsys, "evaluate", "--queries", data["dir"] / "queries_packed.npy", "--database",
                      data["dir"] / "database_packed.npy", "--packed", "--bits", "64", "--bitorder", "little",
                      "--query-labels", p["query_labels"], "--db-labels", p["db_labels"], "-m", *METRICS, "--json",
                      "--quiet")
    for code, out, _ in (by_default_key, by_key, packed):
        assert code == 0 and json.loads(out) == json.loads(base)


def test_npy_inputs_are_memory_mapped(data):
    array = load_array(data["paths"]["database"], option="--database")
    assert isinstance(array, np.memmap) and not array.flags.writeable


def test_multihot_labels(data, capsys):
    mh_q, mh_db = data["multihot"]
    metrics = ["nDCG@20", "ACG@20", "WAP@20", "AP"]
    code, out, _ = run_main(capsys, "evaluate", "--queries", data["paths"]["queries"], "--database",
                            data["paths"]["database"], "--query-labels", data["dir"] / "mh_q.npy", "--db-labels",
                            data["dir"] / "mh_db.npy", "-m", *metrics, "--json", "--quiet")
    a = data["arrays"]
    expected = ft.evaluate(a["queries"], a["database"], mh_q, mh_db, metrics=metrics)
    assert code == 0 and Result.from_json(out).mean == expected.mean
    assert expected.settings["relevance"] == "multihot"


def test_listed_relevance_npz_and_scipy_sparse(data, capsys):
    scipy_sparse = pytest.importorskip("scipy.sparse")
    indptr, indices, grades = data["csr"]
    a = data["arrays"]
    metrics = ["nDCG@20", "AP", "R@50"]
    expected = ft.evaluate(a["queries"], a["database"], relevance=(indptr, indices, grades), metrics=metrics)
    matrix = scipy_sparse.csr_matrix((grades, indices, indptr), shape=(N_QUERIES, N_DB))
    sparse_path = data["dir"] / "rel_scipy.npz"
    scipy_sparse.save_npz(sparse_path, matrix)
    for path in (data["dir"] / "rel.npz", sparse_path):
        code, out, err = run_main(capsys, "evaluate", "--queries", data["paths"]["queries"], "--database",
                                  data["paths"]["database"], "--relevance", path, "-m", *metrics, "--json", "--quiet")
        assert (code, err) == (0, "")
        assert Result.from_json(out).mean == expected.mean
    scipy_sparse.save_npz(data["dir"] / "rel_coo.npz", matrix.tocoo())
    with pytest.raises(ValueError, match="tocsr"):
        load_relevance(str(data["dir"] / "rel_coo.npz"))


def test_progress_follows_quiet(data, capsys, monkeypatch):
    seen = []
    real = ft.evaluate

    def spy(*args, **kwargs):
        seen.append(kwargs.get("progress"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ft, "evaluate", spy)
    assert run_main(capsys, "evaluate", *label_args(data), "-m", "AP")[0] == 0
    assert run_main(capsys, "evaluate", *label_args(data), "-m", "AP", "--quiet")[0] == 0
    assert seen == ["auto", False]


def test_plot_file_is_a_png_of_the_requested_size(data, capsys):
    pytest.importorskip("matplotlib")
    image = pytest.importorskip("matplotlib.image")
    path = data["dir"] / "curves.png"
    code, _, err = run_main(capsys, "evaluate", *label_args(data), "-m", "AP", "--plot", path, "--plot-size", "640x320",
                            "--label", "synthetic")
    assert code == 0 and f"wrote {path}" in err
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert image.imread(path).shape[:2] == (320, 640)
    # the labels: the same call in-process, read back from the Figure
    from fasttie.plots import plot_curves

    figure = plot_curves({"synthetic": library(data, ["AP"], curves=True)}, size=(640, 320))
    labels = {(ax.get_xlabel(), ax.get_ylabel()) for ax in figure.axes}
    assert {("Recall", "Precision"), ("N (retrieved)", "P@N"), ("N (retrieved)", "R@N")} <= labels
    legend_texts = {t.get_text() for ax in figure.axes if ax.get_legend() for t in ax.get_legend().get_texts()}
    legend_texts |= {t.get_text() for leg in figure.legends for t in leg.get_texts()}
    assert "synthetic" in legend_texts



def test_old_per_query_spelling_still_writes_the_file_with_a_note(data, capsys):
    path = data["dir"] / "old_spelling.json"
    code, _, err = run_main(capsys, "evaluate", *label_args(data), "-m", "AP", "--per-query", path)
    assert code == 0 and "--per-query FILE is now --per-query-file FILE" in err and f"wrote {path}" in err
    assert Result.load(path).n_queries == N_QUERIES


@pytest.mark.parametrize("radius_mean", ["all", "retrieving"])
def test_plot_radius_mean_picks_the_precision_curve(data, capsys, monkeypatch, radius_mean):
    import fasttie.cli.common as common

    pytest.importorskip("matplotlib")  # the command checks for it before evaluating
    drawn = {}
    monkeypatch.setattr(common, "plot_curves", lambda results, path, **options: drawn.update(options, results=results))
    code, _, _ = run_main(capsys, "evaluate", *label_args(data), "-m", "AP", "--plot", data["dir"] / "c.png",
                          "--radius-mean", radius_mean, "--label", "ITQ", "--quiet")
    assert code == 0 and drawn["radius_mean"] == radius_mean and list(drawn["results"]) == ["ITQ"]
