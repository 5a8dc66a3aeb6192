"""The join of dicts (fasttie.trec.dict_join.align_dicts), which trec.evaluate takes for
{qid: {docno: score}} runs and {qid: {docno: grade}} qrels: the same rows, grades and flags as
the general join (trec.align of Run / Qrels records), and so bitwise the same values in every
tie mode it serves; pytrec_eval's values at BEIR's shape; the inputs it leaves to the general
join (which then refuses or converts them as before); and its score-matching kernel against
numpy."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fasttie import trec
from fasttie._kernels.score_match import match_scores
from fasttie.trec.dict_join import align_dicts

METRICS = ["AP", "AP@5", "nDCG", "nDCG@10", "P@3", "R@20", "RR", "Rprec", "bpref", "infAP", "ERR@10", "GMAP",
           "NumRet", "NumRelRet", "Judged@10", "RBP(p=0.8)", "IPrec@0.3", "SetF"]


def tied_dicts(seed):
    """Random dicts with many ties: scores from a few values (+0.0 and -0.0 among them), ids of
    different lengths and scripts (string order is not length order), several judged documents
    in one tie, grades -1..3, judged queries without a run and run queries without judgments."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    values = [0.0, -0.0, 0.5, 1.0, 1.25, -2.0, 3.0]
    for q in range(int(rng.integers(1, 8))):
        n = int(rng.integers(1, 80))
        ids = list(dict.fromkeys(f"{rng.choice(['d', 'D', 'é', '文'])}{int(rng.integers(0, 10 ** rng.integers(1, 4)))}"
                                 for _ in range(n)))
        scores = [values[int(i)] for i in rng.integers(0, int(rng.integers(1, len(values) + 1)), len(ids))]
        if rng.random() < 0.9:
            run[f"q{q}"] = dict(zip(ids, scores))
        if rng.random() < 0.85:
            pool = ids + [f"x{i}" for i in range(4)]
            judged = [pool[int(i)] for i in rng.choice(len(pool), int(rng.integers(1, min(len(pool), 25) + 1)),
                                                       replace=False)]
            qrels[f"q{q}"] = {d: int(rng.integers(-1, 4)) for d in judged}
    return qrels, run


def general(qrels, run):
    """The same inputs as records: trec.evaluate joins them the general way."""
    return trec.Qrels.from_dict(qrels), trec.Run.from_dict(run)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_join_is_the_general_one(seed):
    qrels, run = tied_dicts(seed)
    if not any(qrels.get(q) for q in run):
        return
    for judged_only in (False, True):
        ours = align_dicts(qrels, run, judged_only=judged_only)
        theirs = trec.align(*general(qrels, run), judged_only=judged_only)
        assert ours is not None
        for name in ("query_ids", "sizes", "score", "grade", "judged", "pooled"):
            np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name), err_msg=name)
        for mine, other in zip(ours.unretrieved, theirs.unretrieved, strict=True):
            assert sorted(mine.tolist()) == sorted(other.tolist())
        assert (ours.judged_not_in_run, ours.in_run_not_judged) == (theirs.judged_not_in_run, theirs.in_run_not_judged)
        # trec_eval's order: inside every tie that holds a judged document, the keys sort as the ids
        offsets = theirs.offsets
        for q in range(len(theirs.sizes)):
            rows = np.arange(offsets[q], offsets[q + 1])
            for value in np.unique(theirs.score[rows]):
                tie = rows[theirs.score[rows] == value]
                if len(tie) > 1 and theirs.pooled[tie].any():
                    assert (np.argsort(ours.tie_keys[tie]) == np.argsort(theirs.docno[tie])).all()
                    assert (ours.tie_keys[tie] > 0).all() and len(set(ours.tie_keys[tie].tolist())) == len(tie)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_values_are_bitwise_the_general_joins(seed):
    qrels, run = tied_dicts(seed)
    if not any(qrels.get(q) for q in run):
        return
    for ties in ("trec", "pyndeval", "average"):
        metrics = [m for m in METRICS if not (ties == "average" and m.startswith("IPrec"))]  # no tie average
        for judged_only in (False, True):
            ours = trec.evaluate(qrels, run, metrics, ties=ties, judged_only=judged_only)
            theirs = trec.evaluate(*general(qrels, run), metrics, ties=ties, judged_only=judged_only)
            assert ours.query_ids == theirs.query_ids and ours.settings == theirs.settings
            for name in metrics:
                np.testing.assert_array_equal(ours.per_query[name], theirs.per_query[name], err_msg=(ties, name))


