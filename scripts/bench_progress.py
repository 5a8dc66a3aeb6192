"""Cost of the progress bar: the same ``ft.evaluate`` call with progress=True and progress=False.

    python scripts/bench_progress.py --quick        # smoke size, a few seconds
    python scripts/bench_progress.py                # 4000 queries x 1M database, 64 bits (4+ blocks)

Both variants run on the same packed codes and labels, alternating (False, True, False, True,
...) after a warm-up of each, so drifts in machine load hit both alike.  Reported: the median
time of each, the ratio of medians, the median of the per-round ratios (True / False), and the
blocks the bar used.  The target is a ratio below 1.02 (the bar may cost at most 2%).

The bar is written to stderr as usual; ``--bar-to-null`` sends it to /dev/null instead (the cost
of drawing on a terminal is part of the real overhead, so the default keeps it).
``--block-seconds`` overrides the library's block target (0.5 s of estimated work) to show how
the overhead grows with more, smaller blocks.  Each timed round also reports the CPU used by
other processes meanwhile ("others", in cores, from /proc/stat): near 0 the timings are clean.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from pathlib import Path

import numba

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))  # measure.py
sys.path.insert(1, str(SCRIPTS_DIR.parent))  # the checkout's fasttie over an installed copy

from measure import LoadMeter  # noqa: E402

import fasttie as ft  # noqa: E402
from fasttie.parallel import available_threads  # noqa: E402
from fasttie.hamming import engine as hamming_engine  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-queries", type=int, default=4000)
    p.add_argument("--n-db", type=int, default=1_000_000)
    p.add_argument("--bits", type=int, default=64)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--threads", type=int, default=None, help="numba threads (default: all)")
    p.add_argument("--repeats", type=int, default=7, help="rounds of (False, True)")
    p.add_argument("--metrics", nargs="+", default=["AP", "AP@1000", "nDCG@1000", "P@1000"])
    p.add_argument("--ties", default="average")
    p.add_argument("--block-seconds", type=float, default=None)
    p.add_argument("--bar-to-null", action="store_true")
    p.add_argument("--quick", action="store_true", help="smoke size: 200 queries x 100k database, 3 rounds")
    args = p.parse_args(argv)
    if args.quick:
        args.n_queries, args.n_db, args.repeats = 200, 100_000, 3
    if args.block_seconds is not None:
        hamming_engine._BLOCK_SECONDS = args.block_seconds
    n_threads = args.threads or available_threads()

    queries, database, query_labels, db_labels = ft.datasets.synthetic_hashing(
        args.n_queries, args.n_db, args.bits, args.classes, seed=0
    )
    block = hamming_engine.progress_block(args.n_db, database.words.shape[1], n_threads)
    n_blocks = -(-args.n_queries // block)
    print(
        f"fasttie {ft.__version__}, numba {numba.__version__}: {args.n_queries} queries x {args.n_db} codes, "
        f"{args.bits} bits, {n_threads} thread(s), ties={args.ties}, metrics {' '.join(args.metrics)}"
    )
    print(
        f"progress blocks: {block} queries ({hamming_engine._BLOCK_SECONDS:g} s of estimated work each at "
        f"{hamming_engine._PAIR_WORDS_PER_S:.0e} pair-words/s/thread) -> {n_blocks} block(s)"
    )

    def run(progress):
        with contextlib.ExitStack() as stack:
            if progress and args.bar_to_null:
                stack.enter_context(contextlib.redirect_stderr(stack.enter_context(open(os.devnull, "w"))))
            return ft.evaluate(
                queries, database, query_labels, db_labels, metrics=args.metrics, ties=args.ties,
                n_threads=n_threads, progress=progress,
            )

    reference = run(False)  # warm-up (compile or cache load)
    run(True)
    times = {False: [], True: []}
    ratios = []
    for round_ in range(args.repeats):
        pair = {}
        for progress in (False, True):
            with LoadMeter() as load:
                result = run(progress)
            seconds, others = load.wall, load.others
            assert result.to_dict() == reference.to_dict(), "results differ with progress"
            times[progress].append(seconds)
            pair[progress] = (seconds, others)
        ratios.append(pair[True][0] / pair[False][0])
        print(
            f"round {round_ + 1}: off {pair[False][0]:.4f} s (others {pair[False][1]:.2f})  "
            f"on {pair[True][0]:.4f} s (others {pair[True][1]:.2f})  ratio {ratios[-1]:.4f}",
            flush=True,
        )
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"median off {off:.4f} s, on {on:.4f} s: ratio of medians {on / off:.4f}, median ratio {statistics.median(ratios):.4f}")
    print(f"pairs/s (off): {args.n_queries * args.n_db / off:.3g}; results identical: yes; target ratio < 1.02")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
