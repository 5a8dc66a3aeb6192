"""Conformance with trec_eval 10.0 on trec_eval's own test files.

Data: ``<repository>/../shared/peers-data/trec_eval/`` (see its PROVENANCE.md), read in place and
never copied into the repository; the module skips when the folder is absent. It holds the
qrels and runs of trec_eval's ``make quicktest``, the outputs quicktest diffs against
(``out.test*``, ``out.comment.test``, gzipped), and ``trec_eval_ref.json.gz``: trec_eval's
per-query and ``all`` values printed with ``%.17g`` for 12 configurations. Three more, at ``-l 0``
(every judged document relevant, grade 0 too), are in the repository in the same form:
``tests/data/trec_eval_level0.json``, from trec_eval built at the same commit with the same print
format. The files are
gzipped and fasttie reads plain files, so each is decompressed once into pytest's temporary
folder.

Checked, for every measure below, every query and ``all``:

* ``fasttie.trec.evaluate`` against the json, within 1e-12 (trec_eval sums in double in its
  own order, so the last bits may differ), with fasttie's RBPResid (RESIDUAL_TAIL) and NumRel
  (TREC_EVAL_QUIRKS);
* ``fasttie trec ... --csv`` (full precision) against the json, within 1e-12: under trec_eval's
  names, trec_eval's values (``rbp_resid`` and ``-c``'s ``num_rel`` included); also with ``-l``
  given as a fraction (``-l 1.5``), which trec_eval reads as its integer part;
* ``fasttie trec`` run with the arguments of trec_eval's quicktest against the ``out.*`` files it
  diffs against, line for line (measures fasttie does not compute left out).

trec_eval measure -> fasttie metric: ``map`` AP, ``map_cut_k`` AP@k, ``P_k`` P@k,
``recall_k`` R@k, ``ndcg`` nDCG, ``ndcg_cut_k`` nDCG@k, ``recip_rank`` RR, ``Rprec`` Rprec,
``success_k`` Success@k, ``relative_P_k`` P(relative=True)@k, ``set_relative_P`` P(relative=True), ``set_P`` P, ``set_recall`` R, ``set_F`` F1 (fasttie's metrics without a
cutoff; set_F with trec_eval's default beta 1), ``set_map`` SetAP, ``gm_map`` GMAP, ``bpref`` Bpref,
``gm_bpref`` GMBpref, ``iprec_at_recall_L`` IPrec@L, ``11pt_avg`` 11pt, ``num_q`` NumQ,
``num_ret`` NumRet, ``num_rel`` NumRel, ``num_rel_ret`` NumRelRet, ``num_nonrel_judged_ret``
NumNonRelJudgedRet, ``infAP`` infAP (qrels.rel_level has pooled-unjudged lines, relevance -1), ``rbp`` RBP(p=0.9),
``rbp_resid`` RBPResid(p=0.9) (see RESIDUAL_TAIL), ``ndcg_1=3,2=9,4=4.5`` (trec_eval's custom gains,
out.test.meas_params) nDCG(gains={1: 3, 2: 9, 4: 4.5}), trec_eval's own measures under their own
names (fasttie/metrics/trec_eval_only.py: ``Rprec_mult_x`` Rprec_mult(x=x), ``utility``, ``binG``,
``G``, ``ndcg_rel``, ``Rndcg``, ``unj_k`` unj@k; ``unj_k`` also through Judged@k) and ``relstring``
(text, in the out.* files only: fasttie.trec.relstring), all as ``fasttie trec -m`` takes them
(gm_map, gm_bpref and num_q have an ``all`` value only, the counts are sums).
Options: ``-q`` per query, ``-c`` complete=True, ``-lL`` relevance_level=L (binary measures
only: trec_eval's nDCG uses every grade, and so does fasttie's), ``-MN`` max_retrieved=N, ``-J``
judged_only=True (no recorded configuration uses the last two; tests/trec/test_join.py checks
them against pytrec_eval).

Not compared, because fasttie has no such measure: runid in the json (its line in the out.*
files is compared), interpolated precision at custom recall levels and 11pt_avg with levels
(out.test.meas_params). Every configuration uses only options fasttie has; one that used another
(-R, -Z, ...) would be skipped, naming the option.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

import fasttie as ft
from fasttie import cli

DATA = Path(__file__).resolve().parents[3] / "shared" / "peers-data" / "trec_eval"
pytestmark = pytest.mark.skipif(
    not (DATA / "trec_eval_ref.json.gz").is_file(),
    reason=f"trec_eval 10.0 reference data not found in {DATA} (read in place, not part of the repository)",
)
TOLERANCE = 1e-12
# trec_eval -l 0 (every judged document relevant, grade 0 too) on the same files, in the json's form:
# tests/data/trec_eval_level0.json (the commands in it; values printed with %.17g)
LEVEL_0 = Path(__file__).resolve().parents[1] / "data" / "trec_eval_level0.json"
LEVEL_0_CONFIGS = ["base_l0", "rel_level_l0", "rel_level_trunc_l0_c"]

# trec_eval measure -> fasttie metric
_PLAIN = {"map": "AP", "ndcg": "nDCG", "recip_rank": "RR", "Rprec": "Rprec", "bpref": "Bpref", "gm_bpref": "GMBpref", "11pt_avg": "11pt",
          "set_P": "P", "set_recall": "R", "set_F": "F1", "set_map": "SetAP", "gm_map": "GMAP",
          "num_q": "NumQ", "num_ret": "NumRet", "num_rel": "NumRel", "num_rel_ret": "NumRelRet",
          "num_nonrel_judged_ret": "NumNonRelJudgedRet", "infAP": "infAP", "set_relative_P": "P(relative=True)",
          "rbp": "RBP(p=0.9)", "rbp_resid": "RBPResid(p=0.9)",
          "ndcg_1=3,2=9,4=4.5": "nDCG(gains={1.0: 3.0, 2.0: 9.0, 4.0: 4.5})",
          "utility": "utility", "binG": "binG", "G": "G", "ndcg_rel": "ndcg_rel", "Rndcg": "Rndcg"}
_CUTOFF = re.compile(r"^(map_cut|ndcg_cut|P|relative_P|recall|success)_(\d+)$")
_CUTOFF_BASE = {"map_cut": "AP", "ndcg_cut": "nDCG", "P": "P", "relative_P": "P(relative=True)", "recall": "R",
                "success": "Success"}
# measures fasttie does not compute (see the module docstring), with any parameters trec_eval
# prints after a "_" (success_5, utility_2,-1,0,0)
NOT_IN_FASTTIE = ("runid",)
_RPREC_MULT = re.compile(r"^Rprec_mult_(\d+\.\d\d)$")
_UNJ = re.compile(r"^unj_(\d+)$")

CONFIGS = ["base", "base_extra", "with_comments", "comment", "comment_extra", "comment_l2", "comment_l3_c",
           "trunc_c", "rel_level_l2", "rel_level_l1", "rel_level_l3", "q302", "meas_params",
           *LEVEL_0_CONFIGS]

# out file, qrels, run, and the trec_eval arguments of `make quicktest` whose expected output the
# file is: `fasttie trec` takes the same arguments
OUTPUTS = [
    ("out.test", "qrels.test", "results.test", []),
    ("out.test", "qrels.test.with-comments", "results.test", []),  # the same output with comment lines
    ("out.test.a", "qrels.test", "results.test", ["-m", "all_trec"]),
    ("out.test.aq", "qrels.test", "results.test", ["-m", "all_trec", "-q"]),
    ("out.test.aqc", "qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c"]),
    ("out.test.aql", "qrels.rel_level", "results.test", ["-m", "all_trec", "-mrelstring.20", "-q", "-l2"]),
    ("out.test.meas_params", "qrels.test", "results.test",
     ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000", "-m",
      "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75", "-mndcg.1=3,2=9,4=4.5",
      "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20"]),
    ("out.comment.test", "qrels.comment.test", "results.comment.test", []),  # docnos with '#'
]


_IPREC = re.compile(r"^iprec_at_recall_(\d\.\d\d)$")


def fasttie_name(measure):
    """The fasttie metric of a trec_eval measure, or None when fasttie has none."""
    if measure in _PLAIN:
        return _PLAIN[measure]
    match = _IPREC.match(measure)
    if match:  # any level (trec_eval's test files give two digits, as its printed names have)
        return f"IPrec@{float(match.group(1))!r}"
    match = _RPREC_MULT.match(measure)
    if match:
        return f"Rprec_mult(x={float(match.group(1)):g})"
    match = _UNJ.match(measure)
    if match:
        return f"unj@{match.group(1)}"
    match = _CUTOFF.match(measure)
    return f"{_CUTOFF_BASE[match.group(1)]}@{match.group(2)}" if match else None


def cli_name(measure):
    """What to pass to ``fasttie trec -m``: trec_eval's printed name (``P_10``), or its -m
    spelling where the two differ (``ndcg_1=3,2=9`` is asked as ``ndcg.1=3,2=9``)."""
    return "ndcg." + measure[5:] if measure.startswith("ndcg_") and "=" in measure else measure


def not_in_fasttie(measure):
    if measure.startswith("11pt_avg_"):
        return True  # 11pt_avg at trec_eval's custom recall levels; fasttie's averages the 11 standard ones
    return any(measure == n or measure.startswith(n + "_") for n in NOT_IN_FASTTIE)


def trec_eval_options(args):
    """fasttie.trec.evaluate keywords for trec_eval's arguments (``-m`` only picks measures, and
    the json lists every measure printed); skips the test on an option fasttie lacks."""
    options = {"complete": False, "relevance_level": 1}
    args = iter(args)
    for arg in args:
        if arg == "-q":
            continue
        if arg == "-c":
            options["complete"] = True
        elif arg.startswith("-l"):
            options["relevance_level"] = int(arg[2:] or next(args))
        elif arg.startswith("-M"):
            options["max_retrieved"] = int(arg[2:] or next(args))
        elif arg == "-J":
            options["judged_only"] = True
        elif arg.startswith("-m"):
            if arg == "-m":
                next(args)
        else:
            pytest.skip(f"trec_eval option {arg} has no fasttie equivalent")
    return options


@pytest.fixture(scope="module")
def reference():
    with gzip.open(DATA / "trec_eval_ref.json.gz", "rt") as f:
        configs = json.load(f)["configs"]
    with open(LEVEL_0) as f:
        return {**configs, **json.load(f)["configs"]}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """Path of the decompressed copy (in a temporary folder) of one of the data files."""
    folder = tmp_path_factory.mktemp("trec_eval")

    def get(name):
        path = folder / name
        if not path.exists():
            with gzip.open(DATA / f"{name}.gz", "rb") as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
        return str(path)

    return get


def measures_of(config):
    """The configuration's measures fasttie computes: {trec_eval name: fasttie name}."""
    return {m: fasttie_name(m) for m in config["values"] if fasttie_name(m)}


