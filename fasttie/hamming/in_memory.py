"""A database in memory: :func:`fasttie.evaluate` on the CPU, the sibling of the GPU pass
(:mod:`fasttie.hamming.gpu`) and of a database read tile by tile (:mod:`fasttie.hamming.streamed`).

The engine's passes (:func:`fasttie.hamming.engine.evaluate_chunks`) count and finalize each
chunk of queries in one go (the counts never leave the chunk); around them this module shows
the progress bar, starts the helper that compiles the tie walk (or the stable pass's scans) on a
cold cache (:mod:`fasttie.finalize.cold_start`), feeds ``spread=True`` the same counts
(:mod:`fasttie.hamming.spreads`), and builds the Result.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..codes import PackedCodes
from ..finalize.cold_start import hamming_walk_in_helper, stable_scan_in_helper
from ..metrics import Metric
from ..metrics.families import asked_names
from ..parallel import resolve_threads
from ..relevance import RelevanceSpec
from ..result import Result
from .engine import (
    cold_stable_kernels, cold_tie_walk, compile_stable_finish, evaluate_chunks, hashing_result, metrics_with_curves,
    progress_bar,
)
from .options import HammingOptions
from .spreads import spread_callbacks, with_spreads

__all__ = ["evaluate_in_memory"]


def evaluate_in_memory(query_codes: PackedCodes, db_codes: PackedCodes, spec: RelevanceSpec, parsed: list[Metric],
                       metrics: str | Sequence[str], options: HammingOptions, *, n_threads: int | None, progress: bool | str) -> Result:
    """:func:`fasttie.evaluate` of host codes (the facade has checked ``options`` and packed the
    codes; ``parsed`` the metrics asked, ``metrics`` as asked, for the Result's keys)."""
    n_queries, n_db, n_bits = query_codes.n, db_codes.n, db_codes.n_bits
    all_metrics, grid = metrics_with_curves(parsed, options.curves, n_db, n_bits)
    threads = resolve_threads(n_threads, n_queries * n_db)
    bar, block = progress_bar(progress, n_queries, n_db, db_codes.words.shape[1], threads)
    on_counts, spread_of, extremes_of = spread_callbacks(options, parsed, spec.n_grades, n_db, n_bits, spec.kind)
    # on a cold cache the tie walk's kernels compile in a helper meanwhile; for the stable passes,
    # the scan (the finish, the larger, compiles here) (finalize.cold_start)
    walk = None if options.stable else cold_tie_walk(all_metrics, options, n_db)
    stable_kernels = cold_stable_kernels(all_metrics, options, spec, n_db, n_bits)
    helper = None
    if walk is not None:
        helper = hamming_walk_in_helper(
            walk, [m.name for m in parsed], options=options.keywords(), n_db=n_db, n_bits=n_bits,
            n_grades=spec.n_grades, relevance=spec.kind, n_threads=n_threads)
    elif stable_kernels is not None:
        helper = stable_scan_in_helper(*stable_kernels, relevance=spec.kind, n_bits=n_bits, n_threads=n_threads)
        if helper is not None:
            compile_stable_finish(all_metrics, options, n_db=n_db, n_bits=n_bits, n_grades=spec.n_grades,
                                  kind=spec.kind)
            # the rest (the counts, the class sort of the near pass, the scans) is the helper's: loaded
            # from the cache once it is done, before the database pass is prepared
            helper.wait()
            helper = None
    try:
        per_query, n_empty = evaluate_chunks(
            query_codes, db_codes, spec, all_metrics, options, threads, bar, block, on_counts=on_counts,
            ready=None if helper is None else helper.wait)
    finally:
        if bar is not None:
            bar.close()
    settings = options.settings(n_db, n_bits, spec.kind)
    result = hashing_result(parsed, all_metrics, per_query, n_empty, n_queries, settings, grid)
    return with_spreads(result, parsed, spread_of, extremes_of).keyed_as(asked_names(metrics, diversity=False))
