"""Paired significance tests of fasttie.report.significance against independent references.

- t-test: scipy.stats.ttest_rel, and a closed form (t = mean / (sd / sqrt n), two-sided Student-t
  tail through the regularized incomplete beta function).
- randomization test: brute-force enumeration of all 2**n sign vectors with itertools.product
  and exact Fractions (n <= 12), and the Monte Carlo p within a binomial tolerance of the exact
  p (n = 16).
- Holm / Bonferroni: hand-worked examples, and the textbook step-down rejection rule at many
  levels alpha.
"""

import importlib
import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

import fasttie as ft
from fasttie.report.significance import adjust_pvalues, bootstrap_interval, compare, paired_t_test, randomization_test
from fasttie.result import Result
from oracle import orderings, plain_metric

# the module itself, even if the package exports the function under the same name
cmp = importlib.import_module("fasttie.report.significance")


def exact_sign_flip_p(diffs):
    """#{sign vectors s: |sum s_i d_i| >= |sum d_i|} / 2**n, in exact rational (or integer) arithmetic."""
    diffs = [d if isinstance(d, int) else Fraction(d) for d in diffs]
    observed = abs(sum(diffs))
    count = sum(abs(sum(s * d for s, d in zip(signs, diffs))) >= observed for signs in itertools.product((1, -1), repeat=len(diffs)))
    return Fraction(count, 2 ** len(diffs))


def closed_form_t_p(x, y):
    d = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    n = len(d)
    mean = math.fsum(d) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in d) / (n - 1))
    t = mean / (sd / math.sqrt(n))
    df = n - 1
    return special.betainc(df / 2, 0.5, df / (df + t * t))  # = 2 * P(T_df > |t|)


def _result(values, ids=None, name="AP"):
    values = np.asarray(values, dtype=np.float64)
    kept = values[~np.isnan(values)]
    return Result({name: float(np.mean(kept)) if len(kept) else float("nan")}, {name: values}, len(values),
                  int(np.isnan(values).sum()), query_ids=ids)


# ---- randomization test ---------------------------------------------------------------------

@given(st.lists(st.integers(-16, 16), min_size=1, max_size=12))
def test_exact_enumeration_matches_brute_force_dyadic(numerators):
    diffs = np.array(numerators, dtype=np.float64) / 16  # exact in binary: no rounding anywhere
    p, exact = randomization_test(diffs, n_permutations=10000)
    assert exact
    assert p == float(exact_sign_flip_p(numerators))  # scaling by 16 changes no comparison


@given(
    st.lists(st.integers(0, 10), min_size=1, max_size=12),
    st.lists(st.integers(0, 10), min_size=12, max_size=12),
)
def test_exact_enumeration_matches_brute_force_decimal(tenths_a, tenths_b):
    """Per-query values such as P@10 (multiples of 0.1) are not exact in binary: sign vectors
    whose sums tie in exact arithmetic must still count as ties."""
    a = np.array(tenths_a, dtype=np.float64) / 10
    b = np.array(tenths_b[: len(a)], dtype=np.float64) / 10
    p, exact = randomization_test(a - b, n_permutations=2 ** len(a))
    intended = [x - y for x, y in zip(tenths_a, tenths_b)]  # in tenths: exact integers
    assert exact and p == float(exact_sign_flip_p(intended))


def test_decimal_ties_are_exercised():
    # 0.3 - 0.1 and 0.1 + 0.1 differ in binary floating point but tie in exact arithmetic
    a = np.array([0.3, 0.1, 0.2, 0.0])
    b = np.array([0.1, 0.0, 0.1, 0.1])
    p, exact = randomization_test(a - b, n_permutations=16)
    assert exact and p == float(exact_sign_flip_p([Fraction(2, 10), Fraction(1, 10), Fraction(1, 10), Fraction(-1, 10)]))
    assert p == 8 / 16
    # a plain float comparison would miss the ties (0.3 - 0.1 = 0.19999999999999998) and say 4/16
    naive = sum(abs(np.dot(s, a - b)) >= abs((a - b).sum()) for s in itertools.product((1, -1), repeat=4))
    assert naive == 4