# Where trec_eval contradicts itself, fasttie's metric follows trec_eval's per-query values (`fasttie
# trec` prints trec_eval's value under trec_eval's name, fasttie.cli.trec.as_trec_eval_prints):
# {(configuration, measure, query): why}; the expected value is then the sum of trec_eval's
# per-query values.
TREC_EVAL_QUIRKS = {
    ("comment_l3_c", "num_rel", "all"): "with -c, trec_eval recounts num_rel over every qrels line with a grade > 0 "
    "and ignores -l3 (m_num_rel.c, te_calc_avg_num_rel): 4463, while its 31 per-query values sum to 567",
    ("rel_level_trunc_l0_c", "num_rel", "all"): "the same at -l 0: 559 lines with a grade > 0, while its per-query "
    "values, every judged document, sum to 3377",
}


# RBP's residual (Moffat & Zobel 2008) is the weight of the unjudged retrieved documents plus the
# tail p^N past the N retrieved; trec_eval's rbp_resid leaves the tail out, reporting 0, where no
# retrieved document is unjudged (m_rbp_resid.c). There fasttie's RBPResid is p^N (`fasttie trec`
# prints trec_eval's 0 under the name rbp_resid).
RESIDUAL_TAIL = 0.9


def expected_values(config, measure, name, printed=False):
    """trec_eval's values of a measure, {query: value}: as trec_eval prints them (``printed``,
    what ``fasttie trec`` prints under trec_eval's names), or with the QUIRKS and RESIDUAL_TAIL
    rules (fasttie's metrics)."""
    values = dict(config["values"][measure])
    if printed:
        return values
    if measure == "rbp_resid":
        for qid, value in values.items():
            if qid != "all" and value == 0.0:
                values[qid] = RESIDUAL_TAIL ** config["values"]["num_ret"][qid]
        values["all"] = sum(v for q, v in values.items() if q != "all") / (len(values) - 1)
    for qid in values:
        if (name, measure, qid) in TREC_EVAL_QUIRKS:
            values[qid] = sum(v for q, v in config["values"][measure].items() if q != "all")
    return values


