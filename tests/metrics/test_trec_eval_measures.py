"""fasttie.metrics.trec_eval_measures: ``-m`` arguments select the measures trec_eval prints
(the printed names pytrec_eval returns for the same arguments, those fasttie leaves out aside),
each mapped to a fasttie metric with trec_eval's values, query by query."""

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


def test_parameters_given_first_count_and_nicknames():
    assert select_trec_eval(["P.5", "P.10"]).keys == {"P_5": "P@5"}
    assert select_trec_eval(["P_5", "P_10"]).keys == {"P_5": "P@5", "P_10": "P@10"}
    assert select_trec_eval(["P.10,5", "map", "11pt_avg..25"]).left_out == ["11pt_avg_.25"]
    assert select_trec_eval(["utility.2,-1,0,0", "utility"]).keys == {
        "utility_2,-1,0,0": "utility(a=2, b=-1, c=0, d=0)"}
    official = select_trec_eval(["official"])
    assert "map" in official.keys and "P_5" in official.keys and official.runid
    with pytest.raises(ValueError):
        select_trec_eval(["P.x"])
    assert select_trec_eval(["map.5"]).keys == {"map": "AP"}  # trec_eval's map reads no parameters


def test_what_is_a_trec_eval_measure():
    for spec in ("map", "P.5,10", "P_10", "ndcg_cut.5", "official", "all_trec", "iprec_at_recall"):
        assert is_trec_eval_measure(spec), spec
    for name in ("AP", "nDCG@10", "P@5", "alpha_nDCG@20", "RBP(p=0.5)"):
        assert not is_trec_eval_measure(name), name


def test_trec_eval_measure_selection():
    """-m as trec_eval reads it: its print order whatever the order asked, cutoffs sorted once
    (23.4 read as 23), the parameters given first, nicknames, and the measures fasttie lacks."""
    from fasttie.metrics.trec_eval_measures import is_trec_eval_measure, select_trec_eval

    sel = select_trec_eval(["ndcg_cut.20,10,23.4,10", "P_10", "P_5", "recip_rank", "map"])
    assert list(sel.keys.items()) == [("map", "AP"), ("recip_rank", "RR"), ("P_5", "P@5"), ("P_10", "P@10"),
                                      ("ndcg_cut_10", "nDCG@10"), ("ndcg_cut_20", "nDCG@20"),
                                      ("ndcg_cut_23", "nDCG@23")]
    assert not sel.runid and not sel.left_out
    assert select_trec_eval(["P.5", "P.10"]).keys == {"P_5": "P@5"}  # the first parameters count
    official = select_trec_eval(["official"])
    assert official.runid and len(official.keys) == 9 + 11 + 9 and "gm_map" in official.keys
    levels = select_trec_eval(["iprec_at_recall..10,.25,0.333,1.5"])  # any level in [0, 1]; trec_eval's %3.2f
    assert levels.keys == {"iprec_at_recall_0.10": "IPrec@0.1", "iprec_at_recall_0.25": "IPrec@0.25",
                           "iprec_at_recall_0.33": "IPrec@0.333"} and levels.left_out == ["iprec_at_recall_1.50"]
    everything = select_trec_eval(["all_trec"])
    assert not everything.left_out and everything.runid
    order = list(everything.keys)  # trec_eval's print order (its measure table)
    at = [order.index(key) for key in ("P_1000", "relstring", "recall_5", "gm_bpref", "Rprec_mult_0.20",
                                        "Rprec_mult_2.00", "utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel",
                                        "Rndcg", "ndcg_cut_5")]
    assert at == sorted(at) and order[-3:] == ["unj_5", "unj_10", "unj_20"]
    assert everything.keys["relstring"] == "relstring@10" and everything.keys["Rprec_mult_0.20"] == "Rprec_mult(x=0.2)"
    assert [k for k in everything.keys if k.startswith("unj")] == ["unj_5", "unj_10", "unj_20"]
    assert select_trec_eval(["relstring.20", "utility.2,-1,0,0", "G.1=3"]).keys == {
        "relstring_20": "relstring@20", "utility_2,-1,0,0": "utility(a=2, b=-1, c=0, d=0)",
        "G_1=3": "G(gains={1.0: 3.0})"}
    assert select_trec_eval(["Rprec_mult.5.0,0.2,0.35"]).keys == {
        "Rprec_mult_0.20": "Rprec_mult(x=0.2)", "Rprec_mult_0.35": "Rprec_mult(x=0.35)", "Rprec_mult_5.00": "Rprec_mult(x=5)"}
    assert select_trec_eval(["ndcg.1=3,2=9", "rbp.p=0.5"]).keys == {
        "ndcg_1=3,2=9": "nDCG(gains={1: 3,2: 9})", "rbp_p=0.5": "RBP(p=0.5)"}
    assert all(map(is_trec_eval_measure, ["P", "P.5", "P_5", "set_F", "all_trec", "iprec_at_recall_0.10"]))
    assert not any(map(is_trec_eval_measure, ["AP", "P@5", "nDCG@10", "RBP(p=0.8)", "Judged@10"]))
    for bad in ("P.x", "P.0", "P."):
        with pytest.raises(ValueError, match=bad.split(".")[0]):
            select_trec_eval([bad])


def test_a_measure_given_twice_as_trec_eval_reads_it():
    """trec_eval marks a measure once however often -m names it, and its init takes the first
    parameters given under its name (meas_init.c: the loop over epi->meas_arg stops at the first
    match); a plain -m only marks it. trec_eval 10.0 on qrels 'q 0 a 1' / 'q 0 b 2', run a, b:
    `-m P.5 -m P.10` prints P_5 only, `-m ndcg.1=3,2=9 -m ndcg` and `-m ndcg -m ndcg.1=3,2=9` both
    ndcg_1=3,2=9 only, `-m P.10 -m P` P_10 only; `-m map.5` prints map (te_init_meas_s_double
    reads no parameters); `-m official.5` marks official's measures; `-m P.` is refused."""
    assert select_trec_eval(["P.5", "P.10"]).keys == {"P_5": "P@5"}
    gains = {"ndcg_1=3,2=9": "nDCG(gains={1: 3,2: 9})"}
    assert select_trec_eval(["ndcg.1=3,2=9", "ndcg"]).keys == gains
    assert select_trec_eval(["ndcg", "ndcg.1=3,2=9"]).keys == gains
    assert select_trec_eval(["P.10", "P"]).keys == select_trec_eval(["P", "P.10"]).keys == {"P_10": "P@10"}
    assert select_trec_eval(["map.5", "num_ret.2"]).keys == {"num_ret": "NumRet", "map": "AP"}
    assert select_trec_eval(["official.5"]).keys == select_trec_eval(["official"]).keys
    with pytest.raises(ValueError, match="no parameters after"):
        select_trec_eval(["P."])


def test_set_names_the_measures_fasttie_lacks():
    """trec_eval's `set` nickname holds utility (measures.c, set_names); every member of a
    nickname fasttie lacks is named as left out, as all_trec's are."""
    from fasttie.metrics.trec_eval_measures import TREC_EVAL_MEASURES, TREC_EVAL_NICKNAMES

    assert "utility" in TREC_EVAL_NICKNAMES["set"]
    for nickname, members in TREC_EVAL_NICKNAMES.items():
        selection = select_trec_eval([nickname])
        lacking = [m for m in members if m != "runid" and TREC_EVAL_MEASURES[m][0] is None]
        assert all(m in selection.left_out for m in lacking), nickname
