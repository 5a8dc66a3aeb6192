"""MAP@R, pytorch-metric-learning's mean average precision at R (issue 39, item 4).

Per query with R relevant items, MAP@R = (1/R) sum_{i<=R} rel_i P@i: AP cut at the query's own
R, over R. The oracle here enumerates every order inside ties (distinct arrangements of the
binary relevance, equally likely) in exact fractions, for ``ties="average"``, and builds the
fixed orders (stable, optimistic, pessimistic, trec) by sorting; both doors are compared with it
(ranked lists through ``rank_evaluate`` and ``trec.evaluate``, Hamming ranking through
``evaluate``), and pytorch-metric-learning's ``AccuracyCalculator`` is compared on tie-free
embeddings, where its k-NN order is the only order.
"""

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

import fasttie as ft
from fasttie.errors import InputError
from fasttie.metrics import grade_order_bounds, parse_metrics
from helpers import ExactKnn

N_CASES = 25


# --- the oracle ---------------------------------------------------------------------------------


def _map_at_r(relevant, total):
    """MAP@R of one order: the binary relevance of its ranks, R = ``total`` (relevant items outside
    the list count in R only). Exact (a Fraction); None for R = 0."""
    if total == 0:
        return None
    hits = 0
    value = Fraction(0)
    for rank, rel in enumerate(relevant[:total], start=1):
        if rel:
            hits += 1
            value += Fraction(hits, rank)
    return value / total


def _ties(keys):
    """Positions grouped by equal key, groups in key-descending order (higher key ranks first)."""
    order = sorted(range(len(keys)), key=lambda i: -keys[i])
    return [list(group) for _, group in itertools.groupby(order, key=lambda i: keys[i])]


def _arrangements(flags):
    """Every distinct arrangement of a tie's binary relevance flags."""
    r, n = sum(flags), len(flags)
    for where in itertools.combinations(range(n), r):
        yield [i in where for i in range(n)]


def every_order(scores, relevant, extra=0):
    """MAP@R of every order inside ties of ``scores`` (higher first), one value per element of
    the product of each tie's distinct arrangements (all equally likely); None for R = 0."""
    total = int(sum(relevant)) + extra
    if total == 0:
        return None
    return [_map_at_r([flag for tie in choice for flag in tie], total)
            for choice in itertools.product(*[list(_arrangements([relevant[i] for i in tie]))
                                              for tie in _ties(scores)])]


def oracle_average(scores, relevant, extra=0):
    """E[MAP@R] over every order inside ties: the mean of :func:`every_order`."""
    values = every_order(scores, relevant, extra)
    return None if values is None else sum(values) / len(values)


def oracle_fixed(scores, grades, relevant, ties, extra=0, names=None):
    """MAP@R of one fixed order: score descending, then the mode's rule inside ties."""
    n = len(scores)
    if ties == "stable":
        key = [(-scores[i], i) for i in range(n)]
    elif ties == "optimistic":  # higher grade first, then stable
        key = [(-scores[i], -grades[i], i) for i in range(n)]
    elif ties == "pessimistic":
        key = [(-scores[i], grades[i], i) for i in range(n)]
    else:  # trec_eval: document id descending inside ties (string order)
        key = [(-scores[i], tuple(-ord(c) for c in names[i]) + (1,)) for i in range(n)]
    order = sorted(range(n), key=lambda i: key[i])
    return _map_at_r([relevant[i] for i in order], int(sum(relevant)) + extra)


def _oracle(scores, grades, level, ties, extra=0, names=None):
    relevant = [g >= level for g in grades]
    if ties == "average":
        return oracle_average(scores, relevant, extra)
    return oracle_fixed(scores, grades, relevant, ties, extra, names)


def _close(ours, expected, where):
    if expected is None:
        assert ours == 0.0, where  # empty="zero"
    else:
        assert ours == pytest.approx(float(expected), abs=1e-12, rel=0), where


# --- the grammar ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["MAP@R", "mAP@R", "map@r", "AP@R", "ap @ r", "map_at_r",
                                  "mean_average_precision_at_r"])
