"""Every public function and method of the modules mypy checks is annotated, parameters and return.

The checked modules are the ``files`` of ``[tool.mypy]`` in pyproject.toml (the public faces and
their data types; CI runs ``python -m mypy`` over them). mypy reads an unannotated function as
untyped and checks neither its body nor its callers' arguments, so a public function left
unannotated would quietly fall out of the check: this test keeps the habit. Public: a top-level
function or class whose name has no leading underscore, and in such a class every method without
one, plus ``__init__`` and ``__call__``. The check reads the source (no import), so a planted
unannotated function makes it fail (below).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def checked_files() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["tool"]["mypy"]["files"])


def _is_static(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)


def _missing(function: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    """The parameters without an annotation (``return`` for the return) of one function."""
    arguments = function.args
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                  *([arguments.vararg] if arguments.vararg else []), *([arguments.kwarg] if arguments.kwarg else [])]
    if method and not _is_static(function) and parameters:
        parameters = parameters[1:]  # self / cls
    missing = [p.arg for p in parameters if p.annotation is None]
    return missing + (["return"] if function.returns is None else [])


def unannotated(source: str, where: str = "<source>") -> list[str]:
    """``where:line name (missing parts)`` of every public function or method of ``source`` that
    lacks an annotation."""
    found = []

    def check(function, owner=""):
        missing = _missing(function, method=bool(owner))
        if missing:
            found.append(f"{where}:{function.lineno} {owner}{function.name} ({', '.join(missing)})")

    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            check(node)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        not item.name.startswith("_") or item.name in ("__init__", "__call__")):
                    check(item, node.name + ".")
    return found


def test_the_checked_modules_exist_and_are_many():
    files = checked_files()
    assert len(files) >= 20, files  # the public faces, not a token list
    assert not [f for f in files if not (ROOT / f).is_file()], "pyproject.toml [tool.mypy] files names no file"
    for face in ("fasttie/result.py", "fasttie/lists/facade.py", "fasttie/trec/evaluation.py", "fasttie/report/significance.py"):
        assert face in files


def test_every_public_function_of_the_checked_modules_is_annotated():
    found = [line for f in checked_files() for line in unannotated((ROOT / f).read_text(encoding="utf-8"), f)]
    assert not found, "annotate the parameters and return of:\n" + "\n".join(found)


def test_the_check_finds_a_planted_unannotated_function():
    source = '''
def public(x: int, y) -> int: ...
def returns_nothing_said(x: int): ...
def _private(x): ...
class Record:
    def __init__(self, n): ...
    def method(self, *, k: int = 1, **options) -> None: ...
    @staticmethod
    def make(x) -> "Record": ...
    @classmethod
    def load(cls, path: str) -> "Record": ...
    def _helper(self, x): ...
class _Hidden:
    def method(self, x): ...
'''
    assert unannotated(source) == [
        "<source>:2 public (y)", "<source>:3 returns_nothing_said (return)",
        "<source>:6 Record.__init__ (n, return)", "<source>:7 Record.method (options)", "<source>:9 Record.make (x)",
    ]
