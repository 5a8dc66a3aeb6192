"""Brute-force reference for ndeval's diversity measures: the definitions, not the tie formulas.

One query is a list of documents, each with an id, its set of relevant subtopics (empty when
judged non-relevant or unjudged) and a run score (``-inf``: judged, not retrieved). Retrieved
documents are ranked by score; documents with equal scores form a tie. The tie-aware
("average") value of a measure is its mean over every ordering that permutes documents inside
each tie; this module enumerates those orderings (no closed form of docs/ties.md is used).
Documents with the same subtopic set are interchangeable, so it enumerates the distinct
arrangements of each tie's multiset of sets (each stands for the same number of labelled
orderings, so the means are equal).

Definitions (ndeval 4.5; S = subtopics with a relevant judged document, ranks r = 1..N of the
run, alpha-gain g_r = sum over the subtopics s of the document at rank r, ascending, of
(1 - alpha)^(documents with s above it), ideal = ndeval's greedy over the judged documents,
largest gain first, ties to the greatest id):

* alpha_DCG@k = sum_{r<=k} g_r / log2(1+r) / (S sum_{r<=k} (1-alpha)^(r-1) / log2(1+r));
  alpha_nDCG@k divides by the ideal's sum instead.
* ERR_IA@k = sum_{r<=k} g_r / r / (S sum_{r<=k} (1-alpha)^(r-1) / r); nERR_IA@k by the ideal's.
* NRBP = (1 - (1-alpha) beta) / S sum_r g_r beta^(r-1); nNRBP = the sum over the ideal's.
* P_IA@k = relevant (document, subtopic) pairs among ranks <= k, over k S.
* AP_IA = (1/S) sum over subtopics s with R_s > 0 of (1/R_s) sum over the ranks r holding
  an s-document of (s-documents in ranks <= r) / r; R_s = judged documents relevant to s.
* StRecall@k = subtopics of the documents in ranks <= k, over S.

Every value is an exact ``fractions.Fraction`` (alpha and beta are taken at their exact binary
value), except those with a log2 discount: for them the oracle averages the exact gain at each
rank over all orderings and only then multiplies by the float discounts (the two finite sums
swapped, an identity). A query with S = 0 gives 0 for every measure.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

CUTOFF_BASES = ("alpha_DCG", "alpha_nDCG", "ERR_IA", "nERR_IA", "P_IA", "StRecall")
WHOLE_BASES = ("NRBP", "nNRBP", "AP_IA")


def alpha_gains(ranked_sets, alpha):
    """Exact alpha-gain at each rank of a ranked list of subtopic sets."""
    q = 1 - Fraction(alpha)
    seen, gains = Counter(), []
    for subtopics in ranked_sets:
        gains.append(sum((q ** seen[s] for s in sorted(subtopics)), Fraction(0)))
        seen.update(subtopics)
    return gains


def greedy_ideal(judged, alpha):
    """ndeval's greedy ideal: exact gains, largest first given the picks before, ties to the
    greatest id. ``judged`` is a list of (id, subtopic set)."""
    q = 1 - Fraction(alpha)
    seen, left, gains = Counter(), list(judged), []
    while left:
        best = max(left, key=lambda d: (sum((q ** seen[s] for s in d[1]), Fraction(0)), d[0]))
        gains.append(sum((q ** seen[s] for s in sorted(best[1])), Fraction(0)))
        seen.update(best[1])
        left.remove(best)
    return gains


def _discount(r):
    return 1.0 / math.log2(1 + r)


def plain_values(ranked_sets, relevant_counts, n_subtopics, ideal, metrics, alpha, beta):
    """Exact values of the metrics without a log discount on one ranked list.

    metrics: (name, base, k) triples; relevant_counts: {s: R_s}; ideal: greedy gains.
    """
    gains = alpha_gains(ranked_sets, alpha)
    q, beta = 1 - Fraction(alpha), Fraction(beta)
    out = {}
    for name, base, k in metrics:
        if base in ("alpha_DCG", "alpha_nDCG"):
            continue
        if n_subtopics == 0:
            out[name] = Fraction(0)
        elif base in ("ERR_IA", "nERR_IA"):
            value = sum((g / r for r, g in enumerate(gains[:k], 1)), Fraction(0))
            if base == "ERR_IA":
                den = n_subtopics * sum(q ** (r - 1) / r for r in range(1, k + 1))
            else:
                den = sum((g / r for r, g in enumerate(ideal[:k], 1)), Fraction(0))
            out[name] = value / den
        elif base in ("NRBP", "nNRBP"):
            value = sum((g * beta ** (r - 1) for r, g in enumerate(gains, 1)), Fraction(0))
            if base == "NRBP":
                out[name] = (1 - q * beta) * value / n_subtopics
            else:
                out[name] = value / sum((g * beta ** (r - 1) for r, g in enumerate(ideal, 1)), Fraction(0))
        elif base == "P_IA":
            out[name] = Fraction(sum(len(s) for s in ranked_sets[:k]), k * n_subtopics)
        elif base == "StRecall":
            covered = set().union(*ranked_sets[:k]) if ranked_sets[:k] else set()
            out[name] = Fraction(len(covered), n_subtopics)
        elif base == "AP_IA":
            total = Fraction(0)
            for s, big_r in relevant_counts.items():
                count, ap = 0, Fraction(0)
                for r, subtopics in enumerate(ranked_sets, 1):
                    if s in subtopics:
                        count += 1
                        ap += Fraction(count, r)
                total += ap / big_r
            out[name] = total / n_subtopics
        else:
            raise ValueError(base)
    return out


def _tie_blocks(docs):
    """Retrieved documents grouped into ties (lists of (id, set)), scores descending."""
    retrieved = [d for d in docs if d[2] != -math.inf]
    scores = sorted({d[2] for d in retrieved}, reverse=True)
    return [[(d[0], d[1]) for d in retrieved if d[2] == s] for s in scores]


def _distinct_arrangements(block):
    """Distinct orders of a tie's multiset of subtopic sets."""
    labels = {}
    for _, subtopics in block:
        labels.setdefault(subtopics, len(labels))
    items = sorted(labels[s] for _, s in block)
    back = {v: k for k, v in labels.items()}
    seen = set()
    for perm in itertools.permutations(items):
        if perm not in seen:
            seen.add(perm)
            yield [back[v] for v in perm]


