"""fasttie.evaluate(device="cuda") against the CPU path and a torch DeepHash-style evaluation.

    python scripts/bench_gpu.py                              # 10,000 queries x 10M codes, 64/128/256 bits
    python scripts/bench_gpu.py --n-queries 1000 --n-db 1000000 --bits 64

Needs an NVIDIA GPU and ``pip install 'fasttie[cuda]'``; torch (CUDA build) for the torch
baseline (skipped without it). Same seeded codes and class labels for every method, metrics AP,
AP@1000, nDCG@1000 and P@1000 in one call. Reported, per code length:

* fasttie on the GPU: seconds (median of ``--repeats`` after a warm-up that compiles the
  kernel), code pairs per second, and a check that the per-query values are bitwise the CPU's;
* fasttie on the CPU of the same host (``--cpu-queries`` queries, scaled per query): the ratio;
* torch, DeepHash-style: distances ``(n_bits - qB @ rB.T) / 2`` of ±1 codes, ``argsort`` per query,
  mAP@1000 in a Python loop over query blocks (``--torch-queries``): its codes are on the GPU before
  the clock starts, so the ratio is given to both fasttie calls, the one that uploads a numpy
  database ("vs torch") and the one whose database is already on the GPU ("resident", like for
  like) (target >= 20x);
* the popcount roofline: pairs/s against the GPU's 32-bit popcount rate (SM count x clock x 16
  ``POPC`` per SM per clock on recent NVIDIA parts, i.e. n_bits / 32 popcounts per pair).

Also: the same call with the database already on the GPU ("resident"), the histogram pass
alone ("kernel" pairs/s, against the roofline), ``ties="stable"`` over ``ties="average"`` with
the cutoff metrics (the bounded rank pass), and ``ft.search(k=100)``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fasttie as ft  # noqa: E402
from fasttie import _device  # noqa: E402
from fasttie.hamming import gpu as ft_cuda  # noqa: E402

METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000")


def _median_seconds(call, repeats):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _torch_pm1(words, n_bits, device):
    """±1 float32 codes on the GPU from packed uint64 words (bit b of word w is column 64 w + b)."""
    import torch

    packed = torch.as_tensor(words.view(np.int64), device=device)
    shifts = torch.arange(64, device=device, dtype=torch.int64)
    bits = (packed[:, :, None] >> shifts) & 1
    return (2.0 * bits.reshape(len(words), -1)[:, :n_bits].float() - 1.0).contiguous()


def _torch_map_at(q, db, query_labels, db_labels, k, device):
    """DeepHash-style mAP@k on ±1 tensors: matmul distances, argsort, AP over the relevant retrieved."""
    import torch

    ql = torch.as_tensor(query_labels, device=device)
    dl = torch.as_tensor(db_labels, device=device)
    n_bits = q.shape[1]
    aps = []
    for lo in range(0, q.shape[0], 64):
        distance = 0.5 * (n_bits - q[lo:lo + 64] @ db.T)
        top = torch.argsort(distance, dim=1)[:, :k]
        match = (dl[top] == ql[lo:lo + 64, None]).float()
        hits = match.cumsum(dim=1)
        ranks = torch.arange(1, k + 1, device=device, dtype=torch.float32)
        found = match.sum(dim=1)
        aps.append((match * hits / ranks).sum(dim=1) / found.clamp(min=1))
    torch.cuda.synchronize()
    return float(torch.cat(aps).mean())


def _roofline(n_bits):
    """Pairs per second the GPU's popcount units allow (or None without device details)."""
    try:
        from numba import cuda

        device = cuda.get_current_device()
        sms = device.MULTIPROCESSOR_COUNT
        clock_hz = device.CLOCK_RATE * 1e3
    except Exception:  # simulator, or attributes this numba-cuda does not expose
        return None
    popcounts_per_second = sms * clock_hz * 16
    return popcounts_per_second / max(1, -(-n_bits // 32))


def _kernel_seconds(queries, database, query_labels, db_labels, repeats):
    """The histogram pass alone (per-split counts and their sum), synchronized."""
    from numba import cuda

    from fasttie.relevance import make_relevance

    spec = make_relevance(query_labels, db_labels, None, queries.n, database.n)
    device = ft_cuda._Pass(database, spec, database.n_bits)
    arrays = device.query_arrays(queries.words, spec)

    def run():
        device.counts(arrays, spec, queries.n)
        cuda.synchronize()

    run()
    return _median_seconds(run, repeats)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-queries", type=int, default=10_000)
    parser.add_argument("--n-db", type=int, default=10_000_000)
    parser.add_argument("--bits", default="64,128,256")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpu-queries", type=int, default=500, help="queries timed on the CPU (scaled)")
    parser.add_argument("--torch-queries", type=int, default=1000, help="queries timed with torch (scaled)")
    args = parser.parse_args(argv)
    if not _device.available():
        print("no GPU found by numba-cuda (pip install 'fasttie[cuda]' on a machine with an NVIDIA GPU)")
        return 1
    print(f"command: python scripts/bench_gpu.py --n-queries {args.n_queries} --n-db {args.n_db} --bits {args.bits}")
    try:
        from numba import cuda

        name = cuda.get_current_device().name
        print(f"GPU: {name.decode() if isinstance(name, bytes) else name}")
    except Exception:  # the simulator has no name
        print("GPU: (unknown: numba-cuda's simulator?)")
    rows = []
    for n_bits in (int(b) for b in args.bits.split(",")):
        queries, database, query_labels, db_labels = ft.datasets.synthetic_hashing(
            args.n_queries, args.n_db, n_bits, 10, flip=0.25, seed=0)
        def gpu():
            return ft.evaluate(queries, database, query_labels, db_labels, metrics=METRICS, device="cuda")

        first = gpu()
        gpu_s = _median_seconds(gpu, args.repeats)
        from numba import cuda as numba_cuda

        on_device = ft.PackedCodes(numba_cuda.to_device(database.words), n_bits)

        def resident():
            return ft.evaluate(queries, on_device, query_labels, db_labels, metrics=METRICS, device="cuda")

        resident()
        resident_s = _median_seconds(resident, args.repeats)
        kernel_s = _kernel_seconds(queries, on_device, query_labels, db_labels, args.repeats)
        cut = METRICS[1:]  # stable ties: the metrics with cutoffs (the bounded rank pass)
        def stable(ties):
            return ft.evaluate(queries, on_device, query_labels, db_labels, metrics=cut, ties=ties, device="cuda")

        stable("stable")
        stable_ratio = _median_seconds(lambda: stable("stable"), args.repeats) / _median_seconds(
            lambda: stable("average"), args.repeats)
        search_s = _median_seconds(lambda: ft.search(queries, on_device, k=100, device="cuda"), 1)
        pairs_per_s = args.n_queries * args.n_db / gpu_s
        m = min(args.cpu_queries, args.n_queries)
        sub = ft.pack_codes(ft.unpack_codes(queries)[:m])
        cpu_call = lambda: ft.evaluate(sub, database, query_labels[:m], db_labels, metrics=METRICS)  # noqa: E731
        cpu_result = cpu_call()
        cpu_s = _median_seconds(cpu_call, 1) * args.n_queries / m
        bitwise = all(np.array_equal(first.per_query[k][:m], cpu_result.per_query[k]) for k in METRICS)
        torch_ratio = torch_resident = None
        try:
            import torch

            if torch.cuda.is_available():
                t = min(args.torch_queries, args.n_queries)
                q_pm1 = _torch_pm1(queries.words[:t], n_bits, "cuda")
                db_pm1 = _torch_pm1(database.words, n_bits, "cuda")
                _torch_map_at(q_pm1[:64], db_pm1, query_labels[:64], db_labels, 1000, "cuda")  # warm-up
                started = time.perf_counter()
                _torch_map_at(q_pm1, db_pm1, query_labels[:t], db_labels, 1000, "cuda")
                torch_s = (time.perf_counter() - started) * args.n_queries / t
                torch_ratio, torch_resident = torch_s / gpu_s, torch_s / resident_s
                del q_pm1, db_pm1
                torch.cuda.empty_cache()
        except ImportError:
            pass
        roof = _roofline(n_bits)
        kernel_pps = args.n_queries * args.n_db / kernel_s
        rows.append((n_bits, gpu_s, resident_s, pairs_per_s, kernel_pps, cpu_s / gpu_s, torch_ratio, torch_resident,
                     None if roof is None else kernel_pps / roof, stable_ratio, search_s, bitwise))
        print(rows[-1], flush=True)
    print(f"{'bits':>5} {'GPU s':>7} {'resident':>8} {'pairs/s':>8} {'kernel':>8} {'vs CPU':>7} {'vs torch':>9} "
          f"{'resident':>9} {'roofline':>8} {'stable/avg':>10} {'kNN100 s':>8} bitwise")
    for n_bits, gpu_s, resident_s, pps, kpps, vs_cpu, vs_torch, vs_torch_res, roof, st, knn_s, bitwise in rows:
        print(f"{n_bits:>5} {gpu_s:7.3f} {resident_s:8.3f} {pps / 1e9:7.0f}G {kpps / 1e9:7.0f}G {vs_cpu:6.1f}x "
              f"{'-' if vs_torch is None else f'{vs_torch:.0f}x':>9} "
              f"{'-' if vs_torch_res is None else f'{vs_torch_res:.0f}x':>9} "
              f"{'-' if roof is None else f'{roof:.2f}':>8} "
              f"{st:10.2f} {knn_s:8.3f} {bitwise}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