def test_every_spelling_is_one_metric(name):
    (metric,) = parse_metrics([name])
    assert metric.name == "MAP@R" and metric.k is None and metric.base == "MAP@R"


def test_parameters_and_refusals():
    (metric,) = parse_metrics(["MAP(rel=2)@R"])
    assert metric.name == "MAP(rel=2)@R" and metric.rel == 2.0
    assert parse_metrics([metric.name]) == [metric]  # the canonical name parses back
    with pytest.raises(InputError, match="takes no cutoff"):
        parse_metrics(["map_at_r@10"])
    with pytest.raises(InputError, match="not an integer"):
        parse_metrics(["P@R"])  # @R is MAP@R's alone
    # its own relevance level on ranked lists only (docs/metrics.md says so): grades 2 count, 1 not
    assert ft.rank_evaluate([1, 2, 0], [3.0, 2.0, 1.0], metrics=["MAP(rel=2)@R"]).mean["MAP(rel=2)@R"] == 0.0
    with pytest.raises(InputError, match="per-metric rel="):
        ft.evaluate([[1, 1]], [[1, 1], [1, -1]], [0], [0, 1], metrics=["MAP(rel=2)@R"])


# --- ranked lists: rank_evaluate against the oracle -----------------------------------------------


def _lists(seed):
    """Random small lists with ties: grades 0..3, integer scores 1..4 (some queries without a
    relevant item at level 2)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 8, rng.integers(2, 6))
    grades = rng.integers(0, 4, sizes.sum()).astype(float)
    scores = rng.integers(1, 5, sizes.sum()).astype(float)
    return sizes, grades, scores


@pytest.mark.parametrize("ties", ["average", "stable", "optimistic", "pessimistic"])
@pytest.mark.parametrize("level", [1, 2])
def test_rank_evaluate_against_the_oracle(ties, level):
    for seed in range(N_CASES):
        sizes, grades, scores = _lists(seed)
        result = ft.rank_evaluate(grades, scores, sizes, metrics=["MAP@R", "Rprec"], ties=ties,
                                  relevance_level=level, n_threads=1)
        starts = np.r_[0, np.cumsum(sizes)]
        for q in range(len(sizes)):
            part = slice(starts[q], starts[q + 1])
            expected = _oracle(list(scores[part]), list(grades[part]), level, ties)
            _close(result.per_query["MAP@R"][q], expected, (seed, q, ties))


def test_average_is_exact_in_fractions():
    """One query whose value is known as a fraction: R = 3, ranks 2-3 a tie of one relevant and
    one not, so (1 + (1 + 2/3) / 2) / 3 = 11/18."""
    result = ft.rank_evaluate([1, 0, 1, 0, 0, 1, 0], [5, 4, 4, 3, 3, 3, 1], metrics=["MAP@R"])
    assert Fraction(result.mean["MAP@R"]).limit_denominator(1000) == Fraction(11, 18)
    assert oracle_average([5, 4, 4, 3, 3, 3, 1], [1, 0, 1, 0, 0, 1, 0]) == Fraction(11, 18)


def test_deep_lists_with_long_ties():
    """Ties far past the closed form's direct sums (harmonic sums by their series) and R deep in
    a tie: the average against the oracle's arrangements on a tie of few relevant items."""
    rng = np.random.default_rng(7)
    for _ in range(5):
        n_head, n_tie = int(rng.integers(30, 80)), int(rng.integers(40, 90))
        head = rng.random(n_head) < 0.5
        tie = np.zeros(n_tie, bool)
        tie[rng.choice(n_tie, 2, replace=False)] = True
        relevant = np.r_[head, tie].astype(float)
        scores = np.r_[np.arange(n_head + 1, 1, -1), np.ones(n_tie)].astype(float)
        expected = oracle_average(list(scores), list(relevant.astype(bool)))
        ours = ft.rank_evaluate(relevant, scores, metrics=["MAP@R"]).mean["MAP@R"]
        assert ours == pytest.approx(float(expected), abs=1e-12, rel=0)


