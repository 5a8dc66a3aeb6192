"""The GPU kernels (numba-cuda), kept apart from the CPU kernels of ``_kernels``.

Imported only by :mod:`fasttie.hamming.gpu` and :mod:`fasttie._device`, on first use: importing
fasttie imports nothing CUDA.
Under ``NUMBA_ENABLE_CUDASIM=1`` the simulator runs the same kernels on the CPU.

Work layout: the grid is (query tiles, database splits). A block takes a tile of queries and
streams one contiguous split of the database through; each query's counters live in the
block's shared memory, owned by the query's threads, so counting needs no global memory
traffic; at the end the block writes its counters once, to its own slice of a per-split
output (plain stores, no global atomics, so the sums are exact and independent of
scheduling). Each thread holds a few queries' words in registers (the word count and the
queries per thread are compile-time constants of the kernel, see :func:`histogram_kernel`) and
compares every database item it reads with all of them; the threads of a warp read one or a few
items (broadcast loads).

* :func:`histogram_kernel`: counts by (distance, grade) per (split, query);
* :func:`sum_splits`: the whole-database counts (int64);
* :func:`move_listed`: listed relevance, whose grades the pass cannot see, moves each listed
  item from grade 0 to its grade;
* :func:`rank_bases` and :func:`rank_kernel`: the stable rank pass (ties in database index
  order): each thread scans its split in index order for one query, keeping per distance the
  next rank, and emits the ranks of the items asked for (relevant items, the k nearest, or the
  items within a radius).
"""

from functools import lru_cache

from numba import config, cuda, int32, uint64

from ._jit import CACHE
from .modes import CLASS, LISTED, MULTIHOT  # noqa: F401 (the GPU path reads them here)

THREADS = 128  # threads per block of the small grid-stride kernels; queries per block at most
# (threads per block, queries per thread) of the histogram pass, by code words: measured on an H100 (10,000 x
# 10M codes, class labels; G pairs/s of the pass alone) at (256, 1) / (512, 1) / (256, 2) / (512, 2) / (256, 4) /
# (512, 4) / (256, 8) / (512, 8): 64 bits 419 / 405 / 654 / 674 / 762 / 850 / 1008 / 838; 128 bits 377 / 303 /
# 526 / 557 / 656 / 666 / 650 / 614; 256 bits 274 / 293 / 370 / 394 / 376 / 319 / 377 / 378. 1024 threads ran out
# of registers at 256 bits before the kernel had launch bounds.
HIST_SHAPE = {1: (256, 8), 2: (512, 4)}
HIST_SHAPE_WIDE = (512, 2)
SHARED_BYTES = 40 << 10  # shared memory for a block's counters (a block may take 48 KiB without opt-in)
# how the pass finds an item's grade: the CPU kernels' relevance kinds; listed relevance counts
# distances only (NO_GRADE), its grades move in afterwards
NO_GRADE = LISTED
RELEVANT, NEAREST, WITHIN = 0, 1, 2  # what the rank pass emits


def queries_per_block(cells, limit=THREADS):
    """Largest power of two t <= limit whose t x cells int32 counters fit the shared budget (0: none fits)."""
    t = limit
    while t and t * cells * 4 > SHARED_BYTES:
        t //= 2
    return t


def _kernel(fn=None, **options):
    """``cuda.jit`` of a kernel, cached on disk like the CPU kernels (``FASTTIE_NO_CACHE=1`` turns it off).

    The cache holds the kernel's PTX and cubin for this GPU's compute capability, so a new process
    loads them instead of running NVVM again (the simulator has no cache). Where numba finds no
    writable cache location, the kernel compiles without one.
    """
    if fn is None:
        return lambda f: _kernel(f, **options)
    if not CACHE or config.ENABLE_CUDASIM:
        return cuda.jit(**options)(fn)
    try:
        return cuda.jit(cache=True, **options)(fn)
    except RuntimeError as error:
        if "no locator available" not in str(error):
            raise
        return cuda.jit(**options)(fn)


