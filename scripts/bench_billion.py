"""A billion codes on one machine: fasttie.evaluate over memory-mapped .npy files, streamed tile by
tile, against the in-memory pass, and fasttie.dask.evaluate over the same files (never a timed test).

    python scripts/bench_billion.py                                          # 1e9 codes x 1000 queries
    python scripts/bench_billion.py --n-db 50000000 --n-queries 100 --slice 5000000   # quick

Data (written once into ``--dir``, chunk by chunk, seeded; kept with ``--keep`` and reused when
its parameters match): ``--files`` .npy files of packed 64-bit codes, (rows, 8) uint8 in the
words' layout (bitorder "little"), and beside each one a .npy of uint8 class ids. The codes are
correlated with the classes as ``fasttie.datasets.synthetic_hashing`` makes them (a class
prototype with each bit flipped with probability 0.25), generated ``--chunk`` rows at a time by
a generator seeded with (seed, file index). Queries: ``--n-queries`` codes of the same classes,
in memory.

Phases, in one process (``others``: the CPU other processes used meanwhile, in cores):

1. cold: the files' pages dropped from the page cache (``posix_fadvise(DONTNEED)`` after an
   fsync), then a plain sequential read of every file (the disk rate), dropped again, then
   ``ft.evaluate`` of ``--cold-queries`` queries over them (the evaluation's rate from disk);
2. in memory: the first ``--slice`` codes copied into memory, ``ft.evaluate`` of all queries
   (best of ``--repeats``), and the same rows through the memory-mapped path: bitwise equal;
3. streamed: ``ft.evaluate`` of all queries over the whole list of files (in the page cache
   after phase 1), progress bar on; its code pairs per second over the in-memory pass's (the
   target is >= 0.7), and its peak memory beyond the page cache: RssAnon of /proc/self/status
   (anonymous memory: what the file-backed pages of the memory maps are not), sampled every
   20 ms, minus its value before the call;
4. dask: ``fasttie.dask.evaluate`` over the same files on a ``LocalCluster`` of ``--workers``
   processes x 1 thread, ``--dask-queries`` queries (the first ones); its per-query values
   compared bitwise with phase 3's; peak RssAnon per worker.

Metrics ``--metrics`` (default AP, AP@1000, nDCG@1000, P@1000), ties "average". The folder is
deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import shutil
import sys
import threading
import time
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))
sys.path.insert(1, str(SCRIPTS_DIR.parent))

import numpy as np  # noqa: E402

import fasttie as ft  # noqa: E402
from measure import LoadMeter, cpu_model  # noqa: E402

METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000")
N_CLASSES = 10
FLIP_WORDS = 2  # the AND of two uniform words: each bit set with probability 0.25


# ----------------------------------------------------------------------------- data

def file_rows(n_db, n_files):
    bounds = np.linspace(0, n_db, n_files + 1).round().astype(np.int64)
    return np.diff(bounds)


def make_data(folder, n_db, n_files, chunk, seed):
    """(code paths, label paths): written chunk by chunk, or reused when meta.json matches."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"n_db": n_db, "files": n_files, "chunk": chunk, "seed": seed, "classes": N_CLASSES, "version": 1}
    code_paths = [folder / f"codes_{i:03d}.npy" for i in range(n_files)]
    label_paths = [folder / f"labels_{i:03d}.npy" for i in range(n_files)]
    meta_path = folder / "meta.json"
    if meta_path.exists() and json.loads(meta_path.read_text()) == meta:
        print(f"data: reusing {folder}", flush=True)
        return code_paths, label_paths
    prototypes = np.random.default_rng(seed).integers(0, 2**64, N_CLASSES, dtype=np.uint64)
    t0 = time.perf_counter()
    for index, rows in enumerate(file_rows(n_db, n_files)):
        rng = np.random.default_rng([seed, index + 1])
        codes = np.lib.format.open_memmap(code_paths[index], mode="w+", dtype=np.uint8, shape=(int(rows), 8))
        labels = np.lib.format.open_memmap(label_paths[index], mode="w+", dtype=np.uint8, shape=(int(rows),))
        words = codes.view("<u8").reshape(-1)
        for lo in range(0, int(rows), chunk):
            hi = min(lo + chunk, int(rows))
            ids = rng.integers(0, N_CLASSES, hi - lo, dtype=np.uint8)
            flips = rng.integers(0, 2**64, hi - lo, dtype=np.uint64) & rng.integers(0, 2**64, hi - lo,
                                                                                    dtype=np.uint64)
            words[lo:hi] = prototypes[ids] ^ flips
            labels[lo:hi] = ids
        codes.flush()
        labels.flush()
        del codes, labels, words
    written = sum(p.stat().st_size for p in code_paths + label_paths)
    meta_path.write_text(json.dumps(meta))
    seconds = time.perf_counter() - t0
    print(f"data: {n_db} codes in {n_files} files written in {seconds:.1f} s ({written / seconds / 1e6:.0f} MB/s, "
          f"{written / 1e9:.2f} GB with labels)", flush=True)
    return code_paths, label_paths


