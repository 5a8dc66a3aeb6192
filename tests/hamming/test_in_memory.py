"""fasttie.hamming.in_memory: a database in memory gives the same values, tie spread and extremes
for any chunking of the queries and any thread count, keyed as asked, and is bitwise the
database read tile by tile (fasttie.hamming.streamed) and the sum of tie statistics."""

import numpy as np
import pytest

import fasttie as ft
from fasttie.codes import pack_pair
from fasttie.hamming import engine
from fasttie.hamming.engine import hashing_metrics
from fasttie.hamming.in_memory import evaluate_in_memory
from fasttie.hamming.options import HammingOptions
from fasttie.relevance import make_relevance

METRICS = ["mAP@10", "AP", "ndcg@5", "P@3", "RR", "R(radius=3)"]


def _case(seed, n_q=11, n_db=150, n_bits=12):
    rng = np.random.default_rng(seed)
    queries = rng.integers(0, 2, (n_q, n_bits)).astype(np.uint8)
    database = rng.integers(0, 2, (n_db, n_bits)).astype(np.uint8)
    return queries, database, rng.integers(0, 4, n_q), rng.integers(0, 4, n_db)


def _in_memory(case, options, n_threads):
    queries, database, query_labels, db_labels = case
    query_codes, db_codes = pack_pair(queries, database)
    spec = make_relevance(query_labels, db_labels, None, query_codes.n, db_codes.n)
    return evaluate_in_memory(query_codes, db_codes, spec, hashing_metrics(METRICS), METRICS, options,
                              n_threads=n_threads, progress=False)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ties, spread", [("average", True), ("pessimistic", False), ("stable", False)])
def test_any_chunking_and_thread_count_give_the_same_bits(monkeypatch, seed, ties, spread):
    case = _case(seed)
    options = HammingOptions(ties=ties, spread=spread, curves=[1, 5])
    whole = _in_memory(case, options, 1)
    assert list(whole.mean) == METRICS  # keyed as asked
    monkeypatch.setattr(engine, "HIST_BUDGET", 2 * 13 * 4 * 8)  # chunks of two queries
    for n_threads in (1, 2, 3):
        chunked = _in_memory(case, options, n_threads)
        for name in METRICS:
            np.testing.assert_array_equal(chunked.per_query[name], whole.per_query[name])
            if spread:
                np.testing.assert_array_equal(chunked.tie_std[name], whole.tie_std[name])
                np.testing.assert_array_equal(chunked.tie_min[name], whole.tie_min[name])
                np.testing.assert_array_equal(chunked.tie_max[name], whole.tie_max[name])
        for name, curve in whole.curves.items():
            np.testing.assert_array_equal(chunked.curves[name], curve)


@pytest.mark.parametrize("ties", ["average", "stable"])
def test_in_memory_is_the_streamed_pass_and_the_summed_statistics(tmp_path, ties):
    queries, database, query_labels, db_labels = case = _case(5)
    got = _in_memory(case, HammingOptions(ties=ties), None)
    np.save(tmp_path / "a.npy", database[:70]), np.save(tmp_path / "b.npy", database[70:])
    streamed = ft.evaluate(queries, [tmp_path / "a.npy", tmp_path / "b.npy"], query_labels, db_labels,
                           metrics=METRICS, ties=ties)
    for name in METRICS:
        np.testing.assert_array_equal(got.per_query[name], streamed.per_query[name])
    assert got.settings == streamed.settings
    if ties == "average":
        summed = (ft.tie_stats(queries, database[:70], query_labels, db_labels[:70])
                  + ft.tie_stats(queries, database[70:], query_labels, db_labels[70:])).finalize(METRICS)
        for name in METRICS:
            np.testing.assert_array_equal(got.per_query[name], summed.per_query[name])
