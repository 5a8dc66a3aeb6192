"""ndeval 4.5's own outputs on the TREC 2012 Web track diversity qrels: every ndeval column.

Data: ``<repository>/../shared/peers-data/ndeval/`` (see its PROVENANCE.md), read in place and
never copied into the repository: the diversity qrels, two baseline runs (Indri relevance model
"rm" and query likelihood "ql"), and what ndeval printed on them (``outputs.tar.gz``):

=========================  ================================  ===============================
ndeval file                ndeval options                    fasttie
=========================  ================================  ===============================
``ndeval.{rm,ql}.csv``     default (runs sorted by rank)     ``ties="stable"`` (the files are
                                                             in rank order, scores falling)
``ndeval.trad.*.csv``      ``-traditional``                  ``ties="trec"``
``ndeval.trad.c.*.csv``    ``-traditional -c``               ``ties="trec", complete=True``
``ndeval.trad.a03.*.csv``  ``-traditional -alpha 0.3``       ``(alpha=0.3)`` on every measure
                                                             that takes alpha
=========================  ================================  ===============================

Each of ndeval's 21 columns (ERR-IA, nERR-IA, alpha-DCG, alpha-nDCG, P-IA, strec at 5, 10, 20;
NRBP, nNRBP, MAP-IA) is compared per topic and on the ``amean`` row at ndeval's printed
precision (``%.6f``: half a unit of the last digit, plus 1e-9 for the two roundings); on these
files every value, printed with ``%.6f``, is also the very text ndeval printed. Also
pyndeval's own test expectations (``pyndeval_test_basic.json``, tolerance 1e-4 as there).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fasttie import trec
from helpers import NDEVAL_DATA, ndeval_inputs, ndeval_outputs

DATA = NDEVAL_DATA
pytestmark = pytest.mark.skipif(
    not (DATA / "outputs.tar.gz").is_file(),
    reason=f"ndeval reference data not found in {DATA} (read in place, not part of the repository)",
)
PRINTED = 5e-7 + 1e-9  # ndeval prints %.6f

# ndeval column -> fasttie metric (alpha-dependent ones take "{a}", the parameter text)
COLUMNS = {
    **{f"ERR-IA@{k}": f"ERR_IA{{a}}@{k}" for k in (5, 10, 20)},
    **{f"nERR-IA@{k}": f"nERR_IA{{a}}@{k}" for k in (5, 10, 20)},
    **{f"alpha-DCG@{k}": f"alpha_DCG{{a}}@{k}" for k in (5, 10, 20)},
    **{f"alpha-nDCG@{k}": f"alpha_nDCG{{a}}@{k}" for k in (5, 10, 20)},
    "NRBP": "NRBP{a}",
    "nNRBP": "nNRBP{a}",
    "MAP-IA": "AP_IA",
    **{f"P-IA@{k}": f"P_IA@{k}" for k in (5, 10, 20)},
    **{f"strec@{k}": f"StRecall@{k}" for k in (5, 10, 20)},
}
CONFIGS = {  # output prefix -> (evaluate keywords, parameter text)
    "ndeval": ({"ties": "stable"}, ""),
    "ndeval.trad": ({"ties": "trec"}, ""),
    "ndeval.trad.c": ({"ties": "trec", "complete": True}, ""),
    "ndeval.trad.a03": ({"ties": "trec"}, "(alpha=0.3)"),
}
RUNS = ("rm", "ql")
CHECKED = {"values": 0, "max_diff": 0.0}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return ndeval_inputs(tmp_path_factory.mktemp("ndeval"), RUNS)


@pytest.fixture(scope="module")
def outputs():
    return ndeval_outputs("ndeval")


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("config", list(CONFIGS))
def test_every_ndeval_column(files, outputs, config, run):
    options, params = CONFIGS[config]
    rows = outputs[f"{config}.{run}.csv"]
    names = {column: metric.format(a=params) for column, metric in COLUMNS.items()}
    res = trec.evaluate(files["qrels"], files[run], list(names.values()), **options)
    assert list(res.per_query) == list(names.values())
    per_topic = {row["topic"]: row for row in rows if row["topic"] != "amean"}
    (amean,) = [row for row in rows if row["topic"] == "amean"]
    assert sorted(per_topic, key=int) == sorted(res.query_ids, key=int)
    index = {qid: i for i, qid in enumerate(res.query_ids)}
    worst = 0.0
    for column, name in names.items():
        got = res.per_query[name]
        want = np.array([float(per_topic[qid][column]) for qid in res.query_ids])
        diff = np.abs(got - want)
        assert diff.max() <= PRINTED, (column, res.query_ids[int(diff.argmax())], got[diff.argmax()],
                                       want[diff.argmax()])
        assert abs(res.mean[name] - float(amean[column])) <= PRINTED, (column, res.mean[name], amean[column])
        # and, on these files, fasttie's values print exactly as ndeval's
        assert [f"{v:.6f}" for v in got] == [per_topic[qid][column] for qid in res.query_ids], column
        assert f"{res.mean[name]:.6f}" == amean[column], column
        worst = max(worst, float(diff.max()), abs(res.mean[name] - float(amean[column])))
        CHECKED["values"] += len(index) + 1
    CHECKED["max_diff"] = max(CHECKED["max_diff"], worst)
    assert res.n_empty == 0  # every 2012 topic has a relevant subtopic


def test_alpha_settings_and_default_alpha_names(files):
    res = trec.evaluate(files["qrels"], files["rm"], ["alpha-nDCG@20", "ERR-IA(alpha=0.3)@20", "NRBP(beta=0.8)",
                                                      "MAP-IA", "strec@20"])
    assert list(res.per_query) == ["alpha-nDCG@20", "ERR-IA(alpha=0.3)@20", "NRBP(beta=0.8)", "MAP-IA", "strec@20"]
    assert all(name in res.per_query for name in ["alpha_nDCG@20", "ERR_IA(alpha=0.3)@20", "AP_IA", "StRecall@20"])
    assert res.settings["alpha"] == [0.3, 0.5] and res.settings["beta"] == 0.8


def test_pyndeval_basic_expectations():
    case = json.loads((DATA / "pyndeval_test_basic.json").read_text())
    qrels = case["qrels"]
    q = trec.Qrels.from_arrays([r[0] for r in qrels], [r[2] for r in qrels], [r[3] for r in qrels],
                               [r[1] for r in qrels])
    r = trec.Run.from_arrays([x[0] for x in case["run"]], [x[1] for x in case["run"]], [x[2] for x in case["run"]])
    names = {"alpha-nDCG@5": "alpha_nDCG@5", "alpha-nDCG@10": "alpha_nDCG@10", "alpha-nDCG@20": "alpha_nDCG@20",
             "alpha-DCG@5": "alpha_DCG@5", "alpha-DCG@10": "alpha_DCG@10", "alpha-DCG@20": "alpha_DCG@20",
             "ERR-IA@5": "ERR_IA@5", "nERR-IA@5": "nERR_IA@5", "NRBP": "NRBP", "nNRBP": "nNRBP", "MAP-IA": "AP_IA",
             "P-IA@5": "P_IA@5", "strec@5": "StRecall@5"}
    assert set(names) == set(case["expected"])
    res = trec.evaluate(q, r, list(names.values()), ties="pyndeval")
    for column, name in names.items():
        assert res.per_query[name][0] == pytest.approx(case["expected"][column], abs=case["tolerance"]), column


def test_report_checked_counts():
    """Runs last in this module: the number of values compared and the largest difference."""
    if CHECKED["values"]:
        print(f"\nndeval conformance: {CHECKED['values']} topic x measure values, "
              f"max |fasttie - ndeval| = {CHECKED['max_diff']:.3g}")
        assert CHECKED["max_diff"] <= PRINTED
