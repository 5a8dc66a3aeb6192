"""AP and F1 within a Hamming radius: ``AP(radius=r)`` (mAP@H<=r) and ``F1(radius=r)``.

References, each independent of fasttie's closed forms:

* the definition: every order inside each distance's tie enumerated (labelled permutations),
  AP of the items within r computed per order in exact fractions and averaged; the fixed
  orders (optimistic, pessimistic, stable) as the one order each names;
* DeepHash (thulab/DeepHash, ``DeepHash/evaluation/__init__.py``, commit 9907613,
  ``MAPs.get_precision_recall_by_Hamming_Radius_All``, lines 143-189): per query and radius r,
  the items with distance <= r in ``np.argsort`` order, AP = sum of cumsum / rank at the
  relevant ranks over the relevant items within r (lines 185-188; 0 when there are none, or
  nothing within r: the zeros of line 153), precision and recall within r (lines 181-182),
  relevant = sharing a label; re-implemented below with a stable argsort, which is
  ``ties="stable"`` (their default quicksort is not stable: on tied distances it agrees with
  no fixed tie order in general);
* F-measure within a radius (dayongt/MetricsForRetrieval-TensorFlow2, ``metrics.py``, commit
  6ba184e, ``fmeasure``, lines 56-76): per query P = TP / RP, R = TP / AP within the radius,
  beta * mean(P R / (P + R)) with beta = 2, i.e. the mean of the per-query F1 (NaN where a
  query has P + R = 0, where fasttie gives 0).
"""

import itertools
from fractions import Fraction

import numpy as np
import pytest

import fasttie as ft
from fasttie.errors import InputError

DENOMINATORS = ("retrieved", "total", "min")
TIES = ("average", "optimistic", "pessimistic", "stable")


def _orders(distances, grades, ties):
    """Every ranking of the database by distance that ``ties`` allows (labelled orders)."""
    buckets = [np.flatnonzero(distances == d) for d in np.unique(distances)]
    if ties == "average":
        choices = [list(itertools.permutations(bucket)) for bucket in buckets]
    elif ties == "stable":
        choices = [[tuple(bucket)] for bucket in buckets]
    else:  # higher grades first (optimistic) or last, database order among equal grades
        sign = -1 if ties == "optimistic" else 1
        choices = [[tuple(sorted(bucket, key=lambda i: (sign * grades[i], i)))] for bucket in buckets]
    for combination in itertools.product(*choices):
        yield [i for bucket in combination for i in bucket]


def oracle_ap_within(distances, grades, radius, ties, denominator):
    """The mean over the tie orders of AP of the items within ``radius``, exact."""
    relevant = grades > 0
    within = int((distances <= radius).sum())
    total = int(relevant.sum())
    values = []
    for order in _orders(distances, grades, ties):
        hits, precisions = 0, Fraction(0)
        for rank, item in enumerate(order[:within], 1):
            if relevant[item]:
                hits += 1
                precisions += Fraction(hits, rank)
        den = {"retrieved": hits, "total": total, "min": min(within, total)}[denominator]
        values.append(precisions / den if den else Fraction(0))
    return sum(values) / len(values)


def _case(rng, n_queries, n_db, n_bits, kind):
    queries = rng.integers(0, 2, (n_queries, n_bits))
    database = rng.integers(0, 2, (n_db, n_bits))
    distances = (queries[:, None, :] != database[None, :, :]).sum(axis=2)
    if kind == "class":
        query_labels, db_labels = rng.integers(0, 3, n_queries), rng.integers(0, 3, n_db)
        grades = (query_labels[:, None] == db_labels[None, :]).astype(np.int64)
        return queries, database, dict(query_labels=query_labels, db_labels=db_labels), distances, grades
    if kind == "multihot":
        query_labels, db_labels = rng.integers(0, 2, (n_queries, 3)), rng.integers(0, 2, (n_db, 3))
        grades = query_labels @ db_labels.T  # shared labels
        return queries, database, dict(query_labels=query_labels, db_labels=db_labels), distances, grades
    grades = rng.integers(0, 3, (n_queries, n_db)) * (rng.random((n_queries, n_db)) < 0.6)
    indptr = np.r_[0, np.cumsum((grades > 0).sum(axis=1))]
    indices = np.concatenate([np.flatnonzero(row) for row in grades])
    listed = (indptr, indices, np.concatenate([row[row > 0] for row in grades]))
    return queries, database, dict(relevance=listed), distances, grades


