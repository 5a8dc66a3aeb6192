"""fasttie.metrics.doors: what each front door accepts is one table; every name a door's help
lists is computed there, and the metrics only the other door has are refused with its name."""

import re

import numpy as np
import pytest

import fasttie as ft
from fasttie.metrics.doors import DOORS, HAMMING, LISTS, metric_help


def _examples(door):
    """The help's names with their placeholders filled (k = 3, radius 2, recall level 0.25), aliases and
    lists left out."""
    text = metric_help(door).split(";")[0]
    names = [n.strip() for n in re.split(r",\s*(?![^(]*\))", text) if n.strip()]
    return [n.replace("@k", "@3").replace("radius=r", "radius=2").replace("@r (r in [0, 1])", "@0.25") for n in names]


def _hamming(metrics):
    q = np.array([[0, 1, 1, 0], [1, 1, 0, 0]])
    db = np.array([[0, 1, 1, 1], [1, 0, 0, 0], [0, 1, 1, 0], [1, 1, 1, 1]])
    return ft.evaluate(q, db, [0, 1], [0, 1, 0, 1], metrics=metrics)


def _lists(metrics):  # IPrec and 11pt have no average over tie orders: trec_eval's order
    return ft.rank_evaluate([2, 0, 1, 0, 1, 0], [0.9, 0.7, 0.7, 0.1, 0.4, 0.4], group=[3, 3], metrics=metrics,
                            ties="trec", doc_ids=np.arange(6))


@pytest.mark.parametrize("door, evaluate", [(HAMMING, _hamming), (LISTS, _lists)])
def test_every_name_in_a_doors_help_is_computed_there(door, evaluate):
    names = _examples(door)
    assert len(names) >= 12
    result = evaluate(names)
    assert len(result.mean) == len(names) and all(np.isfinite(v) for v in result.mean.values())


@pytest.mark.parametrize("name", ["WAP@3", "P(radius=2)", "R(radius=0)", "NumRet(radius=5)"])
def test_hamming_only_metrics_are_refused_by_ranked_lists(name):
    assert "WAP" in DOORS[HAMMING]["bases"]
    with pytest.raises(ValueError, match=rf"metric '{re.escape(name)}' needs Hamming ranking .*fasttie.evaluate"):
        _lists([name])


@pytest.mark.parametrize("name, match", [("infAP", "sampled judgment pool"), ("P(rel=2)@5", "per-metric rel="),
                                         ("nDCG(gains={0: 0, 1: 2})@3", "per-metric rel=")])
def test_list_only_metrics_and_options_are_refused_by_hamming_ranking(name, match):
    with pytest.raises(ValueError, match=re.escape(match)):
        _hamming([name])
