"""``fasttie trec``: TREC qrels and runs, trec_eval's text (its measure names, order and layout)."""

from __future__ import annotations

import json
import os
import re
import sys

import numpy as np

import fasttie as ft

from ..errors import InputError
from ..metrics import COUNTS, FIXED_ORDER_ONLY, aggregate, base_of
from ..metrics.families import asked_names
from ..metrics.trec_eval_measures import is_trec_eval_measure, measure_named, select_trec_eval
from ..report.tables import format_trec, format_trec_csv
from ..result import Result
from .common import TREC_OPTIONS, RESULT_EXTENSIONS, UsageError, check_output_path, cli_words, resolve_metrics

_OPTIONS = {**TREC_OPTIONS, "max_retrieved": "-M/--max-retrieved", "judged_only": "-J/--judged-only"}


def trec_command(args) -> int:
    keys, runid, notes = _printed_names(args)
    if not args.summary and (args.json or args.csv):
        raise UsageError("-n/--nosummary: leaves out the 'all' lines of trec_eval's text; --json and --csv keep them")
    if args.per_query_file is not None:
        check_output_path(args.per_query_file, RESULT_EXTENSIONS, "--per-query-file")
        if len(args.run) > 1:
            raise UsageError("--per-query-file: takes one run; evaluate the runs one at a time, or use --json")
    for option, path in (("QRELS", args.qrels), *(("RUN", run) for run in args.run)):
        if not os.path.isfile(path):
            raise UsageError(f"{option}: file not found: {path}{explain_extra([path])}")
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
            result = _values(qrels, run, values, args) if values else \
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


# trec_eval's rbp_resid, printed as rbp_resid or with its parameters (rbp_resid_p=0.95)
_RESIDUAL = re.compile(r"^rbp_resid(_.*)?$")
# retrieved - relevant retrieved - judged non-relevant retrieved: the unjudged retrieved (a negative
# grade is unjudged, as in trec_eval; m_num_nonrel_judged_ret.c subtracts them the same way)
_UNJUDGED_COUNTS = ("NumRet", "NumRelRet", "NumNonRelJudgedRet")


def as_trec_eval_prints(result, keys, qrels, *, missing, judged_only):
    """``result`` keyed by the printed names of ``keys``, with trec_eval's values where its
    measure differs from the fasttie metric it is computed with.

    Parameters
    ----------
    result : Result
        Of :func:`fasttie.trec.evaluate`, keyed by fasttie's names, with NumRet, NumRelRet and
        NumNonRelJudgedRet where ``keys`` holds trec_eval's ``rbp_resid``.
    keys : dict of str to str
        Printed name -> fasttie metric.
    qrels : Qrels
        The qrels evaluated against.
    missing : ndarray of bool, shape (n_queries,)
        The queries of ``result`` the run lacks (judged queries averaged under ``-c``).
    judged_only : bool
        Whether unjudged documents were dropped (``-J``).

    Returns
    -------
    Result

    Notes
    -----
    * ``rbp_resid``: trec_eval sets it only for a query that retrieved an unjudged document (a
      document without a judgment, or with a negative grade); elsewhere it stays 0, where
      fasttie's RBPResid is the tail p^N past the N retrieved (m_rbp_resid.c sets the value only
      ``if (unj_so_far)``). A judged query missing from the run (``-c``) is evaluated on one
      unjudged placeholder document, and trec_eval.c then zeroes the value named exactly
      ``rbp_resid``: 0; named with parameters (``rbp_resid_p=0.5``) it keeps the placeholder's
      p + (1 - p) = 1, fasttie's value there (the whole tail), unless ``-J`` dropped the
      placeholder (0). The mean is the mean of those values, as trec_eval's.
    * ``num_rel`` under ``-c``: trec_eval's summary counts every qrels line with a grade > 0,
      of every query, whatever ``-l`` is (m_num_rel.c, te_calc_avg_num_rel), not the sum of the
      per-query values it prints (grade >= ``-l``).
    """
    keyed = result.keyed_as(keys)
    for key, metric in keys.items():
        if _RESIDUAL.match(key):
            retrieved, relevant, nonrelevant = (result.per_query[count] for count in _UNJUDGED_COUNTS)
            unjudged = retrieved - relevant - nonrelevant > 0
            if key != "rbp_resid" and not judged_only:
                unjudged |= missing
            for field_name in ("per_query", "tie_min", "tie_max"):  # tie_std: already 0 where all is judged
                values = getattr(keyed, field_name)
                if key in values:  # a new array: another printed name may share the metric's
                    values[key] = np.where(unjudged, values[key], 0.0)
            keyed.mean[key] = aggregate(metric, keyed.per_query[key])
            for field_name, per_query in (("mean_tie_min", "tie_min"), ("mean_tie_max", "tie_max")):
                if key in getattr(keyed, field_name):
                    getattr(keyed, field_name)[key] = aggregate(metric, getattr(keyed, per_query)[key])
        elif key == "num_rel" and result.settings.get("complete"):
            total = float(np.count_nonzero(np.asarray(qrels.rel) > 0))
            for field_name in ("mean", "mean_tie_min", "mean_tie_max"):
                if key in getattr(keyed, field_name):
                    getattr(keyed, field_name)[key] = total
    return keyed


