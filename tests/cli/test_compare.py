"""``fasttie compare``: paired tests between saved results equal the library's, and a file that
is not a result is a one-line usage error naming it."""

import json

import numpy as np
import pytest

import fasttie as ft
from fasttie.cli.loaders import load_array
from fasttie.result import Result

from cli.shared import run_main, label_args


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
    from fasttie.report.significance import compare

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
    from fasttie.report.significance import compare

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



def test_compare_spread_files_bh_and_bootstrap_options(data, methods, capsys):
    """Result files written with --spread carry each query's tie extremes: the pairs get their
    exact range over every pair of tie orders; --correction bh, --bootstrap and --resamples
    reach the library."""
    from fasttie.report.significance import compare

    files = {}
    for name in ("clean", "noisy"):
        files[name] = data["dir"] / f"spread_{name}.json"
        argv = ["evaluate", "--queries", methods[name], *label_args(data)[2:], "-m", "AP", "P@10", "--spread",
                "--per-query-file", files[name], "--quiet"]
        assert run_main(capsys, *argv)[0] == 0
    options = ["--permutations", "200", "--correction", "bh", "--bootstrap", "percentile", "--resamples", "500"]
    code, out, _ = run_main(capsys, "compare", *(f"{n}={f}" for n, f in files.items()), *options, "--spread", "--json")
    expected = compare({n: Result.load(f) for n, f in files.items()}, n_permutations=200, correction="bh",
                       bootstrap="percentile", n_resamples=500)
    assert code == 0 and json.loads(out) == json.loads(expected.to_json())
    assert all({"diff_min", "diff_max", "tie_order_decides", "boot_low", "boot_high"} <= set(t) for t in expected.tests)
    code, out, _ = run_main(capsys, "compare", *(f"{n}={f}" for n, f in files.items()), *options, "--spread")
    assert code == 0 and "tie range of mean(a-b)" in out and "Benjamini-Hochberg" in out
    assert "bootstrap CI: paired bootstrap (percentile, 500 resamples, seed 0)" in out


@pytest.mark.parametrize("content", ['{"a": 1}', "not json", "[1, 2]", b"\xff\xfe"])
def test_compare_names_a_file_that_is_not_a_result(data, capsys, tmp_path, content):
    """A file that is not a saved Result is a one-line usage error naming that file."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out, err = run_main(capsys, "compare", f"good={data['dir'] / 'one.json'}", f"bad={bad}")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"fasttie: error: {str(bad)!r} is not a fasttie result"), err
