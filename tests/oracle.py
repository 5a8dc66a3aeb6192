"""Brute-force reference for fasttie: the definition, not a formula.

For one query, the database is ranked by Hamming distance; items at equal distance form a
*tie*, and ties come in ascending distance.  The tie-aware ("average") value of a metric is
the exact mean of the plain, fixed-order metric over every ordering that permutes items inside
each tie.  This module enumerates those orderings (no closed form of docs/ties.md is used anywhere)
and averages the plain metric in exact rational arithmetic.

Enumeration
-----------
Only the grades of the ranked list matter to every metric here, so instead of the
prod(n_c!) labelled permutations we enumerate the *distinct* permutations of each tie's grade
multiset and take their Cartesian product over ties.  Every distinct arrangement of a tie comes
from the same number (the product of the factorials of the grade multiplicities) of labelled
permutations, so both averages are equal; ``orderings(..., labelled=True)`` enumerates the
labelled permutations with ``itertools.permutations`` and ``tests/across/test_oracle_self.py`` checks
the two agree exactly.

Fixed-order modes
-----------------
``"optimistic"``: grades descending inside each tie; ``"pessimistic"``: grades ascending;
``"stable"``: database index ascending inside each tie, i.e. ``np.argsort(d, kind="stable")``.
Each gives one ordering.

Exactness
---------
Everything except the log discount of DCG/nDCG is an exact ``fractions.Fraction``.  DCG keeps
the gains exact: for every rank i the gains found there are summed over all orderings (integers),
and only at the end are the exact mean gains multiplied by the float discounts 1/log2(1+i) and
summed with ``math.fsum``.  This is the average of the per-ordering DCG with the two finite sums
swapped (an identity, not a tie formula); ``oracle_query_literal`` averages the float DCG of every
ordering directly and the self-tests check both agree.

Two implementations of the definitions are kept on purpose:

* ``plain_metric`` — the readable definition on one ranked list, returning a Fraction (float for
  DCG/nDCG); ``oracle_query_literal`` averages it over ``orderings``.  Slow, obviously right.
* ``oracle_query`` / ``oracle_evaluate`` — the same definitions restructured for speed: per ordering
  every value is an integer numerator over an integer denominator (AP and WAP numerators are scaled
  by L = lcm(1..N)); numerators are summed per denominator, so the averaging loop uses only int
  arithmetic.  Results are identical Fractions (checked in the self-tests).

Metric definitions (fixed order, ranks 1..N, rel_i = grade_i > 0, hits@i / CG@i = number of relevant
items / sum of grades among ranks <= i, R = relevant items in the whole list, k_e = min(k, N)):

* P@k = hits@k_e / k;  R@k = hits@k_e / R;  F1@k = 2 hits@k_e / (k + R);  ACG@k = CG@k_e / k
  (P, F1 and ACG divide by the k asked, even when k > N).
* AP@k = (sum_{i<=k_e} rel_i hits@i / i) / den, WAP@k = (sum_{i<=k_e} rel_i CG@i / i) / den with
  den = hits@k_e ("retrieved", value 0 when it is 0), R ("total"), min(k_e, R) ("min").
  AP = AP@N, WAP = WAP@N.
* DCG@k = sum_{i<=k_e} gain(grade_i) / log2(1+i), gain "exp2" = 2**g - 1, "linear" = g; DCG = DCG@N.
  nDCG@k = DCG@k / IDCG@k, IDCG@k = DCG@k of the grades sorted descending.
* RR@k = 1 / rank of the first relevant item if that rank <= k_e, else 0; RR = RR@N.
* Rprec = hits@R / R.
* P(radius=r) = #(relevant with d <= r) / #(items with d <= r), 0 when nothing is within r;
  R(radius=r) = #(relevant with d <= r) / R.

Empty queries (R == 0) follow ``empty``: "zero" -> 0, "skip" -> NaN (excluded from means),
"one" -> 1 for the metrics undefined at R = 0 (AP, AP@k, WAP, WAP@k, nDCG, nDCG@k, R@k, RR, RR@k,
Rprec, R(radius=r)) and the natural value 0 for the others, "error" -> ValueError.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = [
    "TIE_MODES",
    "AP_DENOMINATORS",
    "GAINS",
    "EMPTY_POLICIES",
    "MetricSpec",
    "parse_metric",
    "canonical_name",
    "expand_metrics",
    "hamming_distances",
    "grades_from_labels",
    "grades_from_csr",
    "tie_groups",
    "distinct_permutations",
    "orderings",
    "count_orderings",
    "plain_metric",
    "oracle_query",
    "oracle_query_exact",
    "oracle_query_literal",
    "oracle_evaluate",
]

TIE_MODES = ("average", "optimistic", "pessimistic", "stable")
AP_DENOMINATORS = ("retrieved", "total", "min")
GAINS = ("exp2", "linear")
EMPTY_POLICIES = ("zero", "skip", "one", "error")

# metric kinds that need a cutoff / accept one / take a radius
_KINDS = {
    "AP": "optional_k",
    "WAP": "optional_k",
    "nDCG": "optional_k",
    "DCG": "optional_k",
    "RR": "optional_k",
    "Success": "optional_k",
    "P": "k",
    "R": "k",
    "F1": "k",
    "ACG": "k",
    "Rprec": "none",
    "NumRet": "optional_k",
    "NumRelRet": "optional_k",
    "NumRel": "none",
    "NumQ": "none",
    "SetAP": "none",
    "GMAP": "optional_k",  # per query the AP that the geometric mean aggregates
    "Bpref": "none",  # every item judged (Hamming ranking)
    "GMBpref": "none",
    "P(radius)": "radius",
    "R(radius)": "radius",
}
# undefined when R == 0 -> 1 under empty="one"
_UNDEFINED_WHEN_EMPTY = {"AP", "WAP", "GMAP", "nDCG", "R", "RR", "Rprec", "SetAP", "Bpref", "GMBpref", "R(radius)"}
_FLOAT_KINDS = {"DCG", "nDCG"}


# --------------------------------------------------------------------------------------------
# metric names
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricSpec:
    kind: str  # one of _KINDS
    k: int | None = None  # cutoff, None = whole list
    radius: int | None = None

    @property
    def name(self) -> str:
        return _spec_name(self.kind, self.k, self.radius)

    @property
    def undefined_when_empty(self) -> bool:
        return self.kind in _UNDEFINED_WHEN_EMPTY


_NAME_CACHE: dict = {}


def _spec_name(kind, k, radius) -> str:
    key = (kind, k, radius)
    hit = _NAME_CACHE.get(key)
    if hit is None:
        if radius is not None:
            hit = f"{kind[0]}(radius={radius})"
        elif k is None:
            hit = kind
        else:
            hit = f"{kind}@{k}"
        _NAME_CACHE[key] = hit
    return hit


_ALIASES = {
    "map": "AP",
    "ap": "AP",
    "ndcg": "nDCG",
    "dcg": "DCG",
    "precision": "P",
    "p": "P",
    "recall": "R",
    "r": "R",
    "f1": "F1",
    "rr": "RR",
    "mrr": "RR",
    "rprec": "Rprec",
    "success": "Success",
    "numret": "NumRet",
    "numrelret": "NumRelRet",
    "numrel": "NumRel",
    "numq": "NumQ",
    "setap": "SetAP",
    "gmap": "GMAP",
    "bpref": "Bpref",
    "gmbpref": "GMBpref",
    "acg": "ACG",
    "wap": "WAP",
    "mwap": "WAP",
}


def parse_metric(name: str) -> MetricSpec:
    """Parse one metric name (canonical or alias, no list form) into a MetricSpec."""
    s = name.strip()
    m = re.fullmatch(r"([PR])\(radius=(\d+)\)", s)
    if m:
        return MetricSpec(kind=f"{m.group(1)}(radius)", radius=int(m.group(2)))
    if "@" in s:
        base, cut = s.split("@", 1)
        k = None if cut.upper() == "ALL" else int(cut)
        if k is not None and k < 1:
            raise ValueError(f"cutoff must be >= 1: {name!r}")
    else:
        base, k = s, None
    kind = _ALIASES.get(base.lower(), base)
    if kind not in _KINDS or "radius" in kind:
        raise ValueError(f"unknown metric {name!r}")
    need = _KINDS[kind]
    if need == "k" and k is None:
        raise ValueError(f"{kind} needs a cutoff: {name!r}")
    if need == "none" and k is not None:
        raise ValueError(f"{kind} takes no cutoff: {name!r}")
    return MetricSpec(kind=kind, k=k)


def canonical_name(name: str) -> str:
    return parse_metric(name).name


def expand_metrics(metrics) -> list[MetricSpec]:
    """Expand the list form ``P@[1,10]`` and parse every name (order kept, duplicates dropped)."""
    if isinstance(metrics, (str, MetricSpec)):
        metrics = [metrics]
    return list(_expand_cached(tuple(metrics)))


_EXPAND_CACHE: dict = {}


def _expand_cached(metrics: tuple) -> tuple:
    hit = _EXPAND_CACHE.get(metrics)
    if hit is not None:
        return hit
    out: dict[MetricSpec, None] = {}
    for name in metrics:
        if isinstance(name, MetricSpec):
            out.setdefault(name)
            continue
        m = re.fullmatch(r"\s*([^@]+)@\[([^\]]*)\]\s*", name)
        names = [f"{m.group(1)}@{c.strip()}" for c in m.group(2).split(",")] if m else [name]
        for n in names:
            out.setdefault(parse_metric(n))
    hit = tuple(out)
    _EXPAND_CACHE[metrics] = hit
    return hit


# --------------------------------------------------------------------------------------------
# inputs: distances and grades, computed the dumb way
# --------------------------------------------------------------------------------------------
def _as_bits(codes) -> np.ndarray:
    a = np.asarray(codes)
    if a.ndim != 2:
        raise ValueError("codes must be 2-D")
    if a.dtype == bool:
        return a.astype(np.int8)
    vals = set(np.unique(a).tolist())
    if vals <= {-1, 1}:
        return (a > 0).astype(np.int8)
    if vals <= {0, 1}:
        return a.astype(np.int8)
    raise ValueError(f"codes must be ±1, 0/1 or bool, got values {sorted(vals)}")


def hamming_distances(queries, database) -> np.ndarray:
    """(n_queries, n_db) int64 Hamming distances, by counting differing bits one by one."""
    q = _as_bits(queries)
    x = _as_bits(database)
    if q.shape[1] != x.shape[1]:
        raise ValueError("bit counts differ")
    return (q[:, None, :] != x[None, :, :]).sum(axis=2).astype(np.int64)


def grades_from_labels(query_labels, db_labels) -> np.ndarray:
    """(n_queries, n_db) int64 grades: 1-D class ids -> same class; 2-D multi-hot -> shared labels."""
    ql = np.asarray(query_labels)
    dl = np.asarray(db_labels)
    if ql.ndim == 1:
        return (ql[:, None] == dl[None, :]).astype(np.int64)
    return (ql.astype(np.int64)[:, None, :] * dl.astype(np.int64)[None, :, :]).sum(axis=2)


def grades_from_csr(indptr, indices, grades, n_db) -> np.ndarray:
    """Dense (n_queries, n_db) int64 grades from CSR arrays (grades None -> 1)."""
    indptr = np.asarray(indptr)
    out = np.zeros((len(indptr) - 1, n_db), dtype=np.int64)
    for qi in range(len(indptr) - 1):
        for p in range(indptr[qi], indptr[qi + 1]):
            out[qi, indices[p]] += 1 if grades is None else int(grades[p])
    return out


# --------------------------------------------------------------------------------------------
# orderings
# --------------------------------------------------------------------------------------------
def tie_groups(distances) -> list[list[int]]:
    """Database indices grouped by equal distance, ties by ascending distance, index order inside."""
    d = [int(v) for v in distances]
    groups: dict[int, list[int]] = {}
    for idx, v in enumerate(d):
        groups.setdefault(v, []).append(idx)
    return [groups[v] for v in sorted(groups)]


def distinct_permutations(items) -> list[tuple]:
    """All distinct permutations of a multiset, each once (lexicographic, by recursion on counts)."""
    counts: dict = {}
    for v in items:
        counts[v] = counts.get(v, 0) + 1
    keys = sorted(counts)
    n = len(items)
    out: list[tuple] = []
    cur: list = []

    def rec():
        if len(cur) == n:
            out.append(tuple(cur))
            return
        for key in keys:
            if counts[key]:
                counts[key] -= 1
                cur.append(key)
                rec()
                cur.pop()
                counts[key] += 1

    rec()
    return out


def _multinomial(items) -> int:
    counts: dict = {}
    for v in items:
        counts[v] = counts.get(v, 0) + 1
    res = math.factorial(len(items))
    for c in counts.values():
        res //= math.factorial(c)
    return res


def count_orderings(distances, grades, ties="average", labelled=False) -> int:
    """How many orderings ``orderings`` would yield."""
    if ties != "average":
        return 1
    g = [int(v) for v in grades]
    total = 1
    for grp in tie_groups(distances):
        total *= math.factorial(len(grp)) if labelled else _multinomial([g[i] for i in grp])
    return total


def orderings(distances, grades, ties="average", labelled=False):
    """Yield ranked grade sequences (tuples of ints), each to be weighted equally.

    ``ties="average"`` yields every ordering consistent with the ties: distinct multiset
    permutations of each tie's grades (``labelled=False``) or every labelled permutation of each
    tie's items (``labelled=True``, ``itertools.permutations``).  Fixed modes yield one ordering.
    """
    g = [int(v) for v in grades]
    if len(g) != len(distances):
        raise ValueError("distances and grades differ in length")
    groups = tie_groups(distances)
    if ties == "stable":
        order = np.argsort(np.asarray(distances, dtype=np.int64), kind="stable")
        yield tuple(g[i] for i in order)
        return
    if ties == "optimistic":
        yield tuple(v for grp in groups for v in sorted((g[i] for i in grp), reverse=True))
        return
    if ties == "pessimistic":
        yield tuple(v for grp in groups for v in sorted(g[i] for i in grp))
        return
    if ties != "average":
        raise ValueError(f"unknown ties mode {ties!r}")
    if labelled:
        per_tie = [[tuple(g[i] for i in perm) for perm in itertools.permutations(grp)] for grp in groups]
    else:
        per_tie = [distinct_permutations([g[i] for i in grp]) for grp in groups]
    for combo in itertools.product(*per_tie):
        yield tuple(v for part in combo for v in part)


# --------------------------------------------------------------------------------------------
# the plain metric on one ranked list (readable definition)
# --------------------------------------------------------------------------------------------
def _gain(g: int, gain: str) -> int:
    if gain == "exp2":
        return 2 ** int(g) - 1  # python int: exact for any grade
    if gain == "linear":
        return int(g)
    raise ValueError(f"unknown gain {gain!r}")


def _discount(rank: int) -> float:
    """1 / log2(1 + rank), rank 1-based."""
    return 1.0 / math.log2(1 + rank)


def _dcg(ranked_grades, k_e: int, gain: str) -> float:
    return math.fsum(_gain(g, gain) * _discount(i) for i, g in enumerate(ranked_grades[:k_e], start=1))


def plain_metric(ranked_grades, spec, *, ap_denominator="retrieved", gain="exp2", distances_ranked=None):
    """The fixed-order metric of one ranked list; R = relevant items in the list.

    Returns a Fraction (float for DCG / nDCG).  Empty lists (R == 0) are NOT handled here:
    metrics with R in a denominator raise ZeroDivisionError; the caller applies the policy.
    Radius metrics need ``distances_ranked`` (distances in the same order).
    """
    if isinstance(spec, str):
        spec = parse_metric(spec)
    g = [int(v) for v in ranked_grades]
    N = len(g)
    rel = [1 if v > 0 else 0 for v in g]
    R = sum(rel)

    def hits(i):  # relevant among ranks 1..i
        return sum(rel[:i])

    def cg(i):
        return sum(g[:i])

    kind = spec.kind
    if kind in ("P(radius)", "R(radius)"):
        inside = [j for j in range(N) if distances_ranked[j] <= spec.radius]
        found = sum(rel[j] for j in inside)
        if kind == "P(radius)":
            return Fraction(found, len(inside)) if inside else Fraction(0)
        return Fraction(found, R)
    if kind == "Rprec":
        return Fraction(hits(R), R)
    k = N if spec.k is None else spec.k
    k_e = min(k, N)
    if kind == "P":
        return Fraction(hits(k_e), k)
    if kind == "R":
        return Fraction(hits(k_e), R)
    if kind == "F1":
        return Fraction(2 * hits(k_e), k + R)
    if kind == "ACG":
        return Fraction(cg(k_e), k)
    if kind == "Success":
        return Fraction(1 if hits(k_e) > 0 else 0)
    if kind == "NumRet":
        return Fraction(k_e)
    if kind == "NumRelRet":
        return Fraction(hits(k_e))
    if kind == "NumRel":
        return Fraction(R)
    if kind == "NumQ":
        return Fraction(1)
    if kind == "SetAP":
        return Fraction(hits(N) ** 2, N * R)
    if kind == "GMAP":
        kind = "AP"
    if kind in ("Bpref", "GMBpref"):
        # trec_eval's bpref with every item judged: each relevant item at rank i scores
        # 1 - min(non-relevant above it, R) / min(N - R, R)
        total = Fraction(0)
        for i in range(1, N + 1):
            if rel[i - 1]:
                above = i - 1 - hits(i - 1)
                total += 1 - Fraction(min(above, R), min(N - R, R)) if above else 1
        return total / R
    if kind == "RR":
        for i in range(1, k_e + 1):
            if rel[i - 1]:
                return Fraction(1, i)
        return Fraction(0)
    if kind in ("AP", "WAP"):
        cum = hits if kind == "AP" else cg
        num = sum((Fraction(cum(i), i) for i in range(1, k_e + 1) if rel[i - 1]), Fraction(0))
        if ap_denominator == "retrieved":
            den = hits(k_e)
            return num / den if den else Fraction(0)
        if ap_denominator == "total":
            return num / R
        if ap_denominator == "min":
            return num / min(k_e, R)
        raise ValueError(f"unknown ap_denominator {ap_denominator!r}")
    if kind == "DCG":
        return _dcg(g, k_e, gain)
    if kind == "nDCG":
        return _dcg(g, k_e, gain) / _dcg(sorted(g, reverse=True), k_e, gain)
    raise ValueError(f"unknown metric kind {kind!r}")


def _empty_value(spec: MetricSpec, empty: str):
    if empty == "zero":
        return 0.0
    if empty == "skip":
        return math.nan
    if empty == "one":
        return 1.0 if spec.undefined_when_empty else 0.0
    if empty == "error":
        raise ValueError("query without relevant items and empty='error'")
    raise ValueError(f"unknown empty policy {empty!r}")


def _check_options(ties, ap_denominator, gain, empty):
    if ties not in TIE_MODES:
        raise ValueError(f"unknown ties {ties!r}")
    if ap_denominator not in AP_DENOMINATORS:
        raise ValueError(f"unknown ap_denominator {ap_denominator!r}")
    if gain not in GAINS:
        raise ValueError(f"unknown gain {gain!r}")
    if empty not in EMPTY_POLICIES:
        raise ValueError(f"unknown empty {empty!r}")


def oracle_query_literal(distances, grades, metric, *, ties="average", ap_denominator="retrieved",
                         gain="exp2", empty="zero", labelled=False):
    """Mean of ``plain_metric`` over ``orderings``: Fraction (or float for DCG/nDCG).

    Slow and literal: for the self-tests.  The empty policy is applied as in ``oracle_query``.
    """
    _check_options(ties, ap_denominator, gain, empty)
    spec = parse_metric(metric) if isinstance(metric, str) else metric
    g = [int(v) for v in grades]
    if not any(v > 0 for v in g):
        return _empty_value(spec, empty)
    if spec.kind in ("P(radius)", "R(radius)"):
        # order cannot matter; still evaluate on every ordering of (distance, grade) pairs
        groups = tie_groups(distances)
        d_ranked = [int(distances[i]) for grp in groups for i in grp]
        vals = [plain_metric(o, spec, distances_ranked=d_ranked)
                for o in orderings(distances, g, ties, labelled)]
    else:
        vals = [plain_metric(o, spec, ap_denominator=ap_denominator, gain=gain)
                for o in orderings(distances, g, ties, labelled)]
    if spec.kind in _FLOAT_KINDS:
        return math.fsum(vals) / len(vals)
    return sum(vals, Fraction(0)) / len(vals)


# --------------------------------------------------------------------------------------------
# fast exact path: same definitions, int numerators summed per denominator
# --------------------------------------------------------------------------------------------
class _Acc:
    """Sum of rationals num/den kept as {den: sum of nums}: int-only accumulation."""

    __slots__ = ("by_den",)

    def __init__(self):
        self.by_den: dict[int, int] = {}

    def add(self, num: int, den: int):
        if num:
            self.by_den[den] = self.by_den.get(den, 0) + num

    def total(self) -> Fraction:
        return sum((Fraction(n, d) for d, n in self.by_den.items()), Fraction(0))


def _lcm_upto(n: int) -> int:
    out = 1
    for i in range(2, n + 1):
        out = out * i // math.gcd(out, i)
    return out


def oracle_query_exact(distances, grades, metrics, *, ties="average", labelled=False):
    """Exact tie-aware values of a non-empty query for every ap_denominator and gain.

    Returns ``{(canonical name, ap_denominator, gain): value}`` where value is a Fraction, or a
    float for DCG/nDCG (exact mean gains times float discounts, fsum).  Keys whose value does
    not depend on ap_denominator / gain repeat the same value.  Raises ValueError if R == 0.
    """
    specs = expand_metrics(metrics)
    d = [int(v) for v in distances]
    g = [int(v) for v in grades]
    N = len(g)
    R = sum(1 for v in g if v > 0)
    if R == 0:
        raise ValueError("empty query: apply the empty policy instead")
    L = _lcm_upto(max(N, 1))
    inv_L = [0] + [L // i for i in range(1, N + 1)]  # inv_L[i] = L / i (exact int)

    cut_set = sorted({min(N, s.k if s.k is not None else N) for s in specs} | {N, min(R, N)})
    # accumulators per ordering-dependent quantity
    acc_hits = {k: _Acc() for k in cut_set}  # sum of hits@k
    acc_cg = {k: _Acc() for k in cut_set}  # sum of CG@k
    acc_rr = {k: _Acc() for k in cut_set}  # sum of RR@k
    acc_ap = {(k, den): _Acc() for k in cut_set for den in AP_DENOMINATORS}
    acc_wap = {(k, den): _Acc() for k in cut_set for den in AP_DENOMINATORS}
    pos_gain = {gn: [0] * N for gn in GAINS}  # sum over orderings of gain at each rank
    n_orderings = 0

    gains_table = {gn: {v: _gain(v, gn) for v in set(g)} for gn in GAINS}
    cut_flags = [False] * (N + 1)
    for k in cut_set:
        cut_flags[k] = True

    for o in orderings(d, g, ties, labelled):
        n_orderings += 1
        hits = 0
        cg = 0
        s_ap = 0  # L * sum rel_i hits@i / i
        s_wap = 0  # L * sum rel_i CG@i / i
        first = 0
        for i in range(1, N + 1):
            v = o[i - 1]
            cg += v
            if v > 0:
                hits += 1
                s_ap += hits * inv_L[i]
                s_wap += cg * inv_L[i]
                if not first:
                    first = i
            if cut_flags[i]:
                acc_hits[i].add(hits, 1)
                acc_cg[i].add(cg, 1)
                if first:
                    acc_rr[i].add(1, first)
                if hits:
                    acc_ap[(i, "retrieved")].add(s_ap, L * hits)
                    acc_wap[(i, "retrieved")].add(s_wap, L * hits)
                acc_ap[(i, "total")].add(s_ap, L * R)
                acc_wap[(i, "total")].add(s_wap, L * R)
                acc_ap[(i, "min")].add(s_ap, L * min(i, R))
                acc_wap[(i, "min")].add(s_wap, L * min(i, R))
        for gn in GAINS:
            tab = gains_table[gn]
            pg = pos_gain[gn]
            for i, v in enumerate(o):
                pg[i] += tab[v]

    def mean(acc: _Acc) -> Fraction:
        return acc.total() / n_orderings

    ideal = sorted(g, reverse=True)
    out = {}
    for s in specs:
        k = N if s.k is None else s.k
        k_e = min(k, N)
        for den in AP_DENOMINATORS:
            for gn in GAINS:
                if s.kind == "P":
                    val = mean(acc_hits[k_e]) / k
                elif s.kind == "R":
                    val = mean(acc_hits[k_e]) / R
                elif s.kind == "F1":
                    val = 2 * mean(acc_hits[k_e]) / (k + R)
                elif s.kind == "ACG":
                    val = mean(acc_cg[k_e]) / k
                elif s.kind == "RR":
                    val = mean(acc_rr[k_e])
                elif s.kind == "Rprec":
                    val = mean(acc_hits[min(R, N)]) / R
                elif s.kind == "AP":
                    val = mean(acc_ap[(k_e, den)])
                elif s.kind == "WAP":
                    val = mean(acc_wap[(k_e, den)])
                elif s.kind in ("DCG", "nDCG"):
                    pg = pos_gain[gn]
                    dcg = math.fsum(float(Fraction(pg[i], n_orderings)) * _discount(i + 1) for i in range(k_e))
                    if s.kind == "DCG":
                        val = dcg
                    else:
                        val = dcg / _dcg(ideal, k_e, gn)
                elif s.kind in ("P(radius)", "R(radius)"):
                    inside = [j for j in range(N) if d[j] <= s.radius]
                    found = sum(1 for j in inside if g[j] > 0)
                    if s.kind == "P(radius)":
                        val = Fraction(found, len(inside)) if inside else Fraction(0)
                    else:
                        val = Fraction(found, R)
                else:  # pragma: no cover
                    raise ValueError(s.kind)
                out[(s.name, den, gn)] = val
    return out


_CACHE: dict = {}
_CACHE_MAX = 20000


def _cached_exact(distances, grades, specs, ties):
    key = (tuple(int(v) for v in distances), tuple(int(v) for v in grades), tuple(specs), ties)
    hit = _CACHE.get(key)
    if hit is None:
        if len(_CACHE) > _CACHE_MAX:
            _CACHE.clear()
        hit = oracle_query_exact(distances, grades, list(specs), ties=ties)
        _CACHE[key] = hit
    return hit


def oracle_query(distances, grades, metrics, *, ties="average", ap_denominator="retrieved",
                 gain="exp2", empty="zero", exact=False):
    """Tie-aware (or fixed-order) values of one query.

    ``metrics``: one name or a list of names (list form ``P@[1,2]`` allowed).  Returns
    ``{canonical name: value}`` with floats (``exact=True``: Fractions where exact, DCG/nDCG float).
    Empty queries (no grade > 0) follow ``empty``.
    """
    _check_options(ties, ap_denominator, gain, empty)
    specs = tuple(expand_metrics(metrics))
    if not any(int(v) > 0 for v in grades):
        return {s.name: _empty_value(s, empty) for s in specs}
    table = _cached_exact(distances, grades, specs, ties)
    out = {}
    for s in specs:
        v = table[(s.name, ap_denominator, gain)]
        out[s.name] = v if exact else float(v)
    return out



def oracle_evaluate(distances, grades, metrics, *, ties="average", ap_denominator="retrieved",
                    gain="exp2", empty="zero"):
    """Oracle counterpart of ``fasttie.evaluate`` on precomputed distances and grades.

    ``distances``, ``grades``: (n_queries, n_db) arrays or lists of per-query sequences.
    Returns ``(mean, per_query, n_empty)``: dicts canonical name -> float / float64 array, and the
    number of queries without relevant items.  With ``empty="skip"`` means are over non-empty
    queries (NaN if none); ``empty="error"`` raises ValueError if any query is empty.
    """
    _check_options(ties, ap_denominator, gain, empty)
    specs = expand_metrics(metrics)
    n_q = len(distances)
    if len(grades) != n_q:
        raise ValueError("distances and grades differ in number of queries")
    empties = [not any(int(v) > 0 for v in grades[qi]) for qi in range(n_q)]
    n_empty = sum(empties)
    if empty == "error" and n_empty:
        raise ValueError(f"{n_empty} queries without relevant items and empty='error'")
    per_query = {s.name: np.empty(n_q, dtype=np.float64) for s in specs}
    for qi in range(n_q):
        vals = oracle_query(distances[qi], grades[qi], specs, ties=ties,
                            ap_denominator=ap_denominator, gain=gain, empty=empty)
        for name, v in vals.items():
            per_query[name][qi] = v
    mean = {}
    for name, arr in per_query.items():
        kept = arr[~np.isnan(arr)] if empty == "skip" else arr
        mean[name] = math.fsum(kept.tolist()) / len(kept) if len(kept) else math.nan
    return mean, per_query, n_empty
