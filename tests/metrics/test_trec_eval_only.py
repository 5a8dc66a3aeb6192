"""fasttie.metrics.trec_eval_only: the names of trec_eval's own measures, in fasttie's and
trec_eval's spellings, and what each refuses."""

from __future__ import annotations

import pytest

import fasttie as ft
from fasttie.errors import InputError
from fasttie.metrics import parse_metric
from fasttie.metrics.trec_eval_only import is_trec_only_metric, parse_trec_only_metric


@pytest.mark.parametrize("name, canonical", [
    ("Rprec_mult(x=0.2)", ["Rprec_mult(x=0.2)"]), ("Rprec_mult_0.20", ["Rprec_mult(x=0.2)"]),
    ("Rprec_mult.5.0,0.2", ["Rprec_mult(x=0.2)", "Rprec_mult(x=5)"]), ("utility", ["utility"]),
    ("utility(a=1, b=-1)", ["utility"]), ("utility.2,-1,0,0", ["utility(a=2, b=-1, c=0, d=0)"]),
    ("binG", ["binG"]), ("G.1=3,2=9", ["G(gains={1.0: 3.0, 2.0: 9.0})"]), ("ndcg_rel(gains={1: 2})",
                                                                          ["ndcg_rel(gains={1.0: 2.0})"]),
    ("Rndcg", ["Rndcg"]), ("unj@[5,10]", ["unj@5", "unj@10"]), ("unj.10,5", ["unj@5", "unj@10"]), ("unj_20", ["unj@20"]),
])
def test_names(name, canonical):
    assert is_trec_only_metric(name)
    assert [m.name for m in parse_trec_only_metric(name)] == canonical == [m.name for m in parse_metric(name)]
    assert [m.name for m in parse_trec_only_metric(canonical[0])] == canonical[:1]  # canonical names read back


@pytest.mark.parametrize("bad", ["unj", "unj(k=5)", "Rprec_mult", "Rprec_mult(x=-1)", "binG(gains={1: 2})",
                                 "utility(e=1)", "utility.1,2", "G@10", "G(gains=3)", "unj.0"])
def test_refused(bad):
    with pytest.raises(InputError):
        parse_trec_only_metric(bad)


def test_ranking_names_are_not_theirs_and_results_take_either_spelling():
    assert not any(is_trec_only_metric(n) for n in ("nDCG", "ndcg", "P@10", "Rprec", "GMAP", "g"))
    res = ft.trec.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}},
                           ["Rprec_mult_0.20", "utility.2,-1,0,0", "G.1=3", "unj_5", "unj@[5,10]"])
    assert list(res.mean) == ["Rprec_mult_0.20", "utility.2,-1,0,0", "G.1=3", "unj_5", "unj@5", "unj@10"]
    assert res.mean["Rprec_mult(x=0.2)"] == 1.0 and res.mean["utility(a=2, b=-1, c=0, d=0)"] == 2.0
