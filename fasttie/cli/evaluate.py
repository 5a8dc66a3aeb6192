"""``fasttie evaluate``: query codes against a database (one file, .npy shards or a zarr store)."""

from __future__ import annotations

import importlib.util
import json
import os
import time

import fasttie.dask as fdask

from ..errors import InputError
from .loaders import load_array, load_relevance
from ..report.tables import format_csv, format_table
from .common import (
    RESULT_EXTENSIONS, UsageError, check_output_path, check_plot, evaluate_options, chosen_hashing_metrics,
    load_codes_option, load_relevance_inputs, note, write_plot, run_evaluate, file_stem, cli_words,
)


def _is_glob(spec):
    return spec is not None and any(c in spec for c in "*?[")


def _is_zarr(spec):
    return spec is not None and spec.rstrip("/").endswith(".zarr")


def _zarr(spec, option):
    """A zarr store as a dask array chunked like the store (its row chunks are the shards)."""
    try:
        import dask.array as da
    except ImportError:
        da = None
    if da is None or importlib.util.find_spec("zarr") is None:
        raise ImportError(f"{option}: reading a zarr store needs dask and zarr: pip install 'fasttie[dask]' zarr")
    if not os.path.exists(spec):
        raise UsageError(f"{option}: file not found: {spec}")
    return da.from_zarr(spec)


def _shard_paths(spec, option):
    """Sorted .npy files of a glob (or the one file named)."""
    import glob

    if not _is_glob(spec):
        return [spec]
    paths = sorted(glob.glob(spec))
    if not paths:
        raise UsageError(f"{option}: no file matches {spec!r}")
    bad = [p for p in paths if not p.endswith(".npy")]
    if bad:
        raise UsageError(f"{option}: shards must be .npy files, got {bad[0]}")
    return paths


def _run_dask(args, queries, metrics):
    """evaluate on Dask: the database (and its labels) as .npy shards, on a local cluster, a
    cluster at --scheduler, or Dask's threaded scheduler."""
    paths = _zarr(args.database, "--database") if _is_zarr(args.database) else _shard_paths(args.database, "--database")
    query_labels, db_labels, relevance = None, None, None
    if args.relevance is not None:
        if args.query_labels is not None or args.db_labels is not None:
            raise UsageError("give --query-labels and --db-labels, or --relevance, not both")
        relevance, _ = load_relevance(args.relevance)
    elif args.query_labels is None or args.db_labels is None:
        raise UsageError("give --query-labels and --db-labels (class ids or multi-hot), or --relevance (a CSR .npz)")
    else:
        query_labels = load_array(args.query_labels, option="--query-labels", default_key="query_labels")
        if _is_zarr(args.db_labels):
            db_labels = _zarr(args.db_labels, "--db-labels")
        elif _is_glob(args.db_labels):
            db_labels = _shard_paths(args.db_labels, "--db-labels")
        else:
            db_labels = load_array(args.db_labels, option="--db-labels", default_key="db_labels")
    options = {k: v for k, v in evaluate_options(args).items() if k != "n_threads"}
    if options.pop("spread", False):
        raise UsageError("--spread: not with database shards or --dask yet; evaluate one database file")
    client = None
    try:
        if args.dask or args.scheduler:
            import distributed

            # no dashboard; the scheduler's HTTP server on a free local port, not 8787, which
            # another cluster may hold (distributed then warns and leaks a socket)
            client = distributed.Client(args.scheduler) if args.scheduler else distributed.Client(
                distributed.LocalCluster(threads_per_worker=1, processes=True, dashboard_address=None,
                                         scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}))
        return fdask.evaluate(
            queries, paths, query_labels, db_labels, relevance=relevance, metrics=metrics, packed=args.packed,
            n_bits=args.bits, bitorder=args.bitorder, query_chunk=args.query_chunk,
            curves=args.plot is not None or getattr(args, "curves", False), **options,
        )
    except InputError as error:
        raise cli_words(error) from None
    finally:
        if client is not None:
            cluster = client.cluster
            client.close()
            if cluster is not None and not args.scheduler:
                cluster.close()


_RELEVANCE_WORDS = {"class": "class labels", "multihot": "multi-hot labels (grade = shared labels)",
                    "listed": "listed relevant items (CSR)"}


def evaluate_command(args) -> int:

    metrics = chosen_hashing_metrics(args)
    if args.per_query_file_old is not None:
        if args.per_query_file is not None:
            raise UsageError("give --per-query-file FILE once (--per-query FILE is its old spelling)")
        args.per_query_file = args.per_query_file_old
        note(args, "--per-query FILE is now --per-query-file FILE (as in 'fasttie trec')")
    if args.per_query_file is not None:
        check_output_path(args.per_query_file, RESULT_EXTENSIONS, "--per-query-file")
    check_plot(args)
    queries = load_codes_option(args, args.queries, "--queries", "queries")
    started = time.perf_counter()
    if args.dask or args.scheduler or _is_glob(args.database) or _is_zarr(args.database):
        result = _run_dask(args, queries, metrics)
    else:
        database = load_codes_option(args, args.database, "--database", "database")
        query_labels, db_labels, relevance, relevance_shape = load_relevance_inputs(args)
        result = run_evaluate(args, queries, database, query_labels, db_labels, relevance, relevance_shape, metrics)
    elapsed = time.perf_counter() - started
    if args.json:
        print(json.dumps(result.to_dict(per_query=False)))
    elif args.csv:
        print(format_csv(result))
    else:
        settings = result.settings
        print(
            f"fasttie evaluate: {result.n_queries} queries x {settings['n_db']} database codes, "
            f"{settings['n_bits']} bits, relevance: {_RELEVANCE_WORDS.get(settings['relevance'], settings['relevance'])}"
            + (f", protocol {args.protocol}" if args.protocol else "")
        )
        print()
        print(format_table(result, digits=args.digits))
    if args.per_query_file is not None:
        result.save(args.per_query_file)
        note(args, f"wrote {args.per_query_file} ({result.n_queries} queries x {len(result.per_query)} metrics)")
    if args.plot is not None:
        label = args.label or file_stem(args.queries)
        write_plot(args, {label: result})
    note(args, f"evaluated in {elapsed:.2f} s")
    return 0
