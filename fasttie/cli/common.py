"""What every subcommand shares: option values and names, one-line usage errors, metric names, inputs."""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import math
import os
import re
import sys

import fasttie as ft

from ..options import HAMMING_TIES
from ..errors import InputError
from .loaders import load_array, load_codes, load_relevance, split_key
from ..metrics import parse_metric
from ..plots import plot_curves


# radius 12 and 20: the synthetic codes flip a quarter of their bits, so none lies within the usual
# radius 2 of a query (P(radius=2) would be 0 for every query)
DEMO_METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000", "R@1000", "P(radius=12)", "P(radius=20)")
# digits: a 1,597-image database with about 160 images per class, so cutoffs at 100
DIGITS_METRICS = ("AP", "AP@100", "nDCG@100", "P@100", "R@100", "P(radius=2)", "P(radius=6)")
TIE_MODES = HAMMING_TIES  # the demo's columns: evaluate's tie modes
# the field's usual report: mAP over the whole list and at 1000, nDCG@1000, P@1000, P within radius 2
DEFAULT_METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000", "P(radius=2)")
# trec_eval's default measures, in the order it prints them (its runid aside)
# standard hashing protocols: the mAP cutoff each one reports
PROTOCOLS = {"cifar10": "AP", "nuswide": "AP@5000", "coco": "AP@5000", "imagenet100": "AP@1000"}
PLOT_EXTENSIONS = (".png", ".pdf")
RESULT_EXTENSIONS = (".json", ".csv")


class UsageError(InputError):
    """A mistake in the command line (printed as one line, exit code 2)."""


# --------------------------------------------------------------------------------------------
# argparse with one-line errors
# --------------------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
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


def plot_size_pixels(text):
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not match or min(int(match.group(1)), int(match.group(2))) < 50:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels (each >= 50), e.g. 1200x400; got {text!r}")
    return int(match.group(1)), int(match.group(2))


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def trec_eval_level(text):
    """``-l``'s value as trec_eval reads it: ``atol``, the integer part of the number as written
    (``1.5`` -> 1, ``-0.5`` -> 0, ``.5`` -> 0, ``1e1`` -> 1); text that is no number is refused
    (atol would read 0)."""
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    digits = re.match(r"\s*([+-]?\d+)", text)
    return int(digits.group(1)) if digits else 0


def decimal_places(text):
    value = positive_int(text) if text != "0" else 0
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

    out = []
    for name in names:
        try:  # diversity names (alpha-nDCG, ...): TREC diversity qrels only
            parsed = parse_metric(name, diversity=trec_names)
        except InputError as error:
            if error.kind == "unknown metric":  # the ranking grammar's unknown-name message reads on its own
                raise UsageError(str(error)) from None
            raise UsageError(f"-m/--metric: {error}") from None
        out.extend(m.name for m in parsed if m.name not in out)
    return out


# --------------------------------------------------------------------------------------------
# shared pieces of the subcommands
# --------------------------------------------------------------------------------------------


def check_output_path(path, extensions, option):
    ext = os.path.splitext(path)[1].lower()
    if ext not in extensions:
        raise UsageError(f"{option}: {path!r} must end in {' or '.join(extensions)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{option}: folder {folder} does not exist")


def check_plot(args):
    if getattr(args, "plot", None) is None:
        return
    check_output_path(args.plot, PLOT_EXTENSIONS, "--plot")
    if importlib.util.find_spec("matplotlib") is None:  # fail before a long evaluation
        raise ImportError("matplotlib is needed for plots: pip install 'fasttie[plot]'")


def _progress(args):
    return False if args.quiet else "auto"


def note(args, text):
    """Side information for people, on stderr (stdout stays machine-readable)."""
    if not args.quiet:
        print(text, file=sys.stderr)


def load_relevance_inputs(args):
    """(query_labels, db_labels, relevance, relevance matrix shape or None) from
    --query-labels/--db-labels or --relevance."""

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


def load_codes_option(args, spec, option, default_key):

    return load_codes(spec, option=option, default_key=default_key, packed=args.packed, n_bits=args.bits,
                      bitorder=args.bitorder)


def evaluate_options(args):
    return {
        "ties": args.ties, "ap_denominator": args.ap_denominator, "gain": args.gain, "empty": args.empty,
        "n_threads": args.threads, **({"spread": True} if getattr(args, "spread", False) else {}),
    }


# the library's argument names in its messages -> the options that set them, per command
_EVALUATE_OPTIONS = {
    "query_labels": "--query-labels", "db_labels": "--db-labels", "ap_denominator": "--ap-denominator",
    "n_threads": "--threads", "n_bits": "--bits", "relevance": "--relevance",
}
TREC_OPTIONS = {"relevance_level": "-l/--level", "ap_denominator": "--ap-denominator"}


def cli_words(error, options=_EVALUATE_OPTIONS):
    """A library error in the command line's words: the arguments it names (its fields, not its
    text) written as the options that set them, ``n_bits`` -> ``--bits`` and so on."""
    return type(error)(error.render(options))


def run_evaluate(args, queries, database, query_labels, db_labels, relevance, relevance_shape, metrics):

    if relevance_shape is not None and relevance_shape != (queries.n, database.n):
        raise UsageError(
            f"--relevance: the matrix has shape {relevance_shape} but there are {queries.n} queries x "
            f"{database.n} database codes"
        )
    try:
        return ft.evaluate(
            queries, database, query_labels, db_labels, relevance=relevance, metrics=metrics,
            curves=args.plot is not None or getattr(args, "curves", False), progress=_progress(args),
            **evaluate_options(args),
        )
    except InputError as error:
        raise cli_words(error) from None


def chosen_hashing_metrics(args):
    names = []
    if getattr(args, "protocol", None):
        names.append(PROTOCOLS[args.protocol])
    names.extend(args.metrics or ())
    return resolve_metrics(names or DEFAULT_METRICS)


def write_plot(args, results):

    plot_curves(results, args.plot, size=args.plot_size, radius_mean=args.radius_mean)
    note(args, f"wrote {args.plot} ({args.plot_size[0]}x{args.plot_size[1]} pixels)")


def file_stem(spec):
    """File name without folder, extension or :KEY (a default method / legend name)."""

    return os.path.splitext(os.path.basename(split_key(spec)[0]))[0]


def named_file(spec, option):
    """``NAME=PATH`` -> (NAME, PATH); a bare PATH is named after its file."""
    name, sep, path = spec.partition("=")
    if not sep:
        path = spec
        name = file_stem(path)
    if not name or not path:
        raise UsageError(f"{option}: expected NAME=FILE, got {spec!r}")
    return name, path
