"""The layers of the package, kept by rule: every import of a fasttie module (at the top of a
file or inside a function) points to its own layer or a lower one and closes no circle, and an
import inside a function loads a third-party package only (an optional one, loaded when it is
needed), never a fasttie module (but the GPU kernels, whose import is numba.cuda's). The layers
are written once, here; docs/development.md shows them. A planted upward import makes the rule
fail (checked below)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "fasttie"

# bottom first: a module may import its own layer or a lower one. A package listed here holds
# all of its modules, unless one of them is listed on its own.
LAYERS = [
    ["fasttie.errors", "fasttie._kernels", "fasttie._device"],
    ["fasttie.validation", "fasttie.parallel", "fasttie.metrics", "fasttie.conventions", "fasttie.options",
     "fasttie.lists.score_floor"],
    ["fasttie.codes", "fasttie.relevance", "fasttie.result", "fasttie.finalize.values", "fasttie.finalize.plan"],
    ["fasttie.hamming.engine", "fasttie.hamming.stable", "fasttie.finalize", "fasttie.hamming.spreads",
     "fasttie.hamming.options", "fasttie.lists.options"],
    ["fasttie.hamming.facade", "fasttie.hamming.gpu", "fasttie.hamming.stats", "fasttie.hamming.streamed",
     "fasttie.hamming.rescore", "fasttie.hamming", "fasttie.lists", "fasttie.diversity"],
    ["fasttie.trec", "fasttie.report", "fasttie.plots", "fasttie.cli.loaders", "fasttie.datasets"],
    ["fasttie.dask", "fasttie.warmup", "fasttie.compat", "fasttie.ir_measures", "fasttie.torch", "fasttie.torchmetrics"],
    ["fasttie.cli", "fasttie.__main__", "fasttie"],
]


# fasttie modules that may be imported inside a function: their import loads an optional package
LAZY = {"fasttie._kernels.cuda": "its kernels are compiled by numba.cuda (the optional cuda extra) when it is imported"}


def layer_of(module: str) -> int:
    """The layer of a module: the longest listed name it is or lies under."""
    best, found = -1, None
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), index
    if found is None:
        raise AssertionError(f"{module} is in no layer: add it to tests/across/test_layers.py")
    return found


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path):
    """(imported fasttie module, line, inside a function) of every import of one file; a
    ``from package import name`` counts the submodule when ``name`` is one."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(), str(path))
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = []
            for alias in node.names:
                candidate = f"{origin}.{alias.name}"
                is_module = (PACKAGE.parent / Path(*candidate.split("."))).with_suffix(".py").exists() or (
                    PACKAGE.parent / Path(*candidate.split("."))).is_dir()
                targets.append(candidate if is_module else origin)
        else:
            continue
        for target in targets:
            if target == "fasttie" or target.startswith("fasttie."):
                found.append((target, node.lineno, id(node) in inside))
            elif id(node) in inside:
                found.append((target, node.lineno, True))
    return module, found


def _graph():
    edges, problems = {}, []
    for path in sorted(PACKAGE.rglob("*.py")):
        module, found = imports(path)
        for target, line, in_function in found:
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            if not (target == "fasttie" or target.startswith("fasttie.")):
                continue  # a third-party package, at any depth
            if in_function and target not in LAZY:
                problems.append(f"{where}: {module} imports {target} inside a function (import fasttie modules at the top)")
            if target != module and layer_of(target) > layer_of(module):
                problems.append(f"{where}: {module} (layer {layer_of(module) + 1}) imports {target} "
                                f"(layer {layer_of(target) + 1}), a higher layer")
            edges.setdefault(module, set()).add(target)
    return edges, problems


def _circles(edges):
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in list(edges):
        if v not in index:
            visit(v)
    return groups


def test_every_import_points_down_and_closes_no_circle():
    edges, problems = _graph()
    # a package's own __init__ importing its modules is its face, not a circle
    faces = {m: {t for t in targets if not t.startswith(m + ".")} for m, targets in edges.items()}
    problems += [f"circle: {' -> '.join(group)}" for group in _circles(faces)]
    assert not problems, "\n".join(problems)


def test_every_module_has_a_layer():
    for path in PACKAGE.rglob("*.py"):
        layer_of(_module_name(path))


def test_a_planted_upward_import_fails(tmp_path, monkeypatch):
    """The rule catches an upward import and an import inside a function (a copy of the package
    with one planted line each)."""
    import shutil

    copy = tmp_path / "fasttie"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    errors = copy / "errors.py"
    errors.write_text(errors.read_text() + "\nfrom .cli import main  # planted\n")
    codes = copy / "codes.py"
    codes.write_text(codes.read_text() + "\n\ndef _planted():\n    from . import result\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", copy)
    _, problems = _graph()
    assert any("fasttie.errors (layer 1) imports fasttie.cli (layer 8)" in p for p in problems), problems
    assert any("imports fasttie.result inside a function" in p for p in problems), problems
    with pytest.raises(AssertionError, match="circle|higher layer|inside a function"):
        test_every_import_points_down_and_closes_no_circle()


def private_names_crossing(package: Path) -> list[str]:
    """``from X import _name`` where ``_name`` is a function, class or constant of another module
    (a private module, ``from . import _device``, is a module's own business, not a name)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = path.parent
            for _ in range(max(node.level - 1, 0)):
                base = base.parent
            source = base.joinpath(*(node.module or "").split(".")) if node.level else None
            for alias in node.names:
                name = alias.name
                if not name.startswith("_") or name.startswith("__"):
                    continue
                if source is not None and ((source / f"{name}.py").exists() or (source / name).is_dir()):
                    continue
                found.append(f"{path.relative_to(package.parent)}:{node.lineno} imports {name}")
    return found


def test_no_private_name_crosses_a_module():
    """A name shared between modules is public in the module that defines it (no leading
    underscore): what other modules use is what a reader must not change lightly."""
    found = private_names_crossing(PACKAGE)
    assert not found, "make these names public where they are defined:\n" + "\n".join(found)


def test_a_planted_private_import_fails(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_private.py").write_text("_helper = 1\n")
    (package / "user.py").write_text("from . import _private\nfrom ._private import _helper\n")
    assert private_names_crossing(package) == ["pkg/user.py:2 imports _helper"]
