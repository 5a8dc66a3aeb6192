"""The fixtures of the command's tests (tests/cli/shared.py)."""

from cli.shared import data  # noqa: F401  (a module-scoped fixture, shared by the files here)