@cuda.jit(device=True)
def _load_query(kind, i, query_words, query_labels, query_label_words, query, query_label, r):
    """Query i's code words into row r of ``query`` and, for multi-hot grades, its label words
    into row r of ``query_label`` (local arrays: registers); returns its class id (0 for other kinds)."""
    for w in range(query.shape[1]):
        query[r, w] = query_words[i, w]
    if kind == MULTIHOT:
        for w in range(query_label.shape[1]):
            query_label[r, w] = query_label_words[i, w]
    return query_labels[i] if kind == CLASS else 0


@cuda.jit(device=True)
def _load_item(db_words, j, item):
    """Database item j's code words into ``item`` (a local array), read once for every query of the thread."""
    for w in range(item.shape[0]):
        item[w] = db_words[j, w]


@cuda.jit(device=True)
def _distance(query, r, item):
    """Hamming distance between the query in row r of ``query`` and the item's words."""
    d = 0
    for w in range(item.shape[0]):
        d += cuda.popc(query[r, w] ^ item[w])
    return d


@cuda.jit(device=True)
def _grade(kind, label, query_label, r, item_class, db_label_words, j):
    """Grade of database item j (class id ``item_class``) for the query in row r: 1 in the
    query's class, shared labels for multi-hot, else 0."""
    if kind == CLASS:
        return 1 if item_class == label else 0
    g = 0
    if kind == MULTIHOT:
        for w in range(query_label.shape[1]):
            g += cuda.popc(query_label[r, w] & db_label_words[j, w])
    return g


