"""The ``fasttie`` command (also ``python -m fasttie``).

Subcommands: ``evaluate`` (codes in .npy/.npz files), ``trec`` (qrels and run files, like
``trec_eval``), ``compare`` (significance tests between methods), ``demo``, ``info``.

Exit codes: 0 on success, 2 on a user mistake (bad option, missing or malformed file, unknown
metric, missing optional package: :class:`fasttie.errors.InputError`, ``ImportError`` and file
errors), reported as one line ``fasttie: error: ...`` on stderr without a traceback. Anything
else is a bug and raises (traceback, exit code 1).
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import os
import re
import shlex
import sys
import textwrap
import time

from .errors import InputError

DEMO_METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000", "R@1000", "P(radius=2)", "P(radius=20)")
# digits: a 1,597-image database with about 160 images per class, so cutoffs at 100
DIGITS_METRICS = ("AP", "AP@100", "nDCG@100", "P@100", "R@100", "P(radius=2)", "P(radius=6)")
TIE_MODES = ("average", "stable", "optimistic", "pessimistic")
# the field's usual report: mAP over the whole list and at 1000, nDCG@1000, P@1000, P within radius 2
DEFAULT_METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000", "P(radius=2)")
TREC_METRICS = ("AP", "Rprec", "RR", "P@5", "P@10", "nDCG@10")
# standard hashing protocols: the mAP cutoff each one reports
PROTOCOLS = {"cifar10": "AP", "nuswide": "AP@5000", "coco": "AP@5000", "imagenet100": "AP@1000"}
PLOT_EXTENSIONS = (".png", ".pdf")
RESULT_EXTENSIONS = (".json", ".csv")


class UsageError(InputError):
    """A mistake in the command line (printed as one line, exit code 2)."""


# --------------------------------------------------------------------------------------------
# argparse with one-line errors
# --------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line on stderr, with the closest valid name."""

    def error(self, message):
        message = " ".join(message.split())
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            options = re.findall(r"'([^']*)'", choice.group(2)) or [c.strip() for c in choice.group(2).split(",")]
            message += _did_you_mean(choice.group(1), options)
        unknown = re.match(r"unrecognized arguments: (.*)", message)
        if unknown:
            flags = [a for a in unknown.group(1).split() if a.startswith("-")]
            if flags:
                message += _did_you_mean(flags[0].split("=")[0], list(self._option_string_actions))
        self.exit(2, f"fasttie: error: {message} (see '{self.prog} --help')\n")


def _did_you_mean(word, options):
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _plot_size(text):
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not match or min(int(match.group(1)), int(match.group(2))) < 50:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels (each >= 50), e.g. 1200x400; got {text!r}")
    return int(match.group(1)), int(match.group(2))


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _digits(text):
    value = _positive_int(text) if text != "0" else 0
    if value > 17:
        raise argparse.ArgumentTypeError(f"expected 0..17 decimals, got {text!r}")
    return value


# --------------------------------------------------------------------------------------------
# metric names
# --------------------------------------------------------------------------------------------

def resolve_metrics(names, *, trec_names=False):
    """Parse metric names from the command line into canonical names.

    Parameters
    ----------
    names : iterable of str
        Names as typed (``-m`` may repeat and take several).
    trec_names : bool, default False
        Also accept trec_eval's measure names (``map``, ``P_10``, ``ndcg_cut.10,20``) and the
        diversity metric ``alpha_nDCG@k`` (for ``fasttie trec``).

    Returns
    -------
    list of str
        Canonical names, in order, without repeats.

    Raises
    ------
    UsageError
        An unknown name, with the closest valid one suggested.
    """
    from .diversity import is_diversity_metric, parse_diversity_metric
    from .metrics import parse_metrics

    out = []
    for name in names:
        if trec_names and is_diversity_metric(name):  # alpha-nDCG: TREC diversity qrels only
            try:
                out.extend(key for key, _, _ in parse_diversity_metric(name) if key not in out)
            except ValueError as error:
                raise UsageError(f"-m/--metric: {error}") from None
            continue
        try:
            parsed = parse_metrics(name)
        except ValueError as error:
            if str(error).startswith("unknown metric"):
                raise UsageError(str(error)) from None
            raise UsageError(f"-m/--metric: {error}") from None
        out.extend(m.name for m in parsed if m.name not in out)
    return out


# --------------------------------------------------------------------------------------------
# shared pieces of the subcommands
# --------------------------------------------------------------------------------------------


