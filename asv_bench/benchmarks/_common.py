"""Helpers shared by the asv benchmark modules (no benchmarks here).

asv imports every module of this package and collects functions and methods named
``time_*``, ``timeraw_*``, ``mem_*``, ``peakmem_*`` or ``track_*`` (or ``Time...``, ``Track...``,
...); the names below avoid those prefixes, so importing them adds no benchmark.

* ``import_fasttie(probe)``: the installed fasttie (the commit under test), or the checkout's
  where none is installed;
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
    """fasttie: the installed package (under asv's virtualenvs, the commit being measured), or
    the checkout's where none is installed (or only a bare namespace package is found).

    Raises NotImplementedError when the installed fasttie has no attribute ``probe`` (a commit
    from before that front door): its benchmarks fail for that commit instead of silently
    measuring the checkout."""
    try:
        import fasttie
    except ImportError:
        fasttie = None
    if fasttie is None or getattr(fasttie, "__file__", None) is None:  # not installed: the checkout
        for name in [n for n in sys.modules if n == "fasttie" or n.startswith("fasttie.")]:
            del sys.modules[name]
        sys.path.insert(1, str(REPO))
        import fasttie
    if not hasattr(fasttie, probe):
        raise NotImplementedError(f"the installed fasttie ({fasttie.__file__}) has no {probe}")
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