@lru_cache(maxsize=None)
def histogram_kernel(n_words, kind, n_label_words, in_shared, per_thread, threads):
    """The histogram pass for codes of ``n_words`` words and grades of ``kind``.

    Launch ``[(query tiles, splits), threads, 0, dynamic shared bytes]`` (``HIST_SHAPE``) with arguments
    ``(query_words, db_words, query_labels, db_labels, query_label_words, db_label_words,
    n_cells, n_grades, tile, split_size, out)``: ``out[s, i, d * n_grades + g]`` (int32) gets
    the items of grade g at distance d from query i in split s (database items
    ``s * split_size`` onwards). ``tile`` queries share a block (a multiple of ``per_thread``):
    each thread holds ``per_thread`` of them in registers, ``lanes = tile // per_thread`` apart,
    and compares each item it reads with all of them (register blocking: one load of the item
    serves several queries); ``n = blockDim // lanes`` threads take every n-th item of the split.
    ``in_shared``: the counters live in shared memory (``tile * n_cells`` int32, written to
    ``out`` at the end); otherwise ``out`` must be zero and takes global atomics (counters too
    large for a block). ``threads`` per block (launch bounds: the compiler keeps the registers
    within what that many threads may use, so wide codes cannot fail to launch).
    """
    n_label_words = max(1, n_label_words)
    bounds = {} if config.ENABLE_CUDASIM else {"launch_bounds": threads}  # the simulator takes no bounds

    @_kernel(**bounds)
    def kernel(query_words, db_words, query_labels, db_labels, query_label_words, db_label_words, n_cells, n_grades,
               tile, split_size, out):
        """One launch of the histogram pass (see :func:`histogram_kernel`).

        Parameters
        ----------
        query_words : (n_queries, n_words) uint64, device
            Query codes.
        db_words : (n_db, n_words) uint64, device
            Database codes, index order (the chunk uploaded, for a database uploaded in chunks).
        query_labels : (n_queries,) or (1,) int32, device
            Class id per query (CLASS; else one unused zero).
        db_labels : (n_db,) or (1,) int32, device
            Class id per database item (CLASS; else one unused zero).
        query_label_words : (n_queries, n_label_words) or (1, 1) uint64, device
            Label bits per query (MULTIHOT; else one unused row).
        db_label_words : (n_db, n_label_words) or (1, 1) uint64, device
            Label bits per database item (MULTIHOT; else one unused row).
        n_cells : int
            Counters per query, (n_bits + 1) * n_grades.
        n_grades : int
            Grade values 0..n_grades - 1.
        tile : int
            Queries per block, a multiple of ``per_thread``.
        split_size : int
            Database items per split (grid dimension y).
        out : (n_splits, n_queries, n_cells) int32, device
            Written: counts by (split, query, distance * n_grades + grade); zeros from the caller
            unless ``in_shared``.
        """
        counts = cuda.shared.array(0, int32)
        tid = cuda.threadIdx.x
        lanes = tile // per_thread
        n_slices = cuda.blockDim.x // lanes
        first_query = cuda.blockIdx.x * tile
        lane = tid % lanes
        split = cuda.blockIdx.y
        n_queries = query_words.shape[0]
        if in_shared:
            for c in range(tid, tile * n_cells, cuda.blockDim.x):
                counts[c] = 0
            cuda.syncthreads()
        query = cuda.local.array((per_thread, n_words), uint64)
        query_label = cuda.local.array((per_thread, n_label_words), uint64)
        label = cuda.local.array(per_thread, int32)
        for r in range(per_thread):
            # past the last query the tile repeats it: counted in a row that is never written out
            i = min(first_query + lane + r * lanes, n_queries - 1)
            label[r] = _load_query(kind, i, query_words, query_labels, query_label_words, query, query_label, r)
        item = cuda.local.array(n_words, uint64)
        lo = split * split_size
        hi = min(lo + split_size, db_words.shape[0])
        for j in range(lo + tid // lanes, hi, n_slices):
            _load_item(db_words, j, item)
            item_class = db_labels[j] if kind == CLASS else 0
            for r in range(per_thread):
                cell = (_distance(query, r, item) * n_grades
                        + _grade(kind, label[r], query_label, r, item_class, db_label_words, j))
                q = lane + r * lanes
                if not in_shared:
                    if first_query + q < n_queries:
                        cuda.atomic.add(out, (split, first_query + q, cell), 1)
                elif n_slices == 1:  # the thread owns its queries' counters
                    counts[q * n_cells + cell] += 1
                else:
                    cuda.atomic.add(counts, q * n_cells + cell, 1)
        if in_shared:
            cuda.syncthreads()
            for c in range(tid, tile * n_cells, cuda.blockDim.x):
                q = first_query + c // n_cells
                if q < n_queries:
                    out[split, q, c % n_cells] = counts[c]

    return kernel


@_kernel
def sum_splits(split_counts, hist):
    """hist[i, c] = sum over splits s of split_counts[s, i, c] (int64; a grid-stride loop)."""
    n_queries, n_cells = hist.shape
    for cell in range(cuda.grid(1), n_queries * n_cells, cuda.gridsize(1)):
        i = cell // n_cells
        c = cell % n_cells
        total = 0
        for s in range(split_counts.shape[0]):
            total += split_counts[s, i, c]
        hist[i, c] = total


@_kernel
def move_listed(query_words, db_words, query_of, indices, grades, n_grades, hist):
    """Listed relevance: each listed (query, item, grade) moves the item, counted at grade 0 by
    the pass, to its grade (integer atomics: the result is exact in any order)."""
    for e in range(cuda.grid(1), indices.shape[0], cuda.gridsize(1)):
        i = query_of[e]
        j = indices[e]
        d = 0
        for w in range(db_words.shape[1]):
            d += cuda.popc(query_words[i, w] ^ db_words[j, w])
        cuda.atomic.add(hist, (i, d * n_grades), -1)
        cuda.atomic.add(hist, (i, d * n_grades + grades[e]), 1)


@_kernel
def rank_bases(split_counts, n_grades, first_slot, item_offsets, slot_offsets, bases, slot_bases):
    """Per query i (a grid-stride loop), for split s and distance d: ``bases[s, i, d]``, the 0-based global
    stable rank of the split's first item at distance d (every item nearer, and those at distance
    d in earlier splits), and ``slot_bases[s, i, d]``, the output slot of its first relevant item
    there: ``first_slot[i]``, then the relevant items ranked before it (so the output of each
    query comes out in rank order). ``item_offsets[i, d]`` / ``slot_offsets[i, d]`` add what the
    splits do not see, for a database uploaded in chunks: the items (relevant items) of the other
    chunks at smaller distances, and of the earlier chunks at distance d (zeros for a whole database)."""
    n_splits, n_queries, n_cells = split_counts.shape
    n_dist = n_cells // n_grades
    for i in range(cuda.grid(1), n_queries, cuda.gridsize(1)):
        items = 0
        relevant = first_slot[i]
        for d in range(n_dist):
            for s in range(n_splits):
                bases[s, i, d] = items + item_offsets[i, d]
                slot_bases[s, i, d] = relevant + slot_offsets[i, d]
                for g in range(n_grades):
                    count = split_counts[s, i, d * n_grades + g]
                    items += count
                    if g > 0:
                        relevant += count


@lru_cache(maxsize=None)
def rank_kernel(n_words, kind, n_label_words, emit):
    """The stable rank pass for codes of ``n_words`` words.

    Launch ``[(query tiles, splits), tile, 0, shared bytes]`` with arguments
    ``(query_words, db_words, query_labels, db_labels, query_label_words, db_label_words,
    indptr, listed_ids, listed_grades, limits, bases, slot_bases, split_size, first_item, k, out_a, out_b)``.
    ``db_words`` holds the database items ``first_item`` onwards (a chunk; 0 for a whole database):
    items are emitted, and listed ids matched, by their index in the whole database.
    One thread per query scans its split in index order; the next 0-based rank of each
    distance (``bases`` of the split, then one more per item seen) is in shared memory
    (``tile * n_dist`` int32, twice that for RELEVANT with class or multi-hot grades, which keep
    the next output slot of each distance beside it). Items at distances above ``limits[i]``
    are passed over. ``emit``:

    * RELEVANT: items of grade > 0 get ``out_a[p] = rank + 1`` (1-based) and ``out_b[p] = grade``.
      Class, multi-hot: p from ``slot_bases`` on, so each query's items come out by rank.
      Listed (``indptr``/``listed_ids``/``listed_grades``, ids ascending per query): p is the
      item's position in the listed arrays (index order; items past the limit get rank 0);
    * NEAREST: ranks below k give ``out_a[i, rank] = item``, ``out_b[i, rank] = distance``;
    * WITHIN: ``out_a[slot_bases[0, i, 0] + rank] = item``, ``out_b[...] = distance``.
    """
    n_label_words = max(1, n_label_words)

    @_kernel
    def kernel(query_words, db_words, query_labels, db_labels, query_label_words, db_label_words, indptr,
               listed_ids, listed_grades, limits, bases, slot_bases, split_size, first_item, k, out_a, out_b):
        """One launch of the stable rank pass (see :func:`rank_kernel`).

        Parameters
        ----------
        query_words : (n_queries, n_words) uint64, device
            Query codes.
        db_words : (n_db, n_words) uint64, device
            Database codes, index order (the chunk uploaded, for a database uploaded in chunks).
        query_labels : (n_queries,) or (1,) int32, device
            Class id per query (CLASS; else one unused zero).
        db_labels : (n_db,) or (1,) int32, device
            Class id per database item (CLASS; else one unused zero).
        query_label_words : (n_queries, n_label_words) or (1, 1) uint64, device
            Label bits per query (MULTIHOT; else one unused row).
        db_label_words : (n_db, n_label_words) or (1, 1) uint64, device
            Label bits per database item (MULTIHOT; else one unused row).
        indptr : (n_queries + 1,) int64, device
            Row pointers of the listed ids (listed relevance; else two zeros).
        listed_ids : (nnz,) int64, device
            Listed ids in the whole database, ascending within each query (else one unused zero).
        listed_grades : (nnz,) int64, device
            Their grades (else one unused zero).
        limits : (n_queries,) int64, device
            Largest distance ranked per query.
        bases : (n_splits, n_queries, n_bits + 1) int64, device
            0-based stable rank of each split's first item at each distance (:func:`rank_bases`).
        slot_bases : (n_splits, n_queries, n_bits + 1) int64, device
            Output slot of each split's first relevant item at each distance (RELEVANT); slot_bases[0, i, 0]
            is query i's first slot (WITHIN).
        split_size : int
            Database items per split (grid dimension y).
        first_item : int
            Index in the whole database of db_words' first item (0 for a whole database).
        k : int
            Ranks kept per query (NEAREST).
        out_a : int64, device
            Written: 1-based ranks (RELEVANT, flat) or item indices (NEAREST: (n_queries, k); WITHIN: flat).
        out_b : int64 (RELEVANT) or int32 (NEAREST, WITHIN), device
            Written: grades or distances, beside out_a.
        """
        next_rank = cuda.shared.array(0, int32)
        tid = cuda.threadIdx.x
        i = cuda.blockIdx.x * cuda.blockDim.x + tid
        split = cuda.blockIdx.y
        if i >= query_words.shape[0]:
            return
        n_dist = bases.shape[2]
        base = tid * n_dist
        slot_at = cuda.blockDim.x * n_dist  # where the next output slots start (RELEVANT, class, multi-hot)
        for d in range(n_dist):
            next_rank[base + d] = bases[split, i, d]
            if emit == RELEVANT and kind != NO_GRADE:
                next_rank[slot_at + base + d] = slot_bases[split, i, d]
        query = cuda.local.array((1, n_words), uint64)
        query_label = cuda.local.array((1, n_label_words), uint64)
        label = _load_query(kind, i, query_words, query_labels, query_label_words, query, query_label, 0)
        item = cuda.local.array(n_words, uint64)
        limit = limits[i]
        lo = split * split_size
        hi = min(lo + split_size, db_words.shape[0])
        slot = slot_bases[split, i, 0]
        # listed: the first listed id at or past the split (ids ascending within the query's row)
        p = 0
        end = 0
        if emit == RELEVANT and kind == NO_GRADE:
            p = indptr[i]
            end = indptr[i + 1]
            top = end
            while p < top:
                mid = (p + top) // 2
                if listed_ids[mid] < first_item + lo:
                    p = mid + 1
                else:
                    top = mid
        for j in range(lo, hi):
            _load_item(db_words, j, item)
            d = _distance(query, 0, item)
            listed_here = False
            if emit == RELEVANT and kind == NO_GRADE:
                listed_here = p < end and listed_ids[p] == first_item + j
            if d > limit:
                if listed_here:
                    out_a[p] = 0  # not ranked
                    p += 1
                continue
            rank = next_rank[base + d]
            next_rank[base + d] = rank + 1
            if emit == RELEVANT:
                if kind == NO_GRADE:
                    if listed_here:
                        out_a[p] = rank + 1
                        out_b[p] = listed_grades[p]
                        p += 1
                else:
                    g = _grade(kind, label, query_label, 0, db_labels[j] if kind == CLASS else 0, db_label_words, j)
                    if g > 0:
                        slot = next_rank[slot_at + base + d]
                        next_rank[slot_at + base + d] = slot + 1
                        out_a[slot] = rank + 1
                        out_b[slot] = g
            elif emit == NEAREST:
                if rank < k:
                    out_a[i, rank] = first_item + j
                    out_b[i, rank] = d
            else:
                out_a[slot + rank] = first_item + j
                out_b[slot + rank] = d

    return kernel


@_kernel
def pack_words(codes, words, flags):
    """Bit b of words[r, w] = codes[r, 64 w + b] == 1 (a grid-stride loop over words). flags[0] /
    flags[1]: a -1 / a 0 was seen; flags[2]: the first flat position of any other value (NaN too)."""
    n_words = words.shape[1]
    width = codes.shape[1]
    for t in range(cuda.grid(1), codes.shape[0] * n_words, cuda.gridsize(1)):
        r = t // n_words
        w = t % n_words
        bits = uint64(0)
        for b in range(64):
            c = w * 64 + b
            if c < width:
                v = codes[r, c]
                if v == 1:
                    bits |= uint64(1) << uint64(b)
                elif v == 0:
                    flags[1] = 1
                elif v == -1:
                    flags[0] = 1
                else:
                    cuda.atomic.min(flags, 2, r * width + c)
        words[r, w] = bits
