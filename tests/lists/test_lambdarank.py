"""fasttie.lambdarank (fasttie/lists/lambdarank.py): LambdaRank gradients and hessians.

References (none of them uses fasttie's kernel):

* ``_reference_mp``: the definition pair by pair in 50-digit mpmath (ranks from Python's stable
  ``sorted``, ideal DCG from the labels sorted descending, every option applied as documented);
  fasttie matches it to 1e-12 on hypothesis cases with ties, truncation, weights and both
  LightGBM normalisations.
* ``_reference_numpy``: an independent per-query numpy version with n x n pair matrices, for
  larger random inputs.
* the gradient check: finite differences of the smoothed pairwise cost
  ``sum w_ij log(1 + exp(-sigma (s_i - s_j)))`` with the |delta nDCG| weights held fixed.
* seed 003 (Burges-style notebook): its example converges to nDCG = 1 under ``y_pred -= lambdas``
  from both of its starting points; its printed lambdas come from document-independent
  positions (its defect), which the mp reference reproduces when given those positions.
* LightGBM (built-in ``lambdarank`` vs fasttie as a custom objective, same data, one round) and
  XGBoost (built-in ``rank:ndcg`` vs fasttie with ``hessian_scale=2``), skipped if absent.
"""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fasttie._kernels.lambdarank import lambdarank_queries
from fasttie.lists.lambdarank import lambdarank

mpmath.mp.dps = 50


# ----------------------------------------------------------------------------- references


def _gain_values(gain, labels):
    if isinstance(gain, str):
        return [2 ** int(v) - 1 if gain == "exp2" else int(v) for v in labels]
    return [gain[int(v)] for v in labels]


def _reference_mp(labels, scores, *, sigma=1.0, gain="exp2", k=None, ideal_k="k", damp_score_gap=False,
                  rescale=False, hessian_scale=1.0, weight=1.0, positions=None):
    """One query, pair by pair, in mpmath. ``positions`` (0-based rank of each document)
    overrides the ranks by score (only to reproduce seed 003's defect)."""
    n = len(labels)
    lam = [mpmath.mpf(0)] * n
    hes = [mpmath.mpf(0)] * n
    if n < 2:
        return [float(x) for x in lam], [float(x) for x in hes]
    gains = [mpmath.mpf(g) for g in _gain_values(gain, labels)]
    s = [mpmath.mpf(float(x)) for x in scores]
    if positions is None:
        order = sorted(range(n), key=lambda d: -float(scores[d]))  # Python's sort is stable
        rank = [0] * n
        for r, d in enumerate(order):
            rank[d] = r
    else:
        rank = list(positions)

    def disc(r):
        return 1 / mpmath.log(r + 2, 2)

    cut = n if (k is None or ideal_k == "full") else min(k, n)
    idcg = sum(g * disc(r) for r, g in enumerate(sorted(gains, reverse=True)[:cut]))
    if idcg == 0:
        return [0.0] * n, [0.0] * n
    sig = mpmath.mpf(sigma)
    damp = damp_score_gap and max(s) != min(s)
    total = mpmath.mpf(0)
    for i in range(n):
        for j in range(n):
            if not labels[i] > labels[j]:
                continue
            if k is not None and min(rank[i], rank[j]) >= k:
                continue
            w = abs((gains[i] - gains[j]) * (disc(rank[i]) - disc(rank[j]))) / idcg
            if damp:
                w = w / (mpmath.mpf("0.01") + abs(s[i] - s[j]))
            rho = 1 / (1 + mpmath.exp(sig * (s[i] - s[j])))
            lam[i] -= sig * w * rho
            lam[j] += sig * w * rho
            hes[i] += sig**2 * w * rho * (1 - rho)
            hes[j] += sig**2 * w * rho * (1 - rho)
            total += 2 * sig * w * rho
    factor = mpmath.mpf(weight)
    if rescale and total > 0:
        factor *= mpmath.log(1 + total, 2) / total
    return ([float(x * factor) for x in lam], [float(x * factor * mpmath.mpf(hessian_scale)) for x in hes])


