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
from helpers import COMPILE_COUNTER

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
from fasttie._kernels import hamming_ties, tie_extremes
from fasttie.warmup import compile_in_helper, kernel_cached
metrics = ["AP", "P@10", "AP@20"]
paths = ("hamming_ties.finalize_histograms", "hamming_ties.finish_stable", "tie_extremes.ratio_extremes_histograms")
before = [kernel_cached(path) for path in paths]
helper = compile_in_helper("stable", metrics, 64, extremes="retrieved", walk_driver=(300, 2))
helper.wait()
after = [kernel_cached(path) for path in paths]
q, db, ql, dl = ft.datasets.synthetic_hashing(6, 300, 64, 3, seed=1)
ft.evaluate(q, db, ql, dl, metrics=metrics, ties="stable")
ft.evaluate(q, db, ql, dl, metrics=metrics, spread="range")  # the average's walk too, with its driver
kernels = (hamming_ties.finalize_histograms, hamming_ties.finish_stable, tie_extremes.ratio_extremes_histograms)
print("RESULT " + json.dumps({"before": before, "after": after, "returncode": helper.returncode,
                              "hits": [sum(k.stats.cache_hits.values()) for k in kernels],
                              "misses": [sum(k.stats.cache_misses.values()) for k in kernels]}))
"""


def test_a_helper_process_compiles_the_stable_pass_into_the_cache(tmp_path):
    """What fasttie demo does on a cold cache: the average tie walk's driver, the stable call and
    the extremes then load their kernels from the cache."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "FASTTIE_NUM_THREADS": "2"}
    env.pop("FASTTIE_NO_CACHE", None)
    done = subprocess.run([sys.executable, "-c", HELPER], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert seen == {"before": [False, False, False], "after": [True, True, True], "returncode": 0,
                    "hits": [1, 1, 1], "misses": [0, 0, 0]}


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


# a fresh process of one copy of the package: counts the compiles of fasttie's kernels (numba's
# numba:compile event fires only when a kernel is not in the cache) while ``CALL`` runs
COUNTED = COMPILE_COUNTER + r"""
import fasttie
assert fasttie.__file__.startswith(sys.argv[1]), fasttie.__file__
CALL
print("RESULT " + json.dumps(compiled))
"""
ONE_CALL = """
import numpy as np
rng = np.random.default_rng(0)
fasttie.evaluate(rng.integers(0, 2, (4, 64)), rng.integers(0, 2, (50, 64)), rng.integers(0, 3, 4),
                 rng.integers(0, 3, 50), metrics=["AP", "P@10"], n_threads=1)
"""


def _copy_of_the_package(destination, source=None):
    """fasttie's files copied to ``destination``/fasttie with new modification times (what an
    unpacked image layer or a re-created environment looks like), caches included."""
    import shutil

    source = source or os.path.dirname(os.path.dirname(os.path.abspath(warmup_module.__file__)))
    shutil.copytree(os.path.join(source, "fasttie"), os.path.join(destination, "fasttie"), copy_function=shutil.copy)
    return str(destination)


def _compiles_in(copy, call, **env_changes):
    env = {**os.environ, "PYTHONPATH": copy, **env_changes}
    for name in ("FASTTIE_NO_CACHE", *(k for k, v in env_changes.items() if v is None)):
        env.pop(name, None)
    script = COUNTED.replace("CALL", call)
    done = subprocess.run([sys.executable, "-c", script, copy], capture_output=True, text=True, timeout=900,
                          env=env, cwd=copy)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


def test_a_shared_cache_folder_made_by_warmup_serves_another_copy_of_the_package(tmp_path):
    """NUMBA_CACHE_DIR mounted in a CI job or container whose environment lies elsewhere: the
    kernels ``warmup()`` cached from this copy load in a copy at another path, none compiled."""
    warmup()  # this copy, the suite's cache folder
    copy = _copy_of_the_package(tmp_path / "elsewhere")
    assert _compiles_in(copy, "from fasttie.warmup import warmup\nwarmup()") == []


def test_a_cache_beside_the_package_travels_with_a_copy(tmp_path):
    """The default place (``__pycache__`` beside the kernels): an environment warmed when its
    image was built, copied to another path with new modification times, compiles nothing."""
    built = _copy_of_the_package(tmp_path / "image")
    first = _compiles_in(built, ONE_CALL, NUMBA_CACHE_DIR=None)
    assert first  # an empty cache: this call compiled (the counter sees compiles)
    copy = _copy_of_the_package(tmp_path / "container", source=built)
    assert _compiles_in(copy, ONE_CALL, NUMBA_CACHE_DIR=None) == []