def make_queries(n_queries, seed):
    prototypes = np.random.default_rng(seed).integers(0, 2**64, N_CLASSES, dtype=np.uint64)
    rng = np.random.default_rng([seed, 0])
    ids = rng.integers(0, N_CLASSES, n_queries, dtype=np.uint8)
    words = prototypes[ids] ^ (rng.integers(0, 2**64, n_queries, dtype=np.uint64)
                               & rng.integers(0, 2**64, n_queries, dtype=np.uint64))
    return ft.PackedCodes(words.reshape(-1, 1), 64), ids


def evict(paths):
    """Drop the files' pages from the page cache (they must not be mapped anywhere)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def cached_gib():
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Cached:"):
            return int(line.split()[1]) / 2**20
    return float("nan")


def read_rate(paths, block=64 << 20):
    """Bytes per second of a plain sequential read of the files."""
    buffer = bytearray(block)
    total = 0
    t0 = time.perf_counter()
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while True:
                n = f.readinto(buffer)
                if not n:
                    break
                total += n
    return total / (time.perf_counter() - t0), total


# ----------------------------------------------------------------------------- memory

def rss_anon_kib(pid="self"):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    return 0


class PeakAnon:
    """The peak RssAnon of processes (this one by default) while a block runs, sampled every 20 ms."""

    def __init__(self, pids=("self",)):
        self.pids = list(pids)

    def __enter__(self):
        self.start = {pid: rss_anon_kib(pid) for pid in self.pids}
        self.peak = dict(self.start)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        while not self.done.wait(0.02):
            for pid in self.pids:
                try:
                    self.peak[pid] = max(self.peak[pid], rss_anon_kib(pid))
                except OSError:
                    pass

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        return False


def mib(kib):
    return f"{kib / 1024:.0f} MiB"


# ----------------------------------------------------------------------------- runs

def bitwise_equal(a, b, rows=None):
    rows = slice(None) if rows is None else rows
    return all(np.array_equal(a.per_query[k], b.per_query[k][rows], equal_nan=True) for k in a.per_query)


def timed_evaluate(label, queries, database, query_labels, db_labels, metrics, n_pairs, n_bytes=None, **options):
    with LoadMeter() as load, PeakAnon() as memory:
        result = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, **options)
    rate = n_pairs / load.wall
    extra = f", {n_bytes / load.wall / 1e6:.0f} MB/s of codes and labels" if n_bytes else ""
    print(f"{label}: {load.wall:.1f} s, {rate:.3g} code pairs/s{extra}; peak RssAnon {mib(memory.peak['self'])} "
          f"({mib(memory.peak['self'] - memory.start['self'])} over the {mib(memory.start['self'])} before); "
          f"others {load.others:.2f} cores", flush=True)
    return result, rate, load


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default="/tmp/billion", help="folder of the data files")
    parser.add_argument("--n-db", type=int, default=1_000_000_000)
    parser.add_argument("--files", type=int, default=8, help=".npy files the database is cut into")
    parser.add_argument("--chunk", type=int, default=1 << 24, help="rows generated at a time")
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--cold-queries", type=int, default=8, help="queries of the run from disk (0: skip)")
    parser.add_argument("--slice", type=int, default=20_000_000, help="codes of the in-memory pass")
    parser.add_argument("--repeats", type=int, default=2, help="calls of the in-memory pass (best kept)")
    parser.add_argument("--dask-queries", type=int, default=None, help="queries of the dask run (default all; "
                        "0: skip)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--metrics", default=",".join(METRICS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the data folder")
    args = parser.parse_args(argv)
    metrics = [m.strip() for m in args.metrics.split(",")]
    print("command: python scripts/bench_billion.py" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:]))
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores; fasttie {ft.__version__} from {Path(ft.__file__).parent}")
    folder = Path(args.dir)
    try:
        code_paths, label_paths = make_data(folder, args.n_db, args.files, args.chunk, args.seed)
        n_bytes = sum(p.stat().st_size for p in code_paths + label_paths)
        queries, query_labels = make_queries(args.n_queries, args.seed)
        ft.evaluate(queries[:4], ft.PackedCodes(np.load(code_paths[0], mmap_mode="r")[:5000].copy().view("<u8"), 64),
                    query_labels[:4], np.load(label_paths[0], mmap_mode="r")[:5000], metrics=metrics)  # compile

        def sharded():
            return (ft.pack_codes([str(p) for p in code_paths], packed=True, n_bits=64, bitorder="little"),
                    [str(p) for p in label_paths])

        if args.cold_queries:
            evict(code_paths + label_paths)
            cached = cached_gib()
            rate, total = read_rate(code_paths + label_paths)
            print(f"cold: page cache {cached:.1f} GiB after dropping the files; a plain sequential read of "
                  f"{total / 1e9:.2f} GB: {rate / 1e6:.0f} MB/s", flush=True)
            evict(code_paths + label_paths)
            database, labels = sharded()
            q = args.cold_queries
            timed_evaluate(f"cold: ft.evaluate, {q} queries x {args.n_db} codes from disk", queries[:q], database,
                           query_labels[:q], labels, metrics, q * args.n_db, n_bytes)
            del database

        first = np.load(code_paths[0], mmap_mode="r")
        first_labels = np.load(label_paths[0], mmap_mode="r")
        n_slice = min(args.slice, len(first))
        in_memory = ft.PackedCodes(np.array(first[:n_slice]).view("<u8"), 64)
        slice_labels = np.array(first_labels[:n_slice])
        best, reference = None, None
        for _ in range(args.repeats):
            reference, rate, load = timed_evaluate(f"in memory: ft.evaluate, {args.n_queries} queries x {n_slice} "
                                                   "codes", queries, in_memory, query_labels, slice_labels, metrics,
                                                   args.n_queries * n_slice)
            best = rate if best is None else max(best, rate)
        del in_memory
        mapped = ft.pack_codes(first[:n_slice], packed=True, n_bits=64, bitorder="little")
        assert np.shares_memory(mapped.words, first)
        sliced, _, _ = timed_evaluate(f"memory-mapped slice: ft.evaluate, {args.n_queries} queries x {n_slice} codes",
                                      queries, mapped, query_labels, first_labels[:n_slice], metrics,
                                      args.n_queries * n_slice)
        print(f"memory-mapped slice vs in memory: {'bitwise identical' if bitwise_equal(sliced, reference) else 'DIFFERENT'}",
              flush=True)
        del mapped, first, first_labels

        database, labels = sharded()
        result, rate, load = timed_evaluate(f"streamed: ft.evaluate, {args.n_queries} queries x {args.n_db} codes in "
                                            f"{args.files} files", queries, database, query_labels, labels, metrics,
                                            args.n_queries * args.n_db, n_bytes * 1, progress=True)
        print(f"streamed / in memory: {rate:.3g} / {best:.3g} code pairs/s = {rate / best:.2f} (target >= 0.7)")
        print("means: " + ", ".join(f"{k} {v:.6f}" for k, v in result.mean.items()), flush=True)
        del database

        n_dask = args.n_queries if args.dask_queries is None else min(args.dask_queries, args.n_queries)
        if n_dask:
            import dask
            import fasttie.dask as ftd
            from distributed import Client, LocalCluster

            with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                              silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
                client.wait_for_workers(args.workers)
                pids = list(client.run(os.getpid).values())
                with dask.config.set(scheduler=client):
                    ftd.evaluate(queries[:2], [str(p) for p in code_paths[:1]], query_labels[:2],
                                 [str(p) for p in label_paths[:1]], metrics=metrics, packed=True, n_bits=64,
                                 bitorder="little")  # warm-up: the workers load the kernels
                    with LoadMeter() as load, PeakAnon(pids) as memory:
                        distributed = ftd.evaluate(queries[:n_dask], [str(p) for p in code_paths],
                                                   query_labels[:n_dask], [str(p) for p in label_paths],
                                                   metrics=metrics, packed=True, n_bits=64, bitorder="little")
                peaks = ", ".join(f"{mib(memory.peak[p])} (from {mib(memory.start[p])})" for p in pids)
                same = bitwise_equal(distributed, result, slice(0, n_dask))
                print(f"dask: {args.workers} workers x 1 thread, {n_dask} queries x {args.n_db} codes: {load.wall:.1f} s, "
                      f"{n_dask * args.n_db / load.wall:.3g} code pairs/s; workers' peak RssAnon {peaks}; "
                      f"others {load.others:.2f} cores; per-query values vs streamed: "
                      f"{'bitwise identical' if same else 'DIFFERENT'}", flush=True)
    finally:
        if not args.keep and folder.exists():
            shutil.rmtree(folder)
            print(f"removed {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
