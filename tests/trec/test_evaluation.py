"""The forms ``fasttie.trec.evaluate`` takes qrels and runs in, and the per-query DataFrame out.

One evaluation given as TREC files, :class:`~fasttie.trec.Run` / :class:`~fasttie.trec.Qrels`,
pytrec_eval dicts ``{qid: {docno: value}}``, pandas DataFrames (ir_measures / ranx column names
and TREC / PyTerrier ones) and ranx ``Qrels`` / ``Run`` objects gives bitwise the same values;
the dict form agrees with pytrec_eval (trec_eval 9's code, convention: trec_eval's tie order,
linear gain, AP over R). Bad content raises naming the argument and the form it came in.

``fasttie.trec.evaluate`` itself against pytrec_eval (trec_eval 9 in a Python extension; package
pytrec-eval-terrier) with ``ties="trec"``, trec_eval's own order: score descending, then document
id descending; trec_eval prints 4 decimals, the extension returns doubles, so agreement is
checked to 1e-12.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from fasttie import trec
from trec.test_join import PYTREC, pytrec_values, random_case
from trec.test_readers import write

try:
    import pandas as pd
except ImportError:  # the forms other than DataFrames are checked without it
    pd = None
needs_pandas = pytest.mark.skipif(pd is None, reason="pandas is not installed")

METRICS = ["AP", "AP@10", "P@5", "R@10", "nDCG", "nDCG@10", "RR", "Rprec", "Bpref", "NumRet", "NumRelRet", "Success@5"]


def frames(qrels, run, columns=("query_id", "doc_id", "relevance", "score")):
    query, doc, rel, score = columns
    qrels_frame = pd.DataFrame([(q, d, r) for q, docs in qrels.items() for d, r in docs.items()],
                               columns=[query, doc, rel])
    run_frame = pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                             columns=[query, doc, score])
    return qrels_frame, run_frame


def write_files(tmp_path, qrels, run):
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    run_path.write_text("".join(f"{q} Q0 {d} 0 {s!r} tag\n" for q, docs in run.items() for d, s in docs.items()))
    return qrels_path, run_path


def assert_identical(got, expected, form):
    assert got.query_ids == expected.query_ids, form
    assert list(got.per_query) == list(expected.per_query), form
    for name in expected.per_query:
        np.testing.assert_array_equal(got.per_query[name], expected.per_query[name], err_msg=f"{form}: {name}")
    assert got.mean == expected.mean, form
    assert (got.n_queries, got.n_empty) == (expected.n_queries, expected.n_empty), form


@needs_pandas
@pytest.mark.parametrize("ties", ["trec", "average", "stable"])
def test_every_form_gives_the_same_values(tmp_path, ties):
    qrels, run = random_case(21)
    qrels_path, run_path = write_files(tmp_path, qrels, run)
    expected = trec.evaluate(qrels_path, run_path, METRICS, ties=ties)
    forms = {
        "str paths": (str(qrels_path), str(run_path)),
        "Qrels / Run": (trec.read_qrels(qrels_path), trec.read_run(run_path)),
        "dicts": (qrels, run),
        "read-only mappings": (types.MappingProxyType(qrels), types.MappingProxyType(run)),
        "ir_measures DataFrames": frames(qrels, run),
        "TREC DataFrames": frames(qrels, run, ("qid", "docno", "rel", "score")),
        "PyTerrier DataFrames": frames(qrels, run, ("qid", "docno", "label", "score")),
        "ranx-style DataFrames": frames(qrels, run, ("q_id", "doc_id", "relevance", "score")),
        "mixed": (frames(qrels, run)[0], run),
    }
    for form, (q, r) in forms.items():
        assert_identical(trec.evaluate(q, r, METRICS, ties=ties), expected, form)


def test_ranx_objects():
    ranx = pytest.importorskip("ranx")
    qrels, run = random_case(22)
    expected = trec.evaluate(qrels, run, METRICS)
    got = trec.evaluate(ranx.Qrels(qrels), ranx.Run(run, name="bm25"), METRICS)
    assert_identical(got, expected, "ranx")
    assert trec.readers.as_run(ranx.Run(run, name="bm25")).name == "bm25"
    average = trec.evaluate(ranx.Qrels(qrels), ranx.Run(run), METRICS, ties="average")
    assert_identical(average, trec.evaluate(qrels, run, METRICS, ties="average"), "ranx, average")
    with pytest.raises(TypeError, match=r"^run got a ranx Qrels; pass the qrels as qrels"):
        trec.evaluate(qrels, ranx.Qrels(qrels), ["AP"])
    with pytest.raises(TypeError, match=r"^qrels got a ranx Run"):
        trec.evaluate(ranx.Run(run), run, ["AP"])


def test_dict_form_matches_pytrec_eval():
    qrels, run = random_case(23)
    reference = pytrec_values(qrels, run, METRICS)
    result = trec.evaluate(qrels, run, METRICS)
    assert result.query_ids == sorted(reference)
    for name in METRICS:
        expected = np.array([reference[q][PYTREC[name]] for q in result.query_ids])
        np.testing.assert_allclose(result.per_query[name], expected, rtol=0, atol=1e-12, err_msg=name)


@needs_pandas
def test_frame_column_kinds():
    """Integer ids, pandas' nullable and categorical dtypes, extra columns, whole-float grades."""
    qrels = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": [10, 11, 10], "relevance": pd.array([1, 0, 2], dtype="Int64"),
                          "iteration": ["Q0"] * 3})
    run = pd.DataFrame({"query_id": pd.Categorical(["1", "1", "2"]), "doc_id": pd.array(["10", "12", "10"], dtype="string"),
                        "score": pd.array([2.0, 1.0, 0.5], dtype="Float64"), "rank": [1, 2, 1], "iteration": "Q0"})
    expected = trec.evaluate({"1": {"10": 1, "11": 0}, "2": {"10": 2}}, {"1": {"10": 2.0, "12": 1.0}, "2": {"10": 0.5}},
                             ["AP", "NumRet"])
    assert_identical(trec.evaluate(qrels, run, ["AP", "NumRet"]), expected, "kinds")
    floats = qrels.assign(relevance=[1.0, 0.0, 2.0])
    assert trec.Qrels.from_frame(floats).rel.tolist() == [1, 0, 2]
    assert trec.Qrels.from_frame(qrels).iteration.tolist() == ["Q0"] * 3


