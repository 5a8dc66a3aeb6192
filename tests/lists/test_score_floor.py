"""fasttie.lists.score_floor: rank_evaluate's ``score_floor`` option. The metrics on the rule's bases
see every item scored at or below the floor as not retrieved (grade 0 in the ranking, its grade
counted in R), as written here query by query on tie-free random lists; the other metrics of the
call are the plain call's, bitwise; keys keep the order asked and the settings record the rule.
The rule is a view of the rows inside one door call, so the tie spread and the extremes of the
floored metrics are those of the floored rows."""

import numpy as np
import pytest

import fasttie as ft
import fasttie.lists.facade as facade
from fasttie.lists.score_floor import ScoreFloor

RULE = ScoreFloor(bases=frozenset({"P", "R", "RR"}), at_most=0.25)
ASKED = ["nDCG@3", "P@3", "AP", "R@4", "RR"]


def _by_hand(grades, scores, k_p=3, k_r=4):
    """P@3, R@4 and RR of one tie-free query with the items scored <= the floor not retrieved."""
    order = np.argsort(-scores, kind="stable")
    found = (grades[order] > 0) & (scores[order] > RULE.at_most)
    n_relevant = int((grades > 0).sum())
    first = np.flatnonzero(found)
    return {"P@3": found[:k_p].sum() / k_p,
            "R@4": found[:k_r].sum() / n_relevant if n_relevant else 0.0,  # empty="zero"
            "RR": 1 / (first[0] + 1) if first.size else 0.0}


def _floored_by_hand(y_true, y_pred, sizes, unretrieved=None):
    """The rows and unretrieved grades that the floored metrics see, written out per query."""
    starts = np.concatenate(([0], np.cumsum(sizes)))
    moved = [y_true[a:b][(y_pred[a:b] <= RULE.at_most) & (y_true[a:b] > 0)] for a, b in zip(starts, starts[1:])]
    given = unretrieved if unretrieved is not None else [[] for _ in sizes]
    return (np.where(y_pred <= RULE.at_most, 0.0, y_true),
            [np.concatenate([np.asarray(g, dtype=float), m]) for g, m in zip(given, moved)])


@pytest.mark.parametrize("seed", range(10))
def test_floored_metrics_as_written_here_others_bitwise(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, 5)
    n = int(sizes.sum())
    y_true = rng.integers(0, 3, n).astype(float)
    y_pred = rng.permutation(n) / n - 0.1  # distinct scores, some at or below the floor
    result = ft.rank_evaluate(y_true, y_pred, sizes, metrics=ASKED, ties="average", score_floor=RULE)
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


@pytest.mark.parametrize("seed", range(6))
def test_the_floored_view_is_a_call_on_the_floored_rows_with_spread_and_extremes(seed):
    """With ties and the caller's unretrieved grades: the floored metrics' values, tie std and
    extremes bitwise those of a plain call on the rows floored by hand; the others the plain call's."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 9, 4)
    n = int(sizes.sum())
    y_true = rng.integers(0, 3, n).astype(float)
    y_pred = rng.integers(-2, 4, n) / 4.0  # ties, some at or below the floor
    unretrieved = [rng.integers(0, 3, rng.integers(0, 3)) for _ in sizes]
    result = ft.rank_evaluate(y_true, y_pred, sizes, metrics=ASKED, unretrieved=unretrieved, spread=True,
                              score_floor=RULE)
    floored_true, floored_unretrieved = _floored_by_hand(y_true, y_pred, sizes, unretrieved)
    floored = ft.rank_evaluate(floored_true, y_pred, sizes, metrics=["P@3", "R@4", "RR"],
                               unretrieved=floored_unretrieved, spread=True)
    plain = ft.rank_evaluate(y_true, y_pred, sizes, metrics=["nDCG@3", "AP"], unretrieved=unretrieved, spread=True)
    for expected in (floored, plain):
        for name in expected.per_query:
            for field in ("per_query", "tie_std", "tie_min", "tie_max"):
                np.testing.assert_array_equal(getattr(result, field)[name], getattr(expected, field)[name],
                                              err_msg=f"{seed} {field} {name}")
            assert result.mean_tie_std[name] == expected.mean_tie_std[name]


def test_one_door_call_groups_the_rows_once(monkeypatch):
    calls = []
    grouped = facade._grouped

    def counting(*args):
        calls.append(1)
        return grouped(*args)

    monkeypatch.setattr(facade, "_grouped", counting)
    y_true, y_pred = np.array([1.0, 0.0, 2.0, 1.0]), np.array([0.1, 0.9, -1.0, 0.5])
    ft.rank_evaluate(y_true, y_pred, metrics=["AP", "nDCG", "RR"], score_floor=RULE)
    assert len(calls) == 1


def test_a_query_whose_relevant_items_are_all_floored_scores_zero_not_empty():
    y_true = np.array([1.0, 0.0, 2.0])
    y_pred = np.array([0.1, 0.9, -1.0])  # both relevant items at or below the floor
    result = ft.rank_evaluate(y_true, y_pred, metrics=["R@2", "RR"], score_floor=RULE)
    assert result.per_query["R@2"].tolist() == [0.0] and result.per_query["RR"].tolist() == [0.0]
    assert result.n_empty == 0


def test_no_floored_metric_is_the_plain_call():
    y_true, y_pred = np.array([1.0, 0.0, 2.0]), np.array([0.1, 0.9, -1.0])
    result = ft.rank_evaluate(y_true, y_pred, metrics=["AP", "nDCG"], score_floor=RULE)
    plain = ft.rank_evaluate(y_true, y_pred, metrics=["AP", "nDCG"])
    assert "score_floor" not in result.settings and result.mean == plain.mean


def test_a_score_floor_that_is_not_one_is_a_type_error():
    with pytest.raises(TypeError, match="score_floor"):
        ft.rank_evaluate([1, 0], [0.5, 0.1], score_floor=0.0)


def test_torchmetrics_convention_applies_its_floor():
    """The torchmetrics convention sets its floor as an option (items scored <= 0 are not found by
    AP, P, R and RR); an explicit score_floor=None wins over the preset."""
    rng = np.random.default_rng(3)
    y_true = rng.integers(0, 2, 12).astype(float)
    y_pred = rng.permutation(12) / 6 - 1.0
    result = ft.rank_evaluate(y_true, y_pred, metrics=["P@4", "RR"], convention="torchmetrics")
    order = np.argsort(-y_pred)
    found = (y_true[order] > 0) & (y_pred[order] > 0)
    assert result.mean["P@4"] == pytest.approx(found[:4].mean(), abs=1e-12)
    assert result.mean["RR"] == pytest.approx(1 / (np.flatnonzero(found)[0] + 1) if found.any() else 0.0, abs=1e-12)
    unfloored = ft.rank_evaluate(y_true, y_pred, metrics=["P@4", "RR"], convention="torchmetrics", score_floor=None)
    assert unfloored.mean["P@4"] == pytest.approx((y_true[order][:4] > 0).mean(), abs=1e-12)
    assert "score_floor" not in unfloored.settings
