"""fasttie.metrics.trec_eval_measures: ``-m`` arguments select the measures trec_eval prints
(the printed names pytrec_eval returns for the same arguments, those fasttie leaves out aside),
each mapped to a fasttie metric with trec_eval's values, query by query."""

import numpy as np
import pytest

import fasttie as ft
from fasttie.metrics.trec_eval_measures import is_trec_eval_measure, select_trec_eval
from metrics.test_trec_eval_names import random_case, trec_eval_values

SPECS = [
    ["P.5,10", "map", "ndcg_cut.5"],
    ["recip_rank", "num_ret", "num_rel", "num_rel_ret", "Rprec", "bpref"],
    ["set_P", "set_recall", "set_relative_P", "success.1,5", "map_cut.2"],
    ["P_5", "P_10", "recall.3", "ndcg"],
]


@pytest.mark.parametrize("specs", SPECS, ids=lambda specs: " ".join(specs))
def test_selection_prints_trec_evals_measures_with_its_values(specs):
    qrels, run = random_case(len(specs[0]))
    selection = select_trec_eval(specs)
    expected = trec_eval_values(qrels, run, specs)
    printed = set(next(iter(expected.values())))
    assert set(selection.keys) | set(selection.left_out) == printed
    result = ft.trec.evaluate(qrels, run, list(dict.fromkeys(selection.keys.values())), ties="trec")
    for key, name in selection.keys.items():
        for i, qid in enumerate(result.query_ids):
            assert result.per_query[name][i] == pytest.approx(expected[str(qid)][key], abs=1e-4), (key, qid)


def test_parameters_given_last_count_and_nicknames():
    assert select_trec_eval(["P.5", "P.10"]).keys == {"P_10": "P@10"}
    assert select_trec_eval(["P_5", "P_10"]).keys == {"P_5": "P@5", "P_10": "P@10"}
    assert select_trec_eval(["P.10,5", "map", "utility"]).left_out == ["utility"]
    official = select_trec_eval(["official"])
    assert "map" in official.keys and "P_5" in official.keys and official.runid
    with pytest.raises(ValueError):
        select_trec_eval(["P.x"])
    with pytest.raises(ValueError):
        select_trec_eval(["map.5"])


def test_what_is_a_trec_eval_measure():
    for spec in ("map", "P.5,10", "P_10", "ndcg_cut.5", "official", "all_trec", "iprec_at_recall"):
        assert is_trec_eval_measure(spec), spec
    for name in ("AP", "nDCG@10", "P@5", "alpha_nDCG@20", "RBP(p=0.5)"):
        assert not is_trec_eval_measure(name), name
