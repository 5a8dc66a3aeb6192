"""fasttie.finalize.plan: the one plan both doors finalize by. The ratios AP_RET / WAP_RET (the
hypergeometric sums of AP@k over the retrieved relevant items) are left out only where no value
reads them (forcing them on changes no value, bitwise), and are read where the plan asks for them
(forcing them off changes values); the plan names the kernel variant and ERR's columns."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import fasttie as ft
import fasttie.hamming.engine as engine
import fasttie.lists.facade as ranking
from fasttie.errors import InputError
from fasttie.finalize.plan import finalize_plan
from fasttie.metrics import parse_metrics


def _hamming_case(rng):
    n_q, n_db, n_bits = int(rng.integers(2, 6)), int(rng.integers(6, 40)), int(rng.choice([3, 6, 12]))
    queries = rng.integers(0, 2, (n_q, n_bits)).astype(np.uint8)
    database = rng.integers(0, 2, (n_db, n_bits)).astype(np.uint8)
    labels = {"query_labels": rng.integers(0, 2, (n_q, 3)), "db_labels": rng.integers(0, 2, (n_db, 3))}
    return n_db, lambda metrics, ties: ft.evaluate(queries, database, **labels, metrics=metrics, ties=ties,
                                                   ap_denominator="retrieved").per_query


def _list_case(rng):
    sizes = rng.integers(1, 10, int(rng.integers(1, 5)))
    n = int(sizes.sum())
    y_true = rng.integers(0, 3, n) * (rng.random(n) < 0.6)
    y_pred = rng.integers(0, 3, n).astype(float)  # few scores: many ties
    unretrieved = [rng.integers(0, 3, int(rng.integers(0, 3))) for _ in sizes]
    longest = int(max(s + len(u) for s, u in zip(sizes, unretrieved)))
    return longest, lambda metrics, ties: ft.rank_evaluate(y_true, y_pred, sizes, metrics=metrics, ties=ties,
                                                           ap_denominator="retrieved",
                                                           unretrieved=unretrieved).per_query


_DOORS = {"hamming": (_hamming_case, engine), "lists": (_list_case, ranking)}


def _forcing(monkeypatch, module, need_ratio):
    """Make ``module``'s plans compute the ratios (or not) whatever the rule says."""
    monkeypatch.setattr(module, "finalize_plan",
                        lambda *args: replace(finalize_plan(*args), need_ratio=need_ratio))


@pytest.mark.parametrize("door", sorted(_DOORS))
@pytest.mark.parametrize("ties", ["average", "optimistic", "pessimistic"])
def test_ratios_left_out_only_where_no_value_reads_them(door, ties, monkeypatch):
    make_case, module = _DOORS[door]
    rng = np.random.default_rng(37)
    changed = 0
    for _ in range(25):
        depth, evaluate = make_case(rng)
        past_the_end = [f"AP@{depth}", f"GMAP@{depth + 3}", "nDCG@2"] + (["WAP@500"] if door == "hamming" else [])
        plan = finalize_plan(parse_metrics(past_the_end), ties, "retrieved", depth)
        assert not plan.need_ratio and plan.variant == "plain"
        own = evaluate(past_the_end, ties)
        with monkeypatch.context() as patch:
            _forcing(patch, module, True)
            forced = evaluate(past_the_end, ties)
        for name in past_the_end:
            assert np.array_equal(own[name], forced[name], equal_nan=True), name
        # below the end of the lists the ratios are read: leaving them out changes AP@k
        within = ["AP@2", "GMAP@3"]
        assert finalize_plan(parse_metrics(within), ties, "retrieved", depth).need_ratio
        own = evaluate(within, ties)
        with monkeypatch.context() as patch:
            _forcing(patch, module, False)
            dropped = evaluate(within, ties)
        changed += not np.array_equal(own["AP@2"], dropped["AP@2"])
    assert changed > 0


def test_the_variant_follows_the_optional_sums_and_the_ratios():
    def plan(names, ties="optimistic", ap_denominator="retrieved", depth=10):
        return finalize_plan(parse_metrics(names), ties, ap_denominator, depth)

    assert plan(["AP@3"]).variant == "ratios"
    assert plan(["AP@10"]).variant == "plain"  # k at the depth: hits@k is fixed
    assert plan(["AP@3"], ap_denominator="total").variant == "plain"
    assert plan(["AP@3", "Bpref"]).variant == "optional" and plan(["AP@3", "Bpref"]).need_ratio
    assert plan(["RBP(p=0.5)"]).fixed_variant == "optional" and plan(["AP@3"]).fixed_variant == "plain"
    # the one picker of every door's kernels: a door without a ratios-only kernel runs the optional one
    assert plan(["AP@3"]).kernel("plain", "optional", "ratios") == "ratios"
    assert plan(["AP@3"]).kernel("plain", "optional") == "optional"
    assert plan(["AP@3"]).kernel("plain", "optional", "ratios", fixed=True) == "plain"
    assert plan(["AP@10"]).kernel("plain", "optional", "ratios") == "plain"
    assert plan(["AP@3", "Bpref"]).kernel("plain", "optional", "ratios", fixed=True) == "optional"
    # a family whose optional kernel computes ERR (the stable finish) runs it for ERR only
    assert plan(["AP@3", "ERR@5"]).kernel("plain", "optional", fixed=True, err_in_optional=True) == "optional"
    assert plan(["AP@3", "ERR@5"]).kernel("plain", "optional", fixed=True) == "plain"
    assert plan(["AP@3"]).kernel("plain", "optional", fixed=True, err_in_optional=True) == "plain"
    with pytest.raises(InputError, match="interpolated precision"):
        plan(["IPrec@0.5"], ties="average")


@pytest.mark.parametrize("door", sorted(_DOORS))
def test_err_columns_give_each_err_metric_its_own_values(door):
    """ERR at several cutoffs in one call (the plan's ERR columns) equals each asked alone."""
    make_case, _ = _DOORS[door]
    rng = np.random.default_rng(7)
    for _ in range(10):
        _, evaluate = make_case(rng)
        names = ["ERR@5", "ERR", "ERR@1", "nDCG@3"]
        together = evaluate(names, "average")
        for name in names:
            assert np.array_equal(together[name], evaluate([name], "average")[name], equal_nan=True), name


def test_the_plan_spreads_its_arguments_in_the_order_every_kernel_takes_them():
    """FinalizePlan.arguments is the one place the plan's tables enter a kernel: its order is the
    order of the parameters of every door's finalize kernels (named as the plan's fields)."""
    import inspect

    from fasttie._kernels import hamming_ties, score_ties

    walks = [hamming_ties.finalize_histograms, score_ties.finalize_rankings]
    fixed = [hamming_ties.finish_stable, hamming_ties.finish_stable_optional,
             hamming_ties.finalize_ranked_queries, score_ties.finalize_fixed_rankings]
    plan = finalize_plan(parse_metrics(["AP@3", "Bpref", "RBP(p=0.5)"]), "average", "retrieved", 10)
    for kernels, is_fixed in ((walks, False), (fixed, True)):
        passed = plan.arguments(fixed=is_fixed)
        names = ["cutoffs", "log_p", "discount", "optional"] if is_fixed else [
            "cutoffs", "log_p", "discount", "need_ratio", "optional"]
        assert [value is getattr(plan, name) for value, name in zip(passed, names)] == [True] * len(names)
        for kernel in kernels:
            parameters = list(inspect.signature(kernel.py_func).parameters)
            at = parameters.index("cutoffs")
            assert parameters[at : at + len(names)] == names, kernel.py_func.__name__
