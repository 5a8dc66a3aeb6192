"""A library's rule that an item scored at or below a floor is never found by some of its metrics.

torchmetrics (1.7.4 and later) replaces the target of every item scored <= 0 by 0 in average
precision, precision, recall and reciprocal rank (``torch.where(preds > 0, target, 0)`` in
``torchmetrics/functional/retrieval/``), while recall keeps the query's full count of relevant
items as its denominator and a query whose relevant items are all scored <= 0 scores 0, not as a
query without relevant items. fasttie states the rule as data, :class:`ScoreFloor`, in the
convention (:data:`fasttie.conventions.CONVENTIONS`), and :func:`evaluate_with_floor` applies it
at the door: the metrics on the rule's bases are computed on grades zeroed at those items, whose
grades are passed as ``unretrieved`` (judged documents missing from the ranking: they count in R),
and every other metric of the call on the data unchanged; the two results are merged.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..errors import InputError, InputTypeError
from ..metrics.families import asked_names, parse_metric

__all__ = ["ScoreFloor", "evaluate_with_floor", "merged_results"]


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

    def settings(self, keys) -> dict:
        """The rule as a ``Result.settings`` entry (JSON-ready): the floor and the metrics it
        applied to, keyed as asked."""
        return {"at_most": self.at_most, "metrics": list(keys)}


def evaluate_with_floor(call, rule, arguments, floor_rows):
    """Evaluate a ranked-list call with ``rule`` applied to the metrics on its bases.

    Parameters
    ----------
    call : callable
        ``call(**arguments)``: the door's evaluation (options of the convention filled in).
    rule : ScoreFloor
    arguments : dict
        Every argument of the call by name, defaults included (``metrics`` among them).
    floor_rows : callable
        ``floor_rows(at_most, arguments) -> dict``: the arguments that change when the items
        scored <= ``at_most`` leave retrieval (the door knows its rows: ``y_true`` zeroed there,
        ``unretrieved`` with their grades added, query by query).

    Returns
    -------
    Result
        Keyed as the call keys it, in the order asked; ``settings["score_floor"]`` records the
        rule where it applied.
    """
    try:
        asked = asked_names(arguments["metrics"], diversity=False)
    except (InputError, InputTypeError):
        return call(**arguments)  # the door raises its own message about the names
    floored = [key for key, name in asked.items() if parse_metric(name)[0].base in rule.bases]
    if not floored:
        return call(**arguments)
    others = [key for key in asked if key not in floored]
    results = [call(**{**arguments, "metrics": others})] if others else []
    results.append(call(**{**arguments, **floor_rows(rule.at_most, arguments), "metrics": floored}))
    # n_empty: the floored call's empty queries (none at the relevance level, R kept whole) hold
    # every query empty for the other metrics (no positive grade is fewer), so the union is the
    # larger count
    merged = merged_results(results, list(asked), n_empty=max(result.n_empty for result in results))
    merged.settings["score_floor"] = rule.settings(floored)
    return merged


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