@needs_pandas
def test_frame_with_subtopics():
    frame = pd.DataFrame({"query_id": ["q"] * 3, "iteration": [1, 2, 1], "doc_id": ["a", "a", "b"], "relevance": [1, 1, 0]})
    qrels = trec.Qrels.from_frame(frame)
    assert qrels.iteration.tolist() == ["1", "2", "1"]
    assert qrels.to_dict() == {"q": {"a": 1, "b": 0}}


@needs_pandas
def test_to_frame_of_a_trec_result():
    qrels, run = random_case(24, n_queries=5)
    result = trec.evaluate(qrels, run, ["AP", "P@5", "RR"])
    frame = result.to_frame()
    assert frame.index.tolist() == result.query_ids == sorted(qrels)
    assert frame.index.name == "query"
    assert frame.columns.tolist() == ["AP", "P@5", "RR"]
    for name in frame.columns:
        np.testing.assert_array_equal(frame[name].to_numpy(), result.per_query[name])
    means = result.to_frame(per_query=False)
    assert means.loc["mean", "AP"] == result.mean["AP"]


# --------------------------------------------------------------------------------------------
# errors


@needs_pandas
def test_frame_errors():
    qrels, run = frames({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 0.5}})
    with pytest.raises(ValueError, match=r"^run \(DataFrame\): the DataFrame has no 'score' column \(it has "
                                         r"\['query_id', 'doc_id', 'points'\]\); name the columns query_id, doc_id, score "
                                         r"\(ir_measures, ranx\) or qid, docno, score \(TREC, PyTerrier\)"):
        trec.evaluate(qrels, run.rename(columns={"score": "points"}), ["AP"])
    with pytest.raises(ValueError, match=r"^qrels \(DataFrame\): the DataFrame has no 'relevance / rel / label' column"):
        trec.evaluate(qrels.drop(columns="relevance"), run, ["AP"])
    with pytest.raises(ValueError, match=r"'query_id / qid / q_id'.*\['query_id'\] is the index: call .reset_index\(\)"):
        trec.evaluate(qrels, run.set_index("query_id"), ["AP"])
    with pytest.raises(ValueError, match=r"columns \['doc_id', 'docno'\], which all name the document id"):
        trec.evaluate(qrels, run.assign(docno=run.doc_id), ["AP"])
    with pytest.raises(ValueError, match=r"^run \(DataFrame\): score of row 1 \(qid 'q', docno 'b'\) is nan; "
                                         r"scores must be finite"):
        trec.evaluate(qrels, run.assign(score=[1.0, np.nan]), ["AP"])
    with pytest.raises(ValueError, match=r"^run \(DataFrame\): score of row 0 .* is inf"):
        trec.evaluate(qrels, run.assign(score=[np.inf, 1.0]), ["AP"])
    with pytest.raises(ValueError, match=r"^run \(DataFrame\): score of row 1 .* is nan"):
        trec.evaluate(qrels, run.assign(score=pd.array([1.0, None], dtype="Float64")), ["AP"])
    with pytest.raises(ValueError, match=r"^run \(DataFrame\): column 'doc_id' of the DataFrame has a missing value \(row 1\)"):
        trec.evaluate(qrels, run.assign(doc_id=["a", None]), ["AP"])
    with pytest.raises(TypeError, match=r"^run \(DataFrame\): column 'score' of the DataFrame must be numeric, got dtype"):
        trec.evaluate(qrels, run.assign(score=["1.0", "0.5"]), ["AP"])
    with pytest.raises(TypeError, match=r"^qrels \(DataFrame\): rel must be integers, got dtype float64 with non-integer"):
        trec.evaluate(qrels.assign(relevance=[0.5]), run, ["AP"])
    with pytest.raises(ValueError, match=r"^qrels \(DataFrame\): column 'relevance' of the DataFrame has a missing value"):
        trec.evaluate(qrels.assign(relevance=[np.nan]), run, ["AP"])
    with pytest.raises(TypeError, match=r"^qrels \(DataFrame\): column 'relevance' of the DataFrame must hold integer grades"):
        trec.evaluate(qrels.assign(relevance=["1"]), run, ["AP"])
    with pytest.raises(ValueError, match=r"^run \(DataFrame\): row 2: duplicate document 'a' for query 'q'"):
        trec.evaluate(qrels, pd.concat([run, run.iloc[:1]]), ["AP"])


