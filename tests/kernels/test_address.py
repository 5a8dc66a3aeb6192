"""fasttie._kernels.address: a kernel called through its address computes what the linked call
computes, and a caller whose arguments are not the callee's declared types does not compile
(never a call with the wrong types)."""

import json
import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba import types
from numba.core.errors import TypingError

from fasttie._kernels.address import address_of, caller_of, declare, declared
from helpers import COMPILE_COUNTER


@numba.njit
def _scaled_sums(values, factor, out, row):
    """out[row] = factor * (sum of values); raises on a negative factor."""
    if factor < 0:
        raise ValueError("negative factor")
    total = 0.0
    for v in values:
        total += v
    out[row] = factor * total


_ARGS = (types.float64[::1], types.float64, types.float64[::1], types.int64)
declare(_scaled_sums, _ARGS)
_call_scaled_sums = caller_of(_ARGS, "_scaled_sums")


@numba.njit
def _through_address(address, values, factors, out):
    for row in range(out.shape[0]):
        _call_scaled_sums(address, (values[row], factors[row], out, np.int64(row)))


@numba.njit
def _linked(values, factors, out):
    for row in range(out.shape[0]):
        _scaled_sums(values[row], factors[row], out, np.int64(row))


def test_a_call_through_the_address_computes_what_the_linked_call_computes():
    rng = np.random.default_rng(0)
    values, factors = rng.random((5, 40)), rng.random(5)
    through, linked = np.zeros(5), np.zeros(5)
    _through_address(np.uint64(address_of(_scaled_sums)), values, factors, through)
    _linked(values, factors, linked)
    assert through.tobytes() == linked.tobytes()
    assert declared(_scaled_sums) == _ARGS
    # the callee compiled once, for the declared types (which the linked call has too)
    assert len(_scaled_sums.signatures) == 1


def test_an_exception_in_the_callee_reaches_the_caller():
    with pytest.raises(ValueError, match="negative factor"):
        _through_address(np.uint64(address_of(_scaled_sums)), np.ones((2, 3)), np.array([1.0, -1.0]), np.zeros(2))


def test_a_caller_of_other_argument_types_does_not_compile():
    @numba.njit
    def wrong_dtype(address, values, out):
        _call_scaled_sums(address, (values, 2.0, out, np.int64(0)))

    with pytest.raises(TypingError, match="_scaled_sums through its address takes"):
        wrong_dtype(np.uint64(0), np.ones(3, dtype=np.float32), np.zeros(1))

    @numba.njit
    def strided(address, values, out):
        _call_scaled_sums(address, (values[::2], 2.0, out, np.int64(0)))  # not contiguous: cannot be passed

    with pytest.raises(TypingError, match="_scaled_sums through its address takes"):
        strided(np.uint64(0), np.ones(6), np.zeros(1))


_FIRST_CALL = r"""
import numpy as np
from fasttie._kernels.finalize import finalize_ranked, N_QUANTITIES, N_SCALARS
from fasttie.finalize.values import read_only
ints, floats, flags = np.ones(2, dtype=np.int64), np.ones(2), np.ones(2, dtype=np.bool_)
finalize_ranked(np.array([1, 2]), floats, floats, flags, flags, 5, np.bool_(True), 0, 3, floats, ints,
                read_only(np.array([1, 5])), read_only(np.zeros(2)), read_only(np.zeros(6)), 0,
                np.zeros((N_QUANTITIES, 2)), np.zeros(N_SCALARS))
"""

_BY_ADDRESS = COMPILE_COUNTER + r"""
from fasttie._kernels.address import address_of
from fasttie._kernels.finalize import finalize_ranked
address_of(finalize_ranked)
print("RESULT " + json.dumps(compiled))
"""


def test_a_kernel_cached_by_a_call_is_loaded_by_its_address_in_another_process(tmp_path):
    # numba files a kernel in its cache under the argument types of the compile: the address must
    # be taken under the key a call (or a caller's linked call) files it, or every process compiles again
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    env.pop("FASTTIE_NO_CACHE", None)
    for script in (_FIRST_CALL, _BY_ADDRESS):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.split("RESULT ", 1)[1]) == []
