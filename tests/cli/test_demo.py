"""``fasttie demo``: every tie mode printed, files saved that evaluate again, the digits set."""

import shlex

import pytest

import fasttie as ft
from fasttie import cli
from fasttie.result import Result

from cli.shared import run_main


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
    spreads = ft.evaluate(q, db, ql, dl, metrics=cli.DEMO_METRICS, spread=True)
    for name in cli.DEMO_METRICS:  # the true range over tie orders (AP@k's is wider than opt - pess: marked *)
        width = spreads.mean_tie_max[name] - spreads.mean_tie_min[name]
        assert float(rows[name][len(cli.TIE_MODES) + 2].rstrip("*")) == pytest.approx(width, abs=5e-7)
        assert float(rows[name][2]) == pytest.approx(spreads.mean_tie_std[name], abs=5e-7)  # AP@1000's too
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
