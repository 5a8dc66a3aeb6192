"""Every example of README.md and of docs/ runs as pasted and prints what the page shows; the
pages stay inside the repository, name no path of the machine they were written on, carry no
commit hashes or dates, and docs/development.md's layout matches the tree.

Each page's fenced blocks are read in order:

* ```python blocks run in a fresh interpreter (this one, ``sys.executable``), ```bash blocks
  with ``bash -e -o pipefail``; ``.venv/bin/python`` becomes ``sys.executable`` and
  ``.venv/bin/fasttie`` becomes ``sys.executable -m fasttie``. The blocks of a page share one
  temporary working directory, in page order, like a reader at the repository root: files a
  block writes (``demo --save demo_data``, ``div.qrels``) are there for the blocks after it,
  and ``tests/data`` is linked in. Asking for one block runs the blocks before it first; each
  page starts in a directory of its own.
* The expected output of a block is the plain ``` block right after it (only blank lines
  between), or else, in a Python block, the comment lines right after a ``print(...)`` line or
  the comment at the end of a ``print(...)`` line that has none below it.
* Outputs are compared token by token, whitespace aside: numbers to the precision the page
  prints, ``...`` matches anything, and the time in "... in 1.21 s" any number. An output that
  starts with ``fasttie: error:`` is the block's stderr, and the command must exit with 2.
* ```text blocks are illustrations and do not run; any other block fails
  ``test_every_block_is_classified``.

Not run: the two set-up commands (:data:`SETUP`), the benchmark commands (:data:`BENCHMARK`) and
the test-suite commands (:data:`SUITE`).
Blocks that need an optional package (:data:`OPTIONAL`) skip when it is missing.
"""

from __future__ import annotations

import difflib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

import fasttie

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
TIMEOUT = 300  # seconds per block; a cold numba cache makes the first calls compile

# Set-up commands: not run (this test already runs inside such an environment). Each maps to
# why, and to the part of it that does run here (its output is checked), or None.
SETUP = {
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/fasttie demo": (
        "creates a virtual environment and installs fasttie into it; this test runs in one "
        "already. The `fasttie demo` it ends with runs here and its output is checked",
        ".venv/bin/fasttie demo",
    ),
    'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q': (
        "creates a virtual environment, installs the test extra and runs the whole test suite, "
        "which includes this file: .ci/run does exactly that in CI",
        None,
    ),
}
# Benchmark commands: every line runs a scripts/bench_*.py, the pass forced by FASTTIE_KERNEL or
# not. They take minutes on an idle machine and need the bench extra (faiss); the pages' tables
# are their results. The scripts and the options the pages name are checked to exist.
# the repository's benchmarks, and the C reference kernel beside the checkout (../shared)
BENCHMARK = re.compile(
    r"^(?:FASTTIE_KERNEL=\w+ )?\.venv/bin/python (scripts/bench_\w+\.py)\b(.*)$")
BENCHMARK_REASON = "benchmark commands: minutes of runtime on an idle machine and the bench extra (faiss)"
# Test-suite commands: they run this file too; the markers they select must be registered
SUITE = re.compile(r"^\.venv/bin/python -m pytest\b(.*?)(?:\s+#.*)?$")
SUITE_REASON = "runs the test suite, which includes this file (CI runs it)"
# Optional packages: a block that matches the pattern needs the module.
OPTIONAL = [
    (re.compile(r"\blightgbm\b"), "lightgbm", "pip install lightgbm"),
    (re.compile(r"--dataset digits|digits_hashing"), "sklearn", "pip install scikit-learn"),
    (re.compile(r"--plot\b|plot_curves"), "matplotlib", "pip install 'fasttie[plot]'"),
    (re.compile(r"\bcompare\b"), "scipy", "pip install 'fasttie[stats]'"),
    (re.compile(r"to_frame"), "pandas", "pip install 'fasttie[frame]'"),
    (re.compile(r"^import pytrec_eval$", re.M), "pytrec_eval", "pip install pytrec-eval-terrier"),
    (re.compile(r"^import ranx$", re.M), "ranx", "pip install ranx"),
    (re.compile(r"^import ir_measures$", re.M), "ir_measures", "pip install ir-measures"),
    (re.compile(r"\btorchmetrics\b"), "torchmetrics", "pip install 'fasttie[torch]'"),
    (re.compile(r"^import torch|fasttie\.torch", re.M), "torch", "pip install 'fasttie[torch]'"),
]
# Outputs that describe the machine: only the label of each line (its first word) is compared.
MACHINE_SPECIFIC = {".venv/bin/fasttie info": "versions, CPU, cache folder and installed packages vary"}


