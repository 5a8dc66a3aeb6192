"""``fasttie compare``: paired significance tests between methods."""

from __future__ import annotations

import os

from ..result import Result
from ..report.significance import compare

from .common import (
    UsageError, check_output_path, check_plot, chosen_hashing_metrics, load_codes_option, load_relevance_inputs, named_file,
    note, write_plot, run_evaluate, resolve_metrics,
)


def compare_command(args) -> int:

    if args.results and args.method:
        raise UsageError("give result files or --method NAME=QUERIES options, not both")
    if not args.results and not args.method:
        raise UsageError(
            "give two or more per-query result files (from 'fasttie evaluate --per-query-file'), or two or more "
            "--method NAME=QUERIES with --database and labels"
        )
    check_plot(args)
    for option, path, extensions in (("--latex", args.latex, (".tex",)), ("--markdown", args.markdown, (".md",)),
                                     ("--html", args.html, (".html", ".htm"))):
        if path is not None:  # before the tests, not after
            check_output_path(path, extensions, option)
    if (args.caption is not None or args.label is not None) and args.latex is None and args.html is None:
        raise UsageError("--caption and --label are for the tables: add --latex FILE.tex (or --html for --caption)")
    if args.label is not None and args.latex is None:
        raise UsageError("--label is for the LaTeX table: add --latex FILE.tex")
    results = {}
    if args.results:
        if args.database is not None:
            raise UsageError("--database is for --method; result files are already evaluated")
        for spec in args.results:
            name, path = named_file(spec, "RESULT")
            if name in results:
                raise UsageError(f"two methods are named {name!r}; name them with NAME=FILE")
            if not os.path.isfile(path):
                raise UsageError(f"RESULT: file not found: {path}")
            results[name] = Result.load(path)
            if args.spread and not results[name].tie_std:
                raise UsageError(
                    f"--spread: {path} has no tie std; write it with 'fasttie evaluate ... --spread --per-query-file "
                    f"{os.path.basename(path)}'"
                )
            if args.plot is not None and not results[name].curves:  # before the tests, not after
                raise UsageError(
                    f"--plot: {path} has no curves; write it with 'fasttie evaluate ... --per-query-file "
                    f"{os.path.splitext(os.path.basename(path))[0]}.json --curves'"
                )
        metrics = resolve_metrics(args.metrics) if args.metrics else None
    else:
        if args.database is None:
            raise UsageError("--method needs --database (the database all methods are scored on)")
        metrics = chosen_hashing_metrics(args)
        database = load_codes_option(args, args.database, "--database", "database")
        query_labels, db_labels, relevance, relevance_shape = load_relevance_inputs(args)
        for spec in args.method:
            name, path = named_file(spec, "--method")
            if name in results:
                raise UsageError(f"--method: two methods are named {name!r}")
            queries = load_codes_option(args, path, f"--method {name}", "queries")
            results[name] = run_evaluate(
                args, queries, database, query_labels, db_labels, relevance, relevance_shape, metrics
            )
    if len(results) < 2:
        raise UsageError(f"compare needs at least two methods, got {len(results)}")
    comparison = compare(
        results, metrics=metrics, n_permutations=args.permutations, seed=args.seed,
        correction=args.correction, alpha=args.alpha, confidence=args.confidence,
        bootstrap=None if args.bootstrap == "none" else args.bootstrap, n_resamples=args.resamples,
    )
    print(comparison.to_json() if args.json else f"{comparison}\n\n{comparison.format_tests()}")
    tables = (
        (args.latex, lambda: comparison.to_latex(digits=args.table_digits, caption=args.caption, label=args.label)),
        (args.markdown, lambda: comparison.to_markdown(digits=args.table_digits)),
        (args.html, lambda: comparison.to_html(digits=args.table_digits, caption=args.caption)),
    )
    for path, draw in tables:
        if path is not None:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(draw())
            note(args, f"wrote {path}")
    if args.plot is not None:
        write_plot(args, results)
    return 0
