"""What each ranking metric is beyond its name: the conventions the engines and reports read.

Which metrics are undefined for a query without relevant items, which are counts (summed over
queries), geometric means, graded, persistent (RBP), AP-like ratios, or defined for fixed orders
only; and :func:`aggregate`, a metric's value over all queries under these conventions
(trec_eval's and ir_measures').
"""

from __future__ import annotations

import re

import numpy as np

# metrics whose value is 0/0 for a query without relevant items (see the `empty` policy)
UNDEFINED_WHEN_EMPTY = (
    "AP", "MAP@R", "WAP", "GMAP", "nDCG", "R", "RR", "Rprec", "SetAP", "Bpref", "GMBpref", "infAP", "IPrec", "11pt",
    "R(radius)", "AP(radius)",
)
# AP-like metrics: at a cutoff with ap_denominator="retrieved" the finalizer must compute the
# expected ratio E[numerator / hits@k] (hypergeometric sums)
RATIO_BASES = ("AP", "WAP", "GMAP")
# counts: summed over queries, and their value stands whatever the empty policy (except skip)
COUNTS = ("NumQ", "NumRet", "NumRel", "NumRelRet", "NumNonRelJudgedRet")
# metrics of the judgments, not of the relevant items: their value stands too (except under skip)
KEPT_WHEN_EMPTY = COUNTS + ("Judged", "RBPResid")
GEOMETRIC_FLOOR = 1e-5  # trec_eval's MIN_GEO_MEAN: GMAP takes log(max(AP, 1e-5))
GEOMETRIC = ("GMAP", "GMBpref")  # geometric means of AP and Bpref (trec_eval's gm_map, gm_bpref)
# no exact average over tie orders: interpolated precision is a maximum over ranks, trec_eval's G
# discounts each item by the gain sum of every prefix (fasttie.trec.evaluate's alone), and its
# relstring is the text of one order (fasttie trec's alone)
FIXED_ORDER_ONLY = ("IPrec", "11pt", "G", "relstring")
# trec_eval's recall levels: iprec_at_recall's default ones, and those 11pt averages
STANDARD_RECALL_LEVELS = tuple(i / 10 for i in range(11))
# graded metrics take every grade > 0; the others count items with grade >= the relevance level
GRADED = ("DCG", "nDCG", "ACG", "WAP", "RBP", "ERR")
# rank-biased precision and its residual take the persistence p (Moffat & Zobel 2008)
PERSISTENT = ("RBP", "RBPResid")
DEFAULT_PERSISTENCE = 0.8  # ir_measures' default; trec_eval's rbp takes 0.9


# "optimistic" / "pessimistic" are reproducible orders: each tie by grade, higher / lower first
# (TRM's maximum and minimum), and within a grade the judged rows, then the pooled ones, first /
# last. For most metrics they are also the highest / lowest value over every order inside ties
# (Judged@k too: every judged or relevant row comes first); not for these: the residual is
# lowest in the optimistic order, NumNonRelJudgedRet@k highest with the judged non-relevant rows
# before the relevant ones, and infAP rises when a pooled unjudged item stands above a relevant one
NOT_BOUNDED_BY_GRADE_ORDER = ("infAP", "RBPResid", "NumNonRelJudgedRet")


def over_retrieved(metric, ap_denominator: str) -> bool:
    """Whether ``metric`` is AP@k, WAP@k or GMAP@k divided by the relevant items retrieved in its
    top k (``ap_denominator="retrieved"``): a count the tie order moves with the numerator.

    Parameters
    ----------
    metric : Metric
    ap_denominator : {"retrieved", "total", "min"}

    Returns
    -------
    bool
    """
    return metric.base in RATIO_BASES and metric.k is not None and ap_denominator == "retrieved"


def grade_order_bounds(metric, ap_denominator: str = "retrieved") -> bool:
    """Whether ``ties="optimistic"`` / ``"pessimistic"`` give the highest / lowest value of
    ``metric`` over every order inside ties.

    They do for every metric that rises when a higher grade moves up a rank (a pairwise
    exchange never lowers it): P, R, F1, Success, NumRelRet, RR, AP and WAP over R or min(k, R),
    AP and WAP of the whole list, GMAP, Rprec, Bpref, ACG, DCG, nDCG, RBP, ERR, interpolated
    precision, Judged@k (within a grade the modes put the judged rows first / last, and an
    unjudged row has grade 0); and for those no tie order changes (the counts, SetAP, the radius
    metrics).
    They do not for AP@k and WAP@k (GMAP@k) with ``ap_denominator="retrieved"``: the hits in
    the top k divide the sum, so a relevant item moved into the top k can lower it; for the
    metrics of :data:`NOT_BOUNDED_BY_GRADE_ORDER`; nor for graded metrics whose gain table of
    their own (``gains={...}``) does not rise with the grade.

    Parameters
    ----------
    metric : Metric
    ap_denominator : {"retrieved", "total", "min"}
        The call's option.

    Returns
    -------
    bool

    Examples
    --------
    >>> from fasttie.metrics import parse_metrics
    >>> [grade_order_bounds(m) for m in parse_metrics(["AP", "AP@10", "nDCG@10", "RBPResid@10"])]
    [True, False, True, False]
    """
    if metric.base in NOT_BOUNDED_BY_GRADE_ORDER:
        return False
    if over_retrieved(metric, ap_denominator):
        return False
    table = metric.gain_table()
    if isinstance(table, dict):
        gains = [gain for _, gain in sorted(table.items())]
        return all(a <= b for a, b in zip(gains, gains[1:]))
    return True


def base_of(name: str) -> str:
    """The base of a canonical metric name: ``"GMAP@10"`` -> ``"GMAP"``, ``"P(radius=2)"`` -> ``"P"``."""
    return re.split(r"[@(]", name, maxsplit=1)[0]


def aggregate(name, values) -> float:
    """A metric's value over all queries: the mean of the kept (non-NaN) per-query values; the
    sum for the counts (NumQ, NumRet, NumRel, NumRelRet, NumNonRelJudgedRet); for GMAP and GMBpref the geometric
    mean of max(value, 1e-5), as trec_eval's gm_map and gm_bpref. NaN when no query is kept.

    Parameters
    ----------
    name : str or Metric
        Canonical name (``"GMAP@10"``) or Metric.
    values : array_like of float
        Per-query values, NaN for queries left out.

    Returns
    -------
    float

    Examples
    --------
    >>> aggregate("NumRet@10", [10.0, 7.0]), aggregate("GMAP", [0.1, 0.4]), aggregate("AP", [0.5, float("nan")])
    (17.0, 0.2, 0.5)
    """
    base = base_of(name) if isinstance(name, str) else name.base  # a name, or a Metric
    values = np.asarray(values, dtype=np.float64)
    kept = values[~np.isnan(values)]
    if not len(kept):
        return float("nan")
    if base in COUNTS:
        return float(np.sum(kept))
    if base in GEOMETRIC:
        return float(np.exp(np.mean(np.log(np.maximum(kept, GEOMETRIC_FLOOR)))))
    return float(np.mean(kept))
