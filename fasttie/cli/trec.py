"""``fasttie trec``: TREC qrels and runs, trec_eval's text (its measure names, order and layout)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import fasttie as ft

from ..errors import InputError
from ..metrics import COUNTS, FIXED_ORDER_ONLY, base_of
from ..metrics.families import asked_names
from ..metrics.trec_eval_measures import is_trec_eval_measure, select_trec_eval
from ..report import format_trec, format_trec_csv
from ..result import Result
from .common import _TREC_OPTIONS, RESULT_EXTENSIONS, UsageError, _check_output_path, cli_words, resolve_metrics

_OPTIONS = {**_TREC_OPTIONS, "max_retrieved": "-M/--max-retrieved", "judged_only": "-J/--judged-only"}


def _trec(args) -> int:
    keys, runid, notes = _printed_names(args)
    if args.per_query_file is not None:
        _check_output_path(args.per_query_file, RESULT_EXTENSIONS, "--per-query-file")
        if len(args.run) > 1:
            raise UsageError("--per-query-file: takes one run; evaluate the runs one at a time, or use --json")
    for option, path in (("QRELS", args.qrels), *(("RUN", run) for run in args.run)):
        if not os.path.isfile(path):
            raise UsageError(f"{option}: file not found: {path}")
    level = int(args.level) if float(args.level).is_integer() else args.level
    # relstring is text: trec_eval prints it per query (-q) only, and fasttie in trec_eval's text only
    lengths = {key: int(metric.rpartition("@")[2]) for key, metric in keys.items() if base_of(metric) == "relstring"}
    if lengths and (args.json or args.csv):
        notes.append(f"left out of --json and --csv (text, printed in trec_eval's layout only): {', '.join(lengths)}")
    if not args.per_query or args.json or args.csv:
        lengths = {}
    values = {key: metric for key, metric in keys.items() if base_of(metric) != "relstring"}
    if not values and not lengths:
        raise UsageError("-m/--metric: relstring prints per query only: add -q, or another measure")
    try:
        qrels = ft.trec.read_qrels(args.qrels)
        results = []  # (path, result, run tag) per run, in the order given
        texts = []  # per run: printed name -> {query id: relstring}
        for path in args.run:
            run = ft.trec.read_run(path)
            strings = {key: ft.trec.relstring(qrels, run, length=length, ties=args.ties, complete=args.complete,
                                              max_retrieved=args.max_retrieved, judged_only=args.judged_only)
                       for key, length in lengths.items()}
            result = _values(qrels, run, values, args, level) if values else \
                Result(mean={}, per_query={}, n_queries=len(next(iter(strings.values()))), n_empty=0,
                       query_ids=list(next(iter(strings.values()))))
            if strings:  # a placeholder column holds each string's place in the print order
                blank = np.full(result.n_queries, np.nan)
                result.per_query = {key: result.per_query.get(key, blank) for key in keys
                                    if key in values or key in strings}
            results.append((path, result, run.name))
            texts.append(strings)
    except InputError as error:
        raise cli_words(error, _OPTIONS) from None
    _print(results, args, runid, texts)
    if args.per_query_file is not None:
        results[0][1].save(args.per_query_file)
    if args.compare:
        _print_comparison(results, keys)
    notes.append(query_set_note(results[0][1].settings))
    for note in filter(None, notes):
        print(f"fasttie: {note}", file=sys.stderr)
    return 0


def _values(qrels, run, keys, args, level):
    """fasttie.trec.evaluate of the measures ``keys`` maps printed names to, keyed by those names."""
    result = ft.trec.evaluate(
        qrels, run, list(dict.fromkeys(keys.values())), ties=args.ties, ap_denominator=args.ap_denominator,
        gain=args.gain, relevance_level=level, empty=args.empty, complete=args.complete,
        max_retrieved=args.max_retrieved, judged_only=args.judged_only, spread=args.spread,
    )
    return result.keyed_as(keys)


def _printed_names(args):
    """Printed name -> fasttie metric in print order, whether a runid line is printed, and notes
    on what was left out.

    trec_eval's measures (``-m map P.5,10 all_trec``; ``official`` when no -m) print under
    trec_eval's names in its order; a list with fasttie's names (``AP@10``, ``ERR@20``) prints in
    the order asked, those under the names as typed.
    ``--fasttie-names`` prints every measure under fasttie's canonical name."""
    specs = args.metrics or ["official"]
    try:
        if all(is_trec_eval_measure(spec) for spec in specs):  # trec_eval's -m: its print order
            selection = select_trec_eval(specs)
            keys, runid, left_out = selection.keys, selection.runid, selection.left_out
        else:  # fasttie's names among them: the order asked, trec_eval's measures expanded in place
            keys, runid, left_out = {}, False, []
            for spec in specs:
                if is_trec_eval_measure(spec):
                    selection = select_trec_eval([spec])
                    keys.update(selection.keys)
                    runid, left_out = runid or selection.runid, left_out + selection.left_out
                else:
                    resolve_metrics([spec], trec_names=True)  # unknown: one line, the closest valid name
                    keys.update(asked_names([spec]))
    except ValueError as error:
        raise UsageError(str(error)) from None
    notes = []
    if left_out:
        notes.append(f"trec_eval measures fasttie does not compute, left out: {', '.join(left_out)}")
    if args.ties not in ("trec", "stable", "optimistic", "pessimistic"):
        fixed = [key for key, metric in keys.items() if base_of(metric) in FIXED_ORDER_ONLY]
        if fixed:
            notes.append(f"left out under --ties {args.ties} (interpolated precision, G and relstring need one "
                         f"order of the documents): {', '.join(fixed)}")
            keys = {key: metric for key, metric in keys.items() if key not in fixed}
    if not keys:
        raise UsageError(f"-m/--metric: nothing fasttie computes in {' '.join(specs)}")
    if args.fasttie_names:
        canonical = {metric: metric for metric in resolve_metrics(
            [metric for metric in keys.values() if base_of(metric) != "relstring"], trec_names=True)}
        canonical.update((metric, metric) for metric in keys.values() if base_of(metric) == "relstring")
        return canonical, False, notes
    return keys, runid, notes


