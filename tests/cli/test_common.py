"""What every subcommand shares: a usage error is exit code 2 and exactly one line on stderr,
naming the argument and the fix, and nothing on stdout."""

import collections
import pathlib

import pytest

from cli.shared import QRELS, RUN, N_QUERIES, N_DB, run_main, label_args


# --------------------------------------------------------------------------------------------
# usage errors: exit code 2, exactly one line on stderr, nothing on stdout
# --------------------------------------------------------------------------------------------


def usage_cases(data):
    d, p = data["dir"], data["paths"]
    labels = label_args(data)
    return {
        "no command": ([], "required"),
        "unknown command": (["evalute"], "did you mean 'evaluate'"),
        "missing queries": (["evaluate", "--database", p["database"]], "--queries"),
        "unknown option": (["evaluate", *labels, "--quite"], "did you mean '--quiet'"),
        "bad choice": (["evaluate", *labels, "--ties", "avg"], "did you mean 'average'"),
        "missing file": (["evaluate", *labels[:2], "--database", d / "nope.npy", *labels[4:]], "file not found"),
        "wrong extension": (["evaluate", *labels[:2], "--database", d / "x.txt", *labels[4:]], ".npy or .npz"),
        "pickled objects": (["evaluate", *labels[:2], "--database", d / "objects.npy", *labels[4:]], "cannot read"),
        "wrong shape": (["evaluate", *labels[:2], "--database", p["db_labels"], *labels[4:]], "2-D"),
        "wrong label count": (["evaluate", *labels[:6], "--db-labels", p["query_labels"]], "--db-labels has"),
        "unknown metric": (["evaluate", *labels, "-m", "ndgc@10"], "did you mean 'nDCG@10'"),
        "bad cutoff": (["evaluate", *labels, "-m", "P@x"], "not an integer"),
        "half the labels": (["evaluate", *labels[:6]], "--db-labels is missing"),
        "no relevance": (["evaluate", *labels[:4]], "relevance is undefined"),
        "labels and relevance": (["evaluate", *labels, "--relevance", d / "rel.npz"], "not both"),
        "dense relevance": (["evaluate", *labels[:4], "--relevance", p["db_labels"]], "indptr"),
        "npz without key": (["evaluate", "--queries", d / "all.npz:nokey", *labels[2:]], "has no array 'nokey'"),
        "packed without bits": (["evaluate", *labels, "--packed"], "--bits"),
        "packed bytes unflagged": (["evaluate", "--queries", d / "queries_packed.npy", *labels[2:]], "--packed --bits"),
        "bits differ": (["evaluate", "--queries", d / "queries_packed.npy", "--packed", "--bits", "60", *labels[2:]],
                        "bits"),
        "per-query extension": (["evaluate", *labels, "--per-query-file", d / "pq.txt"], ".json or .csv"),
        "per-query twice": (["evaluate", *labels, "--per-query-file", d / "a.json", "--per-query", d / "b.json"],
                            "give --per-query-file FILE once"),
        "plot extension": (["evaluate", *labels, "--plot", d / "p.jpg"], ".png or .pdf"),
        "plot folder": (["evaluate", *labels, "--plot", d / "no" / "p.png"], "does not exist"),
        "plot size": (["evaluate", *labels, "--plot", d / "p.png", "--plot-size", "big"], "WIDTHxHEIGHT"),
        "threads": (["evaluate", *labels, "--threads", "0"], "positive integer"),
        "json and csv": (["evaluate", *labels, "--json", "--csv"], "not allowed with"),
        "trec missing run": (["trec", QRELS, d / "nope.txt"], "RUN: file not found"),
        "trec unknown metric": (["trec", QRELS, RUN, "-m", "mapp"], "did you mean 'AP'"),
        "trec unknown diversity metric": (["trec", QRELS, RUN, "-m", "alpha_nDGC@10"], "did you mean 'alpha_nDCG@10'"),
        "trec bad run": (["trec", QRELS, p["queries"]], ""),
        "compare one file": (["compare", d / "one.json"], "at least two"),
        "compare nothing": (["compare"], "give two or more"),
        "compare both forms": (["compare", d / "a.json", "--method", f"x={p['queries']}"], "not both"),
        "compare no database": (["compare", "--method", f"x={p['queries']}", "--method", f"y={p['queries']}",
                                 *labels[4:]], "--database"),
        "compare correction": (["compare", "a.json", "b.json", "--correction", "holmes"], "did you mean 'holm'"),
        "demo digits with --db": (["demo", "--dataset", "digits", "--db", "100"], "synthetic only"),
        "cutoff past int64": (["evaluate", *labels, "-m", "P@99999999999999999999999"],
                              "'P@99999999999999999999999': cutoff 99999999999999999999999 is too large"),
        "comma-joined names": (["evaluate", *labels, "-m", "AP,P@10"], "one name per entry, e.g. ['AP', 'P@10']"),
        "real-valued codes": (["evaluate", "--queries", d / "tanh.npy", *labels[2:]], "np.where(x >= 0, 1, -1)"),
        "label column": (["evaluate", *labels[:4], "--query-labels", d / "ql_column.npy", "--db-labels",
                          d / "dl_column.npy"], "--query-labels and --db-labels have one column"),
        "relevance shape": (["evaluate", *labels[:4], "--relevance", d / "rel_wrong_shape.npz"],
                            f"--relevance: the matrix has shape ({N_QUERIES}, {N_DB - 1})"),
        "bits in CLI words": (["evaluate", "--queries", d / "queries_packed.npy", "--packed", "--bits", "60",
                               *labels[2:]], "--bits 60"),
        "compare plot without curves": (["compare", d / "one.json", d / "one.json", "--plot", d / "c.png"],
                                        "has no curves; write it with 'fasttie evaluate ... --per-query-file one.json --curves'"),
        "trec level": (["trec", QRELS, RUN, "-l", "-1"], "-l/--level must be >= 0 (0: every judged document is relevant"),
        "trec level not a number": (["trec", QRELS, RUN, "-l", "abc"], "expected a number, got 'abc'"),
        "demo bits": (["demo", "--bits", "48", "--queries", "5", "--db", "20"], "multiple of 64"),
    }


# the case names (the arguments need the data fixture's paths)
CASES = list(usage_cases({"dir": pathlib.Path("."), "paths": collections.defaultdict(str)}))


@pytest.mark.parametrize("case", CASES)
def test_usage_error_is_exit_2_and_one_line(data, capsys, case):
    argv, fragment = usage_cases(data)[case]
    code, out, err = run_main(capsys, *argv)
    assert code == 2, (case, out, err)
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("fasttie: error: ") and fragment in err, err
