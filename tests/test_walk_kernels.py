"""WAP and RBP of a fixed order run in kernels of their own: the ``..._walks`` variant of the
stable pass, of the bounded stable pass and of the ranked lists' fixed orders (and of the sharded
finalize, tests/test_dask.py), made from the same source as the kernel without them.

The facade picks the variant by the metrics asked. Asking for WAP or RBP must change no other
metric's bits, and must be what picks the walks kernel; tests/test_signatures.py checks that the
other kernels do not compile the walks at all.
"""

import numpy as np
import pytest

import fasttie as ft
import fasttie.hamming_engine as engine
import fasttie.ranking as ranking
from test_stable_top import _inputs

WHOLE = ["AP", "AP@9", "nDCG@20", "P@10", "RR", "Rprec", "ERR@10", "Bpref", "IPrec@0.3"]
TOP = ["AP@9", "nDCG@20", "P@10", "RR@10", "ERR@10", "Success@3"]
WHOLE_WALKS = ["WAP", "WAP@10", "RBP", "RBP(p=0.5)@20", "RBPResid@5"]
TOP_WALKS = ["WAP@10", "RBP(p=0.5)@20", "RBPResid@5"]  # cutoffs only: the bounded pass still
RANKED = ["AP", "nDCG@10", "P@5", "RR", "Rprec", "Bpref", "IPrec@0.3", "Judged@10"]
RANKED_WALKS = ["RBP", "RBP(p=0.5)@20", "RBPResid@5", "RBP(rel=2)"]


def _spy(monkeypatch, module, names):
    """Replace module.<name> for each name with a wrapper that records the name when called."""
    called = []
    for name in names:
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name: called.append(_name) or _real(*a))
    return called


@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
@pytest.mark.parametrize("others, walks, kernel", [(WHOLE, WHOLE_WALKS, "finalize_stable"),
                                                   (TOP, TOP_WALKS, "finalize_stable_top")])
def test_hamming_stable_walks_change_no_other_metric(kind, others, walks, kernel, monkeypatch):
    q, db, relevance, _ = _inputs(kind, 9, 400, 24, np.random.default_rng(len(kind)))
    called = _spy(monkeypatch, engine, [kernel, kernel + "_walks"])
    plain = ft.evaluate(q, db, metrics=others, ties="stable", empty="zero", n_threads=2, **relevance)
    assert set(called) == {kernel}
    called.clear()
    walked = ft.evaluate(q, db, metrics=others + walks, ties="stable", empty="zero", n_threads=2, **relevance)
    assert set(called) == {kernel + "_walks"}
    for name in others:
        assert walked.per_query[name].tobytes() == plain.per_query[name].tobytes(), name


@pytest.mark.parametrize("ties", ["stable", "trec"])
def test_ranked_list_walks_change_no_other_metric(ties, monkeypatch):
    rng = np.random.default_rng(5)
    y_true = rng.integers(0, 4, 300).astype(float)
    y_pred = rng.integers(0, 30, 300) / 3.0  # many equal scores
    sizes = [40, 100, 160]
    docs = np.arange(300)[::-1] if ties == "trec" else None
    called = _spy(monkeypatch, ranking, ["finalize_fixed_rankings", "finalize_fixed_rankings_walks"])
    plain = ft.rank_evaluate(y_true, y_pred, sizes, metrics=RANKED, ties=ties, doc_ids=docs)
    assert set(called) == {"finalize_fixed_rankings"}
    called.clear()
    walked = ft.rank_evaluate(y_true, y_pred, sizes, metrics=RANKED + RANKED_WALKS, ties=ties, doc_ids=docs)
    # RBP(rel=2) has a relevance level of its own: a second pass, with the walks
    assert called == ["finalize_fixed_rankings_walks"] * 2
    for name in RANKED:
        assert walked.per_query[name].tobytes() == plain.per_query[name].tobytes(), name
