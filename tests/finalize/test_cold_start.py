"""fasttie.finalize.cold_start: on a cold cache, evaluate's tie walk compiles in a helper process
while the call compiles its histogram pass (trec.evaluate's walk over the ranked lists while it
compiles its readers); the call then loads the walk from the cache and its values are those of a
call that compiled everything itself."""

import json
import os
import subprocess
import sys

import pytest

import fasttie as ft
from fasttie._kernels import _jit, finalize
from fasttie.finalize import cold_start
from fasttie.finalize.plan import finalize_plan
from fasttie.hamming.engine import cold_tie_walk, vector_sweeps
from fasttie.hamming.options import HammingOptions
from fasttie.metrics import parse_metrics
from helpers import COMPILE_COUNTER

# a fresh process: the compiles of fasttie's kernels in this process (numba's numba:compile
# event fires only when a kernel is not in the cache) during one cold evaluate call
COLD_CALL = COMPILE_COUNTER + r"""
import fasttie as ft
q, db, ql, dl = ft.datasets.synthetic_hashing(6, 3000, 64, 3, seed=1)
result = ft.evaluate(q, db, ql, dl, metrics=METRICS, spread=SPREAD)
print("RESULT " + json.dumps({"compiled": compiled, "mean": {k: repr(v) for k, v in result.mean.items()},
                              "tie_min": {k: repr(v) for k, v in (result.mean_tie_min or {}).items()}}))
"""


def _cold(folder, script, **env_changes):
    """What ``script`` prints after RESULT, run in a fresh process on the empty cache ``folder``
    with two usable CPUs."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder), "FASTTIE_NUM_THREADS": "2", **env_changes}
    env.pop("FASTTIE_NO_CACHE", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


def _helped_and_alone(tmp_path, script):
    """What ``script`` prints on an empty cache with a helper, and without helpers."""
    return _cold(tmp_path / "helped", script), _cold(tmp_path / "alone", script, FASTTIE_COMPILE_HELPER="0")


def _cold_call(folder, metrics, spread, **env_changes):
    return _cold(folder, COLD_CALL.replace("METRICS", repr(metrics)).replace("SPREAD", repr(spread)), **env_changes)


@pytest.mark.parametrize("metrics, spread, started", [(["AP", "AP@100", "nDCG@100", "P@100"], False, "fork"),
                                                      (["AP", "nDCG@10", "RR", "ERR@10"], "range", "fork"),
                                                      (["AP", "AP@100", "nDCG@100", "P@100"], False, "spawn")])
def test_a_cold_call_loads_the_tie_walk_that_a_helper_compiled(tmp_path, metrics, spread, started):
    # the helper forked from the call (Linux), or a new interpreter (FASTTIE_COMPILE_HELPER=spawn,
    # as on other platforms or beside other threads)
    helped = _cold_call(tmp_path / "helped", metrics, spread, **({"FASTTIE_COMPILE_HELPER": "spawn"} if started == "spawn" else {}))
    alone = _cold_call(tmp_path / "alone", metrics, spread, FASTTIE_COMPILE_HELPER="0")
    # the walk's driver (finalize_histograms) calls the walk through its address: it compiles here
    # while the helper compiles the walk, ERR and the spread
    walks = ("fasttie._kernels.finalize.", "fasttie._kernels.err.", "fasttie._kernels.tie_spread.",
             "fasttie._kernels.tie_extremes.")
    assert [name for name in alone["compiled"] if name.startswith(walks)]  # the counter sees the walk compile
    assert [name for name in helped["compiled"] if name.startswith(walks)] == []
    passes = ("fasttie._kernels.histogram.", "fasttie._kernels.bitsliced.")  # portable, or AVX-512's
    assert any(name.startswith(passes) for name in helped["compiled"])  # the pass, here
    # bitwise the values of a call that compiled everything itself, and of this process's warm kernels
    assert helped["mean"] == alone["mean"] and helped["tie_min"] == alone["tie_min"]
    q, db, ql, dl = ft.datasets.synthetic_hashing(6, 3000, 64, 3, seed=1)
    here = ft.evaluate(q, db, ql, dl, metrics=metrics, spread=spread)
    assert helped["mean"] == {k: repr(v) for k, v in here.mean.items()}


# ties="stable" (the full pass: a whole-list metric): the call compiles the finish kernel, the
# helper the scan; relevance of each kind (the scan's signature)
STABLE_INPUTS = r"""
import numpy as np
import fasttie as ft
q, db, ql, dl = ft.datasets.synthetic_hashing(6, 3000, 64, 3, seed=1)
rng = np.random.default_rng(2)
listed = np.sort(np.stack([rng.choice(3000, 40, replace=False) for _ in range(6)]), axis=1).ravel()
relevance = {"class": dict(query_labels=ql, db_labels=dl),
             "multihot": dict(query_labels=rng.integers(0, 2, (6, 3)), db_labels=rng.integers(0, 2, (3000, 3))),
             "listed": dict(relevance=(np.arange(7) * 40, listed, rng.integers(1, 3, 240)))}[KIND]
