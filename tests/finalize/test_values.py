"""fasttie.finalize.values: the helpers between the finalizer and the values. The discount table is the
prefix sums of 1/log2(1 + i) (math.fsum), gains are 2^g - 1 or g, a division by zero gives 0, the
finalizer's columns are the sorted cutoffs asked (one per RBP persistence), group sizes are
checked, and the empty policy sets exactly the empty queries of the metrics it concerns."""

import math

import numpy as np
import pytest

from fasttie.metrics import parse_metrics
from fasttie.finalize.values import (WHOLE_LIST, _column_of, apply_empty, check_options, cutoff_list, dcg_depth, discount_table,
                             divide, gain_table, group_sizes, read_only, reads_ratio)


@pytest.mark.parametrize("n", [0, 1, 5, 1000, 5000])
def test_discount_prefix_sums(n):
    table = discount_table(n)
    expected = [0.0] + [math.fsum(1 / math.log2(1 + i) for i in range(1, j + 1)) for j in range(1, n + 1)]
    assert len(table) == n + 1
    assert np.allclose(table, expected, rtol=1e-14, atol=0)
    if n >= 3:  # a shorter request is a prefix of the cached table
        assert np.array_equal(discount_table(3), table[:4])


@pytest.mark.parametrize("n_grades", [2, 5, 63])
def test_gains(n_grades):
    assert gain_table("exp2", n_grades).tolist() == [float(2**g - 1) for g in range(n_grades)]
    assert gain_table("linear", n_grades).tolist() == [float(g) for g in range(n_grades)]
    assert gain_table("exp2", n_grades).dtype == np.float64


def test_divide():
    rng = np.random.default_rng(0)
    num, den = rng.random(50), rng.integers(0, 3, 50).astype(float)
    expected = [a / b if b else 0.0 for a, b in zip(num.tolist(), den.tolist())]
    assert divide(num, den).tolist() == expected
    assert divide(num, 2.0).tolist() == (num / 2).tolist()


def test_read_only():
    source = np.arange(12).reshape(3, 4)[:, ::2]  # not contiguous
    view = read_only(source)
    assert view.flags.c_contiguous and not view.flags.writeable and np.array_equal(view, source)
    assert source.flags.writeable  # the caller's array is untouched


@pytest.mark.parametrize("seed", range(10))
def test_columns_are_the_sorted_cutoffs(seed):
    rng = np.random.default_rng(seed)
    pool = ["AP", "P@5", "nDCG@10", "R@3", "RBP(p=0.5)@10", "RBP(p=0.9)@10", "RBP(p=0.8)", "AP@100", "P(radius=2)",
            "RR", "nDCG@5", "RBP(p=0.5)@3"]
    metrics = parse_metrics([str(n) for n in rng.choice(pool, int(rng.integers(1, 8)), replace=False)])
    cutoffs, log_p = cutoff_list(metrics)
    # one column per (cutoff, persistence) pair asked; metrics without RBP share their cutoff's first column
    wanted = {}
    for m in metrics:
        if m.radius is None:
            wanted.setdefault(WHOLE_LIST if m.k is None else m.k, set()).update({m.p} if m.p is not None else set())
    expected = [(k, p) for k in sorted(wanted) for p in (sorted(wanted[k]) or [None])]
    assert cutoffs.tolist() == [k for k, _ in expected]
    columns = _column_of(metrics)
    for m in metrics:
        if m.radius is None:
            column = columns[m.name]
            assert cutoffs[column] == (WHOLE_LIST if m.k is None else m.k)
            if m.p is not None:
                assert math.exp(log_p[column]) == pytest.approx(m.p, rel=1e-15)


def test_dcg_depth():
    assert dcg_depth(parse_metrics(["nDCG@5", "DCG@20", "P@100"]), 50) == 20
    assert dcg_depth(parse_metrics(["nDCG", "P@100"]), 50) == 50
    assert dcg_depth(parse_metrics(["AP"]), 50) == 1
    assert dcg_depth(parse_metrics(["nDCG@500"]), 50) == 50


def test_group_sizes():
    assert group_sizes(None, 7).tolist() == [7]
    assert group_sizes([3, 4], 7).dtype == np.int64
    for group, error, fragment in [([3, 3], ValueError, "sum to 6 but y_true has 7 rows"),
                                   ([7, 0], ValueError, "query 1 is empty"), ([3.0, 4.0], TypeError, "integer"),
                                   ([[7]], TypeError, "1-D"), ([True] * 7, TypeError, "integer")]:
        with pytest.raises(error, match=fragment):
            group_sizes(np.array(group), 7)


def test_check_options():
    check_options(ties="average", tie_modes=("average", "stable"), gain="exp2", empty="skip")
    with pytest.raises(ValueError, match=r"ties must be one of \('average', 'stable'\), got 'trec'"):
        check_options(ties="trec", tie_modes=("average", "stable"))
    with pytest.raises(TypeError, match="gain must be a string"):
        check_options(ties="average", tie_modes=("average",), gain=2)
    with pytest.raises(ValueError, match="empty must be one of"):
        check_options(ties="average", tie_modes=("average",), empty="none")


@pytest.mark.parametrize("empty", ["zero", "one", "skip", "skip_missed", "error"])
@pytest.mark.parametrize("name", ["AP", "P@5", "NumRet", "nDCG@3", "Judged@5"])
def test_empty_policy_sets_the_empty_queries(empty, name):
    rng = np.random.default_rng(len(name))
    (metric,) = parse_metrics([name])
    values = rng.random(9)
    is_empty = rng.random(9) < 0.4
    is_empty[0] = True
    out = apply_empty(values, metric, is_empty, empty)
    assert np.array_equal(out[~is_empty], values[~is_empty])  # the others untouched
    kept = name.startswith(("NumRet", "Judged"))  # a count or a share of the judgments stands
    if empty in ("skip", "skip_missed"):
        expected = np.nan
    elif kept:
        expected = None
    elif empty == "one" and name in ("AP", "nDCG@3"):  # 0/0 metrics
        expected = 1.0
    else:
        expected = 0.0
    if expected is None:
        assert np.array_equal(out, values)
    else:
        assert np.array_equal(out[is_empty], np.full(is_empty.sum(), expected), equal_nan=True)


@pytest.mark.parametrize("name", ["AP@5", "WAP@5", "GMAP@5", "AP", "nDCG@5", "P@5", "RR@5"])
@pytest.mark.parametrize("ap_denominator", ["retrieved", "total", "min"])
def test_reads_ratio_below_the_end_of_the_list_only(name, ap_denominator):
    """AP@k over the retrieved relevant items reads the tie walk's ratio exactly where k is below
    the list's end, per query and for one length; every other metric and denominator never."""
    (metric,) = parse_metrics([name])
    n_items = np.array([1, 4, 5, 6, 1000])
    over_retrieved = name.split("@")[0] in ("AP", "WAP", "GMAP") and "@" in name and ap_denominator == "retrieved"
    expected = np.array([over_retrieved and 5 < n for n in n_items])
    np.testing.assert_array_equal(reads_ratio(metric, ap_denominator, n_items), expected)
    assert all(reads_ratio(metric, ap_denominator, int(n)) == e for n, e in zip(n_items, expected))
