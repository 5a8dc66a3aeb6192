"""``fasttie trec``: trec_eval's measure names, options, order and layout, the values the library
gives, and pytrec_eval's; -M and -J reach the library; several runs, --compare and the
query-set note."""

import json
from pathlib import Path

import numpy as np
import pytest

import fasttie as ft
from fasttie import cli, trec
from fasttie.result import Result

from cli.shared import QRELS, RUN, run_main, parse_trec
from trec.test_join import random_case


def _each(option, values):
    """``option`` before each value: trec_eval's -m takes one value each time."""
    return [arg for value in values for arg in (option, value)]


# --------------------------------------------------------------------------------------------
# trec
# --------------------------------------------------------------------------------------------


def test_trec_equals_library_per_query(capsys):
    metrics = ["AP", "nDCG@10", "P@5", "RR", "Rprec", "R@3"]
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, *_each("-m", metrics), "-q", "--digits", "12")
    assert code == 0
    expected = ft.trec.evaluate(QRELS, RUN, metrics)
    values = parse_trec(out)
    assert len(values) == len(metrics) * (expected.n_queries + 1)
    for name in metrics:
        for i, qid in enumerate(expected.query_ids):
            assert values[(name, qid)] == pytest.approx(expected.per_query[name][i], abs=1e-12)
        assert values[(name, "all")] == pytest.approx(expected.mean[name], abs=1e-12)
    assert out.splitlines()[0].startswith("AP" + " " * 20 + "\tq1\t")  # trec_eval's %-22s


def test_trec_options_and_trec_eval_names(capsys):
    measures = _each("-m", ["map", "P.1,5", "ndcg_cut_3", "recip_rank"])
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, *measures, "-c",
                            "-l", "2", "--ties", "average", "--digits", "12")
    assert code == 0
    expected = ft.trec.evaluate(QRELS, RUN, ["AP", "P@1", "P@5", "nDCG@3", "RR"], complete=True,
                                relevance_level=2, ties="average")
    values = parse_trec(out)  # trec_eval's measures print under its names, in its order
    assert list(dict.fromkeys(k[0] for k in values)) == ["map", "recip_rank", "P_1", "P_5", "ndcg_cut_3"]
    for name, value in zip(["map", "P_1", "P_5", "ndcg_cut_3", "recip_rank"], expected.mean.values()):
        assert values[(name, "all")] == pytest.approx(value, abs=1e-12)
    assert expected.n_queries == 4  # -c: the judged query missing from the run counts


@pytest.mark.parametrize("ties", ["pyndeval", "trec", "stable"])
def test_trec_takes_every_tie_mode_of_the_library(capsys, ties):
    """--ties offers the TREC door's modes (fasttie.options.TREC_TIES), ndeval's order too."""
    metrics = ["AP", "P@2", "RR"]
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, *_each("-m", metrics), "-q", "--ties", ties, "--digits", "12")
    assert code == 0
    expected = ft.trec.evaluate(QRELS, RUN, metrics, ties=ties)
    values = parse_trec(out)
    for name in metrics:
        for i, qid in enumerate(expected.query_ids):
            assert values[(name, qid)] == pytest.approx(expected.per_query[name][i], abs=1e-12)


def test_trec_alpha_ndcg_with_diversity_qrels(capsys, tmp_path):
    qrels = tmp_path / "div.qrels"
    qrels.write_text("q1 1 d1 1\nq1 2 d1 1\nq1 1 d2 1\nq1 3 d3 1\nq1 1 d4 0\nq2 1 d7 0\n")
    run = tmp_path / "div.run"
    run.write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d5 3 2.0 r\nq1 Q0 d3 4 1.0 r\nq2 Q0 d7 1 1.0 r\n")
    measures = _each("-m", ["alpha-nDCG@[2,5]", "alpha_nDCG(alpha=0.8)@5", "P@2"])
    code, out, _ = run_main(capsys, "trec", qrels, run, *measures, "-q", "--digits", "12")
    assert code == 0
    names = ["alpha-nDCG@2", "alpha-nDCG@5", "alpha_nDCG(alpha=0.8)@5", "P@2"]  # as typed
    expected = ft.trec.evaluate(qrels, run, names)
    values = parse_trec(out)
    assert list(dict.fromkeys(k[0] for k in values)) == names
    for name in names:
        for i, qid in enumerate(expected.query_ids):
            assert values[(name, qid)] == pytest.approx(expected.per_query[name][i], abs=1e-12)
    assert values[("alpha-nDCG@5", "q1")] > 0 and values[("alpha-nDCG@5", "q2")] == 0
    code, _, err = run_main(capsys, "trec", qrels, run, "-m", "alpha_nDCG")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "needs a cutoff" in err


