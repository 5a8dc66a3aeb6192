"""``fasttie trec``: TREC qrels and runs, trec_eval-style output."""

from __future__ import annotations

import json
import os
import sys

import fasttie as ft

from ..errors import InputError
from ..report import format_trec, format_trec_csv
from .common import (
    _TREC_OPTIONS, RESULT_EXTENSIONS, TREC_METRICS, UsageError, _check_output_path, cli_words, resolve_metrics,
)

_OPTIONS = {**_TREC_OPTIONS, "max_retrieved": "-M/--max-retrieved", "judged_only": "-J/--judged-only"}


def _trec(args) -> int:


    default = TREC_METRICS
    if args.ties == "average":  # interpolated precision needs a fixed order (ties="average" refuses it)
        default = tuple(name for name in TREC_METRICS if not name.startswith("IPrec"))
    metrics = resolve_metrics(args.metrics or default, trec_names=True)
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
            max_retrieved=args.max_retrieved, judged_only=args.judged_only,
        )
    except InputError as error:
        raise cli_words(error, _OPTIONS) from None
    if args.json:
        print(json.dumps(result.to_dict(per_query=args.per_query)))
    elif args.csv:
        print(format_trec_csv(result, per_query=args.per_query))
    else:
        print(format_trec(result, per_query=args.per_query, digits=args.digits))
    if args.per_query_file is not None:
        result.save(args.per_query_file)
    note = query_set_note(result.settings)
    if note:
        print(f"fasttie: {note}", file=sys.stderr)
    return 0


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