@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
@pytest.mark.parametrize("seed", range(4))
def test_ap_within_a_radius_is_the_mean_over_tie_orders(kind, seed):
    """AP(radius=r) for every tie mode and denominator equals the enumeration of the tie orders,
    on codes of 4 bits (many ties) with class, multi-hot (grade = shared labels) and listed graded
    relevance; radii below, inside and past the distances found, mAP an alias."""
    rng = np.random.default_rng(seed)
    queries, database, labels, distances, grades = _case(rng, 4, 7, 4, kind)
    metrics = ["AP(radius=0)", "mAP(radius=1)", "AP(radius=2)", "AP(radius=9)"]
    for ties in TIES:
        for denominator in DENOMINATORS:
            result = ft.evaluate(queries, database, **labels, metrics=metrics, ties=ties,
                                 ap_denominator=denominator)
            for name, radius in zip(result.per_query, (0, 1, 2, 9)):
                expected = [float(oracle_ap_within(distances[q], grades[q], radius, ties, denominator))
                            for q in range(len(queries))]
                np.testing.assert_allclose(result.per_query[name], expected, rtol=0, atol=1e-12,
                                           err_msg=f"{name} {ties} {denominator} {kind}")


def test_the_closed_form_deep_in_the_list():
    """Long ties deep in the ranking (64-bit codes near a query, 3000 items): the average equals the
    enumeration's expectation computed per tie in exact fractions (linearity of expectation: each
    relevant rank's precision, E[hits / rank], summed), to 1e-12."""
    rng = np.random.default_rng(7)
    n_bits = 12
    queries = rng.integers(0, 2, (3, n_bits))
    database = np.where(rng.random((3000, n_bits)) < 0.15, 1 - queries[rng.integers(0, 3, 3000)], queries[0])
    query_labels, db_labels = rng.integers(0, 2, 3), rng.integers(0, 2, 3000)
    distances = (queries[:, None, :] != database[None]).sum(axis=2)
    for radius in (1, 3, 5):
        result = ft.evaluate(queries, database, query_labels, db_labels, metrics=[f"AP(radius={radius})"],
                             ap_denominator="total")
        for q in range(3):
            relevant = db_labels == query_labels[q]
            expected, before, hits = Fraction(0), 0, 0
            for d in range(radius + 1):
                n, r = int((distances[q] == d).sum()), int((relevant & (distances[q] == d)).sum())
                # a relevant item at tie position p: rank before + p, the other r - 1 relevant items
                # spread uniformly over the tie: E[hits at it] = hits + 1 + (p - 1)(r - 1)/(n - 1)
                for p in range(1, n + 1):
                    share = Fraction(p - 1, n - 1) * (r - 1) if n > 1 else 0
                    expected += Fraction(r, n) * (hits + 1 + share) / (before + p)
                before, hits = before + n, hits + r
            assert abs(result.per_query[f"AP(radius={radius})"][q] - float(expected / relevant.sum())) < 1e-12


def _deephash_radius_all(distances, shares_label, n_bits):
    """DeepHash's get_precision_recall_by_Hamming_Radius_All, per query (no mean), with a stable
    argsort: (precision, recall, AP) of shape (n_queries, n_bits + 1)."""
    n_queries = len(distances)
    precision, recall, ap = (np.zeros((n_queries, n_bits + 1)) for _ in range(3))
    for i in range(n_queries):
        match = shares_label[i, np.argsort(distances[i], kind="stable")]
        counts = np.bincount(distances[i], minlength=n_bits + 1)
        for r in range(n_bits + 1):
            found = counts[: r + 1].sum()
            if found == 0:
                continue
            head = match[:found]
            precision[i, r] = head.sum() / found
            recall[i, r] = head.sum() / match.sum() if match.sum() else np.nan
            if head.sum():
                ap[i, r] = np.sum(np.cumsum(head) / np.arange(1, found + 1) * head) / head.sum()
    return precision, recall, ap


