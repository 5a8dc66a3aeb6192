"""Engine properties: one compiled signature per kernel, thread-count independence, lazy
compilation, metric grammar, curves, wide labels and memory-mapped inputs."""

import os
import subprocess
import sys

import numpy as np
import pytest

import fasttie as ft
from fasttie._kernels import class_sort, hamming_ties, histogram


def _data(n_bits=64, n_q=7, n_db=300, seed=0, n_classes=3):
    rng = np.random.default_rng(seed)
    return (
        rng.integers(0, 2, (n_q, n_bits)), rng.integers(0, 2, (n_db, n_bits)),
        rng.integers(0, n_classes, n_q), rng.integers(0, n_classes, n_db),
    )


def test_import_compiles_nothing():
    code = (
        "import fasttie, numba.core.registry as r\n"
        "from fasttie._kernels import histogram, hamming_ties\n"
        "assert not histogram.hist_segments_one_word.signatures and not hamming_ties.finalize_histograms.signatures\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_one_signature_per_kernel(tmp_path):
    q, db, ql, dl = _data()
    np.save(tmp_path / "db.npy", db.astype(np.int8))
    mapped = np.load(tmp_path / "db.npy", mmap_mode="r")
    frozen = db.astype(np.float32)
    frozen.flags.writeable = False
    for database in (db, db.astype(bool), frozen, mapped, ft.pack_codes(mapped)):
        for labels in (dl, dl.astype(np.uint8), dl.astype(np.int64)):
            for ties in ("average", "stable"):
                ft.evaluate(q, database, ql.astype(np.int16), labels, metrics=["AP@5", "nDCG"], ties=ties)
    for kernel in (
        histogram.hist_segments_one_word, hamming_ties.finalize_histograms, hamming_ties.finalize_stable,
        class_sort.sort_by_class,
    ):
        assert len(kernel.signatures) == 1, (kernel, kernel.signatures)


@pytest.mark.parametrize("ties", ["average", "stable", "optimistic"])
@pytest.mark.parametrize("labels", ["class", "multihot", "listed"])
def test_bitwise_identical_across_thread_counts(ties, labels):
    q, db, ql, dl = _data(n_bits=32, n_q=9, n_db=2000, seed=3)
    if labels == "class":
        kwargs = dict(query_labels=ql, db_labels=dl)
    elif labels == "multihot":
        rng = np.random.default_rng(1)
        kwargs = dict(query_labels=rng.integers(0, 2, (9, 5)), db_labels=rng.integers(0, 2, (2000, 5)))
    else:
        rng = np.random.default_rng(2)
        counts = rng.integers(0, 30, 9)
        indices = np.concatenate([rng.choice(2000, c, replace=False) for c in counts])
        kwargs = dict(relevance=(np.r_[0, np.cumsum(counts)], indices, rng.integers(1, 4, len(indices))))
    metrics = ["AP", "AP@50", "nDCG@20", "WAP@30", "RR", "Rprec", "P(radius=10)"]
    one = ft.evaluate(q, db, metrics=metrics, ties=ties, n_threads=1, **kwargs)
    two = ft.evaluate(q, db, metrics=metrics, ties=ties, n_threads=2, **kwargs)
    for name in one.per_query:
        assert one.per_query[name].tobytes() == two.per_query[name].tobytes()
        assert one.mean[name] == two.mean[name]


def test_metric_names_and_aliases():
    names = [m.name for m in ft.parse_metrics(["mAP@1000", "map@ALL", "ndcg@10", "precision@5", "recall@5",
                                                "mrr", "P@[1, 10,100]", "P(radius=2)", "rprec", "WAP"])]
    assert names == ["AP@1000", "AP", "nDCG@10", "P@5", "R@5", "RR", "P@1", "P@10", "P@100", "P(radius=2)",
                     "Rprec", "WAP"]
    q, db, ql, dl = _data()
    res = ft.evaluate(q, db, ql, dl, metrics=["mAP@10", "AP@10"])
    assert list(res.mean) == ["AP@10"]


def test_result_to_dict_and_json_round_trip():
    import json

    q, db, ql, dl = _data()
    ql[0] = 99  # one empty query
    res = ft.evaluate(q, db, ql, dl, metrics=["AP", "P@5"], empty="skip")
    data = json.loads(res.to_json())
    assert data["n_empty"] == res.n_empty == 1 and data["n_queries"] == 7
    assert data["per_query"]["AP"][0] is None
    assert data["mean"]["AP"] == pytest.approx(np.nanmean(res.per_query["AP"]))
    assert data["settings"]["ties"] == "average"


def test_curves_match_metrics():
    q, db, ql, dl = _data(n_bits=16)
    res = ft.evaluate(q, db, ql, dl, metrics=["P(radius=3)", "R@20"], curves=[5, 20, 300])
    c = res.curves
    assert list(c["radius"]) == list(range(17)) and list(c["n"]) == [5, 20, 300]
    assert c["precision_by_radius"][3] == res.mean["P(radius=3)"]
    assert c["recall_at_n"][1] == res.mean["R@20"]
    assert c["recall_by_radius"][16] == pytest.approx(1.0)
    assert np.all(np.diff(c["recall_at_n"]) >= 0)


@pytest.mark.parametrize("n_labels", [2, 64, 65, 81, 128])  # one column is an error (test_errors)
def test_multihot_grades_count_shared_labels(n_labels):
    rng = np.random.default_rng(n_labels)
    q, db, _, _ = _data(n_bits=8, n_q=4, n_db=40)
    ql = rng.integers(0, 2, (4, n_labels))
    dl = rng.integers(0, 2, (40, n_labels))
    grades = ql @ dl.T
    via_labels = ft.evaluate(q, db, ql, dl, metrics=["nDCG@7", "WAP@9", "ACG@5"], ties="stable")
    indptr = np.r_[0, np.cumsum((grades > 0).sum(1))]
    indices = np.concatenate([np.flatnonzero(g) for g in grades])
    listed = (indptr, indices, np.concatenate([g[g > 0] for g in grades]))
    via_listed = ft.evaluate(q, db, relevance=listed, metrics=["nDCG@7", "WAP@9", "ACG@5"], ties="stable")
    for name in via_labels.per_query:
        np.testing.assert_array_equal(via_labels.per_query[name], via_listed.per_query[name])


def test_large_and_negative_class_ids_are_remapped():
    q, db, ql, dl = _data()
    base = ft.evaluate(q, db, ql, dl, metrics=["AP", "nDCG@5"])
    shifted = ft.evaluate(q, db, ql * 10**12 - 7, dl * 10**12 - 7, metrics=["AP", "nDCG@5"])
    for name in base.per_query:
        np.testing.assert_array_equal(base.per_query[name], shifted.per_query[name])


def test_packed_inputs_give_identical_results():
    q, db, ql, dl = _data(n_bits=70)
    raw = ft.evaluate(q, db, ql, dl, metrics=["AP", "P@3"])
    packed_q = ft.pack_codes(np.packbits(q, axis=1, bitorder="little").astype(np.uint8), packed=True,
                             n_bits=70, bitorder="little")
    packed = ft.evaluate(packed_q, ft.pack_codes(2 * db - 1), ql, dl, metrics=["AP", "P@3"])
    for name in raw.per_query:
        np.testing.assert_array_equal(raw.per_query[name], packed.per_query[name])


def test_doctest_example_values():
    q = np.array([[1, 1]])
    db = np.array([[1, -1], [-1, 1]])
    res = ft.evaluate(q, db, np.array([0]), np.array([0, 1]), metrics=["AP", "P@1"])
    assert res.mean == {"AP": 0.75, "P@1": 0.5}


@pytest.mark.parametrize("n_bits", [1, 63, 64, 96, 128, 192, 256, 1024])
@pytest.mark.parametrize("labels", ["class", "multihot", "listed"])
def test_histogram_pass_matches_numpy_distances(n_bits, labels):
    """P and R within every radius are differences of the (distance, relevant) histogram."""
    rng = np.random.default_rng(n_bits)
    q, db = rng.integers(0, 2, (5, n_bits)), rng.integers(0, 2, (120, n_bits))
    q[:, : n_bits // 2] = db[0, : n_bits // 2]  # spread the distances
    if labels == "class":
        ql, dl = rng.integers(0, 3, 5), rng.integers(0, 3, 120)
        relevant = ql[:, None] == dl[None]
        kwargs = dict(query_labels=ql, db_labels=dl)
    elif labels == "multihot":
        ql, dl = rng.integers(0, 2, (5, 4)), rng.integers(0, 2, (120, 4))
        relevant = (ql @ dl.T) > 0
        kwargs = dict(query_labels=ql, db_labels=dl)
    else:
        relevant = rng.random((5, 120)) < 0.2
        kwargs = dict(relevance=(np.r_[0, np.cumsum(relevant.sum(1))], np.flatnonzero(relevant) % 120))
    dist = (q[:, None, :] != db[None]).sum(axis=2)
    radii = sorted({0, 1, n_bits // 4, n_bits // 2, n_bits})
    metrics = [f"{m}(radius={r})" for r in radii for m in ("P", "R")]
    res = ft.evaluate(q, db, metrics=metrics, **kwargs)
    for r in radii:
        within = dist <= r
        hits = (within & relevant).sum(1)
        precision = np.divide(hits, within.sum(1), out=np.zeros(5), where=within.sum(1) > 0)
        recall = np.divide(hits, relevant.sum(1), out=np.zeros(5), where=relevant.sum(1) > 0)
        np.testing.assert_array_equal(res.per_query[f"P(radius={r})"], precision)
        np.testing.assert_array_equal(res.per_query[f"R(radius={r})"], recall)


@pytest.mark.parametrize("n_bits", [128, 192, 256, 1024])
@pytest.mark.parametrize("ties", ["stable", "optimistic"])
def test_fixed_orders_on_wide_codes(n_bits, ties):
    """The stable pass and the grade-split ties on multi-word codes, against plain metrics."""
    from oracle import parse_metric, plain_metric

    rng = np.random.default_rng(n_bits)
    q, db = rng.integers(0, 2, (4, n_bits)), rng.integers(0, 2, (300, n_bits))
    db[:150, : n_bits - 6] = q[0, : n_bits - 6]  # many ties for query 0
    ql, dl = rng.integers(0, 2, (4, 5)), rng.integers(0, 2, (300, 5))
    grades = ql @ dl.T
    dist = (q[:, None, :] != db[None]).sum(axis=2)
    names = ["AP", "AP@20", "nDCG@10", "RR", "WAP@50", "Rprec"]
    res = ft.evaluate(q, db, ql, dl, metrics=names, ties=ties)
    for i in range(4):
        if grades[i].max() == 0:
            assert all(res.per_query[name][i] == 0 for name in names)  # empty="zero"
            continue
        key = (dist[i], -grades[i]) if ties == "optimistic" else (dist[i],)
        order = np.lexsort(key[::-1]) if ties == "optimistic" else np.argsort(dist[i], kind="stable")
        for name in names:
            expected = float(plain_metric(list(grades[i][order]), parse_metric(name)))
            assert res.per_query[name][i] == pytest.approx(expected, rel=1e-12, abs=1e-12), (i, name)


def test_database_already_ordered_by_class_gives_identical_results():
    q, db, ql, dl = _data(n_bits=20, n_db=500, n_classes=4)
    order = np.argsort(dl, kind="stable")
    shuffled = ft.evaluate(q, db, ql, dl, metrics=["AP", "nDCG@30", "P(radius=5)"])
    ordered = ft.evaluate(q, db[order], ql, dl[order], metrics=["AP", "nDCG@30", "P(radius=5)"])
    for name in shuffled.per_query:
        np.testing.assert_array_equal(shuffled.per_query[name], ordered.per_query[name])


def test_the_suite_compiles_into_the_folder_keyed_by_the_kernel_sources():
    # numba reads NUMBA_CACHE_DIR once, on import: anything that imports numba before
    # tests/conftest.py sets it (a pytest warning filter naming a numba class did) would let
    # kernels compiled from older callees load from the package's cache
    import numba

    # the folder tests/conftest.py names, or the caller's own NUMBA_CACHE_DIR (CI's jobs set one)
    assert numba.config.CACHE_DIR == os.environ["NUMBA_CACHE_DIR"] != ""