def _print(results, args, runid, texts):
    several = len(results) > 1
    if args.json:
        dicts = [{"run": path, **({"runid": name} if name else {}), **result.to_dict(per_query=args.per_query)}
                 for path, result, name in results]
        print(json.dumps(dicts if several else dicts[0]))
        return
    lines = []
    for (path, result, name), strings in zip(results, texts):
        if not args.csv:  # trec_eval's text; several runs one after the other, each with its runid line
            lines.append(format_trec(result, per_query=args.per_query, digits=args.digits,
                                     runid=name if runid else None, texts=strings))
            continue
        header, *rows = format_trec_csv(result, per_query=args.per_query).splitlines()
        if not several:
            lines.extend([header, *rows])
            continue
        if not lines:
            lines.append(f"run,{header}")
        lines.extend(f"{_csv_run(path)},{row}" for row in rows)
    print("\n".join(lines))


def _csv_run(path):
    return f'"{path}"' if "," in path or '"' in path else path


def _print_comparison(results, keys):
    """The paired tests between the runs (means, t-test, randomization test, Holm), by run tag."""
    if len(results) < 2:
        raise UsageError("--compare: give two or more runs")
    names = [name or path for path, _, name in results]
    if len(set(names)) < len(names):  # the same tag twice: the paths tell the runs apart
        names = [path for path, _, _ in results]
    if len(set(names)) < len(names):
        raise UsageError("--compare: the same run twice")
    metrics = [key for key, metric in keys.items() if base_of(metric) not in (*COUNTS, "GMAP", "GMBpref")]
    try:
        comparison = ft.compare({name: result for name, (_, result, _) in zip(names, results)},
                                metrics=metrics)
    except ValueError as error:
        raise UsageError(f"--compare: {error} (-c averages every judged query in every run)") from None
    print(f"\n{comparison}\n\n{comparison.format_tests()}")


def query_set_note(settings) -> str | None:
    """One line on the queries averaged, when the run and the qrels hold different ones (the
    libraries differ there: trec_eval and pytrec_eval average the run's judged queries,
    ir_measures and ranx every judged query, scoring the missing ones 0)."""
    missing, unjudged = settings.get("judged_not_in_run", 0), settings.get("in_run_not_judged", 0)
    parts = []
    if missing:
        parts.append(f"{missing} judged quer{'y is' if missing == 1 else 'ies are'} not in the run: "
                     + ("scored 0 (-c)" if settings.get("complete") else
                        "left out of the means, as trec_eval does (-c scores them 0, as trec_eval -c, ir_measures "
                        "and ranx's make_comparable do)"))
    if unjudged:
        parts.append(f"{unjudged} run quer{'y has' if unjudged == 1 else 'ies have'} no judgments: ignored")
    return "; ".join(parts) or None
