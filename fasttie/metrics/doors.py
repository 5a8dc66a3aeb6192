"""What each front door accepts, written as data (as ir_measures declares what each of its
providers supports), so that the checks, the error messages and the command line's help read
one table.

Two doors share the metric grammar: Hamming ranking (:func:`fasttie.evaluate`, :mod:`fasttie.dask`,
the GPU) has distances and judges every database item, graded by shared labels; ranked lists
(:func:`fasttie.rank_evaluate`, :mod:`fasttie.trec`) have scores, judgment pools and per-metric
relevance options, and no distances.
"""

from __future__ import annotations

from ..errors import InputError

__all__ = ["HAMMING", "LISTS", "DOORS", "check_door", "metric_help"]

HAMMING, LISTS = "hamming", "lists"

# door -> the metric bases only it computes, whether it takes a radius and per-metric options,
# and the names its help lists
DOORS = {
    HAMMING: {
        "bases": ("WAP",),  # weighted AP over the shared-label grades of multi-hot labels
        "radius": True,  # P, R, F1, AP and NumRet within a Hamming distance: P(radius=r), AP(radius=r), ...
        "per_metric_options": False,  # rel=, gains=, judged_only: the call's gain= and relevance= only
        "help": "AP, AP@k, nDCG@k, DCG@k, P@k, R@k, F1@k, RR, Rprec, MAP@R, ACG@k, WAP@k, P(radius=r), R(radius=r), "
                "F1(radius=r), AP(radius=r), NumRet(radius=r); aliases mAP@k, mAP(radius=r), ndcg@k, mrr; "
                "lists P@[1,10,100]",
    },
    LISTS: {
        "bases": ("infAP",),  # inferred AP over a sampled judgment pool
        "radius": False,
        "per_metric_options": True,
        "help": "AP, AP@k, nDCG@k, DCG@k, P@k, R@k, F1@k, RR, Rprec, MAP@R, Success@k, GMAP, SetAP, Bpref, infAP, "
                "IPrec@r (r in [0, 1]), 11pt, Judged@k, RBP(p=0.8)@k, ERR@k, NumQ, NumRet, NumRel, NumRelRet; "
                "parameters P(rel=2)@5, nDCG(gains={0:0,1:1,2:3})@10; trec_eval's names (map, ndcg_cut_10, "
                "P.5,10); lists P@[5,10]",
    },
}


def check_door(parsed, door):
    """Raise :class:`~fasttie.errors.InputError` for the first metric that ``door`` cannot compute.

    Parameters
    ----------
    parsed : list of Metric
        From :func:`fasttie.metrics.parse_metrics`.
    door : {"hamming", "lists"}

    Raises
    ------
    InputError
        Naming the metric, why and the door that computes it.
    """
    other = LISTS if door == HAMMING else HAMMING
    for metric in parsed:
        if metric.radius is not None and not DOORS[door]["radius"]:
            raise InputError(f"metric {metric.name!r} needs Hamming ranking (a distance to be within); "
                             "use fasttie.evaluate", argument="metrics")
        if metric.base in DOORS[other]["bases"]:
            if door == HAMMING:  # infAP
                raise InputError("infAP estimates AP from a sampled judgment pool, which only ranked lists have "
                                 "(fasttie.rank_evaluate with pooled=, fasttie.trec.evaluate with qrels {relevance} "
                                 "-1); Hamming ranking judges every item: use AP", argument="relevance")
            raise InputError(f"metric {metric.name!r} needs Hamming ranking (the grades of multi-hot labels); "
                             "use fasttie.evaluate", argument="metrics")
        if not DOORS[door]["per_metric_options"] and (
            metric.rel is not None or metric.gain is not None or metric.judged_only
        ):
            raise InputError(f"metric {metric.name!r}: per-metric rel=, gains and {{judged_only}} are for ranked lists "
                             "(fasttie.rank_evaluate, fasttie.trec.evaluate); Hamming ranking takes gain= and "
                             "{relevance}= for the whole call", argument=("judged_only", "relevance"))


def metric_help(door) -> str:
    """The metric names ``door`` takes, for help texts (the full grammar: :mod:`fasttie.metrics`)."""
    return DOORS[door]["help"]
