"""The Hamming passes on an NVIDIA GPU (numba-cuda): the same counts and ranks, so the same metrics.

Everything fasttie reports for a Hamming ranking comes from per-query counts of database items
by (Hamming distance, grade) (:class:`fasttie.TieStats`) and, for ``ties="stable"``, the
global ranks of the relevant items in database index order. This module computes both on the
GPU (kernels in :mod:`fasttie._kernels.cuda`, device arrays in :mod:`fasttie._device`); the
finalizers are the CPU code every other path uses, so ``ft.evaluate(..., device="cuda")`` gives
bitwise the results of the CPU (counts and ranks are integers). ``ft.search(...,
device="cuda")`` takes the same rank pass.

Inputs: numpy arrays (copied to the device once per call; a database too large for the free
device memory goes in chunks), or arrays already on the GPU, without a copy: anything with
``__cuda_array_interface__`` (CuPy arrays, torch CUDA tensors, numba device arrays), also as
:class:`fasttie.PackedCodes` built from them by :func:`fasttie.pack_codes`. Labels on the GPU
are read back to the host (they are small next to the codes). Queries go in blocks whose device
memory fits; when the device runs out of memory anyway, the block is halved and tried again.

Several Python threads may call it at once (the CPU path's threading model), and its kernels
are cached on disk like the CPU's, so a new process loads them instead of compiling.

Needs the optional extra ``fasttie[cuda]`` (``numba-cuda``); nothing CUDA is imported unless a
call asks for the GPU. The CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) runs the same kernels on
a CPU-only machine, which is how the tests check them.
"""

from __future__ import annotations

import numpy as np

from .._device import grid, launch, require_gpu, to_device
from ..errors import InputError
from .engine import hashing_metrics, result_from_blocks, stable_depth
from .stable import InProcess, rank_limits, ranks_by_query, relevant_ranked

__all__ = ["counts", "evaluate", "knn", "radius_search"]

_BLOCKS_PER_SM = 8  # blocks of the histogram pass per multiprocessor: enough to hide latency
_RANK_BLOCKS_PER_SM = 8  # the same for calls with a rank pass (32 measured no faster on an H100)
_MIN_SPLIT = 2048  # database items per block at least (its counters are written once per block)
_QUERY_BYTES = 256 << 20  # device memory per block of queries for counters (halved on out-of-memory)
_RANK_BYTES = 1 << 30  # device memory for the ranks of one block of queries (ties="stable")


class _RanksTooLarge(Exception):
    """A block of queries whose stable ranks would pass _RANK_BYTES: retried in halves, like out-of-memory."""


def _is_out_of_memory(error):
    return isinstance(error, _RanksTooLarge) or "OUT_OF_MEMORY" in str(error) or getattr(error, "code", None) == 2


def multiprocessors(cuda):
    """Multiprocessors of the current GPU; 0 in the simulator (which runs one block at a time)."""
    try:
        return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    except Exception:  # the simulator has no such attribute
        return 0


class _ChunkTooLarge(Exception):
    """A database chunk did not fit in the device memory: the chunks are halved and the block retried."""


