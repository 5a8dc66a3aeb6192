"""What ``compare`` adds beside its tests: Benjamini-Hochberg's correction (against
``scipy.stats.false_discovery_control``), paired bootstrap intervals of each difference and of
each method's mean (against ``scipy.stats.bootstrap`` with the same generator, and within Monte
Carlo error of the exact bootstrap distribution, enumerated), and the exact range of each mean
difference over every pair of tie orders (against enumeration of every pair of tie orders of
both methods on small cases, and a planted case that the grade orders miss)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

import fasttie as ft
from fasttie.significance import adjust_pvalues, bootstrap_interval, compare
from oracle import orderings, plain_metric


@given(st.lists(st.floats(1e-9, 1), min_size=1, max_size=12))
def test_benjamini_hochberg_is_scipys(pvalues):
    np.testing.assert_allclose(adjust_pvalues(pvalues, "bh"), stats.false_discovery_control(pvalues, method="bh"),
                               rtol=1e-12)


def test_benjamini_hochberg_leaves_nan_out_of_the_family():
    got = adjust_pvalues([0.01, np.nan, 0.04, 0.03], "bh")
    np.testing.assert_allclose(got[[0, 2, 3]], stats.false_discovery_control([0.01, 0.04, 0.03]), rtol=1e-15)
    assert np.isnan(got[1])


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_bootstrap_interval_is_scipys_with_the_same_generator(method):
    values = np.random.default_rng(5).normal(0.1, 0.3, 40)
    expected = stats.bootstrap((values,), np.mean, n_resamples=2000, confidence_level=0.9,
                               method="BCa" if method == "bca" else "percentile",
                               rng=np.random.default_rng(11)).confidence_interval
    got = bootstrap_interval(values, method=method, n_resamples=2000, confidence=0.9, seed=11)
    assert got == pytest.approx((expected.low, expected.high), rel=1e-12)


def test_percentile_interval_within_monte_carlo_error_of_the_enumerated_bootstrap():
    """Five values: every one of the 5**5 resamples (equally likely) enumerated gives the exact
    distribution of the resampled mean; the interval's ends lie between its quantiles at
    q -/+ 4 standard errors of a quantile estimated from n_resamples draws."""
    values = np.array([0.0, 0.1, 0.25, 0.6, 1.0])
    means = np.sort([np.mean(values[list(pick)]) for pick in itertools.product(range(5), repeat=5)])
    n_resamples = 40000
    low, high = bootstrap_interval(values, method="percentile", n_resamples=n_resamples, confidence=0.9, seed=3)
    for end, q in ((low, 0.05), (high, 0.95)):
        margin = 4 * np.sqrt(q * (1 - q) / n_resamples)
        assert np.quantile(means, q - margin) - 1e-12 <= end <= np.quantile(means, q + margin) + 1e-12


def test_bootstrap_interval_edges():
    assert bootstrap_interval([0.3, 0.3, 0.3]) == (0.3, 0.3)  # every resample has this mean
    assert all(np.isnan(bootstrap_interval([0.3])))
    with pytest.raises(ValueError, match="bootstrap must be"):
        bootstrap_interval([0.1, 0.2], method="basic")
    with pytest.raises(ValueError, match="n_resamples"):
        compare(_two_methods(), n_resamples=0)


def _two_methods():
    rng = np.random.default_rng(2)
    per_query = {name: {"AP": rng.random(30)} for name in ("x", "y")}
    per_query["x"]["AP"][3] = np.nan  # a skipped query: left out of the pair and of x's interval
    return {name: ft.Result({"AP": float(np.nanmean(v["AP"]))}, v, 30, 0) for name, v in per_query.items()}


def test_compare_bootstraps_the_paired_differences_and_each_mean():
    results = _two_methods()
    c = compare(results, seed=4, n_resamples=3000, bootstrap="percentile", confidence=0.9)
    (test,) = c.tests
    x, y = results["x"].per_query["AP"], results["y"].per_query["AP"]
    both = ~np.isnan(x)
    options = {"method": "percentile", "n_resamples": 3000, "confidence": 0.9, "seed": 4}
    assert (test["boot_low"], test["boot_high"]) == bootstrap_interval(x[both] - y[both], **options)
    assert c.intervals["x"]["AP"] == bootstrap_interval(x[both], **options)
    assert c.intervals["y"]["AP"] == bootstrap_interval(y, **options)
    assert test["boot_low"] < test["mean_diff"] < test["boot_high"]
    frame = c.to_frame(pairs=True)
    assert list(frame[["boot_low", "boot_high"]].iloc[0]) == [test["boot_low"], test["boot_high"]]
    assert c.to_dict()["intervals"]["y"]["AP"] == list(c.intervals["y"]["AP"])
    assert "boot_low" not in compare(results, bootstrap=None).tests[0]
    assert compare(results, bootstrap=None).intervals == {"x": {}, "y": {}}


def _scores_of(grades, rng):
    """Scores with ties: 1 to 3 distinct values over a list."""
    return rng.integers(0, rng.integers(1, 4), len(grades)).astype(float)


def _every_value(grades, scores, metric):
    """The metric of every tie order of one list (ties: equal scores), by enumeration."""
    return [float(plain_metric(order, metric)) for order in orderings(-scores, grades)]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_flip_interval_is_the_range_over_every_pair_of_tie_orders(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 5, 2)  # two queries
    grades = rng.integers(0, 3, int(sizes.sum()))
    for start in np.cumsum(sizes) - sizes:
        grades[start] = max(grades[start], 1)  # a relevant item in every query
    metrics = ["AP", "AP@2", "nDCG@3", "P@2", "RR"]
    scores = {name: _scores_of(grades, rng) for name in ("a", "b")}
    results = {name: ft.rank_evaluate(grades, s, sizes, metrics=metrics, ap_denominator="retrieved", gain="exp2",
                                        spread="range")
               for name, s in scores.items()}
    c = compare(results, bootstrap=None)
    bounds = np.cumsum(np.concatenate([[0], sizes]))
    for test in c.tests:
        metric = test["metric"]
        per_query = {name: [_every_value(grades[lo:hi], scores[name][lo:hi], metric)
                            for lo, hi in zip(bounds[:-1], bounds[1:])] for name in scores}
        # every tie order of every query of both methods, together
        diffs = [np.mean(np.subtract(a_values, b_values))
                 for a_values in itertools.product(*per_query["a"]) for b_values in itertools.product(*per_query["b"])]
        assert test["diff_min"] == pytest.approx(min(diffs), abs=1e-12), metric
        assert test["diff_max"] == pytest.approx(max(diffs), abs=1e-12), metric
        assert test["tie_order_decides"] == (test["diff_min"] <= 0 <= test["diff_max"])


def _planted():
    """AP@3 over the retrieved relevant items. Method a, query 1: a relevant item first, then a
    tie of a relevant and two others at ranks 2-4 cut by k = 3: relevant first or last both give
    1, but relevant third gives (1 + 2/3) / 2 = 5/6. Query 2: 0, 1, 1: 7/12. Method b, no ties:
    1, 1, 0 (1) and 0, 1, 0 (1/2). By the grade orders a - b = (1 + 7/12 - 3/2) / 2 = 1/24 > 0;
    over every tie order it reaches (5/6 + 7/12 - 3/2) / 2 = -1/24."""
    grades = np.array([1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 0], dtype=float)
    sizes = np.array([4, 3, 3, 3])
    a = np.array([9, 5, 5, 5, 3, 2, 1], dtype=float)
    b = np.array([3, 2, 1, 3, 2, 1], dtype=float)
    return grades, sizes, a, b


def test_a_planted_flip_that_the_grade_orders_miss():
    grades, sizes, a_scores, b_scores = _planted()
    options = {"metrics": ["AP@3"], "ap_denominator": "retrieved"}
    a = ft.rank_evaluate(grades[:7], a_scores, sizes[:2], spread="range", **options)
    b = ft.rank_evaluate(grades[7:], b_scores, sizes[2:], spread="range", **options)
    by_grade = {t: ft.rank_evaluate(grades[:7], a_scores, sizes[:2], ties=t, **options).mean["AP@3"]
                for t in ("optimistic", "pessimistic")}
    assert by_grade == pytest.approx({"optimistic": 19 / 24, "pessimistic": 19 / 24}, rel=1e-15)
    assert min(by_grade.values()) - b.mean["AP@3"] == pytest.approx(1 / 24, rel=1e-12)  # the grade orders: a wins
    c = compare({"a": a, "b": b}, bootstrap=None)
    (test,) = c.tests
    assert (test["diff_min"], test["diff_max"]) == pytest.approx((-1 / 24, 1 / 24), rel=1e-12)
    assert test["tie_order_decides"] and c.tie_order_decides("b", "a", "AP@3")
    assert "tie range of mean(a-b)" in c.format_tests() and "+" in c.format_tests().splitlines()[1]
    assert {"diff_min", "diff_max", "tie_order_decides"} <= set(c.to_frame(pairs=True).columns)


def test_the_tables_mark_a_significant_win_that_a_tie_order_decides():
    """Four queries copied from the planted pair: a beats b in every one under the exact
    expectation (a randomization test over 2**4 sign vectors cannot reach 0.05 with 4 queries,
    so alpha = 0.1 and no correction: p = 1/16 * 2); every tie order of a query still lets b
    catch up."""
    grades, sizes, a_scores, b_scores = _planted()
    options = {"metrics": ["AP@3"], "ap_denominator": "retrieved", "spread": "range"}
    a = ft.rank_evaluate(np.tile(grades[:4], 4), np.tile(a_scores[:4], 4), [4] * 4, **options)
    b = ft.rank_evaluate(np.tile([1.0, 0, 1], 4), np.tile([3.0, 2, 1], 4), [3] * 4, **options)
    c = compare({"a": a, "b": b}, bootstrap=None, alpha=0.15, correction="none")
    (test,) = c.tests
    assert test["significant"] and test["tie_order_decides"]  # 17/18 vs 5/6 on average; 5/6 - 5/6 at worst
    assert c.beats("a", "AP@3") == ["b"]
    assert "$^{b\\dagger}$" in c.to_latex()
    assert "<sup>b\u2020</sup>" in c.to_markdown() and "<sup>b\u2020</sup>" in c.to_html()
    assert "\u2020 after a letter: a tie order decides it" in c.to_markdown()
    assert "0.9444 b+" in str(c) and "+ after a letter: a tie order decides it" in c.legend()
