"""Ranked lists (``y_true``, ``y_score``, query groups): the ranked-list door, as
:mod:`fasttie.hamming` is the Hamming one.

===============  =============================================================================
``facade``       :func:`fasttie.rank_evaluate`: rows grouped by query, ranked by score, the
                 finalizer's values, tie-aware or in a fixed order
``lambdarank``   :func:`fasttie.lambdarank`: LambdaRank gradients and hessians of the same rows
``options``      :class:`ListOptions`: the door's options (and the TREC door's for its ranked
                 lists), checked once, read by the passes, the spread and the extremes
``score_floor``  the rule that items scored at or below a floor are not retrieved for some
                 metrics (torchmetrics' AP, P, R, RR): an option of the facade, a view of its rows
===============  =============================================================================

Nothing is imported here: :mod:`fasttie.conventions` reads ``score_floor`` without loading the
door.
"""