@dataclass
class Block:
    document: Path
    index: int
    lang: str
    code: str
    start: int  # line of the opening fence (1-based)
    end: int  # line of the closing fence
    heading: str
    output: str | None = None  # the plain block right after it

    @property
    def name(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-")[:30]
        return f"{self.document.stem}-{self.index:02d}-L{self.start}-{self.lang}-{slug}"

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)} line {self.start}"


def parse_readme(text: str, document: Path = README) -> list[Block]:
    """Fenced blocks of a page in order, each runnable one with the output block after it."""
    lines = text.splitlines()
    blocks: list[Block] = []
    heading = "top"
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("```"):
            lang = line[3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            assert j < len(lines), f"{document.relative_to(ROOT)} line {i + 1}: unclosed code block"
            blocks.append(Block(document, len(blocks), lang, "\n".join(lines[i + 1 : j]) + "\n", i + 1, j + 1, heading))
            i = j
        i += 1
    for before, after in zip(blocks, blocks[1:]):
        between = lines[before.end : after.start - 1]
        if before.lang in ("python", "bash") and after.lang == "" and not any(s.strip() for s in between):
            before.output = after.code
    return blocks


BLOCKS = [b for document in DOCUMENTS for b in parse_readme(document.read_text(encoding="utf-8"), document)]
RUNNABLE = [b for b in BLOCKS if b.lang in ("python", "bash")]


# ---------------------------------------------------------------------------------------------
# output comparison

_TOKEN = re.compile(
    r"(?P<wild>\.\.\.)|(?P<anynum><NUM>)"
    r"|(?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)"
    r"|(?P<word>[A-Za-z_]+)|(?P<other>\S)"
)
_TIMING = re.compile(r"(?<=\bin )\d+(?:\.\d+)?(?= s\b)")


def tokens(text: str, *, expected: bool) -> list[tuple[str, str]]:
    if expected:
        text = _TIMING.sub("<NUM>", text)
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if not expected and kind in ("wild", "anynum"):
            kind = "other"
        out.append((kind, m.group()))
    return out


def _precision(token: str) -> float:
    """Half a unit in the last printed digit of a number token."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def _same(expected: tuple[str, str], actual: tuple[str, str]) -> bool:
    (kind, text), (actual_kind, actual_text) = expected, actual
    if kind == "anynum":
        return actual_kind == "num"
    if text == actual_text:
        return True
    if kind != "num" or actual_kind != "num":
        return False
    value, got = float(text), float(actual_text)
    slack = 1e-12 * max(1.0, abs(value))
    if text.endswith("."):  # numpy prints an exact integer value as "1."
        return abs(got - value) <= slack
    return abs(got - value) <= _precision(text) * (1 + 1e-9) + slack


def _find(segment, actual, start):
    for at in range(start, len(actual) - len(segment) + 1):
        if all(_same(e, a) for e, a in zip(segment, actual[at : at + len(segment)])):
            return at
    return -1


def matches(expected_text: str, actual_text: str) -> bool:
    """Token match; ``...`` matches any run of tokens (glob: leftmost match of each segment)."""
    expected = tokens(expected_text, expected=True)
    actual = tokens(actual_text, expected=False)
    segments: list[list] = [[]]
    for token in expected:
        if token[0] == "wild":
            segments.append([])
        else:
            segments[-1].append(token)
    if len(segments) == 1:
        return len(expected) == len(actual) and all(map(_same, expected, actual))
    first, *middle, last = segments
    if len(first) + len(last) > len(actual):
        return False
    if not all(map(_same, first, actual)) or not all(map(_same, last, actual[len(actual) - len(last) :])):
        return False
    at, stop = len(first), len(actual) - len(last)
    for segment in middle:
        found = _find(segment, actual[:stop], at)
        if found < 0:
            return False
        at = found + len(segment)
    return True


def labels_match(expected_text: str, actual_text: str) -> bool:
    """Same non-empty lines, each starting with the same word."""
    first = [[line.split()[0] for line in text.splitlines() if line.strip()] for text in (expected_text, actual_text)]
    return first[0] == first[1]


def expected_from_comments(code: str) -> str | None:
    """The output a Python block shows in comments: the comment lines right after a print(...)
    line, else the comment at the end of that line."""
    comments: dict[int, tuple[str, bool]] = {}  # line -> (text, whole line)
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            whole = tok.line[: tok.start[1]].strip() == ""
            comments[tok.start[0]] = (tok.string[1:], whole)
    lines = code.splitlines()
    shown = []
    for number, line in enumerate(lines, start=1):
        if not re.match(r"\s*print\(", line):
            continue
        below = []
        follow = number + 1
        while follow in comments and comments[follow][1]:
            below.append(comments[follow][0])
            follow += 1
        if below:
            shown.extend(below)
        elif number in comments and not comments[number][1]:
            shown.append(comments[number][0])
    return "\n".join(shown) if shown else None


# ---------------------------------------------------------------------------------------------
# running the blocks


def skip_reason(block: Block) -> str | None:
    code = block.code.strip()
    if code in SETUP and SETUP[code][1] is None:
        return SETUP[code][0]
    lines = [line for line in code.splitlines() if line.strip()]
    if block.lang == "bash" and lines and all(BENCHMARK.match(line) for line in lines):
        return BENCHMARK_REASON
    if block.lang == "bash" and lines and all(SUITE.match(line) for line in lines):
        return SUITE_REASON
    return None


def missing_package(block: Block) -> str | None:
    for pattern, module, install in OPTIONAL:
        if pattern.search(block.code) and importlib.util.find_spec(module) is None:
            return f"needs {module} ({install})"
    return None


def shell_code(code: str) -> str:
    """``.venv/bin/X`` of the README -> this interpreter's environment."""
    python = shlex.quote(sys.executable)
    programs = {"python": python, "fasttie": f"{python} -m fasttie", "pip": f"{python} -m pip"}
    return re.sub(r"\.venv/bin/(python|fasttie|pip)\b", lambda m: programs[m.group(1)], code)


class Runner:
    """Runs the blocks of one page in order in one working directory, each at most once."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        (workdir / "tests").mkdir()
        (workdir / "tests" / "data").symlink_to(ROOT / "tests" / "data", target_is_directory=True)
        self.env = dict(os.environ)
        self.env.pop("FASTTIE_TRACEBACK", None)
        self.env["MPLBACKEND"] = "Agg"
        # the subprocesses import the fasttie this test imports
        package_parent = str(Path(fasttie.__file__).resolve().parent.parent)
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, self.env.get("PYTHONPATH")]))
        self.results: dict[int, subprocess.CompletedProcess] = {}

    def command(self, block: Block) -> list[str]:
        code = block.code.strip()
        if code in SETUP:
            return ["bash", "-eo", "pipefail", "-c", shell_code(SETUP[code][1])]
        if block.lang == "bash":
            return ["bash", "-eo", "pipefail", "-c", shell_code(block.code)]
        script = self.workdir / f"_docs_block_{block.index:02d}.py"
        script.write_text(block.code, encoding="utf-8")
        return [sys.executable, script.name]

    def run(self, block: Block) -> subprocess.CompletedProcess:
        for earlier in RUNNABLE:
            if earlier.document != block.document:
                continue
            if earlier.index >= block.index:
                break
            if earlier.index not in self.results and not skip_reason(earlier) and not missing_package(earlier):
                self._run(earlier)
        if block.index not in self.results:
            self._run(block)
        return self.results[block.index]

    def _run(self, block: Block) -> None:
        self.results[block.index] = subprocess.run(
            self.command(block), cwd=self.workdir, env=self.env, capture_output=True, text=True, timeout=TIMEOUT
        )


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    return {document: Runner(tmp_path_factory.mktemp(document.stem)) for document in DOCUMENTS}


def _report(block: Block, result, expected: str, actual: str, why: str) -> str:
    diff = "\n".join(difflib.unified_diff(expected.splitlines(), actual.splitlines(), "page", "actual", lineterm=""))
    return (
        f"{block.where} ({block.heading}): {why}\n--- diff (page vs actual)\n{diff}\n"
        f"--- stderr\n{result.stderr[-3000:]}"
    )


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.name)
def test_block(block, runners):
    reason = skip_reason(block)
    if reason == BENCHMARK_REASON:
        for line in block.code.strip().splitlines():
            script, options = BENCHMARK.match(line).groups()
            assert (ROOT / script).exists(), f"{script} is not in the repository ({block.where})"
            source = (ROOT / script).read_text(encoding="utf-8")
            for option in re.findall(r"--[a-z][a-z-]*", options):
                assert f'"{option}"' in source, f"{script} has no option {option} ({block.where})"
    if reason == SUITE_REASON:  # a marker expression names registered markers only
        registered = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
        for line in block.code.strip().splitlines():
            for expression in re.findall(r"-m\s+[\"']([^\"']+)[\"']", SUITE.match(line).group(1)):
                for marker in set(re.findall(r"\w+", expression)) - {"not", "and", "or"}:
                    assert f'"{marker}:' in registered, f"marker {marker!r} is not registered ({block.where})"
    if reason:
        pytest.skip(reason)
    if missing := missing_package(block):
        pytest.skip(missing)
    result = runners[block.document].run(block)
    expected = block.output
    if expected is None and block.lang == "python":
        expected = expected_from_comments(block.code)
    if expected is not None and expected.startswith("fasttie: error:"):
        assert result.returncode == 2, _report(block, result, expected, result.stderr, f"exit status {result.returncode}, not 2")
        actual = result.stderr
    else:
        assert result.returncode == 0, _report(block, result, expected or "", result.stdout, f"exit status {result.returncode}")
        actual = result.stdout
    if expected is None:
        assert not actual.strip(), _report(block, result, "", actual, "prints output that the page does not show")
        return
    compare = labels_match if block.code.strip() in MACHINE_SPECIFIC else matches
    assert compare(expected, actual), _report(block, result, expected, actual, "output differs from the page")


def test_every_block_is_classified():
    """Each block runs, is the output of the block before it, or is a ```text illustration."""
    outputs = {b.index + 1 for b in BLOCKS if b.output is not None}
    for block in BLOCKS:
        where = block.where
        if block.lang in ("python", "bash"):
            code = block.code.strip()
            if "-m venv" in code or "pip install" in code:
                assert code in SETUP, f"{where}: a set-up command that is not in SETUP"
            continue
        assert block.lang == "text" or (block.lang == "" and block.index in outputs), (
            f"{where}: a ```{block.lang} block that neither runs nor follows a block as its output; "
            "mark illustrations ```text"
        )
    shown = {b.code.strip() for b in RUNNABLE}
    for command in [*SETUP, *MACHINE_SPECIFIC]:
        assert command in shown, f"no page has the block {command!r} any more: update this test"


