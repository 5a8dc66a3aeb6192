"""``fasttie compare``: paired significance tests between methods."""

from __future__ import annotations

import os

from ..result import Result
from ..significance import compare

from .common import (
    UsageError, _check_plot, _hashing_metrics, _load_codes, _load_relevance_inputs, _named, _plot, _run_evaluate,
    resolve_metrics,
)


def _compare(args) -> int:

    if args.results and args.method:
        raise UsageError("give result files or --method NAME=QUERIES options, not both")
    if not args.results and not args.method:
        raise UsageError(
            "give two or more per-query result files (from 'fasttie evaluate --per-query-file'), or two or more "
            "--method NAME=QUERIES with --database and labels"
        )
    _check_plot(args)
    results = {}
    if args.results:
        if args.database is not None:
            raise UsageError("--database is for --method; result files are already evaluated")
        for spec in args.results:
            name, path = _named(spec, "RESULT")
            if name in results:
                raise UsageError(f"two methods are named {name!r}; name them with NAME=FILE")
            if not os.path.isfile(path):
                raise UsageError(f"RESULT: file not found: {path}")
            results[name] = Result.load(path)
            if args.plot is not None and not results[name].curves:  # before the tests, not after
                raise UsageError(
                    f"--plot: {path} has no curves; write it with 'fasttie evaluate ... --per-query-file "
                    f"{os.path.splitext(os.path.basename(path))[0]}.json --curves'"
                )
        metrics = resolve_metrics(args.metrics) if args.metrics else None
    else:
        if args.database is None:
            raise UsageError("--method needs --database (the database all methods are scored on)")
        metrics = _hashing_metrics(args)
        database = _load_codes(args, args.database, "--database", "database")
        query_labels, db_labels, relevance, relevance_shape = _load_relevance_inputs(args)
        for spec in args.method:
            name, path = _named(spec, "--method")
            if name in results:
                raise UsageError(f"--method: two methods are named {name!r}")
            queries = _load_codes(args, path, f"--method {name}", "queries")
            results[name] = _run_evaluate(
                args, queries, database, query_labels, db_labels, relevance, relevance_shape, metrics
            )
    if len(results) < 2:
        raise UsageError(f"compare needs at least two methods, got {len(results)}")
    comparison = compare(
        results, metrics=metrics, n_permutations=args.permutations, seed=args.seed,
        correction=args.correction, alpha=args.alpha,
    )
    print(comparison.to_json() if args.json else f"{comparison}\n\n{comparison.format_tests()}")
    if args.plot is not None:
        _plot(args, results)
    return 0
