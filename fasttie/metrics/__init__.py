"""Metric names (ir_measures style): the one grammar every evaluation and the CLI parse.

Ranking metrics. Canonical names: ``AP``, ``AP@k``, ``nDCG``, ``nDCG@k``, ``DCG``, ``DCG@k``,
``P@k``, ``R@k``, ``F1@k`` (``F1(beta=2)@k``: F with recall weighted beta), ``RR``, ``RR@k``,
``Success@k``, ``Hits@k`` (relevant items in the top k, averaged: ranx's hits), ``Rprec``, ``MAP@R`` (AP cut
at each query's R, over R: pytorch-metric-learning's mean average precision at R; also ``mAP@R``, ``AP@R``,
``map_at_r``), ``ACG@k``, ``WAP``, ``WAP@k``, ``GMAP``, ``SetAP``, ``Bpref``,
``GMBpref``, ``IPrec@r`` (any recall level r in [0, 1]) and ``11pt`` (fixed orders only),
``Judged@k``, ``RBP(p=0.8)@k`` and its residual ``RBPResid(p=0.8)@k``, ``infAP`` (ranked lists;
trec_eval's inferred AP over a sampled pool), the counts ``NumQ``, ``NumRet``, ``NumRel``,
``NumRelRet``, ``NumNonRelJudgedRet``, ``ERR@k`` (expected reciprocal rank with gdeval's stop
probability (2**g - 1) / 16, grades 0..4; every grade > 0 counts: no ``rel=``), and
``P(radius=r)``, ``R(radius=r)``, ``F1(radius=r)``, ``AP(radius=r)`` (``mAP(radius=2)``: AP of the
ranking cut after the items within the radius, over ``ap_denominator``), ``NumRet(radius=r)``
(items within the radius). No ``@k`` (or ``@ALL``) means the whole list. Parameters go in
parentheses before the cutoff, as in ir_measures: ``RBP(p=0.9)@100``; the binary metrics take
their own relevance level (``P(rel=2)@5``) and the graded ones their own gain
(``nDCG(dcg='exp-log2')@10``, ``nDCG(gains={0: 0, 1: 1, 2: 3})``), else the call's
``relevance_level`` and ``gain``; any metric of a ranked list may rank the judged documents only
(``P(judged_only=True)@10``, trec_eval's ``-J`` for that metric alone). Aliases such as
``mAP@k``, ``map@k``, ``ndcg@k``, ``precision@k``, ``recall@k``, ``mrr`` and trec_eval's measure
names (``map``, ``P_10``, ``ndcg_cut_10``, ``map_cut.5,10``, ``recall_100``, ``recip_rank``,
``Rprec``, ``gm_map``, ``set_P``, ``set_recall``, ``set_F``, ``set_map``, ``num_ret``, ``rbp``
(p = 0.9), ``rbp_resid``, ``rbp.p=0.95``, ``infAP``, ``num_nonrel_judged_ret``, ...) and ranx's
names with ranx's formulas (``hits@k``, ``hit_rate@k``, ``r-precision``, ``ndcg_burges@k``: the
exponential gain, ``map@k``, ``mrr@k``, ``f1@k``, ``bpref``) normalise to these, and a list form ``P@[1,10,100]`` expands.

Most metrics are averaged over queries; :func:`aggregate` knows the exceptions: the counts are
summed and GMAP and GMBpref are geometric means (trec_eval's and ir_measures' conventions).

trec_eval's own measures of a joined run, for :func:`fasttie.trec.evaluate` only:
``Rprec_mult(x=0.2)``, ``utility``, ``binG``, ``G``, ``ndcg_rel``, ``Rndcg`` and ``unj@k``
(:mod:`fasttie.metrics.trec_eval_only`).

Diversity measures (ndeval's, :mod:`fasttie.diversity`): ``alpha_nDCG@k``, ``alpha_DCG@k``,
``ERR_IA@k``, ``nERR_IA@k``, ``NRBP``, ``nNRBP``, ``P_IA@k``, ``AP_IA``, ``StRecall@k``, with
ir_measures' parameters (``alpha_nDCG(alpha=0.3)@20``) and ndeval's column names
(``alpha-nDCG@20``, ``MAP-IA``). An unknown name of either family gets the closest valid one
("did you mean").

One concept per module:

======================  ====================================================================
``syntax``              what both families share: ``key=value`` parameters, cutoffs, the
                        closest spelling
``ranking_names``       :class:`Metric`, :func:`parse_metrics`, aliases, parameters, suggestions
``trec_eval_names``     trec_eval's names with cutoffs or parameters (``P_10``, ``rbp.p=0.95``)
``trec_eval_measures``  trec_eval's measure table: ``-m`` nicknames, print names and order
``trec_eval_only``      :class:`TrecOnlyMetric`: trec_eval's own measures (``binG``, ``unj@k``, ...),
                        :func:`fasttie.trec.evaluate`'s alone
``conventions``         counts, geometric means, empty-query and tie conventions; :func:`aggregate`
``diversity_names``     :class:`DiversityMetric`, :func:`parse_diversity_metric`
``families``            lists that mix both families (``trec.evaluate``, ``fasttie trec``)
======================  ====================================================================
"""

from .conventions import (
    COUNTS, DEFAULT_PERSISTENCE, FIXED_ORDER_ONLY, GEOMETRIC, GEOMETRIC_FLOOR, GRADED, KEPT_WHEN_EMPTY,
    NOT_BOUNDED_BY_GRADE_ORDER, PERSISTENT, RATIO_BASES, STANDARD_RECALL_LEVELS, UNDEFINED_WHEN_EMPTY, aggregate,
    base_of, grade_order_bounds, over_retrieved,
)
from .diversity_names import (
    DEFAULT_ALPHA, DEFAULT_BETA, DiversityMetric, check_alpha, diversity_metric_name, diversity_settings,
    is_diversity_metric, parse_diversity_metric, parse_diversity_metrics, suggest_diversity,
)
from .families import parse_metric, split_metric_names
from .ranking_names import KNOWN, Metric, metric_names, parse_metrics, passes, suggest
from .syntax import MAX_CUTOFF
from .trec_eval_names import TREC_EVAL_PERSISTENCE, from_trec_eval

__all__ = [
    "COUNTS", "DEFAULT_ALPHA", "DEFAULT_BETA", "DEFAULT_PERSISTENCE", "FIXED_ORDER_ONLY", "GEOMETRIC",
    "GEOMETRIC_FLOOR", "GRADED", "KEPT_WHEN_EMPTY", "KNOWN", "MAX_CUTOFF", "NOT_BOUNDED_BY_GRADE_ORDER", "PERSISTENT",
    "RATIO_BASES", "STANDARD_RECALL_LEVELS",
    "TREC_EVAL_PERSISTENCE", "UNDEFINED_WHEN_EMPTY", "DiversityMetric", "Metric", "aggregate", "base_of",
    "check_alpha", "diversity_metric_name", "diversity_settings", "from_trec_eval", "is_diversity_metric",
    "grade_order_bounds", "metric_names", "over_retrieved", "parse_diversity_metric", "parse_diversity_metrics",
    "parse_metric", "parse_metrics", "passes",
    "split_metric_names", "suggest", "suggest_diversity",
]
