"""Brute-force reference for :func:`fasttie.rescore_evaluate`: the definition, not a formula.

Per query, every equally likely choice of the tied candidates is enumerated
(``itertools.combinations`` of the items at the cut distance), the candidate list is ordered by
inner product (descending, database index ascending among equal products: Python's sort of
(-score, id)), and the plain metric is computed on the final list, in exact fractions (DCG's
log discounts in float, summed with ``math.fsum``). The average is the mean over the choices;
the extremes and the variance are taken over the same list of values. Nothing here uses the
Markov chain or the hypergeometric forms of the kernels.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np


def hamming(query_code, db_codes):
    return [int(np.sum(query_code != row)) for row in db_codes]


def choices(distances, candidates, stable=False):
    """Every candidate set (a tuple of ids) of one query: the items closer than the cut and each
    m-subset of the tied items (the first m in index order when ``stable``)."""
    n = len(distances)
    c = min(candidates, n)
    order = sorted(range(n), key=lambda j: (distances[j], j))
    cut = distances[order[c - 1]]
    sure = [j for j in range(n) if distances[j] < cut]
    tied = [j for j in range(n) if distances[j] == cut]
    m = c - len(sure)
    if stable:
        return [tuple(sure + tied[:m])]
    return [tuple(sure + list(subset)) for subset in itertools.combinations(tied, m)]


def ranked(candidate_ids, scores):
    return sorted(candidate_ids, key=lambda j: (-scores[j], j))


def gain(g, kind):
    return (2**g - 1) if kind == "exp2" else g


def plain(base, k, ranked_ids, grades, truth, gain_kind="exp2", ap_denominator="total"):
    """One metric on one final list (grades: every database item's grade for this query)."""
    n = len(ranked_ids)
    k_e = n if k is None else min(k, n)
    top = ranked_ids[:k_e]
    rel = [grades[j] > 0 for j in top]
    R = sum(1 for g in grades if g > 0)
    if base == "NN-recall":
        return Fraction(len(set(top) & set(truth[:k])), k)
    if base == "P":
        return Fraction(sum(rel), k if k is not None else n)
    if base == "R":
        return Fraction(sum(rel), R) if R else Fraction(0)
    if base in ("DCG", "nDCG"):
        dcg = math.fsum(gain(grades[j], gain_kind) / math.log2(2 + i) for i, j in enumerate(top))
        if base == "DCG":
            return dcg
        depth = k if k is not None else n
        ideal = sorted(grades, reverse=True)[:depth]
        idcg = math.fsum(gain(g, gain_kind) / math.log2(2 + i) for i, g in enumerate(ideal))
        return dcg / idcg if idcg else 0.0
    if base == "AP":
        total, hits = Fraction(0), 0
        for i, r in enumerate(rel):
            if r:
                hits += 1
                total += Fraction(hits, i + 1)
        den = R if ap_denominator == "total" else min(k_e, R)
        return total / den if den else Fraction(0)
    if base == "RR":
        for i, r in enumerate(rel):
            if r:
                return Fraction(1, i + 1)
        return Fraction(0)
    if base == "Success":
        return Fraction(int(any(rel)))
    raise ValueError(base)


def query_values(base, k, distances, scores, grades, truth, candidates, stable=False, **options):
    """The metric over every choice of the tied candidates of one query."""
    return [plain(base, k, ranked(ids, scores), grades, truth, **options)
            for ids in choices(distances, candidates, stable)]


def truth_ids(scores, k):
    return sorted(range(len(scores)), key=lambda j: (-scores[j], j))[:k]


def summary(values):
    """(mean, min, max, std) of a list of Fractions or floats, exact where the values are."""
    n = len(values)
    mean = sum(values, Fraction(0)) / n if all(isinstance(v, Fraction) for v in values) else math.fsum(values) / n
    var = sum((v - mean) ** 2 for v in values) / n
    return mean, min(values), max(values), math.sqrt(var)