result = ft.evaluate(q, db, metrics=METRICS, ties="stable", **relevance)
"""
COLD_STABLE = COMPILE_COUNTER + STABLE_INPUTS + r"""
print("RESULT " + json.dumps({"compiled": compiled, "mean": {k: repr(v) for k, v in result.mean.items()}}))
"""
STABLE_METRICS = ["AP", "AP@100", "nDCG@100", "WAP@50", "P@100"]
NEAR_METRICS = ["AP@100", "nDCG@100", "WAP@50", "P@100"]  # cutoffs only: the counts, then the near scans
# what the helper compiles: the scans, and the near pass's counting pass and class sort
STABLE_SCANS = ("fasttie._kernels.hamming_ties.stable_scan", "fasttie._kernels.hamming_ties._scan",
                "fasttie._kernels.stable_lanes.", "fasttie._kernels.stable_top.", "fasttie._kernels.histogram.",
                "fasttie._kernels.class_sort.", "fasttie._kernels.bitsliced.")


@pytest.mark.parametrize("metrics", [STABLE_METRICS, NEAR_METRICS], ids=["full", "near"])
@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
def test_a_cold_stable_call_loads_the_scan_that_a_helper_compiled(tmp_path, kind, metrics):
    def filled(script):
        return script.replace("METRICS", repr(metrics)).replace("KIND", repr(kind))

    helped = _cold(tmp_path / "helped", filled(COLD_STABLE))
    assert [name for name in helped["compiled"] if name.startswith(STABLE_SCANS)] == []
    assert "fasttie._kernels.hamming_ties.finish_stable_optional" in helped["compiled"]  # WAP: the optional sums
    if kind == "class":
        alone = _cold(tmp_path / "alone", filled(COLD_STABLE), FASTTIE_COMPILE_HELPER="0")
        full = "stable_scan_lanes" if vector_sweeps("class", 1, 6 * 3000) else "stable_scan"  # this CPU's and size's
        scan = (f"fasttie._kernels.hamming_ties.{full}" if metrics == STABLE_METRICS
                else "fasttie._kernels.stable_top.scan_near_one_word")  # 64-bit codes
        assert scan in alone["compiled"]
        assert helped["mean"] == alone["mean"]
    here = {}
    exec(filled(STABLE_INPUTS), here)  # the same call in this process (its kernels warm)
    assert helped["mean"] == {k: repr(v) for k, v in here["result"].mean.items()}


def test_a_cold_near_pass_on_the_portable_pass_loads_the_class_sort_a_helper_compiled(tmp_path):
    """The portable pass of one-word codes sorts the database by class (AVX2 machines, or forced):
    the helper compiles that sort too, and the call waits for it before preparing its pass."""
    script = COLD_STABLE.replace("METRICS", repr(NEAR_METRICS)).replace("KIND", repr("class"))
    helped = _cold(tmp_path, script, FASTTIE_KERNEL="portable")
    assert [name for name in helped["compiled"] if name.startswith(STABLE_SCANS)] == []
    assert "fasttie._kernels.hamming_ties.finish_stable_optional" in helped["compiled"]


# the same for a cold fasttie.trec.evaluate: its readers, join and tie keys compile here, the
# driver of the walk over the ranked lists in the helper, then the finalizers here (the driver calls
# them through their addresses), and ERR's pass (a pass of its own)
COLD_TREC = COMPILE_COUNTER + r"""
import os, tempfile
import fasttie as ft
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "qrels"), "w") as f:
    f.writelines(f"q{i % 7} 0 d{i} {i % 3}\n" for i in range(300))
