"""Random small cases and comparison helpers shared by the fasttie-vs-oracle tests.

A case is built from a numpy seed: few bits and a small database so that Hamming ties are
frequent, then codes in one of the accepted encodings and relevance in one of the accepted
forms.  The dense distance and grade matrices the oracle needs are computed independently
(``oracle.hamming_distances`` / ``oracle.grades_from_*``), never taken from fasttie.
:func:`every_tie_order` enumerates the orders inside ties of a ranked list and scores each as a
fixed order (``ties="stable"`` on distinct scores), the reference for the tie-order bounds and
extremes.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import math
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import fasttie as ft
from fasttie.metrics import parse_metrics

from oracle import (
    count_orderings, grades_from_csr, grades_from_labels, hamming_distances, oracle_evaluate, parse_metric, plain_metric,
)

CODE_FORMATS = ("pm1_int8", "pm1_int64", "pm1_float32", "01_uint8", "01_int32", "bool")
RELEVANCE_KINDS = ("class", "multihot", "csr_binary", "csr_graded", "scipy")


def encode_codes(bits: np.ndarray, fmt: str) -> np.ndarray:
    """0/1 bit matrix -> codes in the given encoding."""
    bits = np.asarray(bits, dtype=np.int64)
    if fmt == "pm1_int8":
        return (bits * 2 - 1).astype(np.int8)
    if fmt == "pm1_int64":
        return bits * 2 - 1
    if fmt == "pm1_float32":
        return (bits * 2 - 1).astype(np.float32)
    if fmt == "01_uint8":
        return bits.astype(np.uint8)
    if fmt == "01_int32":
        return bits.astype(np.int32)
    if fmt == "bool":
        return bits.astype(bool)
    raise ValueError(fmt)


@dataclass
class Case:
    queries: np.ndarray
    database: np.ndarray
    kwargs: dict  # labels or relevance keyword arguments for ft.evaluate
    distances: np.ndarray  # (n_q, n_db), oracle's own
    grades: np.ndarray  # (n_q, n_db), oracle's own
    metrics: list = field(default_factory=list)
    desc: str = ""

    @property
    def n_queries(self):
        return self.distances.shape[0]

    @property
    def n_db(self):
        return self.distances.shape[1]


def relevance_from_dense(grades: np.ndarray, kind: str):
    """Encode a dense grade matrix as ft.evaluate relevance= (CSR tuple / scipy)."""
    n_q, n_db = grades.shape
    indptr = [0]
    indices, data = [], []
    for qi in range(n_q):
        nz = np.flatnonzero(grades[qi])
        indices.extend(nz.tolist())
        data.extend(grades[qi, nz].tolist())
        indptr.append(len(indices))
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    data = np.asarray(data, dtype=np.int64)
    if kind == "csr_binary":
        assert data.size == 0 or data.max() <= 1
        return (indptr, indices)
    if kind == "csr_graded":
        return (indptr, indices, data)
    if kind == "scipy":
        return sp.csr_matrix((data, indices, indptr), shape=(n_q, n_db))
    raise ValueError(kind)


def make_relevance(rng, n_q, n_db, kind, p_empty=0.2, max_grade=4):
    """(kwargs for ft.evaluate, dense int64 grades) of the given kind."""
    if kind == "class":
        n_cls = int(rng.integers(1, 4))
        db_labels = rng.integers(0, n_cls, n_db)
        q_labels = rng.integers(0, n_cls + 1, n_q)  # class n_cls never occurs in the db: empty
        kw = dict(query_labels=q_labels.astype(rng.choice([np.int64, np.int32, np.uint8])), db_labels=db_labels)
        return kw, grades_from_labels(q_labels, db_labels)
    if kind == "multihot":
        n_lab = int(rng.integers(1, max_grade + 1))
        p = rng.uniform(0.2, 0.7)
        db_labels = (rng.random((n_db, n_lab)) < p).astype(np.uint8)
        q_labels = (rng.random((n_q, n_lab)) < p).astype(np.uint8)
        q_labels[rng.random(n_q) < p_empty] = 0
        if n_lab == 1:  # one column is rejected as a likely column of class ids: add an unused label
            db_labels = np.hstack([db_labels, np.zeros((n_db, 1), np.uint8)])
            q_labels = np.hstack([q_labels, np.zeros((n_q, 1), np.uint8)])
        kw = dict(query_labels=q_labels, db_labels=db_labels)
        return kw, grades_from_labels(q_labels, db_labels)
    p = rng.uniform(0.15, 0.7)
    grades = (rng.random((n_q, n_db)) < p).astype(np.int64)
    if kind != "csr_binary":
        grades *= rng.integers(1, max_grade + 1, (n_q, n_db))
    grades[rng.random(n_q) < p_empty] = 0
    rel = relevance_from_dense(grades, kind)
    # the oracle reads the CSR arrays itself
    if kind == "scipy":
        dense = grades_from_csr(rel.indptr, rel.indices, rel.data, n_db)
    else:
        dense = grades_from_csr(rel[0], rel[1], rel[2] if len(rel) == 3 else None, n_db)
    assert np.array_equal(dense, grades)
    return dict(relevance=rel), dense


def metric_list(rng, n_db, n_bits, n_cut=3):
    ks = {1, n_db, n_db + int(rng.integers(1, 4))}
    for _ in range(n_cut):  # cutoffs anywhere, often inside ties
        ks.add(int(rng.integers(1, n_db + 3)))
    ks = sorted(ks)
    radii = sorted({int(rng.integers(0, n_bits + 1)), int(rng.integers(0, n_bits + 2))})
    names = ["AP", "WAP", "nDCG", "DCG", "RR", "Rprec"]
    for k in ks:
        names += [f"{m}@{k}" for m in ("AP", "WAP", "nDCG", "DCG", "P", "R", "F1", "RR", "ACG")]
    names += [f"P(radius={r})" for r in radii] + [f"R(radius={r})" for r in radii]
    return names


def make_case(seed, *, max_bits=8, max_db=10, max_queries=4, max_orderings=3000, kinds=RELEVANCE_KINDS,
              max_grade=4) -> Case:
    """A random small case from a numpy seed; resamples until every query enumerates cheaply."""
    rng = np.random.default_rng(seed)
    while True:
        n_bits = int(rng.choice(np.arange(1, max_bits + 1), p=_bits_weights(max_bits)))
        n_db = int(rng.integers(1, max_db + 1) if rng.random() < 0.3 else rng.integers(min(5, max_db), max_db + 1))
        n_q = int(rng.integers(1, max_queries + 1))
        q_bits = rng.integers(0, 2, (n_q, n_bits))
        x_bits = rng.integers(0, 2, (n_db, n_bits))
        if rng.random() < 0.3 and n_db > 1:  # duplicate database codes: bigger ties
            x_bits[rng.integers(0, n_db, n_db // 2)] = x_bits[0]
        fmt = str(rng.choice(CODE_FORMATS))
        kind = str(rng.choice(list(kinds)))
        kw, grades = make_relevance(rng, n_q, n_db, kind, max_grade=max_grade)
        queries, database = encode_codes(q_bits, fmt), encode_codes(x_bits, fmt)
        dist = hamming_distances(queries, database)
        if all(count_orderings(dist[i], grades[i]) <= max_orderings for i in range(n_q)):
            break
    desc = f"seed={seed} n_bits={n_bits} n_db={n_db} n_q={n_q} codes={fmt} relevance={kind}"
    return Case(queries, database, kw, dist, grades, metric_list(rng, n_db, n_bits), desc)


def _bits_weights(max_bits):
    w = np.array([1.0 / (b ** 0.5) for b in range(1, max_bits + 1)])
    w[:1] *= 0.5
    return w / w.sum()


def describe_query(case: Case, qi: int) -> str:
    return f"distances={case.distances[qi].tolist()} grades={case.grades[qi].tolist()}"


def compare_result(res, case: Case, names, *, ties, ap_denominator, gain, empty, rtol=1e-12, atol=1e-12):
    """Assert a fasttie Result equals the oracle; the message is a minimal repro."""
    mean, per, n_empty = oracle_evaluate(case.distances, case.grades, names, ties=ties,
                                         ap_denominator=ap_denominator, gain=gain, empty=empty)
    opts = f"ties={ties!r} ap_denominator={ap_denominator!r} gain={gain!r} empty={empty!r}"
    assert res.n_queries == case.n_queries, case.desc
    assert res.n_empty == n_empty, f"n_empty {res.n_empty} != {n_empty}; {case.desc}"
    # keys are the names as asked; each names one of the oracle's (canonical) metrics
    canonical = {parse_metrics([name])[0].name for name in res.per_query}
    assert canonical == set(per), f"keys {sorted(res.per_query)} ({sorted(canonical)}) != {sorted(per)}"
    assert {parse_metrics([name])[0].name for name in res.mean} == set(mean), f"keys {sorted(res.mean)} != {sorted(mean)}"
    problems = []
    for name, expected in per.items():
        got = np.asarray(res.per_query[name])
        assert got.shape == (case.n_queries,), (name, got.shape)
        assert got.dtype == np.float64, (name, got.dtype)
        for qi in range(case.n_queries):
            if not _close(got[qi], expected[qi], rtol, atol):
                problems.append(f"  {name} query {qi}: expected {expected[qi]!r} got {got[qi]!r}; "
                                f"{describe_query(case, qi)}")
        if not _close(res.mean[name], mean[name], rtol, atol):
            problems.append(f"  mean {name}: expected {mean[name]!r} got {res.mean[name]!r}")
    if problems:
        raise AssertionError(f"{case.desc} {opts}\n" + "\n".join(problems[:12])
                             + (f"\n  ... {len(problems) - 12} more" if len(problems) > 12 else ""))


def _close(got, expected, rtol, atol):
    got = float(got)
    expected = float(expected)
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    return abs(got - expected) <= atol + rtol * abs(expected)


def tie_orders(scores, ties):
    """Every order of the rows that the tie mode allows (rows by score descending): one for
    "stable" (input order inside ties), every permutation inside each tie otherwise."""
    groups = [[i for i in range(len(scores)) if scores[i] == s] for s in sorted(set(scores), reverse=True)]
    if ties == "stable":
        yield [i for g in groups for i in g]
        return
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [i for part in parts for i in part]


def random_judged_list(rng):
    """A small ranked list with ties and judgments: (grades, judged, pooled, scores, unretrieved),
    1-6 rows of grade 0-3 (0 where unjudged), scores 0-2, 0-2 unretrieved grades."""
    n = int(rng.integers(1, 7))
    grades = rng.integers(0, 4, n).astype(float)
    judged = rng.random(n) < 0.75
    grades[~judged] = 0.0  # an unjudged document has no grade
    pooled = judged | (rng.random(n) < 0.5)
    scores = rng.integers(0, 3, n).astype(float)  # few scores: ties
    unretrieved = rng.integers(0, 4, int(rng.integers(0, 3))).astype(float)
    return grades, judged, pooled, scores, unretrieved


def every_tie_order(grades, judged, pooled, scores, unretrieved, metrics, ap_denominator, empty="zero"):
    """Per metric, the values of every order inside ties of a :func:`random_judged_list`, each
    scored as a fixed order (one call, one query per order)."""
    orders = [list(o) for o in tie_orders(list(scores), "average")]
    n = len(grades)
    rows = np.concatenate(orders)
    fixed = np.tile(np.arange(n, 0, -1, dtype=float), len(orders))  # distinct scores in each order's sequence
    return ft.rank_evaluate(grades[rows], fixed, np.full(len(orders), n), metrics=metrics, ties="stable",
                            judged=judged[rows], pooled=pooled[rows], unretrieved=[unretrieved] * len(orders),
                            ap_denominator=ap_denominator, empty=empty).per_query


NDEVAL_DATA = Path(__file__).resolve().parents[2] / "shared" / "peers-data" / "ndeval"


def ndeval_inputs(folder, runs):
    """The TREC 2012 Web track diversity qrels and the runs of peers-data/ndeval, decompressed
    into ``folder`` (outside the repository): {"qrels" or run name: path}."""
    paths = {}
    for key, name in [("qrels", "qrels-2012-ndeval.txt.gz"), *[(r, f"{r}-cata-filtered.txt.gz") for r in runs]]:
        paths[key] = folder / name[:-3]
        paths[key].write_bytes(gzip.decompress((NDEVAL_DATA / name).read_bytes()))
    return paths


def ndeval_outputs(prefix):
    """{file name: list of CSV rows as dicts} of the files of peers-data/ndeval/outputs.tar.gz
    whose name starts with ``prefix`` ("ndeval", "gdeval")."""
    out = {}
    with tarfile.open(NDEVAL_DATA / "outputs.tar.gz") as archive:
        for member in archive.getmembers():
            name = Path(member.name).name
            if member.isfile() and name.startswith(prefix):
                out[name] = list(csv.DictReader(io.StringIO(archive.extractfile(member).read().decode())))
    return out


def diversity_objects(qrels, run):
    """fasttie Qrels and Run from diversity qrels lines (qid, subtopic, docno, rel) and run
    lines (qid, docno, score)."""
    from fasttie import trec

    q = trec.Qrels.from_arrays([r[0] for r in qrels], [r[2] for r in qrels], [r[3] for r in qrels],
                               [r[1] for r in qrels])
    r = trec.Run.from_arrays([x[0] for x in run], [x[1] for x in run], [x[2] for x in run])
    return q, r


def diversity_arrays(qrels, run, query_ids, n_subtopics=7):
    """The array front doors' inputs from diversity qrels lines (qid, subtopic, docno, rel) and
    run lines (qid, docno, score): per query of ``query_ids``, one row per judged or retrieved
    document (docno order; unretrieved ones score -inf). Returns (y_true bool (rows,
    n_subtopics), scores, sizes, doc_ids)."""
    rows, sizes = [], []
    for qid in query_ids:
        judged = {}
        for q, s, d, rel in qrels:
            if q == qid:
                judged.setdefault(d, set())
                if rel > 0:
                    judged[d].add(int(s))
        scores = {d: score for q, d, score in run if q == qid}
        docs = sorted(set(judged) | set(scores))
        sizes.append(len(docs))
        rows += [(d, judged.get(d, set()), scores.get(d, -np.inf)) for d in docs]
    y_true = np.zeros((len(rows), n_subtopics), dtype=bool)
    for i, (_, subtopics, _) in enumerate(rows):
        y_true[i, sorted(subtopics)] = True
    return y_true, [s for *_, s in rows], sizes, [d for d, *_ in rows]


def trec_ordered_run(run):
    """The run lines with distinct scores in trec order (score desc, docno desc): what ndeval
    -traditional ranks, in a form pyndeval (which breaks ties by docno ascending) cannot reorder."""
    ordered = sorted(sorted(run, key=lambda x: x[1], reverse=True), key=lambda x: (x[0], -x[2]))
    out, last, rank = [], None, 0
    for qid, doc, _ in ordered:
        rank = rank + 1 if qid == last else 0
        last = qid
        out.append((qid, doc, float(-rank)))
    return out


def random_codes(n_bits=64, n_q=7, n_db=300, seed=0, n_classes=3):
    """Random 0/1 codes and class labels: queries, database, query labels, database labels."""
    rng = np.random.default_rng(seed)
    return (
        rng.integers(0, 2, (n_q, n_bits)), rng.integers(0, 2, (n_db, n_bits)),
        rng.integers(0, n_classes, n_q), rng.integers(0, n_classes, n_db),
    )


def assert_stable_argsort_order(result, q, db, grades, names):
    """Each query's values of ``names`` in ``result`` (ties="stable") equal the metrics of its
    list sorted by np.argsort(distances, kind="stable"); queries without a relevant item are
    passed over (their value is the empty policy's)."""
    distances = (q[:, None, :] != db[None]).sum(axis=2)
    for i in range(len(q)):
        if grades[i].max() == 0:
            continue
        ranked = grades[i][np.argsort(distances[i], kind="stable")]
        for name in names:
            expected = float(plain_metric(list(ranked), parse_metric(name)))
            assert result.per_query[name][i] == pytest.approx(expected, rel=1e-12, abs=1e-12), (i, name)


class ExactKnn:
    """An exact k-NN for pytorch-metric-learning's ``AccuracyCalculator(knn_func=...)`` that keeps
    the whole distance matrix of its last call in ``distances``, so fasttie scores the very
    neighbours the calculator ranked."""

    def __init__(self, torch):
        self.torch, self.distances = torch, None

    def __call__(self, query, k, reference, ref_includes_query):
        self.distances = self.torch.cdist(query.double(), reference.double())
        values, indices = self.torch.topk(self.distances, k, dim=1, largest=False)
        return values, indices


# the start of a script for a fresh process: ``compiled`` lists, in order, the fasttie kernels that
# numba compiles in that process from then on (its numba:compile event fires only when a kernel is
# not in the cache: a kernel loaded from the cache, or compiled by another process, is not listed)
COMPILE_COUNTER = r"""
import json, sys
from numba.core import event

compiled = []


class Compiles(event.Listener):
    def on_start(self, ev):
        function = getattr(ev.data.get("dispatcher"), "py_func", None)
        if getattr(function, "__module__", "").startswith("fasttie."):
            compiled.append(function.__module__ + "." + function.__qualname__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Compiles())
"""
