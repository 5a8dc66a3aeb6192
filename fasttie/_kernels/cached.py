"""Which kernels numba's cache holds, per front door, read without compiling anything
(``fasttie info``, the demo's helper process, :mod:`fasttie.warmup`)."""

from __future__ import annotations

import importlib

from .cpu import bitsliced_pass
from .histogram import tiled_kernel

__all__ = ["FRONT_DOORS", "cache_status", "door_kernels", "dispatcher_cached", "door_state", "kernel_at",
           "kernel_cached"]

# the driver kernels each front door calls (their callees are compiled into them, but for those they call
# through their addresses, listed too: the tie walks' finalizers, :mod:`.address`); evaluate's
# passes of one- and two-word codes, its stable scans with the vector sweep and its tiled pass are
# those this CPU runs (:func:`door_kernels`)
FRONT_DOORS = {
    "evaluate": ("histogram.hist_multihot",
                 "histogram.move_relevant", "hamming_ties.finalize_histograms", "finalize.finalize_ties",
                 "finalize.finalize_ties_ratios", "finalize.finalize_ties_optional",
                 "hamming_ties.stable_scan", "hamming_ties.finish_stable", "hamming_ties.finish_stable_optional",
                 "stable_top.scan_near_one_word", "stable_top.scan_near_two_words", "stable_top.scan_near_wide",
                 "err.err_histograms", "tie_spread.hamming_spread", "tie_spread.hamming_spread_retrieved",
                 "tie_spread.hamming_spread_wap", "tie_spread.hamming_spread_retrieved_wap",
                 "tie_extremes.ratio_extremes_histograms"),
    "search": ("knn.knn", "knn.radius_counts", "knn.radius_fill"),
    "rank_evaluate": ("score_ties.finalize_rankings", "finalize.finalize_ties", "finalize.finalize_ties_optional",
                      "score_ties.finalize_fixed_rankings", "finalize.finalize_ranked",
                      "finalize.ranked_optional_sums", "radix_sort.sort_keys_into", "score_ties.split_run_into",
                      "err.err_rankings", "infap.infap_rankings", "tie_spread.list_spread",
                      "tie_spread.list_spread_retrieved", "tie_extremes.ratio_extremes_rankings", "infap.infap_extremes"),
    "trec.evaluate": ("trec_parse.scan_table", "trec_parse.fill_text", "key_join.locate_keys",
                      "score_ties.finalize_rankings", "finalize.finalize_ties", "finalize.finalize_ties_optional",
                      "score_ties.finalize_fixed_rankings", "finalize.finalize_ranked",
                      "finalize.ranked_optional_sums", "radix_sort.sort_keys_into", "score_ties.split_run_into",
                      "err.err_rankings", "infap.infap_rankings", "tie_spread.list_spread",
                      "tie_spread.list_spread_retrieved", "tie_extremes.ratio_extremes_rankings", "infap.infap_extremes"),
    "lambdarank": ("lambdarank.lambdarank_queries", "lambdarank.pair_rows", "radix_sort.sort_keys_into"),
    # rescore.rescore_block reads the float vectors in their own dtype (a float32 database is never
    # copied to float64): one variant per dtype, warmup compiles float32's; the drivers listed have one
    "rescore_evaluate": ("rescore.hamming_block", "rescore.collect_block", "rescore.top_k_block",
                         "rescore.grade_totals"),
    "alpha_ndcg": ("alpha_ndcg.pack_subtopics", "diversity_measures.diversity_queries",
                   "diversity_ties.average_queries", "diversity_measures.query_sums", "alpha_ndcg.first_duplicate",
                   "radix_sort.sort_keys_into"),
}


def door_kernels() -> dict:
    """:data:`FRONT_DOORS` with the passes that this CPU runs for one- and two-word codes added to
    evaluate's kernels: the bit-sliced passes (AVX-512, or forced by ``FASTTIE_KERNEL``) and the
    stable pass's scans with the vector sweep (large passes), or the portable one-word pass and
    the class sort it reads (two-word codes then take the tiled pass); and the tiled passes this
    target runs (:func:`.histogram.tiled_kernel`).

    Returns
    -------
    dict of str to tuple of str
    """
    if bitsliced_pass():
        passes = ("bitsliced.hist_classes_bitsliced", "bitsliced.hist_classes_bitsliced_two_words",
                  "hamming_ties.stable_scan_lanes")
    else:
        passes = ("histogram.hist_segments_one_word", "class_sort.count_classes", "class_sort.scatter_by_class")
    passes += tuple(dict.fromkeys(f"histogram.{tiled_kernel(n_words).py_func.__name__}" for n_words in (2, 4)))
    return {door: (*passes, *kernels) if door == "evaluate" else kernels for door, kernels in FRONT_DOORS.items()}


def kernel_at(path):
    """The kernel ``"module.name"`` of ``fasttie._kernels`` (a numba dispatcher), as
    :data:`FRONT_DOORS` names it."""
    module, name = path.split(".")
    return getattr(importlib.import_module(f"fasttie._kernels.{module}"), name)


def kernel_cached(path) -> bool | None:
    """Whether numba's cache holds a compiled kernel (no compile needed to tell).

    Parameters
    ----------
    path : str
        ``"module.name"`` of a kernel in ``fasttie._kernels``, as in :func:`door_kernels`.

    Returns
    -------
    bool or None
        None where caching is off.
    """
    return dispatcher_cached(kernel_at(path))


def dispatcher_cached(dispatcher) -> bool | None:
    """Whether numba's cache holds a compiled signature of a kernel (a numba dispatcher); None
    where caching is off."""
    cache = getattr(dispatcher, "_cache", None)
    try:
        return bool(cache._cache_file._load_index())
    except AttributeError:  # caching off (a NullCache), or numba internals moved
        return None


def door_state(door) -> str:
    """"cached", "partly cached (n of m kernels)", "not cached" or "cache off" for one front door.

    Parameters
    ----------
    door : str
        A key of :data:`FRONT_DOORS`.

    Returns
    -------
    str
    """
    counts = _cached_counts(door)
    if counts is None:
        return "cache off"
    cached, total = counts
    if cached == total:
        return "cached"
    return f"partly cached ({cached} of {total} kernels)" if cached else "not cached"


def _cached_counts(door):
    """(kernels cached, kernels) of a door, or None where caching is off."""
    states = [kernel_cached(path) for path in door_kernels()[door]]
    return None if None in states else (sum(states), len(states))


def cache_status() -> dict:
    """Per front door its :func:`door_state` (no numba compile needed to tell).

    Returns
    -------
    dict of str to str
    """
    return {door: door_state(door) for door in FRONT_DOORS}
