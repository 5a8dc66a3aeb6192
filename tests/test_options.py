"""fasttie.options: the one table of the doors' choices is what the doors accept, what they name
when they refuse, and what the command line offers."""

import argparse

import numpy as np
import pytest

import fasttie as ft
from fasttie.cli import build_parser
from fasttie.options import AP_DENOMINATORS, CHOICES, EMPTY_POLICIES, GAINS, HAMMING_TIES, LIST_TIES, TREC_TIES

QUERIES = np.array([[1, 0, 1, 1], [0, 0, 1, 0]])
DATABASE = np.array([[1, 0, 1, 0], [0, 1, 1, 1], [1, 1, 0, 0], [1, 0, 1, 1]])


def _hamming(**options):
    return ft.evaluate(QUERIES, DATABASE, [0, 1], [0, 1, 0, 1], metrics=["AP@2"], **options)


def _lists(**options):
    return ft.rank_evaluate([1, 0, 1, 0], [0.5, 0.5, 0.2, 0.1], [2, 2], metrics=["AP@2"], doc_ids=["a", "b", "c", "d"],
                            **options)


def _trec(**options):
    qrels = {"q": {"a": 1, "c": 1}}
    run = {"q": {"a": 0.5, "b": 0.5, "c": 0.2}}
    return ft.trec.evaluate(qrels, run, ["map"], **options)


@pytest.mark.parametrize("door, modes", [(_hamming, HAMMING_TIES), (_lists, LIST_TIES), (_trec, TREC_TIES)])
def test_each_door_takes_its_tie_modes_and_names_them_when_it_refuses(door, modes):
    for mode in modes:
        door(ties=mode)
    with pytest.raises(ValueError, match=r"ties.*must be one of") as refused:
        door(ties="random")
    assert str(modes) in str(refused.value)


@pytest.mark.parametrize("option", sorted(CHOICES))
def test_the_doors_check_the_table(option):
    for value in CHOICES[option]:
        if not (option == "empty" and value == "error"):  # the toy data has a query of each class: no empty one
            _hamming(**{option: value})
    with pytest.raises(ValueError, match=rf"{option}.*must be one of") as refused:
        _hamming(**{option: "neither"})
    assert str(CHOICES[option]) in str(refused.value)


def _choices(command, flag):
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return tuple(next(a for a in sub._actions if flag in a.option_strings).choices)


def test_the_command_line_offers_the_table():
    assert _choices("evaluate", "--ties") == HAMMING_TIES
    assert _choices("trec", "--ties") == TREC_TIES
    for command in ("evaluate", "trec", "compare"):
        assert _choices(command, "--ap-denominator") == AP_DENOMINATORS
        assert _choices(command, "--gain") == GAINS
    assert _choices("evaluate", "--empty") == EMPTY_POLICIES
    assert _choices("trec", "--empty") == tuple(p for p in EMPTY_POLICIES if p != "skip_missed")
