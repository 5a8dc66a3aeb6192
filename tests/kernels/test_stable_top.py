"""ties="stable" when every metric looks at the top k ranks only (the bounded stable pass).

evaluate then counts, as for ties="average", and records only the relevant items at distances
that reach rank k (stable_top.near_scan), finished by the full pass's finish kernel. Its values must be bitwise those of the full pass in
index order (forced by adding a whole-list metric) and equal the metrics of the list sorted
with np.argsort(kind="stable").
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fasttie as ft
from fasttie._kernels import cpu, stable_top
from helpers import assert_stable_argsort_order
from oracle import grades_from_csr, grades_from_labels

TOP_METRICS = ["AP@1", "AP@9", "nDCG@5", "nDCG@40", "P@3", "P@40", "R@25", "RR@10", "WAP@30", "ACG@7", "Success@2",
               "ERR@20", "RBP@15", "F1@12"]
ORACLE_METRICS = ["AP@1", "AP@9", "nDCG@5", "nDCG@40", "P@3", "P@40", "R@25", "WAP@30", "ACG@7"]


def _inputs(kind, n_q, n_db, n_bits, rng):
    """Codes with many ties (few distinct distances near each query) and relevance of one kind."""
    q = rng.integers(0, 2, (n_q, n_bits))
    db = rng.integers(0, 2, (n_db, n_bits))
    db[: n_db // 2, : n_bits - 4] = q[0, : n_bits - 4]  # long runs of equal distances for query 0
    if kind == "class":
        ql, dl = rng.integers(0, 3, n_q), rng.integers(0, 3, n_db)
        return q, db, dict(query_labels=ql, db_labels=dl), grades_from_labels(ql, dl)
    if kind == "multihot":
        ql, dl = rng.integers(0, 2, (n_q, 4)), rng.integers(0, 2, (n_db, 4))
        return q, db, dict(query_labels=ql, db_labels=dl), grades_from_labels(ql, dl)
    counts = rng.integers(0, n_db // 4, n_q)
    indices = np.concatenate([np.sort(rng.choice(n_db, c, replace=False)) for c in counts])
    csr = (np.r_[0, np.cumsum(counts)], indices, rng.integers(1, 4, len(indices)))
    return q, db, dict(relevance=csr), grades_from_csr(*csr, n_db)


@pytest.mark.parametrize("n_bits", [12, 64, 128])
@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
def test_top_pass_is_bitwise_the_full_pass_and_the_argsort_order(kind, n_bits):
    rng = np.random.default_rng(n_bits + len(kind))
    q, db, relevance, grades = _inputs(kind, 7, 400, n_bits, rng)  # 7 queries: three pairs and one alone
    top = ft.evaluate(q, db, metrics=TOP_METRICS, ties="stable", empty="zero", **relevance)
    full = ft.evaluate(q, db, metrics=TOP_METRICS + ["AP"], ties="stable", empty="zero", **relevance)
    for name in TOP_METRICS:
        assert top.per_query[name].tobytes() == full.per_query[name].tobytes(), name
    assert_stable_argsort_order(top, q, db, grades, ORACLE_METRICS)


def test_the_top_pass_runs_only_without_whole_list_metrics(monkeypatch):
    """It replaces the full pass exactly when no metric needs the ranks past the largest cutoff."""
    calls = []
    import fasttie.hamming.engine as engine

    monkeypatch.setattr(engine, "near_scan",
                        lambda n_words: lambda *a: (calls.append(1), stable_top.near_scan(n_words)(*a))[1])
    q, db, relevance, _ = _inputs("class", 4, 200, 16, np.random.default_rng(0))
    for metrics, used in ((["P@10"], True), (["P@10", "AP"], False), (["nDCG@5", "Rprec"], False),
                          (["P@10", "P(radius=3)"], True), (["P(radius=3)"], True), (["P@500"], False),
                          (["IPrec@0.5"], False), (["ERR"], False), (["ERR@10"], True)):
        calls.clear()
        ft.evaluate(q, db, metrics=metrics, ties="stable", empty="zero", **relevance)
        assert bool(calls) == used, metrics


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.integers(2, 70), st.integers(20, 260),
       st.sampled_from(["class", "multihot", "listed"]))
def test_random_cutoffs_and_thread_counts(seed, n_q, n_bits, n_db, kind):
    rng = np.random.default_rng(seed)
    q, db, relevance, _ = _inputs(kind, n_q, n_db, n_bits, rng)
    cutoffs = sorted({int(k) for k in rng.integers(1, n_db, 3)})
    metrics = [f"{base}@{k}" for k in cutoffs for base in ("AP", "nDCG", "P", "RR", "ERR")]
    top = [ft.evaluate(q, db, metrics=metrics, ties="stable", empty="zero", n_threads=t, **relevance)
           for t in (1, 2, 3)]
    full = ft.evaluate(q, db, metrics=metrics + ["AP"], ties="stable", empty="zero", **relevance)
    for name in metrics:
        for result in top:
            assert result.per_query[name].tobytes() == full.per_query[name].tobytes(), name


@pytest.mark.parametrize("budget", [1, 5, 40, 1 << 20])
@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
@pytest.mark.parametrize("n_bits", [32, 128])  # one word (queries in pairs) and two (one at a time)
def test_batches_of_near_scans_are_bitwise_one_batch(monkeypatch, kind, n_bits, budget):
    """The near scans in batches of whole pairs of at most _BATCH_RECORDS records (one pair at least,
    the last batch perhaps one query): every split gives the values of one batch and the argsort order."""
    import fasttie.hamming.engine as engine

    rng = np.random.default_rng(n_bits + budget + len(kind))
    q, db, relevance, grades = _inputs(kind, 11, 300, n_bits, rng)  # 11 queries: five pairs and one alone
    monkeypatch.setattr(engine, "swept_share", lambda spec: 0.0)  # class labels too: the near pass, not sweeps
    one = {t: ft.evaluate(q, db, metrics=TOP_METRICS, ties="stable", empty="zero", n_threads=t, **relevance)
           for t in (1, 3)}
    starts = []
    monkeypatch.setattr(engine, "near_scan", lambda n_words: lambda *a: starts.append((a[11], len(a[-2])))
                        or stable_top.near_scan(n_words)(*a))
    monkeypatch.setattr(engine, "_BATCH_RECORDS", budget)
    for t in (1, 3):
        starts.clear()
        split = ft.evaluate(q, db, metrics=TOP_METRICS, ties="stable", empty="zero", n_threads=t, **relevance)
        for name in TOP_METRICS:
            assert split.per_query[name].tobytes() == one[t].per_query[name].tobytes(), (name, t)
            assert split.per_query[name].tobytes() == one[1].per_query[name].tobytes(), (name, t)
        # every query scanned once (rows of a chunk of whole pairs: 10, then 1), batches of whole
        # pairs from each block's first query
        assert sum(n for _, n in starts) == 11
        assert all(start % 2 == 0 for start, _ in starts)
        if t == 1:
            assert (len(starts) > 2) == (budget < 1 << 20)
    assert_stable_argsort_order(split, q, db, grades, ORACLE_METRICS)


@pytest.mark.parametrize("n_bits", [20, 64, 128])
@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
def test_near_scan_over_tiles_blocks_and_a_tail(kind, n_bits):
    """Codes of one and two words go through the vector near scan: tiles of NEAR_TILE codes (here
    two and a part), queries in blocks of NEAR_QUERIES (19: two blocks and a part) and the codes
    after the last group (of eight one-word codes, four two-word ones) one by one (5 and 1 here);
    the listed ids' cursor carries across tiles."""
    rng = np.random.default_rng(n_bits * 3 + len(kind))
    n_db = 2 * stable_top.NEAR_TILE + 8 * 100 + 5
    q, db, relevance, grades = _inputs(kind, 19, n_db, n_bits, rng)
    tail = n_db % (8 // (n_bits // 65 + 1))
    tail_query, tail_item = next((i, j) for i in range(19) for j in range(n_db - tail, n_db) if grades[i][j] > 0)
    q[tail_query] = db[tail_item]  # a relevant item at distance 0 in the tail: rank 1
    metrics = ["AP@1", "AP@50", "nDCG@200", "P@7", "RR@30", "ERR@20"]
    top = ft.evaluate(q, db, metrics=metrics, ties="stable", empty="zero", **relevance)
    full = ft.evaluate(q, db, metrics=metrics + ["AP"], ties="stable", empty="zero", **relevance)
    for name in metrics:
        assert top.per_query[name].tobytes() == full.per_query[name].tobytes(), name
    assert_stable_argsort_order(top, q, db, grades, ["AP@1", "AP@50", "nDCG@200", "P@7"])


def test_class_queries_of_one_word_take_the_near_pass_while_the_cutoff_is_shallow():
    """Queries of one class share the full pass's sweeps; for codes of one or two words the vector
    near pass is faster while the deepest cutoff is at most 1/NEAR_SHARE of the database, and wider
    codes keep the sweeps (their near pass goes code by code)."""
    import fasttie.hamming.engine as engine

    n_db = 1000
    spec = engine.make_relevance(np.zeros(40, np.int64), np.arange(n_db) % 3, None, 40, n_db)
    assert engine.swept_share(spec) == 1.0
    shallow = n_db // engine.NEAR_SHARE
    for metrics, n_bits, full in ((["P@10"], 64, False), ([f"P@{shallow}"], 64, False),
                                  ([f"P@{shallow + 1}"], 64, True), (["P@10"], 128, False), (["P@10"], 129, True),
                                  (["AP"], 64, True)):
        assert engine.full_stable_pass(engine.hashing_metrics(metrics), spec, n_db, n_bits) == full, (metrics, n_bits)


@pytest.mark.skipif(not cpu.host_has_avx512(), reason="the near scan's vector instructions need AVX-512 F and "
                    "VPOPCNTDQ, which this CPU lacks (the scan still runs here, on narrower vectors)")
def test_near_scan_loop_is_avx512():
    """The near scan of one-word codes compiles to vector popcounts on zmm registers and
    compresses the near items' indices with vpcompressq (a fresh compile: code loaded from
    numba's cache has no assembly)."""
    code = (
        "import numpy as np\n"
        "import fasttie as ft\n"
        "from fasttie._kernels import stable_top\n"
        "rng = np.random.default_rng(0)\n"
        "q, db = rng.integers(0, 2, (3, 64)), rng.integers(0, 2, (100, 64))\n"
        "ft.evaluate(q, db, rng.integers(0, 2, 3), rng.integers(0, 2, 100), metrics=['P@5'], ties='stable')\n"
        "asm = ''.join(stable_top.scan_near_one_word.inspect_asm().values())\n"
        "print(asm.count('vpopcntq\\t%zmm'), asm.count('vpcompressq'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "FASTTIE_NO_CACHE": "1"})
    popcounts, compresses = map(int, out.stdout.split())
    assert popcounts >= stable_top.NEAR_QUERIES and compresses >= 1, out.stdout
