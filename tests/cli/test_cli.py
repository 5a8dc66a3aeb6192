"""The ``fasttie`` command's ``main`` (also ``python -m fasttie``): only fasttie's input errors and
missing files or packages are one-line usage errors, a bug keeps its traceback; through a real
process, the exit codes, the stream separation and no traceback."""

import os
import subprocess
import sys

import pytest

import fasttie as ft
from fasttie import cli
from fasttie.result import Result

from cli.shared import ROOT, QRELS, RUN, METRICS, run_main, label_args, library, parse_trec


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
    # after the one-line note that it compiles on a cold compile cache. Where trec_eval 10.0 stops
    # (trec_eval.c: "result qid 'q4' not found in qrels", exit code 4), fasttie trec averages the
    # run's judged queries, as trec_eval 9 and pytrec_eval, and says so
    lines = [line for line in done.stderr.splitlines() if not line.startswith("fasttie: compiling kernels on first use")]
    assert done.returncode == 0 and lines == [
        "fasttie: 1 judged query is not in the run: left out of the means, as trec_eval 9 and pytrec_eval do "
        "(trec_eval 10.0 stops without -c; -c scores them 0, as trec_eval -c, ir_measures and ranx's make_comparable "
        "do); 1 run query has no judgments: ignored"]
    expected = ft.trec.evaluate(QRELS, RUN, ["AP"])
    values = parse_trec(done.stdout)  # trec_eval's default measures, names and runid line
    assert values[("map", "all")] == round(expected.mean["AP"], 4) and "runid                 \tall\tdemo" in done.stdout
    assert run_process("--help").returncode == 0
