"""Hardware popcount for numba through LLVM's ``ctpop`` intrinsic, and the Hamming distance of
two codes built on it.

numba has no popcount builtin and ``np.bitwise_count`` is not supported in nopython mode.
LLVM lowers ``ctpop.i64`` to the ``popcnt`` instruction when the host CPU has it (numba
compiles for the host by default); ``python scripts/bench_compile.py --asm`` counts the instructions in every kernel.
"""

import numpy as np
from numba import types
from numba.extending import intrinsic

from ._jit import jit


@intrinsic
def popcount64(typingctx, x):
    """Number of set bits of a uint64 (returns uint64)."""
    if x != types.uint64:
        return None
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen


@jit
def distance(query, db_words, j, n_words):
    """Hamming distance of query and database row j (pass j as uint64: one compiled signature)."""
    d = np.uint64(0)
    for w in range(np.uint64(n_words)):
        d += popcount64(query[w] ^ db_words[j, w])
    return d