def test_monte_carlo_within_binomial_tolerance_of_exact():
    rng = np.random.default_rng(11)
    for case in range(4):
        numerators = rng.integers(-20, 21, size=16) + (case - 1) * 4  # shifted: p from large to small
        diffs = numerators / 32.0
        exact = float(exact_sign_flip_p(numerators.tolist()))
        n_perm = 20000
        p, is_exact = randomization_test(diffs, n_permutations=n_perm, seed=case)
        assert not is_exact
        count = p * (1 + n_perm) - 1
        sigma = math.sqrt(exact * (1 - exact) / n_perm)
        assert abs(count / n_perm - exact) <= 5 * sigma + 2 / n_perm, (case, p, exact)


def test_monte_carlo_reproducible_and_independent_of_block_size(monkeypatch):
    rng = np.random.default_rng(5)
    diffs = rng.normal(0.02, 0.1, size=100)  # 2 uint64 words of signs per permutation
    reference = randomization_test(diffs, n_permutations=3001, seed=7)
    assert randomization_test(diffs, n_permutations=3001, seed=7) == reference
    for elements in (100, 1000, 12345, 1 << 30):  # 1, 10, 123 rows per block, one block
        monkeypatch.setattr(cmp, "_SIGN_ELEMENTS", elements)
        assert randomization_test(diffs, n_permutations=3001, seed=7) == reference
    assert randomization_test(diffs, n_permutations=3001, seed=8) != reference
    # the exact path is also independent of the block size
    small = rng.normal(size=10)
    monkeypatch.setattr(cmp, "_SIGN_ELEMENTS", 30)
    assert randomization_test(small, n_permutations=5000) == (float(exact_sign_flip_p(small)), True)


def test_monte_carlo_p_formula_extremes():
    # a large constant shift: only the identity (and the all-flip) reach the observed sum
    diffs = np.full(40, 0.25)
    p, exact = randomization_test(diffs, n_permutations=999)
    assert not exact and p == 1 / 1000
    # all zero: every sign vector ties
    assert randomization_test(np.zeros(40), n_permutations=999) == (1.0, False)
    assert randomization_test(np.zeros(3), n_permutations=999) == (1.0, True)
    assert math.isnan(randomization_test(np.zeros(0))[0])


# ---- t-test ---------------------------------------------------------------------------------

@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=3, max_size=40))
def test_t_test_matches_scipy_and_closed_form(pairs):
    x, y = np.array(pairs).T
    d = x - y
    p = paired_t_test(x, y)
    if np.all(d == d[0]):
        assert p == (1.0 if d[0] == 0 else 0.0)
        return
    if np.std(d) < 1e-9 * max(np.abs(d).max(), 1e-300):
        return  # variance lost to rounding: nothing to compare
    assert p == stats.ttest_rel(x, y).pvalue
    assert p == pytest.approx(closed_form_t_p(x, y), rel=1e-9, abs=1e-300)


def test_t_test_hand_example():
    # differences 1, 2, 3: mean 2, sd 1, t = 2 sqrt(3), df 2: p = 1 - t / sqrt(t^2 + 2) = 1 - sqrt(6/7)... two-sided
    x, y = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    t = 2 * math.sqrt(3)
    assert paired_t_test(x, y) == pytest.approx(1 - t / math.sqrt(t * t + 2), rel=1e-12)
    assert math.isnan(paired_t_test([1.0], [0.0]))


# ---- corrections ----------------------------------------------------------------------------