def test_trec_agrees_with_pytrec_eval(capsys):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    measures = _each("-m", ["map", "P_5", "ndcg", "recip_rank"])
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, *measures, "-q", "--digits", "12")
    assert code == 0
    qrels, run = ft.trec.read_qrels(QRELS).to_dict(), ft.trec.read_run(RUN).to_dict()
    peer = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_5", "ndcg", "recip_rank"}).evaluate(run)
    values = parse_trec(out)
    for qid, measures in peer.items():  # the same keys: trec_eval's names
        for name in ("map", "P_5", "ndcg", "recip_rank"):
            assert values[(name, qid)] == pytest.approx(measures[name], abs=1e-12)


def test_trec_json_and_csv(capsys):
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "AP", "-m", "P@5", "--json", "-q")
    expected = ft.trec.evaluate(QRELS, RUN, ["AP", "P@5"])
    parsed = Result.from_json(out)
    assert code == 0 and parsed.mean == expected.mean and parsed.query_ids == expected.query_ids
    np.testing.assert_array_equal(parsed.per_query["AP"], expected.per_query["AP"])
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "AP", "--csv")
    assert out.strip().splitlines() == ["metric,query,value", f"AP,all,{expected.mean['AP']!r}"]


def test_cli_flags(tmp_path, capsys):
    qrels, run = random_case(2, n_queries=6)
    qrels_path, run_path = tmp_path / "q.txt", tmp_path / "r.txt"
    qrels_path.write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    run_path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items() for d, s in docs.items()))
    for argv, options in (([], {}), (["-M", "4"], {"max_retrieved": 4}), (["-J"], {"judged_only": True}),
                          (["-M3", "-J", "--ties", "average"], {"max_retrieved": 3, "judged_only": True, "ties": "average"})):
        assert cli.main(["trec", str(qrels_path), str(run_path), "-m", "AP", "-m", "P@5", "-m", "NumRet", "--json", *argv]) == 0
        printed = json.loads(capsys.readouterr().out)
        expected = trec.evaluate(str(qrels_path), str(run_path), ["AP", "P@5", "NumRet"], **options)
        assert printed["mean"] == expected.mean, argv
        assert printed["settings"]["max_retrieved"] == options.get("max_retrieved")
        assert printed["settings"]["judged_only"] is options.get("judged_only", False)
    assert cli.main(["trec", str(qrels_path), str(run_path), "-M", "0"]) != 0
    assert "-M/--max-retrieved" in capsys.readouterr().err


def test_the_query_set_is_made_visible():
    """Which queries are averaged differs between libraries: the result says how many judged
    queries the run lacks and how many run queries have no judgments; the CLI says it on stderr."""
    from fasttie.cli.trec import query_set_note

    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    run = {"q1": {"a": 1.0}, "q4": {"z": 1.0}}
    res = trec.evaluate(qrels, run, ["AP"])
    assert res.settings["judged_not_in_run"] == 2 and res.settings["in_run_not_judged"] == 1
    assert res.mean["AP"] == 1.0 and res.query_ids == ["q1"]  # trec_eval: the run's judged queries
    complete = trec.evaluate(qrels, run, ["AP"], complete=True)
    assert complete.mean["AP"] == pytest.approx(1 / 3)  # ir_measures' and ranx's query set, the missing scored 0
    assert "left out of the means" in query_set_note(res.settings) and "1 run query has no judgments" in \
        query_set_note(res.settings)
    assert query_set_note(complete.settings).startswith("2 judged queries are not in the run: scored 0 (-c)")
    same = trec.evaluate({"q1": {"a": 1}}, {"q1": {"a": 1.0}}, ["AP"])
    assert query_set_note(same.settings) is None
    ir_measures = pytest.importorskip("ir_measures")
    qrels_rows = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    run_rows = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    assert ir_measures.calc_aggregate([ir_measures.AP], qrels_rows, run_rows)[ir_measures.AP] == complete.mean["AP"]