def test_optimistic_and_pessimistic_bound_every_order():
    """MAP@R never falls when a relevant item moves up a rank: the grade orders are its highest
    and lowest value over every order inside ties (grade_order_bounds says so)."""
    assert grade_order_bounds(parse_metrics(["MAP@R"])[0])
    for seed in range(N_CASES):
        sizes, grades, scores = _lists(seed)
        bounds = [ft.rank_evaluate(grades, scores, sizes, metrics=["MAP@R"], ties=ties).per_query["MAP@R"]
                  for ties in ("optimistic", "pessimistic")]
        starts = np.r_[0, np.cumsum(sizes)]
        for q in range(len(sizes)):
            part = slice(starts[q], starts[q + 1])
            values = every_order(list(scores[part]), list(grades[part] >= 1))
            if values is not None:
                assert bounds[0][q] == pytest.approx(float(max(values)), abs=1e-12, rel=0), (seed, q)
                assert bounds[1][q] == pytest.approx(float(min(values)), abs=1e-12, rel=0), (seed, q)


def test_empty_queries_follow_the_policy_of_ap():
    grades, scores, sizes = [0, 0, 1, 0], [2, 1, 2, 1], [2, 2]
    for empty, first in (("zero", 0.0), ("one", 1.0), ("skip", np.nan)):
        values = ft.rank_evaluate(grades, scores, sizes, metrics=["MAP@R", "AP"], empty=empty).per_query
        np.testing.assert_array_equal(values["MAP@R"], [first, 1.0])
        np.testing.assert_array_equal(values["MAP@R"][:1], values["AP"][:1])


def test_ap_denominator_does_not_change_it():
    sizes, grades, scores = _lists(3)
    values = [ft.rank_evaluate(grades, scores, sizes, metrics=["MAP@R"], ap_denominator=d).per_query["MAP@R"]
              for d in ("total", "retrieved", "min")]
    np.testing.assert_array_equal(values[0], values[1])
    np.testing.assert_array_equal(values[0], values[2])