def _reference_numpy(labels, scores, sigma=1.0, k=None):
    """One query with n x n matrices (exp2 gain, ideal DCG@k): straightforward numpy."""
    labels = np.asarray(labels, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    n = len(labels)
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(-scores, kind="stable")] = np.arange(n)
    disc = 1.0 / np.log2(rank + 2.0)
    gains = np.exp2(labels) - 1.0
    cut = n if k is None else min(k, n)
    idcg = (np.sort(gains)[::-1][:cut] / np.log2(np.arange(cut) + 2.0)).sum()
    if idcg == 0:
        return np.zeros(n), np.zeros(n)
    better = labels[:, None] > labels[None, :]
    if k is not None:
        better &= np.minimum(rank[:, None], rank[None, :]) < k
    w = np.abs((gains[:, None] - gains[None, :]) * (disc[:, None] - disc[None, :])) / idcg * better
    rho = np.exp(-np.logaddexp(0.0, sigma * (scores[:, None] - scores[None, :])))
    pair = sigma * w * rho
    hess = sigma**2 * w * rho * (1.0 - rho)
    return pair.sum(axis=0) - pair.sum(axis=1), hess.sum(axis=0) + hess.sum(axis=1)


def _split(values, sizes):
    return np.split(np.asarray(values), np.cumsum(sizes)[:-1])


def _ndcg_exp2(labels, scores):
    labels = np.asarray(labels, dtype=np.float64)
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    disc = 1.0 / np.log2(np.arange(len(labels)) + 2.0)
    gains = np.exp2(labels) - 1.0
    return float((gains[order] * disc).sum() / (np.sort(gains)[::-1] * disc).sum())


# ----------------------------------------------------------------------------- against the definition


@st.composite
def _cases(draw):
    sizes = draw(st.lists(st.integers(1, 7), min_size=1, max_size=4))
    n = sum(sizes)
    max_label = draw(st.integers(0, 4))
    labels = draw(st.lists(st.integers(0, max_label), min_size=n, max_size=n))
    # few distinct scores: ties are common; some far apart to exercise the large-gap logistic
    scores = draw(st.lists(st.sampled_from([-3.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.5, 40.0]), min_size=n, max_size=n))
    gain = draw(st.sampled_from(["exp2", "linear", "table"]))
    if gain == "table":
        steps = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]), min_size=max_label + 1, max_size=max_label + 3))
        gain = list(np.cumsum(steps))
    options = {
        "sigma": draw(st.sampled_from([1.0, 0.5, 2.0, 7.5])),
        "gain": gain,
        "k": draw(st.sampled_from([None, 1, 2, 3, 10])),
        "ideal_k": draw(st.sampled_from(["k", "full"])),
        "damp_score_gap": draw(st.booleans()),
        "rescale": draw(st.booleans()),
        "hessian_scale": draw(st.sampled_from([1.0, 2.0])),
    }
    weights = draw(st.none() | st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]), min_size=len(sizes),
                                        max_size=len(sizes)))
    return sizes, labels, scores, options, weights


