"""``fasttie demo``: the synthetic or digits set, evaluated in every tie mode."""

from __future__ import annotations

import os
import shlex
import textwrap
import time

import fasttie as ft

from .. import warmup
from ..metrics import grade_order_bounds, parse_metrics
from .common import DEMO_METRICS, DIGITS_METRICS, TIE_MODES, UsageError


def _demo_data(args):

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


def demo_command(args) -> int:

    (queries, database, query_labels, db_labels), about = _demo_data(args)
    print(f"fasttie demo: {about}")
    metrics = DIGITS_METRICS if args.dataset == "digits" else DEMO_METRICS
    results = {}
    started = time.perf_counter()
    helper = None
    if warmup.kernel_cached("hamming_ties.finish_stable") is False:
        # cold: the tie walk's driver, the stable pass and the extremes' own kernels compile in a helper
        # meanwhile, while this process compiles the counts, the tie walk and the spread (numba compiles one
        # function at a time; the driver first: this process needs it after the counts)
        helper = warmup.compile_in_helper("stable", metrics, queries.n_bits, extremes="retrieved",
                                          walk_driver=(database.n, 2))  # class labels: grades 0 and 1
    for ties in TIE_MODES:
        if ties == "stable" and helper is not None:
            helper.wait()  # done, failed or stopped after a while: then the call compiles here
        if ties != "average":
            results[ties] = ft.evaluate(
                queries, database, query_labels, db_labels, metrics=metrics, ties=ties, n_threads=args.threads
            )
            continue
        # one pass counts the ties; from the counts, bitwise ft.evaluate's average, with its extremes and standard
        # deviation over tie orders
        stats = ft.tie_stats(queries, database, query_labels, db_labels, n_threads=args.threads)
        average = stats.finalize(metrics, ties=ties, spread=True, n_threads=args.threads)
    elapsed = time.perf_counter() - started
    names = list(metrics)
    bounded = {m.name: grade_order_bounds(m, "retrieved") for m in parse_metrics(names)}
    width = max(len(n) for n in names) + 2
    columns = ("average", "tie std", *TIE_MODES[1:], "tie range")
    print(f"\n{'metric':<{width}}" + "".join(f"{c:>13}" for c in columns))
    for name in names:
        row = [average.mean[name], average.mean_tie_std[name], *(results[t].mean[name] for t in TIE_MODES[1:]),
               average.mean_tie_max[name] - average.mean_tie_min[name]]
        mark = "" if bounded[name] else "*"
        print(f"{name:<{width}}" + "".join(f"{v:>13.6f}" for v in row) + mark)
    unbounded = [name for name in names if not bounded[name]]
    legend = (
        "average = exact expectation over all orderings inside ties (fasttie's default); stable = "
        "ties in database index order (np.argsort(kind='stable')); optimistic / pessimistic = "
        "each tie by grade, relevant first / last: reproducible orders, and the best and worst "
        "tie orders of every metric here"
        + (f" but {', '.join(unbounded)} (*)" if unbounded else "")
        + "; tie std = standard deviation of the average over uniformly random orders inside ties (spread=True, "
        "exact: docs/ties.md, section 9); tie range = highest minus lowest average over every order inside ties "
        "(spread=True or 'range', exact"
        + (", wider than optimistic - pessimistic where marked *" if unbounded else "") + ")"
        + ". AP@k divides by the relevant items retrieved in the top k; radius means Hamming "
        "distance <= r" + (" (the synthetic codes flip a quarter of their bits: no database code is within the "
                           "usual radius 2 of a query)" if args.dataset != "digits" and args.flip is None else "")
        + f". Queries without relevant items: {average.n_empty} (policy: {average.settings['empty']})."
    )
    print("\n" + textwrap.fill(legend, width=95))
    print(f"{len(TIE_MODES)} evaluations in {elapsed:.2f} s (first call includes compilation unless cached)")
    if args.save is not None:
        command = _save_demo(args.save, queries, database, query_labels, db_labels)
        print(f"\nSaved queries.npy, database.npy, query_labels.npy, db_labels.npy to {args.save}; evaluate them with:")
        print(f"  {command}")
    return 0
