"""The argument parser of every subcommand."""

from __future__ import annotations

import argparse

from .. import __version__
from ..options import AP_DENOMINATORS, EMPTY_POLICIES, GAINS, HAMMING_TIES, TREC_TIES
from ..metrics.doors import HAMMING, LISTS, metric_help
from ..plots import RADIUS_MEANS
from .common import (
    DEFAULT_METRICS, PROTOCOLS, decimal_places, Parser, plot_size_pixels, positive_int, trec_eval_level,
)
from .compare import compare_command
from .demo import demo_command
from .evaluate import evaluate_command
from .info import info_command, warmup_command
from .trec import trec_command, explain_extra


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

def _add_metrics(parser, default_text, door):
    parser.add_argument("-m", "--metric", dest="metrics", action="extend", nargs="+", metavar="METRIC",
                        help=f"metric names (repeatable, several per -m): {metric_help(door)} (default: {default_text})")


def _add_conventions(parser, *, ties, ap_denominator, gain):
    group = parser.add_argument_group("conventions")
    group.add_argument("--ties", default=ties, choices=TREC_TIES if ties == "trec" else HAMMING_TIES,
                       help=f"order inside ties (default {ties})")
    group.add_argument("--ap-denominator", default=ap_denominator, choices=AP_DENOMINATORS,
                       help=f"AP@k denominator: relevant retrieved in the top k, R, or min(k, R) (default {ap_denominator})")
    group.add_argument("--gain", default=gain, choices=GAINS,
                       help=f"DCG gain: 2^g - 1 or g (default {gain})")
    hashing = ties != "trec"
    group.add_argument("--empty", default="zero",
                       choices=tuple(p for p in EMPTY_POLICIES if hashing or p != "skip_missed"),
                       help="queries without relevant items: score 0, skip (NaN, left out of means), 1, or error"
                       + ("; skip_missed: also skip a metric's queries with no relevant item retrieved in its top k "
                          "(HashNet's protocol)" if hashing else "") + " (default zero)")


def _add_spread(parser):
    parser.add_argument("--spread", action="store_true",
                        help="also the standard deviation of each metric over random tie orders and its exact range "
                             "over every tie order (needs --ties average; the table prints mean ± std, the JSON and "
                             "per-query files hold tie_std, tie_min, tie_max)")


def _add_hashing_inputs(parser, *, queries):
    group = parser.add_argument_group("inputs")
    if queries:
        group.add_argument("--queries", required=True, metavar="Q", help="query codes (.npy or .npz[:KEY])")
    group.add_argument("--database", required=queries, metavar="D", help="database codes (.npy or .npz[:KEY])")
    group.add_argument("--query-labels", metavar="QL", help="query class ids (1-D) or multi-hot labels (2-D)")
    group.add_argument("--db-labels", metavar="DL", help="database class ids (1-D) or multi-hot labels (2-D)")
    group.add_argument("--relevance", metavar="R", help="relevant database ids per query: .npz with indptr, indices[, grades]")
    group.add_argument("--packed", action="store_true", help="codes are bytes packed elsewhere (needs --bits)")
    group.add_argument("--bits", type=positive_int, metavar="N", help="code length (required with --packed)")
    group.add_argument("--bitorder", default="big", choices=("big", "little"),
                       help="bit order of packed bytes: big = numpy.packbits, little = faiss / compactbit (default big)")
    parser.add_argument("--protocol", choices=tuple(PROTOCOLS),
                        help="standard protocol's mAP: cifar10 = mAP@ALL, nuswide and coco = mAP@5000, imagenet100 = mAP@1000")