def test_with_cutoff_metrics_and_thread_counts():
    """MAP@R beside metrics with cutoffs shallower than R (the walk past the last cutoff) and
    with every thread count: the same values bitwise."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(20, 60, 40)
    grades = (rng.random(sizes.sum()) < 0.4).astype(float)
    scores = rng.integers(0, 6, sizes.sum()).astype(float)
    for ties in ("average", "stable"):
        alone = ft.rank_evaluate(grades, scores, sizes, metrics=["MAP@R"], ties=ties, n_threads=1).per_query["MAP@R"]
        for n_threads in (1, 2, 3):
            both = ft.rank_evaluate(grades, scores, sizes, metrics=["P@2", "MAP@R", "nDCG@3"], ties=ties,
                                    n_threads=n_threads).per_query["MAP@R"]
            np.testing.assert_array_equal(both, alone)
        starts = np.r_[0, np.cumsum(sizes)]
        for q in range(0, len(sizes), 7):
            part = slice(starts[q], starts[q + 1])
            if ties == "stable":
                _close(alone[q], _oracle(list(scores[part]), list(grades[part]), 1, ties), q)


# --- trec.evaluate: trec_eval's order, relevant documents not retrieved ---------------------------


@pytest.mark.parametrize("ties", ["trec", "average", "stable", "pessimistic"])
def test_trec_evaluate_against_the_oracle(ties):
    """Relevant documents missing from the run count in R only: R past the end of a list gives
    the AP sum of the whole list over R (pytorch-metric-learning with a k-NN shorter than R)."""
    for seed in range(N_CASES):
        rng = np.random.default_rng(100 + seed)
        qrels, run, expected = {}, {}, {}
        for q in range(int(rng.integers(1, 5))):
            n, missing = int(rng.integers(1, 8)), int(rng.integers(0, 3))
            names = [f"d{j:02d}" for j in rng.permutation(n + missing)]
            grades = rng.integers(0, 3, n + missing)
            scores = rng.integers(1, 4, n).astype(float)
            qid = f"q{q}"
            qrels[qid] = {name: int(g) for name, g in zip(names, grades)}
            run[qid] = {name: float(s) for name, s in zip(names[:n], scores)}
            expected[qid] = _oracle(list(scores), list(grades[:n]), 1, ties,
                                    extra=int((grades[n:] >= 1).sum()), names=names[:n])
        result = ft.trec.evaluate(qrels, run, ["MAP@R"], ties=ties)
        for qid, value in zip(result.query_ids, result.per_query["MAP@R"]):
            _close(value, expected[qid], (seed, qid, ties))


# --- the Hamming door -----------------------------------------------------------------------------


def _hamming_case(seed, n_bits=6, n_q=6, n_db=40):
    rng = np.random.default_rng(seed)
    queries = rng.integers(0, 2, (n_q, n_bits))
    database = rng.integers(0, 2, (n_db, n_bits))
    query_labels, db_labels = rng.integers(0, 4, n_q), rng.integers(0, 3, n_db)  # class 3: no relevant item
    return queries, database, query_labels, db_labels


@pytest.mark.parametrize("ties", ["stable", "optimistic", "pessimistic"])
def test_hamming_fixed_orders_against_the_oracle(ties):
    for seed in range(N_CASES):
        queries, database, query_labels, db_labels = _hamming_case(seed)
        result = ft.evaluate(ft.pack_codes(queries), ft.pack_codes(database), query_labels, db_labels,
                             metrics=["MAP@R"], ties=ties, n_threads=1)
        distances = (queries[:, None, :] != database[None, :, :]).sum(axis=2)
        for q in range(len(queries)):
            grades = list((db_labels == query_labels[q]).astype(int))
            expected = _oracle(list(-distances[q].astype(float)), grades, 1, ties)
            _close(result.per_query["MAP@R"][q], expected, (seed, q, ties))


def test_hamming_average_against_the_oracle():
    """Few items per distance so the oracle's product of arrangements stays small."""
    for seed in range(N_CASES):
        queries, database, query_labels, db_labels = _hamming_case(seed, n_bits=8, n_db=14)
        result = ft.evaluate(ft.pack_codes(queries), ft.pack_codes(database), query_labels, db_labels,
                             metrics=["MAP@R", "P@3"])
        distances = (queries[:, None, :] != database[None, :, :]).sum(axis=2)
        for q in range(len(queries)):
            relevant = list(db_labels == query_labels[q])
            _close(result.per_query["MAP@R"][q], oracle_average(list(-distances[q].astype(float)), relevant),
                   (seed, q))


def test_hamming_threads_and_multihot_grades():
    """Multi-hot labels (grades = shared labels, relevant at the call's relevance level 1): the
    same values with 1 and 2 threads, and the stable order against the oracle."""
    rng = np.random.default_rng(5)
    queries, database = rng.integers(0, 2, (9, 10)), rng.integers(0, 2, (120, 10))
    query_labels, db_labels = rng.integers(0, 2, (9, 5)), rng.integers(0, 2, (120, 5))
    codes = ft.pack_codes(queries), ft.pack_codes(database)
    for ties in ("average", "stable", "optimistic"):
        values = [ft.evaluate(*codes, query_labels, db_labels, metrics=["MAP@R", "AP@5"], ties=ties,
                              n_threads=n).per_query["MAP@R"] for n in (1, 2)]
        np.testing.assert_array_equal(values[0], values[1])
    distances = (queries[:, None, :] != database[None, :, :]).sum(axis=2)
    for q in range(len(queries)):
        grades = list((query_labels[q] & db_labels).sum(axis=1))
        _close(values[0][q], _oracle(list(-distances[q].astype(float)), grades, 1, "optimistic"), q)


# --- pytorch-metric-learning ----------------------------------------------------------------------