def fixed_order(docs, ties):
    """Subtopic sets of the retrieved documents in a fixed order: "stable" (input order inside
    ties), "trec" (greater id first), "pyndeval" (smaller id first)."""
    out = []
    for block in _tie_blocks(docs):
        ids = {d[0]: d for d in block}
        if ties == "trec":
            block = [ids[i] for i in sorted(ids, reverse=True)]
        elif ties == "pyndeval":
            block = [ids[i] for i in sorted(ids)]
        out.extend(s for _, s in block)
    return out


def query_values(docs, metrics, alpha=0.5, beta=0.5, ties="average"):
    """Values of (name, base, k) metrics for one query (a list of (id, subtopic set, score)),
    averaged over the orders inside ties ("average") or in a fixed order. Fractions, floats for
    the log-discounted ones."""
    judged = [(d[0], d[1]) for d in docs]
    relevant_counts = Counter(s for _, subtopics in judged for s in subtopics)
    n_subtopics = len(relevant_counts)
    ideal = greedy_ideal(judged, alpha)
    if ties == "average":
        orders = [list(itertools.chain.from_iterable(parts))
                  for parts in itertools.product(*[list(_distinct_arrangements(b)) for b in _tie_blocks(docs)])]
    else:
        orders = [fixed_order(docs, ties)]
    sums, gain_sums = Counter(), Counter()
    for ranked in orders:
        for name, value in plain_values(ranked, relevant_counts, n_subtopics, ideal, metrics, alpha, beta).items():
            sums[name] += value
        for r, g in enumerate(alpha_gains(ranked, alpha), 1):
            gain_sums[r] += g
    out = {name: sums[name] / len(orders) for name, base, _ in metrics if base not in ("alpha_DCG", "alpha_nDCG")}
    q = 1 - Fraction(alpha)
    for name, base, k in metrics:
        if base not in ("alpha_DCG", "alpha_nDCG"):
            continue
        if n_subtopics == 0:
            out[name] = 0.0
            continue
        value = math.fsum(float(gain_sums[r] / len(orders)) * _discount(r) for r in range(1, k + 1))
        if base == "alpha_DCG":
            den = n_subtopics * math.fsum(float(q ** (r - 1)) * _discount(r) for r in range(1, k + 1))
        else:
            den = math.fsum(float(g) * _discount(r) for r, g in enumerate(ideal[:k], 1))
        out[name] = value / den
    return out


def count_orders(docs):
    """Labelled orderings of the query's ties (their product of factorials)."""
    return math.prod(math.factorial(len(b)) for b in _tie_blocks(docs))
