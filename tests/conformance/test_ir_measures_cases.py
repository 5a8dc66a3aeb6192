"""ir_measures' own test vectors, with ir_measures' metric names and parameters as written.

Data: ``<repository>/../shared/peers-data/ir_measures/cases.json`` (see its PROVENANCE.md: the
qrels, runs and expected values of ir_measures' tests of its pytrec_eval, ranx, gdeval and
cwl_eval providers), read in place; the module skips when the folder is absent. Each case's
measure goes to :func:`fasttie.trec.evaluate` exactly as ir_measures spells it
(``Success(rel=2)@2``, ``P(rel=2)@5``, ``nDCG(dcg='exp-log2')@5``); gdeval's nDCG takes
exponential gains, which ir_measures' gdeval provider fixes, so those cases pass ``gain="exp2"``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fasttie as ft

DATA = Path(__file__).resolve().parents[3] / "shared" / "peers-data" / "ir_measures"
pytestmark = pytest.mark.skipif(
    not (DATA / "cases.json").is_file(),
    reason=f"ir_measures test vectors not found in {DATA} (read in place, not part of the repository)",
)


def _cases():
    if not (DATA / "cases.json").is_file():
        return []
    with open(DATA / "cases.json") as f:
        return json.load(f)["cases"]


def _text(data, key, tmp_path):
    """The path of a qrels or run: a file beside cases.json ('@name') or the text written out."""
    value = data[key]
    if value.startswith("@"):
        return str(DATA / value[1:])
    path = tmp_path / key
    path.write_text(value)
    return str(path)


@pytest.mark.parametrize("case", _cases(), ids=lambda case: f"{case['provider']}-{case['measure']}-{case['qrels']}")
def test_case(case, tmp_path):
    with open(DATA / "cases.json") as f:
        data = json.load(f)["data"]
    qrels, run = _text(data, case["qrels"], tmp_path), _text(data, case["run"], tmp_path)
    result = ft.trec.evaluate(qrels, run, [case["measure"]], ties="trec", gain=case["gain"])
    (name,) = result.per_query
    got = dict(zip(result.query_ids, result.per_query[name].tolist()))
    for qid, expected in case["per_query"].items():
        assert got.get(qid, 0.0) == pytest.approx(expected, abs=case["tol"]), (qid, got)
    if case["aggregate"] is not None:
        assert result.mean[name] == pytest.approx(case["aggregate"], abs=case["tol"])


def test_names_keep_their_parameters():
    from fasttie.metrics import parse_metrics
    names = ["P(rel=2)@5", "nDCG(dcg='exp-log2')@5", "nDCG(gains={0: 0, 1: 1, 2: 3})", "RBP(rel=2, p=0.5)",
             "NumRet(rel=1)@10"]
    assert [m.name for m in parse_metrics(names)] == [
        "P(rel=2)@5", "nDCG(dcg='exp-log2')@5", "nDCG(gains={0.0: 0.0, 1.0: 1.0, 2.0: 3.0})", "RBP(p=0.5, rel=2)",
        "NumRet(rel=1)@10"]