def _check_output_path(path, extensions, option):
    ext = os.path.splitext(path)[1].lower()
    if ext not in extensions:
        raise UsageError(f"{option}: {path!r} must end in {' or '.join(extensions)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{option}: folder {folder} does not exist")


def _check_plot(args):
    if getattr(args, "plot", None) is None:
        return
    _check_output_path(args.plot, PLOT_EXTENSIONS, "--plot")
    if importlib.util.find_spec("matplotlib") is None:  # fail before a long evaluation
        raise ImportError("matplotlib is needed for plots: pip install 'fasttie[plot]'")


def _progress(args):
    return False if args.quiet else "auto"


def _note(args, text):
    """Side information for people, on stderr (stdout stays machine-readable)."""
    if not args.quiet:
        print(text, file=sys.stderr)


def _load_relevance_inputs(args):
    """(query_labels, db_labels, relevance, relevance matrix shape or None) from
    --query-labels/--db-labels or --relevance."""
    from .loaders import load_array, load_relevance

    labels = (args.query_labels, args.db_labels)
    if args.relevance is not None:
        if any(x is not None for x in labels):
            raise UsageError("give --query-labels and --db-labels, or --relevance, not both")
        return None, None, *load_relevance(args.relevance)
    if labels[0] is None or labels[1] is None:
        if labels == (None, None):
            raise UsageError(
                "relevance is undefined: give --query-labels and --db-labels (class ids or multi-hot), "
                "or --relevance (a CSR .npz)"
            )
        missing = "--db-labels" if labels[1] is None else "--query-labels"
        raise UsageError(f"{missing} is missing: labels come in pairs (--query-labels and --db-labels)")
    return (
        load_array(args.query_labels, option="--query-labels", default_key="query_labels"),
        load_array(args.db_labels, option="--db-labels", default_key="db_labels"),
        None,
        None,
    )


def _load_codes(args, spec, option, default_key):
    from .loaders import load_codes

    return load_codes(spec, option=option, default_key=default_key, packed=args.packed, n_bits=args.bits,
                      bitorder=args.bitorder)


def _evaluate_options(args):
    return {
        "ties": args.ties, "ap_denominator": args.ap_denominator, "gain": args.gain, "empty": args.empty,
        "n_threads": args.threads,
    }


# the library's argument names in its messages -> the options that set them, per command
_EVALUATE_OPTIONS = {
    "query_labels": "--query-labels", "db_labels": "--db-labels", "ap_denominator": "--ap-denominator",
    "n_threads": "--threads", "n_bits": "--bits", "relevance": "--relevance",
}
_TREC_OPTIONS = {"relevance_level": "-l/--level", "ap_denominator": "--ap-denominator"}


def cli_words(message, options=_EVALUATE_OPTIONS):
    """A library message in the command line's words: ``n_bits`` -> ``--bits`` and so on."""
    pattern = r"(?<![\w-])(" + "|".join(map(re.escape, options)) + r")(?![\w.(])"
    return re.sub(pattern, lambda m: options[m.group(1)], message)


def _run_evaluate(args, queries, database, query_labels, db_labels, relevance, relevance_shape, metrics):
    import fasttie as ft

    if relevance_shape is not None and relevance_shape != (queries.n, database.n):
        raise UsageError(
            f"--relevance: the matrix has shape {relevance_shape} but there are {queries.n} queries x "
            f"{database.n} database codes"
        )
    try:
        return ft.evaluate(
            queries, database, query_labels, db_labels, relevance=relevance, metrics=metrics,
            curves=args.plot is not None or getattr(args, "curves", False), progress=_progress(args),
            **_evaluate_options(args),
        )
    except (ValueError, TypeError) as error:
        raise type(error)(cli_words(str(error))) from None


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
    try:
        import fasttie.dask as fdask
    except ImportError as error:
        raise ImportError(f"{error} (needed by --dask, --scheduler and shard globs)") from None
    from .loaders import load_array

    paths = _zarr(args.database, "--database") if _is_zarr(args.database) else _shard_paths(args.database, "--database")
    query_labels, db_labels, relevance = None, None, None
    if args.relevance is not None:
        if args.query_labels is not None or args.db_labels is not None:
            raise UsageError("give --query-labels and --db-labels, or --relevance, not both")
        from .loaders import load_relevance

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
    options = {k: v for k, v in _evaluate_options(args).items() if k != "n_threads"}
    client = None
    try:
        if args.dask or args.scheduler:
            import distributed

            client = distributed.Client(args.scheduler) if args.scheduler else distributed.Client(
                distributed.LocalCluster(threads_per_worker=1, processes=True, dashboard_address=None))
        return fdask.evaluate(
            queries, paths, query_labels, db_labels, relevance=relevance, metrics=metrics, packed=args.packed,
            n_bits=args.bits, bitorder=args.bitorder, query_chunk=args.query_chunk,
            curves=args.plot is not None or getattr(args, "curves", False), **options,
        )
    except (ValueError, TypeError) as error:
        raise type(error)(cli_words(str(error))) from None
    finally:
        if client is not None:
            cluster = client.cluster
            client.close()
            if cluster is not None and not args.scheduler:
                cluster.close()


