"""fasttie.trec.relstring: trec_eval's m_relstring.c (a literal transcription in
tests/measures/test_trec_only.py) in every fixed order, its options, and the average it refuses.
trec_eval's own strings (out.test.aq, out.test.aqc, out.test.aql) are in
tests/conformance/test_trec_conformance.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
from fasttie.errors import InputError
from measures.test_trec_only import orders, random_case, relstring, trec_rels


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["trec", "stable", "optimistic", "pessimistic"]),
       st.integers(0, 8))
def test_against_trec_eval_loop(seed, ties, length):
    qrels, scores = random_case(np.random.default_rng(seed))
    (order,) = orders(qrels, scores, ties)
    assert ft.trec.relstring({"q": qrels}, {"q": scores}, length=length, ties=ties) == {
        "q": relstring(trec_rels(qrels, order), length)}


def test_options_as_trec_eval():
    qrels = {"q1": {"a": 12, "b": -1, "c": 0}, "q2": {"x": 1}}
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 1.0}}
    assert ft.trec.relstring(qrels, run) == {"q1": ">.-0"}  # d then c: document id descending
    assert ft.trec.relstring(qrels, run, ties="pyndeval") == {"q1": ">.0-"}
    assert ft.trec.relstring(qrels, run, complete=True) == {"q1": ">.-0", "q2": ""}  # trec_eval -c: ''
    assert ft.trec.relstring(qrels, run, max_retrieved=2) == {"q1": ">."}
    assert ft.trec.relstring(qrels, run, judged_only=True) == {"q1": ">0"}


def test_refuses_the_average_and_bad_lengths():
    with pytest.raises(InputError, match="one order"):
        ft.trec.relstring({"q": {"a": 1}}, {"q": {"a": 1.0}}, ties="average")
    for length in (-1, 2.5, True):
        with pytest.raises(InputError, match="length"):
            ft.trec.relstring({"q": {"a": 1}}, {"q": {"a": 1.0}}, length=length)