def test_pytrec_eval_values_at_beirs_shape():
    """Queries of 400 scored documents in no order, scores to two decimals (ties that hold judged
    documents, some two of them), 10-30 judgments: pytrec_eval's values, key for key."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    import fasttie.compat.pytrec_eval as compat

    rng = np.random.default_rng(5)
    qrels, run = {}, {}
    for q in range(40):
        docs = [f"doc{i}" for i in rng.choice(10**5, 400, replace=False)]
        run[f"q{q}"] = dict(zip(docs, np.round(rng.normal(size=400), 2).tolist()))
        judged = [docs[int(i)] for i in rng.choice(400, int(rng.integers(10, 31)), replace=False)] + [f"gone{q}"]
        qrels[f"q{q}"] = {d: int(rng.integers(-1, 3)) for d in judged}
    assert align_dicts(qrels, run) is not None
    measures = {"map_cut.1,3,5,10,100,1000", "ndcg_cut.1,3,5,10,100,1000", "recall.1,3,5,10,100,1000",
                "P.1,3,5,10,100,1000", "bpref", "recip_rank", "infAP"}
    for judged_only in (False, True):
        ours = compat.RelevanceEvaluator(qrels, measures, 1, judged_only).evaluate(run)
        theirs = pytrec_eval.RelevanceEvaluator(qrels, measures, 1, judged_only).evaluate(run)
        assert set(ours) == set(theirs)
        for qid, values in theirs.items():
            assert set(ours[qid]) == set(values)
            for key, value in values.items():
                assert ours[qid][key] == pytest.approx(value, rel=1e-12, abs=1e-12), (qid, key)


class Judgments(dict):
    pass


@pytest.mark.parametrize("qrels, run", [
    ({"q": {"5": 1, "6": 0}}, {"q": {5: 1.0, "6": 1.0, 7: 2.0}}),   # ids made str: 5 is "5"
    ({"q": {5: 2}}, {"q": {"5": 1.0, "9": 1.0}}),
    ({"q": {"a": 1.0, "b": 2.0}}, {"q": {"a": 1.0, "b": 0.5}}),     # whole float grades
    (Judgments(q={"a": 1}), {"q": {"a": 1.0}}),                     # a mapping that is not a dict
    ({"q": {"a": 1}}, {"q": {"a": 1.0}, "u": {5: 1.0}}),            # an id of an unjudged query
])
def test_other_inputs_go_the_general_way(qrels, run):
    assert align_dicts(qrels, run) is None
    for ties in ("trec", "average"):
        ours = trec.evaluate(qrels, run, ["AP", "P@1", "NumRet"], ties=ties)
        theirs = trec.evaluate(trec.Qrels.from_dict(qrels), trec.Run.from_dict(run), ["AP", "P@1", "NumRet"], ties=ties)
        assert ours.mean == theirs.mean and ours.mean["NumRet"] > 0


@pytest.mark.parametrize("run, error, match", [
    ({"q": {"a": float("nan")}}, ValueError, "is nan; scores must be finite"),
    ({"q": {"a": 1.0}, "u": {"b": float("inf")}}, ValueError, "is inf"),  # a query without judgments too
    ({"q": {"a": "1.5"}}, TypeError, "score must be numbers"),
    ({"q": {"a": None}}, TypeError, "score must be numbers"),
    ({"q": {"a": True}}, TypeError, "score must be numbers"),
    ({"q": ["a"]}, TypeError, "must be a"),
])
def test_bad_runs_are_refused_as_before(run, error, match):
    qrels = {"q": {"a": 1}}
    assert align_dicts(qrels, run) is None
    with pytest.raises(error, match=match):
        trec.evaluate(qrels, run, ["AP"])


def test_judged_query_with_an_empty_ranking_is_the_general_joins():
    qrels, run = {"q": {"a": 1}, "p": {"b": 1}}, {"q": {"a": 1.0}, "p": {}}
    assert align_dicts(qrels, run) is None
    assert trec.evaluate(qrels, run, ["AP"]).per_query["AP"].tolist() == [0.0, 1.0]


def test_judged_only_must_be_a_bool():
    with pytest.raises(TypeError, match="judged_only"):
        align_dicts({"q": {"a": 1}}, {"q": {"a": 1.0}}, judged_only="yes")


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_match_scores_is_numpys(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 50, int(rng.integers(1, 6)))
    score = rng.integers(-3, 4, int(sizes.sum())) / 2.0
    score[rng.random(len(score)) < 0.2] = -0.0
    n_wanted = rng.integers(0, 40, len(sizes))  # repeats among them, and values no row has
    wanted = rng.integers(-4, 5, int(n_wanted.sum())) / 2.0
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    wanted_offsets = np.concatenate(([0], np.cumsum(n_wanted))).astype(np.int64)
    match = np.empty(len(score), dtype=np.int64)
    bits = lambda values: (values + 0.0).view(np.uint64)  # noqa: E731
    match_scores(bits(score), offsets, bits(wanted), wanted_offsets, match)
    for q in range(len(sizes)):
        own = wanted[wanted_offsets[q] : wanted_offsets[q + 1]]
        for r in range(offsets[q], offsets[q + 1]):
            equal = np.flatnonzero(own == score[r])
            assert match[r] == (wanted_offsets[q] + equal[0] if equal.size else -1)