@pytest.mark.parametrize("seed", range(3))
def test_deephash_map_within_every_radius(seed):
    """DeepHash's mAP within Hamming radius r (over the relevant items within r) is
    ``AP(radius=r)`` with ap_denominator="retrieved" under their argsort's order, made stable
    here: ``ties="stable"``; their precision and recall within r are P(radius) and R(radius); the
    curves ``ap_by_radius`` are their per-radius means. Multi-hot labels, relevant = a shared label."""
    rng = np.random.default_rng(100 + seed)
    n_bits = 8
    queries, database = rng.integers(0, 2, (30, n_bits)), rng.integers(0, 2, (400, n_bits))
    query_labels, db_labels = rng.integers(0, 2, (30, 5)), rng.integers(0, 2, (400, 5))
    distances = (queries[:, None, :] != database[None]).sum(axis=2)
    shares = (query_labels @ db_labels.T) > 0
    precision, recall, ap = _deephash_radius_all(distances, shares, n_bits)
    names = [f"{base}(radius={r})" for r in range(n_bits + 1) for base in ("AP", "P", "R")]
    result = ft.evaluate(queries, database, query_labels, db_labels, metrics=names, ties="stable",
                         ap_denominator="retrieved", curves=True)
    kept = shares.any(axis=1)
    for r in range(n_bits + 1):
        np.testing.assert_allclose(result.per_query[f"AP(radius={r})"], ap[:, r], rtol=0, atol=1e-12)
        np.testing.assert_allclose(result.per_query[f"P(radius={r})"], precision[:, r], rtol=0, atol=1e-12)
        np.testing.assert_allclose(result.per_query[f"R(radius={r})"][kept], recall[kept, r], rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.curves["ap_by_radius"], ap.mean(axis=0), rtol=0, atol=1e-12)
    # tie-free distances (every database item at its own distance): any argsort, every tie mode
    base = rng.permutation(n_bits + 1)[:6]
    tie_free = np.array([[1] * d + [0] * (n_bits - d) for d in base])
    query = np.zeros((1, n_bits), dtype=np.int64)
    labels = rng.integers(0, 2, (1, 5)), rng.integers(0, 2, (6, 5))
    labels[1][0] = labels[0][0]  # one relevant item at least
    _, _, ap_free = _deephash_radius_all(np.array([base]), (labels[0] @ labels[1].T) > 0, n_bits)
    for ties in TIES:
        free = ft.evaluate(query, tie_free, *labels, metrics=[f"AP(radius={r})" for r in range(n_bits + 1)],
                           ties=ties)
        np.testing.assert_allclose([free.mean[f"AP(radius={r})"] for r in range(n_bits + 1)], ap_free[0],
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_f1_within_a_radius_per_query(seed):
    """F1(radius=r) is 2 P R / (P + R) per query from numpy's P and R within r (0 where P + R = 0),
    then averaged, the same for every tie mode; the F-measure of MetricsForRetrieval-TensorFlow2
    (beta = 2 in their beta P R / (P + R), eps 1e-10 in the divisions) agrees on the queries where
    it is defined. It is not F1 of the mean P and mean R."""
    rng = np.random.default_rng(200 + seed)
    n_bits = 10
    queries, database = rng.integers(0, 2, (40, n_bits)), rng.integers(0, 2, (500, n_bits))
    query_labels, db_labels = rng.integers(0, 2, (40, 4)), rng.integers(0, 2, (500, 4))
    distances = (queries[:, None, :] != database[None]).sum(axis=2)
    relevant = (query_labels @ db_labels.T) > 0
    for radius in (0, 2, 3, 10):
        within = distances <= radius
        tp, found, total = (within & relevant).sum(axis=1), within.sum(axis=1), relevant.sum(axis=1)
        p = np.divide(tp, found, out=np.zeros(len(tp)), where=found > 0)
        r = np.divide(tp, total, out=np.zeros(len(tp)), where=total > 0)
        f1 = np.divide(2 * p * r, p + r, out=np.zeros(len(tp)), where=p + r > 0)
        with np.errstate(invalid="ignore"):
            theirs = 2 * (tp / (found + 1e-10)) * (tp / (total + 1e-10)) / (tp / (found + 1e-10) + tp / (total + 1e-10))
        for ties in TIES:
            result = ft.evaluate(queries, database, query_labels, db_labels, metrics=[f"F1(radius={radius})"],
                                 ties=ties)
            got = result.per_query[f"F1(radius={radius})"]
            np.testing.assert_allclose(got, f1, rtol=0, atol=1e-12)
            defined = ~np.isnan(theirs)
            np.testing.assert_allclose(got[defined], theirs[defined], rtol=1e-8, atol=0)
            assert result.mean[f"F1(radius={radius})"] == pytest.approx(f1.mean(), abs=1e-12)
    assert np.isnan(theirs).any() and not np.isnan(got).any()  # where theirs is 0/0, fasttie gives 0


def test_nothing_within_the_radius_and_no_relevant_item():
    """The empty sets: a query with nothing within r, or nothing relevant within r, has P = R =
    F1 = AP = 0 for every denominator and tie mode (DeepHash's zeros); ``skip_missed`` leaves both
    out (NaN). A query without any relevant item follows ``empty``: 0 under "zero", NaN under
    "skip", and under "one" AP(radius) is 1 (0/0, as AP) while F1(radius) and P(radius) are 0."""
    queries = np.array([[0] * 6, [0] * 6, [1] * 6])
    database = np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 1], [1, 1, 1, 1, 1, 0]])
    query_labels, db_labels = np.array([0, 1, 2]), np.array([0, 0, 1, 0])
    # query 0: nothing within 2 (distances 3, 4, 1, 5; the item at 1 is not relevant); query 1: one
    # relevant item at 1; query 2: no relevant item at all
    metrics = ["AP(radius=2)", "F1(radius=2)", "P(radius=2)", "R(radius=2)", "AP(radius=0)", "F1(radius=0)"]
    for ties in TIES:
        for denominator in DENOMINATORS:
            zero = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties,
                               ap_denominator=denominator)
            for name in metrics:
                assert zero.per_query[name][0] == 0.0 and zero.per_query[name][2] == 0.0
            assert zero.per_query["AP(radius=0)"][1] == 0.0  # nothing within radius 0
            assert zero.per_query["AP(radius=2)"][1] == 1.0  # the relevant item first, at rank 1
            assert zero.per_query["F1(radius=2)"][1] == 1.0  # P = 1 (1 of 1), R = 1 (1 of 1)
            missed = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties,
                                 ap_denominator=denominator, empty="skip_missed")
            assert np.isnan(missed.per_query["AP(radius=2)"][[0, 2]]).all()
            assert np.isnan(missed.per_query["F1(radius=2)"][[0, 2]]).all()
            assert missed.per_query["AP(radius=2)"][1] == 1.0
    one = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, empty="one")
    assert one.per_query["AP(radius=2)"][2] == 1.0 and one.per_query["F1(radius=2)"][2] == 0.0
    assert one.per_query["AP(radius=2)"][0] == 0.0  # a relevant item exists, outside the radius
    skip = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, empty="skip")
    assert np.isnan(skip.per_query["AP(radius=2)"][2]) and skip.n_empty == 1


