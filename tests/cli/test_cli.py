"""The ``fasttie`` command: numbers printed equal the library's, machine formats round-trip,
per-query files have one row per query, every usage error is exit code 2 and one line.

Most tests run ``main([...])`` in-process (capsys); a few go through a real subprocess
(``python -m fasttie``) for the exit code, the stream separation and the absence of tracebacks.
"""

import collections
import json
import math
import os
import pathlib
import shlex
import subprocess
import sys

import numpy as np
import pytest

import fasttie as ft
from fasttie import cli
from fasttie.loaders import load_array, load_relevance, split_key
from fasttie.result import Result
from fasttie.report import convention, format_table, format_trec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QRELS = os.path.join(ROOT, "tests", "data", "qrels.txt")
RUN = os.path.join(ROOT, "tests", "data", "run.txt")
N_QUERIES, N_DB = 24, 300
METRICS = ["AP", "AP@50", "nDCG@50", "P@10", "R@20", "P(radius=20)"]


def run_main(capsys, *argv):
    """(exit code, stdout, stderr) of an in-process run."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Small hashing data saved in every input form the CLI reads, plus the arrays."""
    folder = tmp_path_factory.mktemp("cli")
    q, db, ql, dl = ft.datasets.synthetic_hashing(N_QUERIES, N_DB, 64, 4, flip=0.3, seed=3)
    arrays = {"queries": ft.unpack_codes(q), "database": ft.unpack_codes(db), "query_labels": ql, "db_labels": dl}
    paths = {}
    for name, array in arrays.items():
        paths[name] = str(folder / f"{name}.npy")
        np.save(paths[name], array)
    np.savez(folder / "all.npz", **arrays, extra=np.arange(3))
    (folder / "x.txt").write_text("1 0\n0 1\n")
    ft.evaluate(q, db, ql, dl, metrics=["AP"]).save(folder / "one.json")
    np.save(folder / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.save(folder / "queries_packed.npy", np.packbits(arrays["queries"], axis=1, bitorder="little"))
    np.save(folder / "database_packed.npy", np.packbits(arrays["database"], axis=1, bitorder="little"))
    rng = np.random.default_rng(5)
    multihot_q = (rng.random((N_QUERIES, 5)) < 0.3).astype(np.uint8)
    multihot_db = (rng.random((N_DB, 5)) < 0.3).astype(np.uint8)
    np.save(folder / "mh_q.npy", multihot_q)
    np.save(folder / "mh_db.npy", multihot_db)
    # listed relevance: 0-6 relevant ids per query with grades 1-3
    sizes = rng.integers(0, 7, N_QUERIES)
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    indices = np.concatenate([rng.choice(N_DB, s, replace=False) for s in sizes])
    grades = rng.integers(1, 4, len(indices))
    np.savez(folder / "rel.npz", indptr=indptr, indices=indices, grades=grades)
    # what the conformance review found: tanh outputs, a column of class ids, a scipy matrix
    # whose shape does not match the codes, a result file without curves
    np.save(folder / "tanh.npy", np.tanh(rng.standard_normal((N_QUERIES, 64))))
    np.save(folder / "ql_column.npy", arrays["query_labels"][:, None])
    np.save(folder / "dl_column.npy", arrays["db_labels"][:, None])
    np.savez(folder / "rel_wrong_shape.npz", indptr=indptr, indices=indices % (N_DB - 1), data=grades,
             shape=np.array([N_QUERIES, N_DB - 1]), format=np.array("csr"))
    return {
        "dir": folder, "paths": paths, "arrays": arrays, "multihot": (multihot_q, multihot_db),
        "csr": (indptr, indices, grades),
    }


def label_args(data):
    p = data["paths"]
    return ["--queries", p["queries"], "--database", p["database"], "--query-labels", p["query_labels"],
            "--db-labels", p["db_labels"]]


def library(data, metrics=METRICS, **options):
    a = data["arrays"]
    return ft.evaluate(a["queries"], a["database"], a["query_labels"], a["db_labels"], metrics=metrics, **options)


def parse_table(out):
    """{metric: (value, convention)} from the evaluate table."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("metric"))
    rows = {}
    for line in lines[start + 1:]:
        name, value, conv = line.split(None, 2)
        rows[name] = (float(value), conv)
    return rows


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


# --------------------------------------------------------------------------------------------
# usage errors: exit code 2, exactly one line on stderr, nothing on stdout
# --------------------------------------------------------------------------------------------


def usage_cases(data):
    d, p = data["dir"], data["paths"]
    labels = label_args(data)
    return {
        "no command": ([], "required"),
        "unknown command": (["evalute"], "did you mean 'evaluate'"),
        "missing queries": (["evaluate", "--database", p["database"]], "--queries"),
        "unknown option": (["evaluate", *labels, "--quite"], "did you mean '--quiet'"),
        "bad choice": (["evaluate", *labels, "--ties", "avg"], "did you mean 'average'"),
        "missing file": (["evaluate", *labels[:2], "--database", d / "nope.npy", *labels[4:]], "file not found"),
        "wrong extension": (["evaluate", *labels[:2], "--database", d / "x.txt", *labels[4:]], ".npy or .npz"),
        "pickled objects": (["evaluate", *labels[:2], "--database", d / "objects.npy", *labels[4:]], "cannot read"),
        "wrong shape": (["evaluate", *labels[:2], "--database", p["db_labels"], *labels[4:]], "2-D"),
        "wrong label count": (["evaluate", *labels[:6], "--db-labels", p["query_labels"]], "--db-labels has"),
        "unknown metric": (["evaluate", *labels, "-m", "ndgc@10"], "did you mean 'nDCG@10'"),
        "bad cutoff": (["evaluate", *labels, "-m", "P@x"], "not an integer"),
        "half the labels": (["evaluate", *labels[:6]], "--db-labels is missing"),
        "no relevance": (["evaluate", *labels[:4]], "relevance is undefined"),
        "labels and relevance": (["evaluate", *labels, "--relevance", d / "rel.npz"], "not both"),
        "dense relevance": (["evaluate", *labels[:4], "--relevance", p["db_labels"]], "indptr"),
        "npz without key": (["evaluate", "--queries", d / "all.npz:nokey", *labels[2:]], "has no array 'nokey'"),
        "packed without bits": (["evaluate", *labels, "--packed"], "--bits"),
        "packed bytes unflagged": (["evaluate", "--queries", d / "queries_packed.npy", *labels[2:]], "--packed --bits"),
        "bits differ": (["evaluate", "--queries", d / "queries_packed.npy", "--packed", "--bits", "60", *labels[2:]],
                        "bits"),
        "per-query extension": (["evaluate", *labels, "--per-query-file", d / "pq.txt"], ".json or .csv"),
        "per-query twice": (["evaluate", *labels, "--per-query-file", d / "a.json", "--per-query", d / "b.json"],
                            "give --per-query-file FILE once"),
        "plot extension": (["evaluate", *labels, "--plot", d / "p.jpg"], ".png or .pdf"),
        "plot folder": (["evaluate", *labels, "--plot", d / "no" / "p.png"], "does not exist"),
        "plot size": (["evaluate", *labels, "--plot", d / "p.png", "--plot-size", "big"], "WIDTHxHEIGHT"),
        "threads": (["evaluate", *labels, "--threads", "0"], "positive integer"),
        "json and csv": (["evaluate", *labels, "--json", "--csv"], "not allowed with"),
        "trec missing run": (["trec", QRELS, d / "nope.txt"], "RUN: file not found"),
        "trec unknown metric": (["trec", QRELS, RUN, "-m", "mapp"], "did you mean 'AP'"),
        "trec unknown diversity metric": (["trec", QRELS, RUN, "-m", "alpha_nDGC@10"], "did you mean 'alpha_nDCG@10'"),
        "trec bad run": (["trec", QRELS, p["queries"]], ""),
        "compare one file": (["compare", d / "one.json"], "at least two"),
        "compare nothing": (["compare"], "give two or more"),
        "compare both forms": (["compare", d / "a.json", "--method", f"x={p['queries']}"], "not both"),
        "compare no database": (["compare", "--method", f"x={p['queries']}", "--method", f"y={p['queries']}",
                                 *labels[4:]], "--database"),
        "compare correction": (["compare", "a.json", "b.json", "--correction", "holmes"], "did you mean 'holm'"),
        "demo digits with --db": (["demo", "--dataset", "digits", "--db", "100"], "synthetic only"),
        "cutoff past int64": (["evaluate", *labels, "-m", "P@99999999999999999999999"],
                              "'P@99999999999999999999999': cutoff 99999999999999999999999 is too large"),
        "comma-joined names": (["evaluate", *labels, "-m", "AP,P@10"], "one name per entry, e.g. ['AP', 'P@10']"),
        "real-valued codes": (["evaluate", "--queries", d / "tanh.npy", *labels[2:]], "np.where(x >= 0, 1, -1)"),
        "label column": (["evaluate", *labels[:4], "--query-labels", d / "ql_column.npy", "--db-labels",
                          d / "dl_column.npy"], "--query-labels and --db-labels have one column"),
        "relevance shape": (["evaluate", *labels[:4], "--relevance", d / "rel_wrong_shape.npz"],
                            f"--relevance: the matrix has shape ({N_QUERIES}, {N_DB - 1})"),
        "bits in CLI words": (["evaluate", "--queries", d / "queries_packed.npy", "--packed", "--bits", "60",
                               *labels[2:]], "--bits 60"),
        "compare plot without curves": (["compare", d / "one.json", d / "one.json", "--plot", d / "c.png"],
                                        "has no curves; write it with 'fasttie evaluate ... --per-query-file one.json --curves'"),
        "trec level": (["trec", QRELS, RUN, "-l", "0"], "-l/--level must be a positive number"),
        "demo bits": (["demo", "--bits", "48", "--queries", "5", "--db", "20"], "multiple of 64"),
    }


# the case names (the arguments need the data fixture's paths)
CASES = list(usage_cases({"dir": pathlib.Path("."), "paths": collections.defaultdict(str)}))


@pytest.mark.parametrize("case", CASES)
def test_usage_error_is_exit_2_and_one_line(data, capsys, case):
    argv, fragment = usage_cases(data)[case]
    code, out, err = run_main(capsys, *argv)
    assert code == 2, (case, out, err)
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("fasttie: error: ") and fragment in err, err


def test_a_bug_is_not_reported_as_a_user_mistake(data, capsys, monkeypatch):
    """Only fasttie.InputError (and missing files / packages) is a one-line usage error: a plain
    ValueError or TypeError from inside is a bug and keeps its traceback."""
    for exception in (ValueError("internal shape mix-up"), TypeError("internal type mix-up")):
        def broken(*args, exception=exception, **kwargs):
            raise exception

        monkeypatch.setattr(ft, "evaluate", broken)
        with pytest.raises(type(exception), match="internal"):
            run_main(capsys, "evaluate", *label_args(data), "-m", "AP")
    assert issubclass(ft.InputTypeError, TypeError) and issubclass(ft.InputTypeError, ft.InputError)
    assert issubclass(ft.InputError, ValueError)


def test_internal_errors_still_raise(data, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(ft, "evaluate", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["evaluate", *label_args(data), "--quiet"])


def test_missing_optional_package_is_a_usage_error(data, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        ft.datasets.digits_hashing()
    code, out, err = run_main(capsys, "demo", "--dataset", "digits")
    assert code == 2 and out == "" and err.count("\n") == 1 and "scikit-learn is needed" in err


def test_help_on_every_subcommand(capsys):
    assert run_main(capsys, "--help")[0] == 0
    for command in ("evaluate", "trec", "compare", "demo", "info"):
        code, out, err = run_main(capsys, command, "--help")
        assert code == 0 and err == "" and f"usage: fasttie {command}" in out
        if command != "info":
            assert "examples:" in out


# --------------------------------------------------------------------------------------------
# trec
# --------------------------------------------------------------------------------------------


def parse_trec(out):
    values = {}
    for line in out.strip().splitlines():
        name, qid, value = line.split("\t")
        if name.strip() != "runid":
            values[(name.strip(), qid)] = float(value)
    return values


def test_trec_equals_library_per_query(capsys):
    metrics = ["AP", "nDCG@10", "P@5", "RR", "Rprec", "R@3"]
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", *metrics, "-q", "--digits", "12")
    assert code == 0
    expected = ft.trec.evaluate(QRELS, RUN, metrics)
    values = parse_trec(out)
    assert len(values) == len(metrics) * (expected.n_queries + 1)
    for name in metrics:
        for i, qid in enumerate(expected.query_ids):
            assert values[(name, qid)] == pytest.approx(expected.per_query[name][i], abs=1e-12)
        assert values[(name, "all")] == pytest.approx(expected.mean[name], abs=1e-12)
    assert out.splitlines()[0].startswith("AP" + " " * 20 + "\tq1\t")  # trec_eval's %-22s


def test_trec_options_and_trec_eval_names(capsys):
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "map", "P.1,5", "ndcg_cut_3", "recip_rank", "-c",
                            "-l", "2", "--ties", "average", "--digits", "12")
    assert code == 0
    expected = ft.trec.evaluate(QRELS, RUN, ["AP", "P@1", "P@5", "nDCG@3", "RR"], complete=True,
                                relevance_level=2, ties="average")
    values = parse_trec(out)  # trec_eval's measures print under its names, in its order
    assert list(dict.fromkeys(k[0] for k in values)) == ["map", "recip_rank", "P_1", "P_5", "ndcg_cut_3"]
    for name, value in zip(["map", "P_1", "P_5", "ndcg_cut_3", "recip_rank"], expected.mean.values()):
        assert values[(name, "all")] == pytest.approx(value, abs=1e-12)
    assert expected.n_queries == 4  # -c: the judged query missing from the run counts


def test_trec_alpha_ndcg_with_diversity_qrels(capsys, tmp_path):
    qrels = tmp_path / "div.qrels"
    qrels.write_text("q1 1 d1 1\nq1 2 d1 1\nq1 1 d2 1\nq1 3 d3 1\nq1 1 d4 0\nq2 1 d7 0\n")
    run = tmp_path / "div.run"
    run.write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d5 3 2.0 r\nq1 Q0 d3 4 1.0 r\nq2 Q0 d7 1 1.0 r\n")
    code, out, _ = run_main(capsys, "trec", qrels, run, "-m", "alpha-nDCG@[2,5]", "alpha_nDCG(alpha=0.8)@5", "P@2",
                            "-q", "--digits", "12")
    assert code == 0
    names = ["alpha-nDCG@2", "alpha-nDCG@5", "alpha_nDCG(alpha=0.8)@5", "P@2"]  # as typed
    expected = ft.trec.evaluate(qrels, run, names)
    values = parse_trec(out)
    assert list(dict.fromkeys(k[0] for k in values)) == names
    for name in names:
        for i, qid in enumerate(expected.query_ids):
            assert values[(name, qid)] == pytest.approx(expected.per_query[name][i], abs=1e-12)
    assert values[("alpha-nDCG@5", "q1")] > 0 and values[("alpha-nDCG@5", "q2")] == 0
    code, _, err = run_main(capsys, "trec", qrels, run, "-m", "alpha_nDCG")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "needs a cutoff" in err


def test_trec_agrees_with_pytrec_eval(capsys):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "map", "P_5", "ndcg", "recip_rank", "-q", "--digits", "12")
    assert code == 0
    qrels, run = ft.trec.read_qrels(QRELS).to_dict(), ft.trec.read_run(RUN).to_dict()
    peer = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_5", "ndcg", "recip_rank"}).evaluate(run)
    values = parse_trec(out)
    for qid, measures in peer.items():  # the same keys: trec_eval's names
        for name in ("map", "P_5", "ndcg", "recip_rank"):
            assert values[(name, qid)] == pytest.approx(measures[name], abs=1e-12)


def test_trec_json_and_csv(capsys):
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "AP", "P@5", "--json", "-q")
    expected = ft.trec.evaluate(QRELS, RUN, ["AP", "P@5"])
    parsed = Result.from_json(out)
    assert code == 0 and parsed.mean == expected.mean and parsed.query_ids == expected.query_ids
    np.testing.assert_array_equal(parsed.per_query["AP"], expected.per_query["AP"])
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "AP", "--csv")
    assert out.strip().splitlines() == ["metric,query,value", f"AP,all,{expected.mean['AP']!r}"]


# --------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def methods(data):
    """Three methods' query codes on the data's database: the clean codes, noisy, random."""
    rng = np.random.default_rng(11)
    clean = data["arrays"]["queries"]
    paths = {"clean": data["paths"]["queries"]}
    for name, codes in (("noisy", clean ^ (rng.random(clean.shape) < 0.15)),
                        ("random", rng.integers(0, 2, clean.shape))):
        paths[name] = str(data["dir"] / f"{name}.npy")
        np.save(paths[name], codes.astype(np.uint8))
    return paths


def test_compare_methods_equals_library(data, methods, capsys):
    from fasttie.significance import compare

    metrics = ["AP@50", "P@10"]
    argv = ["compare", "--database", data["paths"]["database"], "--query-labels", data["paths"]["query_labels"],
            "--db-labels", data["paths"]["db_labels"], "-m", *metrics, "--permutations", "500", "--seed", "3",
            "--correction", "bonferroni", "--quiet"]
    for name, path in methods.items():
        argv += ["--method", f"{name}={path}"]
    a = data["arrays"]
    results = {name: ft.evaluate(load_array(path, option="q"), a["database"], a["query_labels"], a["db_labels"],
                                 metrics=metrics) for name, path in methods.items()}
    expected = compare(results, metrics=metrics, n_permutations=500, seed=3, correction="bonferroni")
    code, out, _ = run_main(capsys, *argv, "--json")
    assert code == 0 and json.loads(out) == json.loads(expected.to_json())
    code, out, _ = run_main(capsys, *argv)
    assert code == 0 and out.strip() == f"{expected}\n\n{expected.format_tests()}".strip()


def test_compare_result_files(data, methods, capsys):
    from fasttie.significance import compare

    files = {}
    for name, path in methods.items():
        files[name] = data["dir"] / f"cmp_{name}{'.csv' if name == 'noisy' else '.json'}"
        argv = ["evaluate", "--queries", path, *label_args(data)[2:], "-m", "AP@50", "P@10", "--per-query-file", files[name],
                "--quiet", "--curves"]
        assert run_main(capsys, *argv)[0] == 0
    code, out, _ = run_main(capsys, "compare", *(f"{n}={f}" for n, f in files.items()), "--permutations", "200", "--json")
    expected = compare({n: Result.load(f) for n, f in files.items()}, n_permutations=200)
    assert code == 0 and json.loads(out) == json.loads(expected.to_json())
    assert json.loads(out)["names"] == list(methods)
    # curves travel in the .json files (--curves), not in .csv: plotting needs them
    pytest.importorskip("matplotlib")
    plot = data["dir"] / "compare.pdf"
    code, _, err = run_main(capsys, "compare", *(str(files[n]) for n in ("clean", "random")), "--plot", plot)
    assert code == 0 and plot.read_bytes()[:5] == b"%PDF-"
    code, _, err = run_main(capsys, "compare", *files.values(), "--plot", plot)
    assert code == 2 and err.count("\n") == 1 and "curves" in err


# --------------------------------------------------------------------------------------------
# demo, digits, info
# --------------------------------------------------------------------------------------------


def test_demo_prints_every_tie_mode_and_saves_evaluable_files(tmp_path, capsys):
    folder = tmp_path / "demo data"
    code, out, _ = run_main(capsys, "demo", "--queries", 20, "--db", 500, "--seed", 2, "--save", folder)
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("metric"))
    assert header.split() == ["metric", "average", "tie", "std", *cli.TIE_MODES[1:], "tie", "range"]
    q, db, ql, dl = ft.datasets.synthetic_hashing(20, 500, seed=2)
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()}
    for ties in cli.TIE_MODES:
        column = cli.TIE_MODES.index(ties) + 1 + (ties != "average")  # the tie std follows the average
        expected = ft.evaluate(q, db, ql, dl, metrics=cli.DEMO_METRICS, ties=ties)
        for name, value in expected.mean.items():
            assert float(rows[name][column]) == pytest.approx(value, abs=5e-7)
    extremes = ft.evaluate(q, db, ql, dl, metrics=cli.DEMO_METRICS, spread="range")
    for name in cli.DEMO_METRICS:  # the true range over tie orders (AP@k's is wider than opt - pess: marked *)
        width = extremes.mean_tie_max[name] - extremes.mean_tie_min[name]
        assert float(rows[name][len(cli.TIE_MODES) + 2].rstrip("*")) == pytest.approx(width, abs=5e-7)
    command = out.strip().splitlines()[-1].strip()
    assert command.startswith("fasttie evaluate --queries ")
    argv = shlex.split(command)[1:]
    code, out, _ = run_main(capsys, *argv, "--json", "--quiet")
    assert code == 0
    assert Result.from_json(out).mean == ft.evaluate(q, db, ql, dl, metrics=cli.DEFAULT_METRICS).mean


def test_demo_digits(capsys):
    pytest.importorskip("sklearn")
    code, out, _ = run_main(capsys, "demo", "--dataset", "digits", "--queries", 50, "--bits", 16)
    assert code == 0 and "hashed by ITQ: 50 queries x 1747 database codes, 16 bits" in out
    q, db, ql, dl = ft.datasets.digits_hashing(16, 50)
    expected = ft.evaluate(q, db, ql, dl, metrics=["AP"])
    ap_line = next(line for line in out.splitlines() if line.startswith("AP "))
    assert float(ap_line.split()[1]) == pytest.approx(expected.mean["AP"], abs=5e-7)


def test_info(capsys):
    code, out, _ = run_main(capsys, "info")
    assert code == 0
    assert out.startswith(f"fasttie {ft.__version__}\n") and "compile cache:" in out and "optional:" in out


# --------------------------------------------------------------------------------------------
# report and loaders
# --------------------------------------------------------------------------------------------


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


def test_split_key():
    assert split_key("a.npz:codes") == ("a.npz", "codes")
    assert split_key("C:\\data\\a.npy") == ("C:\\data\\a.npy", None)
    assert split_key("dir:x/a.npz") == ("dir:x/a.npz", None)


# --------------------------------------------------------------------------------------------
# through a real process
# --------------------------------------------------------------------------------------------


def run_process(*argv):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "fasttie", *map(str, argv)], check=False, capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def test_process_evaluate_json_equals_library(data):
    done = run_process("evaluate", *label_args(data), "-m", *METRICS, "--json")
    assert done.returncode == 0, done.stderr
    assert Result.from_json(done.stdout).mean == library(data).mean
    assert "Traceback" not in done.stderr


def test_process_usage_errors_are_one_line():
    for argv in (["evaluate", "--queries", "missing.npy", "--database", "missing.npy", "-m", "AP"],
                 ["trec", QRELS, RUN, "-m", "ndcg@x"]):
        done = run_process(*argv)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("fasttie: error: "), done.stderr


def test_process_trec_and_help():
    done = run_process("trec", "tests/data/qrels.txt", "tests/data/run.txt", "-q")
    # stderr: the query-set note (tests/data: q4 judged, not in the run; q5 in the run, not judged),
    # after the one-line note that it compiles on a cold compile cache
    lines = [line for line in done.stderr.splitlines() if not line.startswith("fasttie: compiling kernels on first use")]
    assert done.returncode == 0 and lines == [
        "fasttie: 1 judged query is not in the run: left out of the means, as trec_eval does (-c scores them 0, as "
        "trec_eval -c, ir_measures and ranx's make_comparable do); 1 run query has no judgments: ignored"]
    expected = ft.trec.evaluate(QRELS, RUN, ["AP"])
    values = parse_trec(done.stdout)  # trec_eval's default measures, names and runid line
    assert values[("map", "all")] == round(expected.mean["AP"], 4) and "runid                 \tall\tdemo" in done.stdout
    assert run_process("--help").returncode == 0


@pytest.mark.parametrize("content", ['{"a": 1}', "not json", "[1, 2]", b"\xff\xfe"])
def test_compare_names_a_file_that_is_not_a_result(data, capsys, tmp_path, content):
    """A file that is not a saved Result is a one-line usage error naming that file."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out, err = run_main(capsys, "compare", f"good={data['dir'] / 'one.json'}", f"bad={bad}")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"fasttie: error: {str(bad)!r} is not a fasttie result"), err


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
