"""The front doors' options as data: each option's choices, in one table.

The doors check their options against these tuples (:func:`fasttie.finalize.values.check_options`),
the command line offers them as its choices and help, and warmup compiles every tie mode: no
module spells a list of choices again. The kernels' codes for the tie modes are
:data:`fasttie._kernels.modes.TIE_CODES`.
"""

__all__ = ["AP_DENOMINATORS", "CHOICES", "EMPTY_POLICIES", "GAINS", "HAMMING_TIES", "LIST_TIES", "TREC_TIES"]

# the tie modes each front door takes, in the order its documentation and the command line list
# them (the demo's columns)
HAMMING_TIES = ("average", "stable", "optimistic", "pessimistic")  # evaluate, search, rescore_evaluate, torch
LIST_TIES = HAMMING_TIES + ("trec", "pyndeval")  # rank_evaluate: also trec_eval's and ndeval's orders
TREC_TIES = ("trec", "pyndeval") + HAMMING_TIES  # trec.evaluate, trec_eval's order first (its default)

# AP@k's denominator: the relevant items retrieved in the top k, R, or min(k, R)
AP_DENOMINATORS = ("retrieved", "total", "min")
GAINS = ("exp2", "linear")  # 2^grade - 1, or the grade
# a query without relevant items: scores 0, is left out of the mean, scores 1, raises; or (Hamming
# rankings) a query that retrieves none within the cutoff is left out too (HashNet's protocol)
EMPTY_POLICIES = ("zero", "skip", "one", "error", "skip_missed")

CHOICES = {"ap_denominator": AP_DENOMINATORS, "gain": GAINS, "empty": EMPTY_POLICIES}
