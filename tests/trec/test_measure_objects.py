"""fasttie.trec.measure_objects: ir_measures ``Measure`` objects read as the names ir_measures
gives them, so ``trec.evaluate`` with a measure equals it with the measure's name; a fasttie
measure naming other ties than the call's is refused."""

import numpy as np
import pytest

from fasttie.trec.measure_objects import is_measure, metric_names_of

ir_measures = pytest.importorskip("ir_measures")


def test_names_of_measures():
    measures = [ir_measures.nDCG @ 10, "AP", ir_measures.AP(rel=2), ir_measures.RBP(p=0.5), ir_measures.P @ 5]
    assert metric_names_of(measures, "trec") == ["nDCG@10", "AP", "AP(rel=2)", "RBP(p=0.5)", "P@5"]
    assert metric_names_of(ir_measures.R @ 3, "trec") == ["R@3"]
    assert metric_names_of("AP", "trec") == "AP" and metric_names_of(42, "trec") == 42
    assert is_measure(ir_measures.nDCG @ 10) and not is_measure("nDCG@10") and not is_measure(None)


def test_fasttie_measures_carry_their_ties():
    import fasttie.ir_measures as fm

    assert is_measure(fm.RR(ties="average"))
    assert metric_names_of([fm.RR(ties="average"), fm.AP @ 5], "average") == ["RR", "AP@5"]
    with pytest.raises(ValueError, match="asks for ties='average' but evaluate\\(\\) was called with ties='trec'"):
        metric_names_of([fm.RR(ties="average")], "trec")


@pytest.mark.parametrize("seed", range(3))
def test_evaluate_with_measures_equals_names(seed):
    import fasttie as ft

    rng = np.random.default_rng(seed)
    qrels = {f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in range(6)} for q in range(4)}
    run = {q: {f"d{d}": float(rng.integers(0, 3)) for d in range(6)} for q in qrels}
    measures = [ir_measures.nDCG @ 3, ir_measures.AP(rel=2), ir_measures.P @ 2]
    by_measure = ft.trec.evaluate(qrels, run, measures)
    by_name = ft.trec.evaluate(qrels, run, ["nDCG@3", "AP(rel=2)", "P@2"])
    assert list(by_measure.mean) == list(by_name.mean) == ["nDCG@3", "AP(rel=2)", "P@2"]
    for name in by_name.mean:
        assert np.array_equal(by_measure.per_query[name], by_name.per_query[name])
    # and ir_measures itself agrees on a tie-free run
    tie_free = {q: {d: s + 1e-3 * i for i, (d, s) in enumerate(docs.items())} for q, docs in run.items()}
    ours = ft.trec.evaluate(qrels, tie_free, measures)
    theirs = ir_measures.calc_aggregate(measures, qrels, tie_free)
    for measure in measures:
        assert ours.mean[str(measure)] == pytest.approx(theirs[measure], abs=1e-12)
