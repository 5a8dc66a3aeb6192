"""The engine of Hamming ranking: the passes over the database and the finalizing of counts.

One pass per query block counts database items by (Hamming distance, grade), or ranks the
relevant items in database index order for ``ties="stable"``; the finalizer turns those counts
into base quantities and metric values, and :func:`result_from_counts` into a
:class:`~fasttie.Result`. Behind :func:`fasttie.evaluate` (the facade in :mod:`fasttie.hamming.facade`),
:func:`fasttie.tie_stats` / :meth:`fasttie.TieStats.finalize`, :mod:`fasttie.dask` and the GPU
path, which all finalize the same integer counts. The radius metrics (precision, recall, F1 and
AP within a Hamming radius) are computed here, from the counts (and for AP under a fixed order
the ranks of the relevant items), since only Hamming ranking has distances;
:mod:`fasttie.finalize.values` takes their values as it takes ERR's.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from .._kernels.address import address_of
from .._kernels.bitsliced import hist_classes
from .._kernels.class_sort import count_classes, scatter_by_class
from .._kernels.cpu import bitsliced_codes, bitsliced_pass
from .._kernels.err import err_histograms
from .._kernels.finalize import (
    N_QUANTITIES, TOTAL_RELEVANT, finalize_ties, finalize_ties_optional, finalize_ties_ratios, radius_ap_sums,
    radius_ap_sums_ranked,
)
from .._kernels.hamming_ties import (
    GROUP, GROUP_MIN, LANES, ONE_BY_ONE, SWEPT, finalize_histograms, finalize_ranked_queries,
    finalize_ranked_queries_optional, finish_stable, finish_stable_optional, ranks_of_records, stable_scan,
    stable_scan_lanes,
)
from .._kernels.histogram import hist_multihot, hist_segments_one_word, move_relevant, tiled_pass
from .._kernels.modes import KIND_CODES, TIE_CODES
from .._kernels.stable_top import NEAR_QUERIES, near_scan
from ..codes import pack_pair
from ..metrics import Metric, aggregate, parse_metrics
from ..metrics.doors import HAMMING, check_door
from ..metrics.families import asked_names
from ..result import Result
from ..relevance import make_relevance
from ..parallel import resolve_threads, run_blocks
from .options import HammingOptions
from ..finalize.plan import finalize_plan
from ..finalize.values import divide, gain_table, metric_values, read_only
from ..errors import InputError, InputTypeError
from ..validation import check_empty_policy, check_err_grades

HIST_BUDGET = 64 << 20  # bytes of histograms per query chunk: memory stays O(chunk x bits)
# fewer queries a thread than this: the passes that gather each tile's items by class split the
# database over the threads, not the queries (each thread's block would gather every tile again)
_SPLIT_QUERIES = 128
_SPLIT_ALIGN = 1 << 13  # database rows per unit of the split: whole tiles of the bit-sliced and the tiled pass
# bytes of relevant-item records per thread of the stable pass when GROUP queries of a class share
# a sweep (GROUP x 8 bytes per relevant item): larger classes go one query at a time
_GROUP_SCRATCH = 128 << 20
# records per batch of the full stable pass's scans (8 bytes each), finished before the next: a
# batch's records are read back while they are still in the cache (a swept group of 1M codes in 10
# classes writes 6.4 MB; batches of 128 MiB took 1,000 x 1M 12 % longer), and small databases
# still take many groups per kernel call
_BATCH_RECORDS = 1 << 20
# the near pass of codes of one or two words (stable_top.near_scan, vectorized) against the sweeps of the full
# pass, 300 x 1M 64-bit codes of 10 classes (AP, nDCG and P at depth k), one thread: 0.12 against
# 0.22 s at k = 1,000, 0.36 / 0.40 at 62,500, 0.39 / 0.42 at 100,000, 0.44 / 0.39 at 125,000: the
# near pass while the deepest cutoff is at most a tenth of the database
NEAR_SHARE = 10
# a group of queries of one class takes the vector sweep (group_sweeps) from LANES_MIN queries on,
# while its relevant items are at most 1/LANES_SHARE of the database: the sweep costs the same for
# three queries as for eight, and more per relevant item than the sweep with its counts in memory
# (1M 64-bit codes, one thread: 1.5 / 2.6 / 3.6 / 5.7 ms where 1 / 5 / 10 / 20 % of the items are
# relevant, against 2.9 / 3.3 / 3.9 / 5.1 ms, and about 1.0 ms for one query alone)
LANES_MIN = 3
LANES_SHARE = 10
# a pass of fewer (query, item) pairs takes the other sweeps: on a cold cache the vector sweep's kernel
# compiles for about 1.2 s more than theirs, more than it would save
LANES_PAIRS = 1 << 28
# progress: a conservative kernel speed (code pairs x 64-bit words per second per thread) to
# size blocks of >= _BLOCK_SECONDS of estimated work between bar updates (about 0.2-0.5 s at
# the measured 1-2.4e9), so the per-block cost (two parallel kernel launches, a few numpy
# calls; milliseconds at worst when other processes hold the cores) stays far below 2%; tqdm
# redraws at most every 0.5 s anyway. And the estimated run time above which "auto" shows a bar.
_PAIR_WORDS_PER_S = 1e9
_BLOCK_SECONDS = 0.5
_AUTO_SECONDS = 2.0


_ro = read_only


# whether the finalizer runs the tie walk's driver: a helper compiling the walk of a cold call
# (finalize.cold_start) sets it False, since the call compiles the driver itself meanwhile
WALK_DRIVER = True


def _kernel(plan, pass_):
    """The kernel of ``pass_`` in the variant ``plan`` names: the tie walk over histograms
    ("histograms": average, optimistic, pessimistic; the kernel that :func:`finalize_histograms`
    calls through its address) or a fixed order: database index order, the finish of both stable
    passes ("stable"), or ranks given ("ranked"). Looked up at each call (a test may wrap a kernel
    of this module)."""
    if pass_ == "histograms":
        return plan.kernel(finalize_ties, finalize_ties_optional, finalize_ties_ratios)
    plain, optional = {"stable": (finish_stable, finish_stable_optional),
                       "ranked": (finalize_ranked_queries, finalize_ranked_queries_optional)}[pass_]
    return plan.kernel(plain, optional, fixed=True, err_in_optional=pass_ == "stable")


def hashing_result(parsed, all_metrics, per_query, n_empty, n_queries, settings, grid):
    """Result of the requested metrics (means over the kept queries, curves if asked for)."""
    mean = {metric.name: aggregate(metric, per_query[metric.name]) for metric in all_metrics}
    result = Result(
        mean={m.name: mean[m.name] for m in parsed},
        per_query={m.name: per_query[m.name] for m in parsed},
        n_queries=n_queries,
        n_empty=n_empty,
        settings=settings,
    )
    if grid is not None:
        radii = np.arange(settings["n_bits"] + 1)
        retrieving, precision_retrieving = _retrieving_by_radius(per_query, radii)
        result.curves = {
            "radius": radii,
            "precision_by_radius": np.array([mean[f"P(radius={r})"] for r in radii]),
            "recall_by_radius": np.array([mean[f"R(radius={r})"] for r in radii]),
            "f1_by_radius": np.array([mean[f"F1(radius={r})"] for r in radii]),
            "ap_by_radius": np.array([mean[f"AP(radius={r})"] for r in radii]),
            "retrieving_by_radius": retrieving,
            "precision_by_radius_retrieving": precision_retrieving,
            "n": grid,
            "precision_at_n": np.array([mean[f"P@{n}"] for n in grid]),
            "recall_at_n": np.array([mean[f"R@{n}"] for n in grid]),
        }
    return result


def _retrieving_by_radius(per_query, radii):
    """Per radius: the share of the kept queries with an item within it, and their mean precision.

    Precision within a radius that holds nothing is 0 (the usual convention, in
    ``precision_by_radius``); averaging over the queries that retrieve something instead keeps a
    PR curve from diving to (0, 0) at small radii. NaN where no kept query retrieves anything.
    """
    share, precision = np.full(len(radii), np.nan), np.full(len(radii), np.nan)
    for r in radii:
        values, found = per_query[f"P(radius={r})"], per_query[f"NumRet(radius={r})"]
        kept = ~np.isnan(values)
        retrieving = kept & (found > 0)
        if kept.any():
            share[r] = retrieving.sum() / kept.sum()
        if retrieving.any():
            precision[r] = values[retrieving].mean()
    return share, precision


def metrics_for_curves(curves, n_db, n_bits):
    """The metrics behind the ``curves`` option: P, R, F1, AP and NumRet within every radius 0..n_bits
    and P, R at every N of the grid (True: 50 log-spaced N up to n_db). Returns (metrics, grid or None)."""
    if curves is False or curves is None:
        return [], None
    if curves is True:
        grid = np.unique(np.round(np.geomspace(1, n_db, 50)).astype(np.int64))
    else:
        grid = np.unique(np.asarray(curves))
        if grid.ndim != 1 or not np.issubdtype(grid.dtype, np.integer) or len(grid) == 0 or grid[0] < 1:
            raise InputError("curves must be True or a sequence of integer cutoffs N >= 1")
    radius = [Metric(base, radius=r) for r in range(n_bits + 1) for base in ("P", "R", "F1", "AP", "NumRet")]
    at_n = [Metric(base, int(n)) for n in grid for base in ("P", "R")]
    return radius + at_n, grid


def metrics_with_curves(parsed, curves, n_db, n_bits):
    """(the metrics a pass computes: ``parsed`` and those of the ``curves`` option, the curves'
    grid) (see :func:`metrics_for_curves`)."""
    curve_metrics, grid = metrics_for_curves(curves, n_db, n_bits)
    return parsed + [m for m in curve_metrics if m not in parsed], grid


def progress_bar(progress, n_queries, n_db, n_words, n_threads):
    """(tqdm bar or None, queries per block or None) for the ``progress`` option."""
    if not wants_progress(progress, n_queries, n_db, n_words, n_threads):
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=n_queries, unit="query", desc="fasttie", file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
    return bar, progress_block(n_db, n_words, n_threads)


def wants_progress(progress, n_queries, n_db, n_words, n_threads):
    """Whether ``progress`` (True, False or "auto") shows a bar: "auto" when the estimated run
    time passes _AUTO_SECONDS and stderr is a terminal."""
    if isinstance(progress, str):
        if progress != "auto":
            raise InputError(f"progress must be True, False or 'auto', got {progress!r}")
    elif not isinstance(progress, (bool, np.bool_)):
        raise InputTypeError(f"progress must be True, False or 'auto', got {progress!r}")
    if progress != "auto":
        return bool(progress)
    seconds_per_query = n_db * n_words / (_PAIR_WORDS_PER_S * n_threads)
    isatty = getattr(sys.stderr, "isatty", None)
    return n_queries * seconds_per_query > _AUTO_SECONDS and bool(isatty and isatty())


def progress_block(n_db, n_words, n_threads):
    """Queries per block between progress updates: at least _BLOCK_SECONDS of estimated work,
    in whole query pairs per thread (the histogram kernel splits query pairs over threads)."""
    seconds_per_query = n_db * n_words / (_PAIR_WORDS_PER_S * n_threads)
    step = 2 * n_threads
    return max(step, math.ceil(_BLOCK_SECONDS / seconds_per_query / step) * step)


_SORT_CHUNK = 1 << 20  # database rows per chunk of the class sort (the blocks its threads share)
_SORT_COUNTERS = 1 << 23  # the class sort's per-chunk class counts at most (int64: 64 MB)


def _class_sorted(db_words, db_ids, n_classes, n_threads):
    """(words ordered by class, each class's [start, stop) segment) of one-word codes (the
    portable one-word pass's input): the words as they are where the database is already in class
    order, else a stable class-sorted copy (a counting sort in chunks of rows on ``n_threads``
    threads; fewer, longer chunks where the classes are so many that a count per chunk and class
    would pass _SORT_COUNTERS)."""
    n_db = len(db_ids)
    most_chunks = max(1, _SORT_COUNTERS // n_classes)
    rows = max(_SORT_CHUNK, math.ceil(n_db / most_chunks))
    bounds = np.unique(np.r_[np.arange(0, n_db, rows), n_db]).astype(np.int64)
    counts = np.zeros((len(bounds) - 1, n_classes), dtype=np.int64)
    ascending = np.empty(len(bounds) - 1, dtype=np.bool_)
    threads = resolve_threads(n_threads, n_db)
    run_blocks(lambda lo, hi: count_classes(db_ids, _ro(bounds), counts, ascending, lo, hi), len(bounds) - 1, threads)
    ends = np.cumsum(counts.sum(axis=0))
    segments = np.stack([ends - counts.sum(axis=0), ends], axis=1).astype(np.int64)
    if ascending.all() and (db_ids[bounds[1:-1]] >= db_ids[bounds[1:-1] - 1]).all():
        return db_words, segments
    cursors = _ro(segments[:, 0] + np.cumsum(counts, axis=0) - counts)  # each chunk's first slot per class
    out = np.empty(db_words.shape, dtype=np.uint64)
    run_blocks(lambda lo, hi: scatter_by_class(db_words, db_ids, _ro(bounds), cursors, out, lo, hi), len(bounds) - 1,
               threads)
    return _ro(out), segments


class _DatabasePass:
    """The database side of the histogram pass, prepared once per call: the class-sorted copy
    (class ids, for the portable pass of one-word codes) and the arrays every kernel
    takes, then counts or stable ranks per query block."""

    def __init__(self, db_codes, spec, stable, n_threads):
        self.spec, self.n_bits, self.stable = spec, db_codes.n_bits, stable
        self.db_words = _ro(db_codes.words)
        self.db_labels, self.db_label_words = _ro(spec.db_labels), _ro(spec.db_label_words)
        # the passes that read the database as it lies, gathering each tile's items by class: the
        # bit-sliced pass (one and two words) and the tiled pass (two words and more)
        n_words = self.db_words.shape[1]
        self.class_pass = hist_classes if bitsliced_codes(n_words) else tiled_pass(n_words) if n_words >= 2 else None
        self.n_classes = spec.n_classes
        if spec.kind == "class" and stable:
            # the stable pass reads the database in index order: no class-sorted copy, and each
            # query's relevant count (its scratch size) is its class size
            self.class_sizes = class_sizes(spec)
        elif spec.kind == "class" and self.class_pass is None:
            # each query's relevant items must be one contiguous segment of the database
            self.hist_db_words, self.segments = _class_sorted(self.db_words, self.db_labels, self.n_classes, n_threads)

    def chunk(self, query_words, rows):
        """Per-chunk inputs (query rows ``rows`` of the relevance spec)."""
        spec = self.spec
        c = {"query_words": _ro(query_words), "query_labels": _ro(rows.query_labels),
             "label_words": _ro(rows.query_label_words), "indptr": _ro(rows.indptr),
             "indices": _ro(rows.indices), "grades": _ro(rows.grades)}
        n = query_words.shape[0]
        if self.class_pass is not None and spec.kind != "multihot":  # each query's class, or none (-1): all grade 0
            c["query_ids"] = c["query_labels"] if spec.kind == "class" else _ro(np.full(n, -1, dtype=np.int32))
        elif spec.kind == "class" and not self.stable:
            c["rel_segments"] = _ro(self.segments[rows.query_labels])
        elif spec.kind == "listed":
            c["rel_segments"] = _ro(np.zeros((n, 2), dtype=np.int64))  # no segment: all grade 0
        if self.stable:  # each query's number of relevant items sizes its scratch arrays
            if spec.kind == "class":
                c["n_relevant"] = self.class_sizes[rows.query_labels].astype(np.int64)
            elif spec.kind == "listed":
                c["n_relevant"] = np.diff(c["indptr"])
            else:  # multi-hot: counted by a histogram pass, block by block
                c["n_relevant"] = np.zeros(n, dtype=np.int64)
            c["order"], c["group_ptr"] = stable_groups(spec.kind, rows.query_labels, c["n_relevant"])
        return c

    def counts(self, c, hist, lo, hi):
        """hist[lo:hi] = counts by (distance, grade) of the chunk's queries lo..hi-1."""
        kind = self.spec.kind
        if kind == "multihot":
            hist_multihot(c["query_words"], self.db_words, c["label_words"], self.db_label_words, self.n_bits,
                          hist, lo, hi)
        elif self.class_pass is not None:
            self.class_pass(c["query_words"], c["query_ids"], self.db_words, self.db_labels, self.n_classes,
                            self.n_bits, hist, lo, hi)
        elif kind == "class":
            hist_segments_one_word(c["query_words"], self.hist_db_words, c["rel_segments"], self.n_bits, hist, lo, hi)
        else:
            hist_segments_one_word(c["query_words"], self.db_words, c["rel_segments"], self.n_bits, hist, lo, hi)
        self._move_listed(c, hist, lo, hi)

    def _move_listed(self, c, hist, lo, hi):
        """Listed relevance: every item was counted at grade 0; the listed ones move to their grades."""
        if self.spec.kind == "listed":
            move_relevant(c["query_words"], self.db_words, c["indptr"], c["indices"], c["grades"], hist, lo, hi)

    def splits_database(self, n_queries, n_threads):
        """Whether :meth:`counts_by_slices` counts ``n_queries`` queries on ``n_threads`` threads:
        a pass that gathers each tile's items by class (bit-sliced or tiled), too few queries a
        thread to pay for gathering every tile once per thread, a database of a tile a thread, and
        the threads' counts within HIST_BUDGET."""
        hist_bytes = n_queries * (self.n_bits + 1) * self.spec.n_grades * 8
        return (self.class_pass is not None and self.spec.kind != "multihot" and n_threads > 1
                and n_queries < _SPLIT_QUERIES * n_threads and len(self.db_words) >= _SPLIT_ALIGN * n_threads
                and (n_threads - 1) * hist_bytes <= HIST_BUDGET)

    def counts_by_slices(self, c, hist, n_threads):
        """hist = counts by (distance, grade) of all the chunk's queries, the database split into
        ``n_threads`` slices of whole tiles counted on a thread each, then summed (integers: the
        same counts whatever the split)."""
        n_db, n = len(self.db_words), len(hist)
        bounds = np.linspace(0, n_db // _SPLIT_ALIGN, n_threads + 1).astype(np.int64) * _SPLIT_ALIGN
        bounds[-1] = n_db
        parts = np.zeros((n_threads - 1, *hist.shape), dtype=np.int64)  # slice 0 counts into hist

        def count_slices(lo, hi):
            for s in range(lo, hi):
                rows = slice(bounds[s], bounds[s + 1])
                db_ids = self.db_labels[rows] if len(self.db_labels) else self.db_labels
                self.class_pass(c["query_words"], c["query_ids"], self.db_words[rows], db_ids, self.n_classes,
                                self.n_bits, hist if s == 0 else parts[s - 1], 0, n)

        run_blocks(count_slices, n_threads, n_threads)
        hist += parts.sum(axis=0)
        self._move_listed(c, hist, 0, n)

    def stable_quantities(self, c, hist, fin, quantities, scalars, err, lo, hi):
        """Counts and base quantities, ties in database index order, of the queries of groups
        lo..hi-1 (see :func:`stable_groups`): each batch of :meth:`stable_scans` finished in turn."""
        kind = KIND_CODES[self.spec.kind]
        scratch = _finish_scratch(0, kind, fin.gains)
        for scanned in self.stable_scans(c, hist, lo, hi):
            need = int(scanned[3].max(initial=0))  # the batch's most relevant items a query
            if len(scratch[0]) < need:  # grown, rarely: the largest groups come first
                scratch = _finish_scratch(need, kind, fin.gains)
            _finish_batch(fin, kind, *scanned, hist, quantities, scalars, err, *scratch)

    def stable_scans(self, c, hist, lo, hi):
        """The scans of the full stable pass over the groups lo..hi-1, in batches
        (:func:`stable_scan_batches`): each query's counts by distance and its relevant items'
        records. The scan and the finish are kernels of their own, so that a cold call compiles
        them side by side (:mod:`fasttie.finalize.cold_start`).

        Yields
        ------
        tuple
            (records, record_grades, record_start, n_found, counts, rows) of a batch, as
            :func:`.hamming_ties.finish_stable` takes them; valid until the next batch.
        """
        if self.spec.kind == "multihot":  # one query per group: its relevant items are counted first
            self.counts(c, hist, lo, hi)
            c["n_relevant"][lo:hi] = hist[lo:hi, :, 1:].sum(axis=(1, 2))
        yield from self.group_scans(c, lo, hi)

    def group_scans(self, c, lo, hi):
        """:meth:`stable_scans` of queries whose relevant items are known (c["n_relevant"])."""
        order, group_ptr = c["order"], c["group_ptr"]
        kind = KIND_CODES[self.spec.kind]
        vector = vector_sweeps(self.spec.kind, self.db_words.shape[1], len(order) * len(self.db_words))
        for batch in stable_scan_batches(order, group_ptr, c["n_relevant"], lo, hi, self.n_bits,
                                         n_db=len(self.db_words), vector=vector):
            first_group, slot_start, slot_width, sweeps, records, record_grades, record_start, n_found, counts = batch
            (stable_scan_lanes if vector else stable_scan)(
                c["query_words"], self.db_words, kind, c["query_labels"], self.db_labels, c["label_words"],
                self.db_label_words, c["indptr"], c["indices"], c["grades"], order, group_ptr, first_group,
                slot_start, slot_width, sweeps, records, record_grades, record_start, n_found, counts,
            )
            rows = order[group_ptr[first_group] : group_ptr[first_group] + len(n_found)]
            yield records, record_grades, record_start, n_found, counts, rows

    def count_chunk(self, c, hist, n_threads):
        """hist = counts of all the chunk's queries on ``n_threads`` threads: the database split
        where :meth:`splits_database`, else the queries in one block per thread (each block reads
        the database once)."""
        if self.splits_database(len(hist), n_threads):
            self.counts_by_slices(c, hist, n_threads)
        else:
            run_blocks(lambda lo, hi: self.counts(c, hist, lo, hi), len(hist), n_threads, granule=2,
                       blocks_per_thread=1)

    def near_quantities(self, c, hist, fin, quantities, scalars, err, lo, hi):
        """Base quantities with ties in database index order of queries lo..hi-1, counted
        (``hist``), whose metrics look at the top ``fin.depth`` ranks only: each batch of
        :meth:`near_scans` finished in turn."""
        tops, n_near = near_reach(hist[lo:hi], fin.depth)
        kind = KIND_CODES[self.spec.kind]
        scratch = _finish_scratch(int(n_near.max(initial=0)), kind, fin.gains)
        for scanned in self.near_scans(c, tops, n_near, lo):
            _finish_batch(fin, kind, *scanned, hist, quantities, scalars, err, *scratch, counted=True)

    def near_scans(self, c, tops, n_near, lo):
        """The records of the relevant items of queries lo, lo + 1, ... at distances up to
        ``tops`` (``n_near`` of them per query, :func:`near_reach`) in index order, in batches
        of whole pairs of queries of at most _BATCH_RECORDS records (:func:`.stable_top.near_scan`).

        Yields
        ------
        tuple
            (records, record_grades, record_start, n_found, counts, rows) of a batch, as
            :func:`.hamming_ties.finish_stable` takes them; valid until the next batch.
        """
        widths = n_near + 1  # a scan writes one record past the relevant ones
        ends, bounds, most = record_batches(widths, 2)
        records = np.empty(most, dtype=np.uint64)
        record_grades = np.empty(most, dtype=np.int64)
        for a, b in zip(bounds, bounds[1:]):
            record_start = ends[a:b] - widths[a:b] - (ends[a] - widths[a])
            n_found = np.empty(b - a, dtype=np.int64)
            counts = np.empty((b - a, self.n_bits + 1), dtype=np.uint64)
            near_scan(self.db_words.shape[1])(
                c["query_words"], self.db_words, KIND_CODES[self.spec.kind], c["query_labels"], self.db_labels,
                c["label_words"], self.db_label_words, c["indptr"], c["indices"], c["grades"], tops[a:b], lo + a,
                record_start, widths[a:b], records, record_grades, n_found, counts,
            )
            yield records, record_grades, record_start, n_found, counts, np.arange(lo + a, lo + b, dtype=np.int64)


class _Finalizer:
    """Metric values from counts: the tables every finalize call shares."""

    def __init__(self, metrics, n_db, n_grades, options, ready=None):
        self.metrics, self.n_db, self.options = metrics, n_db, options
        self.ready = ready  # called before the first finalize: a helper compiling its kernels (finalize.cold_start)
        self.walk = None  # the tie walk's address, taken at the first finalize (after the helper)
        self.plan = finalize_plan(metrics, options.ties, options.ap_denominator, n_db)
        # the ranks the stable passes order for the metrics of a ranked list; AP within a radius
        # takes its ranks from a pass of its own (:func:`radius_ranks`) or from those given
        self.depth = rank_depth([m for m in metrics if m.radius is None], n_db)
        self.radius_ap = max((m.radius for m in metrics if m.radius is not None and m.base == "AP"), default=None)
        self.gains = _ro(gain_table(options.gain, n_grades))
        # ERR (its own kernel: it needs each distance's grade counts) at the plan's ERR cutoffs
        if len(self.plan.err_cutoffs):
            check_err_grades(n_grades - 1, f"the {{relevance}} has grades up to {n_grades - 1}", "relevance")

    def buffers(self, n):
        """Quantities, scalars and ERR values of n queries."""
        return (np.empty((n, N_QUANTITIES, len(self.plan.cutoffs))), self.plan.new_scalars(n),
                np.empty((n, len(self.plan.err_cutoffs))))

    def quantities(self, hist, quantities, scalars, err, lo, hi):
        # the optional sums (bpref, IPrec, RBP) and the ratios in kernels of their own: a call compiles only what it
        # needs (AP@k over the retrieved items, the default: the ratios)
        plan = self.plan
        ties = TIE_CODES[self.options.ties]
        if self.walk is None:  # the first block (blocks of one call may run on several threads: same value)
            if self.ready is not None:  # a helper compiles the walk: the driver compiles here meanwhile (no queries)
                finalize_histograms(hist, self.gains, ties, *plan.arguments(), quantities, scalars, lo, lo,
                                    np.uint64(0))
                self.ready()
            self.walk = np.uint64(address_of(_kernel(plan, "histograms")))
        if WALK_DRIVER:
            finalize_histograms(hist, self.gains, ties, *plan.arguments(), quantities, scalars, lo, hi, self.walk)
        else:  # a helper's made-up call: what follows (ERR, the spread) compiles on zeros
            quantities[lo:hi] = 0.0
            scalars[lo:hi] = 0.0
        if len(plan.err_cutoffs):
            err_histograms(hist, ties, plan.err_cutoffs, err, lo, hi)

    def values(self, quantities, scalars, hist, err, ranked=None):
        """Per-query values of one block; ``ranked`` the block's (indptr, ranks, grades) of the
        relevant items in a fixed order (ties="stable"), for AP within a radius."""
        err_values = {m.name: err[:, self.plan.err_index(m)] for m in self.metrics if m.base == "ERR"}
        ties, ap_denominator = self.options.ties, self.options.ap_denominator
        radius = radius_values(self.metrics, hist, scalars[:, TOTAL_RELEVANT], ties=ties,
                               ap_denominator=ap_denominator, ranked=ranked)
        return metric_values(self.metrics, quantities, scalars, self.n_db, ap_denominator, self.options.empty,
                             radius_values=radius, err=err_values)


def cold_tie_walk(metrics, options, n_db):
    """The tie walk's kernel (a numba dispatcher, which :func:`.hamming_ties.finalize_histograms`
    calls through its address) that finalizing counts under ``options`` (ties not "stable") runs for
    ``metrics``, the variant their plan picks; None where a walk already ran in this process (a
    warm call: its histogram pass is most likely compiled too, so a helper would have nothing to
    overlap; and no plan is built for nothing)."""
    walks = (finalize_histograms, finalize_ties, finalize_ties_ratios, finalize_ties_optional)
    if any(getattr(kernel, "signatures", True) for kernel in walks):  # a test's wrapper of a kernel counts as run
        return None
    return _kernel(finalize_plan(metrics, options.ties, options.ap_denominator, n_db), "histograms")


def _finish_scratch(n, kind, gains):
    """The finish kernel's scratch for up to n relevant items a query (ranks, grades, gains, all
    True flags), allocated once per block of groups; for class labels every grade is 1, filled
    here once (the kernel does not write them)."""
    grades = np.ones(n) if kind == KIND_CODES["class"] else np.empty(n)
    item_gains = np.full(n, gains[1] if len(gains) > 1 else 0.0) if kind == KIND_CODES["class"] else np.empty(n)
    return np.empty(n, dtype=np.int64), grades, item_gains, np.ones(n, dtype=np.bool_)


def _finish_batch(fin, kind, records, record_grades, record_start, n_found, counts, rows, hist, quantities, scalars,
                  err, ranks, grades, item_gains, relevant, counted=False):
    """The finish kernel of the stable passes (:func:`.hamming_ties.finish_stable`) over one
    batch of scans, ``counted`` for the near scans (a made-up batch compiles it:
    :func:`compile_stable_finish`)."""
    plan = fin.plan
    _kernel(plan, "stable")(
        kind, records, record_grades, record_start, n_found, counts, counted, rows, fin.depth, hist, fin.gains,
        *plan.arguments(fixed=True), quantities, scalars, plan.err_cutoffs, err, ranks, grades, item_gains, relevant,
    )


def full_stable_pass(metrics, spec, n_db, n_bits):
    """Whether ``ties="stable"`` takes the full pass (every item ranked in one scan) for
    ``metrics`` (parsed, the curves' included) over codes of ``n_bits``: a metric reads the whole
    list, or most queries share sweeps and the near pass is the slower: codes of more than two
    words (their near pass goes one query and one code at a time), or a deepest cutoff past
    1/:data:`NEAR_SHARE` of the database (the near items and their ties, which the near pass
    records one by one, cost more than the sweeps' counting of every item)."""
    depth = rank_depth([m for m in metrics if m.radius is None], n_db)
    vector_near = n_bits <= 128 and depth * NEAR_SHARE <= n_db
    return depth >= n_db or (swept_share(spec) >= 0.5 and not vector_near)


def cold_stable_kernels(metrics, options, spec, n_db, n_bits):
    """(scan, finish, near): the kernels of the stable pass (numba dispatchers) that a call of
    ``metrics`` (parsed, the curves' included) under ``options`` runs, the scan of the full pass
    or, ``near``, of the near items (:func:`.stable_top.near_scan`, after the counts); None where
    the call runs another pass, or where a finish ran in this process already (a warm call)."""
    if not options.stable or any(getattr(k, "signatures", True) for k in (finish_stable, finish_stable_optional)):
        return None
    near = not full_stable_pass(metrics, spec, n_db, n_bits)
    finish = _kernel(finalize_plan(metrics, options.ties, options.ap_denominator, n_db), "stable")
    vector = vector_sweeps(spec.kind, (n_bits + 63) // 64, len(spec.query_labels) * n_db)
    full = stable_scan_lanes if vector else stable_scan
    return near_scan((n_bits + 63) // 64) if near else full, finish, near


def vector_sweeps(kind, n_words, pairs):
    """Whether the full stable pass may sweep queries of one class as vector lanes
    (:mod:`fasttie._kernels.stable_lanes`): class labels and codes of one word where the histogram
    pass is bit-sliced, and a pass of at least :data:`LANES_PAIRS` (query, item) pairs; it then
    runs the ``stable_scan_lanes`` kernel."""
    return kind == "class" and n_words == 1 and pairs >= LANES_PAIRS and bitsliced_pass()


def compile_stable_finish(metrics, options, *, n_db, n_bits, n_grades, kind):
    """Compile the stable passes' finish kernel as a call of ``metrics`` (parsed, the curves'
    included) under ``options`` on a database of ``n_db`` codes of ``n_bits`` runs it (the
    variant and its one signature), by finishing a made-up scan of one query: a cold call does
    this while a helper compiles the scan (:mod:`fasttie.finalize.cold_start`)."""
    fin = _Finalizer(metrics, n_db, n_grades, options)
    quantities, scalars, err = fin.buffers(1)
    counts = np.zeros((1, n_bits + 1), dtype=np.uint64)
    counts[0, 0] = n_db  # every item at distance 0, none relevant
    zeros = np.zeros(1, dtype=np.int64)
    _finish_batch(fin, KIND_CODES[kind], np.zeros(1, dtype=np.uint64), np.ones(1, dtype=np.int64), zeros, zeros,
                  counts, zeros, np.zeros((1, n_bits + 1, n_grades), dtype=np.int64), quantities, scalars, err,
                  *_finish_scratch(1, KIND_CODES[kind], fin.gains))


def compile_walk_driver(metrics, *, n_db, n_bits, n_grades):
    """Compile the tie walk's driver (:func:`.hamming_ties.finalize_histograms`) for counts of
    ``n_bits`` and ``n_grades`` as ``metrics`` (names; average ties) run it, by calling it on no
    queries; the walk, which it calls through its address, is not compiled: what ``fasttie
    demo``'s helper compiles first, while the call compiles the counting pass."""
    fin = _Finalizer(hashing_metrics(metrics), n_db, n_grades, HammingOptions())
    quantities, scalars, _ = fin.buffers(1)
    hist = np.zeros((1, n_bits + 1, n_grades), dtype=np.int64)
    finalize_histograms(hist, fin.gains, TIE_CODES["average"], *fin.plan.arguments(), quantities, scalars, 0, 0,
                        np.uint64(0))


def compile_stable_scan(kind, n_bits, near=False):
    """Compile the scan kernel of the full stable pass, or, ``near``, the counting pass and the
    scan of the near items (:meth:`_DatabasePass.near_scans`), for ``kind`` relevance ("class",
    "multihot" or "listed") and codes of ``n_bits`` (the counting pass depends on the width) by
    scanning made-up codes; for the full pass of multi-hot labels, the counting pass before it:
    what a helper process runs while a cold call compiles the finish
    (:mod:`fasttie.finalize.cold_start`)."""
    n = GROUP_MIN  # class labels: one sweep of a group
    zeros = np.zeros((n, n_bits), dtype=np.uint8)
    query_codes, db_codes = pack_pair(zeros, zeros)
    if kind == "class":  # the database's classes out of order: the portable pass's class sort scatters them
        spec = make_relevance(np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64)[::-1] % 2, None, n, n)
    elif kind == "multihot":
        spec = make_relevance(np.ones((n, 2), dtype=np.int64), np.ones((n, 2), dtype=np.int64), None, n, n)
    else:
        spec = make_relevance(None, None, (np.arange(n + 1), np.arange(n), np.ones(n, dtype=np.int64)), n, n)
    database = _DatabasePass(db_codes, spec, stable=not near, n_threads=1)
    c = database.chunk(query_codes.words, spec.rows(0, n))
    hist = np.zeros((n, db_codes.n_bits + 1, spec.n_grades), dtype=np.int64)
    if near:
        database.counts(c, hist, 0, n)
        scans = database.near_scans(c, *near_reach(hist, 1), 0)
    else:
        scans = database.stable_scans(c, hist, 0, len(c["group_ptr"]) - 1)
    for _ in scans:
        pass


def stable_groups(kind, query_labels, n_relevant):
    """The query groups of the full stable pass: queries of one class share sweeps of the
    database, up to GROUP at a time, while their records fit in _GROUP_SCRATCH; other queries
    (multi-hot or listed relevance, large classes) go one by one. The largest groups come first:
    a sweep costs as much as several queries alone, and threads take blocks of groups as they
    finish, so the blocks left last are the cheap ones. (Not more, smaller blocks: each block
    allocates its scratch, up to _GROUP_SCRATCH, and a 20M database's 128 MB of records cost
    their page faults again in every block.)

    Returns
    -------
    order : ndarray of int64, shape (n,)
        The queries, those of a group consecutive.
    group_ptr : ndarray of int64, shape (n_groups + 1,)
        Group g is ``order[group_ptr[g]:group_ptr[g + 1]]``.
    """
    n = len(n_relevant)
    capacity = int(n_relevant.max(initial=0)) + 1
    if kind != "class" or n == 0 or GROUP * capacity * 8 > _GROUP_SCRATCH:
        return np.arange(n, dtype=np.int64), np.arange(n + 1, dtype=np.int64)
    order = np.argsort(query_labels, kind="stable").astype(np.int64)
    labels = query_labels[order]
    new_class = np.r_[True, labels[1:] != labels[:-1]]
    class_start = np.flatnonzero(new_class)[np.cumsum(new_class) - 1]  # where each query's class run starts
    group_start = np.flatnonzero((np.arange(n) - class_start) % GROUP == 0)
    group_stop = np.r_[group_start[1:], n]
    sizes = group_stop - group_start
    by_size = np.argsort(-sizes, kind="stable")
    order = np.concatenate([order[group_start[g]:group_stop[g]] for g in by_size])
    return order, np.r_[0, np.cumsum(sizes[by_size])].astype(np.int64)


def group_sweeps(sizes, relevant, n_db, vector):
    """How each group of the full stable pass is scanned (:data:`.hamming_ties.ONE_BY_ONE`,
    ``SWEPT`` or ``LANES``), from its queries and its relevant items: with ``vector`` (one-word
    codes where the histogram pass is bit-sliced) groups of at least :data:`LANES_MIN` queries
    whose relevant items are at most 1/:data:`LANES_SHARE` of the database take the vector sweep
    (:mod:`fasttie._kernels.stable_lanes`, which counts at the bit-sliced pass's rate but reads
    each relevant item's count out of bit planes); other groups of at least GROUP_MIN queries the
    sweep with its counts in memory; the rest go one query at a time."""
    sweeps = np.where(sizes >= GROUP_MIN, SWEPT, ONE_BY_ONE)
    if vector:
        sweeps[(sizes >= LANES_MIN) & (np.asarray(relevant) * LANES_SHARE <= n_db)] = LANES
    return sweeps.astype(np.int64)


def stable_scan_batches(order, group_ptr, n_relevant, lo, hi, n_bits, *, n_db=0, vector=False):
    """The groups lo..hi-1 of the full stable pass in batches of consecutive groups of at most
    _BATCH_RECORDS records (a batch holds one group at least), with the batch's buffers.

    A swept group's slot holds GROUP rows (rows past its queries repeat the first), a group of
    single scans one row per query; a row has room for its queries' relevant items and one more
    (a scan of class labels writes every item's record). The buffers of the records are
    allocated once, the size of the largest batch, and reused (the batches follow each other).
    How each group is scanned is :func:`group_sweeps`' choice, for a database of ``n_db`` items
    and, with ``vector``, the vector sweep allowed.

    Yields
    ------
    tuple
        (first group, slot_start, slot_width, sweeps, records, record_grades, record_start,
        n_found, counts): the arguments of :func:`.hamming_ties.stable_scan` for the batch.
    """
    if hi <= lo:
        return
    sizes = np.diff(group_ptr[lo : hi + 1])
    positions = group_ptr[lo:hi] - group_ptr[lo]
    widths = np.maximum.reduceat(n_relevant[order[group_ptr[lo] : group_ptr[hi]]], positions) + 1
    sweeps = group_sweeps(sizes, widths - 1, n_db, vector)
    slots = np.where(sweeps != ONE_BY_ONE, GROUP, sizes) * widths
    ends, bounds, most = record_batches(slots, 1)
    records = np.empty(most, dtype=np.uint64)
    record_grades = np.empty(most, dtype=np.int64)  # written by single scans only: pages a sweep leaves untouched
    for a, b in zip(bounds, bounds[1:]):
        slot_start = ends[a:b] - slots[a:b] - (ends[a] - slots[a])
        n = int(group_ptr[lo + b] - group_ptr[lo + a])
        yield (lo + a, slot_start, widths[a:b], sweeps[a:b], records, record_grades, np.empty(n, dtype=np.int64),
               np.empty(n, dtype=np.int64), np.empty((n, n_bits + 1), dtype=np.uint64))


def record_batches(slots, granule):
    """Batches of consecutive slots of records, as many as fit in _BATCH_RECORDS, in whole
    multiples of ``granule`` slots (one at least; the last may be short): (ends, bounds, most),
    the slots' cumulative ends, batch b the slots bounds[b]..bounds[b + 1] - 1, and the records
    of the largest batch."""
    ends = np.cumsum(slots)
    bounds, most = [0], 0
    while bounds[-1] < len(slots):
        start = bounds[-1]
        taken = ends[start] - slots[start]  # records before this batch
        fit = int(np.searchsorted(ends, taken + _BATCH_RECORDS, side="right")) // granule * granule
        bounds.append(min(max(fit, start + granule), len(slots)))
        most = max(most, int(ends[bounds[-1] - 1] - taken))
    return ends, bounds, most


def near_reach(hist, depth):
    """(tops, n_near) of queries with counts ``hist`` (n, n_bits + 1, n_grades): the distance
    that holds rank ``depth`` >= 1 (as :func:`.hamming_ties.top_distance`: the last distance with
    fewer than ``depth`` items before it), as uint64, and the relevant items up to it (int64)."""
    at_distance = hist.sum(axis=2)
    before = np.cumsum(at_distance, axis=1) - at_distance
    tops = (before < depth).sum(axis=1) - 1
    relevant_up_to = np.cumsum(hist[:, :, 1:].sum(axis=2), axis=1)
    return tops.astype(np.uint64), relevant_up_to[np.arange(len(hist)), tops].astype(np.int64)


def class_sizes(spec):
    """Database items of each class (class labels): every query's relevant items."""
    return np.bincount(spec.db_labels, minlength=spec.n_classes)


def swept_share(spec):
    """The share of the queries that the full stable pass sweeps in groups (see :func:`stable_groups`)."""
    if spec.kind != "class" or len(spec.query_labels) == 0:
        return 0.0
    _, group_ptr = stable_groups(spec.kind, spec.query_labels, class_sizes(spec)[spec.query_labels])
    sizes = np.diff(group_ptr)
    return sizes[sizes >= GROUP_MIN].sum() / len(spec.query_labels)


def rank_depth(metrics, n_db):
    """The ranks any of ``metrics`` (parsed) looks at: n_db when one needs the whole list (no
    cutoff: AP, nDCG, Rprec, bpref, IPrec, ...) or AP within a radius (whose depth, the items
    within the radius, differs by query), else the largest cutoff (at least 1); the other radius
    metrics need the counts only. ties="stable" orders only the items that can reach it."""
    ranked = [m for m in metrics if m.radius is None]
    if any(m.k is None for m in ranked) or any(m.radius is not None and m.base == "AP" for m in metrics):
        return n_db
    return min(max((m.k for m in ranked), default=1), n_db)


def stable_depth(metrics, curves, n_db, n_bits):
    """The ranks a stable pass over parts orders for ``metrics`` (parsed, :func:`hashing_metrics`)
    and the ``curves`` option: :func:`rank_depth` of both (every back end asks it this way)."""
    curve_metrics, _ = metrics_for_curves(curves, n_db, n_bits)
    return rank_depth(list(metrics) + curve_metrics, n_db)


def radius_values(metrics, hist, total, *, ties="average", ap_denominator="retrieved", ranked=None):
    """Values of the radius metrics (``P(radius=r)``, ``R(radius=r)``, ``F1(radius=r)``,
    ``AP(radius=r)``, ``NumRet(radius=r)``) of one block of queries.

    Within radius r means distance <= r (r past n_bits is the whole list). The radius cuts
    only between ties (the items at one distance are all within it or all outside), so the
    items and the relevant items within it are the same in every order inside ties: P, R and F1
    = 2 P R / (P + R) = 2 hits / (k + R) are exact for every tie mode. AP within r is AP of the
    ranking cut after the k items within r: the sum of the precisions at the relevant ranks
    within r, which the tie mode decides (averaged in closed form over each distance's orders,
    by grade, or in database index order from ``ranked``), over ``ap_denominator``: the hits
    within r ("retrieved", DeepHash's mAP within a radius), R ("total") or min(k, R) ("min").
    Nothing within r (or nothing relevant there) gives P = R = F1 = AP = 0.

    Parameters
    ----------
    metrics : list of Metric
        Metrics of the call; those without a radius are passed over.
    hist : ndarray of int64, shape (n, n_bits + 1, n_grades)
        Items by (distance, grade) of each query; grade > 0 is relevant.
    total : ndarray of float64, shape (n,)
        Relevant items of each query (the finalizer's ``TOTAL_RELEVANT``).
    ties : {"average", "optimistic", "pessimistic", "stable"}
    ap_denominator : {"retrieved", "total", "min"}
    ranked : tuple of ndarray of int64, optional
        (indptr, ranks, grades) of each query's relevant items, ties in database index order
        (1-based ranks; at least those within the largest radius of an AP); needed for
        ``AP(radius=r)`` under ``ties="stable"`` only.

    Returns
    -------
    dict of name -> (ndarray of float64 shape (n,), ndarray of float64 shape (n,))
        Per metric its values and the chance that nothing relevant is within the radius (0 or 1,
        for ``empty="skip_missed"``): the ``radius_values`` of :func:`fasttie.finalize.values.metric_values`.
    """
    radius_metrics = [m for m in metrics if m.radius is not None]
    if not radius_metrics:
        return {}
    # items and relevant items within each radius: cumulative over distances, once
    items_within = hist.sum(axis=2).cumsum(axis=1)
    relevant_within = hist[:, :, 1:].sum(axis=2).cumsum(axis=1)
    ap_sums = _radius_ap_sums(hist, ties, ranked) if any(m.base == "AP" for m in radius_metrics) else None
    values = {}
    for metric in radius_metrics:
        r = min(metric.radius, hist.shape[1] - 1)
        hits, within = relevant_within[:, r], items_within[:, r]
        missed = (hits == 0).astype(np.float64)
        if metric.base == "NumRet":
            value = within.astype(np.float64)
        elif metric.base == "P":
            value = divide(hits, within)
        elif metric.base == "R":
            value = divide(hits, total)
        elif metric.base == "F1":  # per query, then averaged: 2 P R / (P + R), 0 when P + R = 0
            value = divide(2.0 * hits, within + total)
        else:  # AP
            denominator = {"retrieved": hits, "total": total, "min": np.minimum(within, total)}[ap_denominator]
            value = divide(ap_sums[:, r], denominator)
        values[metric.name] = (value, missed)
    return values


def _radius_ap_sums(hist, ties, ranked):
    """(n, n_bits + 1): per query and radius the sum of the precisions at the relevant ranks within it."""
    sums = np.empty(hist.shape[:2])
    if ties == "stable":
        if ranked is None:
            raise InputError("AP within a radius under ties='stable' needs the ranks of the relevant items")
        indptr, ranks, grades = (_ro(np.ascontiguousarray(a, dtype=np.int64)) for a in ranked)
        radius_ap_sums_ranked(_ro(hist), indptr, ranks, grades, sums, 0, len(hist))
    else:
        radius_ap_sums(_ro(hist), TIE_CODES[ties], sums, 0, len(hist))
    return sums


def radius_ranks(database, c, hist, limit, n_threads):
    """(indptr, ranks, grades) of each query's relevant items at distances <= ``limit``, ties in
    database index order (1-based ranks over the whole database): what AP within a radius needs
    under ``ties="stable"``, from one more pass over the database that records the items within it.

    ``database`` is the call's :class:`_DatabasePass`, ``c`` its chunk's inputs and ``hist`` the
    chunk's counts (n, n_bits + 1, n_grades).
    """
    items = hist.sum(axis=2)
    first = np.cumsum(items, axis=1) - items  # items at smaller distances: one part
    n_relevant = hist[:, : limit + 1, 1:].sum(axis=(1, 2))
    return _part_ranks(database, c, first, n_relevant, np.full(len(hist), limit, dtype=np.uint64), n_threads)


def _part_ranks(database, c, first, n_relevant, tops, n_threads):
    """(indptr, ranks, grades) int64 of the relevant items of a database (or part of one, whose
    items ``first`` ranks before its first item at each distance) at distances up to ``tops``
    (per query; None: every item), each query's ranks ascending: the scans of the stable passes
    (the full pass's, with its sweeps of queries of one class, for every item; else the near
    scan), their records turned into ranks (:func:`.hamming_ties.ranks_of_records`). ``database``
    is a :class:`_DatabasePass` (stable for every item), ``c`` its chunk's inputs."""
    indptr = np.concatenate([[0], np.cumsum(n_relevant)]).astype(np.int64)
    ranks = np.empty(indptr[-1], dtype=np.int64)
    grades = np.empty(indptr[-1], dtype=np.int64)
    first = _ro(np.ascontiguousarray(first, dtype=np.int64))
    offsets = _ro(indptr)
    kind = KIND_CODES[database.spec.kind]

    def placed(scans):
        for records, record_grades, record_start, n_found, _, rows in scans:
            if not ranks_of_records(kind, records, record_grades, record_start, n_found, rows, first, offsets, ranks,
                                    grades):
                raise RuntimeError("a stable scan recorded another number of relevant items than the counts hold")

    n = len(first)
    if tops is None:
        c["n_relevant"] = np.asarray(n_relevant, dtype=np.int64)
        run_blocks(lambda lo, hi: placed(database.group_scans(c, lo, hi)), len(c["group_ptr"]) - 1, n_threads)
    else:
        tops = np.asarray(tops, dtype=np.uint64)
        n_near = np.asarray(n_relevant, dtype=np.int64)
        run_blocks(lambda lo, hi: placed(database.near_scans(c, tops[lo:hi], n_near[lo:hi], lo)), n, n_threads,
                   granule=NEAR_QUERIES, blocks_per_thread=1)
    return indptr, ranks, grades


def _chunk_size(n_queries, n_bits, n_grades, block=None):
    """Queries per chunk: at most HIST_BUDGET bytes of counts, whole pairs, the progress block."""
    chunk = max(2, min(n_queries, HIST_BUDGET // ((n_bits + 1) * n_grades * 8)) // 2 * 2)
    return chunk if block is None else min(chunk, block)


def evaluate_chunks(
    query_codes, db_codes, spec, metrics, options, n_threads, bar=None, block=None, on_counts=None, ready=None,
):
    """(per_query, n_empty) of ``metrics`` under ``options`` (a :class:`HammingOptions`), the
    database in memory, in chunks of queries whose counts fit in HIST_BUDGET."""
    n_queries, n_db, n_bits = query_codes.n, db_codes.n, db_codes.n_bits
    fin = _Finalizer(metrics, n_db, spec.n_grades, options, ready)
    stable = options.stable
    # stable order at every rank: one pass in index order; at the top ranks only: the counts, then a pass
    # that grades only the items near enough to reach them, unless the full pass's sweeps are the cheaper
    # (full_stable_pass)
    full_stable = stable and full_stable_pass(metrics, spec, n_db, n_bits)
    database = _DatabasePass(db_codes, spec, stable=full_stable, n_threads=n_threads)
    per_query = {m.name: np.empty(n_queries) for m in metrics}
    n_empty = 0
    chunk = _chunk_size(n_queries, n_bits, spec.n_grades, block)  # one more pass of the kernels per block at most
    started = time.perf_counter()
    for start in range(0, n_queries, chunk):
        stop = min(start + chunk, n_queries)
        c = database.chunk(query_codes.words[start:stop], spec.rows(start, stop))
        hist = np.zeros((stop - start, n_bits + 1, spec.n_grades), dtype=np.int64)
        quantities, scalars, err = fin.buffers(stop - start)

        def block_pass(lo, hi):
            """Counts, then base quantities, of the chunk's queries lo..hi-1 (one thread); for the
            full stable pass, of its query groups lo..hi-1."""
            if full_stable:
                database.stable_quantities(c, hist, fin, quantities, scalars, err, lo, hi)
            else:
                database.counts(c, hist, lo, hi)
                fin.quantities(hist, quantities, scalars, err, lo, hi)

        if full_stable:  # groups of uneven cost, the largest first (see stable_groups)
            run_blocks(block_pass, len(c["group_ptr"]) - 1, n_threads)
        elif stable:  # the counts as ties="average" takes them, then the near items, a block of queries a thread
            database.count_chunk(c, hist, n_threads)
            run_blocks(lambda lo, hi: database.near_quantities(c, hist, fin, quantities, scalars, err, lo, hi),
                       stop - start, n_threads, granule=NEAR_QUERIES, blocks_per_thread=1)
        elif database.splits_database(stop - start, n_threads):
            database.counts_by_slices(c, hist, n_threads)
            run_blocks(lambda lo, hi: fin.quantities(hist, quantities, scalars, err, lo, hi), stop - start, n_threads)
        else:  # queries of equal cost: one block per thread reads the database once
            run_blocks(block_pass, stop - start, n_threads, granule=2, blocks_per_thread=4 if stable else 1)
        ranked = None
        if stable and fin.radius_ap is not None:  # AP within a radius: the ranks within it
            ranked = radius_ranks(database, c, hist, min(fin.radius_ap, n_bits), n_threads)
        values, chunk_empty = fin.values(quantities, scalars, hist, err, ranked)
        if on_counts is not None:  # spread=True reads the same counts (fasttie.finalize.spread)
            on_counts(start, stop, hist, n_threads)
        n_empty += int(chunk_empty.sum())
        for name, v in values.items():
            per_query[name][start:stop] = v
        if bar is not None:
            elapsed = max(time.perf_counter() - started, 1e-9)
            bar.set_postfix_str(f"{stop * n_db / elapsed:.3g} pairs/s", refresh=False)
            bar.update(stop - start)
    check_empty_policy(options.empty, n_empty, n_queries)
    return per_query, n_empty


def counts_of(queries, database, query_labels=None, db_labels=None, *, relevance=None, n_threads=None):
    """(counts, n_bits, relevance kind) of a database (or shard), the parts of a TieStats:
    see :func:`fasttie.tie_stats`."""
    query_codes, db_codes = pack_pair(queries, database)
    n_queries, n_db, n_bits = query_codes.n, db_codes.n, db_codes.n_bits
    spec = make_relevance(query_labels, db_labels, relevance, n_queries, n_db)
    database_pass = _DatabasePass(db_codes, spec, stable=False, n_threads=n_threads)
    counts = np.zeros((n_queries, n_bits + 1, spec.n_grades), dtype=np.int64)
    c = database_pass.chunk(query_codes.words, spec.rows(0, n_queries))
    database_pass.count_chunk(c, counts, resolve_threads(n_threads, n_queries * n_db))
    return counts, n_bits, spec.kind


def shard_ranks(queries, database, query_labels, db_labels, relevance, first, n_relevant, n_threads, limits=None):
    """Global stable ranks and grades of one shard's relevant items (see :mod:`fasttie.dask`).

    first : (n_queries, n_bits + 1) int64, items ranked before the shard's first item at each
    distance; n_relevant : (n_queries,) int64, the shard's relevant items per query (at the
    distances ranked); limits : (n_queries,) int, the largest distance to rank per query (the
    bounded pass of metrics with cutoffs only, see :func:`rank_depth`), or None for every item.
    Returns (indptr, ranks, grades) int64, each query's items in rank order.
    """
    query_codes, db_codes = pack_pair(queries, database)
    spec = make_relevance(query_labels, db_labels, relevance, query_codes.n, db_codes.n)
    every_item = limits is None or bool(np.all(np.asarray(limits) >= db_codes.n_bits))
    database_pass = _DatabasePass(db_codes, spec, stable=True, n_threads=n_threads)
    c = database_pass.chunk(query_codes.words, spec.rows(0, query_codes.n))
    return _part_ranks(database_pass, c, first, n_relevant, None if every_item else limits,
                       resolve_threads(n_threads, query_codes.n * db_codes.n))


def hashing_metrics(metrics):
    """Parsed metrics that Hamming ranking computes (:mod:`fasttie.metrics.doors`)."""
    parsed = parse_metrics(metrics)
    check_door(parsed, HAMMING)
    return parsed


def result_from_counts(stats, metrics, options, *, n_threads, ranked=None):
    """Result of ``metrics`` under ``options`` (a :class:`HammingOptions`) from TieStats: see
    :meth:`fasttie.TieStats.finalize`. With ``ties="stable"``, ``ranked`` = (indptr, ranks, grades): every query's relevant items with
    their global ranks in database index order, ascending (a sharded stable pass)."""
    if options.stable != (ranked is not None):
        raise InputError("ties='stable' needs the ranks of the relevant items (ranked=...), and only it uses them")
    counts = stats.counts
    if stats.n_queries == 0 or stats.n_db == 0:
        raise InputError("tie statistics hold no query or no database item; nothing to finalize")

    def blocks():
        chunk = _chunk_size(stats.n_queries, stats.n_bits, counts.shape[2])
        for start in range(0, stats.n_queries, chunk):
            stop = min(start + chunk, stats.n_queries)
            hist = np.ascontiguousarray(counts[start:stop], dtype=np.int64)
            if not hist.flags.writeable:  # one kernel signature: the histogram pass writes its counts
                hist = hist.copy()
            if ranked is None:
                yield hist, None
            else:
                indptr, ranks, grades = ranked
                yield hist, (indptr[start : stop + 1] - indptr[start], ranks[indptr[start] : indptr[stop]],
                             grades[indptr[start] : indptr[stop]])

    return result_from_blocks(blocks(), stats.n_queries, stats.n_db, stats.n_bits, counts.shape[2], stats.relevance,
                              metrics, options, n_threads=n_threads)


def result_from_blocks(blocks, n_queries, n_db, n_bits, n_grades, relevance, metrics, options, *, n_threads):
    """Result of ``metrics`` under ``options`` (a :class:`HammingOptions`) from the counts of
    consecutive blocks of queries.

    ``blocks`` yields ``(hist, ranked)`` in query order: ``hist`` (n, n_bits + 1, n_grades) int64,
    writable, the block's counts; ``ranked`` None, or with ``ties="stable"`` the block's
    (indptr, ranks, grades) as in :func:`result_from_counts`. Memory stays one block's (the GPU
    path streams blocks of queries through this).
    """
    parsed = hashing_metrics(metrics)
    all_metrics, grid = metrics_with_curves(parsed, options.curves, n_db, n_bits)
    fin = _Finalizer(all_metrics, n_db, n_grades, options)
    per_query = {m.name: np.empty(n_queries) for m in all_metrics}
    n_empty = 0
    start = 0
    for hist, ranked in blocks:
        stop = start + len(hist)
        threads = resolve_threads(n_threads, len(hist) * (n_bits + 1) * n_grades)
        quantities, scalars, err = fin.buffers(len(hist))
        if ranked is None:
            run_blocks(lambda lo, hi: fin.quantities(hist, quantities, scalars, err, lo, hi), len(hist), threads)
        else:
            local, rank_part, grade_part = (_ro(np.asarray(a, dtype=np.int64)) for a in ranked)
            plan = fin.plan
            kernel = _kernel(plan, "ranked")
            run_blocks(lambda lo, hi: kernel(
                hist, local, rank_part, grade_part, fin.gains, *plan.arguments(fixed=True), quantities, scalars,
                plan.err_cutoffs, err, lo, hi,
            ), len(hist), threads)
            ranked = (local, rank_part, grade_part)
        values, chunk_empty = fin.values(quantities, scalars, hist, err, ranked)
        n_empty += int(chunk_empty.sum())
        for name, v in values.items():
            per_query[name][start:stop] = v
        start = stop
    check_empty_policy(options.empty, n_empty, n_queries)
    settings = options.settings(n_db, n_bits, relevance)
    return hashing_result(parsed, all_metrics, per_query, n_empty, n_queries, settings, grid).keyed_as(
        asked_names(metrics, diversity=False))
