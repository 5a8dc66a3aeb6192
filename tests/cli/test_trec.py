"""``fasttie trec``: trec_eval's measure names, options, order and layout, the values the library
gives, and pytrec_eval's."""


import numpy as np
import pytest

import fasttie as ft
from fasttie.result import Result

from cli.shared import QRELS, RUN, run_main, parse_trec


# --------------------------------------------------------------------------------------------
# trec
# --------------------------------------------------------------------------------------------


def test_trec_equals_library_per_query(capsys):
    metrics = ["AP", "nDCG@10", "P@5", "RR", "Rprec", "R@3"]
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", *metrics, "-q", "--digits", "12")
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
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "map", "P.1,5", "ndcg_cut_3", "recip_rank", "-c",
                            "-l", "2", "--ties", "average", "--digits", "12")
    assert code == 0
    expected = ft.trec.evaluate(QRELS, RUN, ["AP", "P@1", "P@5", "nDCG@3", "RR"], complete=True,
                                relevance_level=2, ties="average")
    values = parse_trec(out)  # trec_eval's measures print under its names, in its order
    assert list(dict.fromkeys(k[0] for k in values)) == ["map", "recip_rank", "P_1", "P_5", "ndcg_cut_3"]
    for name, value in zip(["map", "P_1", "P_5", "ndcg_cut_3", "recip_rank"], expected.mean.values()):
        assert values[(name, "all")] == pytest.approx(value, abs=1e-12)
    assert expected.n_queries == 4  # -c: the judged query missing from the run counts


def test_trec_alpha_ndcg_with_diversity_qrels(capsys, tmp_path):
    qrels = tmp_path / "div.qrels"
    qrels.write_text("q1 1 d1 1\nq1 2 d1 1\nq1 1 d2 1\nq1 3 d3 1\nq1 1 d4 0\nq2 1 d7 0\n")
    run = tmp_path / "div.run"
    run.write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d5 3 2.0 r\nq1 Q0 d3 4 1.0 r\nq2 Q0 d7 1 1.0 r\n")
    code, out, _ = run_main(capsys, "trec", qrels, run, "-m", "alpha-nDCG@[2,5]", "alpha_nDCG(alpha=0.8)@5", "P@2",
                            "-q", "--digits", "12")
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
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "map", "P_5", "ndcg", "recip_rank", "-q", "--digits", "12")
    assert code == 0
    qrels, run = ft.trec.read_qrels(QRELS).to_dict(), ft.trec.read_run(RUN).to_dict()
    peer = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_5", "ndcg", "recip_rank"}).evaluate(run)
    values = parse_trec(out)
    for qid, measures in peer.items():  # the same keys: trec_eval's names
        for name in ("map", "P_5", "ndcg", "recip_rank"):
            assert values[(name, qid)] == pytest.approx(measures[name], abs=1e-12)


def test_trec_json_and_csv(capsys):
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "AP", "P@5", "--json", "-q")
    expected = ft.trec.evaluate(QRELS, RUN, ["AP", "P@5"])
    parsed = Result.from_json(out)
    assert code == 0 and parsed.mean == expected.mean and parsed.query_ids == expected.query_ids
    np.testing.assert_array_equal(parsed.per_query["AP"], expected.per_query["AP"])
    code, out, _ = run_main(capsys, "trec", QRELS, RUN, "-m", "AP", "--csv")
    assert out.strip().splitlines() == ["metric,query,value", f"AP,all,{expected.mean['AP']!r}"]
