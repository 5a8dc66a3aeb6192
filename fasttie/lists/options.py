"""The ranked-list door's options, checked once: what :func:`fasttie.lists.facade.rank_lists` takes.

:func:`fasttie.rank_evaluate` and :func:`fasttie.trec.evaluate` turn their keywords into one
:class:`ListOptions` before any work; the passes over the rows, the tie spread, the extremes and
a helper process read that object, and no layer below the doors checks an option again. The
choices themselves are the table of :mod:`fasttie.options`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from ..errors import InputError
from ..finalize.spread import check_spread
from ..finalize.values import check_options
from ..metrics import Metric
from ..options import LIST_TIES
from .score_floor import ScoreFloor, check_score_floor

__all__ = ["ListOptions"]


@dataclass(frozen=True)
class ListOptions:
    """The options of one evaluation of ranked lists, checked against the metrics asked.

    Attributes
    ----------
    ties : {"average", "stable", "optimistic", "pessimistic", "trec", "pyndeval"}
    gain : {"exp2", "linear"}
    log_base : float
        Base of the DCG discount's logarithm (> 1).
    ap_denominator : {"retrieved", "total", "min"}
    empty : {"zero", "skip", "one", "error"}
    relevance_level : float
        The lowest grade that counts as relevant (> 0).
    spread : bool or "range"
        As :func:`fasttie.finalize.spread.check_spread` returns it: False, True or "range".
    score_floor : ScoreFloor or None
        Rows scored at or below it are not retrieved for the metrics it names.
    """

    ties: str = "average"
    gain: str = "linear"
    log_base: float = 2
    ap_denominator: str = "total"
    empty: str = "zero"
    relevance_level: float = 1
    spread: bool | str = False
    score_floor: ScoreFloor | None = None

    @classmethod
    def resolve(cls, parsed: list[Metric], *, ties: str = "average", gain: str = "linear", log_base: float = 2,
                ap_denominator: str = "total", empty: str = "zero", relevance_level: float = 1,
                spread: bool | str = False, score_floor: ScoreFloor | None = None,
                tie_modes: tuple[str, ...] = LIST_TIES) -> ListOptions:
        """The options of a call, checked: ValueError / TypeError naming the option otherwise.

        Parameters
        ----------
        parsed : list of Metric
            The metrics asked (the spread refuses those without an exact method).
        ties, gain, log_base, ap_denominator, empty, relevance_level, spread, score_floor
            As :func:`fasttie.rank_evaluate` takes them.
        tie_modes : tuple of str, default :data:`fasttie.options.LIST_TIES`
            The door's tie modes, in the order its errors list them (:func:`fasttie.trec.evaluate`:
            :data:`~fasttie.options.TREC_TIES`, trec_eval's first).

        Returns
        -------
        ListOptions
        """
        check_options(ties=ties, ap_denominator=ap_denominator, gain=gain, empty=empty, tie_modes=tie_modes)
        if empty == "skip_missed":
            raise InputError("{empty}='skip_missed' (HashNet's protocol) is for fasttie.evaluate; choose "
                             "empty='zero', 'skip', 'one' or 'error'", argument="empty")
        check_score_floor(score_floor)
        spread = check_spread(spread, parsed, ties=ties, ap_denominator=ap_denominator, empty=empty)
        if isinstance(log_base, bool) or not isinstance(log_base, (int, float)) or not log_base > 1:
            raise InputError(f"{{log_base}} must be a number > 1, got {log_base!r}", argument="log_base")
        if not (isinstance(relevance_level, (int, float)) and math.isfinite(relevance_level) and relevance_level > 0):
            raise InputError(f"{{relevance_level}} must be a positive number, got {relevance_level!r}",
                             argument="relevance_level")
        return cls(ties, gain, log_base, ap_denominator, empty, relevance_level, spread, score_floor)

    def under(self, ties: str) -> ListOptions:
        """These options with ``ties`` and neither spread nor score floor: the values of rows
        already in a view, under another tie order (the extremes' grade orders)."""
        return replace(self, ties=ties, spread=False, score_floor=None)

    def at_level(self, relevance_level: float) -> ListOptions:
        """These options at another relevance level (already checked by the door that asks it:
        trec_eval's level 0 evaluates its judged documents at level 1)."""
        return replace(self, relevance_level=relevance_level)

    def keywords(self) -> dict[str, Any]:
        """The options as keywords of :func:`fasttie.rank_evaluate` (a helper process's call)."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def settings(self) -> dict[str, Any]:
        """``Result.settings`` of an evaluation under these options (the score floor's are
        written by the door, keyed by the metrics it applies to)."""
        return {"ties": self.ties, "ap_denominator": self.ap_denominator, "gain": self.gain, "empty": self.empty,
                "log_base": self.log_base, "relevance_level": self.relevance_level}
