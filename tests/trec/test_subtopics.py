"""fasttie.trec.subtopics: diversity qrels (the subtopic in the iteration column) joined with a
run give, per query, the values the brute-force oracle (tests/oracle_diversity.py) gives on the
documents gathered here by plain dict loops: retrieved ones with their scores, judged but not
retrieved ones at -inf, each with the set of subtopics it is relevant to."""

import math

import numpy as np
import pytest
from oracle_diversity import query_values

import fasttie as ft
from fasttie.trec.records import Qrels, Run

METRICS = [("alpha_nDCG@5", "alpha_nDCG", 5), ("ERR_IA@5", "ERR_IA", 5), ("StRecall@5", "StRecall", 5),
           ("P_IA@3", "P_IA", 3), ("AP_IA", "AP_IA", None)]


def _random_case(seed, relevance_level):
    rng = np.random.default_rng(seed)
    qrels_rows, run_rows = [], []
    for q in range(3):
        docs = [f"d{i}" for i in range(int(rng.integers(2, 8)))]
        for d in docs:
            for s in rng.choice([1, 2, 10], int(rng.integers(0, 3)), replace=False):
                qrels_rows.append((f"q{q}", str(s), d, int(rng.integers(0, 3))))
        for d in rng.choice(docs, int(rng.integers(1, len(docs) + 1)), replace=False):
            run_rows.append((f"q{q}", str(d), float(rng.integers(0, 3))))
    return qrels_rows, run_rows


def _oracle_docs(qrels_rows, run_rows, qid, relevance_level):
    subtopics, scores = {}, {}
    for q, s, d, rel in qrels_rows:
        if q == qid:
            subtopics.setdefault(d, set())
            if rel >= relevance_level:
                subtopics[d].add(int(s))
    for q, d, score in run_rows:
        if q == qid:
            scores[d] = score
    return [(d, frozenset(subtopics.get(d, ())), scores.get(d, -math.inf)) for d in sorted(set(subtopics) | set(scores))]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("relevance_level", [1, 2])
def test_values_equal_the_oracle(seed, relevance_level):
    qrels_rows, run_rows = _random_case(seed, relevance_level)
    qrels = Qrels.from_arrays(*zip(*[(q, d, rel) for q, s, d, rel in qrels_rows]),
                              iteration=[s for _, s, _, _ in qrels_rows]) if qrels_rows else None
    if qrels is None:
        pytest.skip("no judgments drawn")
    run = Run.from_arrays(*zip(*run_rows))
    result = ft.trec.evaluate(qrels, run, [name for name, _, _ in METRICS], ties="average",
                              relevance_level=relevance_level)
    for i, qid in enumerate(result.query_ids):
        docs = _oracle_docs(qrels_rows, run_rows, str(qid), relevance_level)
        expected = query_values(docs, [(n, b, k) for n, b, k in METRICS])
        for name, _, _ in METRICS:
            assert result.per_query[name][i] == pytest.approx(float(expected[name]), rel=1e-12, abs=1e-12), (qid, name)
