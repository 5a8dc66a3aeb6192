"""The Hamming door's options, checked once: what every back end of :func:`fasttie.evaluate` takes.

The door (:func:`fasttie.evaluate`, :meth:`fasttie.TieStats.finalize`, :func:`fasttie.dask.evaluate`,
:func:`fasttie.torch.evaluate_distributed`) turns its keywords into one :class:`HammingOptions`
before any work, and the engine, the GPU pass, the streamed pass and the finalizer read that
object: no layer below the door checks or forwards the options one by one again. The choices
themselves are the table of :mod:`fasttie.options`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..finalize.spread import check_spread
from ..finalize.values import check_options
from ..metrics import Metric
from ..options import HAMMING_TIES

__all__ = ["HammingOptions"]


@dataclass(frozen=True)
class HammingOptions:
    """The options of one Hamming evaluation, checked against the metrics asked.

    Attributes
    ----------
    ties : {"average", "stable", "optimistic", "pessimistic"}
    ap_denominator : {"retrieved", "total", "min"}
    gain : {"exp2", "linear"}
    empty : {"zero", "skip", "one", "error", "skip_missed"}
    curves : bool or sequence of int
        As :func:`fasttie.evaluate` takes it (checked against the database size where the curve
        grid is built).
    spread : bool or "range"
        As :func:`fasttie.finalize.spread.check_spread` returns it: False, True or "range".
    """

    ties: str = "average"
    ap_denominator: str = "retrieved"
    gain: str = "exp2"
    empty: str = "zero"
    curves: bool | Sequence[int] = False
    spread: bool | str = False

    @classmethod
    def resolve(cls, parsed: list[Metric], *, ties: str = "average", ap_denominator: str = "retrieved",
                gain: str = "exp2", empty: str = "zero", curves: bool | Sequence[int] = False,
                spread: bool | str = False, device: str = "cpu") -> HammingOptions:
        """The options of a call, checked: ValueError / TypeError naming the option otherwise.

        Parameters
        ----------
        parsed : list of Metric
            The metrics asked (the spread refuses those without an exact method).
        ties, ap_denominator, gain, empty, curves, spread
            As :func:`fasttie.evaluate` takes them.
        device : {"cpu", "cuda"}, default "cpu"
            Where the pass runs (the spread runs on the CPU only).

        Returns
        -------
        HammingOptions
        """
        check_options(ties=ties, ap_denominator=ap_denominator, gain=gain, empty=empty, tie_modes=HAMMING_TIES)
        spread = check_spread(spread, parsed, ties=ties, ap_denominator=ap_denominator, empty=empty, device=device)
        return cls(ties, ap_denominator, gain, empty, curves, spread)

    @property
    def stable(self) -> bool:
        """Whether ties keep the database order (the passes then rank the relevant items)."""
        return self.ties == "stable"

    def under(self, ties: str) -> HammingOptions:
        """These options with ``ties`` and neither curves nor spread: a block's values under
        another tie order, from the same counts (the extremes' grade orders)."""
        return replace(self, ties=ties, curves=False, spread=False)

    def keywords(self) -> dict[str, Any]:
        """The options as keywords of :meth:`fasttie.TieStats.finalize` (a helper process's call)."""
        return asdict(self)

    def settings(self, n_db: int, n_bits: int, relevance: str) -> dict[str, Any]:
        """``Result.settings`` of an evaluation under these options."""
        return {"ties": self.ties, "ap_denominator": self.ap_denominator, "gain": self.gain, "empty": self.empty,
                "n_db": n_db, "n_bits": n_bits, "relevance": relevance}
