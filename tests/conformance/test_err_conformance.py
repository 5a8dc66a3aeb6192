"""gdeval.pl 1.3's own ERR@k (and nDCG@k) on the TREC 2012 Web track, per topic and ``amean``.

Data: ``<repository>/../shared/peers-data/ndeval/`` (see its PROVENANCE.md), read in place and
never copied into the repository. ``outputs.tar.gz`` holds ``gdeval.k{5,10,20,100}.{rm,ql}.csv``:
what ``gdeval.pl -k K`` printed (``%.5f``) on adhoc qrels made from the diversity qrels (one line
per judged document with its highest grade over the subtopics) and the two baseline runs.

Conventions checked: gdeval sorts a topic's documents by score descending, then by document id
descending (its ``runOrder``), which is ``ties="trec"``; its stop probability is
(2**g - 1) / 2**4 (``$MAX_JUDGMENT = 4``); its nDCG takes gains 2**g - 1 (``gain="exp2"``) and the
ideal of the judged documents cut at K. gdeval averages over the topics of the run that have a
positive judgment; on these files that is every topic of the run. fasttie reads the diversity
qrels directly: a document judged under several subtopics takes its highest grade, the same
adhoc qrels.
"""

from __future__ import annotations


import numpy as np
import pytest

import fasttie as ft
from fasttie import trec
from helpers import NDEVAL_DATA, ndeval_inputs, ndeval_outputs

DATA = NDEVAL_DATA
pytestmark = pytest.mark.skipif(
    not (DATA / "outputs.tar.gz").is_file(),
    reason=f"gdeval reference data not found in {DATA} (read in place, not part of the repository)",
)
PRINTED = 5e-6 + 1e-9  # gdeval prints %.5f
RUNS = ("rm", "ql")
CUTOFFS = (5, 10, 20, 100)
CHECKED = {"values": 0, "max_diff": 0.0}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return ndeval_inputs(tmp_path_factory.mktemp("gdeval"), RUNS)


@pytest.fixture(scope="module")
def outputs():
    return ndeval_outputs("gdeval")


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("k", CUTOFFS)
def test_gdeval_err_and_ndcg(files, outputs, k, run):
    rows = outputs[f"gdeval.k{k}.{run}.csv"]
    per_topic = {row["topic"]: row for row in rows if row["topic"] != "amean"}
    (amean,) = [row for row in rows if row["topic"] == "amean"]
    names = {f"err@{k}": f"ERR@{k}", f"ndcg@{k}": f"nDCG@{k}"}
    res = trec.evaluate(files["qrels"], files[run], list(names.values()), ties="trec", gain="exp2")
    assert sorted(per_topic, key=int) == sorted(res.query_ids, key=int)
    worst = 0.0
    for column, name in names.items():
        got = res.per_query[name]
        want = np.array([float(per_topic[qid][column]) for qid in res.query_ids])
        diff = np.abs(got - want)
        assert diff.max() <= PRINTED, (column, res.query_ids[int(diff.argmax())], got[diff.argmax()],
                                       want[diff.argmax()])
        assert abs(res.mean[name] - float(amean[column])) <= PRINTED, (column, res.mean[name], amean[column])
        worst = max(worst, float(diff.max()), abs(res.mean[name] - float(amean[column])))
        CHECKED["values"] += len(got) + 1
    CHECKED["max_diff"] = max(CHECKED["max_diff"], worst)
    assert res.n_empty == 0


def _graded_run(files, run):
    """(grades, scores, docnos, topic sizes, topics) of a run joined with the max-over-subtopics
    qrels, rows grouped by topic in file order: the inputs of rank_evaluate."""
    grade = {}
    for line in files["qrels"].read_text().splitlines():
        topic, _, docno, rel = line.split()
        grade[topic, docno] = max(grade.get((topic, docno), 0), int(rel))
    rows = [line.split() for line in files[run].read_text().splitlines()]
    topics = list(dict.fromkeys(row[0] for row in rows))
    by_topic = {t: [] for t in topics}
    for topic, _, docno, _, score, _ in rows:
        by_topic[topic].append((max(grade.get((topic, docno), 0), 0), float(score), docno))
    flat = [item for t in topics for item in by_topic[t]]
    return (np.array([g for g, _, _ in flat], dtype=float), np.array([s for _, s, _ in flat]),
            np.array([d for _, _, d in flat]), [len(by_topic[t]) for t in topics], topics)


def test_gdeval_tie_order_is_docno_descending(files, outputs):
    """gdeval's ``runOrder``: equal scores by document id descending. The ql run has ties that
    decide ERR@100: ids descending (``ties="trec"``) reproduce every printed value, ids ascending
    do not, and neither does the tie average."""
    grades, scores, docnos, sizes, topics = _graded_run(files, "ql")
    rows = {row["topic"]: float(row["err@100"]) for row in outputs["gdeval.k100.ql.csv"]}
    want = np.array([rows[t] for t in topics])
    ascending = -np.unique(docnos, return_inverse=True)[1].ravel()  # trec's descending ids of these: ascending
    got = {
        "descending": ft.rank_evaluate(grades, scores, sizes, metrics=["ERR@100"], ties="trec", doc_ids=docnos),
        "ascending": ft.rank_evaluate(grades, scores, sizes, metrics=["ERR@100"], ties="trec", doc_ids=ascending),
        "average": ft.rank_evaluate(grades, scores, sizes, metrics=["ERR@100"]),
    }
    diff = {key: float(np.abs(res.per_query["ERR@100"] - want).max()) for key, res in got.items()}
    assert diff["descending"] <= PRINTED, diff
    assert diff["ascending"] > 10 * PRINTED and diff["average"] > 10 * PRINTED, diff


def test_report_checked_counts():
    """Runs last in this module: the number of values compared and the largest difference."""
    if CHECKED["values"]:
        print(f"\ngdeval conformance: {CHECKED['values']} topic x measure values, "
              f"max |fasttie - gdeval| = {CHECKED['max_diff']:.3g}")
        assert CHECKED["max_diff"] <= PRINTED
