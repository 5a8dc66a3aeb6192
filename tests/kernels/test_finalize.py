"""The optional sums of the finalizers (bpref, interpolated precision, RBP, a fixed order's WAP,
and the tie walk's ratios for AP@k / WAP@k over the retrieved relevant items) run in kernels of
their own: each driver comes as a kernel without them and an ``..._optional``
one made from the same source (the tie walks of ties="average" / "optimistic" / "pessimistic",
the stable pass, the bounded stable pass, the ranked lists' fixed orders; the sharded finalize is
in tests/test_dask.py). The Hamming tie walk has a third, ``..._ratios``, with the ratios alone:
AP@k of a Hamming ranking takes them by default.

The facade picks the variant by the metrics asked. Asking for an optional sum must change no
other metric's bits, and must be what picks the ``_optional`` kernel; tests/across/test_signatures.py
checks that the other kernels do not compile those sums at all.
"""

import numpy as np
import pytest

import fasttie as ft
import fasttie.hamming.engine as engine
import fasttie.finalize.cold_start as cold_start
from kernels.test_stable_top import _inputs

WHOLE = ["AP", "AP@9", "nDCG@20", "P@10", "RR", "Rprec", "ERR@10", "R@30"]
TOP = ["AP@9", "nDCG@20", "P@10", "RR@10", "ERR@10", "Success@3"]
WHOLE_SUMS = ["WAP", "WAP@10", "RBP", "RBP(p=0.5)@20", "RBPResid@5", "Bpref"]
FIXED_ORDER_SUMS = ["IPrec@0.3", "11pt"]  # interpolated precision: no exact average over tie orders
TOP_SUMS = ["WAP@10", "RBP(p=0.5)@20", "RBPResid@5"]  # cutoffs only: still the bounded pass
RANKED = ["AP", "nDCG@10", "P@5", "RR", "Rprec", "Judged@10"]
RANKED_SUMS = ["RBP", "RBP(p=0.5)@20", "RBPResid@5", "Bpref", "RBP(rel=2)"]


def _spy(monkeypatch, module, names):
    """Replace module.<name> for each name with a wrapper that records the name when called."""
    called = []
    for name in names:
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name: called.append(_name) or _real(*a))
    return called


def _spy_addresses(monkeypatch, module=cold_start):
    """Record the name of every finalizer whose address a walk takes, once per call of the walk
    (the kernels it calls: :mod:`fasttie._kernels.address`): over ranked lists and alpha-nDCG's
    through :func:`fasttie.finalize.cold_start.callee_addresses`, over histograms
    (``module=engine``) in the engine."""
    called = []
    real = module.address_of
    monkeypatch.setattr(module, "address_of", lambda kernel: called.append(kernel.py_func.__name__) or real(kernel))
    return called


def _same_bits(plain, summed, names):
    for name in names:
        assert summed.per_query[name].tobytes() == plain.per_query[name].tobytes(), name


@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
@pytest.mark.parametrize("ties, others, sums, kernel", [
    ("stable", WHOLE, WHOLE_SUMS + FIXED_ORDER_SUMS, "finish_stable"),
    ("stable", TOP, TOP_SUMS, "finish_stable"),  # the near scans, the same finish
    ("average", WHOLE, WHOLE_SUMS, "finalize_ties"),  # the walk that finalize_histograms calls
    ("pessimistic", WHOLE, WHOLE_SUMS + FIXED_ORDER_SUMS, "finalize_ties"),
])
def test_hamming_optional_sums_change_no_other_metric(kind, ties, others, sums, kernel, monkeypatch):
    q, db, relevance, _ = _inputs(kind, 9, 400, 24, np.random.default_rng(len(kind)))
    if kernel == "finish_stable":
        called = _spy(monkeypatch, engine, [kernel, kernel + "_optional"])
    else:
        called = _spy_addresses(monkeypatch, engine)
    # AP@k over all relevant items: over the retrieved ones, a tie walk takes the _ratios kernel (below)
    options = dict(ties=ties, ap_denominator="total", empty="zero", n_threads=2, **relevance)
    # the stable finish computes ERR in its _optional kernel: a call without ERR or the sums
    # compiles neither
    without_err = [m for m in others if not m.startswith("ERR")]
    plain = ft.evaluate(q, db, metrics=without_err if kernel == "finish_stable" else others, **options)
    assert set(called) == {kernel}
    called.clear()
    summed = ft.evaluate(q, db, metrics=others + sums, **options)
    assert set(called) == {kernel + "_optional"}
    _same_bits(plain, summed, without_err if kernel == "finish_stable" else others)
    if kernel == "finish_stable":
        called.clear()
        with_err = ft.evaluate(q, db, metrics=others, **options)
        assert set(called) == {kernel + "_optional"}
        _same_bits(with_err, summed, others)


