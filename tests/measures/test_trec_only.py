"""trec_eval's own measures (Rprec_mult, utility, binG, G, ndcg_rel, Rndcg, unj, relstring).

The reference is a literal transcription of trec_eval 10's C loops (m_Rprec_mult.c, m_utility.c,
m_binG.c, m_G.c, m_ndcg_rel.c, m_Rndcg.c, m_unjudged.c, m_relstring.c, gain_init.c's level walk)
on one ranked list of trec_eval relevance values (-1: no qrels line, -2: a negative grade), run
on every order inside ties and averaged (``ties="average"``), or on the one order of a fixed
mode. It shares nothing with fasttie's kernels (no sorted ideal list, no tie formula).
trec_eval's own values on its test files are in tests/conformance/test_trec_conformance.py;
relstring's in tests/trec/test_relstring.py, the names in tests/metrics/test_trec_eval_only.py.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
from helpers import tie_orders

ROOT = Path(__file__).resolve().parents[2]
NONPOOL, UNJUDGED = -1, -2  # trec_eval's RELVALUE_NONPOOL, RELVALUE_UNJUDGED


def setup_gains(judged_grades, table):
    """gain_init.c: [level, gain, count] per level, sorted by gain (the table's integer gains
    keep trec_eval's truncating comparator exact)."""
    counts = {}
    for g in judged_grades:
        counts[g] = counts.get(g, 0) + 1
    n_levels = max([g for g, c in counts.items() if c] + [-1]) + 1
    gains = [[level, float(gain), 0] for level, gain in (table or {}).items()]
    for i in range(n_levels):
        found = [x for x in gains if x[0] == i]
        if found:
            found[0][2] = counts.get(i, 0)
        else:
            gains.append([i, float(i), counts.get(i, 0)])
    gains.sort(key=lambda x: x[1])
    return gains


def get_gain(rel, gains):
    return next((gain for level, gain, _ in gains if level == rel), 0.0)


class IdealWalk:
    """gain_init's ideal: levels from the highest gain down, each num_at_level times."""

    def __init__(self, gains):
        self.gains, self.cur, self.num = gains, len(gains) - 1, 0
        self.gain = gains[-1][1] if gains else 0.0

    def step(self):
        self.num += 1
        while self.cur >= 0 and self.num > self.gains[self.cur][2]:
            self.num = 1
            self.cur -= 1
            self.gain = self.gains[self.cur][1] if self.cur >= 0 else 0.0
        return self.gain


def rprec_mult(rels, num_rel, level, x):
    cutoff = int(x * num_rel + 0.9)
    if cutoff == 0:
        return 0.0
    return sum(1 for r in rels[:cutoff] if r >= level) / cutoff


def utility(rels, num_rel, level, a, b, c, d):
    rel_ret = sum(1 for r in rels if r >= level)
    return a * rel_ret + b * (len(rels) - rel_ret) + c * (num_rel - rel_ret) + d * (rel_ret - len(rels) - num_rel)


def bin_g(rels, num_rel, level):
    total, rel_so_far = 0.0, 0
    for i, r in enumerate(rels):
        if r >= level:
            rel_so_far += 1
            total += 1.0 / math.log2(3 + i - rel_so_far)
    return total / num_rel if rel_so_far else 0.0


def g_measure(rels, gains):
    ideal = IdealWalk(gains)
    results_g = sum_results = sum_ideal = sum_cost = 0.0
    i = 0
    while i < len(rels) and ideal.gain > 0.0:
        gain = get_gain(rels[i], gains)
        sum_results += gain
        ideal.step()
        sum_ideal += ideal.gain if ideal.gain > 0.0 else 0.0
        sum_cost += ideal.gain if ideal.gain >= 1.0 else 1.0
        if gain != 0:
            results_g += gain / math.log2(2 + sum_cost - sum_results)
        i += 1
    while i < len(rels):
        gain = get_gain(rels[i], gains)
        sum_results += gain
        sum_cost += 1.0
        if gain != 0:
            results_g += gain / math.log2(2 + sum_cost - sum_results)
        i += 1
    while ideal.gain > 0.0:
        ideal.step()
        sum_ideal += ideal.gain if ideal.gain > 0.0 else 0.0
    return results_g / sum_ideal if sum_ideal > 0.0 else 0.0


def ndcg_rel(rels, gains):
    ideal = IdealWalk(gains)
    dcg = ideal_dcg = total = 0.0
    num_rel = num_rel_ret = i = 0
    while i < len(rels) and ideal.gain > 0.0:
        gain = get_gain(rels[i], gains)
        if gain != 0:
            dcg += gain / math.log2(i + 2)
        if ideal.step() > 0.0:
            num_rel += 1
            ideal_dcg += ideal.gain / math.log2(i + 2)
        if gain > 0:
            total += dcg / ideal_dcg
            num_rel_ret += 1
        i += 1
    while i < len(rels):
        gain = get_gain(rels[i], gains)
        if gain != 0:
            dcg += gain / math.log2(i + 2)
        if gain > 0:
            total += dcg / ideal_dcg
            num_rel_ret += 1
        i += 1
    while ideal.gain > 0.0:
        if ideal.step() > 0.0:
            num_rel += 1
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    total += (num_rel - num_rel_ret) * dcg / ideal_dcg if num_rel else 0.0
    return total / num_rel if total > 0.0 else 0.0


def rndcg(rels, num_rel, gains):
    if num_rel == 0:
        return 0.0
    ideal = IdealWalk(gains)
    old = ideal.gain
    dcg = ideal_dcg = total = 0.0
    points = i = 0
    while i < len(rels) and ideal.gain > 0.0:
        gain = get_gain(rels[i], gains)
        if ideal.step() != old:
            if ideal_dcg > 0.0:
                total += dcg / ideal_dcg
                points += 1
            old = ideal.gain
        if gain != 0:
            dcg += gain / math.log2(i + 2)
        if ideal.gain > 0.0:
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    if i < len(rels):
        while i < len(rels):
            gain = get_gain(rels[i], gains)
            if gain != 0:
                dcg += gain / math.log2(i + 2)
            i += 1
        if ideal_dcg > 0.0:
            total += dcg / ideal_dcg
            points += 1
    while ideal.gain > 0.0:
        if ideal.step() != old:
            if ideal_dcg > 0.0:
                total += dcg / ideal_dcg
                points += 1
            old = ideal.gain
        if ideal.gain > 0.0:
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    return total / points if points else math.nan  # trec_eval's 0 / 0 (relevant levels of gain <= 0)


def unj(rels, k):
    return sum(1 for r in rels[:k] if r in (NONPOOL, UNJUDGED)) / k


def relstring(rels, length):
    return "".join(">" if r > 9 else str(r) if r >= 0 else "-" if r == NONPOOL else "." for r in rels[:length])


def _r(judged, level):
    return sum(1 for g in judged if g >= level)


# name -> its value on one order: (trec_eval relevance values in rank order, judged grades, level)
METRICS = {
    "Rprec_mult(x=0.4)": lambda rels, judged, level: rprec_mult(rels, _r(judged, level), level, 0.4),
    "Rprec_mult(x=1.2)": lambda rels, judged, level: rprec_mult(rels, _r(judged, level), level, 1.2),
    "utility": lambda rels, judged, level: utility(rels, _r(judged, level), level, 1, -1, 0, 0),
    "utility(a=2, b=-1, c=-0.5, d=0.25)":
        lambda rels, judged, level: utility(rels, _r(judged, level), level, 2, -1, -0.5, 0.25),
    "binG": lambda rels, judged, level: bin_g(rels, _r(judged, level), level),
    "G": lambda rels, judged, level: g_measure(rels, setup_gains(judged, None)),
    "G(gains={1: 3, 3: 5})": lambda rels, judged, level: g_measure(rels, setup_gains(judged, {1: 3, 3: 5})),
    "ndcg_rel": lambda rels, judged, level: ndcg_rel(rels, setup_gains(judged, None)),
    "ndcg_rel(gains={1: 3, 2: 0, 3: 5})":
        lambda rels, judged, level: ndcg_rel(rels, setup_gains(judged, {1: 3, 2: 0, 3: 5})),
    "Rndcg": lambda rels, judged, level: rndcg(rels, _r(judged, level), setup_gains(judged, None)),
    "Rndcg(gains={1: 3, 2: 0, 3: 5})":
        lambda rels, judged, level: rndcg(rels, _r(judged, level), setup_gains(judged, {1: 3, 2: 0, 3: 5})),
    "unj@2": lambda rels, judged, level: unj(rels, 2),
    "unj@9": lambda rels, judged, level: unj(rels, 9),
}


def random_case(rng):
    """qrels and run dicts of one query with ties: retrieved documents with a grade 0-3, -1 (a
    negative grade: unjudged) or no qrels line, and 0-2 judged documents not retrieved."""
    n = int(rng.integers(1, 7))
    docs = [f"d{i}" for i in range(n)]
    kind = rng.integers(-2, 4, n)
    qrels = {d: int(k) if k >= -1 else None for d, k in zip(docs, kind)}
    qrels = {d: g for d, g in qrels.items() if g is not None}
    for j in range(int(rng.integers(0, 3))):
        qrels[f"u{j}"] = int(rng.integers(0, 4))
    if not qrels:
        qrels["u9"] = 0
    scores = {d: float(s) for d, s in zip(docs, rng.integers(0, 3, n))}
    return qrels, scores


def trec_rels(qrels, docs):
    return [NONPOOL if d not in qrels else UNJUDGED if qrels[d] < 0 else qrels[d] for d in docs]


def orders(qrels, scores, ties):
    docs = list(scores)
    values = [scores[d] for d in docs]
    if ties == "trec":  # score descending, then document id descending
        return [sorted(docs, key=lambda d: (-scores[d], [-ord(c) for c in d]))]
    if ties in ("optimistic", "pessimistic"):
        sign = -1 if ties == "optimistic" else 1
        return [sorted(docs, key=lambda d: (-scores[d], sign * max(qrels.get(d, 0), 0), docs.index(d)))]
    return [[docs[i] for i in order] for order in tie_orders(values, ties)]


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["average", "trec", "stable", "optimistic", "pessimistic"]),
       st.sampled_from([1, 2]))