def test_the_largest_radius_is_ap_and_the_modes_bound_the_average():
    """AP(radius=n_bits) (and any radius past it) is AP of the whole list for every tie mode and
    denominator; optimistic >= average >= pessimistic within every radius; the curves hold the
    means of F1 and AP within each radius."""
    rng = np.random.default_rng(11)
    n_bits = 6
    queries, database = rng.integers(0, 2, (25, n_bits)), rng.integers(0, 2, (300, n_bits))
    query_labels, db_labels = rng.integers(0, 4, 25), rng.integers(0, 4, 300)
    names = [f"AP(radius={r})" for r in range(n_bits + 1)] + ["AP(radius=40)", "AP"]
    by_mode = {}
    for ties in TIES:
        for denominator in DENOMINATORS:
            result = ft.evaluate(queries, database, query_labels, db_labels, metrics=names, ties=ties,
                                 ap_denominator=denominator, curves=True)
            np.testing.assert_allclose(result.per_query[f"AP(radius={n_bits})"], result.per_query["AP"],
                                       rtol=0, atol=1e-12)
            np.testing.assert_array_equal(result.per_query["AP(radius=40)"], result.per_query[f"AP(radius={n_bits})"])
            for r in range(n_bits + 1):
                assert result.curves["ap_by_radius"][r] == result.mean[f"AP(radius={r})"]
            by_mode[ties, denominator] = result
    # F1 within a radius does not depend on the tie order
    f1 = [by_mode[ties, "retrieved"].curves["f1_by_radius"] for ties in TIES]
    for other in f1[1:]:
        np.testing.assert_array_equal(other, f1[0])
    for denominator in DENOMINATORS:
        for name in names:
            high, mean, low = (by_mode[t, denominator].per_query[name] for t in ("optimistic", "average", "pessimistic"))
            assert (high >= mean - 1e-12).all() and (mean >= low - 1e-12).all()


