"""ft.knn_recall: recall@k of returned ids against the exact Hamming k-NN cut inside a tie.

References, none of them fasttie's formula:

* the definition: every way of completing the true top k from the items tied at the k-th
  distance, enumerated (itertools.combinations), the set recall of each as an exact Fraction;
  "average" is their mean, "pessimistic" their minimum, "optimistic" counts every tied item;
* ann-benchmarks' rule (``ann_benchmarks/plotting/metrics.py``, ``knn_threshold`` and
  ``get_recall_values``): a run's first k distances within the k-th true distance + 1e-3;
* big-ann-benchmarks' rule (``benchmark/plotting/metrics.py``,
  ``compute_recall_with_distance_ties``): the ground truth ids extended while their distance
  ties with the k-th, intersected as sets with the run's ids;
  both written again here in numpy from their description, on distances from ``oracle``.
"""

import importlib
import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft

from helpers import CODE_FORMATS, encode_codes
from oracle import hamming_distances

MODES = ("average", "optimistic", "pessimistic")
# the package exports the function under the module's name
knn_recall_module = importlib.import_module("fasttie.hamming.knn_recall")


def _tie_picks(distances_row, returned_row, k):
    """(set recall of every completion of the true top k, the optimistic count's recall, b <= need)
    from one query's distances to every database item, by enumeration."""
    kth = np.sort(distances_row, kind="stable")[k - 1]
    closer = set(np.flatnonzero(distances_row < kth).tolist())
    tied = np.flatnonzero(distances_row == kth).tolist()
    need = k - len(closer)
    returned = {int(i) for i in returned_row[:k] if i >= 0}
    recalls = [Fraction(len(returned & (closer | set(pick))), k) for pick in itertools.combinations(tied, need)]
    within = Fraction(len(returned & (closer | set(tied))), k)
    return recalls, within, len(returned & set(tied)) <= need


def _ann_benchmarks(distances, returned, k):
    """ann-benchmarks: per query, how many of the run's first k distances lie within the k-th true
    distance + epsilon, over k (the run holds no repeated ids and no padding)."""
    true_sorted = np.sort(distances, axis=1)
    run = np.take_along_axis(distances, returned[:, :k], axis=1).astype(np.float64)
    threshold = true_sorted[:, k - 1] + 1e-3
    return (run <= threshold[:, None]).sum(axis=1) / k


def _big_ann_benchmarks(distances, returned, k):
    """big-ann-benchmarks: the full-depth ground truth (ids by distance) cut after the last id
    tied with the k-th, intersected as sets with the run's ids, over k."""
    out = np.empty(len(distances))
    for q, row in enumerate(distances):
        true_ids = np.argsort(row, kind="stable")
        true_dists = row[true_ids].astype(np.float64)
        end = k
        while end < len(true_ids) and abs(true_dists[end] - true_dists[k - 1]) < 1e-6:
            end += 1
        out[q] = len(set(true_ids[:end].tolist()) & set(returned[q].tolist())) / k
    return out


def _random_codes(rng, n, n_bits, fmt):
    return encode_codes(rng.integers(0, 2, (n, n_bits)), fmt)


@settings(max_examples=60)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 3, 4, 5, 6, 64, 65]), st.sampled_from(CODE_FORMATS),
       st.booleans())