def _hashing_metrics(args):
    names = []
    if getattr(args, "protocol", None):
        names.append(PROTOCOLS[args.protocol])
    names.extend(args.metrics or ())
    return resolve_metrics(names or DEFAULT_METRICS)


def _plot(args, results):
    from .plots import plot_curves

    plot_curves(results, args.plot, size=args.plot_size)
    _note(args, f"wrote {args.plot} ({args.plot_size[0]}x{args.plot_size[1]} pixels)")


# --------------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------------


_RELEVANCE_WORDS = {"class": "class labels", "multihot": "multi-hot labels (grade = shared labels)",
                    "listed": "listed relevant items (CSR)"}


def _evaluate(args) -> int:
    from .report import format_csv, format_table

    metrics = _hashing_metrics(args)
    if args.per_query is not None:
        _check_output_path(args.per_query, RESULT_EXTENSIONS, "--per-query")
    _check_plot(args)
    queries = _load_codes(args, args.queries, "--queries", "queries")
    started = time.perf_counter()
    if args.dask or args.scheduler or _is_glob(args.database) or _is_zarr(args.database):
        result = _run_dask(args, queries, metrics)
    else:
        database = _load_codes(args, args.database, "--database", "database")
        query_labels, db_labels, relevance, relevance_shape = _load_relevance_inputs(args)
        result = _run_evaluate(args, queries, database, query_labels, db_labels, relevance, relevance_shape, metrics)
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
    if args.per_query is not None:
        result.save(args.per_query)
        _note(args, f"wrote {args.per_query} ({result.n_queries} queries x {len(result.per_query)} metrics)")
    if args.plot is not None:
        label = args.label or _stem(args.queries)
        _plot(args, {label: result})
    _note(args, f"evaluated in {elapsed:.2f} s")
    return 0


# --------------------------------------------------------------------------------------------
# trec
# --------------------------------------------------------------------------------------------


def _trec(args) -> int:
    import fasttie as ft

    from .report import format_trec, format_trec_csv

    metrics = resolve_metrics(args.metrics or TREC_METRICS, trec_names=True)
    if args.per_query_file is not None:
        _check_output_path(args.per_query_file, RESULT_EXTENSIONS, "--per-query-file")
    for option, path in (("QRELS", args.qrels), ("RUN", args.run)):
        if not os.path.isfile(path):
            raise UsageError(f"{option}: file not found: {path}")
    level = int(args.level) if float(args.level).is_integer() else args.level
    try:
        result = ft.trec.evaluate(
            args.qrels, args.run, metrics, ties=args.ties, ap_denominator=args.ap_denominator, gain=args.gain,
            relevance_level=level, empty=args.empty, complete=args.complete,
        )
    except (ValueError, TypeError) as error:
        raise type(error)(cli_words(str(error), _TREC_OPTIONS)) from None
    if args.json:
        print(json.dumps(result.to_dict(per_query=args.per_query)))
    elif args.csv:
        print(format_trec_csv(result, per_query=args.per_query))
    else:
        print(format_trec(result, per_query=args.per_query, digits=args.digits))
    if args.per_query_file is not None:
        result.save(args.per_query_file)
    return 0


# --------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------


def _stem(spec):
    """File name without folder, extension or :KEY (a default method / legend name)."""
    from .loaders import split_key

    return os.path.splitext(os.path.basename(split_key(spec)[0]))[0]


def _named(spec, option):
    """``NAME=PATH`` -> (NAME, PATH); a bare PATH is named after its file."""
    name, sep, path = spec.partition("=")
    if not sep:
        path = spec
        name = _stem(path)
    if not name or not path:
        raise UsageError(f"{option}: expected NAME=FILE, got {spec!r}")
    return name, path