def test_stable_from_the_ranks_of_a_sharded_pass():
    """The ranked path (fasttie.dask: ranks of the relevant items gathered from database shards,
    then finalized) gives bitwise the values of one process for AP within a radius under
    ties="stable", with and without cutoff metrics beside it."""
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    fd = pytest.importorskip("fasttie.dask")
    rng = np.random.default_rng(5)
    queries, database = rng.integers(0, 2, (12, 16)), rng.integers(0, 2, (900, 16))
    query_labels, db_labels = rng.integers(0, 3, 12), rng.integers(0, 3, 900)
    for metrics in (["AP(radius=5)", "AP(radius=7)"], ["AP(radius=6)", "P@10", "F1(radius=6)"]):
        expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties="stable")
        with dask.config.set(scheduler="threads"):
            got = fd.evaluate(queries, da.from_array(database, chunks=(250, 16)), query_labels, db_labels,
                              metrics=metrics, ties="stable", query_chunk=5)
        for name in expected.per_query:
            np.testing.assert_array_equal(got.per_query[name], expected.per_query[name])


def test_grammar():
    """mAP(radius=r) is AP(radius=r); F1 and AP take a radius, nDCG does not; ranked lists have no
    distance; a misspelt radius name gets the closest one."""
    from fasttie.metrics import parse_metrics
    from fasttie.metrics.ranking_names import suggest

    assert [m.name for m in parse_metrics(["mAP(radius=2)", "map(radius=2)", "f1(radius=3)", "F(radius=1)"])] == \
        ["AP(radius=2)", "F1(radius=3)", "F1(radius=1)"]
    assert suggest("mAp(radus=2)") == "AP(radius=2)" and suggest("F1(radis=2)") == "F1(radius=2)"
    with pytest.raises(InputError, match="radius must be >= 0"):
        parse_metrics(["AP(radius=-1)"])
    with pytest.raises(InputError, match="unknown metric"):
        parse_metrics(["nDCG(radius=2)"])
    with pytest.raises(InputError, match="Hamming ranking"):
        ft.rank_evaluate([[0.5, 0.2]], [[1, 0]], metrics=["AP(radius=2)"])
    result = ft.evaluate(np.zeros((1, 4)), np.eye(4), np.array([0]), np.array([0, 1, 0, 0]),
                         metrics=["mAP(radius=2)"])
    assert list(result.mean) == ["mAP(radius=2)"]
    # the report states what moves AP within a radius (the tie order, the denominator), and not for F1
    from fasttie.report.tables import convention

    settings = {"ties": "average", "ap_denominator": "min", "empty": "zero"}
    assert convention("AP(radius=2)", settings, 0, 5).startswith("denominator = min(k, R); distance <= 2; ties = average")
    assert convention("F1(radius=2)", settings, 0, 5).startswith("distance <= 2, no tie order; empty")


@pytest.mark.parametrize("ties", TIES)
def test_the_gpu_path_gives_the_cpu_values(ties):
    """device="cuda" (the CUDA simulator where there is no NVIDIA device: tests/conftest.py)
    finalizes the same counts, and under ties="stable" the ranks of its own rank pass: bitwise the
    CPU's values of AP and F1 within a radius, beside a cutoff metric."""
    pytest.importorskip("numba_cuda", reason="device='cuda' needs numba-cuda (pip install 'fasttie[cuda]')")
    rng = np.random.default_rng(9)
    queries, database = rng.integers(0, 2, (6, 12)), rng.integers(0, 2, (150, 12))
    query_labels, db_labels = rng.integers(0, 3, 6), rng.integers(0, 3, 150)
    metrics = ["AP(radius=4)", "AP(radius=6)", "F1(radius=5)", "P@5"]
    for denominator in DENOMINATORS:
        on_cpu = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties,
                             ap_denominator=denominator)
        on_gpu = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties,
                             ap_denominator=denominator, device="cuda")
        for name in metrics:
            np.testing.assert_array_equal(on_gpu.per_query[name], on_cpu.per_query[name])
