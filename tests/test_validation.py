"""fasttie.validation: the checks every front door shares. Numeric arrays pass through as numpy
reads them and anything else is refused naming the argument; the first non-finite value is the
one a plain scan finds (also where finite values overflow the sum); the mean of kept values is
the plain mean of the non-NaN ones; the empty policy raises only for "error"; ERR refuses grades
above 4, naming where and the argument."""

import math

import numpy as np
import pytest

from fasttie.validation import check_empty_policy, check_err_grades, first_not_finite, mean_of_kept, numeric_array


@pytest.mark.parametrize("values", [[1, 2], [True, False], np.arange(3, dtype=np.uint8), [[0.5, -1.0]], np.float32(2)])
def test_numeric_arrays_pass_through(values):
    array = numeric_array(values, "y")
    assert np.array_equal(array, np.asarray(values)) and array.dtype == np.asarray(values).dtype


@pytest.mark.parametrize("values, fragment", [(["a", "b"], "dtype <U1"), ([{}, 1], "dtype object"),
                                              ([1 + 2j], "must be real, got dtype complex128"),
                                              (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime64")])
def test_other_dtypes_are_refused_naming_the_argument(values, fragment):
    with pytest.raises(TypeError, match=r"^y_true must be "):
        numeric_array(values, "y_true", "a numeric matrix")
    with pytest.raises(TypeError) as error:
        numeric_array(values, "y_true", "a numeric matrix")
    assert fragment in str(error.value)


@pytest.mark.parametrize("seed", range(20))
def test_first_not_finite_as_a_scan_finds_it(seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(int(rng.integers(1, 50))) * 10.0 ** rng.integers(0, 308)
    for _ in range(int(rng.integers(0, 3))):
        values[rng.integers(0, len(values))] = rng.choice([np.nan, np.inf, -np.inf])
    if seed % 4 == 0:
        values[:] = 1e308  # finite values whose sum overflows
    expected = next((i for i, v in enumerate(values.tolist()) if not math.isfinite(v)), None)
    assert first_not_finite(values) == expected


@pytest.mark.parametrize("seed", range(10))
def test_mean_of_kept(seed):
    rng = np.random.default_rng(seed)
    values = rng.random(int(rng.integers(0, 20)))
    values[rng.random(len(values)) < 0.4] = np.nan
    kept = [v for v in values.tolist() if not math.isnan(v)]
    if kept:
        assert mean_of_kept(values) == pytest.approx(math.fsum(kept) / len(kept), rel=1e-15)
    else:
        assert math.isnan(mean_of_kept(values))


def test_empty_policy():
    for policy in ("zero", "skip", "one", "skip_missed"):
        check_empty_policy(policy, 3, 10)
    check_empty_policy("error", 0, 10)
    with pytest.raises(ValueError, match=r"^3 of 10 queries have no relevant item; choose empty='zero', 'skip' or "
                                         r"'one' \(or 'skip_missed' for evaluate\)$"):
        check_empty_policy("error", 3, 10)
    with pytest.raises(ValueError, match=r"^1 of 2 queries have no relevant subtopic; choose empty='zero', 'skip' or "
                                         r"'one'$"):
        check_empty_policy("error", 1, 2, "relevant subtopic")


@pytest.mark.parametrize("grade", [0, 1, 3.5, 4, 4.0, np.float32(4)])
def test_err_takes_grades_up_to_four(grade):
    check_err_grades(grade, "unused", "y_true")


@pytest.mark.parametrize("grade", [4.000001, 5, 16.0])
def test_err_refuses_larger_grades_naming_where_and_the_argument(grade):
    with pytest.raises(ValueError) as error:
        check_err_grades(grade, "{y_true} has a grade above 4 at row 3", "y_true")
    assert error.value.argument == "y_true" and error.value.fix == "map the grades into 0..4 first"
    assert error.value.render({"y_true": "--qrels"}).startswith("ERR takes grades 0..4")
    assert "--qrels has a grade above 4 at row 3; map the grades into 0..4 first" in error.value.render(
        {"y_true": "--qrels"})