@given(_cases())
def test_matches_mp_reference(case):
    sizes, labels, scores, options, weights = case
    lam, hes = lambdarank(labels, scores, sizes, weights=weights, **options)
    for q, (lq, sq) in enumerate(zip(_split(labels, sizes), _split(scores, sizes), strict=True)):
        ref_l, ref_h = _reference_mp(list(lq), list(sq), weight=1.0 if weights is None else weights[q], **options)
        lo = sum(sizes[:q])
        np.testing.assert_allclose(lam[lo:lo + len(lq)], ref_l, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(hes[lo:lo + len(lq)], ref_h, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("k", [None, 1, 5, 20])
@pytest.mark.parametrize("sigma", [1.0, 2.0])
def test_matches_numpy_reference_larger(k, sigma):
    rng = np.random.default_rng(k or 0)
    sizes = rng.integers(1, 60, 40)
    labels = rng.integers(0, 5, sizes.sum())
    scores = np.round(rng.standard_normal(sizes.sum()) + 0.3 * labels, 1)  # ties
    lam, hes = lambdarank(labels, scores, sizes, k=k, sigma=sigma)
    ref = [_reference_numpy(lq, sq, sigma, k) for lq, sq in zip(_split(labels, sizes), _split(scores, sizes),
                                                                strict=True)]
    ref_l = np.concatenate([r[0] for r in ref])
    ref_h = np.concatenate([r[1] for r in ref])
    np.testing.assert_allclose(lam, ref_l, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(hes, ref_h, rtol=1e-11, atol=1e-14)
    assert np.max(np.abs(lam - ref_l)) < 1e-13


def test_long_queries_use_the_merge_sort_path():
    # queries longer than 256 documents are sorted by merge sort instead of rank counting
    rng = np.random.default_rng(7)
    sizes = np.array([300, 257, 256, 5])
    labels = rng.integers(0, 5, sizes.sum())
    scores = np.round(rng.standard_normal(sizes.sum()), 1)  # many ties
    for k in (None, 20):
        lam, hes = lambdarank(labels, scores, sizes, k=k)
        ref = [_reference_numpy(lq, sq, 1.0, k) for lq, sq in zip(_split(labels, sizes), _split(scores, sizes),
                                                                  strict=True)]
        np.testing.assert_allclose(lam, np.concatenate([r[0] for r in ref]), rtol=1e-11, atol=1e-14)
        np.testing.assert_allclose(hes, np.concatenate([r[1] for r in ref]), rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("labels", [[0, 1000, 5, 1000], [0, 70_000, 3, 70_000, 2]])
def test_large_linear_labels(labels):
    # sparse label values: the ideal DCG sorts instead of counting; beyond 2**16 labels are renumbered
    scores = np.linspace(1.0, -1.0, len(labels))
    for k in (None, 2):
        lam, hes = lambdarank(labels, scores, gain="linear", k=k)
        ref_l, ref_h = _reference_mp(labels, list(scores), gain="linear", k=k)
        np.testing.assert_allclose(lam, ref_l, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(hes, ref_h, rtol=1e-12, atol=1e-15)


def test_worked_example_values():
    # two documents tied at 0: the stable sort ranks row 0 first; IDCG = 1, |delta nDCG| =
    # 1 - 1/log2(3), rho = 1/2
    lam, hes = lambdarank([0, 1], [0.0, 0.0])
    delta = 1.0 - 1.0 / math.log2(3.0)
    np.testing.assert_allclose(lam, [delta / 2, -delta / 2], rtol=1e-15)
    np.testing.assert_allclose(hes, [delta / 4, delta / 4], rtol=1e-15)


def test_ties_use_input_order():
    # same labels and scores, rows swapped: the stable order swaps, so the lambdas differ
    a, _ = lambdarank([2, 0, 1], [0.5, 0.5, 0.5])
    b, _ = lambdarank([0, 2, 1], [0.5, 0.5, 0.5])
    assert not np.allclose(a[[1, 0, 2]], b)
    ref_a, _ = _reference_mp([2, 0, 1], [0.5, 0.5, 0.5])
    np.testing.assert_allclose(a, ref_a, rtol=1e-12)


# ----------------------------------------------------------------------------- gradient check


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("sigma", [1.0, 2.5])
def test_gradient_check(seed, sigma):
    """lambdas and hessians are the first and (diagonal) second derivatives of the pairwise
    logistic cost with |delta nDCG| weights frozen at the current ranking."""
    rng = np.random.default_rng(seed)
    n = 9
    labels = rng.integers(0, 4, n)
    s0 = rng.standard_normal(n)
    lam, hes = lambdarank(labels, s0, sigma=sigma)
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(-s0, kind="stable")] = np.arange(n)
    disc = 1.0 / np.log2(rank + 2.0)
    gains = np.exp2(labels) - 1.0
    idcg = (np.sort(gains)[::-1] / np.log2(np.arange(n) + 2.0)).sum()
    w = np.abs((gains[:, None] - gains[None, :]) * (disc[:, None] - disc[None, :])) / idcg
    w *= labels[:, None] > labels[None, :]

    def cost(s):
        return float((w * np.logaddexp(0.0, -sigma * (s[:, None] - s[None, :]))).sum())

    def grad(s):
        rho = np.exp(-np.logaddexp(0.0, sigma * (s[:, None] - s[None, :])))
        pair = sigma * w * rho
        return pair.sum(axis=0) - pair.sum(axis=1)

    h = 1e-6
    fd = np.array([(cost(s0 + h * e) - cost(s0 - h * e)) / (2 * h) for e in np.eye(n)])
    fd2 = np.array([(grad(s0 + h * e)[d] - grad(s0 - h * e)[d]) / (2 * h) for d, e in enumerate(np.eye(n))])
    assert np.max(np.abs(fd - lam)) < 1e-8
    assert np.max(np.abs(fd2 - hes)) < 1e-8


# ----------------------------------------------------------------------------- seed 003


SEED_LABELS = [5, 3, 2, 5, 1, 1]


@pytest.mark.parametrize("start", [[3.2, 0.4, -0.1, -2.1, 0.5, 0.01], [-3.0, 2.0, 3.0, -4.0, 6.0, 8.5]])
def test_seed003_converges(start):
    y_pred = np.array(start)
    first = _ndcg_exp2(SEED_LABELS, y_pred)
    assert first < 1.0
    for _ in range(100):
        lam, _ = lambdarank(SEED_LABELS, y_pred)
        y_pred = y_pred - lam
    assert _ndcg_exp2(SEED_LABELS, y_pred) == 1.0


def test_seed003_printed_lambdas_use_defective_positions():
    # the seed feeds argsort(y_true)[d] + 1 in as document d's position: the mp reference given
    # those positions reproduces its printed lambda_update; the standard lambdas differ
    y_pred = [3.2, 0.4, -0.1, -2.1, 0.5, 0.01]
    seed_positions = np.argsort(-np.array(SEED_LABELS), kind="stable")
    printed = [-0.0548, 0.0303, 0.0587, -0.2099, 0.0851, 0.0906]
    ref, _ = _reference_mp(SEED_LABELS, y_pred, positions=seed_positions)
    np.testing.assert_allclose(ref, printed, atol=6e-5)
    lam, _ = lambdarank(SEED_LABELS, y_pred)
    assert np.max(np.abs(lam - np.array(printed))) > 0.01


# ----------------------------------------------------------------------------- structure


def test_degenerate_queries_give_zeros():
    sizes = [1, 3, 3, 2, 3]
    labels = [4, 2, 2, 2, 0, 0, 0, 1, 0, 3, 1, 2]
    scores = [0.3, 1.0, 0.0, -1.0, 0.5, 0.5, 0.1, 0.2, 0.9, 0.1, 0.2, 0.3]
    lam, hes = lambdarank(labels, scores, sizes, weights=[1, 1, 1, 1, 0])
    assert np.all(lam[:7] == 0) and np.all(hes[:7] == 0)  # one doc, all labels equal, IDCG = 0
    assert np.all(lam[7:9] != 0)
    assert np.all(lam[9:] == 0) and np.all(hes[9:] == 0)  # weight 0
    lam, hes = lambdarank([0, 1, 2], [1.0, 2.0, 3.0], gain=[0.0, 0.0, 0.0])  # zero gains: IDCG = 0
    assert np.all(lam == 0) and np.all(hes == 0)


@given(_cases())
def test_lambdas_sum_to_zero_and_hessians_nonnegative(case):
    sizes, labels, scores, options, weights = case
    lam, hes = lambdarank(labels, scores, sizes, weights=weights, **options)
    for lq, hq in zip(_split(lam, sizes), _split(hes, sizes), strict=True):
        assert abs(lq.sum()) <= 1e-12 * (1 + np.abs(lq).sum())
        assert np.all(hq >= 0)


def test_two_d_input_and_weights_forms():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, (5, 8))
    scores = rng.standard_normal((5, 8))
    w = rng.random(5)
    lam2, hes2 = lambdarank(labels, scores, weights=w)
    assert lam2.shape == (5, 8) and lam2.dtype == np.float64
    lam1, hes1 = lambdarank(labels.ravel(), scores.ravel(), [8] * 5, weights=np.repeat(w, 8))
    np.testing.assert_array_equal(lam2.ravel(), lam1)
    np.testing.assert_array_equal(hes2.ravel(), hes1)
    unweighted, _ = lambdarank(labels, scores)
    np.testing.assert_allclose(lam2, unweighted * w[:, None], rtol=1e-15)


def test_lightgbm_norm_is_damp_plus_rescale():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, 10)
    scores = rng.standard_normal(10)
    base, _ = lambdarank(labels, scores)
    both, _ = lambdarank(labels, scores, damp_score_gap=True, rescale=True)
    ref, _ = _reference_mp(list(labels), list(scores), damp_score_gap=True, rescale=True)
    np.testing.assert_allclose(both, ref, rtol=1e-12)
    assert not np.allclose(base, both)


def test_thread_count_and_query_order_do_not_matter():
    import numba

    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 120, 300)
    labels = rng.integers(0, 5, sizes.sum())
    scores = np.round(rng.standard_normal(sizes.sum()), 1)
    kwargs = {"k": 10, "damp_score_gap": True, "rescale": True}
    one = lambdarank(labels, scores, sizes, n_threads=1, **kwargs)
    many = lambdarank(labels, scores, sizes, n_threads=numba.config.NUMBA_NUM_THREADS, **kwargs)
    np.testing.assert_array_equal(one[0], many[0])
    np.testing.assert_array_equal(one[1], many[1])
    # queries in reverse order: each query's values are bitwise the same
    rev = list(range(len(sizes)))[::-1]
    lab_r = np.concatenate([_split(labels, sizes)[q] for q in rev])
    sco_r = np.concatenate([_split(scores, sizes)[q] for q in rev])
    lam_r, _ = lambdarank(lab_r, sco_r, sizes[rev], **kwargs)
    np.testing.assert_array_equal(np.concatenate(_split(lam_r, sizes[rev])[::-1]), one[0])


def test_large_score_gaps_stay_finite():
    # spans beyond exp's range take the per-pair path; rho saturates to 0 / 1 without NaN
    labels = [0, 1, 2, 0]
    scores = [1e4, -1e4, 0.0, 3.0]
    lam, hes = lambdarank(labels, scores, sigma=2.0)
    ref_l, ref_h = _reference_mp(labels, scores, sigma=2.0)
    assert np.isfinite(lam).all() and np.isfinite(hes).all()
    np.testing.assert_allclose(lam, ref_l, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(hes, ref_h, rtol=1e-12, atol=1e-300)


def test_one_kernel_signature():
    labels = np.array([0, 1, 2, 1])
    for y_true, y_pred in [
        (labels, np.array([0.1, 0.2, 0.3, 0.4])),
        (labels.astype(np.float32), np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)),
        (labels.astype(np.uint8), np.array([1, 2, 3, 4], dtype=np.int16)),
    ]:
        y_pred.flags.writeable = False
        lambdarank(y_true, y_pred, weights=[2.0])
        lambdarank(y_true, y_pred, k=2, rescale=True)
    assert len(lambdarank_queries.signatures) == 1


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"y_true": [1, -1]}, ValueError, "y_true"),
        ({"y_true": [1, 0.5]}, ValueError, "integer labels"),
        ({"y_true": [31, 0]}, ValueError, "exp2 gain supports labels up to 30"),
        ({"y_pred": [np.nan, 0.0]}, ValueError, "NaN or infinite"),
        ({"y_pred": [np.inf, 0.0]}, ValueError, "NaN or infinite"),
        ({"y_pred": [0.0, 1.0, 2.0]}, ValueError, "shape"),
        ({"group": [1, 2]}, ValueError, "sum to 3"),
        ({"group": [0, 2]}, ValueError, ">= 1"),
        ({"group": [1.0, 1.0]}, TypeError, "group"),
        ({"sigma": 0.0}, ValueError, "sigma"),
        ({"sigma": -1.0}, ValueError, "sigma"),
        ({"sigma": "1"}, TypeError, "sigma"),
        ({"k": 0}, ValueError, "k must be >= 1"),
        ({"k": 1.5}, TypeError, "k must be"),
        ({"ideal_k": "all"}, ValueError, "ideal_k"),
        ({"gain": "log"}, ValueError, "gain"),
        ({"gain": [0.0]}, ValueError, "largest label is 1"),
        ({"gain": [1.0, 0.0]}, ValueError, "non-decreasing"),
        ({"gain": [0.0, np.nan]}, ValueError, "finite"),
        ({"hessian_scale": 0}, ValueError, "hessian_scale"),
        ({"damp_score_gap": 1}, TypeError, "damp_score_gap"),
        ({"weights": [1.0, 2.0, 3.0]}, ValueError, "one entry per query"),
        ({"weights": [-1.0]}, ValueError, ">= 0"),
        ({"group": [1, 1], "weights": [1.0, 2.0]}, None, None),
        ({"group": [2], "weights": [1.0, 2.0]}, ValueError, "constant within each query"),
        ({"y_true": ["a", "b"]}, TypeError, "y_true"),
    ],
)
def test_errors(kwargs, error, match):
    args = {"y_true": [1, 0], "y_pred": [0.0, 1.0], **kwargs}
    if error is None:
        lambdarank(**args)
        return
    with pytest.raises(error, match=match):
        lambdarank(**args)


