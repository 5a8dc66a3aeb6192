"""``spread=True`` / ``"range"`` on the Hamming doors: the callbacks that read each block's counts
for the standard deviation (:mod:`fasttie.finalize.spread`) and the extremes (:mod:`fasttie.finalize.extremes`),
and the Result they fill."""

from __future__ import annotations

from ..finalize.extremes import hamming_extremes, with_extremes
from ..finalize.spread import hamming_spread, with_spread
from ..finalize.values import gain_table
from .engine import result_from_blocks


def spread_callbacks(options, parsed, n_grades, n_db, n_bits, relevance):
    """``(on_counts, spread_of, extremes_of)`` for ``options.spread`` (False, True or "range").

    Parameters
    ----------
    options : HammingOptions
        The call's options (:mod:`fasttie.hamming.options`).
    parsed : list of Metric
    n_grades : int
        Grades of the counts (0 included).
    n_db, n_bits : int
    relevance : str
        The relevance kind of the counts.

    Returns
    -------
    tuple
        ``on_counts(start, stop, hist, n_threads=None)`` for each block of counts (None when
        ``spread`` is False); ``spread_of`` and ``extremes_of`` (None where not asked), whose
        call gives what :func:`with_spreads` takes.
    """
    if not options.spread:
        return None, None, None
    names = [m.name for m in parsed]

    def evaluate_counts(hist, ties):  # a block's values under a grade order, from the same counts
        return result_from_blocks([(hist, None)], len(hist), n_db, n_bits, hist.shape[2], relevance, names,
                                  options.under(ties), n_threads=None).per_query

    extremes_on, extremes_of = hamming_extremes(parsed, evaluate_counts, options.ap_denominator)
    std_on, spread_of = (hamming_spread(parsed, gain_table(options.gain, n_grades), n_db, options.ap_denominator)
                         if options.spread is True else (None, None))

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