def explain_extra(words) -> str:
    """Why words of the command line were not taken, where they name measures: ``-m`` takes one
    value each time, as trec_eval's (``-m map P.5`` leaves P.5 to the files); else ""."""
    measures = [word for word in words if not word.startswith("-") and _is_measure(word)]
    return f" (-m takes one measure each time, as trec_eval's: -m {' -m '.join(measures)})" if measures else ""


def _is_measure(text):
    """Whether ``text`` names a measure (trec_eval's or fasttie's) rather than a file."""
    try:
        return is_trec_eval_measure(text) or bool(resolve_metrics([text], trec_names=True))
    except InputError:
        return False


def _values(qrels, run, keys, args):
    """fasttie.trec.evaluate of the measures ``keys`` maps printed names to, keyed by those names,
    with trec_eval's values where its measure differs from the fasttie metric
    (:func:`as_trec_eval_prints`)."""
    metrics = list(dict.fromkeys(keys.values()))
    if any(map(_RESIDUAL.match, keys)):  # the counts that tell whether a query retrieved an unjudged document
        metrics += [count for count in _UNJUDGED_COUNTS if count not in metrics]
    result = ft.trec.evaluate(
        qrels, run, metrics, ties=args.ties, ap_denominator=args.ap_denominator,
        gain=args.gain, relevance_level=args.level, empty=args.empty, complete=args.complete,
        max_retrieved=args.max_retrieved, judged_only=args.judged_only, spread=args.spread,
    )
    missing = np.isin(result.query_ids, run.query_ids, invert=True)  # judged, not in the run (-c)
    return as_trec_eval_prints(result, keys, qrels, missing=missing, judged_only=args.judged_only)


def _printed_names(args):
    """Printed name -> fasttie metric in print order, whether a runid line is printed, and notes
    on what was left out.

    trec_eval's measures (``-m map -m P.5,10 -m all_trec``; ``official`` when no -m) print under
    trec_eval's names in its order; a list with fasttie's names (``AP@10``, ``ERR@20``) prints in
    the order asked, those under the names as typed, each trec_eval measure where it is first
    named (with its first parameters, as trec_eval reads a measure named twice).
    ``--fasttie-names`` prints every measure under fasttie's canonical name."""
    specs = args.metrics or ["official"]
    try:
        if all(is_trec_eval_measure(spec) for spec in specs):  # trec_eval's -m: its print order
            selection = select_trec_eval(specs)
            keys, runid, left_out = selection.keys, selection.runid, selection.left_out
        else:  # fasttie's names among them: the order asked, trec_eval's measures expanded in place
            keys, runid, left_out, named = {}, False, [], set()
            for spec in specs:
                if is_trec_eval_measure(spec):
                    measure = measure_named(spec)
                    if measure in named:  # read with its first mention
                        continue
                    named.add(measure)
                    same = [s for s in specs if is_trec_eval_measure(s) and measure_named(s) == measure]
                    selection = select_trec_eval(same)
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
    if args.ties == "average":  # the one mode without a single order
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
                                     runid=name if runid else None, summary=args.summary, texts=strings))
            continue
        header, *rows = format_trec_csv(result, per_query=args.per_query).splitlines()
        if not several:
            lines.extend([header, *rows])
            continue
        if not lines:
            lines.append(f"run,{header}")
        lines.extend(f"{_csv_run(path)},{row}" for row in rows)
    text = "\n".join(filter(None, lines))
    if text:  # -n without -q: nothing, as trec_eval
        print(text)


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
    libraries differ there: trec_eval 9 and pytrec_eval average the run's judged queries,
    ir_measures and ranx every judged query, scoring the missing ones 0, and trec_eval 10.0
    stops without -c: "result qid ... not found in qrels", exit code 4, nothing printed)."""
    missing, unjudged = settings.get("judged_not_in_run", 0), settings.get("in_run_not_judged", 0)
    parts = []
    if missing:
        parts.append(f"{missing} judged quer{'y is' if missing == 1 else 'ies are'} not in the run: "
                     + ("scored 0 (-c)" if settings.get("complete") else
                        "left out of the means, as trec_eval 9 and pytrec_eval do (trec_eval 10.0 stops without -c; "
                        "-c scores them 0, as trec_eval -c, ir_measures and ranx's make_comparable do)"))
    if unjudged:
        parts.append(f"{unjudged} run quer{'y has' if unjudged == 1 else 'ies have'} no judgments: ignored")
    return "; ".join(parts) or None