# ----------------------------------------------------------------------------- LightGBM / XGBoost


def _ltr_data(seed=0, n_queries=30, n_features=4):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 25, n_queries)
    n = int(sizes.sum())
    x = rng.standard_normal((n, n_features))
    labels = np.clip(np.round(x[:, 0] + 0.5 * rng.standard_normal(n) + 1.5), 0, 4).astype(np.int64)
    init = rng.standard_normal(n) * 0.5  # distinct initial scores (no ties)
    return sizes, x, labels, init


@pytest.mark.parametrize("norm", [False, True])
def test_lightgbm_builtin_objective_matches(norm):
    lgb = pytest.importorskip("lightgbm")
    sizes, x, labels, init = _ltr_data()
    k = 10
    params = {"learning_rate": 1.0, "num_leaves": 8, "min_data_in_leaf": 5, "verbose": -1, "num_threads": 1,
              "deterministic": True, "force_row_wise": True, "lambdarank_truncation_level": k,
              "lambdarank_norm": norm, "seed": 0}

    def objective(preds, data):
        return lambdarank(data.get_label(), preds, data.get_group(), k=k, damp_score_gap=norm, rescale=norm)

    def train(objective_param):
        data = lgb.Dataset(x, labels, group=sizes, init_score=init, free_raw_data=False)
        booster = lgb.train({**params, "objective": objective_param}, data, num_boost_round=3)
        return booster.predict(x, raw_score=True)

    builtin = train("lambdarank")
    custom = train(objective)
    # LightGBM's logistic is a 2**20-entry table and its gradients float32: agreement to ~1e-5
    np.testing.assert_allclose(custom, builtin, rtol=1e-4, atol=5e-4)
    assert np.max(np.abs(builtin - init)) > 0.5  # the trees did move the scores