with open(os.path.join(folder, "run"), "w") as f:
    f.writelines(f"q{i % 7} Q0 d{i} {i} {i % 17} t\n" for i in range(600))
result = ft.trec.evaluate(os.path.join(folder, "qrels"), os.path.join(folder, "run"), METRICS, ties=TIES)
print("RESULT " + json.dumps({"compiled": compiled, "mean": {k: repr(v) for k, v in result.mean.items()}}))
"""


@pytest.mark.parametrize("metrics, ties", [(["AP", "nDCG@10", "P@5", "Bpref"], "trec"),
                                           (["AP@5", "RR", "ERR@10"], "average")])
def test_a_cold_trec_call_loads_the_walk_that_a_helper_compiled(tmp_path, metrics, ties):
    script = COLD_TREC.replace("METRICS", repr(metrics)).replace("TIES", repr(ties))
    helped, alone = _helped_and_alone(tmp_path, script)
    drivers = {"fasttie._kernels.score_ties.finalize_rankings", "fasttie._kernels.score_ties.finalize_fixed_rankings"}
    assert drivers & set(alone["compiled"])
    assert drivers & set(helped["compiled"]) == set()  # the helper's
    for here in ("fasttie._kernels.trec_parse.", "fasttie._kernels.finalize."):  # the readers, the finalizers
        assert any(name.startswith(here) for name in helped["compiled"])
    assert helped["mean"] == alone["mean"]


COLD_LISTS = COMPILE_COUNTER + r"""
import numpy as np
import fasttie as ft
rng = np.random.default_rng(3)
y_true = rng.integers(0, 4, 500).astype(float); y_pred = rng.integers(0, 40, 500) / 4.0
result = ft.rank_evaluate(y_true, y_pred, [200, 300], metrics=METRICS, ties=TIES)
print("RESULT " + json.dumps({"compiled": compiled, "mean": {k: repr(v) for k, v in result.mean.items()}}))
"""


@pytest.mark.parametrize("metrics, ties", [(["AP", "nDCG@10", "P@10", "RR"], "average"),
                                           (["AP", "nDCG@10", "Bpref", "RBP(p=0.8)"], "stable")])
def test_a_cold_ranked_list_call_loads_the_finalizers_that_a_helper_compiled(tmp_path, metrics, ties):
    # rank_evaluate's walk calls its finalizers through their addresses: the call compiles the
    # walk's driver (its sort and tie cuts) while a helper compiles the finalizers it calls
    script = COLD_LISTS.replace("METRICS", repr(metrics)).replace("TIES", repr(ties))
    helped, alone = _helped_and_alone(tmp_path, script)
    finalizers = ("fasttie._kernels.finalize.",)
    assert [name for name in alone["compiled"] if name.startswith(finalizers)]
    assert [name for name in helped["compiled"] if name.startswith(finalizers)] == []
    assert any(name.startswith("fasttie._kernels.score_ties.") for name in helped["compiled"])  # the driver, here
    assert helped["mean"] == alone["mean"]


COLD_ALPHA = COMPILE_COUNTER + r"""
import numpy as np
import fasttie as ft
rng = np.random.default_rng(4)
subtopics = rng.integers(0, 2, (500, 5)); y_pred = rng.integers(0, 30, 500) / 3.0
values = ft.alpha_ndcg(subtopics, y_pred, [200, 300], k=[5, 20], ties=TIES)
print("RESULT " + json.dumps({"compiled": compiled, "values": np.asarray(values).tobytes().hex()}))
"""


@pytest.mark.parametrize("ties", ["stable", "average"])
def test_a_cold_alpha_ndcg_call_loads_the_sums_that_a_helper_compiled(tmp_path, ties):
    # the drivers of alpha_ndcg call query_sums through its address: the call compiles the driver
    # (the run's gains, or their average over tie orders) while a helper compiles the sums
    script = COLD_ALPHA.replace("TIES", repr(ties))
    helped, alone = _helped_and_alone(tmp_path, script)
    sums = "fasttie._kernels.diversity_measures.query_sums"
    assert sums in alone["compiled"] and sums not in helped["compiled"]
    driver = "diversity_ties.average_queries" if ties == "average" else "diversity_measures.diversity_queries"
    assert f"fasttie._kernels.{driver}" in helped["compiled"]
    assert helped["values"] == alone["values"]


COLD_LAMBDARANK = COMPILE_COUNTER + r"""
import numpy as np
import fasttie as ft
rng = np.random.default_rng(5)
labels = rng.integers(0, 5, 600); scores = rng.integers(0, 40, 600) / 4.0
group = [100, 300, 200]
values = [ft.lambdarank(labels, scores, group, **options) for options in OPTIONS]
print("RESULT " + json.dumps({"compiled": compiled, "values": np.asarray(values).tobytes().hex()}))
"""


@pytest.mark.parametrize("options", [[{}], [dict(k=10, damp_score_gap=True, rescale=True), {"sigma": 2.0}]])
def test_a_cold_lambdarank_call_loads_the_pair_rows_that_a_helper_compiled(tmp_path, options):
    # lambdarank's per-query kernel calls the pair rows through their address: the call compiles
    # the sort, the ideal DCG and the layout while a helper compiles the rows
    helped, alone = _helped_and_alone(tmp_path, COLD_LAMBDARANK.replace("OPTIONS", repr(options)))
    rows = "fasttie._kernels.lambdarank.pair_rows"
    assert rows in alone["compiled"] and rows not in helped["compiled"]
    assert "fasttie._kernels.lambdarank.lambdarank_queries" in helped["compiled"]
    assert helped["values"] == alone["values"]


def _walk(metrics=("AP", "P@10"), n_db=3000):
    plan = finalize_plan(parse_metrics(list(metrics)), "average", "retrieved", n_db)
    return plan.kernel(finalize.finalize_ties, finalize.finalize_ties_optional, finalize.finalize_ties_ratios)


def _start(kernel, n_threads=None, n_db=3000):
    return cold_start.hamming_walk_in_helper(kernel, ["AP", "P@10"], options={"ties": "average"}, n_db=n_db, n_bits=64,
                                         n_grades=2, relevance="class", n_threads=n_threads)


class _Cold:
    """A stand-in for a kernel whose cache index is empty, not compiled in this process."""

    signatures = []

    class _cache:
        class _cache_file:
            @staticmethod
            def _load_index():
                return {}


def test_no_helper_where_it_cannot_help_or_is_not_wanted(monkeypatch):
    started = []
    monkeypatch.setattr(cold_start, "_launch", lambda *a, **k: started.append(a) or object())
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "2")
    assert _walk() in (finalize.finalize_ties, finalize.finalize_ties_ratios)
    assert _start(_Cold()) is not None and len(started) == 1  # cold, two CPUs: a helper
    assert _start(_Cold(), n_threads=1) is None  # the call keeps to one CPU
    assert _start(_Cold(), n_db=0) is None  # too few items for the made-up counts
    monkeypatch.setenv("FASTTIE_COMPILE_HELPER", "0")
    assert _start(_Cold()) is None
    monkeypatch.delenv("FASTTIE_COMPILE_HELPER")
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "1")  # one CPU: the helper would only compete
    assert _start(_Cold()) is None
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "2")
    monkeypatch.setattr(sys, "frozen", True, raising=False)  # a bundled app: -c would start the app itself
    assert _start(_Cold()) is None
    monkeypatch.delattr(sys, "frozen")
    monkeypatch.setattr(_jit, "CACHE", False)  # nothing to share through
    assert _start(_Cold()) is None
    assert len(started) == 1


class _Cached(_Cold):
    """A stand-in for a kernel that another process cached, not loaded in this process yet."""

    class _cache:
        class _cache_file:
            @staticmethod
            def _load_index():
                return {"a signature": "its file"}


def test_a_compiled_or_cached_walk_starts_no_helper(monkeypatch):
    started = []
    monkeypatch.setattr(cold_start, "_launch", lambda *a, **k: started.append(a) or object())
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "2")
    q, db, ql, dl = ft.datasets.synthetic_hashing(3, 300, 64, 3, seed=1)
    monkeypatch.setenv("FASTTIE_COMPILE_HELPER", "0")  # Popen is a stand-in here (run alone, the walk is cold)
    ft.evaluate(q, db, ql, dl, metrics=["AP", "P@10"])  # compiled or loaded here: in this process now
    monkeypatch.delenv("FASTTIE_COMPILE_HELPER")
    assert _walk(n_db=300).signatures
    assert _start(_walk(n_db=300), n_db=300) is None
    assert cold_tie_walk(parse_metrics(["AP", "P@10"]), HammingOptions(), 300) is None  # warm: no plan built
    monkeypatch.setattr(_jit, "CACHE", True)
    assert _start(_Cached()) is None  # the cache's index lists it: the call loads it
    assert _start(_Cold()) is not None and len(started) == 1
    # the ranked lists' walk: a helper only where its driver is not cached, nor compiled here
    ranked = {"options": {"ties": "trec"}, "keyed": True, "n_threads": None}
    assert cold_start.ranked_walk_in_helper(_Cached(), ["AP"], 10, **ranked) is None
    assert cold_start.ranked_walk_in_helper(_walk(n_db=300), ["AP"], 10, **ranked) is None
    assert cold_start.ranked_walk_in_helper(_Cold(), ["AP"], 10, **ranked) is not None
    assert len(started) == 2
    # the stable pass's scan: a helper only where neither it nor the finish the call runs is cached
    stable = {"relevance": "class", "n_bits": 64, "n_threads": None}
    for near in (False, True):
        assert cold_start.stable_scan_in_helper(_Cold(), _Cached(), near, **stable) is None
        assert cold_start.stable_scan_in_helper(_Cached(), _Cold(), near, **stable) is None
        assert cold_start.stable_scan_in_helper(_Cold(), _walk(n_db=300), near, **stable) is None
        assert cold_start.stable_scan_in_helper(_Cold(), _Cold(), near, **{**stable, "n_threads": 1}) is None
        assert cold_start.stable_scan_in_helper(_Cold(), _Cold(), near, **stable) is not None
    assert len(started) == 4


def test_a_helper_compiles_only_the_callees_neither_compiled_here_nor_cached(monkeypatch):
    from fasttie._kernels.address import address_of
    from fasttie._kernels.diversity_measures import query_sums
    from fasttie._kernels.radix_sort import sort_keys_into

    started = []
    monkeypatch.setattr(cold_start, "start_helper", lambda code, n_threads=None: started.append(code) or "helper")
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "2")
    monkeypatch.setattr(_jit, "CACHE", True)
    address_of(sort_keys_into)  # compiled (or loaded) here, as the ranked lists' door of this process did

    class ColdSums(_Cold):
        py_func = query_sums.py_func

    assert cold_start.callees_in_helper([ColdSums(), sort_keys_into], None) == "helper"
    assert "diversity_measures.query_sums" in started[0] and "sort_keys_into" not in started[0]
    assert cold_start.callees_in_helper([sort_keys_into], None) is None  # nothing left to compile
    assert cold_start.callees_in_helper([_Cached(), sort_keys_into], None) is None  # the cache has the rest
    assert len(started) == 1


def test_a_helper_is_forked_where_no_other_python_thread_works_else_a_new_interpreter(monkeypatch):
    started, others_idle = [], [True]
    monkeypatch.setattr(cold_start, "_Forked", lambda code: started.append("fork") or "forked")
    monkeypatch.setattr(cold_start.subprocess, "Popen", lambda *a, **k: started.append(("spawn", a[0], k["env"][cold_start.HELPER_ENV])) or "spawned")
    monkeypatch.setattr(cold_start, "only_idle_workers_beside", lambda thread: others_idle[0])
    monkeypatch.setattr(cold_start.sys, "platform", "linux")
    monkeypatch.delenv(cold_start.HELPER_ENV, raising=False)
    assert cold_start._launch("pass") == "forked"
    monkeypatch.setenv(cold_start.HELPER_ENV, "spawn")  # asked for a new interpreter
    assert cold_start._launch("pass") == "spawned"
    monkeypatch.delenv(cold_start.HELPER_ENV)
    monkeypatch.setattr(cold_start.sys, "platform", "darwin")  # fork is Linux's only
    assert cold_start._launch("pass") == "spawned"
    monkeypatch.setattr(cold_start.sys, "platform", "linux")
    others_idle[0] = False  # another thread might hold a lock the fork would need
    assert cold_start._launch("pass") == "spawned"
    others_idle[0] = True

    def no_fork(code):
        raise BlockingIOError("fork: resource temporarily unavailable")

    monkeypatch.setattr(cold_start, "_Forked", no_fork)  # a process limit: a new interpreter, not an error
    assert cold_start._launch("pass") == "spawned"
    spawned = ("spawn", [sys.executable, "-c", "pass"], "0")  # a helper starts no helpers of its own
    assert started == ["fork", spawned, spawned, spawned, spawned]


def test_a_forked_helper_runs_its_code_in_a_child_that_starts_no_helpers(tmp_path, monkeypatch):
    monkeypatch.setattr(cold_start.sys, "platform", "linux")
    monkeypatch.setattr(cold_start, "only_idle_workers_beside", lambda thread: True)  # as in a fresh process
    monkeypatch.delenv(cold_start.HELPER_ENV, raising=False)
    out = tmp_path / "child"
    code = f"import os\nwith open({str(out)!r}, 'w') as f:\n    print(os.getpid(), os.environ[{cold_start.HELPER_ENV!r}], file=f)"
    process = cold_start._launch(code)
    assert isinstance(process, cold_start._Forked) and process.wait(timeout=60) == 0
    pid, helper_env = out.read_text().split()
    assert int(pid) == process.pid != os.getpid() and helper_env == "0"
    assert cold_start.HELPER_ENV not in os.environ  # this process's environment untouched


@pytest.mark.parametrize("started", ["fork", "spawn"])
def test_a_helper_that_fails_or_hangs_only_costs_time(monkeypatch, started):
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "2")
    if started == "spawn":
        monkeypatch.setenv(cold_start.HELPER_ENV, "spawn")
    else:
        monkeypatch.setattr(cold_start, "only_idle_workers_beside", lambda thread: True)  # as in a fresh process
    monkeypatch.setattr(_jit, "CACHE", True)
    failed = cold_start.start_helper("raise SystemExit(3)")
    failed.wait()
    failed.wait()  # every later finalize finds it done
    assert failed._process.returncode == 3
    monkeypatch.setattr(cold_start, "WAIT_SECONDS", 0.5)
    hung = cold_start.start_helper("import time; time.sleep(60)")
    hung.wait()  # stopped after WAIT_SECONDS: the call compiles the walk itself
    assert hung._process.returncode is not None and hung._process.returncode != 0
