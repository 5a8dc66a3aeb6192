"""Tests of fasttie.cli, one file per module (test_cli.py: the package's main)."""
