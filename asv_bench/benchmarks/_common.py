"""Helpers shared by the asv benchmark modules (no benchmarks here).

asv imports every module of this package and collects functions and methods named
``time_*``, ``timeraw_*``, ``mem_*``, ``peakmem_*`` or ``track_*`` (or ``Time...``, ``Track...``,
...); the names below avoid those prefixes, so importing them adds no benchmark.

* ``import_fasttie(probe)``: the installed fasttie when it is usable, otherwise the checkout's;
* ``load_script(name)``: scripts/<name>.py as a module under another name (a benchmark module and
  its script share a file name, so a plain import could resolve to either file);
* ``best_seconds(fn, n)``: the fastest of ``n`` calls, in seconds.
"""

import importlib.util
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(SCRIPTS))  # measure.py, synthetic.py, baselines.py, imported by the scripts


def import_fasttie(probe):
    """fasttie, the installed package when it has the attribute ``probe``, otherwise (not
    installed, a bare namespace package, an older version) the checkout's."""
    try:
        import fasttie

        getattr(fasttie, probe)
    except (ImportError, AttributeError):  # not installed: benchmark the checkout
        for name in [n for n in sys.modules if n == "fasttie" or n.startswith("fasttie.")]:
            del sys.modules[name]
        sys.path.insert(1, str(REPO))
        import fasttie
    return fasttie


def load_script(name):
    """scripts/<name>.py, executed once as module ``fasttie_scripts_<name>``."""
    module_name = f"fasttie_scripts_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look the module up while it executes
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def best_seconds(fn, n):
    """Wall seconds of the fastest of ``n`` calls of ``fn()``."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