def test_corrections_hand_worked():
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 0.02], rtol=1e-15)
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 -> 0.02, 0.03, 0.06, 0.04 -> running max
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), [0.03, 0.06, 0.06, 0.02], rtol=1e-15)
    np.testing.assert_array_equal(adjust_pvalues(p, "none"), p)
    np.testing.assert_array_equal(adjust_pvalues([0.4, 0.5], "bonferroni"), [0.8, 1.0])
    got = adjust_pvalues([0.02, np.nan, 0.2], "holm")  # NaN is not part of the family
    assert math.isnan(got[1]) and got[0] == 0.04 and got[2] == 0.2
    # Benjamini-Hochberg: sorted 0.005, 0.01, 0.03, 0.04 times 4/1, 4/2, 4/3, 4/4 -> 0.02, 0.02, 0.04,
    # 0.04 -> running min from the largest
    np.testing.assert_allclose(adjust_pvalues(p, "bh"), [0.02, 0.04, 0.04, 0.02], rtol=1e-15)
    with pytest.raises(ValueError, match="correction"):
        adjust_pvalues(p, "fdr")


def holm_rejects(pvalues, alpha):
    """Textbook step-down: walk p ascending, reject while p_(i) <= alpha / (m - i), stop at the first failure."""
    m = len(pvalues)
    rejected = set()
    for i, index in enumerate(sorted(range(m), key=lambda j: pvalues[j])):
        if pvalues[index] > alpha / (m - i):
            break
        rejected.add(index)
    return rejected


@given(st.lists(st.floats(1e-6, 1), min_size=1, max_size=8))
def test_holm_and_bonferroni_agree_with_rejection_rules(pvalues):
    holm = adjust_pvalues(pvalues, "holm")
    bonferroni = adjust_pvalues(pvalues, "bonferroni")
    m = len(pvalues)
    levels = sorted({min(1.0, k * p) for p in pvalues for k in range(1, m + 1)})
    for level in levels:
        for alpha in (level * (1 - 1e-9), level * (1 + 1e-9)):
            if alpha >= 1:
                continue  # adjusted p-values are capped at 1: the rules agree for alpha < 1
            assert holm_rejects(pvalues, alpha) == {i for i in range(m) if holm[i] <= alpha}
            assert {i for i in range(m) if pvalues[i] <= alpha / m} == {i for i in range(m) if bonferroni[i] <= alpha}


# ---- compare() ------------------------------------------------------------------------------

def _methods():
    """Three hashing 'methods' on the same queries: clean codes, noisy codes, random codes."""
    rng = np.random.default_rng(0)
    n_bits, n_db, n_q = 32, 400, 60
    centres = rng.integers(0, 2, (5, n_bits))
    db_labels, q_labels = rng.integers(0, 5, n_db), rng.integers(0, 5, n_q)
    database = centres[db_labels] ^ (rng.random((n_db, n_bits)) < 0.2)
    clean = centres[q_labels] ^ (rng.random((n_q, n_bits)) < 0.15)
    noisy = clean ^ (rng.random((n_q, n_bits)) < 0.25)
    random = rng.integers(0, 2, (n_q, n_bits))
    metrics = ["AP", "P@10", "nDCG@20"]
    return {
        name: ft.evaluate(q, database, q_labels, db_labels, metrics=metrics)
        for name, q in (("clean", clean), ("noisy", noisy), ("random", random))
    }


