"""``Result.tie_min`` / ``tie_max`` (``spread=True`` or ``spread="range"``): the lowest and
highest value of each metric over every order inside ties. Checked against enumeration of every
tie order (ranked lists: each order scored as a fixed order, all orders of a case as queries of
one call; Hamming rankings: every permutation of the database ranked in index order), for the
metrics the grade orders bound and for those they do not (AP@k, WAP@k, GMAP@k over the retrieved
relevant items, Judged@k, RBPResid@k, NumNonRelJudgedRet@k, infAP); against random orders on
longer lists; and through the reports (JSON, CSV, TieStats, threads)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
from helpers import every_tie_order, random_judged_list

LIST_METRICS = [
    "AP", "AP@3", "GMAP@3", "AP@5", "nDCG", "nDCG@2", "DCG@3", "P@2", "R@3", "F1@2", "RR", "RR@2", "Success@2", "Rprec",
    "MAP@R", "ACG@3", "Bpref", "RBP(p=0.5)@3", "ERR@3", "NumRelRet@2", "Judged@2", "RBPResid@3", "infAP",
    "NumNonRelJudgedRet@2", "AP(rel=2)@2", "nDCG(gains={0: 0, 1: 1, 2: 5, 3: 6})@3",
]
HAMMING_METRICS = ["AP", "AP@2", "AP@4", "GMAP@3", "WAP", "WAP@3", "nDCG@3", "DCG@2", "P@2", "R@3", "F1@2", "RR@2",
                   "ACG@3", "Rprec", "MAP@R", "Success@2", "Bpref"]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["retrieved", "total", "min"]), st.sampled_from(["zero", "one"]))
def test_ranked_lists_extremes_are_those_ofevery_tie_order(seed, ap_denominator, empty):
    grades, judged, pooled, scores, unretrieved = random_judged_list(np.random.default_rng(seed))
    every = every_tie_order(grades, judged, pooled, scores, unretrieved, LIST_METRICS, ap_denominator, empty)
    res = ft.rank_evaluate(grades, scores, metrics=LIST_METRICS, judged=judged, pooled=pooled,
                           unretrieved=[unretrieved], ap_denominator=ap_denominator, empty=empty, spread="range")
    for name in LIST_METRICS:
        assert res.tie_min[name][0] == pytest.approx(every[name].min(), rel=1e-12, abs=1e-12), name
        assert res.tie_max[name][0] == pytest.approx(every[name].max(), rel=1e-12, abs=1e-12), name
        assert res.tie_min[name][0] <= res.per_query[name][0] <= res.tie_max[name][0], name
    assert not res.tie_std  # "range": the extremes alone


def test_extremes_wider_than_the_grade_orders():
    """The grade orders miss the extremes of AP@4 over the retrieved relevant items: ranks 3-5
    tie a relevant item with two others, and k = 4 cuts that tie after two ranks. Relevant first
    (optimistic): 1, 0, 1, 0 gives 5/6; relevant last (pessimistic): 1, 0, 0, 0 gives 1 (the
    highest); the lowest is 1, 0, 0, 1: (1 + 2/4) / 2 = 3/4."""
    grades, scores = np.array([1.0, 0, 0, 1, 0, 0]), np.array([5.0, 2, 1, 1, 1, 0])
    res = ft.rank_evaluate(grades, scores, metrics=["AP@4"], ap_denominator="retrieved", spread="range")
    by_grade = [ft.rank_evaluate(grades, scores, metrics=["AP@4"], ap_denominator="retrieved", ties=t).mean["AP@4"]
                for t in ("optimistic", "pessimistic")]
    assert by_grade == pytest.approx([5 / 6, 1.0], rel=1e-15)
    assert (res.mean_tie_min["AP@4"], res.mean_tie_max["AP@4"]) == pytest.approx((3 / 4, 1.0), rel=1e-15)


def test_longer_lists_bound_random_orders():
    """On lists of 60-200 rows, no random order goes past the extremes, and the extremes are
    reached by the orders they describe (AP@k: the relevant count the cut tie puts inside k)."""
    rng = np.random.default_rng(40)
    metrics = ["AP@10", "AP@50", "nDCG@20", "RR", "infAP", "Judged@10", "RBPResid@20"]
    for _ in range(4):
        n = int(rng.integers(60, 200))
        grades = rng.integers(0, 3, n).astype(float) * (rng.random(n) < 0.4)
        judged = (grades > 0) | (rng.random(n) < 0.5)
        pooled = judged | (rng.random(n) < 0.5)
        scores = rng.integers(0, 6, n).astype(float)
        res = ft.rank_evaluate(grades, scores, metrics=metrics, judged=judged, pooled=pooled, spread="range")
        order_scores = np.empty((300, n))
        for i in range(300):  # random orders inside ties: distinct scores keeping the tie order
            order_scores[i] = scores + rng.random(n) * 0.5
        fixed = ft.rank_evaluate(np.tile(grades, 300), order_scores.ravel(), np.full(300, n), metrics=metrics,
                                 judged=np.tile(judged, 300), pooled=np.tile(pooled, 300), ties="stable").per_query
        for name in metrics:
            assert fixed[name].min() >= res.tie_min[name][0] - 1e-12, name
            assert fixed[name].max() <= res.tie_max[name][0] + 1e-12, name


def _hamming_case(rng, n):
    q = rng.integers(0, 2, (2, 4)) * 2 - 1
    db = rng.integers(0, 2, (n, 4)) * 2 - 1
    return q, db, rng.integers(0, 2, (2, 3)), rng.integers(0, 2, (n, 3))


@pytest.mark.parametrize("seed", range(12))
def test_hamming_extremes_are_those_ofevery_tie_order(seed):
    rng = np.random.default_rng(seed)
    q, db, ql, dl = _hamming_case(rng, int(rng.integers(2, 6)))
    gain = ("exp2", "linear")[seed % 2]
    every = {m: [] for m in HAMMING_METRICS}
    for perm in itertools.permutations(range(len(db))):  # ties="stable" ranks a tie in database order
        per_query = ft.evaluate(q, db[list(perm)], ql, dl[list(perm)], metrics=HAMMING_METRICS, ties="stable",
                                gain=gain).per_query
        for m in HAMMING_METRICS:
            every[m].append(per_query[m])
    res = ft.evaluate(q, db, ql, dl, metrics=HAMMING_METRICS, gain=gain, spread="range")
    for m in HAMMING_METRICS:
        values = np.array(every[m])
        np.testing.assert_allclose(res.tie_min[m], values.min(axis=0), rtol=1e-12, atol=1e-12, err_msg=m)
        np.testing.assert_allclose(res.tie_max[m], values.max(axis=0), rtol=1e-12, atol=1e-12, err_msg=m)


def test_spread_true_fills_extremes_and_std_tie_stats_and_threads_agree():
    rng = np.random.default_rng(3)
    q = rng.integers(0, 2, (40, 16)) * 2 - 1
    db = rng.integers(0, 2, (3000, 16)) * 2 - 1
    ql, dl = rng.integers(0, 4, 40), rng.integers(0, 4, 3000)
    metrics = ["AP", "nDCG@100", "P@50"]
    full = ft.evaluate(q, db, ql, dl, metrics=metrics, spread=True, n_threads=1)
    assert set(full.tie_std) == set(full.tie_min) == set(metrics)
    with_ratio = ["AP@100", *metrics]
    one = ft.evaluate(q, db, ql, dl, metrics=with_ratio, spread="range", n_threads=1)
    three = ft.evaluate(q, db, ql, dl, metrics=with_ratio, spread="range", n_threads=3)
    from_stats = ft.tie_stats(q, db, ql, dl).finalize(with_ratio, spread="range")
    for other in (three, from_stats):
        for m in with_ratio:
            np.testing.assert_array_equal(other.tie_min[m], one.tie_min[m])
            np.testing.assert_array_equal(other.tie_max[m], one.tie_max[m])
    for m in metrics:
        np.testing.assert_array_equal(full.tie_min[m], one.tie_min[m])
        assert one.mean_tie_min[m] <= one.mean[m] <= one.mean_tie_max[m]
        assert one.mean_tie_min[m] == pytest.approx(np.mean(one.tie_min[m]), rel=1e-15)


def test_reports_keep_the_extremes(tmp_path):
    res = ft.rank_evaluate([1.0, 0, 1, 0, 2, 1], [1.0, 1, 0, 3, 3, 3], [3, 3], metrics=["AP@2", "nDCG@2"],
                           spread=True, ap_denominator="min")
    back = ft.Result.from_json(res.to_json())
    for path in (tmp_path / "r.json", tmp_path / "r.csv"):
        res.save(path)
        loaded = ft.Result.load(path)
        for field in ("tie_min", "tie_max", "tie_std"):
            for m in res.per_query:
                np.testing.assert_array_equal(getattr(loaded, field)[m], getattr(res, field)[m])
                np.testing.assert_array_equal(getattr(back, field)[m], getattr(res, field)[m])
        for m in res.per_query:
            assert loaded.mean_tie_max[m] == res.mean_tie_max[m]
    header = (tmp_path / "r.csv").read_text().splitlines()[0]
    assert "tie_min(AP@2)" in header and "tie_max(nDCG@2)" in header


def test_skipped_queries_stay_nan():
    res = ft.rank_evaluate([0.0, 0, 1, 0], [1.0, 1, 1, 1], [2, 2], metrics=["AP@1"], empty="skip", spread="range")
    assert np.isnan(res.tie_min["AP@1"][0]) and np.isnan(res.tie_max["AP@1"][0])
    assert (res.tie_min["AP@1"][1], res.tie_max["AP@1"][1]) == (0.0, 1.0)


def test_bad_spread_requests_name_the_fix():
    with pytest.raises(ValueError, match="True, False or 'range'"):
        ft.rank_evaluate([1.0, 0], [1.0, 1], metrics=["AP"], spread="wide")
    with pytest.raises(ValueError, match="ties"):
        ft.rank_evaluate([1.0, 0], [1.0, 1], metrics=["AP"], spread="range", ties="stable")
    with pytest.raises(ValueError, match=r"nDCG\(gains=.*does not rise"):
        ft.rank_evaluate([1.0, 0], [1.0, 1], metrics=["nDCG(gains={0: 0, 1: 4, 2: 1})"], spread="range")
    with pytest.raises(ValueError, match="spread='range' for the extremes alone"):
        ft.evaluate(np.ones((1, 8)), np.ones((4, 8)), [0], [0, 1, 0, 1], metrics=["AP@2", "GMAP@2"], spread=True)


def test_infap_walk_too_wide_is_refused():
    n = 1200  # one tie of 400 relevant, 400 judged non-relevant and 400 pooled-unjudged rows
    grades = np.repeat([1.0, 0.0, 0.0], 400)
    judged = np.repeat([True, True, False], 400)
    with pytest.raises(ValueError, match="infAP"):
        ft.rank_evaluate(grades, np.zeros(n), metrics=["infAP"], judged=judged, pooled=np.ones(n, bool),
                         spread="range")
