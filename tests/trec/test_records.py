"""fasttie.trec.records: Run and Qrels built from rows, dicts and DataFrames hold the rows a plain
Python grouping holds (queries sorted as strings, file order inside a query), round-trip through
to_dict, and refuse duplicates, NaN scores and broken layouts naming them."""

import numpy as np
import pytest

from fasttie import trec
from fasttie.trec.records import Qrels, Run


def _random_rows(seed):
    rng = np.random.default_rng(seed)
    rows = set()
    for _ in range(int(rng.integers(1, 60))):
        rows.add((f"q{int(rng.integers(0, 12))}", f"d{int(rng.integers(0, 30))}"))
    rows = list(rows)
    rng.shuffle(rows)
    scores = rng.integers(-3, 4, len(rows)) / 2  # ties
    grades = rng.integers(-1, 4, len(rows))
    return [q for q, _ in rows], [d for _, d in rows], scores, grades


def _grouped(qid, *columns):
    """{qid: [row tuples in input order]}, the reference grouping."""
    out = {}
    for q, *values in zip(qid, *columns):
        out.setdefault(q, []).append(tuple(values))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_run_groups_rows_as_python_does(seed):
    qid, docno, score, _ = _random_rows(seed)
    run = Run.from_arrays(qid, docno, score, name="tag")
    expected = _grouped(qid, docno, score.tolist())
    assert run.query_ids.tolist() == sorted(expected) and run.n_queries == len(expected) and len(run) == len(qid)
    assert run.sizes.tolist() == [len(expected[q]) for q in sorted(expected)]
    assert np.array_equal(run.offsets, np.concatenate(([0], np.cumsum(run.sizes))))
    for q in expected:
        docs, scores = run.query(q)
        assert list(zip(docs.tolist(), scores.tolist())) == expected[q]
        assert q in run
    assert "q-missing" not in run
    with pytest.raises(KeyError):
        run.query("q-missing")
    as_dict = run.to_dict()
    assert as_dict == {q: dict(rows) for q, rows in expected.items()}
    again = Run.from_dict(as_dict)
    assert again.to_dict() == as_dict and again.query_ids.tolist() == run.query_ids.tolist()
    assert [(q, d.tolist(), s.tolist()) for q, d, s in run.items()] == [
        (q, [r[0] for r in expected[q]], [r[1] for r in expected[q]]) for q in sorted(expected)]


@pytest.mark.parametrize("seed", range(8))
def test_qrels_group_rows_as_python_does(seed):
    qid, docno, _, grades = _random_rows(seed)
    qrels = Qrels.from_arrays(qid, docno, grades)
    expected = _grouped(qid, docno, grades.tolist())
    assert qrels.query_ids.tolist() == sorted(expected)
    for q in expected:
        docs, rel, iteration = qrels.query(q)
        assert list(zip(docs.tolist(), rel.tolist())) == expected[q] and set(iteration.tolist()) == {"0"}
    assert qrels.to_dict() == {q: dict(rows) for q, rows in expected.items()}
    assert Qrels.from_dict(qrels.to_dict()).to_dict() == qrels.to_dict()


def test_frames_give_the_same_records():
    pd = pytest.importorskip("pandas")
    qid, docno, score, grades = _random_rows(3)
    frame = pd.DataFrame({"query_id": qid, "doc_id": docno, "score": score})
    assert Run.from_frame(frame).to_dict() == Run.from_arrays(qid, docno, score).to_dict()
    frame = pd.DataFrame({"query_id": qid, "doc_id": docno, "relevance": grades})
    assert Qrels.from_frame(frame).to_dict() == Qrels.from_arrays(qid, docno, grades).to_dict()


def test_subtopic_judgments_of_one_document():
    qrels = Qrels.from_arrays(["q1", "q1", "q1"], ["d1", "d1", "d2"], [1, 0, 2], iteration=["1", "2", "1"])
    docs, rel, iteration = qrels.query("q1")
    assert docs.tolist() == ["d1", "d1", "d2"] and rel.tolist() == [1, 0, 2] and iteration.tolist() == ["1", "2", "1"]
    with pytest.raises(ValueError, match="duplicate document 'd1' for query 'q1' and iteration '1'"):
        Qrels.from_arrays(["q1", "q1"], ["d1", "d1"], [1, 0], iteration=["1", "1"])


def test_refusals_name_what_is_wrong():
    with pytest.raises(ValueError, match="duplicate document 'd1' for query 'q2'"):
        Run.from_arrays(["q2", "q1", "q2"], ["d1", "d1", "d1"], [1.0, 2.0, 3.0])
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="q1"):
            Run.from_arrays(["q1", "q1"], ["d1", "d2"], [1.0, bad])
    with pytest.raises(ValueError):
        Run.from_arrays(["q1"], ["d1", "d2"], [1.0, 2.0])
    with pytest.raises(TypeError, match="rel must be integers"):
        Qrels(np.array(["q1"]), np.array([0, 1]), np.array(["d1"]), np.array([0.5]), np.array(["0"]))
    with pytest.raises(ValueError):  # offsets that do not cover the rows
        Run(np.array(["q1"]), np.array([0, 1]), np.array(["d1", "d2"]), np.array([1.0, 2.0]))


def test_dataclass_checks_layout():
    run = trec.Run(["a", "b"], [0, 1, 3], ["x", "y", "z"], [1.0, 2.0, 3.0])
    assert run.query("b")[0].tolist() == ["y", "z"]
    with pytest.raises(ValueError, match="sorted"):
        trec.Run(["b", "a"], [0, 1, 3], ["x", "y", "z"], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="offsets"):
        trec.Run(["a", "b"], [0, 2, 2], ["x", "y", "z"], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="shape"):
        trec.Run(["a"], [0, 1], ["x"], [1.0, 2.0])
    with pytest.raises(TypeError, match="integers"):
        trec.Qrels(["a"], [0, 1], ["x"], [0.5], ["0"])


def test_from_arrays_checks():
    with pytest.raises(ValueError, match=r"duplicate document 'd' for query 'q'"):
        trec.Run.from_arrays(["q", "p", "q"], ["d", "d", "d"], [1, 2, 3])
    with pytest.raises(ValueError, match=r"finite"):
        trec.Run.from_arrays(["q"], ["d"], [np.nan])
    with pytest.raises(ValueError, match=r"one length"):
        trec.Run.from_arrays(["q"], ["d", "e"], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"duplicate document 'd' for query 'q' and iteration '3'"):
        trec.Qrels.from_arrays(["q", "q"], ["d", "d"], [1, 0], iteration=["3", "3"])
    qrels = trec.Qrels.from_arrays(["q", "q"], ["d", "d"], [1, 0], iteration=["3", "4"])
    assert qrels.to_dict() == {"q": {"d": 1}}
    with pytest.raises(TypeError, match=r"rel must be integers"):
        trec.Qrels.from_arrays(["q"], ["d"], [0.5])
    run = trec.Run.from_arrays(np.array([3, 1, 3]), np.array([7, 8, 9]), [0.1, 0.2, 0.3], name="x")
    assert run.query_ids.tolist() == ["1", "3"] and run.docno.tolist() == ["8", "7", "9"]