@pytest.mark.parametrize("ties", ["stable", "trec", "average", "optimistic"])
def test_ranked_list_optional_sums_change_no_other_metric(ties, monkeypatch):
    rng = np.random.default_rng(5)
    y_true = rng.integers(0, 4, 300).astype(float)
    y_pred = rng.integers(0, 30, 300) / 3.0  # many equal scores
    sizes = [40, 100, 160]
    docs = np.arange(300)[::-1] if ties == "trec" else None
    fixed = ties in ("stable", "trec")
    # and the radix sort, which the walks call through its address too, and for the split orders the
    # split of the runs by grade
    split = ["split_run_into"] if ties == "optimistic" else []
    plain_walk = ["finalize_ranked", "sort_keys_into"] if fixed else ["finalize_ties", "sort_keys_into", *split]
    summed_walk = (["finalize_ranked", "ranked_optional_sums", "sort_keys_into"] if fixed
                   else ["finalize_ties_optional", "sort_keys_into", *split])
    sums = RANKED_SUMS + (["IPrec@0.3"] if ties != "average" else [])
    called = _spy_addresses(monkeypatch)
    plain = ft.rank_evaluate(y_true, y_pred, sizes, metrics=RANKED, ties=ties, doc_ids=docs)
    assert called == plain_walk
    called.clear()
    summed = ft.rank_evaluate(y_true, y_pred, sizes, metrics=RANKED + sums, ties=ties, doc_ids=docs)
    # RBP(rel=2) has a relevance level of its own: a second pass, also with the optional sums
    assert called == summed_walk * 2
    _same_bits(plain, summed, RANKED)


def test_wap_of_a_tie_walk_needs_no_optional_kernel(monkeypatch):
    # ties="average" sums WAP in every tie walk: asking for it keeps the kernel without the sums
    q, db, relevance, _ = _inputs("class", 5, 300, 16, np.random.default_rng(0))
    called = _spy_addresses(monkeypatch, engine)
    ft.evaluate(q, db, metrics=["AP", "WAP", "WAP@10"], ap_denominator="total", **relevance)
    assert set(called) == {"finalize_ties"}


@pytest.mark.parametrize("ties", ["average", "optimistic"])
def test_ratios_of_a_tie_walk_are_in_kernels_of_their_own(ties, monkeypatch):
    # AP@k over the relevant items retrieved in the top k (hashing's default) needs the expected
    # ratio, a hypergeometric sum: a Hamming tie walk takes the _ratios kernel for it (the
    # _optional one when an optional sum is asked too), ranked lists the _optional one; the other
    # metrics keep their bits
    q, db, relevance, _ = _inputs("multihot", 7, 300, 16, np.random.default_rng(1))
    others = ["AP", "nDCG@10", "P@10", "RR@10"]
    called = _spy_addresses(monkeypatch, engine)
    total = ft.evaluate(q, db, metrics=others + ["AP@10"], ap_denominator="total", ties=ties, **relevance)
    assert set(called) == {"finalize_ties"}
    called.clear()
    retrieved = ft.evaluate(q, db, metrics=others + ["AP@10", "WAP@10"], ap_denominator="retrieved", ties=ties,
                            **relevance)
    assert set(called) == {"finalize_ties_ratios"}
    _same_bits(total, retrieved, others)
    assert not np.array_equal(total.per_query["AP@10"], retrieved.per_query["AP@10"])  # the ratio was computed
    called.clear()
    summed = ft.evaluate(q, db, metrics=others + ["AP@10", "WAP@10", "Bpref"], ap_denominator="retrieved", ties=ties,
                         **relevance)
    assert set(called) == {"finalize_ties_optional"}
    _same_bits(retrieved, summed, others + ["AP@10", "WAP@10"])
    called = _spy_addresses(monkeypatch, cold_start)
    y_true, y_pred = np.tile([0.0, 1.0, 2.0, 0.0], 30), np.arange(120) % 7  # ties across grades
    lists = [ft.rank_evaluate(y_true, y_pred, [60, 60], metrics=["nDCG@10", "AP@10"], ap_denominator=denominator,
                              ties=ties) for denominator in ("total", "retrieved")]
    split = ["split_run_into"] if ties == "optimistic" else []  # the runs split by grade
    assert called == ["finalize_ties", "sort_keys_into", *split, "finalize_ties_optional", "sort_keys_into", *split]
    _same_bits(*lists, ["nDCG@10"])