def test_compare_against_references():
    results = _methods()
    c = compare(results, n_permutations=2000, seed=3)
    assert c.names == ["clean", "noisy", "random"] and c.metrics == ["AP", "P@10", "nDCG@20"]
    assert c.settings == {"n_permutations": 2000, "seed": 3, "correction": "holm", "alpha": 0.05, "confidence": 0.95,
                          "bootstrap": "bca", "n_resamples": 9999, "n_queries": 60}
    assert len(c.tests) == 3 * 3
    for name, result in results.items():
        assert c.means[name] == result.mean
    for metric in c.metrics:
        tests = [t for t in c.tests if t["metric"] == metric]
        assert [(t["a"], t["b"]) for t in tests] == [("clean", "noisy"), ("clean", "random"), ("noisy", "random")]
        for t in tests:
            x, y = results[t["a"]].per_query[metric], results[t["b"]].per_query[metric]
            assert t["mean_diff"] == pytest.approx(results[t["a"]].mean[metric] - results[t["b"]].mean[metric], abs=1e-14)
            assert t["t_p"] == stats.ttest_rel(x, y).pvalue
            assert (t["perm_p"], t["exact"]) == randomization_test(x - y, n_permutations=2000, seed=3)
            assert t["n"] == 60
            ci = stats.ttest_rel(x, y).confidence_interval(confidence_level=0.95)
            assert (t["ci_low"], t["ci_high"]) == pytest.approx((ci.low, ci.high), rel=1e-9)
            assert t["effect_size"] == pytest.approx(np.mean(x - y) / np.std(x - y, ddof=1), rel=1e-12)
        for key in ("t_p", "perm_p"):
            np.testing.assert_array_equal([t[key + "_adjusted"] for t in tests], adjust_pvalues([t[key] for t in tests], "holm"))
        assert all(t["significant"] == (t["perm_p_adjusted"] <= 0.05) for t in tests)
    # the clean codes beat both others on every metric; the table marks it with "bc"
    for metric in c.metrics:
        assert c.beats("clean", metric) == ["noisy", "random"]
        assert c.beats("random", metric) == []
    table = str(c)
    lines = table.splitlines()
    assert lines[0].split() == ["method", "AP", "P@10", "nDCG@20"]
    assert lines[1].startswith("a  clean") and lines[1].count(" bc") == 3
    assert f"{results['clean'].mean['AP']:.4f} bc" in lines[1]
    assert lines[3].startswith("c  random") and "b" not in lines[3].split("random")[1]
    assert "2000 permutations" in table and "seed 3" in table and "Holm" in table
    pairs = c.format_tests().splitlines()
    assert len(pairs) == 2 + len(c.tests)  # the header, a row per test, the bootstrap's note
    assert pairs[0].split()[:7] == ["metric", "a", "b", "mean(a-b)", "bootstrap", "CI", "n"]
    assert [line.rstrip().endswith("*") for line in pairs[1:-1]] == [t["significant"] for t in c.tests]
    assert pairs[-1].startswith("bootstrap CI: paired bootstrap (BCa, 9999 resamples, seed 3)")
    parsed = json.loads(c.to_json())
    assert parsed["names"] == c.names and len(parsed["tests"]) == 9 and parsed["settings"]["seed"] == 3


def test_identical_methods_never_differ():
    results = _methods()
    twins = {"x": results["noisy"], "y": Result.from_json(results["noisy"].to_json())}
    for n_perm in (100, 10000):
        c = compare(twins, n_permutations=n_perm)
        for t in c.tests:
            assert t["mean_diff"] == 0 and t["t_p"] == 1.0 and t["perm_p"] == 1.0 and not t["significant"]
            assert t["t_p_adjusted"] == 1.0 and t["perm_p_adjusted"] == 1.0
        assert "a  x" in str(c) and " b" not in str(c).splitlines()[1]


def test_small_inputs_use_exact_enumeration_and_state_it():
    a = _result([0.9, 0.8, 0.6, 0.5])
    b = _result([0.7, 0.5, 0.5, 0.3])
    c = compare({"new": a, "old": b}, correction="none")
    (t,) = c.tests
    assert t["exact"] and t["perm_p"] == float(exact_sign_flip_p([a - b for a, b in zip([9, 8, 6, 5], [7, 5, 5, 3])]))
    assert t["perm_p"] == 2 / 16 and not t["significant"]
    assert "exact enumeration" in str(c) and c.format_tests().splitlines()[1].endswith("exact")
    assert c.tests[0]["t_p"] == pytest.approx(closed_form_t_p([0.9, 0.8, 0.6, 0.5], [0.7, 0.5, 0.5, 0.3]), rel=1e-9)


