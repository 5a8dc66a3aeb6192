"""Tie modes and relevance kinds: the codes the kernels take and the names the facades accept,
in one table (each door's choices of tie modes: :mod:`fasttie.options`).

A tie mode orders the items inside each tie: ``AVERAGE`` averages every order (the exact
expectation), ``OPTIMISTIC`` / ``PESSIMISTIC`` split each tie by grade, higher / lower first, and
within a grade by judgment, judged / unjudged first, ``FIXED`` takes one given order (``"stable"``: input or database order; ``"trec"``: score, then
document id descending). A relevance kind says how a kernel finds an item's grade: class ids,
multi-hot labels, or listed (per query) relevant items, whose grades move in after a pass that
counts distances only.
"""

AVERAGE, OPTIMISTIC, PESSIMISTIC, FIXED = 0, 1, 2, 3
CLASS, MULTIHOT, LISTED = 0, 1, 2

TIE_CODES = {"average": AVERAGE, "optimistic": OPTIMISTIC, "pessimistic": PESSIMISTIC, "stable": FIXED,
             "trec": FIXED, "pyndeval": FIXED}

KIND_CODES = {"class": CLASS, "multihot": MULTIHOT, "listed": LISTED}
