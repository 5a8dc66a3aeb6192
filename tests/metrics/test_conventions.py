"""fasttie.metrics.conventions: a metric's value over queries as written independently here
(the mean of the kept values, the sum of counts, trec_eval's floored geometric mean), base names,
and which metrics the grade orders bound, held to an enumeration of every order inside a tie."""

import itertools
import math
import statistics

import numpy as np
import pytest

import fasttie as ft
from fasttie.metrics import parse_metrics
from fasttie.metrics.conventions import (COUNTS, GEOMETRIC_FLOOR, aggregate, base_of, grade_order_bounds,
                                         over_retrieved)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("name", ["AP", "nDCG@10", "NumRet", "NumRelRet@5", "GMAP", "GMBpref", "P(radius=2)"])
def test_aggregate_as_written_here(seed, name):
    rng = np.random.default_rng(seed)
    values = rng.random(int(rng.integers(1, 30))) * (10 if base_of(name) in COUNTS else 1)
    values[rng.random(len(values)) < 0.3] = np.nan
    values[rng.random(len(values)) < 0.1] = 0.0
    kept = [v for v in values.tolist() if not math.isnan(v)]
    if not kept:
        assert math.isnan(aggregate(name, values))
        return
    if base_of(name) in COUNTS:
        expected = math.fsum(kept)
    elif base_of(name) in ("GMAP", "GMBpref"):
        expected = math.exp(math.fsum(math.log(max(v, GEOMETRIC_FLOOR)) for v in kept) / len(kept))
    else:
        expected = statistics.fmean(kept)
    assert aggregate(name, values) == pytest.approx(expected, rel=1e-12)
    assert aggregate(parse_metrics([name])[0], values) == aggregate(name, values)


def test_base_names():
    for name, base in [("GMAP@10", "GMAP"), ("P(radius=2)", "P"), ("nDCG(gains={0: 0, 1: 2})@5", "nDCG"), ("AP", "AP")]:
        assert base_of(name) == base
        assert parse_metrics([name])[0].base == base


def test_over_retrieved():
    ap10, ap, p10 = parse_metrics(["AP@10", "AP", "P@10"])
    assert over_retrieved(ap10, "retrieved") and not over_retrieved(ap10, "total") and not over_retrieved(ap10, "min")
    assert not over_retrieved(ap, "retrieved") and not over_retrieved(p10, "retrieved")


def _extremes(name, grades, ties_of, ap_denominator):
    """Lowest and highest value of one ranked list over every order inside its ties."""
    values = []
    blocks = [list(group) for _, group in itertools.groupby(range(len(grades)), key=lambda i: ties_of[i])]
    for orders in itertools.product(*[itertools.permutations(block) for block in blocks]):
        order = [i for block in orders for i in block]
        scores = -np.arange(len(order), dtype=float)  # tie-free: this order
        result = ft.rank_evaluate(np.array(grades)[order][None], scores[None], metrics=[name], ties="stable",
                                  ap_denominator=ap_denominator)
        values.append(result.mean[name])
    return min(values), max(values)


@pytest.mark.parametrize("name", ["AP", "AP@3", "nDCG@3", "nDCG(gains={0: 0, 1: 3, 2: 1})@3", "P@2", "RR"])
@pytest.mark.parametrize("seed", range(6))
def test_grade_orders_bound_where_said(name, seed):
    rng = np.random.default_rng(seed)
    n = 6
    grades = rng.integers(0, 3, n).tolist()
    ties_of = sorted(rng.integers(0, 3, n).tolist())  # tie blocks in rank order
    scores = -np.array(ties_of, dtype=float)
    lo, hi = _extremes(name, grades, ties_of, "retrieved")
    optimistic = ft.rank_evaluate(np.array([grades]), scores[None], metrics=[name], ties="optimistic",
                                 ap_denominator="retrieved").mean[name]
    pessimistic = ft.rank_evaluate(np.array([grades]), scores[None], metrics=[name], ties="pessimistic",
                                  ap_denominator="retrieved").mean[name]
    if grade_order_bounds(parse_metrics([name])[0]):
        assert optimistic == pytest.approx(hi, abs=1e-12) and pessimistic == pytest.approx(lo, abs=1e-12)
    else:  # never outside the range, but not always at its ends
        assert lo - 1e-12 <= pessimistic <= hi + 1e-12 and lo - 1e-12 <= optimistic <= hi + 1e-12


def test_the_unbounded_are_unbounded_somewhere():
    """For AP@k over the retrieved relevant items and a gain table that falls with the grade, some
    case has an order beyond what the grade orders give (so the False is needed)."""
    found = set()
    for seed in range(200):
        rng = np.random.default_rng(seed)
        grades = rng.integers(0, 3, 6).tolist()
        ties_of = sorted(rng.integers(0, 4, 6).tolist())
        scores = -np.array(ties_of, dtype=float)
        for name in ("AP@4", "nDCG(gains={0: 0, 1: 3, 2: 1})@2"):
            if name in found:
                continue
            lo, hi = _extremes(name, grades, ties_of, "retrieved")
            optimistic = ft.rank_evaluate(np.array([grades]), scores[None], metrics=[name], ties="optimistic",
                                 ap_denominator="retrieved").mean[name]
            if optimistic < hi - 1e-12:
                found.add(name)
        if len(found) == 2:
            break
    assert found == {"AP@4", "nDCG(gains={0: 0, 1: 3, 2: 1})@2"}
    assert not any(grade_order_bounds(m) for m in parse_metrics(sorted(found)))