def test_dict_errors():
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1.0}}
    with pytest.raises(ValueError, match=r"^run \(dict\): score of row 0 \(qid 'q', docno 'a'\) is nan"):
        trec.evaluate(qrels, {"q": {"a": float("nan")}}, ["AP"])
    with pytest.raises(TypeError, match=r"^run \(dict\): run\['q'\] must be a \{docno: score\} dict, got list"):
        trec.evaluate(qrels, {"q": ["a"]}, ["AP"])
    with pytest.raises(TypeError, match=r"^run \(dict\): score must be numbers, got dtype"):
        trec.evaluate(qrels, {"q": {"a": "high"}}, ["AP"])
    with pytest.raises(TypeError, match=r"^run \(dict\): score must be numbers, got dtype object"):
        trec.evaluate(qrels, {"q": {"a": None}}, ["AP"])
    with pytest.raises(TypeError, match=r"^qrels \(dict\): rel must be integers, got dtype float64 with non-integer"):
        trec.evaluate({"q": {"a": 1.5}}, run, ["AP"])
    with pytest.raises(TypeError, match=r"^run got a fasttie Qrels"):
        trec.evaluate(qrels, trec.Qrels.from_dict(qrels), ["AP"])
    with pytest.raises(TypeError, match=r"run must be a path, a fasttie.trec.Run, a \{qid: \{docno: score\}\} dict, a "
                                        r"pandas DataFrame, a ranx Run or ir_measures ScoredDoc rows, got int"):
        trec.evaluate(qrels, 3, ["AP"])
    with pytest.raises(TypeError, match=r"run is an iterable of tuple; rows must be namedtuples with fields query_id, "
                                        r"doc_id, score \(ir_measures.ScoredDoc"):
        trec.evaluate(qrels, [("q", "a", 1.0)], ["AP"])
    assert trec.evaluate({"q": {"a": 1.0}}, run, ["AP"]).mean == {"AP": 1.0}  # whole-float grades are fine


