"""Which histogram pass runs: bit-sliced counting (:mod:`.bitsliced`) on CPUs with AVX-512
VPOPCNTDQ, the portable pass (:mod:`.histogram`) elsewhere.

The CPU's features are what LLVM reports for the host, the machine numba compiles for. The
environment variable ``FASTTIE_KERNEL`` forces a pass: ``portable``, ``bitsliced`` (on any CPU:
LLVM then splits its vectors into what the CPU has, the same counts, slower) or ``auto`` (the
default). Both passes give bitwise the same counts; tests run each.
"""

import functools
import os

from ..errors import InputError

CHOICES = ("auto", "portable", "bitsliced")
# what the bit-sliced pass needs in one instruction: 512-bit logic, shifts and ternary logic
# (AVX-512 F) and the vector popcount (VPOPCNTDQ)
_NEEDS = ("avx512f", "avx512vpopcntdq")


@functools.cache
def host_features() -> frozenset:
    """The CPU features LLVM reports for this host (those set)."""
    import llvmlite.binding as llvm

    return frozenset(name for name, present in llvm.get_host_cpu_features().items() if present)


def host_has_avx512() -> bool:
    """Whether this CPU runs the bit-sliced pass natively (AVX-512 F and VPOPCNTDQ)."""
    return all(feature in host_features() for feature in _NEEDS)


@functools.cache
def target_has_avx512() -> bool:
    """Whether numba compiles for a CPU with AVX-512 F and VPOPCNTDQ: the host, unless
    ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` name another target (a cache built for other
    machines). :mod:`.simd` emits AVX-512 instructions by name only then."""
    import numba

    if numba.config.CPU_NAME:
        features = {f[1:] for f in (numba.config.CPU_FEATURES or "").split(",") if f.startswith("+")}
        return all(feature in features for feature in _NEEDS)
    return host_has_avx512()


def kernel_choice() -> str:
    """``FASTTIE_KERNEL``, validated: "auto", "portable" or "bitsliced"."""
    value = os.environ.get("FASTTIE_KERNEL", "").strip().lower() or "auto"
    if value not in CHOICES:
        raise InputError(f"FASTTIE_KERNEL must be one of {CHOICES}, got {value!r}")
    return value


def bitsliced_pass() -> bool:
    """Whether the histogram pass counts bit-sliced (forced, or auto on AVX-512)."""
    choice = kernel_choice()
    return choice == "bitsliced" or (choice == "auto" and host_has_avx512())


def bitsliced_codes(n_words) -> bool:
    """Whether codes of ``n_words`` 64-bit words are counted bit-sliced (the pass takes one and
    two words; wider codes go the portable way)."""
    return n_words <= 2 and bitsliced_pass()
