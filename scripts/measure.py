"""Measurement helpers shared by the benchmark scripts (``scripts/bench_*.py``).

* ``LoadMeter``: wall and CPU time of a block and the CPU *other* processes used meanwhile
  ("others' CPU", in cores, from /proc/stat);
* ``timed(fn, repeats)``: (median seconds, all times, LoadMeter) of ``repeats`` calls under one
  LoadMeter;
* ``best_of(fn, n)``: (best seconds, others' CPU during that call, all times) of ``n`` calls,
  each after ``gc.collect()`` in its own LoadMeter;
* ``Table`` (aligned text table), ``cpu_model()``, ``maxrss_mib()``, ``parse_int_list()``.

The scripts put their own directory first on ``sys.path`` and ``import measure``; the seeded
data generators and baselines they share with the asv benchmarks live in the asv package, so a
script that needs them also puts ``asv_bench/`` on ``sys.path`` and imports them from there::

    sys.path.insert(2, str(SCRIPTS_DIR.parent / "asv_bench"))
    from benchmarks.data import baselines
    from benchmarks.data.synthetic import make_hashing_data, words_to_bytes
"""

from __future__ import annotations

import gc
import os
import platform
import resource
import statistics
import time
from pathlib import Path


def maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags() -> str:
    """The CPU features the kernels pick their passes by (popcnt, AVX2, AVX-512 and its popcount)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "?"
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
            break
    wanted = ["popcnt", "avx2", "avx512f", "avx512_vpopcntdq", "avx512bw"]
    return " ".join(f for f in wanted if f in flags) or "none of popcnt/avx2/avx512"


def parse_int_list(text: str) -> list[int]:
    """"1, 2,4" -> [1, 2, 4] (spaces and empty items ignored)."""
    return [int(x) for x in text.replace(" ", "").split(",") if x]


class Table:
    def __init__(self, columns):
        self.columns = columns
        self.rows = []

    def add(self, *row):
        self.rows.append([str(x) for x in row])

    def print(self):
        widths = [max(len(c), *(len(r[i]) for r in self.rows)) for i, c in enumerate(self.columns)]
        line = "  ".join(c.ljust(w) for c, w in zip(self.columns, widths))
        print(line)
        print("-" * len(line))
        for r in self.rows:
            print("  ".join(x.ljust(w) for x, w in zip(r, widths)))


class LoadMeter:
    """CPU used by *other* processes while a block runs, in cores (from /proc/stat).

    After the block: ``wall`` (seconds), ``cpu`` (CPU seconds of this process, all threads) and
    ``others`` (cores used by other processes on average; nan without /proc/stat).
    The benchmark machine may be shared (2 cores): ``others`` near 0 means the timings are
    clean; near the core count means every number is inflated, 2-thread runs most.
    """

    _hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    @staticmethod
    def _busy_s() -> float | None:
        try:
            fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        except OSError:
            return None
        v = [int(x) for x in fields]
        # user nice system idle iowait irq softirq steal (guest is inside user)
        return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / LoadMeter._hz

    def __enter__(self):
        self.busy0, self.own0, self.t0 = self._busy_s(), time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = wall = time.perf_counter() - self.t0
        self.cpu = time.process_time() - self.own0  # this process, all threads
        busy1 = self._busy_s()
        if self.busy0 is None or busy1 is None or wall <= 0:
            self.others = float("nan")
        else:
            others = (busy1 - self.busy0) - (time.process_time() - self.own0)
            self.others = max(0.0, others / wall)
        return False


def timed(fn, repeats):
    """(median seconds, all times, LoadMeter) of ``repeats`` calls; the meter spans all of them."""
    times = []
    with LoadMeter() as load:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times), times, load


def best_of(fn, n):
    """(best seconds, others' CPU during the best call, all times) of ``n`` calls.

    Each call runs after ``gc.collect()`` in its own LoadMeter; its result is dropped before the
    next call.
    """
    times, others = [], []
    for _ in range(n):
        gc.collect()
        with LoadMeter() as meter:
            result = fn()
        times.append(meter.wall)
        others.append(meter.others)
        del result
    i = min(range(len(times)), key=times.__getitem__)
    return times[i], others[i], times
