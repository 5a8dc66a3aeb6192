"""fasttie.metrics.trec_eval_names: trec_eval's names with cutoffs and parameters, rewritten in
fasttie's spelling, give trec_eval's own values (pytrec_eval, trec_eval as a library) query by
query on random runs with tied scores (trec_eval's tie order, ``ties="trec"``)."""

import json
import subprocess
import sys

import numpy as np
import pytest

import fasttie as ft
from fasttie.metrics.trec_eval_names import from_trec_eval

_SCRIPT = """
import json, sys
import pytrec_eval
qrels, run, measures = json.load(sys.stdin)
json.dump(pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run), sys.stdout)
"""


def trec_eval_values(qrels, run, measures):
    """pytrec_eval's {qid: {printed name: value}}, in a fresh process (pytrec_eval can hang in a
    process that created another evaluator)."""
    pytest.importorskip("pytrec_eval")
    done = subprocess.run([sys.executable, "-c", _SCRIPT], input=json.dumps([qrels, run, measures]),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def random_case(seed):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(12):
        pool = [f"d{x}" for x in range(int(rng.integers(3, 40)))]
        qrels[f"q{q}"] = {d: int(rng.integers(0, 4)) for d in rng.choice(pool, int(rng.integers(1, len(pool))))}
        run[f"q{q}"] = {d: float(rng.integers(0, 4)) for d in rng.choice(pool, int(rng.integers(1, len(pool))))}
    return qrels, run


@pytest.mark.parametrize("name, expected", [
    ("P_10", ["P@10"]), ("P.5,10", ["P@5", "P@10"]), ("ndcg_cut.5,10", ["nDCG@5", "nDCG@10"]),
    ("map_cut_100", ["AP@100"]), ("recall_5", ["R@5"]), ("success.1,5", ["Success@1", "Success@5"]),
    ("relative_P_10", ["P(relative=True)@10"]), ("set_relative_P", ["P(relative=True)"]),
    ("rbp", ["RBP(p=0.9)"]), ("rbp_resid.p=0.5", ["RBPResid(p=0.5)"]), ("ndcg.1=3,2=9", ["nDCG(gains={1: 3,2: 9})"]),
    ("set_F.0.5", ["SetF(beta=0.5)"]), ("map", ["map"]), ("nDCG@10", ["nDCG@10"]), (" P_5 ", ["P@5"]),
])
def test_rewrites(name, expected):
    assert from_trec_eval(name) == expected


@pytest.mark.parametrize("seed", range(3))
def test_rewritten_names_give_trec_evals_values(seed):
    qrels, run = random_case(seed)
    measures = ["P.3,10", "ndcg_cut.5,10", "map_cut.3", "recall.5", "success.1", "relative_P.5", "set_relative_P"]
    expected = trec_eval_values(qrels, run, measures)
    printed = sorted(next(iter(expected.values())))
    names = [fasttie_name for key in printed for fasttie_name in from_trec_eval(key)]
    assert len(names) == len(printed) == 9
    result = ft.trec.evaluate(qrels, run, names, ties="trec")
    for key, name in zip(printed, names):
        for i, qid in enumerate(result.query_ids):
            assert result.per_query[name][i] == pytest.approx(expected[str(qid)][key], abs=1e-4), (key, qid)