def test_against_trec_eval_loops_over_every_tie_order(seed, ties, level):
    qrels, scores = random_case(np.random.default_rng(seed))
    metrics = [m for m in METRICS if not (ties == "average" and m.startswith("G"))]  # G: one order only
    result = ft.trec.evaluate({"q": qrels}, {"q": scores}, metrics, ties=ties, relevance_level=level)
    judged = [g for g in qrels.values() if g >= 0]
    for metric in metrics:
        values = [METRICS[metric](trec_rels(qrels, order), judged, level) for order in orders(qrels, scores, ties)]
        expected = math.fsum(values) / len(values)
        assert result.per_query[metric][0] == pytest.approx(expected, rel=1e-12, abs=1e-15, nan_ok=True), (
            metric, qrels, scores)


def test_hand_examples_from_the_c_source():
    """trec_eval's loops by hand on d3 (grade 2), d2 (no qrels line), d1 (grade 0), d0 (grade 1),
    in trec order, and one relevant document (grade 1) not retrieved: R = 2 at level 1."""
    qrels = {"q": {"d0": 1, "d1": 0, "d3": 2, "u": 1}}
    run = {"q": {"d0": 1.0, "d1": 2.0, "d2": 3.0, "d3": 4.0}}
    res = ft.trec.evaluate(qrels, run, ["binG", "Rprec_mult(x=1)", "Rprec_mult(x=0.2)", "utility", "unj@2", "unj@5",
                                        "ndcg_rel", "Rndcg", "G"])
    values = {name: float(v[0]) for name, v in res.per_query.items()}
    # binG: d3 with 0 non-relevant above (1 / log2 2), d0 with 2 (1 / log2 4), over R = 3
    assert values["binG"] == pytest.approx((1.0 + 0.5) / 3)
    # Rprec_mult: cutoffs (long) (1 * 3 + 0.9) = 3 and (long) (0.2 * 3 + 0.9) = 1: P@3, P@1
    assert values["Rprec_mult(x=1)"] == pytest.approx(1 / 3) and values["Rprec_mult(x=0.2)"] == 1.0
    assert values["utility"] == 2 - 2  # 2 relevant retrieved, 2 others
    assert values["unj@2"] == 0.5 and values["unj@5"] == 0.2  # d2 only; over k past the list too
    # ideal gains 2, 1, 1, 0; results 2, 0, 0, 1
    d = [1 / math.log2(i + 2) for i in range(4)]
    idcg = [2 * d[0], 2 * d[0] + d[1], 2 * d[0] + d[1] + d[2]]
    dcg4 = 2 * d[0] + d[3]
    # ndcg_rel: at d3 DCG@1 / IDCG@1, at d0 DCG@4 / IDCG, and u (not retrieved) DCG@4 / IDCG; over 3
    assert values["ndcg_rel"] == pytest.approx((1 + dcg4 / idcg[2] + dcg4 / idcg[2]) / 3)
    # Rndcg: the ideal gain changes at ranks 1 (2 -> 1) and 3 (1 -> 0): nDCG@1, nDCG@3
    assert values["Rndcg"] == pytest.approx((1 + 2 * d[0] / idcg[2]) / 2)
    # G: costs max(1, ideal) = 2, 1, 1, 1; d3 adds 2 / log2(2 + 2 - 2), d0 1 / log2(2 + 5 - 3); over 4
    assert values["G"] == pytest.approx((2 / 1 + 1 / 2) / 4)




def test_one_measure_compiles_its_own_kernel_alone():
    """Asking for binG runs (compiles, or loads from numba's cache) binG's kernel and no other."""
    code = ("import fasttie as ft; from fasttie._kernels import trec_gain, score_ties; "
            "ft.trec.evaluate({'q': {'a': 1}}, {'q': {'a': 1.0, 'b': 1.0}}, ['binG'], ties='average'); "
            "print(sorted(name for name in dir(trec_gain) + ['finalize_rankings', 'finalize_fixed_rankings'] "
            "if getattr(getattr(trec_gain, name, None) or getattr(score_ties, name), 'signatures', None)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["['bing_rankings']"]