def test_skipped_queries_are_dropped_pairwise():
    a = _result([0.9, np.nan, 0.6, 0.5, 0.4, 0.7])
    b = _result([0.7, 0.5, np.nan, 0.3, 0.4, 0.1])
    c = compare({"a": a, "b": b}, correction="bonferroni")
    (t,) = c.tests
    keep = [0, 3, 4, 5]
    x, y = a.per_query["AP"][keep], b.per_query["AP"][keep]
    assert t["n"] == 4 and t["mean_diff"] == pytest.approx(np.mean(x - y), abs=1e-15)
    assert t["t_p"] == stats.ttest_rel(x, y).pvalue
    assert t["perm_p"] == float(exact_sign_flip_p(np.round((x - y) * 10) / 10)) or t["perm_p"] == randomization_test(x - y)[0]
    assert c.means["a"]["AP"] == a.mean["AP"]
    assert json.loads(c.to_json())  # NaN-free JSON
    # every query skipped by one method: NaN p-values, never significant
    c = compare({"a": a, "b": _result([np.nan] * 6)})
    assert math.isnan(c.tests[0]["perm_p"]) and c.tests[0]["significant"] is False
    assert json.loads(c.to_json())["tests"][0]["perm_p"] is None


def test_metric_selection_and_errors():
    results = _methods()
    c = compare(results, metrics=["mAP", "p@10"], n_permutations=50)
    assert c.metrics == ["AP", "P@10"]
    with pytest.raises(ValueError, match="at least two"):
        compare({"one": results["clean"]})
    with pytest.raises(TypeError, match="dict"):
        compare([results["clean"], results["noisy"]])
    with pytest.raises(TypeError, match=r"results\['b'\]"):
        compare({"a": results["clean"], "b": results["noisy"].to_dict()})
    with pytest.raises(ValueError, match="method 'short' has 3 queries"):
        compare({"a": results["clean"], "short": _result([0.1, 0.2, 0.3])})
    with pytest.raises(ValueError, match="method 'y' has other query ids"):
        compare({"x": _result([0.1, 0.2], ["q1", "q2"]), "y": _result([0.1, 0.2], ["q2", "q1"])})
    # ids that agree as strings (a CSV round trip turns ids into strings) are the same queries
    compare({"x": _result([0.1, 0.2], [1, 2]), "y": _result([0.1, 0.3], ["1", "2"])})
    with pytest.raises(ValueError, match="method 'b' has no metric 'RR'"):
        compare({"a": _result([0.1, 0.2], name="RR"), "b": _result([0.1, 0.2])}, metrics=["RR"])
    with pytest.raises(ValueError, match="share no metric"):
        compare({"a": _result([0.1, 0.2], name="RR"), "b": _result([0.1, 0.2])})
    with pytest.raises(ValueError, match="no per-query values"):
        compare({"a": results["clean"], "b": Result.from_dict(results["noisy"].to_dict(per_query=False))})
    with pytest.raises(ValueError, match="correction"):
        compare(results, correction="fdr")
    with pytest.raises(ValueError, match="n_permutations"):
        compare(results, n_permutations=0)
    with pytest.raises(ValueError, match="alpha"):
        compare(results, alpha=5)


def test_compare_loaded_csv_results(tmp_path):
    results = _methods()
    for name, result in results.items():
        result.save(tmp_path / f"{name}.csv")
    loaded = {name: Result.load(tmp_path / f"{name}.csv") for name in results}
    assert compare(loaded, n_permutations=300).to_dict() == compare(results, n_permutations=300).to_dict()


# --------------------------------------------------------------------------------------------
# Benjamini-Hochberg, the bootstrap intervals and the exact range of a difference over tie orders
# --------------------------------------------------------------------------------------------


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
