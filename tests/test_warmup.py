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
from fasttie._kernels import _jit
from fasttie.warmup import FRONT_DOORS, cache_status, door_kernels, warmup

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
    for door, kernels in door_kernels().items():
        for path in kernels:
            kernel = warmup_module.kernel_at(path)
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

    kernel = warmup_module.kernel_at(FRONT_DOORS["search"][0])
    monkeypatch.setattr(kernel, "_cache", NoCache())
    assert cache_status()["search"] == "cache off"


HELPER = r"""
import json
import fasttie as ft
from fasttie._kernels import hamming_ties
from fasttie.warmup import compile_in_helper, kernel_cached
before = kernel_cached("hamming_ties.finalize_stable")
helper = compile_in_helper("stable", ["AP", "P@10"], 64)
helper.wait(timeout=600)
after = kernel_cached("hamming_ties.finalize_stable")
q, db, ql, dl = ft.datasets.synthetic_hashing(6, 300, 64, 3, seed=1)
ft.evaluate(q, db, ql, dl, metrics=["AP", "P@10"], ties="stable")
print("RESULT " + json.dumps({"before": before, "after": after, "returncode": helper.returncode,
                              "hits": sum(hamming_ties.finalize_stable.stats.cache_hits.values()),
                              "misses": sum(hamming_ties.finalize_stable.stats.cache_misses.values())}))
"""


def test_a_helper_process_compiles_the_stable_pass_into_the_cache(tmp_path):
    """What fasttie demo does on a cold cache: the stable call then loads its kernel from the cache."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "FASTTIE_NUM_THREADS": "2"}
    env.pop("FASTTIE_NO_CACHE", None)
    done = subprocess.run([sys.executable, "-c", HELPER], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert seen == {"before": False, "after": True, "returncode": 0, "hits": 1, "misses": 0}


def test_no_helper_where_it_cannot_help(monkeypatch):
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "1")  # one CPU: the helper would only compete
    assert warmup_module.compile_in_helper("stable", ["AP"], 64) is None
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "2")
    monkeypatch.setattr(_jit, "CACHE", False)  # nothing to share through
    assert warmup_module.compile_in_helper("stable", ["AP"], 64) is None


def test_a_door_with_some_kernels_cached_is_partly_cached(monkeypatch):
    from fasttie._kernels import cached

    first = door_kernels()["search"][0]
    monkeypatch.setattr(cached, "kernel_cached", lambda path: path == first)
    assert cache_status()["search"] == "partly cached (1 of 3 kernels)"
    monkeypatch.setattr(cached, "kernel_cached", lambda path: False)
    assert cache_status()["search"] == "not cached"


def test_the_first_compile_of_a_process_is_logged_once(monkeypatch, caplog):
    def twice(x):
        return 2 * x

    twice.__module__ = "fasttie._kernels.example"  # a fasttie kernel, compiled now (no cache)
    kernel = numba.njit(cache=False)(twice)
    other = numba.njit(cache=False)(lambda x: x + 1)  # not fasttie's: not told
    monkeypatch.setattr(_jit._FirstCompile, "told", False)
    with caplog.at_level("INFO", logger="fasttie"):
        assert other(1) == 2 and not caplog.records
        assert kernel(2) == 4 and kernel(2.5) == 5.0  # two compiles, one message
    (record,) = caplog.records
    assert record.levelname == "INFO" and "compiling kernels on first use (example.twice first" in record.message


def test_the_command_line_says_when_it_compiles(tmp_path):
    data = os.path.join(os.path.dirname(__file__), "data")
    argv = [sys.executable, "-m", "fasttie", "trec", os.path.join(data, "qrels.txt"), os.path.join(data, "run.txt"),
            "-m", "AP"]
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    env.pop("FASTTIE_NO_CACHE", None)
    cold, warm = (subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env) for _ in range(2))
    assert cold.returncode == warm.returncode == 0 and cold.stdout == warm.stdout
    # tests/data's run and qrels hold different queries: both runs say so in their last line
    query_set = "fasttie: 1 judged query is not in the run"
    cold_lines, warm_lines = cold.stderr.splitlines(), warm.stderr.splitlines()
    assert cold_lines[-1].startswith(query_set) and warm_lines[-1].startswith(query_set)
    assert cold_lines[0].startswith("fasttie: compiling kernels on first use (") and len(cold_lines) == 2
    assert warm_lines == warm_lines[-1:]  # loaded from the cache: nothing more to say