def _add_plot(parser):
    parser.add_argument("--plot", metavar="FILE", help="write PR-by-radius, P@N and R@N curves to FILE (.png or .pdf)")
    parser.add_argument("--plot-size", type=plot_size_pixels, default=(1200, 400), metavar="WxH",
                        help="plot size in pixels (default 1200x400)")
    parser.add_argument("--radius-mean", choices=RADIUS_MEANS, default="all",
                        help="precision of the PR-by-radius curve averaged over all queries (0 where nothing is "
                             "within the radius; default) or over the queries that retrieve something there")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fasttie`` command.

    Returns
    -------
    argparse.ArgumentParser
        With subcommands evaluate, trec, compare, demo and info; its errors are one line on
        stderr and exit code 2.
    """

    formatter = argparse.RawDescriptionHelpFormatter
    parser = Parser(
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
      --relevance gt.npz -m R@100 --per-query-file per_query.csv --plot curves.png

output: a table of metric, value and the conventions that value depends on; --json prints the
means and settings (per-query values go to --per-query-file FILE, .json or .csv); --csv prints
metric,query,value rows (query 'all': the means), as 'fasttie trec --csv'. Exit code 0 on success, 2 on a usage error (one line on stderr).""",
    )
    _add_hashing_inputs(evaluate, queries=True)
    _add_metrics(evaluate, ", ".join(DEFAULT_METRICS), HAMMING)
    _add_conventions(evaluate, ties="average", ap_denominator="retrieved", gain="exp2")
    _add_spread(evaluate)
    output = evaluate.add_argument_group("output")
    fmt = output.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the means and settings as JSON")
    fmt.add_argument("--csv", action="store_true", help="print metric,query,value rows (query 'all')")
    output.add_argument("--digits", type=decimal_places, default=4, help="decimals in the table (default 4)")
    output.add_argument("--per-query-file", metavar="FILE", help="write per-query values to FILE (.json or .csv)")
    # the old spelling, kept working with a note: --per-query is a flag of 'fasttie trec' (trec_eval -q)
    output.add_argument("--per-query", dest="per_query_file_old", metavar="FILE", help=argparse.SUPPRESS)
    _add_plot(output)
    output.add_argument("--label", help="legend label of the plot (default: the queries file name)")
    output.add_argument("--curves", action="store_true",
                        help="also keep the curves in --per-query-file FILE.json (for 'fasttie compare --plot')")
    evaluate.add_argument("--threads", type=positive_int, metavar="N", help="threads (default: all)")
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
    scale.add_argument("--query-chunk", type=positive_int, metavar="N", help="queries per Dask task (default: all)")
    evaluate.set_defaults(handler=evaluate_command)

    trec = sub.add_parser(
        "trec", help="evaluate TREC runs against qrels, as trec_eval", formatter_class=formatter,
        description="trec_eval's evaluation of run files against qrels, printed as trec_eval 10.0 prints it, "
                    "with tie-aware values one option away (--ties average).",
        epilog="""\
files: qrels lines 'qid iter docno rel'; run lines 'qid Q0 docno rank score tag' (rank is ignored:
  the order comes from the scores, ties broken by docno descending, as trec_eval); plain text or
  compressed with gzip, bzip2 or xz (known by the first bytes).
measures: trec_eval's -m (official, the default; set; all_trec; map; P.5,10; ndcg_cut.10;
  iprec_at_recall; recip_rank; utility; binG; relstring.20; ...), printed under trec_eval's names
  in its order with a runid line; what fasttie lacks (interpolation levels other than 0.0, 0.1,
  ..., 1.0) is named on stderr and left out. fasttie's names (AP@10, nDCG@10, ERR@20, Judged@10,
  'P@[5,10]') follow, as typed. --fasttie-names prints fasttie's names throughout.

examples:
  fasttie trec tests/data/qrels.txt tests/data/run.txt
  fasttie trec -q -m all_trec qrels.txt run.txt
  fasttie trec qrels.txt run.txt -m map -m P.5,10 -m ndcg_cut.10 -c -l 2 --ties average --json
  fasttie trec -mmap -mndcg_cut.10 -M100 -J qrels.txt run.txt
  fasttie trec qrels.txt run1.txt run2.txt run3.txt -m map -m ndcg_cut.10 --compare

output: 'measure <tab> qid <tab> value' lines, per query with -q (as trec_eval -q), then 'all';
  several runs one after the other; --compare adds the paired tests between them.""",
    )
    trec.add_argument("qrels", metavar="QRELS", help="qrels file")
    trec.add_argument("run", metavar="RUN", nargs="+", help="run file(s)")
    # one value per -m, as trec_eval's getopt: `-q -m map QRELS RUN` leaves the files to QRELS and RUN
    # (trec_eval's long spellings are aliases of each option)
    trec.add_argument("-m", "--metric", "--measure", dest="metrics", action="append", metavar="MEASURE",
                      help="one measure or nickname per -m, repeatable (-m map -m P.5,10), as trec_eval: its measures "
                           "and nicknames (default official: runid, num_q, num_ret, num_rel, num_rel_ret, map, gm_map, "
                           "Rprec, bpref, recip_rank, iprec_at_recall, P; iprec_at_recall left out under --ties "
                           f"average), or fasttie's names: {metric_help(LISTS)}")
    trec.add_argument("-q", "--per-query", "--query_eval_wanted", action="store_true",
                      help="print every query's values (trec_eval -q)")
    trec.add_argument("-n", "--nosummary", dest="summary", action="store_false",
                      help="leave out the 'all' lines and the runid line (trec_eval -n; with -q, the queries' lines only)")
    trec.add_argument("-c", "--complete", "--complete_rel_info_wanted", action="store_true",
                      help="average over every judged query, 0 for those missing from the run (trec_eval -c)")
    trec.add_argument("-l", "--level", "--level_for_rel", type=trec_eval_level, default=1, metavar="L",
                      help="judged documents with grade >= L are relevant, L read as trec_eval reads it: its integer "
                           "part (-l 1.5 is -l 1); -l 0 makes every judged document relevant (trec_eval -l; default 1)")
    trec.add_argument("-M", "--max-retrieved", "--Max_retrieved_per_topic", type=positive_int, metavar="N",
                      help="evaluate only the first N documents of each query, in trec_eval's order: score descending, "
                           "then docno descending, whatever --ties is (trec_eval -M)")
    trec.add_argument("-J", "--judged-only", "--Judged_docs_only", action="store_true",
                      help="drop retrieved documents without a judgment before ranking (trec_eval -J)")
    _add_conventions(trec, ties="trec", ap_denominator="total", gain="linear")
    _add_spread(trec)
    fmt = trec.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the result as JSON (per query with -q)")
    fmt.add_argument("--csv", action="store_true", help="print metric,query,value rows")
    trec.add_argument("--fasttie-names", action="store_true",
                      help="print fasttie's metric names (AP, P@10, IPrec@0.1) instead of trec_eval's")
    trec.add_argument("--compare", action="store_true",
                      help="with two or more runs: paired t and randomization tests between them (Holm-corrected)")
    trec.add_argument("--digits", type=decimal_places, default=4, help="decimals (default 4, as trec_eval)")
    trec.add_argument("--per-query-file", metavar="FILE", help="also write per-query values to FILE (.json or .csv)")
    trec.set_defaults(handler=trec_command, explain_extra=explain_extra)

    compare = sub.add_parser(
        "compare", help="paired significance tests between two or more methods", formatter_class=formatter,
        description="Compare methods on the same queries: means, paired t-test and paired randomization "
        "test per metric, corrected for the number of pairs.",
        epilog=_INPUT_HELP + """

examples:
  fasttie compare itq.json lsh.json dsh.json                 (files from 'evaluate --per-query-file')
  fasttie compare ITQ=itq.csv LSH=lsh.csv -m AP@1000 --correction bonferroni
  fasttie compare ITQ=itq.json LSH=lsh.json DSH=dsh.json --correction tukey-hsd --latex table.tex
  fasttie compare --database db.npy --query-labels ql.npy --db-labels dl.npy \\
      --method ITQ=itq_q.npy --method LSH=lsh_q.npy -m AP@1000 P@100 --plot curves.png

(with --method, each method's query codes are scored against the same database codes; give
codes of different methods their own database by evaluating them separately with
'fasttie evaluate --per-query-file' and comparing the files.)

output: one row per method, one column per metric; a letter marks the methods a value beats
significantly (randomization test after correction). --latex / --markdown / --html also write
that table for a paper: means to --table-digits decimals, the best of each metric in bold.""",
    )
    compare.add_argument("results", nargs="*", metavar="RESULT",
                         help="per-query result files (.json or .csv), optionally NAME=FILE")
    compare.add_argument("--method", action="append", metavar="NAME=QUERIES",
                         help="a method's query codes (.npy or .npz[:KEY]); repeat for each method")
    _add_hashing_inputs(compare, queries=False)
    _add_metrics(compare, "every metric common to the result files, or " + ", ".join(DEFAULT_METRICS), HAMMING)
    _add_conventions(compare, ties="average", ap_denominator="retrieved", gain="exp2")
    tests = compare.add_argument_group("significance tests")
    tests.add_argument("--permutations", type=positive_int, default=10000, metavar="N",
                       help="random sign flips of the randomization test (default 10000; exact enumeration when 2^n_queries <= N)")
    tests.add_argument("--seed", type=int, default=0, help="seed of the randomization test and the bootstrap (default 0)")
    tests.add_argument("--correction", default="holm", choices=("holm", "bonferroni", "bh", "none", "tukey-hsd"),
                       help="multiple-comparison correction over the pairs of each metric (default holm); "
                       "bh: Benjamini-Hochberg (false discovery rate); "
                       "tukey-hsd: the randomised Tukey HSD test over all methods instead of sign flips")
    tests.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    tests.add_argument("--confidence", type=float, default=0.95,
                       help="level of the t and bootstrap confidence intervals (default 0.95)")
    tests.add_argument("--bootstrap", default="bca", choices=("bca", "percentile", "none"),
                       help="paired bootstrap interval of each mean difference and of each method's mean "
                       "(default bca: bias-corrected and accelerated; none: no bootstrap)")
    tests.add_argument("--resamples", type=positive_int, default=9999, metavar="N",
                       help="bootstrap resamples (default 9999; seeded by --seed)")
    tests.add_argument("--spread", action="store_true",
                       help="also the tie std of each mean difference and whether the difference is within twice it, "
                       "and its exact range over every pair of tie orders (+: a tie order decides it) "
                       "(with --method: evaluates with spread; result files must hold tie_std: 'evaluate --spread')")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    table = compare.add_argument_group("tables for a paper (bold best, superscript letters of the methods beaten)")
    table.add_argument("--latex", metavar="FILE.tex", help="also write the table as a booktabs LaTeX tabular")
    table.add_argument("--markdown", metavar="FILE.md", help="also write the table in Markdown")
    table.add_argument("--html", metavar="FILE.html", help="also write the table as an HTML <table>")
    table.add_argument("--table-digits", type=decimal_places, default=3, metavar="N",
                       help="decimals in those tables (default 3)")
    table.add_argument("--caption", help="caption of the LaTeX table (LaTeX, as given) and of the HTML table")
    table.add_argument("--label", help="label of the LaTeX table, e.g. tab:results")
    _add_plot(compare)
    compare.add_argument("--threads", type=positive_int, metavar="N", help="threads (default: all)")
    compare.add_argument("--quiet", action="store_true", help="no progress bar and no notes on stderr")
    compare.set_defaults(handler=compare_command)

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
    demo.add_argument("--queries", type=positive_int, default=None, help="number of queries (default 1000; digits 200)")
    demo.add_argument("--db", type=positive_int, default=None, help="database codes (synthetic; default 59000)")
    demo.add_argument("--bits", type=positive_int, default=None,
                      help="code length (synthetic: a multiple of 64, default 64; digits: 1-64, default 32)")
    demo.add_argument("--classes", type=positive_int, default=None, help="number of classes (synthetic; default 10)")
    demo.add_argument("--flip", type=float, default=None,
                      help="bit flip probability around class prototypes (synthetic; default 0.25)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--threads", type=positive_int, default=None, help="threads (default: all)")
    demo.add_argument("--save", metavar="DIR",
                      help="also write queries.npy, database.npy, query_labels.npy, db_labels.npy to DIR")
    demo.set_defaults(handler=demo_command)

    info = sub.add_parser("info", help="versions, threads, CPU features and the compile cache",
                          description="Versions, threads, CPU features used, the compile cache directory and "
                                      "which front doors' kernels are cached.")
    info.set_defaults(handler=info_command)

    warm = sub.add_parser("warmup", help="compile and cache every kernel once (for images and clusters)",
                          description="Call every front door in every tie mode on tiny data, so that numba compiles "
                                      "and caches every kernel now rather than on a user's first call.")
    warm.add_argument("--quiet", action="store_true", help="print only the summary line")
    warm.set_defaults(handler=warmup_command)
    for subparser in sub.choices.values():
        subparser.set_defaults(parser=subparser)
    return parser
