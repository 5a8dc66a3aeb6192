"""fasttie.hamming.spreads: ``spread=True`` and ``"range"`` on the Hamming door read each block's
counts; their standard deviations and extremes over tie orders are the ranked-list door's on the
same rankings (each query's items scored by minus their Hamming distance, computed here with
numpy), which computes them from scores through kernels of its own."""

import numpy as np
import pytest

import fasttie as ft
from fasttie.hamming.options import HammingOptions
from fasttie.hamming.spreads import spread_callbacks, with_spreads

METRICS = ["AP", "P@5", "nDCG@10", "RR", "R@8", "AP@3", "AP@10", "AP@100"]


def _case(seed, n_bits=6):
    rng = np.random.default_rng(seed)
    n_q, n_db = int(rng.integers(1, 6)), int(rng.integers(5, 60))
    queries = rng.integers(0, 2, (n_q, n_bits)).astype(np.uint8)
    database = rng.integers(0, 2, (n_db, n_bits)).astype(np.uint8)
    ql, dl = rng.integers(0, 3, n_q), rng.integers(0, 3, n_db)
    distances = (queries[:, None, :] != database[None, :, :]).sum(-1)
    return queries, database, ql, dl, distances


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("spread", [True, "range"])
@pytest.mark.parametrize("ap_denominator", ["retrieved", "total"])
def test_hamming_spreads_are_the_ranked_list_doors(seed, spread, ap_denominator):
    queries, database, ql, dl, distances = _case(seed)
    n_q, n_db = distances.shape
    hamming = ft.evaluate(ft.pack_codes(queries), ft.pack_codes(database), ql, dl, metrics=METRICS, spread=spread,
                          ap_denominator=ap_denominator)
    y_true = (ql[:, None] == dl[None, :]).astype(float).ravel()
    lists = ft.rank_evaluate(y_true, -distances.astype(float).ravel(), np.full(n_q, n_db), metrics=METRICS,
                             spread=spread, ap_denominator=ap_denominator)
    assert set(hamming.tie_min) == set(lists.tie_min) == set(METRICS)
    for name in METRICS:
        assert np.allclose(hamming.tie_min[name], lists.tie_min[name], rtol=1e-12, atol=1e-12)
        assert np.allclose(hamming.tie_max[name], lists.tie_max[name], rtol=1e-12, atol=1e-12)
        assert np.all(hamming.tie_min[name] <= hamming.per_query[name] + 1e-12)
        assert np.all(hamming.per_query[name] <= hamming.tie_max[name] + 1e-12)
        if spread is True:
            assert np.allclose(hamming.tie_std[name], lists.tie_std[name], rtol=1e-9, atol=1e-12)
        else:
            assert name not in hamming.tie_std


def test_no_spread_no_callbacks():
    assert spread_callbacks(HammingOptions(), [], 2, 0, 0, "class") == (None, None, None)
    result = ft.evaluate(*[ft.pack_codes(x) for x in _case(0)[:2]], *_case(0)[2:4], metrics=["AP"])
    assert with_spreads(result, [], None, None) is result
