"""The argument parser: help and examples on every subcommand."""

from cli.shared import run_main


def test_help_on_every_subcommand(capsys):
    assert run_main(capsys, "--help")[0] == 0
    for command in ("evaluate", "trec", "compare", "demo", "info"):
        code, out, err = run_main(capsys, command, "--help")
        assert code == 0 and err == "" and f"usage: fasttie {command}" in out
        if command != "info":
            assert "examples:" in out
