"""``spread=True`` / ``"range"`` on the Hamming doors: the callbacks that read each block's counts
for the standard deviation (:mod:`fasttie.finalize.spread`) and the extremes (:mod:`fasttie.finalize.extremes`),
and the Result they fill."""

from __future__ import annotations

from ..finalize.extremes import hamming_extremes, with_extremes
from ..finalize.spread import hamming_spread, with_spread
from .engine import result_from_blocks


def spread_callbacks(spread, parsed, gains, n_db, n_bits, relevance, options):
    """``(on_counts, spread_of, extremes_of)`` for ``spread`` (False, True or "range").

    Parameters
    ----------
    spread : bool or "range"
        As :func:`fasttie.finalize.spread.check_spread` returns it.
    parsed : list of Metric
    gains : ndarray of float64
        The gain of each grade.
    n_db, n_bits : int
    relevance : str
        The relevance kind of the counts.
    options : dict
        ``ap_denominator``, ``gain``, ``empty`` of the call.

    Returns
    -------
    tuple
        ``on_counts(start, stop, hist, n_threads=None)`` for each block of counts (None when
        ``spread`` is False); ``spread_of`` and ``extremes_of`` (None where not asked), whose
        call gives what :func:`with_spreads` takes.
    """
    if not spread:
        return None, None, None
    names = [m.name for m in parsed]

    def evaluate_counts(hist, ties):  # a block's values under a grade order, from the same counts
        return result_from_blocks([(hist, None)], len(hist), n_db, n_bits, hist.shape[2], relevance, names,
                                  ties=ties, curves=False, n_threads=None, **options).per_query

    extremes_on, extremes_of = hamming_extremes(parsed, evaluate_counts, options["ap_denominator"])
    std_on, spread_of = hamming_spread(parsed, gains, n_db, options["ap_denominator"]) if spread is True else (None, None)

    def on_counts(start, stop, hist, n_threads=None):
        if std_on is not None:
            std_on(start, stop, hist, n_threads)
        extremes_on(start, stop, hist, n_threads)

    return on_counts, spread_of, extremes_of


def with_spreads(result, parsed, spread_of, extremes_of):
    """``result`` with ``tie_std`` (``spread_of`` not None) and the extremes (``extremes_of`` not
    None) filled, keyed by canonical names."""
    if spread_of is not None:
        result = with_spread(result, parsed, *spread_of())
    if extremes_of is not None:
        result = with_extremes(result, parsed, *extremes_of())
    return result