def test_cli_several_runs_compare_and_fasttie_names(tmp_path, capsys):
    qrels, run = "tests/data/qrels.txt", "tests/data/run.txt"
    other = tmp_path / "other.txt"  # the same run, q1's order reversed, another tag
    lines = Path(run).read_text().splitlines()
    other.write_text("\n".join(line.replace("demo", "other") if not line.startswith("q1 ") else
                               " ".join([*line.split()[:4], str(-float(line.split()[4])), "other"]) for line in lines))
    assert cli.main(["trec", qrels, run, str(other), "-m", "map", "-m", "P.5", "-q"]) == 0
    out, err = capsys.readouterr()
    blocks = [trec.evaluate(qrels, path, ["AP", "P@5"]) for path in (run, str(other))]
    printed = out.splitlines()
    assert len(printed) == 2 * 2 * (3 + 1)  # two runs one after the other: 2 measures x (3 queries + all)
    for block, expected in zip((printed[:8], printed[8:]), blocks):
        assert block[-2] == f"{'map':<22}\tall\t{expected.mean['AP']:.4f}"
        assert block[-1] == f"{'P_5':<22}\tall\t{expected.mean['P@5']:.4f}"
    assert cli.main(["trec", qrels, run, str(other), "-m", "map", "-m", "P.5", "--compare"]) == 0
    out, _ = capsys.readouterr()
    assert "demo" in out and "other" in out and "map" in out.split("\n\n", 1)[1]
    assert cli.main(["trec", qrels, run, "-m", "map", "-m", "P.5", "-m", "iprec_at_recall..5", "--fasttie-names"]) == 0
    out, _ = capsys.readouterr()
    assert [line.split("\t")[0].strip() for line in out.splitlines()] == ["AP", "IPrec@0.5", "P@5"]
    assert cli.main(["trec", qrels, run, "--ties", "average"]) == 0
    out, err = capsys.readouterr()
    assert "iprec_at_recall" not in out and "left out under --ties average" in err and "runid" in out
    assert cli.main(["trec", qrels, run, "-m", "all_trec"]) == 0
    out, err = capsys.readouterr()
    assert "does not compute" not in err and "utility" in out and "relstring" not in out  # relstring: -q only
    assert cli.main(["trec", qrels, run, "-m", "iprec_at_recall.1.5"]) == 2  # a recall level past 1
    assert "nothing fasttie computes" in capsys.readouterr().err
    assert cli.main(["trec", qrels, run, "-m", "relstring.3", "-m", "unj.2", "-q", "--ties", "average"]) == 0
    out, err = capsys.readouterr()
    assert "relstring" not in out and "unj_2" in out and "left out under --ties average" in err and "relstring_3" in err
    assert cli.main(["trec", qrels, run, "-m", "relstring.3", "-q"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{'relstring_3':<22}\tq1\t'2-0'"
    assert cli.main(["trec", qrels, run, "-m", "relstring", "-m", "map", "-q", "--csv"]) == 0
    out, err = capsys.readouterr()
    assert "relstring" not in out and "left out of --json and --csv" in err
    assert cli.main(["trec", qrels, run, str(other), "--per-query-file", str(tmp_path / "x.json")]) == 2
    assert "--per-query-file: takes one run" in capsys.readouterr().err
    assert cli.main(["trec", qrels, run, "--compare"]) == 2
    assert "--compare: give two or more runs" in capsys.readouterr().err


def test_trec_evals_command_lines(capsys, tmp_path):
    """trec_eval's getopt string is "hvqm:cl:nD:JN:M:R:T:oZ:": -m, -l and -M take one value each,
    spaced or glued (-mmap, -l2, -M1000), options may come before the files (`trec_eval -q -m map
    QRELS RUN`, how scripts call it), and its long options are --measure, --query_eval_wanted,
    --complete_rel_info_wanted, --level_for_rel, --Max_retrieved_per_topic, --Judged_docs_only."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q 0 a 1\nq 0 b 2\nq 0 c 0\n")
    run.write_text("q Q0 a 1 2 r1\nq Q0 c 2 1.5 r1\nq Q0 b 3 1 r1\n")
    spaced = run_main(capsys, "trec", qrels, run, "-m", "map", "-m", "P.2", "-q", "-l", "2", "-M", "2", "-c")
    assert spaced[0] == 0 and spaced[1].splitlines()[0] == f"{'map':<22}\tq\t0.0000"
    for argv in (["-q", "-m", "map", "-m", "P.2", "-l", "2", "-M", "2", "-c", qrels, run],
                 ["-q", "-mmap", "-mP.2", "-l2", "-M2", "-c", qrels, run],
                 ["--query_eval_wanted", "--measure", "map", "--measure=P.2", "--level_for_rel", "2",
                  "--Max_retrieved_per_topic", "2", "--complete_rel_info_wanted", qrels, run]):
        assert run_main(capsys, "trec", *argv)[:2] == spaced[:2], argv
    assert run_main(capsys, "trec", "-J", "-mnum_ret", qrels, run)[1] == run_main(
        capsys, "trec", "--Judged_docs_only", "--measure", "num_ret", qrels, run)[1]
    # several measures after one -m: the second is read as a run file, and the error says why
    code, out, err = run_main(capsys, "trec", qrels, run, "-m", "map", "P.2", "ndcg")
    assert code == 2 and not out
    assert "unrecognized arguments: P.2 ndcg (-m takes one measure each time, as trec_eval's: -m P.2 -m ndcg)" in err
    code, out, err = run_main(capsys, "trec", "-m", "map", "P.2", qrels, run)
    assert code == 2 and "QRELS: file not found: P.2 (-m takes one measure each time" in err


def test_trec_evals_own_rules_under_its_names(capsys, tmp_path):
    """Where trec_eval's measure differs from the fasttie metric it is computed with, `fasttie
    trec` prints trec_eval's value under trec_eval's name. Qrels 'q 0 a 1' / 'q 0 b 2', run a, b
    (both judged); expected values from the C source, as trec_eval 10.0 prints them:

    * rbp_resid = p^2 + (1 - p) * (weights of the unjudged) only `if (unj_so_far)`, else it keeps
      its initial 0 (m_rbp_resid.c): 0, where fasttie's RBPResid is 0.9^2 = 0.81. A third,
      unjudged document c: 0.9^3 + 0.1 * 0.9^2 = 0.81. Under -c, a judged query missing from
      the run (r) is evaluated on one unjudged placeholder document, p + (1 - p) = 1, and then
      set to 0 by trec_eval.c, which looks for the name "rbp_resid" only: rbp_resid_p=0.5
      keeps the 1 (0.25 for q: 0.5^3 + 0.5 * 0.5^2), and -J drops the placeholder (0).
    * num_rel under -c: every qrels line with a grade > 0 (m_num_rel.c, te_calc_avg_num_rel),
      whatever -l: 3 with -l 2, where the per-query values (grade >= 2) sum to 1.
    * a measure given twice: its first parameters (meas_init.c); with gains 1 -> 3 and 2 -> 9,
      ndcg_1=3,2=9 = (3 + 9 / log2(3)) / (9 + 3 / log2(3)) = 0.7967."""
    qrels, run, unjudged = tmp_path / "qrels", tmp_path / "run", tmp_path / "unjudged"
    qrels.write_text("q 0 a 1\nq 0 b 2\nr 0 a 1\n")
    run.write_text("q Q0 a 1 2 r1\nq Q0 b 2 1 r1\n")
    unjudged.write_text("q Q0 a 1 3 r1\nq Q0 b 2 2 r1\nq Q0 c 3 1 r1\n")

    def printed(*argv, path=run):
        code, out, _ = run_main(capsys, "trec", qrels, path, *argv)
        assert code == 0
        return out.splitlines()

    assert printed("-c", "-m", "rbp_resid") == [f"{'rbp_resid':<22}\tall\t0.0000"]
    assert printed("-c", "-m", "rbp_resid", "-m", "RBPResid(p=0.9)", "--digits", "6") == [  # fasttie's, by its name
        f"{'rbp_resid':<22}\tall\t0.000000", f"{'RBPResid(p=0.9)':<22}\tall\t{(0.81 + 1) / 2:.6f}"]
    # with parameters, trec_eval.c's clean-up of the missing query's placeholder misses the name
    assert printed("-c", "-q", "-m", "rbp_resid.p=0.5", path=unjudged) == [
        f"{'rbp_resid_p=0.5':<22}\tq\t0.2500", f"{'rbp_resid_p=0.5':<22}\tr\t1.0000",
        f"{'rbp_resid_p=0.5':<22}\tall\t0.6250"]
    assert printed("-c", "-q", "-J", "-m", "rbp_resid.p=0.5", path=unjudged) == [  # -J: nothing unjudged
        f"{'rbp_resid_p=0.5':<22}\t{qid}\t0.0000" for qid in ("q", "r", "all")]
    assert printed("-c", "-q", "-m", "rbp_resid", path=unjudged) == [
        f"{'rbp_resid':<22}\tq\t{0.9 ** 3 + 0.1 * 0.9 ** 2:.4f}", f"{'rbp_resid':<22}\tr\t0.0000",
        f"{'rbp_resid':<22}\tall\t{(0.9 ** 3 + 0.1 * 0.9 ** 2) / 2:.4f}"]
    assert "rbp_resid             \tall\t0.0000" in printed("-c", "-m", "all_trec")
    assert printed("-c", "-l", "2", "-q", "-m", "num_rel") == [
        f"{'num_rel':<22}\tq\t1", f"{'num_rel':<22}\tr\t0", f"{'num_rel':<22}\tall\t3"]
    assert printed("-c", "-m", "num_rel") == [f"{'num_rel':<22}\tall\t3"]
    gains = [f"{'ndcg_1=3,2=9':<22}\tall\t{(3 + 9 / np.log2(3)) / (9 + 3 / np.log2(3)) / 2:.4f}"]  # r scores 0
    assert printed("-c", "-m", "ndcg.1=3,2=9", "-m", "ndcg") == gains
    assert printed("-c", "-m", "ndcg", "-m", "ndcg.1=3,2=9") == gains
    # with fasttie's names among them: each trec_eval measure where first named, with its first parameters
    assert [line.split()[0] for line in printed("-c", "-m", "P.5", "-m", "AP", "-m", "P.10", "-m", "ndcg.1=3,2=9",
                                                "-m", "ndcg", "-m", "P_2")] == ["P_2", "P_5", "AP", "ndcg_1=3,2=9"]
    assert printed("-c", "-m", "P.5", "-m", "P.10") == [f"{'P_5':<22}\tall\t0.2000"]
    code, out, err = run_main(capsys, "trec", qrels, run, "-c", "-m", "set")
    assert code == 0 and "utility" in out and "does not compute" not in err


def test_nosummary(capsys, tmp_path):
    """trec_eval -n (--nosummary) leaves out every 'all' line and the runid line (epi.summary_flag:
    te_print_runid and the final prints check it); with -q the queries' lines remain, without it
    nothing is printed. --json and --csv hold the means, so -n refuses them."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q 0 a 1\nq 0 b 2\nr 0 a 1\n")
    run.write_text("q Q0 a 1 2 r1\nq Q0 b 2 1 r1\nr Q0 b 1 1 r1\n")
    code, out, _ = run_main(capsys, "trec", "-n", "-q", "-m", "map", "-m", "num_q", "-m", "runid", qrels, run)
    assert code == 0 and out.splitlines() == [f"{'map':<22}\tq\t1.0000", f"{'map':<22}\tr\t0.0000"]
    code, out, _ = run_main(capsys, "trec", "--nosummary", qrels, run)
    assert code == 0 and out == ""
    code, _, err = run_main(capsys, "trec", "-n", "--csv", qrels, run)
    assert code == 2 and "-n/--nosummary" in err


# trec_eval 10.0's output (f425365) for the hand case of tests/trec/test_evaluation.py (judged grades
# 2, 1, 0 and -1, unjudged retrieved documents):
#   trec_eval -q -l L -m num_rel -m map -m P.5 -m bpref -m ndcg qrels run
# -l 0 whole; -l 1 and -l 2 their 'all' lines. trec_eval reads L with atol: -l 0.9 and -l -0.5
# (and .5) print the -l 0 lines, -l 1.5 the -l 1 lines, -l 2.7 and -l 2e5 the -l 2 lines (checked
# with the binary).
LEVEL_0_OUT = """\
num_rel               \tq1\t5
map                   \tq1\t0.2857
bpref                 \tq1\t0.6000
P_5                   \tq1\t0.4000
ndcg                  \tq1\t0.3816
num_rel               \tq2\t2
map                   \tq2\t0.2500
bpref                 \tq2\t0.5000
P_5                   \tq2\t0.2000
ndcg                  \tq2\t0.0000
num_rel               \tall\t7
map                   \tall\t0.2679
bpref                 \tall\t0.5500
P_5                   \tall\t0.3000
ndcg                  \tall\t0.1908
"""
LEVEL_1_ALL = ["num_rel               \tall\t3", "map                   \tall\t0.0893",
               "bpref                 \tall\t0.1667", "P_5                   \tall\t0.1000",
               "ndcg                  \tall\t0.1908"]
LEVEL_2_ALL = ["num_rel               \tall\t1", "map                   \tall\t0.1250",
               "bpref                 \tall\t0.0000", "P_5                   \tall\t0.1000",
               "ndcg                  \tall\t0.1908"]


def test_trec_levels_as_trec_eval_reads_them(capsys, tmp_path):
    """-l 0 makes every judged document relevant, grade 0 too; -l takes the integer part of its
    value, as trec_eval's atol; a negative level is refused in one line (trec_eval's applies to
    P and map but not num_rel or bpref)."""
    from trec.test_evaluation import LEVEL_0_QRELS, LEVEL_0_RUN

    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in LEVEL_0_QRELS.items() for d, r in docs.items()))
    run.write_text("".join(f"{q} Q0 {d} 0 {s} r\n" for q, docs in LEVEL_0_RUN.items() for d, s in docs.items()))
    measures = _each("-m", ["num_rel", "map", "P.5", "bpref", "ndcg"])

    def printed(level):
        code, out, err = run_main(capsys, "trec", qrels, run, "-q", f"--level={level}", *measures)
        assert code == 0, err
        return out

    for level in ("0", "0.9", "-0.5", ".5"):
        assert printed(level) == LEVEL_0_OUT, level
    for level, expected in (("1", LEVEL_1_ALL), ("1.5", LEVEL_1_ALL), ("2", LEVEL_2_ALL), ("2.7", LEVEL_2_ALL),
                            ("2e5", LEVEL_2_ALL)):  # atol("2e5") is 2
        assert [line for line in printed(level).splitlines() if "\tall\t" in line] == expected, level
    code, out, err = run_main(capsys, "trec", qrels, run, "--level=-1", *measures)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "-l/--level must be >= 0 (0: every judged document is relevant, grade 0 too), got -1" in err


def test_trec_any_recall_level(tmp_path, capsys):
    """``-m iprec_at_recall.0.35,0.625`` prints what trec_eval 10.0 printed on these files (a
    binary built from its source): relevant documents at ranks 1, 3, 5, 7 of 7, R = 4, so level
    0.35 starts at relevant document lround(1.4) = 1 (precision 1; trec_eval 9's (long) (1.4 + 0.9)
    = 2 would give 2/3) and 0.625 at lround(2.5) = 3 (3/5), printed ``_0.62`` (%3.2f)."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("".join(f"q1 0 {doc} {1 - i % 2}\n" for i, doc in enumerate("abcdefg")))
    run.write_text("".join(f"q1 Q0 {doc} {i + 1} {7 - i} t\n" for i, doc in enumerate("abcdefg")))
    code, out, _ = run_main(capsys, "trec", str(qrels), str(run), "-m", "iprec_at_recall.0.35,0.625", "-q")
    assert code == 0
    assert out.splitlines() == ["iprec_at_recall_0.35  \tq1\t1.0000", "iprec_at_recall_0.62  \tq1\t0.6000",
                                "iprec_at_recall_0.35  \tall\t1.0000", "iprec_at_recall_0.62  \tall\t0.6000"]
