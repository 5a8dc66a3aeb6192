"""The stable radix argsorts against numpy's stable argsort."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fasttie._kernels.radix_sort import argsort_ascending, argsort_descending

FINITE = st.floats(allow_nan=False, allow_infinity=True, allow_subnormal=True, width=64)


@given(arrays(np.float64, st.integers(0, 700), elements=FINITE))
def test_matches_numpy_stable(scores):
    np.testing.assert_array_equal(argsort_descending(scores), np.argsort(-scores, kind="stable"))


@pytest.mark.parametrize("n", [0, 1, 2, 32, 33, 255, 256, 257, 1000, 5000])
@pytest.mark.parametrize("distinct", [1, 3, 200, None])
def test_ties_signs_and_zeros(n, distinct):
    rng = np.random.default_rng(n)
    if distinct is None:
        scores = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    else:
        scores = rng.choice(np.linspace(-2, 2, distinct) if distinct > 1 else [0.5], n)
    scores[rng.random(n) < 0.05] = -0.0  # -0.0 ties with 0.0, as == says
    scores[rng.random(n) < 0.05] = 0.0
    order = argsort_descending(scores)
    expected = np.argsort(-(scores + 0.0), kind="stable")
    np.testing.assert_array_equal(order, expected)


@given(arrays(np.int64, st.integers(0, 300), elements=st.integers(-(2**63), 2**63 - 1)))
def test_ascending_int_matches_numpy_stable(values):
    np.testing.assert_array_equal(argsort_ascending(values), np.argsort(values, kind="stable"))


@pytest.mark.parametrize("n", [5, 32, 33, 100, 3000])
def test_ascending_int_ties(n):
    values = np.random.default_rng(n).integers(-3, 3, n)
    np.testing.assert_array_equal(argsort_ascending(values), np.argsort(values, kind="stable"))