def test_commands_run_from_the_repository_alone():
    """A command a page asks to run names no file outside the repository (tools of a development
    workspace are ```text illustrations, said to be outside)."""
    for block in RUNNABLE:
        assert "../" not in block.code, f"{block.where}: a command reaches outside the repository"


def _anchors(document: Path) -> set:
    """GitHub's anchors of a page's headings."""
    out, in_code = set(), False
    for line in document.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.name)
def test_links_stay_inside_the_repository(document):
    text = document.read_text(encoding="utf-8")
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path = (document.parent / target).resolve() if target else document
        assert path.exists(), f"{document.name} links to {target}, which is not in the repository"
        assert ROOT in path.parents or path == ROOT, f"{document.name} links outside the repository: {target}"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{document.name} links to {target}#{anchor}: no such heading"
    if document == README:  # the front door points inside the repository only (the performance page names
        assert "shared/" not in text, "README points outside the repository"  # the workspace's reference kernel)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.name)
def test_pages_describe_what_is(document):
    """No path of the machine a page was written on, no commit hashes, no dates of experiments:
    figures name the command and the CPU; history belongs in commit messages."""
    text = document.read_text(encoding="utf-8")
    machine = re.findall(r"(?<![\w.])/(?:work|root|home|tmp|Users)/\S*", text)
    assert not machine, f"{document.name}: paths of a machine: {machine[:3]}"
    hashes = [h for h in re.findall(r"(?<![\w-])[0-9a-f]{7,12}(?![\w-])", text)
              if re.search(r"[a-f]", h) and re.search(r"[0-9]", h)]
    assert not hashes, f"{document.name}: commit hashes {hashes[:5]}"
    dates = re.findall(r"\b20\d\d-\d\d-\d\d\b", text)
    assert not dates, f"{document.name}: dates {dates[:5]}"


def test_layout_matches_the_tree():
    """docs/development.md's layout names every module and package of fasttie/, and only
    paths that exist."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    block = text.split("```text", 1)[1].split("```", 1)[0]
    listed = set(re.findall(r"^(fasttie/\S+)", block, re.M))
    for path in listed:
        assert (ROOT / path).exists(), f"docs/development.md lists {path}, which does not exist"
    package = ROOT / "fasttie"
    wanted = {f"fasttie/{p.name}" + ("/" if p.is_dir() else "") for p in package.iterdir()
              if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    missing = sorted(wanted - listed)
    assert not missing, f"docs/development.md's layout misses {missing}"


def test_layers_are_the_tested_ones():
    """The layers docs/development.md lists are tests/across/test_layers.py's."""
    from across import test_layers

    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\d\. (.*(?:\n   .*)*)", section, re.M)
    assert len(listed) == len(test_layers.LAYERS)
    for line, layer in zip(listed, test_layers.LAYERS):
        names = set(re.findall(r"`([^`]+)`", line))
        expected = {m.removeprefix("fasttie.") for m in layer if m != "fasttie"}
        assert expected <= names, (line, expected - names)
