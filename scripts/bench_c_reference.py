"""fasttie's histogram pass against C reference kernels, in one process, one thread.

    python scripts/bench_c_reference.py                      # 64 queries x 1M codes, 64/128/256 bits
    python scripts/bench_c_reference.py --bits 256 --n-db 200000

Builds ``scripts/c_reference/hist_pass.c`` with the system C compiler (``$CC``, else ``cc``;
``-O3 -march=native``, one shared library per code width) into a temporary folder and loads it
with ctypes. On the same seeded class-correlated codes it times, best of ``--repeats``:

* fasttie: the portable histogram pass (the one-word pass, the tiled pass from two words on, as
  ``evaluate`` runs them without AVX-512), here without classes (every item counts as grade 0),
  serial, as one thread runs it;
* C ``hist_pairs_scalar``: queries in pairs, scalar popcnt;
* C ``hist_tiled_avx2``: tiles in word-major order, vpshufb popcount of four codes per vector
  (skipped where the build has no AVX2).

Every kernel's counts are checked against fasttie's before a time is reported. Ratios are
fasttie pairs/s over the C kernel's (> 1: fasttie faster). Exits with a message where no C
compiler is found.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))
sys.path.insert(1, str(SCRIPTS_DIR.parent))
sys.path.insert(2, str(SCRIPTS_DIR.parent / "asv_bench"))  # benchmarks.data: seeded data and baselines, shared with asv

from measure import Table, best_of, cpu_model, parse_int_list  # noqa: E402
from benchmarks.data.synthetic import make_hashing_data  # noqa: E402

SOURCE = SCRIPTS_DIR / "c_reference" / "hist_pass.c"


def build(cc: str, n_words: int, folder: str) -> ctypes.CDLL:
    """The C kernels for codes of n_words words, as a loaded shared library."""
    library = os.path.join(folder, f"hist_pass_{n_words}.so")
    command = [cc, "-O3", "-march=native", "-shared", "-fPIC", f"-DWORDS={n_words}", str(SOURCE), "-o", library]
    subprocess.run(command, check=True)
    lib = ctypes.CDLL(library)
    pointer = ctypes.c_void_p
    for name in ("hist_pairs_scalar", "hist_tiled_avx2"):
        getattr(lib, name).argtypes = [pointer, pointer, ctypes.c_int64, ctypes.c_int64, pointer]
    lib.hist_pairs_scalar.restype = None
    lib.hist_tiled_avx2.restype = ctypes.c_int
    return lib


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-queries", type=int, default=64, help="queries (even)")
    p.add_argument("--n-db", type=int, default=1_000_000)
    p.add_argument("--bits", default="64,128,256", help="comma list of code widths (multiples of 64)")
    p.add_argument("--repeats", type=int, default=3, help="calls per kernel (best reported)")
    args = p.parse_args(argv)
    bits_list = parse_int_list(args.bits)
    if args.n_queries < 2 or args.n_queries % 2 or any(b <= 0 or b % 64 for b in bits_list):
        p.error("--n-queries must be even and >= 2, --bits multiples of 64")
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc) is None:
        print(f"no C compiler found ({cc!r}); set CC to one to run this benchmark")
        return 1

    from fasttie._kernels.histogram import hist_classes_tiled, hist_segments_one_word, run_tiled

    print(f"CPU: {cpu_model()}; {args.n_queries} queries x {args.n_db} codes, one thread, best of {args.repeats}")
    table = Table(["bits", "kernel", "pairs/s", "fasttie / kernel"])
    with tempfile.TemporaryDirectory() as folder:
        for n_bits in bits_list:
            data = make_hashing_data(args.n_queries, args.n_db, n_bits)
            queries, db = np.ascontiguousarray(data.query_words), np.ascontiguousarray(data.db_words)
            segments = np.zeros((args.n_queries, 2), dtype=np.int64)  # one word: no relevant segment
            no_class, no_ids = np.full(args.n_queries, -1, dtype=np.int32), np.zeros(0, dtype=np.int32)
            for array in (queries, db, segments, no_class, no_ids):
                array.setflags(write=False)  # as evaluate passes them: the cached kernel
            n_dist = n_bits + 1
            hist = np.zeros((args.n_queries, n_dist, 2), dtype=np.int64)

            def fasttie_pass():
                hist[:] = 0
                if db.shape[1] == 1:
                    hist_segments_one_word(queries, db, segments, n_bits, hist, 0, args.n_queries)
                else:
                    run_tiled(hist_classes_tiled, queries, no_class, db, no_ids, 0, n_bits, hist, 0, args.n_queries)

            fasttie_pass()  # compile or load from the cache
            expected = hist[:, :, 0].copy()
            pairs = args.n_queries * args.n_db
            fasttie_rate = pairs / best_of(fasttie_pass, args.repeats)[0]
            table.add(n_bits, "fasttie portable pass", f"{fasttie_rate / 1e9:.3f} G", "1.00")
            lib = build(cc, db.shape[1], folder)
            out = np.zeros((args.n_queries, n_dist), dtype=np.int64)
            q_ptr, db_ptr, out_ptr = queries.ctypes.data, db.ctypes.data, out.ctypes.data
            for name in ("hist_pairs_scalar", "hist_tiled_avx2"):
                kernel = getattr(lib, name)

                def c_pass(kernel=kernel):
                    out[:] = 0
                    return kernel(q_ptr, db_ptr, args.n_db, args.n_queries, out_ptr)

                if not c_pass() and name == "hist_tiled_avx2":
                    table.add(n_bits, f"C {name}", "no AVX2", "-")
                    continue
                if not np.array_equal(out, expected):
                    raise SystemExit(f"C {name} at {n_bits} bits counts differently from fasttie")
                rate = pairs / best_of(c_pass, args.repeats)[0]
                table.add(n_bits, f"C {name}", f"{rate / 1e9:.3f} G", f"{fasttie_rate / rate:.2f}")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
