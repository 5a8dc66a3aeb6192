"""The ``fasttie`` command (also ``python -m fasttie``).

Subcommands: ``evaluate`` (codes in .npy/.npz files), ``trec`` (qrels and run files, like
``trec_eval``), ``compare`` (significance tests between methods), ``demo``, ``info``.

Exit codes: 0 on success, 2 on a user mistake (bad option, missing or malformed file, unknown
metric, missing optional package: :class:`fasttie.errors.InputError`, ``ImportError`` and file
errors), reported as one line ``fasttie: error: ...`` on stderr without a traceback. Anything
else is a bug and raises (traceback, exit code 1).
"""

from __future__ import annotations

import logging
import os
import sys

from ..errors import InputError
from .common import DEFAULT_METRICS, DEMO_METRICS, TIE_MODES, UsageError, resolve_metrics
from .parser import build_parser

__all__ = ["main", "build_parser", "resolve_metrics", "UsageError", "DEFAULT_METRICS", "DEMO_METRICS", "TIE_MODES"]


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
        if extra:  # reported by the subcommand's parser, which knows its own options (and, maybe, why)
            hint = getattr(args, "explain_extra", lambda words: "")(extra)
            args.parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    except SystemExit as stop:  # --help, --version, usage errors: return the code, do not exit
        return stop.code if isinstance(stop.code, int) else 2
    notes = None if getattr(args, "quiet", False) else _notes_on_stderr()
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
    finally:
        if notes is not None:
            logging.getLogger("fasttie").removeHandler(notes)


def _notes_on_stderr():
    """Show the library's INFO messages (a cold compile cache: fasttie._kernels.cached) as
    'fasttie: ...' lines on stderr for this command; returns the handler to remove after."""
    logger = logging.getLogger("fasttie")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("fasttie: %(message)s"))
    handler.setLevel(logging.INFO)
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    return handler


if __name__ == "__main__":
    sys.exit(main())