def mismatches(config, got, name, printed=False):
    """Values of ``got`` ({(measure, qid): value}) missing or further than TOLERANCE from
    trec_eval's (see expected_values), and the number compared."""
    bad, n = [], 0
    for measure in measures_of(config):
        for qid, expected in expected_values(config, measure, name, printed).items():
            value = got.get((measure, qid))
            n += 1
            if value is None or not abs(value - expected) <= TOLERANCE:
                bad.append(f"{measure} {qid}: fasttie {value!r}, trec_eval {expected!r}")
    return bad, n


def run_cli(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


# --------------------------------------------------------------------------------------------
# the data


def test_every_configuration_and_measure_is_accounted_for(reference):
    assert sorted(reference) == sorted(CONFIGS)
    for name, config in reference.items():
        for measure in config["values"]:
            assert bool(fasttie_name(measure)) != not_in_fasttie(measure), (name, measure)
        assert measures_of(config), name


def test_reader_reads_trec_eval_test_files_as_trec_eval(plain):
    """qrels.test.with-comments is qrels.test plus '#' comment lines, and one docno with '#'
    in it (data, not a comment); results.trunc has text after the tag on some lines."""
    base = ft.trec.read_qrels(plain("qrels.test"))
    commented = ft.trec.read_qrels(plain("qrels.test.with-comments"))
    expected = base.to_dict()
    expected["301"] = {("CR#93E-1860" if d == "CR93E-1860" else d): r for d, r in expected["301"].items()}
    assert commented.to_dict() == expected and len(commented) == len(base)
    run = ft.trec.read_run(plain("results.trunc"))
    with open(plain("results.trunc")) as f:
        lines = [line.split() for line in f if line.strip()]
    assert sum(len(fields) > 6 for fields in lines) == 5
    expected = {}
    for qid, _, docno, _, score, *_ in lines:
        expected.setdefault(qid, {})[docno] = float(score)
    assert run.to_dict() == expected and len(run) == len(lines) == 584 and run.name == "STANDARD"


# --------------------------------------------------------------------------------------------
# full precision: trec_eval_ref.json


@pytest.mark.parametrize("name", CONFIGS)
def test_library_matches_trec_eval(reference, plain, name):
    config = reference[name]
    options = trec_eval_options(config["trec_eval_args"])
    measures = measures_of(config)
    result = ft.trec.evaluate(plain(config["qrels"]), plain(config["run"]), list(measures.values()), **options)
    widest = max(measures, key=lambda m: len(config["values"][m]))  # gm_map and num_q have "all" only
    assert result.query_ids == sorted(q for q in config["values"][widest] if q != "all")
    got = {}
    for measure, metric in measures.items():
        got.update({(measure, q): v for q, v in zip(result.query_ids, result.per_query[metric].tolist())})
        got[(measure, "all")] = result.mean[metric]
    bad, n = mismatches(config, got, name)
    assert n == sum(len(config["values"][m]) for m in measures)
    assert not bad, f"{len(bad)} of {n} values differ from trec_eval:\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("name", CONFIGS)
def test_cli_matches_trec_eval(reference, plain, capsys, name):
    assert_cli_matches(reference, plain, capsys, name)


@pytest.mark.parametrize("name, level", [("rel_level_l0", "0.5"), ("rel_level_l1", "1.5"), ("rel_level_l2", "2.9"),
                                         ("rel_level_trunc_l0_c", "-0.7")])
def test_cli_reads_level_as_trec_eval(reference, plain, capsys, name, level):
    """trec_eval reads -l with atol, the integer part: -l 1.5 is -l 1 (fasttie.trec.evaluate's
    relevance_level=1.5 would compare the grades with 1.5)."""
    assert_cli_matches(reference, plain, capsys, name, level)


def assert_cli_matches(reference, plain, capsys, name, level=None):
    """``fasttie trec --csv`` with the configuration's arguments (-l as ``level`` when given)
    prints trec_eval's values, within TOLERANCE, and nothing else."""
    config = reference[name]
    options = trec_eval_options(config["trec_eval_args"])
    measures = measures_of(config)
    each = [arg for measure in measures for arg in ("-m", cli_name(measure))]  # one measure a -m, as trec_eval
    argv = ["trec", plain(config["qrels"]), plain(config["run"]), *each, "-q", "--csv",
            f"--level={options['relevance_level'] if level is None else level}",
            *(["-c"] if options["complete"] else []),
            *(["-M", options["max_retrieved"]] if "max_retrieved" in options else []),
            *(["-J"] if options.get("judged_only") else [])]
    lines = run_cli(capsys, *argv).strip().splitlines()
    assert lines[0] == "metric,query,value"
    got = {}
    for line in lines[1:]:  # printed under trec_eval's names
        measure, qid, value = line.split(",")
        got[(measure, qid)] = float(value)
    bad, n = mismatches(config, got, name, printed=True)  # under trec_eval's names: trec_eval's values
    assert n == len(got)  # nothing printed that trec_eval did not print
    assert not bad, f"{len(bad)} of {n} values differ from trec_eval:\n" + "\n".join(bad[:20])


# --------------------------------------------------------------------------------------------
# printed precision: the out.* files of trec_eval's quicktest


def parse_out(text):
    """{(measure, qid): value as printed} of trec_eval-style lines ``measure \\t qid \\t value``."""
    values = {}
    for line in text.strip().splitlines():
        measure, qid, value = line.split("\t")
        values[(measure.strip(), qid)] = value
    return values


def expected_lines(out_file):
    """trec_eval's lines of an out.* file, less those of the measures fasttie does not compute
    (its runid line kept)."""
    with gzip.open(DATA / f"{out_file}.gz", "rt") as f:
        lines = f.read().splitlines()
    return [line for line in lines if line.startswith("runid ") or not not_in_fasttie(line.split("\t")[0].strip())]


@pytest.mark.parametrize("out_file, qrels, run, options", OUTPUTS, ids=[f"{o[0]}-{o[1]}" for o in OUTPUTS])
def test_cli_prints_trec_eval_output(plain, capsys, out_file, qrels, run, options):
    """``fasttie trec`` with the arguments of trec_eval's quicktest prints trec_eval's shipped
    output line for line: names, order, runid, -q layout, padding and digits. Left out, and named
    on stderr: the measures fasttie does not compute (module docstring)."""
    expected = expected_lines(out_file)
    code = cli.main(["trec", plain(qrels), plain(run), *options])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines() == expected
    with gzip.open(DATA / f"{out_file}.gz", "rt") as f:
        lacking = {line.split("\t")[0].strip() for line in f} - {"runid"}
    if any(not_in_fasttie(measure) for measure in lacking):
        assert "trec_eval measures fasttie does not compute, left out" in err


@pytest.mark.parametrize("name", CONFIGS)
def test_judged_is_the_complement_of_unj(reference, plain, name, tmp_path):
    """trec_eval's unj_k counts the unjudged documents of the top k over k, Judged@k (ir_measures)
    the judged ones over min(k, N): Judged@k = 1 - unj_k * k / min(k, N). A negative grade
    (qrels.rel_level) is unjudged for trec_eval and judged for ir_measures: those lines are
    dropped from the qrels fasttie reads here (tests/measures/test_rbp.py checks them against ir_measures)."""
    config = reference[name]
    cutoffs = [int(m[4:]) for m in config["values"] if m.startswith("unj_")]
    if not cutoffs:
        pytest.skip(f"trec_eval printed no unj_k for {name}")
    options = trec_eval_options(config["trec_eval_args"])
    qrels = tmp_path / "qrels"
    with open(plain(config["qrels"])) as src:
        qrels.write_text("".join(line for line in src if not (line.split()[3:4] or ["0"])[0].startswith("-")))
    result = ft.trec.evaluate(qrels, plain(config["run"]), [f"Judged@{k}" for k in cutoffs], **options)
    n_ret = config["values"]["num_ret"]
    bad = []
    for k in cutoffs:
        for qid, judged in zip(result.query_ids, result.per_query[f"Judged@{k}"]):
            unj = config["values"][f"unj_{k}"][qid]
            expected = 1 - unj * k / min(k, n_ret[qid]) if n_ret[qid] else 0.0  # -c: nothing retrieved
            if not abs(judged - expected) <= TOLERANCE * k:
                bad.append(f"Judged@{k} {qid}: {judged}, unj_{k} {unj}, num_ret {n_ret[qid]}")
    assert not bad, "\n".join(bad[:20])