def test_lightgbm_custom_objective_improves_ndcg():
    lgb = pytest.importorskip("lightgbm")
    sizes, x, labels, _ = _ltr_data(seed=1)

    def objective(preds, data):
        return lambdarank(data.get_label(), preds, data.get_group(), k=30)

    data = lgb.Dataset(x, labels, group=sizes)
    booster = lgb.train({"objective": objective, "learning_rate": 0.1, "verbose": -1, "num_leaves": 8},
                        data, num_boost_round=20)
    pred = booster.predict(x)
    before = np.mean([_ndcg_exp2(lq, np.zeros(len(lq))) for lq in _split(labels, sizes)])
    after = np.mean([_ndcg_exp2(lq, pq) for lq, pq in zip(_split(labels, sizes), _split(pred, sizes), strict=True)])
    assert after > before + 0.1


def test_xgboost_builtin_objective_matches():
    xgb = pytest.importorskip("xgboost")
    sizes, x, labels, init = _ltr_data(seed=2)
    base = {"eta": 1.0, "max_depth": 3, "tree_method": "exact", "nthread": 1, "base_score": 0.0,
            "lambda": 1.0, "min_child_weight": 0.0}
    builtin_params = {**base, "objective": "rank:ndcg", "lambdarank_pair_method": "topk",
                      "lambdarank_num_pair_per_sample": int(sizes.max()), "ndcg_exp_gain": True,
                      "lambdarank_normalization": False, "lambdarank_score_normalization": False}
    qid = np.repeat(np.arange(len(sizes)), sizes)

    def fit(params, obj=None):
        data = xgb.DMatrix(x, labels, qid=qid, base_margin=init)
        booster = xgb.train(params, data, num_boost_round=3, obj=obj)
        return booster.predict(xgb.DMatrix(x, base_margin=init), output_margin=True)

    def objective(preds, data):
        return lambdarank(data.get_label(), preds, sizes, hessian_scale=2.0)

    builtin = fit(builtin_params)
    custom = fit({**base, "disable_default_eval_metric": True}, objective)
    # same float32 gradients up to rounding: agreement to float32 precision
    np.testing.assert_allclose(custom, builtin, rtol=1e-5, atol=1e-5)
    assert np.max(np.abs(builtin - init)) > 0.5