class _Pass:
    """Database items ``lo..hi-1`` (the whole database, or one chunk of it) on the device, and the
    passes over them for blocks of queries.

    ``split_size`` (database items per block of the grid) is chosen from the multiprocessor
    count unless given (the tests give small ones to cross many splits).
    """

    def __init__(self, db_codes, spec, n_bits, split_size=None, lo=0, hi=None):
        self.cuda = require_gpu()  # before the kernels' module imports numba.cuda: the error says how to install
        self.k = k = _kernels()
        hi = db_codes.n if hi is None else hi
        self.first_item, self.n_db, self.n_bits, self.spec = lo, hi - lo, n_bits, spec
        self.kind = {"class": k.CLASS, "multihot": k.MULTIHOT}.get(spec.kind if spec else None, k.NO_GRADE)
        self.n_grades = spec.n_grades if spec is not None and spec.kind != "listed" else 1
        self.stored_grades = spec.n_grades if spec is not None else 1
        self.n_dist = n_bits + 1
        self.db_words = to_device(db_codes.words[lo:hi])
        self.n_words = self.db_words.shape[1]
        one = np.zeros(1, dtype=np.int32)
        self.db_labels = to_device(spec.db_labels[lo:hi] if self.kind == k.CLASS else one, np.int32)
        label_words = spec.db_label_words[lo:hi] if self.kind == k.MULTIHOT else np.zeros((1, 1), dtype=np.uint64)
        self.db_label_words = to_device(label_words, np.uint64)
        self.n_label_words = label_words.shape[1]
        self.split_size = split_size

    def layout(self, n_queries, ranks=False):
        """(queries per block of the histogram pass, counters in shared memory, splits, split size).
        With ``ranks``, splits enough to fill the GPU in the rank pass too (it runs on the same splits)."""
        cells = self.n_dist * self.n_grades
        tile = self.k.queries_per_block(cells)
        in_shared = tile > 0
        tile = tile or self.k.THREADS
        split_size = self.split_size
        if split_size is None:
            tiles = -(-n_queries // tile)
            per_sm = _RANK_BLOCKS_PER_SM if ranks else _BLOCKS_PER_SM
            want = max(1, -(-max(1, multiprocessors(self.cuda)) * per_sm // tiles))
            split_size = max(_MIN_SPLIT, -(-self.n_db // want))
        return tile, in_shared, -(-self.n_db // split_size), split_size

    def query_arrays(self, query_words, spec_rows):
        k = self.k
        labels = spec_rows.query_labels if self.kind == k.CLASS else np.zeros(1, dtype=np.int32)
        label_words = spec_rows.query_label_words if self.kind == k.MULTIHOT else np.zeros((1, 1), dtype=np.uint64)
        return (to_device(query_words), to_device(labels, np.int32), to_device(label_words, np.uint64))

    def split_counts(self, queries, n_queries, ranks=False):
        """Per-split counts (splits, n_queries, n_dist * n_grades) int32 on the device."""
        cuda, k = self.cuda, self.k
        query_words, query_labels, query_label_words = queries
        tile, in_shared, n_splits, split_size = self.layout(n_queries, ranks)
        cells = self.n_dist * self.n_grades
        shape = (n_splits, n_queries, cells)
        # written whole by the blocks, or zeros that take global atomics (counters too large for a block)
        out = cuda.device_array(shape, dtype=np.int32) if in_shared else cuda.to_device(np.zeros(shape, np.int32))
        threads, per_thread = k.HIST_SHAPE.get(self.n_words, k.HIST_SHAPE_WIDE)
        threads = threads if multiprocessors(cuda) else k.THREADS  # the simulator: fewer Python threads
        kernel = k.histogram_kernel(self.n_words, self.kind, self.n_label_words, in_shared, min(per_thread, tile),
                                    threads)
        grid = (-(-n_queries // tile), n_splits)
        shared = tile * cells * 4 if in_shared else 0
        launch(kernel, grid, threads, shared, query_words, self.db_words, query_labels, self.db_labels,
                query_label_words, self.db_label_words, cells, self.n_grades, tile, split_size, out)
        return out, split_size

    def counts(self, queries, spec_rows, n_queries, ranks=False):
        """(device int64 counts (n_queries, n_dist * stored grades), per-split counts, split size)."""
        cuda, k = self.cuda, self.k
        split, split_size = self.split_counts(queries, n_queries, ranks)
        if self.stored_grades == self.n_grades:
            hist = cuda.device_array((n_queries, self.n_dist * self.n_grades), dtype=np.int64)
            launch(k.sum_splits, grid(hist.size), k.THREADS, 0, split, hist)
        else:  # listed relevance: distances only on the device pass, grades moved in
            one = cuda.device_array((n_queries, self.n_dist), dtype=np.int64)
            launch(k.sum_splits, grid(one.size), k.THREADS, 0, split, one)
            host = np.zeros((n_queries, self.n_dist, self.stored_grades), dtype=np.int64)
            host[:, :, 0] = one.copy_to_host()
            hist = cuda.to_device(host.reshape(n_queries, -1))
            # the listed items of this chunk, by their index in it
            query_of = np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(spec_rows.indptr))
            here = (spec_rows.indices >= self.first_item) & (spec_rows.indices < self.first_item + self.n_db)
            if here.any():
                ids = spec_rows.indices[here].astype(np.int64) - self.first_item
                launch(k.move_listed, grid(int(here.sum())), k.THREADS, 0,
                        queries[0], self.db_words, cuda.to_device(query_of[here]), cuda.to_device(ids),
                        to_device(spec_rows.grades[here], np.int64), self.stored_grades, hist)
        return hist, split, split_size

    def ranks(self, queries, spec_rows, n_queries, split, split_size, limits, emit, first_slot, out_a, out_b, k_=0,
              offsets=None):
        """The stable rank pass (see :func:`fasttie._kernels.cuda.rank_kernel`); ``offsets``: the
        (items, relevant items) offsets of :func:`_chunk_offsets` for a chunk, None for a whole database."""
        cuda, k = self.cuda, self.k
        n_splits = split.shape[0]
        limits = cuda.to_device(np.ascontiguousarray(limits, dtype=np.int64))
        bases = cuda.device_array((n_splits, n_queries, self.n_dist), dtype=np.int64)
        slot_bases = cuda.device_array((n_splits, n_queries, self.n_dist), dtype=np.int64)
        if offsets is None:
            offsets = (np.zeros((n_queries, self.n_dist), dtype=np.int64),) * 2
        launch(k.rank_bases, grid(n_queries), k.THREADS, 0, split, self.n_grades, cuda.to_device(first_slot),
                cuda.to_device(offsets[0]), cuda.to_device(offsets[1]), bases, slot_bases)
        kind = self.kind if emit == k.RELEVANT else k.NO_GRADE
        per_query = self.n_dist * (2 if kind != k.NO_GRADE else 1)  # next ranks (and next slots) per distance
        tile = k.queries_per_block(per_query)
        if tile == 0:
            raise InputError(f"device='cuda': {self.n_bits}-bit codes are too long for the GPU rank pass; "
                             "use device='cpu'")
        listed = spec_rows is not None and spec_rows.kind == "listed"
        none = np.zeros(1, dtype=np.int64)
        indptr = to_device(spec_rows.indptr if listed else np.zeros(2, dtype=np.int64), np.int64)
        ids = to_device(spec_rows.indices if listed and len(spec_rows.indices) else none, np.int64)
        grades = to_device(spec_rows.grades if listed and len(spec_rows.grades) else none, np.int64)
        kernel = k.rank_kernel(self.n_words, kind, self.n_label_words, emit)
        query_words, query_labels, query_label_words = queries
        launch(kernel, (-(-n_queries // tile), n_splits), tile, tile * per_query * 4,
            query_words, self.db_words, query_labels, self.db_labels, query_label_words, self.db_label_words, indptr,
            ids, grades, limits, bases, slot_bases, split_size, self.first_item, k_, out_a, out_b)


def _query_block(n_queries, n_cells):
    """Queries per block: their counters (int64 totals, int32 per split) within _QUERY_BYTES."""
    return max(1, min(n_queries, _QUERY_BYTES // (n_cells * 12)))


class _Database:
    """The database of a call on the device: whole (it is on the GPU already, or fits in half the
    free device memory), or in chunks of consecutive items uploaded in turn. A chunk that does not
    fit halves the chunk size (:class:`_ChunkTooLarge`) and the work is retried.

    ``chunk_size`` (database items per chunk) is chosen from the free memory unless given (the
    tests give small ones).
    """

    def __init__(self, db_codes, spec, n_bits, split_size=None, chunk_size=None):
        if db_codes.n >= 1 << 31:
            raise InputError(f"device='cuda' ranks up to 2**31 - 1 database items per call, got {db_codes.n}; "
                             "split the database (fasttie.tie_stats counts add up)")
        self.db_codes, self.spec, self.n_bits, self.split_size = db_codes, spec, n_bits, split_size
        self.n_db = db_codes.n
        if chunk_size is None:
            chunk_size = self.n_db if db_codes.on_device else _fitting_items(db_codes, spec)
        self.chunk_size = max(1, min(int(chunk_size), self.n_db))
        self._whole = None

    @property
    def bounds(self):
        """(first, end) item of each chunk, in index order."""
        return [(lo, min(lo + self.chunk_size, self.n_db)) for lo in range(0, self.n_db, self.chunk_size)]

    def chunk(self, lo, hi):
        """The passes over items lo..hi-1 (a whole database is uploaded once and kept)."""
        if hi - lo == self.n_db and self._whole is not None:
            return self._whole
        try:
            device = _Pass(self.db_codes, self.spec, self.n_bits, self.split_size, lo, hi)
        except Exception as error:
            if not _is_out_of_memory(error) or hi - lo == 1:
                raise
            self.chunk_size = max(1, (hi - lo) // 2)
            raise _ChunkTooLarge() from error
        if hi - lo == self.n_db:
            self._whole = device
        return device

    def whole(self):
        """The passes over the whole database, uploaded now, when it fits in one chunk; else None."""
        while len(self.bounds) == 1:
            try:
                return self.chunk(0, self.n_db)
            except _ChunkTooLarge:
                pass
        return None


def _fitting_items(db_codes, spec):
    """Database items whose words (and labels) fill half the free device memory (the rest is for
    the queries' counters and ranks)."""
    free = require_gpu().current_context().get_memory_info()[0]
    if not np.isfinite(free):  # the simulator
        return db_codes.n
    per_item = 8 * db_codes.words.shape[1]
    if spec is not None and spec.kind == "class":
        per_item += 4
    elif spec is not None and spec.kind == "multihot":
        per_item += 8 * spec.db_label_words.shape[1]
    return max(1, int(free) // 2 // per_item)


def _blocks_with_retry(n_queries, block, work):
    """Run ``work(start, stop)`` over blocks of queries, halving the block on device out-of-memory
    (and retrying it with the database's smaller chunks when a chunk did not fit)."""
    start = 0
    while start < n_queries:
        stop = min(start + block, n_queries)
        try:
            yield work(start, stop)
        except _ChunkTooLarge:
            continue
        except Exception as error:
            if not _is_out_of_memory(error) or block == 1:
                raise
            block = max(1, block // 2)
            continue
        start = stop


def _count_block(device, query_codes, spec, start, stop):
    """Host counts (stop - start, n_dist, stored grades) of queries start..stop-1 over the pass's items."""
    rows = spec.rows(start, stop)
    queries = device.query_arrays(query_codes.words[start:stop], rows)
    counted, _, _ = device.counts(queries, rows, stop - start)
    return counted.copy_to_host().reshape(stop - start, device.n_dist, device.stored_grades)


def _all_counts(database, query_codes, spec):
    """Per-query counts (n_queries, n_dist, stored grades) int64 over the whole database: chunk by
    chunk (each uploaded once), blocks of queries within each chunk."""
    n_queries = query_codes.n
    hist, lo = None, 0
    while lo < database.n_db:
        hi = min(lo + database.chunk_size, database.n_db)
        try:
            device = database.chunk(lo, hi)
        except _ChunkTooLarge:
            continue
        if hist is None:
            hist = np.zeros((n_queries, device.n_dist, device.stored_grades), dtype=np.int64)

        def work(start, stop):
            hist[start:stop] += _count_block(device, query_codes, spec, start, stop)

        for _ in _blocks_with_retry(n_queries, _query_block(n_queries, device.n_dist * device.stored_grades), work):
            pass
        lo = hi
    return hist


def counts(query_codes, db_codes, spec, split_size=None, chunk_size=None):
    """Per-query counts (n_queries, n_bits + 1, n_grades) int64, computed on the GPU.

    Parameters
    ----------
    query_codes, db_codes : PackedCodes
        Words in host or device memory.
    spec : RelevanceSpec
        From :func:`fasttie.relevance.make_relevance`.
    split_size : int, optional
        Database items per block of the grid (default: from the multiprocessor count).
    chunk_size : int, optional
        Database items per upload of a host database (default: what fills half the free device memory).

    Returns
    -------
    ndarray of int64
    """
    return _all_counts(_Database(db_codes, spec, db_codes.n_bits, split_size, chunk_size), query_codes, spec)


def _count_chunks(database, words, rows, n):
    """One block of queries counted over every chunk: (device queries, host counts (n, n_dist,
    stored grades) of each chunk, and (pass, split counts, split size) of a whole database, which
    its rank pass reuses; None for a chunked one, whose chunks are uploaded again)."""
    queries, per_chunk, whole = None, [], None
    for lo, hi in database.bounds:
        device = database.chunk(lo, hi)
        if queries is None:  # the query arrays do not depend on the chunk
            queries = device.query_arrays(words, rows)
        hist, split, split_size = device.counts(queries, rows, n, ranks=True)
        per_chunk.append(hist.copy_to_host().reshape(n, device.n_dist, device.stored_grades))
        if hi - lo == database.n_db:
            whole = (device, split, split_size)
    return queries, per_chunk, whole


def _chunk_offsets(per_chunk, with_slots):
    """Per chunk, the (items, relevant items) per (query, distance) that its rank pass adds to the
    counts it makes itself: those of every chunk at smaller distances and of the chunks before it
    at that distance (the protocol of :mod:`.stable` over the transport of parts one process
    holds), less the chunk's own at smaller distances, which its pass counts. The relevant items
    place each chunk's ranks in the one device buffer of the block (no gather)."""
    def offsets(parts):
        total = _CHUNKS.sum(parts)
        smaller = np.cumsum(total, axis=1) - total
        return [np.ascontiguousarray(smaller + before - (np.cumsum(own, axis=1) - own))
                for own, before in zip(parts, _CHUNKS.before(parts))]

    items = offsets([h.sum(axis=2) for h in per_chunk])
    relevant = offsets([h[:, :, 1:].sum(axis=2) for h in per_chunk]) if with_slots else [0 * i for i in items]
    return list(zip(items, relevant))


_CHUNKS = InProcess()  # the chunks' counts come back to the host, which sums them


def _rank_chunks(database, queries, rows, n, per_chunk, whole, limits, emit, first_slot, out_a, out_b, k_=0):
    """The rank pass of one block of queries over every chunk (see :meth:`_Pass.ranks`)."""
    if whole is not None:
        device, split, split_size = whole
        device.ranks(queries, rows, n, split, split_size, limits, emit, first_slot, out_a, out_b, k_)
        return
    offsets = None
    for c, (lo, hi) in enumerate(database.bounds):
        device = database.chunk(lo, hi)
        split, split_size = device.split_counts(queries, n, ranks=True)
        if offsets is None:  # every chunk's at once (the kind is the database's)
            offsets = _chunk_offsets(per_chunk, with_slots=device.kind != device.k.NO_GRADE)
        device.ranks(queries, rows, n, split, split_size, limits, emit, first_slot, out_a, out_b, k_, offsets[c])


def evaluate(query_codes, db_codes, spec, metrics, options, *, n_threads, split_size=None, chunk_size=None):
    """:func:`fasttie.evaluate` with the passes on the GPU (inputs validated and packed, ``options``
    a checked :class:`~fasttie.hamming.options.HammingOptions`).

    Blocks of queries are counted (and, for ``ties="stable"``, ranked) on the device, then
    finalized on the CPU by the code every path shares, block by block. A database uploaded in
    chunks is counted chunk by chunk; the stable pass takes every chunk twice per block of
    queries (counts, then ranks).
    """
    n_queries, n_db, n_bits = query_codes.n, db_codes.n, db_codes.n_bits
    database = _Database(db_codes, spec, n_bits, split_size, chunk_size)
    stable = options.stable
    depth = None
    if stable:
        depth = stable_depth(hashing_metrics(metrics), options.curves, n_db, n_bits)

    def work(start, stop):
        rows = spec.rows(start, stop)
        n = stop - start
        queries, per_chunk, whole = _count_chunks(database, query_codes.words[start:stop], rows, n)
        hist = sum(per_chunk)
        limits = rank_limits(hist.sum(axis=2), depth, n_db, n_bits)  # the bounded pass: distances reaching `depth`
        return hist, _relevant_ranks(database, queries, rows, hist, per_chunk, whole, limits)

    def blocks():
        block = _query_block(n_queries, (n_bits + 1) * spec.n_grades)
        if not stable:
            whole = database.whole()
            if whole is not None:  # one upload: count and finalize block by block
                def count(start, stop):
                    return _count_block(whole, query_codes, spec, start, stop), None

                yield from _blocks_with_retry(n_queries, block, count)
                return
            hist = _all_counts(database, query_codes, spec)  # each chunk uploaded once for every query
            for start in range(0, n_queries, block):
                yield hist[start:start + block], None
            return
        if depth >= n_db:  # every relevant item ranked: within _RANK_BYTES (16 bytes per item)
            per_query = _relevant_bound(spec, n_db)
            block = max(1, min(block, _RANK_BYTES // 16 // max(1, per_query)))
        # (the bounded pass ranks the items near enough to reach the depth: blocks are halved if needed)
        yield from _blocks_with_retry(n_queries, block, work)

    return result_from_blocks(blocks(), n_queries, n_db, n_bits, spec.n_grades, spec.kind, metrics, options,
                              n_threads=n_threads)


def _relevant_bound(spec, n_db):
    """Most relevant items any query can have (sizes the blocks of the stable pass)."""
    if spec.kind == "class":
        return int(np.bincount(spec.db_labels).max())
    if spec.kind == "listed":
        return int(np.diff(spec.indptr).max(initial=0))
    return n_db


def _relevant_ranks(database, queries, rows, hist, per_chunk, whole, limits):
    """(indptr, ranks, grades) of the relevant items at distances <= limits, in index order."""
    cuda, k = require_gpu(), _kernels()
    n = len(hist)
    if rows.kind == "listed":
        first_slot = np.ascontiguousarray(rows.indptr[:-1], dtype=np.int64)
        size = int(rows.indptr[-1])
    else:
        n_relevant = relevant_ranked(hist, limits)
        first_slot = np.concatenate([[0], np.cumsum(n_relevant)[:-1]]).astype(np.int64)
        size = int(n_relevant.sum())
    if size * 16 > _RANK_BYTES and n > 1:
        raise _RanksTooLarge(size)
    out_ranks = cuda.device_array(max(1, size), dtype=np.int64)
    out_grades = cuda.device_array(max(1, size), dtype=np.int64)
    _rank_chunks(database, queries, rows, n, per_chunk, whole, limits, k.RELEVANT, first_slot, out_ranks, out_grades)
    ranks, grades = out_ranks.copy_to_host()[:size], out_grades.copy_to_host()[:size]
    if rows.kind != "listed":
        return np.concatenate([first_slot, [size]]), ranks, grades
    # listed: each query's items in index order, those past the limit with rank 0; by rank now
    query_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(rows.indptr))
    ranked = ranks > 0
    return ranks_by_query(query_of[ranked], ranks[ranked], grades[ranked], n)


def _kernels():
    """The GPU kernels (their module imports numba.cuda: loaded once a GPU call runs)."""
    from .._kernels import cuda as _kernels_cuda

    return _kernels_cuda


def knn(query_codes, db_codes, k, split_size=None, chunk_size=None):
    """The k nearest items of every query, ties in index order: (ids int64, distances int32), (n, k)."""
    cuda = require_gpu()

    def nearest(rank, n, items):
        limits = np.minimum((np.cumsum(items, axis=1) < k).sum(axis=1), db_codes.n_bits)
        ids = cuda.device_array((n, k), dtype=np.int64)
        distances = cuda.device_array((n, k), dtype=np.int32)
        rank(limits, _kernels().NEAREST, np.zeros(n, dtype=np.int64), ids, distances, k)
        return ids.copy_to_host(), distances.copy_to_host()

    parts = _search_blocks(query_codes, db_codes, split_size, chunk_size, nearest)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def radius_search(query_codes, db_codes, radius, split_size=None, chunk_size=None):
    """Items within ``radius`` of every query, by (distance, index): (ids, distances, offsets)."""
    cuda = require_gpu()

    def within_radius(rank, n, items):
        within = items[:, : radius + 1].sum(axis=1)
        offsets = np.concatenate([[0], np.cumsum(within)]).astype(np.int64)
        size = int(offsets[-1])
        ids = cuda.device_array(max(1, size), dtype=np.int64)
        distances = cuda.device_array(max(1, size), dtype=np.int32)
        rank(np.full(n, radius), _kernels().WITHIN, offsets[:-1].copy(), ids, distances)
        return ids.copy_to_host()[:size], distances.copy_to_host()[:size], within

    parts = _search_blocks(query_codes, db_codes, split_size, chunk_size, within_radius)
    within = np.concatenate([p[2] for p in parts])
    offsets = np.concatenate([[0], np.cumsum(within)]).astype(np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), offsets


def _search_blocks(query_codes, db_codes, split_size, chunk_size, emit):
    """The passes of a search, block of queries by block: the distance counts over every chunk,
    then ``emit(rank, n, items per distance (host, (n, n_dist)))``, where ``rank(limits, emit kind,
    first_slot, out_a, out_b[, k])`` runs the rank pass; its results."""
    database = _Database(db_codes, None, db_codes.n_bits, split_size, chunk_size)

    def work(start, stop):
        n = stop - start
        queries, per_chunk, whole = _count_chunks(database, query_codes.words[start:stop], None, n)

        def rank(*args):
            _rank_chunks(database, queries, None, n, per_chunk, whole, *args)

        return emit(rank, n, sum(per_chunk)[:, :, 0])

    return list(_blocks_with_retry(query_codes.n, _query_block(query_codes.n, db_codes.n_bits + 1), work))
