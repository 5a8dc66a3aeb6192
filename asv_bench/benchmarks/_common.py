"""Helpers shared by the asv benchmark modules (no benchmarks here).

asv imports every module of this package and collects functions and methods named
``time_*``, ``timeraw_*``, ``mem_*``, ``peakmem_*`` or ``track_*`` (or ``Time...``, ``Track...``,
...); the names below avoid those prefixes, so importing them adds no benchmark.

* ``import_fasttie(probe)``: the installed fasttie (the commit under test), or the checkout's
  where none is installed;
* ``QUICK`` and ``sized(full, quick)``: the quick mode (``FASTTIE_ASV_QUICK=1``): every
  benchmark on its smallest sizes, to check in seconds that each one runs;
* ``best_seconds(fn, n)``: the fastest of ``n`` calls, in seconds.

The seeded data and the baselines are in ``data/`` (``from .data.ranking import ...``); the
scripts of ``scripts/`` import them from here too (``from benchmarks.data.ranking import ...``).
"""

import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# FASTTIE_ASV_QUICK=1 (read once, at import): tiny databases and few queries, so that
# ``asv run --quick`` runs every benchmark once in a minute or two (CI); the figures mean nothing
QUICK = os.environ.get("FASTTIE_ASV_QUICK", "") not in ("", "0")


def sized(full, quick):
    """``quick`` under FASTTIE_ASV_QUICK=1, else ``full``: a benchmark's params or sizes."""
    return quick if QUICK else full


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


def best_seconds(fn, n):
    """Wall seconds of the fastest of ``n`` calls of ``fn()``."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
