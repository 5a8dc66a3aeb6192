"""``fasttie info``: versions, threads and the compile cache."""

import fasttie as ft

from cli.shared import run_main


def test_info(capsys):
    code, out, _ = run_main(capsys, "info")
    assert code == 0
    assert out.startswith(f"fasttie {ft.__version__}\n") and "compile cache:" in out and "optional:" in out
