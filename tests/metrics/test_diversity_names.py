"""The diversity name grammar (ir_measures' and ndeval's spellings) and diversity_evaluate's
validation: canonical names, parameters, cutoffs, errors that name the argument and the fix."""

from __future__ import annotations

import numpy as np
import pytest

from fasttie import trec
from fasttie._kernels import diversity_measures
from fasttie.diversity import diversity_evaluate, is_diversity_metric, parse_diversity_metric


@pytest.mark.parametrize(
    "name, expected",
    [
        ("alpha_nDCG@20", ["alpha_nDCG@20"]),
        ("alpha-nDCG@[5,10]", ["alpha_nDCG@5", "alpha_nDCG@10"]),
        ("alpha_nDCG(alpha=0.3)@10", ["alpha_nDCG(alpha=0.3)@10"]),
        ("alpha_nDCG@10(alpha=0.3)", ["alpha_nDCG(alpha=0.3)@10"]),
        ("alpha_DCG@10", ["alpha_DCG@10"]),
        ("alpha-DCG@5", ["alpha_DCG@5"]),
        ("ERR_IA@20", ["ERR_IA@20"]),
        ("ERR-IA@20", ["ERR_IA@20"]),
        ("err_ia(alpha=0.5)@20", ["ERR_IA@20"]),
        ("nERR_IA@20", ["nERR_IA@20"]),
        ("nERR-IA@[5,20]", ["nERR_IA@5", "nERR_IA@20"]),
        ("NRBP", ["NRBP"]),
        ("NRBP(alpha=0.5,beta=0.5)", ["NRBP"]),
        ("NRBP(beta=0.8, alpha=0.3)", ["NRBP(alpha=0.3,beta=0.8)"]),
        ("nNRBP(beta=0.25)", ["nNRBP(beta=0.25)"]),
        ("P_IA@10", ["P_IA@10"]),
        ("P-IA@10", ["P_IA@10"]),
        ("AP_IA", ["AP_IA"]),
        ("MAP-IA", ["AP_IA"]),
        ("StRecall@10", ["StRecall@10"]),
        ("strec@[5,10]", ["StRecall@5", "StRecall@10"]),
    ],
)
def test_names(name, expected):
    assert is_diversity_metric(name)
    assert [m.name for m in parse_diversity_metric(name)] == expected


@pytest.mark.parametrize("name", ["P@10", "AP", "ERR@20", "RBP(p=0.8)", "nDCG@10", "map", "Success@5", "recip_rank"])
def test_ranking_names_are_not_diversity(name):
    assert not is_diversity_metric(name)


@pytest.mark.parametrize(
    "name, match",
    [
        ("alpha_nDCG", "needs a cutoff"),
        ("StRecall", "needs a cutoff"),
        ("NRBP@10", "has no cutoff"),
        ("AP_IA@10", "has no cutoff"),
        ("alpha_nDCG@0", "cutoff must be >= 1"),
        ("ERR_IA@x", "not an integer"),
        ("alpha_nDCG(alpha=1.5)@5", r"in \[0, 1\]"),
        ("NRBP(beta=-0.1)", r"beta of metric 'NRBP\(beta=-0.1\)' must be in \[0, 1\]"),
        ("alpha_nDCG(beta=0.5)@5", "unknown parameter 'beta'"),
        ("P_IA(alpha=0.3)@5", "unknown parameter 'alpha' .accepted: none"),
        ("NRBP(alpha=0.3,alpha=0.4)", "give alpha once"),
        ("NRBP(0.3)", "name=value"),
        ("alpha_nDCG(alpha=x)@5", "not a number"),
        ("alpha_nDCG(alpha=0.1)@5(alpha=0.2)", "give the parameters once"),
        ("alpha_foo@5", "unknown diversity metric"),
    ],
)
def test_name_errors(name, match):
    with pytest.raises(ValueError, match=match):
        parse_diversity_metric(name)


Y = np.array([[1, 0], [0, 1], [1, 1]])
S = np.array([1.0, 0.5, 0.5])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"metrics": []}, ValueError, "metrics is empty"),
        ({"metrics": [5]}, TypeError, "metric names must be strings"),
        ({"metrics": 5}, TypeError, "metrics must be a metric name or a sequence"),
        ({"metrics": ["P@10"]}, ValueError, "unknown diversity metric 'P@10'"),
        ({"ties": "optimistic"}, ValueError, "ties must be one of"),
        ({"ties": 1}, TypeError, "ties must be a string"),
        ({"ties": "trec"}, ValueError, "pass doc_ids"),
        ({"empty": "never"}, ValueError, "empty must be a number or one of"),
        ({"group": [1, 1]}, ValueError, "group sizes sum to 2 but y_true has 3 rows"),
    ],
)
def test_diversity_evaluate_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        diversity_evaluate(Y, S, **{"metrics": ["alpha_nDCG@2"], **kwargs})


def test_empty_policy_and_settings():
    y_true = np.array([[1, 0], [0, 1], [0, 0], [0, 0]])
    names = ["alpha_nDCG@2", "ERR_IA@2", "NRBP(beta=0.8)", "nNRBP(beta=0.8)", "AP_IA", "P_IA@2", "StRecall@2"]
    for empty, fill in [("zero", 0.0), ("one", 1.0), (0.25, 0.25)]:
        res = diversity_evaluate(y_true, [1.0, 0.5, 1.0, 0.5], [2, 2], metrics=names, empty=empty)
        assert res.n_empty == 1 and res.n_queries == 2
        assert all(res.per_query[name][1] == fill for name in res.per_query)
    skipped = diversity_evaluate(y_true, [1.0, 0.5, 1.0, 0.5], [2, 2], metrics=names, empty="skip")
    assert all(np.isnan(v[1]) and skipped.mean[name] == v[0] for name, v in skipped.per_query.items())
    assert skipped.settings == {"ties": "average", "empty": "skip", "alpha": 0.5, "beta": 0.8}
    with pytest.raises(ValueError, match="1 of 2 queries have no relevant subtopic"):
        diversity_evaluate(y_true, [1.0, 0.5, 1.0, 0.5], [2, 2], metrics=names, empty="error")


def test_trec_evaluate_rejects_optimistic_for_diversity():
    qrels = trec.Qrels.from_arrays(["q"], ["d"], [1], ["1"])
    run = trec.Run.from_arrays(["q"], ["d"], [1.0])
    with pytest.raises(ValueError, match="take ties in"):
        trec.evaluate(qrels, run, ["ERR_IA@5"], ties="optimistic")
    assert trec.evaluate(qrels, run, ["ERR_IA@5", "P@1"], ties="average").mean == {"ERR_IA@5": pytest.approx(
        1 / (1 + 0.5 / 2 + 0.25 / 3 + 0.125 / 4 + 0.0625 / 5)), "P@1": 1.0}


def test_one_kernel_signature_for_every_mode(tmp_path):
    np.save(tmp_path / "y.npy", Y.astype(np.int8))
    mapped = np.load(tmp_path / "y.npy", mmap_mode="r")
    names = ["alpha_nDCG@2", "ERR_IA@2", "NRBP", "nNRBP", "AP_IA", "P_IA@2", "StRecall@2"]
    for y_true in (Y, Y.astype(bool), mapped):
        for scores in (S, S.astype(np.float32), np.array([3, 2, 2])):
            for ties in ("average", "stable", "pyndeval"):
                diversity_evaluate(y_true, scores, metrics=names, ties=ties, doc_ids=["a", "b", "c"])
    assert len(diversity_measures.diversity_queries.signatures) == 1, diversity_measures.diversity_queries.signatures
