"""tests/ mirrors fasttie/: a test file per module, named after it, in the folder of its package.

The rule (docs/development.md, "Tests"):

* ``fasttie/<package>/<module>.py`` is tested in ``tests/<package>/test_<module>.py``, and a
  module of ``fasttie/`` itself in ``tests/test_<module>.py``; a leading underscore is dropped
  on both sides (``fasttie/_kernels/_jit.py`` -> ``tests/kernels/test_jit.py``,
  ``fasttie/_device.py`` -> ``tests/test_device.py``).
* A package's ``__init__.py`` with code of its own (a function or class defined there) is tested
  in ``tests/<package>/test_<package>.py``; one that only re-exports is covered by the tests of
  the modules it re-exports. ``__main__.py`` is exempt (it calls the command's ``main``, which
  tests/cli/test_cli.py runs in a real process).
* The kernels (``fasttie/_kernels/``) are checked through the facades that drive them, against
  the oracles; a kernel module has a test file of its own where tests of that kernel alone exist.
* Every test file of a mirrored folder names a module of its package.
* ``tests/measures/`` (a measure family through every front door), ``tests/conformance/``
  (peers' own outputs) and ``tests/across/`` (oracles, properties, numerics, policies, docs,
  layers, this file) test no single module and are not mirrored.

The check is a function of two folders, so a planted drift in a copy makes it fail (below).
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parents[2]

# test folders that mirror no module (see the module docstring)
UNMIRRORED = {"measures", "conformance", "across"}


def _test_name(name: str) -> str:
    return "test_" + name.removeprefix("_") + ".py"


def _own_code(init: Path) -> bool:
    tree = ast.parse(init.read_text(encoding="utf-8"))
    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in tree.body)


def expected_tests(package: Path) -> dict[str, str]:
    """{test path under tests/: module path} of every module the rule asks a test file for."""
    wanted = {}
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(package.parent).as_posix()
        folders = [part.removeprefix("_") for part in path.relative_to(package).parent.parts]
        if path.name == "__main__.py" or (path.parent.name == "_kernels" and path.parent != package):
            continue  # exempt (kernels: optional, see the module docstring)
        if path.name == "__init__.py":
            if path.parent == package or not _own_code(path):
                continue
            name = _test_name(path.parent.name)
        else:
            name = _test_name(path.stem)
        wanted["/".join(folders + [name])] = relative
    return wanted


def mirror_problems(package: Path, tests: Path) -> list[str]:
    """What breaks the mirror: a module without its test file, and a test file of a mirrored
    folder that names no module of its package."""
    problems = []
    for test, module in expected_tests(package).items():
        if not (tests / test).is_file():
            problems.append(f"{module} has no test file tests/{test}")
    for test in sorted(tests.rglob("test_*.py")):
        parts = test.relative_to(tests).parts
        if parts[0] in UNMIRRORED or test.parent.name == "data":
            continue
        folder = package.joinpath(*parts[:-1])
        if not folder.is_dir():
            folder = package.joinpath(*[f"_{part}" for part in parts[:-1]])
        stem = test.stem.removeprefix("test_")
        named = [folder / f"{stem}.py", folder / f"_{stem}.py"]
        if len(parts) > 1 and stem == parts[-2]:
            named.append(folder / "__init__.py")
        if not any(path.is_file() for path in named):
            problems.append(f"tests/{'/'.join(parts)} names no module of {folder.relative_to(package.parent)}")
    return problems


def test_tests_mirror_the_package():
    problems = mirror_problems(ROOT / "fasttie", ROOT / "tests")
    assert not problems, "\n".join(problems)


def test_the_rule_maps_the_documented_examples():
    wanted = expected_tests(ROOT / "fasttie")
    assert wanted["trec/test_grouping.py"] == "fasttie/trec/grouping.py"
    assert wanted["hamming/test_engine.py"] == "fasttie/hamming/engine.py"
    assert wanted["test_result.py"] == "fasttie/result.py"
    assert wanted["test_device.py"] == "fasttie/_device.py"
    assert wanted["cli/test_cli.py"] == "fasttie/cli/__init__.py"  # main is defined there
    assert "metrics/test_metrics.py" not in wanted  # metrics/__init__.py only re-exports
    assert not any(test.startswith("kernels/") for test in wanted)


def test_slow_files_exist():
    """The quick tier's list names files by their path under tests/; a renamed file must not
    silently join the quick tier."""
    for name in conftest.SLOW_FILES:
        assert (ROOT / "tests" / name).is_file(), name


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    ignore = shutil.ignore_patterns("__pycache__", "data")
    shutil.copytree(ROOT / "fasttie", tmp_path / "fasttie", ignore=ignore)
    shutil.copytree(ROOT / "tests", tmp_path / "tests", ignore=ignore)
    return tmp_path / "fasttie", tmp_path / "tests"


def test_a_module_without_its_test_fails(tmp_path):
    package, tests = _copy(tmp_path)
    before = set(mirror_problems(package, tests))
    (package / "trec" / "ranker.py").write_text('"""A new module."""\n')
    (package / "_stamp.py").write_text('"""A new private module."""\n')
    (tests / "trec" / "test_readers.py").unlink()
    assert sorted(set(mirror_problems(package, tests)) - before) == [
        "fasttie/_stamp.py has no test file tests/test_stamp.py",
        "fasttie/trec/ranker.py has no test file tests/trec/test_ranker.py",
        "fasttie/trec/readers.py has no test file tests/trec/test_readers.py",
    ]
    (package / "_kernels" / "new_kernel.py").write_text('"""Kernels need no file of their own."""\n')
    (package / "compat" / "__init__.py").write_text("def own():\n    return 1\n")
    assert "fasttie/compat/__init__.py has no test file tests/compat/test_compat.py" in mirror_problems(package, tests)


def test_a_test_file_naming_no_module_fails(tmp_path):
    package, tests = _copy(tmp_path)
    before = set(mirror_problems(package, tests))
    (tests / "trec" / "test_ranker.py").write_text("")
    (tests / "kernels" / "test_nothing.py").write_text("")
    (tests / "test_helpers.py").write_text("")
    (tests / "measures" / "test_new_family.py").write_text("")  # not mirrored: allowed
    assert sorted(set(mirror_problems(package, tests)) - before) == [
        "tests/kernels/test_nothing.py names no module of fasttie/_kernels",
        "tests/test_helpers.py names no module of fasttie",
        "tests/trec/test_ranker.py names no module of fasttie/trec",
    ]
