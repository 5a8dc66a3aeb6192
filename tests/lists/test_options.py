"""fasttie.lists.options: the ranked-list door's options are checked once, into one object that the
passes, the spread, the extremes and the TREC door read."""

import inspect

import numpy as np
import pytest

import fasttie as ft
from fasttie.lists import options as options_module
from fasttie.lists.options import ListOptions
from fasttie.lists.score_floor import ScoreFloor
from fasttie.metrics import parse_metrics
from fasttie.options import AP_DENOMINATORS, LIST_TIES

QRELS = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d4": 1}}
RUN = {"q1": {"d1": 1.0, "d2": 1.0, "d3": 0.5}, "q2": {"d4": 0.2, "d5": 0.2}}


def test_defaults_are_the_doors():
    door = inspect.signature(ft.rank_evaluate).parameters
    resolved = ListOptions.resolve(parse_metrics(["AP"]))
    for name, value in resolved.keywords().items():
        assert door[name].default == value, name
    assert resolved == ListOptions()


@pytest.mark.parametrize("option, bad, error", [
    ("ties", "random", ValueError), ("ties", None, TypeError), ("gain", "exp", ValueError),
    ("ap_denominator", "R", ValueError), ("empty", "skip_missed", ValueError), ("log_base", 1, ValueError),
    ("log_base", True, ValueError), ("relevance_level", 0, ValueError), ("relevance_level", float("nan"), ValueError),
    ("spread", "yes", ValueError), ("score_floor", 0.0, TypeError),
])
def test_a_bad_option_is_named(option, bad, error):
    with pytest.raises(error, match=option):
        ListOptions.resolve(parse_metrics(["AP"]), **{option: bad})


@pytest.mark.parametrize("ties", LIST_TIES)
@pytest.mark.parametrize("ap_denominator", AP_DENOMINATORS)
def test_every_choice_resolves(ties, ap_denominator):
    got = ListOptions.resolve(parse_metrics(["AP@5"]), ties=ties, ap_denominator=ap_denominator, log_base=10,
                              relevance_level=2)
    assert (got.ties, got.ap_denominator, got.log_base, got.relevance_level) == (ties, ap_denominator, 10, 2)
    assert got.settings() == {"ties": ties, "ap_denominator": ap_denominator, "gain": "linear", "empty": "zero",
                              "log_base": 10, "relevance_level": 2}


def test_under_another_order_and_at_another_level():
    floor = ScoreFloor(0.0, ("AP",))
    options = ListOptions(ties="average", gain="exp2", spread=True, score_floor=floor)
    assert options.under("optimistic") == ListOptions(ties="optimistic", gain="exp2")
    assert options.at_level(3).relevance_level == 3 and options.at_level(3).score_floor is floor


def test_keywords_make_the_same_call():
    y_true, y_pred = [2, 0, 1, 1, 0, 1], [0.5, 0.5, 0.1, 0.9, 0.9, 0.9]
    options = ListOptions(ties="pessimistic", gain="exp2", ap_denominator="min", log_base=10)
    metrics = ["AP@2", "nDCG@3", "RR"]
    got = ft.rank_evaluate(y_true, y_pred, [3, 3], metrics=metrics, **options.keywords())
    assert got.settings == options.settings()
    again = ft.rank_evaluate(y_true, y_pred, [3, 3], metrics=metrics, ties="pessimistic", gain="exp2",
                             ap_denominator="min", log_base=10)
    for name in metrics:
        np.testing.assert_array_equal(got.per_query[name], again.per_query[name])


@pytest.mark.parametrize("call", ["rank_evaluate", "spread", "score_floor", "trec", "trec_pyndeval", "trec_level_0",
                                  "trec_diversity"])
def test_each_door_resolves_its_options_once(monkeypatch, call):
    resolved = []
    real = ListOptions.resolve.__func__
    monkeypatch.setattr(ListOptions, "resolve", classmethod(lambda cls, *a, **k: resolved.append(k) or real(cls, *a, **k)))
    checked = []
    monkeypatch.setattr(options_module, "check_options", lambda **kw: checked.append(kw))
    y_true, y_pred = [1, 0, 1, 1, 0], [0.5, 0.5, 0.1, 0.9, 0.9]
    if call == "rank_evaluate":
        ft.rank_evaluate(y_true, y_pred, [2, 3], metrics=["AP", "ERR@2", "infAP", "P(rel=2)@2"])
    elif call == "spread":
        ft.rank_evaluate(y_true, y_pred, [2, 3], metrics=["AP", "P@1"], spread=True)
    elif call == "score_floor":
        ft.rank_evaluate(y_true, y_pred, [2, 3], metrics=["AP", "nDCG"], convention="torchmetrics")
    elif call == "trec":
        ft.trec.evaluate(QRELS, RUN, ["AP", "P@2", "nDCG"])
    elif call == "trec_pyndeval":
        ft.trec.evaluate(QRELS, RUN, ["AP", "P@2"], ties="pyndeval")
    elif call == "trec_level_0":
        ft.trec.evaluate(QRELS, RUN, ["AP", "P@2", "nDCG"], relevance_level=0)
    else:
        subtopics = ft.trec.Qrels.from_arrays(["q1"] * 4, ["d1", "d1", "d2", "d3"], [1, 1, 1, 1], ["1", "2", "1", "3"])
        ft.trec.evaluate(subtopics, RUN, ["alpha_nDCG@2", "P@2"])
    assert len(resolved) == 1 and len(checked) == 1


def test_the_trec_door_checks_its_options_before_reading_anything(tmp_path):
    missing = tmp_path / "no such qrels"
    with pytest.raises(ValueError, match="log_base"):
        ft.trec.evaluate(missing, RUN, ["AP", "alpha_nDCG@5"], log_base=1)
    with pytest.raises(ValueError, match="'trec', 'pyndeval', 'average'"):  # trec_eval's order listed first
        ft.trec.evaluate(missing, RUN, ["AP"], ties="random")


@pytest.mark.parametrize("ties", ["trec", "pyndeval"])
def test_the_trec_door_keeps_the_tie_order_it_was_asked(ties):
    # d1 and d2 tie in q1: trec_eval ranks d2 first (id descending), ndeval d1 (ascending)
    result = ft.trec.evaluate(QRELS, RUN, ["P@1", "RR"], ties=ties)
    assert result.settings["ties"] == ties
    assert result.per_query["P@1"][0] == (1.0 if ties == "pyndeval" else 0.0)
