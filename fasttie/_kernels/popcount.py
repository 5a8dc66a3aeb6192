"""Hardware popcount for numba through LLVM's ``ctpop`` intrinsic.

numba has no popcount builtin and ``np.bitwise_count`` is not supported in nopython mode.
LLVM lowers ``ctpop.i64`` to the ``popcnt`` instruction when the host CPU has it (numba
compiles for the host by default); ``python scripts/bench_compile.py --asm`` counts the instructions in every kernel.
"""

from numba import types
from numba.extending import intrinsic


@intrinsic
def popcount64(typingctx, x):
    """Number of set bits of a uint64 (returns uint64)."""
    if x != types.uint64:
        return None
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen
