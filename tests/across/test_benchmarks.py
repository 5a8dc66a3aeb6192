"""The asv benchmarks (``asv_bench/benchmarks/``) are a package of their own: every module imports
with ordinary imports, without loading anything from ``scripts/`` or putting it on ``sys.path``,
makes no data at import, and under ``FASTTIE_ASV_QUICK=1`` (the quick run of ``.ci/run``) asks
for small sizes only.

The roofline script (``scripts/bench_roofline.py``) runs end to end in its quick mode, and what
it reads from the kernels' assembly is checked: popcounts in every width's hot loops, one 64-bit
popcount per word of a code and pair (the division by the pairs an iteration handles), and
fractions of the ceiling in (0, 1.5).

The package is imported in a fresh interpreter, from ``asv_bench/`` as asv does, so this
process's ``sys.path`` and ``sys.modules`` stay as they are.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ASV = ROOT / "asv_bench"

# the largest size a benchmark may ask for in the quick mode (database codes, queries, documents)
QUICK_LIMIT = 2_000

_PROBE = r"""
import importlib, inspect, json, pkgutil, sys
sys.path.insert(0, {asv!r})
sys.path.append({root!r})  # the checkout's fasttie where none is installed
import benchmarks

def ints(value):
    if isinstance(value, int) and not isinstance(value, bool):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from ints(item)

report = {{"modules": [], "sizes": []}}
for info in pkgutil.walk_packages(benchmarks.__path__, "benchmarks."):
    module = importlib.import_module(info.name)
    report["modules"].append(info.name)
    owners = [(info.name, module)] + [
        (f"{{info.name}}.{{name}}", value) for name, value in vars(module).items()
        if inspect.isclass(value) and value.__module__ == info.name]
    for owner, value in owners:  # params and n_... / N_... sizes of modules and classes
        for name, attribute in vars(value).items():
            if name == "params" or name.lower().startswith("n_"):
                report["sizes"] += [[f"{{owner}}.{{name}}", size] for size in ints(attribute)]
report["sys_path"] = sys.path
report["files"] = sorted({{getattr(m, "__file__", None) or "" for m in list(sys.modules.values())}})
report["arrays"] = [name for name, m in sys.modules.items() if name.startswith("benchmarks")
                    for value in vars(m).values() if type(value).__name__ == "ndarray"]
print(json.dumps(report))
"""


def _import_all(quick: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "FASTTIE_ASV_QUICK"}
    if quick:
        env["FASTTIE_ASV_QUICK"] = "1"
    code = _PROBE.format(asv=str(ASV), root=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], cwd=ASV, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_every_benchmark_module_imports_without_scripts_and_small_in_quick_mode():
    report = _import_all(quick=True)
    modules = set(report["modules"])
    expected = {f"benchmarks.{p.stem}" for p in (ASV / "benchmarks").glob("bench_*.py")}
    assert expected and expected <= modules, sorted(expected - modules)
    assert {"benchmarks.data.synthetic", "benchmarks.data.baselines"} <= modules
    scripts = ROOT / "scripts"
    assert not [p for p in report["sys_path"] if Path(p or ".").resolve() == scripts], report["sys_path"]
    assert not [f for f in report["files"] if f and Path(f).resolve().is_relative_to(scripts)]
    assert not report["arrays"], "data made at import: " + ", ".join(report["arrays"])
    large = [(name, size) for name, size in report["sizes"] if size > QUICK_LIMIT]
    assert not large, f"FASTTIE_ASV_QUICK=1 still asks for sizes over {QUICK_LIMIT:,}: {large}"


def test_without_the_quick_mode_the_sizes_are_the_full_ones():
    """The check above can fail: the same probe sees the full sizes when the mode is off."""
    sizes = dict(map(tuple, _import_all(quick=False)["sizes"]))
    assert sizes["benchmarks.bench_evaluate.EvaluateThreads.n_db"] == 1_000_000
    assert max(sizes.values()) > QUICK_LIMIT


def test_no_benchmark_loads_a_file_by_path():
    """The package imports its modules by name (``from .data.ranking import ...``), never a file
    by path (importlib's spec_from_file_location), so asv and the scripts see the same modules."""
    for path in (ASV / "benchmarks").rglob("*.py"):
        assert "spec_from_file_location" not in path.read_text(encoding="utf-8"), path


def _roofline_rows(output: str) -> list[dict]:
    lines = [line for line in output.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:  # past the header and its rule
        rows.append(dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))))
    return rows


def _value_and_bracket(cell: str) -> tuple[float, float]:
    """"4.88 (0.50)" -> (4.88, 0.5)."""
    value, bracket = re.fullmatch(r"([0-9.]+) \(([0-9.]+)\)", cell).groups()
    return float(value), float(bracket)


def test_roofline_quick_mode_reads_the_hot_loops_and_prints_fractions():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_roofline.py"), "--quick", "--bits", "64,128",
                           "--threads", "1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _roofline_rows(done.stdout)
    assert [int(row["bits"]) for row in rows] == [64, 128], done.stdout
    for row in rows:
        ops, popcount_ops = _value_and_bracket(row["ops/pair (popcount)"])
        assert popcount_ops > 0 and ops > popcount_ops, row
        assert float(row["pop/pair"]) == int(row["bits"]) // 64, row  # one 64-bit popcount a word and pair
        ceiling, no_overlap = _value_and_bracket(row["ceiling G pairs/s (no-overlap)"])
        assert 0 < no_overlap <= ceiling, row
        for column in ("kernel G pairs/s (fraction)", "evaluate (fraction)"):
            rate, fraction = _value_and_bracket(row[column])
            assert rate > 0 and 0 < fraction < 1.5, (column, row)
        # the distance-only loop is not the modelled kernel: with AVX-512's vpopcntq it passes the
        # bit-sliced kernel's ceiling (1.86 of it at 128 bits on an Intel Xeon), so only its form is checked
        rate, fraction = _value_and_bracket(row["distance-only (fraction)"])
        assert rate > 0 and fraction > 0, row