def test_optional_packages_are_not_imported():
    code = ("import sys, fasttie; from fasttie import trec; "
            "trec.evaluate({'q': {'a': 1}}, {'q': {'a': 1.0}}, ['AP']); "
            "print(sorted({'pandas', 'ranx'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_run_from_dict_groups_by_query_without_a_row_column():
    """Run.from_dict sorts the query ids, not one id per row; the same rows as from_arrays, and
    its errors name the row's query and document."""
    run = {"q2": {"a": 1.0, "b": 2.0}, "q10": {"c": 0.5}, 7: {"z": 3}}
    rows = [(str(q), d, s) for q, docs in run.items() for d, s in docs.items()]
    expected = trec.Run.from_arrays(*zip(*rows))
    got = trec.Run.from_dict(run)
    for field in ("query_ids", "offsets", "docno", "score"):
        np.testing.assert_array_equal(getattr(got, field), getattr(expected, field))
    with pytest.raises(ValueError, match=r"score of row 2 \(qid 'q10', docno 'c'\) is nan"):
        trec.Run.from_dict({"q2": {"a": 1.0, "b": 2.0}, "q10": {"c": float("nan")}})
    with pytest.raises(ValueError, match="duplicate document 'a' for query '1'"):
        trec.Run.from_dict({1: {"a": 1.0}, "1": {"a": 2.0}})  # one query once made str
    assert len(trec.Run.from_dict({})) == 0


# --------------------------------------------------------------------------------------------
# against pytrec_eval


# fasttie canonical name -> trec_eval measure
TREC_NAMES = {
    "AP": "map", "AP@10": "map_cut_10", "P@5": "P_5", "R@10": "recall_10",
    "nDCG": "ndcg", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank", "Rprec": "Rprec",
}


def random_trec_case(rng, n_queries=25):
    """Runs with many tied scores, unjudged documents, relevant documents never retrieved,
    negative grades, judged queries absent from the run and run queries without judgments."""
    qrels, run = {}, {}
    for _ in range(n_queries):
        qid = f"{rng.integers(0, 400)}"
        pool = [f"d{x}" for x in rng.integers(0, 10 ** rng.integers(1, 4), 60)]
        judged = {str(d): int(rng.integers(-1, 4)) for d in rng.choice(pool, rng.integers(1, 30))}
        retrieved = {str(d): float(rng.integers(0, 5)) / 4 for d in rng.choice(pool, rng.integers(1, 45))}
        if rng.random() < 0.85:
            qrels[qid] = judged
        if rng.random() < 0.85:
            run[qid] = retrieved
    return qrels, run


_PYTREC_SCRIPT = """
import json, sys
import pytrec_eval
qrels, run, measures = json.load(sys.stdin)
json.dump(pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run), sys.stdout)
"""


def pytrec_reference(qrels, run, names):
    """pytrec_eval's values, computed in a fresh process with a time limit: pytrec_eval 0.5.11
    can hang forever in ``evaluate`` depending on an evaluator created earlier in the same
    process (seen with measures {"ndcg", "recall_10"}); one evaluator per process avoids it."""
    pytest.importorskip("pytrec_eval")
    payload = json.dumps([qrels, run, sorted({TREC_NAMES[n] for n in names})])
    done = subprocess.run(
        [sys.executable, "-c", _PYTREC_SCRIPT], input=payload, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("seed", range(12))
def test_evaluate_matches_pytrec_eval(seed):
    pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(seed)
    qrels, run = random_trec_case(rng)
    names = list(TREC_NAMES)
    reference = pytrec_reference(qrels, run, names)
    result = trec.evaluate(qrels, run, names)
    assert result.query_ids == sorted(reference)
    assert result.n_queries == len(reference)
    for name in names:
        expected = np.array([reference[q][TREC_NAMES[name]] for q in result.query_ids])
        np.testing.assert_allclose(result.per_query[name], expected, rtol=0, atol=1e-12, err_msg=name)
        assert result.mean[name] == pytest.approx(expected.mean(), abs=1e-12)
    assert result.settings["ties"] == "trec" and result.settings["complete"] is False


def test_evaluate_files_and_complete(tmp_path):
    pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(99)
    qrels, run = random_trec_case(rng, n_queries=40)
    qrels_path = write(tmp_path, "q.txt", "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    order = rng.permutation([(q, d, s) for q, docs in run.items() for d, s in docs.items()].__len__())
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    run_path = write(tmp_path, "r.txt", "".join(f"{rows[i][0]} Q0 {rows[i][1]} 0 {rows[i][2]!r} t\n" for i in order))
    names = list(TREC_NAMES)
    reference = pytrec_reference(qrels, run, names)
    from_files = trec.evaluate(qrels_path, run_path, names)
    from_objects = trec.evaluate(trec.read_qrels(qrels_path), trec.read_run(run_path), names)
    for name in names:
        expected = np.array([reference[q][TREC_NAMES[name]] for q in from_files.query_ids])
        np.testing.assert_allclose(from_files.per_query[name], expected, rtol=0, atol=1e-12, err_msg=name)
        np.testing.assert_array_equal(from_objects.per_query[name], from_files.per_query[name])
    # trec_eval -c: judged queries missing from the run are in the mean with every metric 0
    complete = trec.evaluate(qrels_path, run_path, names, complete=True)
    assert complete.query_ids == sorted(qrels)
    missing = [i for i, q in enumerate(complete.query_ids) if q not in run]
    assert missing, "the case should have judged queries without a ranking"
    kept = [complete.query_ids.index(q) for q in from_files.query_ids]
    for name in names:
        assert np.all(complete.per_query[name][missing] == 0)
        np.testing.assert_array_equal(complete.per_query[name][kept], from_files.per_query[name])
        assert complete.mean[name] == pytest.approx(from_files.per_query[name].sum() / len(qrels), abs=1e-12)


def test_complete_counts_the_queries_a_qrels_mapping_names_without_judgments():
    """complete=True: every key of a qrels dict (or ranx Qrels) is a query of the mean, one without
    judgments scored as an empty ranking whatever the run holds for it (issue 52, item 3)."""
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {}, "a_longer_query_id": {}, "q3": {"d1": 2}}
    run = {"q1": {"d1": 1.0, "d2": 1.0}, "q2": {"d1": 1.0, "d5": 0.5}, "q9": {"d1": 1.0}}
    names = ["AP", "nDCG@2", "P@1", "Judged@2", "NumRet", "NumQ", "NumRel", "alpha_nDCG@2"]
    for ties in ("trec", "average"):
        complete = trec.evaluate(qrels, run, names, complete=True, ties=ties)
        assert complete.query_ids == ["a_longer_query_id", "q1", "q2", "q3"]
        others = [0, 2, 3]  # a_longer_query_id and q2 without judgments, q3 not retrieved: empty rankings
        for name in names:
            expected = {"NumQ": [1.0, 1.0, 1.0], "NumRel": [0.0, 0.0, 1.0]}.get(name, [0.0, 0.0, 0.0])
            np.testing.assert_array_equal(complete.per_query[name][others], expected, err_msg=name)
        assert complete.mean["AP"] == complete.per_query["AP"][1] / 4 and complete.mean["NumQ"] == 4.0
        assert complete.settings["in_run_not_judged"] == 2  # q2 and q9: no judgment
    assert trec.evaluate(qrels, run, ["AP"]).query_ids == ["q1"]  # without -c, queries judged and retrieved
    ranx = pytest.importorskip("ranx")
    from_ranx = trec.evaluate(ranx.Qrels(qrels), ranx.Run(run), ["AP"], complete=True)
    assert from_ranx.query_ids == ["a_longer_query_id", "q1", "q2", "q3"]


def test_evaluate_tie_modes_and_errors():
    qrels = {"q1": {"d1": 1, "d3": 1}, "q2": {"x": 0}}
    run = {"q1": {"d1": 0.5, "d2": 0.5, "d4": 0.1}, "q2": {"x": 1.0}, "q3": {"y": 1.0}}
    trec_order = trec.evaluate(qrels, run, ["RR", "P@1", "R@3"])
    assert trec_order.query_ids == ["q1", "q2"]  # q3 has no judgments: ignored
    assert trec_order.per_query["RR"].tolist() == [0.5, 0.0]  # d2 > d1: d2 first
    assert trec_order.n_empty == 1
    average = trec.evaluate(qrels, run, ["RR"], ties="average")
    assert average.per_query["RR"].tolist() == [0.75, 0.0]
    skip = trec.evaluate(qrels, run, ["RR"], empty="skip")
    assert skip.mean["RR"] == 0.5 and np.isnan(skip.per_query["RR"][1])
    # unsorted scores inside a query take the general tie-key path
    shuffled = {"q1": {"d4": 0.1, "d1": 0.5, "d2": 0.5}}
    assert trec.evaluate(qrels, shuffled, ["RR"]).per_query["RR"].tolist() == [0.5]
    with pytest.raises(ValueError, match="no query of the run has judgments"):
        trec.evaluate({"a": {"d": 1}}, {"b": {"d": 1.0}}, ["AP"])
    with pytest.raises(TypeError, match="run must be"):
        trec.evaluate(qrels, 42, ["AP"])
    with pytest.raises(TypeError, match="complete must be"):
        trec.evaluate(qrels, run, ["AP"], complete="yes")


def test_docstring_examples_run():
    import doctest

    failures, _ = doctest.testmod(trec, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert failures == 0


def test_evaluate_takes_trec_eval_names():
    """The docstring promises trec_eval's names: one grammar serves the library and the CLI."""
    import fasttie as ft

    data = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
    qrels, run = os.path.join(data, "qrels.txt"), os.path.join(data, "run.txt")
    names = ["map", "P_5", "ndcg_cut.5,10", "recip_rank", "Rprec", "recall_10", "map_cut_3"]
    by_trec = ft.trec.evaluate(qrels, run, names)
    by_fasttie = ft.trec.evaluate(qrels, run, ["AP", "P@5", "nDCG@5", "nDCG@10", "RR", "Rprec", "R@10", "AP@3"])
    assert list(by_trec.mean.values()) == list(by_fasttie.mean.values())
    assert list(by_trec.mean) == ["map", "P_5", "ndcg_cut_5", "ndcg_cut_10", "recip_rank", "Rprec", "recall_10",
                                  "map_cut_3"]  # keyed as asked (trec_eval's own spelling of the list)
    assert ft.trec.evaluate(qrels, run, ["utility", "unj_5"]).mean == pytest.approx({"utility": -1.0, "unj_5": 0.2})
    with pytest.raises(ValueError, match="unknown metric 'relstring'"):  # text: fasttie.trec.relstring
        ft.trec.evaluate(qrels, run, ["relstring"])


# trec_eval -l 0: a hand case (grades 2, 1, 0 and -1, unjudged retrieved documents, judged ones the
# run misses, a query whose judgments are all 0) and trec_eval 10.0's values for it, printed with
# %.17g (its test-files commit f425365, print format widened):
#   trec_eval -q -l 0 -m all_trec qrels run
# trec_eval's order: q1 d9 (unjudged), d2 (0), d4 (-1: pooled, unjudged), d1 (2), d7 (unjudged),
# d8 (unjudged), d3 (1); d5 (0) and d6 (1) not retrieved; q2 x1 (unjudged), e2 (0), e3 (-1).
LEVEL_0_QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1, "d4": -1, "d5": 0, "d6": 1}, "q2": {"e1": 0, "e2": 0, "e3": -1}}
LEVEL_0_RUN = {"q1": {"d9": 5.0, "d2": 4.0, "d4": 3.0, "d1": 3.0, "d7": 2.0, "d3": 1.0, "d8": 1.0},
               "q2": {"e2": 1.0, "x1": 1.0, "e3": 0.5}}
LEVEL_0_TREC_EVAL = {  # fasttie metric: (q1, q2), trec_eval's measure in the comment
    "NumRel": (5, 2), "NumRelRet": (3, 1), "NumNonRelJudgedRet": (0, 0), "NumRet": (7, 3),  # num_rel, ...
    "AP": (0.2857142857142857, 0.25),  # map
    "Rprec": (0.40000000000000002, 0.5),
    "Bpref": (0.59999999999999998, 0.5),  # bpref: no judged document is below the level
    "RR": (0.5, 0.5),  # recip_rank
    "infAP": (0.36428428573857097, 0.25),
    "11pt": (0.30519480519480519, 0.36363636363636365),  # 11pt_avg
    "IPrec@0.0": (0.5, 0.5),  # iprec_at_recall_0.00
    "P@5": (0.40000000000000002, 0.20000000000000001),
    "R@5": (0.40000000000000002, 0.5),  # recall_5
    "AP@5": (0.20000000000000001, 0.25),  # map_cut_5
    "P(relative=True)@5": (0.40000000000000002, 0.5),  # relative_P_5
    "Success@1": (0, 0),  # success_1
    "P": (0.42857142857142855, 0.33333333333333331),  # set_P
    "R": (0.59999999999999998, 0.5),  # set_recall
    "F1": (0.5, 0.40000000000000002),  # set_F
    "SetAP": (0.25714285714285712, 0.16666666666666666),  # set_map
    "nDCG": (0.38157561603461027, 0),  # ndcg: the gains are the grades, whatever -l is
    "nDCG@5": (0.27511096828801057, 0),  # ndcg_cut_5
    "RBP(p=0.9)": (0.099472049999999992, 0),  # rbp
}
LEVEL_0_MEANS = {"GMAP": 0.26726124191242434, "GMBpref": 0.54772255750516619}  # gm_map, gm_bpref


def test_level_0_makes_every_judged_document_relevant():
    """relevance_level=0 is trec_eval's -l 0: every judged document is relevant, grade 0 too, and
    no document without a judgment (-1 in the qrels, or no line), though fasttie grades both 0."""
    names = [*LEVEL_0_TREC_EVAL, *LEVEL_0_MEANS]
    for complete in (False, True):  # the dict join and the general one
        result = trec.evaluate(LEVEL_0_QRELS, LEVEL_0_RUN, names, relevance_level=0, complete=complete)
        assert result.query_ids == ["q1", "q2"]
        for name, expected in LEVEL_0_TREC_EVAL.items():
            np.testing.assert_allclose(result.per_query[name], expected, rtol=1e-12, atol=0, err_msg=name)
        for name, expected in LEVEL_0_MEANS.items():
            assert result.mean[name] == pytest.approx(expected, rel=1e-12, abs=0), name
        assert result.n_empty == 1  # q2: no positive grade for nDCG, but judged documents for the others
        assert result.settings["relevance_level"] == 0
    at_one = trec.evaluate(LEVEL_0_QRELS, LEVEL_0_RUN, ["NumRel", "AP"])
    assert at_one.per_query["NumRel"].tolist() == [3, 0] and at_one.n_empty == 1


def test_level_0_orders_ties_by_relevance():
    """At level 0 a judged grade-0 document outranks an unjudged one in the optimistic order (and
    the other way in the pessimistic one): both grade 0, only one relevant. trec_eval's own order
    puts ``z`` (unjudged) before ``a`` (judged 0): P@1 0, as ``trec_eval -l 0 -m P.1`` prints
    (0.0000); by the definition, every order averages 1/2, and the extremes are 0 and 1."""
    qrels, run = {"q": {"a": 0, "b": 1}}, {"q": {"a": 1.0, "z": 1.0, "b": 0.5}}
    value = {ties: trec.evaluate(qrels, run, ["P@1"], ties=ties, relevance_level=0).mean["P@1"]
             for ties in ("trec", "optimistic", "pessimistic", "average")}
    assert value == {"trec": 0.0, "optimistic": 1.0, "pessimistic": 0.0, "average": 0.5}
    spread = trec.evaluate(qrels, run, ["P@1", "nDCG@1"], ties="average", relevance_level=0, spread=True)
    assert (spread.mean_tie_min["P@1"], spread.mean_tie_max["P@1"]) == (0.0, 1.0)
    assert spread.mean["nDCG@1"] == 0.0 and spread.tie_std["nDCG@1"].tolist() == [0.0]  # grade 0: no gain


def test_negative_level_is_refused():
    """trec_eval's -l -1 reads its codes for unjudged documents (-1, -2) as grades in P and map but
    not in num_rel or bpref (map 0.4375 against num_rel's judged documents on its qrels.rel_level):
    not a relevance fasttie can state, so refused."""
    with pytest.raises(ValueError, match=r"relevance_level must be >= 0 \(0: every judged document is relevant"):
        trec.evaluate(LEVEL_0_QRELS, LEVEL_0_RUN, ["AP"], relevance_level=-1)