def test_the_three_modes_against_every_tie_pick(seed, n_bits, fmt, packed):
    """Exact values: the mean and the minimum over every completion of the true top k, and the
    optimistic count, as Fractions rounded once; average between the other two."""
    rng = np.random.default_rng(seed)
    n_q, n_db = int(rng.integers(1, 4)), int(rng.integers(1, 10))
    k = int(rng.integers(1, n_db + 1))
    queries, database = _random_codes(rng, n_q, n_bits, fmt), _random_codes(rng, n_db, n_bits, fmt)
    # repeats, -1 padding, fewer or more columns than k: all allowed
    returned = rng.integers(-1, n_db, (n_q, int(rng.integers(0, n_db + 3))))
    distances = hamming_distances(queries, database)
    if packed:
        queries, database = ft.pack_codes(queries), ft.pack_codes(database)
    got = {t: ft.knn_recall(queries, database, returned, k, ties=t) for t in MODES}
    for q in range(n_q):
        recalls, within, best_is_within = _tie_picks(distances[q], returned[q], k)
        assert got["average"].per_query[f"Recall@{k}"][q] == float(sum(recalls) / len(recalls))
        assert got["pessimistic"].per_query[f"Recall@{k}"][q] == float(min(recalls))
        assert got["optimistic"].per_query[f"Recall@{k}"][q] == float(within)
        assert within >= max(recalls) and (within == max(recalls)) == best_is_within
    for t in MODES:
        per_query = got[t].per_query[f"Recall@{k}"]
        assert got[t].mean[f"Recall@{k}"] == per_query.mean() and got[t].n_queries == n_q
        assert got[t].settings["ties"] == t and got[t].settings["k"] == k
    assert (got["pessimistic"].per_query[f"R@{k}"] <= got["average"].per_query[f"R@{k}"]).all()
    assert (got["average"].per_query[f"R@{k}"] <= got["optimistic"].per_query[f"R@{k}"]).all()


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.sampled_from([3, 5, 8, 16, 70]))
def test_optimistic_is_the_rule_of_ann_benchmarks_and_big_ann_benchmarks(seed, n_bits):
    rng = np.random.default_rng(seed)
    n_q, n_db = int(rng.integers(1, 6)), int(rng.integers(1, 60))
    k = int(rng.integers(1, n_db + 1))
    queries, database = rng.integers(0, 2, (n_q, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    # distinct ids per row, as an index returns them (ann-benchmarks would count a repeat twice)
    returned = np.stack([rng.permutation(n_db)[:k] for _ in range(n_q)])
    distances = hamming_distances(queries, database)
    got = ft.knn_recall(queries, database, returned, k, ties="optimistic").per_query[f"Recall@{k}"]
    np.testing.assert_array_equal(got, _ann_benchmarks(distances, returned, k))
    np.testing.assert_array_equal(got, _big_ann_benchmarks(distances, returned, k))


def test_an_approximate_index_from_a_random_subset():
    """An "index" that searches half of the database exactly: its recall by enumeration where the
    tie is small enough to enumerate, and the ordering of the modes everywhere."""
    rng = np.random.default_rng(7)
    n_bits, n_db, n_q, k = 12, 3000, 40, 10
    database, queries = rng.integers(0, 2, (n_db, n_bits)), rng.integers(0, 2, (n_q, n_bits))
    subset = np.sort(rng.choice(n_db, n_db // 2, replace=False))
    local, _ = ft.search(queries, database[subset], k=k)
    returned = subset[local]
    distances = hamming_distances(queries, database)
    got = {t: ft.knn_recall(queries, database, returned, k, ties=t).per_query[f"Recall@{k}"] for t in MODES}
    checked = 0
    for q in range(n_q):
        kth = np.sort(distances[q])[k - 1]
        n_tied, need = int((distances[q] == kth).sum()), k - int((distances[q] < kth).sum())
        if len(list(itertools.islice(itertools.combinations(range(n_tied), need), 5001))) > 5000:
            continue
        recalls, within, _ = _tie_picks(distances[q], returned[q], k)
        assert got["average"][q] == float(sum(recalls) / len(recalls))
        assert got["pessimistic"][q] == float(min(recalls)) and got["optimistic"][q] == float(within)
        checked += 1
    assert checked >= 5
    assert (got["pessimistic"] <= got["average"]).all() and (got["average"] <= got["optimistic"]).all()
    assert got["pessimistic"].mean() < got["average"].mean() < got["optimistic"].mean() < 1


def test_the_exact_search_scores_one_only_where_the_top_k_is_not_cut():
    """fasttie's own exact k-NN (ties in index order) holds ``need`` of the ``n_D`` tied items:
    optimistic 1 always, average and pessimistic 1 exactly where no tie is cut."""
    rng = np.random.default_rng(3)
    queries, database = rng.integers(0, 2, (30, 16)), rng.integers(0, 2, (200, 16))
    k = 7
    ids, dist = ft.search(queries, database, k=k)
    full = np.sort(hamming_distances(queries, database), axis=1)
    not_cut = full[:, k - 1] != full[:, k]
    assert not_cut.any() and not not_cut.all()
    got = {t: ft.knn_recall(queries, database, ids, k, ties=t).per_query[f"Recall@{k}"] for t in MODES}
    assert (got["optimistic"] == 1).all()
    for t in ("average", "pessimistic"):
        assert (got[t][not_cut] == 1).all() and (got[t][~not_cut] < 1).all()


def test_padding_repeats_and_columns_past_k():
    """-1 and a repeated id count as misses; columns past k are not read; fewer columns than k
    still divide by k."""
    rng = np.random.default_rng(11)
    queries, database = rng.integers(0, 2, (5, 8)), rng.integers(0, 2, (60, 8))
    k = 4
    ids, _ = ft.search(queries, database, k=k)
    for t in MODES:
        def recall(returned, t=t):
            return ft.knn_recall(queries, database, returned, k, ties=t).per_query[f"Recall@{k}"]

        base = recall(ids)
        far = np.argmax(hamming_distances(queries, database), axis=1)  # a miss in every mode
        padded, repeated, missed = ids.copy(), ids.copy(), ids.copy()
        padded[:, 1], repeated[:, 1], missed[:, 1] = -1, ids[:, 0], far
        np.testing.assert_array_equal(recall(padded), recall(repeated))
        np.testing.assert_array_equal(recall(padded), recall(missed))
        assert (recall(padded) < base).all()
        np.testing.assert_array_equal(recall(np.c_[ids, rng.integers(0, 60, (5, 3))]), base)
        np.testing.assert_array_equal(recall(ids[:, :2]), recall(np.c_[ids[:, :2], -np.ones((5, 2), int)]))
        np.testing.assert_array_equal(recall(np.full((5, 0), 0)), np.zeros(5))


def test_threads_and_query_blocks_do_not_change_the_values(monkeypatch):
    rng = np.random.default_rng(5)
    queries, database = rng.integers(0, 2, (37, 130)), rng.integers(0, 2, (500, 130))
    database[:100, :120] = queries[rng.integers(0, 37, 100), :120]  # near neighbours, ties among them
    returned, _ = ft.search(queries, database, k=12)
    returned[:, ::3] = rng.integers(-1, 500, (37, 4))
    want = {t: ft.knn_recall(queries, database, returned, 10, ties=t, n_threads=1).per_query["Recall@10"]
            for t in MODES}
    assert 0 < want["pessimistic"].mean() < want["optimistic"].mean() < 1
    for t in MODES:
        np.testing.assert_array_equal(
            ft.knn_recall(queries, database, returned, 10, ties=t, n_threads=2).per_query["Recall@10"], want[t])
    monkeypatch.setattr(knn_recall_module, "_CHUNK_BYTES", 3000)  # one query per block
    for t in MODES:
        np.testing.assert_array_equal(
            ft.knn_recall(queries, database, returned, 10, ties=t, n_threads=2).per_query["Recall@10"], want[t])


def test_the_result_round_trips_and_names_its_conventions():
    rng = np.random.default_rng(2)
    res = ft.knn_recall(rng.integers(0, 2, (3, 9)), rng.integers(0, 2, (20, 9)), rng.integers(0, 20, (3, 5)), 5,
                        ties="pessimistic")
    assert res.settings == {"ties": "pessimistic", "k": 5, "n_db": 20, "n_bits": 9, "n_returned": 5,
                            "relevance": "exact k-NN"}
    back = ft.Result.from_json(res.to_json())
    assert back.mean == res.mean
    np.testing.assert_array_equal(back.per_query["Recall@5"], res.per_query["Recall@5"])


@pytest.mark.parametrize(
    "change, error, argument",
    [
        (dict(returned_ids=np.zeros((3, 2))), TypeError, "returned_ids"),
        (dict(returned_ids=np.zeros((3, 2), dtype=bool)), TypeError, "returned_ids"),
        (dict(returned_ids=np.zeros(3, dtype=int)), ValueError, "returned_ids"),
        (dict(returned_ids=np.zeros((2, 2), dtype=int)), ValueError, "returned_ids"),
        (dict(returned_ids=np.full((3, 2), 10)), ValueError, "returned_ids"),
        (dict(returned_ids=np.full((3, 2), -2)), ValueError, "returned_ids"),
        (dict(k=0), ValueError, "k"),
        (dict(k=11), ValueError, "k"),
        (dict(k=2.0), TypeError, "k"),
        (dict(k=True), TypeError, "k"),
        (dict(ties="stable"), ValueError, "ties"),
        (dict(ties="best"), ValueError, "ties"),
        (dict(ties=None), TypeError, "ties"),
        (dict(queries=np.ones((3, 5), dtype=int)), ValueError, "n_bits"),
    ],
)
def test_bad_input_names_the_argument(change, error, argument):
    rng = np.random.default_rng(0)
    args = dict(queries=rng.integers(0, 2, (3, 6)), database=rng.integers(0, 2, (10, 6)),
                returned_ids=np.zeros((3, 2), dtype=int), k=2)
    args.update(change)
    with pytest.raises(error) as caught:
        ft.knn_recall(args.pop("queries"), args.pop("database"), args.pop("returned_ids"), args.pop("k"), **args)
    assert caught.value.argument == argument and argument in str(caught.value)
