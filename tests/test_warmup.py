"""fasttie.warmup: ``warmup()`` compiles and caches every front door's kernels, and
``cache_status()`` tells, without compiling anything, which front doors are cached.

The cache_status checks run in fresh processes with a cache folder of their own, so what they
see is numba's index files, not this process's compiled code.
"""

import json
import os
import subprocess
import sys

import numba

from fasttie import warmup as warmup_module
from fasttie.warmup import FRONT_DOORS, cache_status, warmup

STATUS = r"""
import json, sys
from fasttie.warmup import cache_status
import numba
before = cache_status()
import fasttie._kernels as kernels, importlib, pkgutil
compiled = [name for info in pkgutil.iter_modules(kernels.__path__)
            for name, obj in vars(importlib.import_module("fasttie._kernels." + info.name)).items()
            if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.signatures]
print("RESULT " + json.dumps({"before": before, "after": cache_status(), "compiled": compiled}))
"""


def _status(folder):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder)}
    env.pop("FASTTIE_NO_CACHE", None)
    done = subprocess.run([sys.executable, "-c", STATUS], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


def test_every_listed_kernel_is_a_compiled_driver_that_warmup_compiles():
    seconds = warmup()  # this process: from the suite's cache, or compiled now
    assert all(t >= 0 for t in seconds.values()) and len(seconds) >= 13
    # every listed driver has been called: a stale name would stay uncompiled and leave its
    # front door "not cached" forever
    for door, kernels in FRONT_DOORS.items():
        for path in kernels:
            kernel = warmup_module._kernel(path)
            assert isinstance(kernel, numba.core.registry.CPUDispatcher), path
            assert len(kernel.signatures) == 1, f"{door}: {path} has {kernel.signatures}"


def test_cache_status_reads_the_cache_without_compiling(tmp_path):
    # an empty cache folder: nothing cached, and asking compiles nothing (still nothing after)
    seen = _status(tmp_path / "empty")
    assert set(seen["before"]) == set(FRONT_DOORS)
    assert set(seen["before"].values()) == {"not cached"} == set(seen["after"].values())
    assert seen["compiled"] == []


def test_warmup_caches_every_front_door():
    # this process compiles (or loads) into the suite's cache folder; a fresh process then finds
    # every front door there (a cold folder would cost ~30 s of compiling: the suite keeps one)
    calls = warmup()
    assert "trec.evaluate" in calls and "alpha_ndcg average" in calls
    seen = _status(os.environ["NUMBA_CACHE_DIR"])
    assert seen["before"] == {door: "cached" for door in FRONT_DOORS}


def test_cache_off_is_reported(monkeypatch):
    class NoCache:  # what numba's NullCache looks like to cache_status: no index file to load
        pass

    kernel = warmup_module._kernel(FRONT_DOORS["search"][0])
    monkeypatch.setattr(kernel, "_cache", NoCache())
    assert cache_status()["search"] == "cache off"
