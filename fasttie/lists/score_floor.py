"""A library's rule that an item scored at or below a floor is never found by some of its metrics.

torchmetrics (1.7.4 and later) replaces the target of every item scored <= 0 by 0 in average
precision, precision, recall and reciprocal rank (``torch.where(preds > 0, target, 0)`` in
``torchmetrics/functional/retrieval/``), while recall keeps the query's full count of relevant
items as its denominator and a query whose relevant items are all scored <= 0 scores 0, not as a
query without relevant items. fasttie states the rule as data, :class:`ScoreFloor`, an option of
:func:`fasttie.rank_evaluate` (``score_floor=``) that the torchmetrics convention sets
(:data:`fasttie.conventions.CONVENTIONS`). The door applies it as a view of its rows: the metrics
on the rule's bases see grades zeroed at those items, whose grades count as ``unretrieved``
(judged documents missing from the ranking: they count in R), every other metric of the call
the rows unchanged, in one call.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..errors import InputTypeError

__all__ = ["ScoreFloor", "check_score_floor", "merged_results"]


@dataclass(frozen=True)
class ScoreFloor:
    """Items scored at most ``at_most`` are not retrieved, for the metrics on ``bases`` only.

    The rows stay in the ranking (they rank below every higher score anyway) with grade 0; their
    grades count as unretrieved, so R keeps them: R@k divides by the full R, AP over the retrieved
    relevant items does not see them, and a query whose relevant items all score at most
    ``at_most`` has R > 0 (its value is 0, not the ``empty`` policy's).

    Attributes
    ----------
    bases : frozenset of str
        Metric bases the rule applies to, their cutoff forms too (``"AP"`` covers ``AP@k``).
    at_most : float, default 0.0
        The floor: an item scored <= ``at_most`` is not retrieved.
    """

    bases: frozenset
    at_most: float = 0.0

    def applies_to(self, metric) -> bool:
        """Whether the rule applies to ``metric`` (a parsed :class:`fasttie.metrics.Metric`)."""
        return metric.base in self.bases

    def settings(self, keys) -> dict:
        """The rule as a ``Result.settings`` entry (JSON-ready): the floor and the metrics it
        applied to, keyed as asked."""
        return {"at_most": self.at_most, "metrics": list(keys)}


def check_score_floor(score_floor) -> None:
    """Raise TypeError unless ``score_floor`` is a :class:`ScoreFloor` or None."""
    if score_floor is not None and not isinstance(score_floor, ScoreFloor):
        raise InputTypeError(f"{{score_floor}} must be a fasttie.lists.score_floor.ScoreFloor or None, got "
                             f"{score_floor!r}", argument="score_floor")


def merged_results(results, keys, *, n_empty: int):
    """One Result from results of one query set over disjoint metrics.

    Parameters
    ----------
    results : list of Result
        Each of the same queries, in the same order, for metrics no other result holds.
    keys : list of str
        The metrics' keys in the order the merged result holds them.
    n_empty : int
        The queries without relevant items for any of the metrics: each result counts its own,
        and only the caller knows how the sets nest.

    Returns
    -------
    Result
        Every field keyed by metric (``mean``, ``per_query``, ``tie_std``, ...) joined, the
        curves joined, the rest (settings a copy) the first result's.
    """
    first = results[0]
    keyed = {}
    for each in fields(first):  # the fields keyed by metric are of mean's type (MetricValues)
        if isinstance(getattr(first, each.name), type(first.mean)):
            values = {key: value for result in results for key, value in getattr(result, each.name).items()}
            keyed[each.name] = {key: values[key] for key in keys if key in values}
    return replace(first, **keyed, curves={k: v for result in results for k, v in result.curves.items()},
                   n_empty=n_empty, settings=dict(first.settings))
