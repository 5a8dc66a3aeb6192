"""trec_eval's order inside ties (score descending, then document id descending): the per-tie
ranks of document ids that fasttie.trec.evaluate hands to rank_evaluate."""

import numpy as np
from hypothesis import given, settings, strategies as st

from fasttie.trec import align
from fasttie.trec.evaluation import _trec_tie_keys
from fasttie.trec.records import Qrels, Run


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([3, 40, 200]), st.booleans())
def test_keys_order_every_tie_by_document_id(seed, tie_size, in_rank_order):
    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(1, 4))
    qid, docno, score = [], [], []
    for q in range(n_queries):
        n = int(rng.integers(1, 300))
        ids = {f"{chr(97 + int(rng.integers(0, 3)))}{'é' * int(rng.integers(0, 2))}{int(rng.integers(0, 10**6))}"
               for _ in range(n)}  # ids of different lengths, some not ASCII
        scores = -np.sort(-rng.integers(0, max(1, n // tie_size) + 1, len(ids)).astype(float))  # in rank order
        ids = sorted(ids, key=lambda _: rng.random())
        rows = np.arange(len(ids)) if in_rank_order else rng.permutation(len(ids))  # a dict's order, as BEIR writes
        qid += [f"q{q}"] * len(ids)
        docno += [ids[i] for i in rows]
        score += scores[rows].tolist()
    run = Run.from_arrays(qid, docno, score)
    aligned = align(Qrels.from_arrays(qid, docno, np.ones(len(qid), dtype=int)), run)
    keys = _trec_tie_keys(aligned)
    offsets = aligned.offsets
    for q in range(len(aligned.sizes)):
        rows = slice(offsets[q], offsets[q + 1])
        for value in np.unique(aligned.score[rows]):
            tie = np.flatnonzero(aligned.score[rows] == value)
            if len(tie) < 2:
                continue
            ids, tie_keys = aligned.docno[rows][tie], keys[rows][tie]
            assert (np.argsort(tie_keys) == np.argsort(ids)).all()  # same order, ascending ids
            assert sorted(tie_keys.tolist()) == list(range(1, len(tie) + 1))
