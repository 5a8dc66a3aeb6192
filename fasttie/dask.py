"""Exact evaluation beyond one machine, on Dask: shards -> tie statistics -> tree sum -> metrics.

Each task counts, for every query of a block, the database items of one shard by (Hamming
distance, grade) (:func:`fasttie.tie_stats`); Dask sums the counts with a tree reduction and the
metrics are finalized once. The counts are integers, so the result is bitwise identical to
:func:`fasttie.evaluate` on the concatenated data, for any chunking, any number of workers and
any scheduler (the default threaded one, ``distributed.LocalCluster``, a real cluster).

Ranked lists scale by query instead: :func:`rank_evaluate` evaluates a dask DataFrame one
partition at a time after grouping each query's rows into one partition, and
:func:`trec_evaluate` evaluates many TREC run files in parallel, one task per file.

Needs the optional extra ``fasttie[dask]`` (dask and distributed). Each task runs its kernels
on ``threads_per_task`` threads (default 1): a worker's threads are Dask's, never oversubscribed.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["evaluate", "rank_evaluate", "tie_stats", "trec_evaluate"]


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError:
        raise ImportError("fasttie.dask needs dask: pip install 'fasttie[dask]'") from None
    return dask, da


def evaluate(
    queries,
    database,
    query_labels=None,
    db_labels=None,
    *,
    relevance=None,
    metrics=("AP",),
    ties="average",
    ap_denominator="retrieved",
    gain="exp2",
    empty="zero",
    curves=False,
    packed=False,
    n_bits=None,
    bitorder="big",
    query_chunk=None,
    threads_per_task=1,
    split_every=8,
):
    """:func:`fasttie.evaluate` over a database sharded along rows, on the active Dask scheduler.

    Parameters
    ----------
    queries : array_like or PackedCodes
        Query codes (numpy; a dask array is computed first: queries are small).
    database : dask array, numpy array or list of .npy paths
        Codes, (n_db, n_bits) ±1 / 0-1 / bool, or (n_db, n_bytes) uint8 bytes with ``packed=True``,
        chunked along rows (every row chunk is one shard; columns in one chunk). A list of
        ``.npy`` paths is one shard per file, each memory-mapped by the task that reads it.
    query_labels, db_labels : array_like, optional
        As in :func:`fasttie.evaluate`; ``db_labels`` a dask or numpy array with one row per
        database row (rechunked to the database's shards), or a list of .npy paths matching
        ``database``.
    relevance : tuple or scipy.sparse matrix, optional
        Listed relevance with global database ids, as in :func:`fasttie.evaluate`.
    metrics, ties, ap_denominator, gain, empty, curves
        As in :func:`fasttie.evaluate`; ``ties`` "average", "optimistic" or "pessimistic".
    packed, n_bits, bitorder
        Read the database shards as packed bytes (see :func:`fasttie.pack_codes`).
    query_chunk : int, optional
        Queries per block (default: all in one block); each block is reduced on its own.
    threads_per_task : int, default 1
        Kernel threads inside each task.
    split_every : int, default 8
        Fan-in of the tree reduction.

    Returns
    -------
    Result
        Bitwise identical to ``fasttie.evaluate`` on the concatenated database.

    Raises
    ------
    ValueError, TypeError
        As :func:`fasttie.evaluate`; a bad shard (another bit width, NaN, a wrong dtype) fails
        the whole call with an error that names the shard and its rows, before any result.
    """
    stats = tie_stats(
        queries, database, query_labels, db_labels, relevance=relevance, packed=packed, n_bits=n_bits,
        bitorder=bitorder, query_chunk=query_chunk, threads_per_task=threads_per_task, split_every=split_every,
    )
    if ties == "stable":
        raise ValueError(
            "ties='stable' is not available on Dask yet (it needs every shard's ranks in database order); "
            "use ties='average', 'optimistic' or 'pessimistic', or fasttie.evaluate on one machine"
        )
    return stats.finalize(metrics, ties=ties, ap_denominator=ap_denominator, gain=gain, empty=empty, curves=curves)


def tie_stats(
    queries, database, query_labels=None, db_labels=None, *, relevance=None, packed=False, n_bits=None,
    bitorder="big", query_chunk=None, threads_per_task=1, split_every=8,
):
    """:func:`fasttie.tie_stats` of a sharded database, summed by a Dask tree reduction.

    Parameters and errors as in :func:`evaluate`.

    Returns
    -------
    TieStats
    """
    dask, _ = _dask()
    from .codes import pack_codes
    from .tie_stats import TieStats

    query_codes = pack_codes(_computed(queries), name="queries")
    shards = _shards(database, "database")
    label_shards = _label_shards(db_labels, shards)
    query_labels = None if query_labels is None else np.asarray(_computed(query_labels))
    starts = np.concatenate([[0], np.cumsum([n for _, n in shards])]).astype(np.int64)
    n_db = int(starts[-1])
    if relevance is not None and (query_labels is not None or db_labels is not None):
        raise ValueError("give either query_labels and db_labels, or relevance=, not both")
    listed = _listed(relevance, query_codes.n, n_db) if relevance is not None else None
    if relevance is None and (query_labels is None or db_labels is None):
        raise ValueError(
            "relevance is undefined: pass query_labels and db_labels (class ids or multi-hot), "
            "or relevance=(indptr, indices[, grades])"
        )
    if query_labels is not None and len(query_labels) != query_codes.n:
        raise ValueError(f"query_labels has {len(query_labels)} rows but there are {query_codes.n} queries")
    step = query_codes.n if query_chunk is None else int(query_chunk)
    if step < 1:
        raise ValueError(f"query_chunk must be >= 1, got {query_chunk!r}")
    options = {"packed": packed, "n_bits": n_bits, "bitorder": bitorder, "threads": threads_per_task}
    shard_task = dask.delayed(_shard_stats, pure=True)
    merge_task = dask.delayed(_merge, pure=True)
    blocks = []
    for q0 in range(0, query_codes.n, step):
        q1 = min(q0 + step, query_codes.n)
        query_block = query_codes.words[q0:q1]
        labels_block = None if query_labels is None else query_labels[q0:q1]
        nodes = []
        for index, ((shard, rows), labels) in enumerate(zip(shards, label_shards)):
            lo = int(starts[index])
            local = None if listed is None else _listed_rows(listed, q0, q1, lo, lo + rows)
            nodes.append(shard_task(index, lo, shard, labels, query_block, query_codes.n_bits, labels_block, local,
                                    options))
        while len(nodes) > 1:
            nodes = [merge_task(nodes[i : i + split_every]) for i in range(0, len(nodes), split_every)]
        blocks.append(nodes[0])
    parts = dask.compute(*blocks)
    counts = np.concatenate([p.counts for p in _same_grades(parts)], axis=0)
    return TieStats(counts, query_codes.n_bits, parts[0].relevance)


def _computed(array):
    return array.compute() if hasattr(array, "compute") and hasattr(array, "dask") else array


def _shards(database, name):
    """[(delayed or array block, rows)] along rows, from a dask array, a numpy array or paths."""
    _, da = _dask()
    if isinstance(database, (list, tuple)) and database and all(isinstance(p, (str, os.PathLike)) for p in database):
        shards = []
        for path in database:
            try:
                shape = np.load(path, mmap_mode="r").shape
            except (OSError, ValueError) as error:
                raise ValueError(f"{name} shard {path}: cannot read it as a .npy file ({error})") from None
            shards.append((os.fspath(path), int(shape[0])))
        return shards
    if not isinstance(database, da.Array):
        database = np.asarray(database)
        if database.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_codes, n_bits), got shape {database.shape}")
        database = da.from_array(database, chunks=(max(1, database.shape[0]), database.shape[1]))
    if database.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_codes, n_bits), got shape {database.shape}")
    if len(database.chunks[1]) != 1:
        database = database.rechunk({1: -1})  # one shard holds whole codes
    blocks = database.to_delayed().ravel()
    return list(zip(blocks, (int(n) for n in database.chunks[0])))


def _label_shards(db_labels, shards):
    """db_labels cut like the database shards (None where there are no labels)."""
    if db_labels is None:
        return [None] * len(shards)
    _, da = _dask()
    if isinstance(db_labels, (list, tuple)) and db_labels and all(isinstance(p, (str, os.PathLike)) for p in db_labels):
        if len(db_labels) != len(shards):
            raise ValueError(f"db_labels lists {len(db_labels)} files but the database has {len(shards)} shards")
        return [os.fspath(p) for p in db_labels]
    if not isinstance(db_labels, da.Array):
        db_labels = da.from_array(np.asarray(db_labels), chunks=-1)
    rows = tuple(n for _, n in shards)
    if db_labels.shape[0] != sum(rows):
        raise ValueError(f"db_labels has {db_labels.shape[0]} rows but the database has {sum(rows)} codes")
    chunks = (rows,) + tuple((n,) for n in db_labels.shape[1:])
    return list(db_labels.rechunk(chunks).to_delayed().ravel())


def _listed(relevance, n_queries, n_db):
    """Validated global CSR (indptr, indices, grades), ids sorted within each query."""
    from .relevance import make_relevance

    spec = make_relevance(None, None, relevance, n_queries, n_db)
    return spec.indptr, spec.indices, spec.grades


def _listed_rows(listed, q0, q1, lo, hi):
    """Queries q0..q1-1 of the global CSR, restricted to database rows lo..hi-1, ids made local."""
    indptr, indices, grades = listed
    keep_ptr = [0]
    keep_ids, keep_grades = [], []
    for q in range(q0, q1):
        ids = indices[indptr[q] : indptr[q + 1]]
        a, b = np.searchsorted(ids, [lo, hi])
        keep_ids.append(ids[a:b] - lo)
        keep_grades.append(grades[indptr[q] + a : indptr[q] + b])
        keep_ptr.append(keep_ptr[-1] + (b - a))
    return (np.array(keep_ptr, dtype=np.int64), np.concatenate(keep_ids).astype(np.int64),
            np.concatenate(keep_grades).astype(np.int64))


def _load(block):
    return np.load(block, mmap_mode="r") if isinstance(block, str) else block


def _shard_stats(index, lo, codes, labels, query_words, n_bits, query_labels, listed, options):
    """TieStats of one shard for one block of queries (runs in a Dask task)."""
    from .codes import PackedCodes, pack_codes
    from .hashing import counts_of

    codes = _load(codes)
    rows = f"rows {lo}..{lo + len(codes) - 1}"
    try:
        if options["packed"]:
            db = pack_codes(codes, packed=True, n_bits=options["n_bits"], bitorder=options["bitorder"],
                            name="database")
        else:
            db = pack_codes(codes, n_bits=options["n_bits"], name="database")
        queries = PackedCodes(np.ascontiguousarray(query_words), n_bits)
        return counts_of(queries, db, query_labels, None if labels is None else _load(labels), relevance=listed,
                         n_threads=options["threads"])
    except (ValueError, TypeError) as error:
        raise type(error)(f"database shard {index} ({rows}): {error}") from None


def _merge(parts):
    from .tie_stats import merge

    return merge(parts)


def _same_grades(parts):
    """Query blocks with the grade axis padded to the widest (listed grades differ by block)."""
    n_grades = max(p.counts.shape[2] for p in parts)
    from .tie_stats import _padded

    return [type(p)(_padded(p.counts, n_grades), p.n_bits, p.relevance) for p in parts]


def rank_evaluate(frame, metrics=("AP", "nDCG@10", "P@10", "RR"), *, query="query_id", label="relevance",
                  score="score", doc=None, grouped=False, threads_per_task=1, **options):
    """:func:`fasttie.rank_evaluate` of a (dask) DataFrame of scored rows, one partition at a time.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame or pandas.DataFrame
        One row per (query, document) with a query id, a grade and a score column.
    metrics : str or sequence of str
        As in :func:`fasttie.rank_evaluate`.
    query, label, score : str
        Column names (ir_measures / ranx style defaults).
    doc : str, optional
        Document id column, for ``ties="trec"`` (``doc_ids``).
    grouped : bool, default False
        True when every query's rows already sit in one partition; otherwise the frame is
        shuffled on ``query`` first. A shuffle moves rows, so ``ties="stable"`` ranks equal
        scores in the order of the frame's index.
    threads_per_task : int, default 1
    **options
        ``ties``, ``gain``, ``log_base``, ``ap_denominator``, ``empty``, ``relevance_level``.

    Returns
    -------
    pandas.DataFrame
        One row per query (index ``query``, sorted), one column per metric: the per-query
        values of ``fasttie.rank_evaluate(..., qid=frame[query])`` on the whole frame.
    """
    dask, _ = _dask()
    import pandas as pd

    if isinstance(frame, pd.DataFrame):
        import dask.dataframe as dd

        frame = dd.from_pandas(frame, npartitions=1)
    missing = [c for c in (query, label, score, doc) if c is not None and c not in frame.columns]
    if missing:
        raise ValueError(f"frame has no column {missing[0]!r}; name the columns with query=, label=, score=, doc=")
    if not grouped:
        frame = frame.shuffle(on=query)
    parts = [dask.delayed(_rank_partition, pure=True)(part, metrics, query, label, score, doc, threads_per_task,
                                                      options) for part in frame.to_delayed()]
    pieces = [p for p in dask.compute(*parts) if p is not None]
    if not pieces:
        raise ValueError("frame has no rows: there is nothing to rank")
    out = pd.concat(pieces)
    if out.index.has_duplicates:
        raise ValueError(f"a query's rows span several partitions; leave grouped=False to shuffle on {query!r}")
    return out.sort_index()


def _rank_partition(part, metrics, query, label, score, doc, threads, options):
    from .ranking import rank_evaluate as evaluate_lists

    if len(part) == 0:
        return None
    if options.get("ties") == "stable":  # equal scores in index order, whatever a shuffle did
        part = part.sort_index(kind="stable")
    result = evaluate_lists(part[label].to_numpy(), part[score].to_numpy(), qid=part[query].to_numpy(),
                            metrics=metrics, doc_ids=None if doc is None else part[doc].to_numpy(),
                            n_threads=threads, **options)
    return result.to_frame()


def trec_evaluate(qrels, runs, metrics, *, threads_per_task=1, **options):
    """:func:`fasttie.trec.evaluate` of many run files against one qrels, one Dask task per run.

    Parameters
    ----------
    qrels : str or os.PathLike
        The qrels file (each task reads it).
    runs : str or sequence of paths
        A glob (``"runs/*.txt"``, sorted by name) or a list of run files.
    metrics : str or sequence of str
        As in :func:`fasttie.trec.evaluate`.
    threads_per_task : int, default 1
    **options
        As in :func:`fasttie.trec.evaluate` (``ties``, ``relevance_level``, ``complete``, ...).

    Returns
    -------
    pandas.DataFrame
        Index (``run``: the file name without folder, ``query``), one column per metric: each
        run's per-query values of ``fasttie.trec.evaluate``.
    """
    dask, _ = _dask()
    import glob

    import pandas as pd

    paths = sorted(glob.glob(runs)) if isinstance(runs, str) else [os.fspath(p) for p in runs]
    if not paths:
        raise ValueError(f"runs: no run file matches {runs!r}")
    task = dask.delayed(_trec_run, pure=True)
    frames = dask.compute(*[task(os.fspath(qrels), path, metrics, threads_per_task, options) for path in paths])
    names = [os.path.basename(p) for p in paths]
    return pd.concat(frames, keys=names, names=["run", "query"])


def _trec_run(qrels, path, metrics, threads, options):
    from .trec import evaluate as evaluate_run

    return evaluate_run(qrels, path, metrics, n_threads=threads, **options).to_frame()
