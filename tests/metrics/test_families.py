"""fasttie.metrics.families: each name of a mixed list goes to its family's grammar (ndeval's
measures and anything spelt ``alpha...`` to the diversity one, the rest to the ranking one), the
output order is the order asked, each canonical name once, and a list is keyed in the caller's
own spelling item by item."""

import numpy as np
import pytest

from fasttie.metrics import parse_diversity_metric, parse_metrics
from fasttie.metrics.diversity_names import DiversityMetric
from fasttie.metrics.families import asked_names, parse_metric, split_metric_names

RANKING = ["AP", "nDCG@10", "P@[5,10]", "map", "ndcg_cut.5,10", "RBP(p=0.5)", "recip_rank", "R@3", "P@5"]
DIVERSITY = ["alpha_nDCG@20", "ERR-IA@10", "NRBP", "alpha-nDCG@[5,10]", "strec@10", "MAP-IA"]


def _canonical(name):
    try:
        return [m.name for m in parse_diversity_metric(name)]
    except ValueError:
        return [m.name for m in parse_metrics([name])]


@pytest.mark.parametrize("seed", range(15))
def test_mixed_lists_split_by_family(seed):
    rng = np.random.default_rng(seed)
    names = [str(n) for n in rng.choice(RANKING + DIVERSITY, int(rng.integers(1, 8)))]
    ranking, diversity, trec_only, order = split_metric_names(names)
    assert ranking == [n for n in names if n in RANKING]
    expected_diversity = {m.name: m for n in names if n in DIVERSITY for m in parse_diversity_metric(n)}
    assert diversity == expected_diversity and all(isinstance(m, DiversityMetric) for m in diversity.values())
    expected_order = []
    for n in names:  # each family's own grammar, in the order asked, each once
        for canonical in (_canonical(n) if n in DIVERSITY else [m.name for m in parse_metrics([n])]):
            if canonical not in expected_order:
                expected_order.append(canonical)
    assert order == expected_order


def test_parse_metric_by_family():
    assert [m.name for m in parse_metric("map_cut.5,10")] == ["AP@5", "AP@10"]
    assert [m.name for m in parse_metric("alpha-nDCG@20")] == ["alpha_nDCG@20"]
    with pytest.raises(ValueError, match="alpha"):  # a misspelt alpha-nDCG: a diversity suggestion
        parse_metric("alpha_nDGC@20")
    with pytest.raises(ValueError):  # diversity names refused where only ranking metrics are read
        parse_metric("alpha_nDCG@20", diversity=False)


@pytest.mark.parametrize("names, expected", [
    (["P@[5,10]"], {"P@5": "P@5", "P@10": "P@10"}),
    (["ndcg_cut.5,10", "nDCG@5"], {"ndcg_cut_5": "nDCG@5", "ndcg_cut_10": "nDCG@10", "nDCG@5": "nDCG@5"}),
    (["mAP@1000", "AP@1000", "mAP@1000"], {"mAP@1000": "AP@1000", "AP@1000": "AP@1000"}),
    (["alpha-nDCG@[5,10]"], {"alpha-nDCG@5": "alpha_nDCG@5", "alpha-nDCG@10": "alpha_nDCG@10"}),
    ("AP", {"AP": "AP"}),
])
def test_asked_names_keep_the_callers_spelling(names, expected):
    asked = asked_names(names)
    assert asked == expected and list(asked) == list(expected)


def test_refusals():
    with pytest.raises(ValueError, match="metrics is empty"):
        split_metric_names([])
    with pytest.raises(TypeError, match="metric names must be strings, got 3"):
        split_metric_names(["AP", 3])
    with pytest.raises(TypeError, match="metric names must be strings"):
        asked_names(["AP", None])
