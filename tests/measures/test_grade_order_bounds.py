"""ties="optimistic" / "pessimistic": reproducible orders (each tie by grade, higher / lower
first), and for the metrics :func:`fasttie.metrics.grade_order_bounds` names, the highest /
lowest value over every order inside ties. Checked against enumeration of every tie order:
ranked lists (each order scored as a fixed order, all orders of a case as queries of one call)
and Hamming rankings (tests/oracle.py's plain metric over its orderings); and for the metrics
it does not name, a case where the grade order is not the extreme."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
import oracle
from fasttie.metrics import grade_order_bounds, parse_metrics
from helpers import every_tie_order, random_judged_list

LIST_METRICS = [
    "AP", "AP@3", "GMAP@3", "nDCG", "nDCG@2", "DCG@3", "P@2", "R@3", "F1@2", "RR", "RR@2", "Success@2", "Rprec",
    "ACG@3", "Bpref", "RBP(p=0.5)@3", "RBP(p=0.7, rel=2)@4", "ERR@3", "ERR", "IPrec@0.5", "11pt", "NumRelRet@2",
    "SetAP", "NumRet@2", "NumRel", "nDCG(gains={0: 0, 1: 1, 2: 5, 3: 6})@3", "nDCG(gains={0: 0, 1: 4, 2: 1, 3: 2})@3",
    "Judged@2", "RBPResid@3", "infAP", "NumNonRelJudgedRet@2",
]
HAMMING_METRICS = ["AP", "AP@2", "AP@4", "WAP", "WAP@3", "nDCG@3", "DCG@2", "P@2", "R@3", "F1@2", "RR@2", "ACG@3",
                   "Rprec", "Success@2", "Bpref"]


def _extremes_by_grade(grades, judged, pooled, scores, unretrieved, metrics, ap_denominator):
    return {ties: ft.rank_evaluate(grades, scores, metrics=metrics, ties=ties, judged=judged, pooled=pooled,
                                   unretrieved=[unretrieved], ap_denominator=ap_denominator, empty="zero").per_query
            for ties in ("optimistic", "pessimistic")}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["total", "retrieved", "min"]))
def test_ranked_lists_bounded_metrics_are_the_extremes(seed, ap_denominator):
    case = random_judged_list(np.random.default_rng(seed))
    bounded = [m.name for m in parse_metrics(LIST_METRICS) if grade_order_bounds(m, ap_denominator)]
    every = every_tie_order(*case, bounded, ap_denominator)
    by_grade = _extremes_by_grade(*case, bounded, ap_denominator)
    for name in bounded:
        assert by_grade["optimistic"][name][0] == pytest.approx(every[name].max(), rel=1e-12, abs=1e-12), name
        assert by_grade["pessimistic"][name][0] == pytest.approx(every[name].min(), rel=1e-12, abs=1e-12), name


def test_ranked_lists_unbounded_metrics_are_not():
    """Every metric grade_order_bounds leaves out has random cases where a grade order misses
    the extreme: the list is tight, not merely cautious."""
    missed = set()
    rng = np.random.default_rng(35)
    for _ in range(400):
        case = random_judged_list(rng)
        for ap_denominator in ("retrieved", "total"):
            unbounded = [m.name for m in parse_metrics(LIST_METRICS) if not grade_order_bounds(m, ap_denominator)]
            every = every_tie_order(*case, unbounded, ap_denominator)
            by_grade = _extremes_by_grade(*case, unbounded, ap_denominator)
            for name in unbounded:
                if (by_grade["optimistic"][name][0] < every[name].max() - 1e-12
                        or by_grade["pessimistic"][name][0] > every[name].min() + 1e-12):
                    missed.add((name, ap_denominator))
    expected = {(m.name, den) for den in ("retrieved", "total") for m in parse_metrics(LIST_METRICS)
                if not grade_order_bounds(m, den)}
    assert missed == expected


def test_issue_example_ap_at_k_over_the_retrieved():
    """rel, non-rel, then a tie {rel, non-rel}: relevant first in the tie gives AP@3 = 5/6, last
    gives 1, so "optimistic" is below "pessimistic" for AP@k over the retrieved relevant items."""
    q, db = [[1, 1]], [[1, 1], [1, -1], [-1, -1], [-1, -1]]
    values = {t: ft.evaluate(q, db, [0], [0, 1, 0, 1], metrics=["AP@3"], ties=t).mean["AP@3"]
              for t in ("optimistic", "pessimistic")}
    assert values == {"optimistic": pytest.approx(5 / 6), "pessimistic": 1.0}
    assert not grade_order_bounds(parse_metrics(["AP@3"])[0], "retrieved")


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["total", "retrieved", "min"]), st.sampled_from(["exp2", "linear"]))
def test_hamming_bounded_metrics_are_the_extremes(seed, ap_denominator, gain):
    rng = np.random.default_rng(seed)
    n_bits, n_db = int(rng.integers(1, 4)), int(rng.integers(1, 8))
    query = rng.integers(0, 2, (1, n_bits))
    database = rng.integers(0, 2, (n_db, n_bits))
    labels = rng.integers(0, 2, (n_db, 3))
    query_labels = np.array([[1, 1, 0]])
    grades = oracle.grades_from_labels(query_labels, labels)[0]
    if not grades.any():
        return  # the oracle's plain metric does not take empty queries
    distances = oracle.hamming_distances(query, database)[0]
    names = [m.name for m in parse_metrics(HAMMING_METRICS) if grade_order_bounds(m, ap_denominator)]
    every = {name: [float(oracle.plain_metric(o, name, ap_denominator=ap_denominator, gain=gain))
                    for o in oracle.orderings(distances, grades)] for name in names}
    for ties, pick in (("optimistic", max), ("pessimistic", min)):
        res = ft.evaluate(query, database, query_labels, labels, metrics=names, ties=ties,
                          ap_denominator=ap_denominator, gain=gain)
        for name in names:
            assert res.mean[name] == pytest.approx(pick(every[name]), rel=1e-12, abs=1e-12), (name, ties)
    assert ap_denominator != "retrieved" or "AP@2" not in names


def test_modes_are_orders_by_grade():
    """Whatever a metric does, the modes are the orders of each tie by grade: the rows of a
    tie sorted by grade, descending or ascending, scored as a fixed order."""
    grades = np.array([0.0, 2.0, 1.0, 0.0, 3.0])
    scores = np.array([1.0, 1.0, 1.0, 0.5, 0.5])
    judged = np.array([False, True, True, True, True])
    for ties, order in (("optimistic", [1, 2, 0, 4, 3]), ("pessimistic", [0, 2, 1, 3, 4])):
        mode = ft.rank_evaluate(grades, scores, metrics=LIST_METRICS[:-4] + ["Judged@2", "RBPResid@3"], ties=ties,
                                judged=judged)
        fixed = ft.rank_evaluate(grades[order], -np.arange(5.0), metrics=LIST_METRICS[:-4] + ["Judged@2", "RBPResid@3"],
                                 ties="stable", judged=judged[order])
        for name, values in mode.per_query.items():
            assert math.isclose(values[0], fixed.per_query[name][0], rel_tol=1e-12, abs_tol=1e-12), (name, ties)


def _grade_order(grades, judged, pooled, scores, optimistic):
    """The order the modes stand for, built row by row: score descending, then grade descending,
    judged rows, then pooled ones, first (optimistic), or grade ascending, unpooled rows, then
    unjudged ones, first (pessimistic)."""
    sign = 1 if optimistic else -1
    return np.lexsort((-sign * pooled, -sign * judged, -sign * grades, -scores))


def _plain_counts(grades, judged, pooled, k, p, level=1):
    """Judged@k, RBPResid(p)@k and NumNonRelJudgedRet@k of rows in rank order, by definition."""
    top = min(k, len(grades))
    counted = pooled | (grades >= level)  # Judged@k: a document with a qrels line, or relevant
    return {f"Judged@{k}": counted[:top].sum() / top,
            f"RBPResid(p={p})@{k}": math.fsum((1 - p) * p ** i for i in range(top) if not judged[i]) + p ** top,
            f"NumNonRelJudgedRet@{k}": float((judged[:top] & (grades[:top] < level)).sum())}


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["total", "retrieved"]))
def test_modes_are_one_order_with_judgments(seed, ap_denominator):
    """Within a grade the modes order the rows by judgment (judged, then pooled, first for
    optimistic; last for pessimistic): every metric, those that count judgments too, takes the
    value of that one order, built here row by row and scored as a fixed order, and for the
    counts of judgments by their definition."""
    grades, judged, pooled, scores, unretrieved = random_judged_list(np.random.default_rng(seed))
    names = LIST_METRICS + ["RBPResid(p=0.5)@2", "Judged@4", "NumNonRelJudgedRet@1"]
    for ties in ("optimistic", "pessimistic"):
        order = _grade_order(grades, judged, pooled, scores, ties == "optimistic")
        mode = ft.rank_evaluate(grades, scores, metrics=names, ties=ties, judged=judged, pooled=pooled,
                                unretrieved=[unretrieved], ap_denominator=ap_denominator).per_query
        fixed = ft.rank_evaluate(grades[order], -np.arange(len(order), dtype=float), metrics=names, ties="stable",
                                 judged=judged[order], pooled=pooled[order], unretrieved=[unretrieved],
                                 ap_denominator=ap_denominator).per_query
        for name in names:
            assert math.isclose(mode[name][0], fixed[name][0], rel_tol=1e-12, abs_tol=1e-12), (name, ties)
        for k, p in ((1, 0.5), (2, 0.8), (4, 0.5)):
            plain = _plain_counts(grades[order], judged[order], pooled[order], k, p)
            got = ft.rank_evaluate(grades, scores, metrics=list(plain), ties=ties, judged=judged,
                                   pooled=pooled).per_query
            for name, value in plain.items():
                assert math.isclose(got[name][0], value, rel_tol=1e-12, abs_tol=1e-12), (name, ties)


def test_issue_example_judgments_in_a_tie_of_one_grade():
    """Issue 52, item 6: the judged a and the unjudged b tie at grade 0. Counted half each, the
    modes gave Judged@1 = 0.5 and RBPResid@1 = 0.9, which no order gives; optimistic puts a
    first (1, 0.8), pessimistic b (0, 1.0), in both doors."""
    names = ["Judged@1", "RBPResid@1", "NumNonRelJudgedRet@1"]
    expected = {"optimistic": {"Judged@1": 1.0, "RBPResid@1": 0.8, "NumNonRelJudgedRet@1": 1.0},
                "pessimistic": {"Judged@1": 0.0, "RBPResid@1": 1.0, "NumNonRelJudgedRet@1": 0.0}}
    for ties, values in expected.items():
        trec = ft.trec.evaluate({"1": {"a": 0, "c": 1}}, {"1": {"a": 1.0, "b": 1.0, "c": 0.0}}, names, ties=ties)
        lists = ft.rank_evaluate([0, 0, 1], [1.0, 1.0, 0.0], metrics=names, ties=ties, judged=[True, False, True])
        for got in (trec.mean, lists.mean):
            assert got == pytest.approx(values, abs=1e-15), ties