def _compare(args) -> int:
    from .significance import compare
    from .result import Result

    if args.results and args.method:
        raise UsageError("give result files or --method NAME=QUERIES options, not both")
    if not args.results and not args.method:
        raise UsageError(
            "give two or more per-query result files (from 'fasttie evaluate --per-query'), or two or more "
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
                    f"--plot: {path} has no curves; write it with 'fasttie evaluate ... --per-query "
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


# --------------------------------------------------------------------------------------------
# demo and info
# --------------------------------------------------------------------------------------------


def _demo_data(args):
    import fasttie as ft

    if args.dataset == "digits":
        for option, value in (("--db", args.db), ("--classes", args.classes), ("--flip", args.flip)):
            if value is not None:
                raise UsageError(f"{option} applies to --dataset synthetic only (digits has 1797 images, 10 classes)")
        n_bits = 32 if args.bits is None else args.bits
        n_queries = 200 if args.queries is None else args.queries
        data = ft.datasets.digits_hashing(n_bits, n_queries, seed=args.seed)
        about = (
            f"scikit-learn's digits (8x8 images, 10 classes) hashed by ITQ: {n_queries} queries x "
            f"{data[1].n} database codes, {n_bits} bits (seed {args.seed})"
        )
        return data, about
    n_queries = 1000 if args.queries is None else args.queries
    n_db = 59000 if args.db is None else args.db
    n_bits = 64 if args.bits is None else args.bits
    n_classes = 10 if args.classes is None else args.classes
    flip = 0.25 if args.flip is None else args.flip
    data = ft.datasets.synthetic_hashing(n_queries, n_db, n_bits, n_classes, flip=flip, seed=args.seed)
    about = (
        f"synthetic CIFAR-10-shaped set generated on the fly: {n_queries} queries x {n_db} database codes, "
        f"{n_bits} bits, {n_classes} classes (seed {args.seed})"
    )
    return data, about


def _save_demo(folder, queries, database, query_labels, db_labels):
    """Write the demo's data as .npy files and return the command that evaluates them."""
    import numpy as np

    import fasttie as ft

    os.makedirs(folder, exist_ok=True)
    arrays = {
        "queries": ft.unpack_codes(queries), "database": ft.unpack_codes(database),
        "query_labels": query_labels, "db_labels": db_labels,
    }
    paths = {}
    for name, array in arrays.items():
        paths[name] = os.path.join(folder, f"{name}.npy")
        np.save(paths[name], array)
    return "fasttie evaluate " + " ".join(
        f"--{name.replace('_', '-')} {shlex.quote(path)}" for name, path in paths.items()
    )


def _demo(args) -> int:
    import fasttie as ft

    (queries, database, query_labels, db_labels), about = _demo_data(args)
    print(f"fasttie demo: {about}")
    metrics = DIGITS_METRICS if args.dataset == "digits" else DEMO_METRICS
    results = {}
    started = time.perf_counter()
    for ties in TIE_MODES:
        results[ties] = ft.evaluate(
            queries, database, query_labels, db_labels, metrics=metrics, ties=ties, n_threads=args.threads
        )
    elapsed = time.perf_counter() - started
    names = list(results["average"].mean)
    width = max(len(n) for n in names) + 2
    print(f"\n{'metric':<{width}}" + "".join(f"{t:>13}" for t in TIE_MODES) + f"{'opt - pess':>13}")
    for name in names:
        row = [results[t].mean[name] for t in TIE_MODES]
        print(f"{name:<{width}}" + "".join(f"{v:>13.6f}" for v in row) + f"{row[2] - row[3]:>13.6f}")
    average = results["average"]
    legend = (
        "average = exact expectation over all orderings inside ties (fasttie's default); stable = "
        "ties in database index order (np.argsort(kind='stable')); optimistic / pessimistic = "
        "relevant first / last inside each tie. AP@k divides by the relevant items retrieved in "
        "the top k; radius means Hamming distance <= r. Queries without relevant items: "
        f"{average.n_empty} (policy: {average.settings['empty']})."
    )
    print("\n" + textwrap.fill(legend, width=95))
    print(f"4 evaluations in {elapsed:.2f} s (first call includes compilation unless cached)")
    if args.save is not None:
        command = _save_demo(args.save, queries, database, query_labels, db_labels)
        print(f"\nSaved queries.npy, database.npy, query_labels.npy, db_labels.npy to {args.save}; evaluate them with:")
        print(f"  {command}")
    return 0


def _warmup(args) -> int:
    from .warmup import warmup

    started = time.perf_counter()
    seconds = warmup(progress=None if args.quiet else lambda name, t: print(f"{name:<28} {t:6.2f} s", flush=True))
    print(f"fasttie warmup: {len(seconds)} calls in {time.perf_counter() - started:.1f} s; kernels cached")
    return 0


def _info(args) -> int:
    import platform

    import llvmlite
    import llvmlite.binding as llvm
    import numba
    import numpy

    import fasttie
    from fasttie._kernels._jit import CACHE

    features = llvm.get_host_cpu_features()
    used = [f for f in ("popcnt", "avx2", "avx512f", "avx512vpopcntdq") if features.get(f)]
    print(f"fasttie {fasttie.__version__}")
    print(f"python {platform.python_version()}, numpy {numpy.__version__}, numba {numba.__version__}, llvmlite {llvmlite.__version__}")
    print(f"cpu {llvm.get_host_cpu_name()}, features used: {', '.join(used) or 'none (software popcount)'}")
    from fasttie.parallel import available_threads

    print(f"threads per call {available_threads()} (FASTTIE_NUM_THREADS or usable CPUs; serial nogil kernels on a "
          "thread pool)")
    where = numba.config.CACHE_DIR or f"beside the package ({os.path.join(os.path.dirname(fasttie.__file__), '**', '__pycache__')})"
    print(f"compile cache: {where}" + ("" if CACHE else " (off: FASTTIE_NO_CACHE)"))
    from fasttie.warmup import cache_status

    states = cache_status()
    print("kernels: " + ", ".join(f"{door} {state}" for door, state in states.items())
          + ("" if set(states.values()) == {"cached"} else " ('fasttie warmup' compiles and caches them all)"))
    optional = []
    for module, purpose in (("matplotlib", "plots"), ("pandas", "Result.to_frame"), ("scipy", "compare t-test"),
                            ("sklearn", "demo --dataset digits"), ("tqdm", "progress bars")):
        version = _version(module)
        optional.append(f"{_DISTRIBUTIONS.get(module, module)} {version or 'missing'} ({purpose})")
    print("optional: " + ", ".join(optional))
    return 0


_DISTRIBUTIONS = {"sklearn": "scikit-learn"}  # import name -> pip name


def _version(module):
    if importlib.util.find_spec(module) is None:
        return None
    from importlib import metadata

    try:
        return metadata.version(_DISTRIBUTIONS.get(module, module))
    except metadata.PackageNotFoundError:
        return "installed"


# --------------------------------------------------------------------------------------------
# the parser
# --------------------------------------------------------------------------------------------

_INPUT_HELP = """\
inputs: PATH.npy (memory-mapped: a database larger than memory streams), or PATH.npz:KEY for
  an array saved under KEY with numpy.savez; PATH.npz without KEY reads the option's default
  key (queries, database, query_labels, db_labels) or the file's only array.
codes: (n, n_bits) matrices of +-1, 0/1 or bool; bytes packed elsewhere with --packed --bits N
  [--bitorder big (numpy.packbits) | little (faiss, MATLAB compactbit)].
relevance: --query-labels/--db-labels as 1-D integer class ids (relevant = same class) or 2-D
  multi-hot 0/1 matrices (relevant = a shared label, grade = shared labels); or --relevance
  R.npz holding indptr, indices[, grades]: per query the relevant database ids (CSR, as
  scipy.sparse.save_npz writes it). An n_queries x n_db dense matrix is never needed."""

_METRIC_HELP = (
    "metric names (repeatable, several per -m): AP, AP@k, nDCG@k, DCG@k, P@k, R@k, F1@k, RR, Rprec, "
    "ACG@k, WAP@k, P(radius=r), R(radius=r); aliases mAP@k, ndcg@k, mrr; lists P@[1,10,100]"
)


def _add_metrics(parser, default_text):
    parser.add_argument("-m", "--metric", dest="metrics", action="extend", nargs="+", metavar="METRIC",
                        help=f"{_METRIC_HELP} (default: {default_text})")


def _add_conventions(parser, *, ties, ap_denominator, gain):
    group = parser.add_argument_group("conventions")
    group.add_argument("--ties", default=ties, choices=("average", "stable", "optimistic", "pessimistic", "trec")
                       if ties == "trec" else TIE_MODES, help=f"order inside ties (default {ties})")
    group.add_argument("--ap-denominator", default=ap_denominator, choices=("retrieved", "total", "min"),
                       help=f"AP@k denominator: relevant retrieved in the top k, R, or min(k, R) (default {ap_denominator})")
    group.add_argument("--gain", default=gain, choices=("exp2", "linear"),
                       help=f"DCG gain: 2^g - 1 or g (default {gain})")
    hashing = ties != "trec"
    group.add_argument("--empty", default="zero",
                       choices=("zero", "skip", "one", "error") + (("skip_missed",) if hashing else ()),
                       help="queries without relevant items: score 0, skip (NaN, left out of means), 1, or error"
                       + ("; skip_missed: also skip a metric's queries with no relevant item retrieved in its top k "
                          "(HashNet's protocol)" if hashing else "") + " (default zero)")


def _add_hashing_inputs(parser, *, queries):
    group = parser.add_argument_group("inputs")
    if queries:
        group.add_argument("--queries", required=True, metavar="Q", help="query codes (.npy or .npz[:KEY])")
    group.add_argument("--database", required=queries, metavar="D", help="database codes (.npy or .npz[:KEY])")
    group.add_argument("--query-labels", metavar="QL", help="query class ids (1-D) or multi-hot labels (2-D)")
    group.add_argument("--db-labels", metavar="DL", help="database class ids (1-D) or multi-hot labels (2-D)")
    group.add_argument("--relevance", metavar="R", help="relevant database ids per query: .npz with indptr, indices[, grades]")
    group.add_argument("--packed", action="store_true", help="codes are bytes packed elsewhere (needs --bits)")
    group.add_argument("--bits", type=_positive_int, metavar="N", help="code length (required with --packed)")
    group.add_argument("--bitorder", default="big", choices=("big", "little"),
                       help="bit order of packed bytes: big = numpy.packbits, little = faiss / compactbit (default big)")
    parser.add_argument("--protocol", choices=tuple(PROTOCOLS),
                        help="standard protocol's mAP: cifar10 = mAP@ALL, nuswide and coco = mAP@5000, imagenet100 = mAP@1000")


def _add_plot(parser):
    parser.add_argument("--plot", metavar="FILE", help="write PR-by-radius, P@N and R@N curves to FILE (.png or .pdf)")
    parser.add_argument("--plot-size", type=_plot_size, default=(1200, 400), metavar="WxH",
                        help="plot size in pixels (default 1200x400)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fasttie`` command.

    Returns
    -------
    argparse.ArgumentParser
        With subcommands evaluate, trec, compare, demo and info; its errors are one line on
        stderr and exit code 2.
    """
    from . import __version__

    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="fasttie", formatter_class=formatter,
        description="Exact tie-aware retrieval metrics for binary codes (Hamming ranking) and ranked lists.",
        epilog="Run 'fasttie COMMAND --help' for the options and examples of each command. Errors are one "
        "line (exit code 2); set FASTTIE_TRACEBACK=1 to see the full traceback.",
    )
    parser.add_argument("--version", action="version", version=f"fasttie {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    evaluate = sub.add_parser(
        "evaluate", help="score query codes against a database of codes (.npy / .npz)", formatter_class=formatter,
        description="Rank the database by Hamming distance for every query and report tie-aware metrics.",
        epilog=_INPUT_HELP + """

examples:
  fasttie evaluate --queries q.npy --database db.npy --query-labels ql.npy --db-labels dl.npy
  fasttie evaluate --queries data.npz --database data.npz --query-labels data.npz --db-labels data.npz \\
      --protocol cifar10 -m 'P@[1,100]' nDCG@100 'P(radius=2)' --json
  fasttie evaluate --queries q.u8.npy --database db.u8.npy --packed --bits 64 --bitorder little \\
      --relevance gt.npz -m R@100 --per-query per_query.csv --plot curves.png

output: a table of metric, value and the conventions that value depends on; --json prints the
means and settings (per-query values go to --per-query FILE, .json or .csv); --csv prints
metric,value rows. Exit code 0 on success, 2 on a usage error (one line on stderr).""",
    )
    _add_hashing_inputs(evaluate, queries=True)
    _add_metrics(evaluate, ", ".join(DEFAULT_METRICS))
    _add_conventions(evaluate, ties="average", ap_denominator="retrieved", gain="exp2")
    output = evaluate.add_argument_group("output")
    fmt = output.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the means and settings as JSON")
    fmt.add_argument("--csv", action="store_true", help="print metric,value rows")
    output.add_argument("--digits", type=_digits, default=4, help="decimals in the table (default 4)")
    output.add_argument("--per-query", metavar="FILE", help="write per-query values to FILE (.json or .csv)")
    _add_plot(output)
    output.add_argument("--label", help="legend label of the plot (default: the queries file name)")
    output.add_argument("--curves", action="store_true",
                        help="also keep the curves in --per-query FILE.json (for 'fasttie compare --plot')")
    evaluate.add_argument("--threads", type=_positive_int, metavar="N", help="threads (default: all)")
    evaluate.add_argument("--quiet", action="store_true", help="no progress bar and no notes on stderr")
    scale = evaluate.add_argument_group(
        "beyond one machine (pip install 'fasttie[dask]')",
        "--database (and --db-labels) may be a quoted glob of .npy shards, e.g. 'db/part-*.npy' (each file is a "
        "shard), or a zarr store DIR.zarr (its row chunks are the shards): evaluated by fasttie.dask with the "
        "same output, bitwise equal to one machine",
    )
    where = scale.add_mutually_exclusive_group()
    where.add_argument("--dask", action="store_true",
                       help="run on a local Dask cluster (one worker process per CPU, one thread each)")
    where.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster at ADDRESS (tcp://host:8786)")
    scale.add_argument("--query-chunk", type=_positive_int, metavar="N", help="queries per Dask task (default: all)")
    evaluate.set_defaults(handler=_evaluate)

    trec = sub.add_parser(
        "trec", help="evaluate a TREC run against qrels, like trec_eval", formatter_class=formatter,
        description="trec_eval-compatible evaluation of a run file against qrels, with fasttie's metric names.",
        epilog="""\
files: qrels lines 'qid iter docno rel'; run lines 'qid Q0 docno rank score tag' (rank is ignored:
  the order comes from the scores, ties broken by docno descending, as trec_eval).
metric names: fasttie's (AP, nDCG@10, P@5, RR, Rprec, R@100) or trec_eval's (map, ndcg_cut_10,
  P_5, P.5,10, recip_rank, recall_100); the output uses fasttie's names.

examples:
  fasttie trec tests/data/qrels.txt tests/data/run.txt
  fasttie trec qrels.txt run.txt -m AP nDCG@10 'P@[5,10]' -q
  fasttie trec qrels.txt run.txt -m map P_5 -c -l 2 --ties average --json

output: 'measure <tab> qid <tab> value' lines, per query with -q (as trec_eval -q), then 'all'.""",
    )
    trec.add_argument("qrels", metavar="QRELS", help="qrels file")
    trec.add_argument("run", metavar="RUN", help="run file")
    _add_metrics(trec, ", ".join(TREC_METRICS))
    trec.add_argument("-q", "--per-query", action="store_true", help="print every query's values (trec_eval -q)")
    trec.add_argument("-c", "--complete", action="store_true",
                      help="average over every judged query, 0 for those missing from the run (trec_eval -c)")
    trec.add_argument("-l", "--level", type=float, default=1, metavar="L",
                      help="grades >= L are relevant (trec_eval -l; default 1)")
    _add_conventions(trec, ties="trec", ap_denominator="total", gain="linear")
    fmt = trec.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the result as JSON (per query with -q)")
    fmt.add_argument("--csv", action="store_true", help="print measure,query,value rows")
    trec.add_argument("--digits", type=_digits, default=4, help="decimals (default 4, as trec_eval)")
    trec.add_argument("--per-query-file", metavar="FILE", help="also write per-query values to FILE (.json or .csv)")
    trec.set_defaults(handler=_trec)

    compare = sub.add_parser(
        "compare", help="paired significance tests between two or more methods", formatter_class=formatter,
        description="Compare methods on the same queries: means, paired t-test and paired randomization "
        "test per metric, corrected for the number of pairs.",
        epilog=_INPUT_HELP + """

examples:
  fasttie compare itq.json lsh.json dsh.json                 (files from 'evaluate --per-query')
  fasttie compare ITQ=itq.csv LSH=lsh.csv -m AP@1000 --correction bonferroni
  fasttie compare --database db.npy --query-labels ql.npy --db-labels dl.npy \\
      --method ITQ=itq_q.npy --method LSH=lsh_q.npy -m AP@1000 P@100 --plot curves.png

(with --method, each method's query codes are scored against the same database codes; give
codes of different methods their own database by evaluating them separately with
'fasttie evaluate --per-query' and comparing the files.)

output: one row per method, one column per metric; a letter marks the methods a value beats
significantly (randomization test after correction).""",
    )
    compare.add_argument("results", nargs="*", metavar="RESULT",
                         help="per-query result files (.json or .csv), optionally NAME=FILE")
    compare.add_argument("--method", action="append", metavar="NAME=QUERIES",
                         help="a method's query codes (.npy or .npz[:KEY]); repeat for each method")
    _add_hashing_inputs(compare, queries=False)
    _add_metrics(compare, "every metric common to the result files, or " + ", ".join(DEFAULT_METRICS))
    _add_conventions(compare, ties="average", ap_denominator="retrieved", gain="exp2")
    tests = compare.add_argument_group("significance tests")
    tests.add_argument("--permutations", type=_positive_int, default=10000, metavar="N",
                       help="random sign flips of the randomization test (default 10000; exact enumeration when 2^n_queries <= N)")
    tests.add_argument("--seed", type=int, default=0, help="seed of the randomization test (default 0)")
    tests.add_argument("--correction", default="holm", choices=("holm", "bonferroni", "none"),
                       help="multiple-comparison correction over the pairs of each metric (default holm)")
    tests.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    _add_plot(compare)
    compare.add_argument("--threads", type=_positive_int, metavar="N", help="threads (default: all)")
    compare.add_argument("--quiet", action="store_true", help="no progress bar and no notes on stderr")
    compare.set_defaults(handler=_compare)

    demo = sub.add_parser(
        "demo", help="evaluate a built-in data set under every tie convention", formatter_class=formatter,
        description="Evaluate a data set that needs no download under every tie convention, side by side.",
        epilog="""\
data sets: synthetic (default) = a CIFAR-10-shaped set generated on the fly (1000 queries x 59000
  codes, 64 bits, 10 classes); digits = scikit-learn's bundled 8x8 digit images hashed by ITQ
  (200 queries x 1597 codes, 32 bits; needs scikit-learn).

examples:
  fasttie demo
  fasttie demo --dataset digits --bits 16
  fasttie demo --queries 200 --db 10000 --save demo_data && fasttie evaluate ... (printed by --save)""",
    )
    demo.add_argument("--dataset", default="synthetic", choices=("synthetic", "digits"), help="data set (default synthetic)")
    demo.add_argument("--queries", type=_positive_int, default=None, help="number of queries (default 1000; digits 200)")
    demo.add_argument("--db", type=_positive_int, default=None, help="database codes (synthetic; default 59000)")
    demo.add_argument("--bits", type=_positive_int, default=None,
                      help="code length (synthetic: a multiple of 64, default 64; digits: 1-64, default 32)")
    demo.add_argument("--classes", type=_positive_int, default=None, help="number of classes (synthetic; default 10)")
    demo.add_argument("--flip", type=float, default=None,
                      help="bit flip probability around class prototypes (synthetic; default 0.25)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--threads", type=_positive_int, default=None, help="threads (default: all)")
    demo.add_argument("--save", metavar="DIR",
                      help="also write queries.npy, database.npy, query_labels.npy, db_labels.npy to DIR")
    demo.set_defaults(handler=_demo)

    info = sub.add_parser("info", help="versions, threads, CPU features and the compile cache",
                          description="Versions, threads, CPU features used, the compile cache directory and "
                                      "which front doors' kernels are cached.")
    info.set_defaults(handler=_info)

    warm = sub.add_parser("warmup", help="compile and cache every kernel once (for images and clusters)",
                          description="Call every front door in every tie mode on tiny data, so that numba compiles "
                                      "and caches every kernel now rather than on a user's first call.")
    warm.add_argument("--quiet", action="store_true", help="print only the summary line")
    warm.set_defaults(handler=_warmup)
    for subparser in sub.choices.values():
        subparser.set_defaults(parser=subparser)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``fasttie`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 on a usage error (reported as one line on stderr).
    """
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # reported by the subcommand's parser, which knows its own options
            args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as stop:  # --help, --version, usage errors: return the code, do not exit
        return stop.code if isinstance(stop.code, int) else 2
    try:
        return args.handler(args)
    except BrokenPipeError:  # `fasttie ... | head`: the reader left; stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout at exit
        return 1
    except (InputError, ImportError, OSError) as error:
        # a user's mistake: one line; any other exception (a bug) keeps its traceback
        if os.environ.get("FASTTIE_TRACEBACK"):  # for bug reports: the full traceback
            raise
        if isinstance(error, OSError) and not isinstance(error, (FileNotFoundError, PermissionError,
                                                                 IsADirectoryError, NotADirectoryError)):
            raise
        message = str(error) if not isinstance(error, OSError) or not error.filename else (
            f"{error.strerror}: {error.filename}"
        )
        print(f"fasttie: error: {' '.join(message.split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