def test_pytorch_metric_learning_mean_average_precision_at_r():
    """AccuracyCalculator's mean_average_precision_at_r on tie-free embeddings (the k-NN order
    is the only order), every reference item retrieved (k=None); its lone queries (no reference
    item of their label) are left out, as empty="skip" of the convention does."""
    torch = pytest.importorskip("torch")
    calculator = pytest.importorskip("pytorch_metric_learning.utils.accuracy_calculator")
    knn = ExactKnn(torch)

    for seed in range(N_CASES):
        rng = np.random.default_rng(seed)
        n_query, n_ref = rng.integers(2, 12), rng.integers(5, 40)
        query, reference = rng.normal(size=(n_query, 3)), rng.normal(size=(n_ref, 3))
        query_labels, reference_labels = rng.integers(0, 5, n_query), rng.integers(0, 4, n_ref)  # 4: lone
        accuracy = calculator.AccuracyCalculator(
            include=("mean_average_precision_at_r",), k=None, knn_func=knn, device=torch.device("cpu"),
        ).get_accuracy(query, query_labels, reference, reference_labels)
        relevant = (query_labels[:, None] == reference_labels[None, :]).astype(float)
        scores = -knn.distances.numpy()
        for ties in ("average", "stable"):  # no ties: every mode is the k-NN's order
            ours = ft.rank_evaluate(relevant, scores, metrics=["MAP@R"], ties=ties,
                                    convention="pytorch_metric_learning").mean["MAP@R"]
            if not (relevant.sum(axis=1) > 0).any():
                assert np.isnan(ours)
                continue
            assert ours == pytest.approx(accuracy["mean_average_precision_at_r"], abs=1e-12), (seed, ties)


def test_gpu_gives_the_cpu_values():
    """device="cuda" counts (and, stable, ranks) on the GPU and finalizes with the CPU's code:
    MAP@R bitwise the CPU's (numba-cuda's simulator where no device is present)."""
    pytest.importorskip("numba_cuda", reason="device='cuda' needs numba-cuda")
    queries, database, query_labels, db_labels = _hamming_case(1, n_bits=12, n_q=5, n_db=90)
    codes = ft.pack_codes(queries), ft.pack_codes(database)
    for ties in ("average", "stable", "pessimistic"):
        on_cpu, on_gpu = (ft.evaluate(*codes, query_labels, db_labels, metrics=["MAP@R", "P@3"], ties=ties,
                                      n_threads=1, device=device).per_query["MAP@R"] for device in ("cpu", "cuda"))
        np.testing.assert_array_equal(on_gpu, on_cpu)


def test_pytorch_metric_learning_with_a_knn_shorter_than_r():
    """AccuracyCalculator(k=3) retrieves 3 neighbours where R may be larger (pml warns that the
    value is then not MAP@R; it sums the precisions of the k neighbours over R): trec.evaluate
    of the same 3-item runs with every reference item judged (R from the qrels) gives its value."""
    torch = pytest.importorskip("torch")
    calculator = pytest.importorskip("pytorch_metric_learning.utils.accuracy_calculator")
    knn = ExactKnn(torch)
    for seed in range(N_CASES):
        rng = np.random.default_rng(1000 + seed)
        n_query, n_ref = int(rng.integers(2, 10)), int(rng.integers(8, 30))
        query, reference = rng.normal(size=(n_query, 3)), rng.normal(size=(n_ref, 3))
        query_labels, reference_labels = rng.integers(0, 3, n_query), rng.integers(0, 2, n_ref)  # 2: lone
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = calculator.AccuracyCalculator(
                include=("mean_average_precision_at_r",), k=3, knn_func=knn, device=torch.device("cpu"),
            ).get_accuracy(query, query_labels, reference, reference_labels)["mean_average_precision_at_r"]
        distances = np.linalg.norm(query[:, None, :] - reference[None, :, :], axis=2)
        qrels = {f"q{i}": {f"r{j}": int(query_labels[i] == reference_labels[j]) for j in range(n_ref)}
                 for i in range(n_query)}
        run = {f"q{i}": {f"r{j}": -float(distances[i, j]) for j in np.argsort(distances[i])[:3]}
               for i in range(n_query)}
        ours = ft.trec.evaluate(qrels, run, ["MAP@R"], empty="skip").mean["MAP@R"]
        if not (query_labels < 2).any():
            assert np.isnan(ours)
            continue
        assert ours == pytest.approx(theirs, abs=1e-12), seed
