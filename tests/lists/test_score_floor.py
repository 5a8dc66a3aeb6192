"""fasttie.lists.score_floor: a floor applied at the door. The metrics on the rule's bases see every item
scored at or below the floor as not retrieved (grade 0 in the ranking, its grade counted in R),
as written here query by query on tie-free random lists; the other metrics of the call are the
plain call's, bitwise; keys keep the order asked and the settings record the rule."""

import inspect

import numpy as np
import pytest

import fasttie as ft
from fasttie.lists.facade import _floor_rows
from fasttie.lists.score_floor import ScoreFloor, evaluate_with_floor

RULE = ScoreFloor(bases=frozenset({"P", "R", "RR"}), at_most=0.25)
ASKED = ["nDCG@3", "P@3", "AP", "R@4", "RR"]


def _arguments(y_true, y_pred, group, metrics):
    bound = inspect.signature(ft.rank_evaluate).bind(y_true, y_pred, group, metrics=metrics, ties="average")
    bound.apply_defaults()
    return dict(bound.arguments)


def _by_hand(grades, scores, k_p=3, k_r=4):
    """P@3, R@4 and RR of one tie-free query with the items scored <= the floor not retrieved."""
    order = np.argsort(-scores, kind="stable")
    found = (grades[order] > 0) & (scores[order] > RULE.at_most)
    n_relevant = int((grades > 0).sum())
    first = np.flatnonzero(found)
    return {"P@3": found[:k_p].sum() / k_p,
            "R@4": found[:k_r].sum() / n_relevant if n_relevant else 0.0,  # empty="zero"
            "RR": 1 / (first[0] + 1) if first.size else 0.0}


@pytest.mark.parametrize("seed", range(10))
def test_floored_metrics_as_written_here_others_bitwise(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, 5)
    n = int(sizes.sum())
    y_true = rng.integers(0, 3, n).astype(float)
    y_pred = rng.permutation(n) / n - 0.1  # distinct scores, some at or below the floor
    arguments = _arguments(y_true, y_pred, sizes, ASKED)
    result = evaluate_with_floor(lambda **a: ft.rank_evaluate(**a), RULE, arguments, _floor_rows)
    assert list(result.mean) == ASKED and result.settings["score_floor"] == {"at_most": 0.25,
                                                                              "metrics": ["P@3", "R@4", "RR"]}
    plain = ft.rank_evaluate(y_true, y_pred, sizes, metrics=ASKED, ties="average")
    for name in ("nDCG@3", "AP"):
        assert np.array_equal(result.per_query[name], plain.per_query[name], equal_nan=True)
    starts = np.concatenate(([0], np.cumsum(sizes)))
    for q in range(len(sizes)):
        expected = _by_hand(y_true[starts[q]:starts[q + 1]], y_pred[starts[q]:starts[q + 1]])
        for name, value in expected.items():
            assert result.per_query[name][q] == pytest.approx(value, abs=1e-12), (q, name)


def test_a_query_whose_relevant_items_are_all_floored_scores_zero_not_empty():
    y_true = np.array([1.0, 0.0, 2.0])
    y_pred = np.array([0.1, 0.9, -1.0])  # both relevant items at or below the floor
    result = evaluate_with_floor(lambda **a: ft.rank_evaluate(**a), RULE, _arguments(y_true, y_pred, None, ["R@2", "RR"]),
                                 _floor_rows)
    assert result.per_query["R@2"].tolist() == [0.0] and result.per_query["RR"].tolist() == [0.0]
    assert result.n_empty == 0


def test_no_floored_metric_is_the_plain_call():
    y_true, y_pred = np.array([1.0, 0.0, 2.0]), np.array([0.1, 0.9, -1.0])
    calls = []

    def call(**arguments):
        calls.append(arguments["metrics"])
        return ft.rank_evaluate(**arguments)

    result = evaluate_with_floor(call, RULE, _arguments(y_true, y_pred, None, ["AP", "nDCG"]), _floor_rows)
    assert calls == [["AP", "nDCG"]] and "score_floor" not in result.settings


def test_torchmetrics_convention_applies_its_floor():
    """The torchmetrics convention states its floor as data (items scored <= 0 are not found by
    AP, P, R and RR) and rank_evaluate applies it."""
    rng = np.random.default_rng(3)
    y_true = rng.integers(0, 2, 12).astype(float)
    y_pred = rng.permutation(12) / 6 - 1.0
    result = ft.rank_evaluate(y_true, y_pred, metrics=["P@4", "RR"], convention="torchmetrics")
    order = np.argsort(-y_pred)
    found = (y_true[order] > 0) & (y_pred[order] > 0)
    assert result.mean["P@4"] == pytest.approx(found[:4].mean(), abs=1e-12)
    assert result.mean["RR"] == pytest.approx(1 / (np.flatnonzero(found)[0] + 1) if found.any() else 0.0, abs=1e-12)
