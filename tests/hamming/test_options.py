"""fasttie.hamming.options: the Hamming door's options are checked once, into one object that every
back end reads."""

import numpy as np
import pytest

import fasttie as ft
from fasttie.hamming import options as options_module
from fasttie.hamming.engine import hashing_metrics
from fasttie.hamming.options import HammingOptions
from fasttie.options import AP_DENOMINATORS, EMPTY_POLICIES, GAINS, HAMMING_TIES


def _case(seed):
    rng = np.random.default_rng(seed)
    codes = rng.choice(np.array([-1, 1], dtype=np.int8), (64, 16))
    labels = rng.integers(0, 3, 64)
    return codes[:4], codes[4:], labels[:4], labels[4:]


def test_defaults_are_the_doors():
    import inspect

    door = inspect.signature(ft.evaluate).parameters
    resolved = HammingOptions.resolve(hashing_metrics(["AP"]))
    for name, value in resolved.keywords().items():
        assert door[name].default == value, name
    assert resolved == HammingOptions()


@pytest.mark.parametrize("option, bad, error", [
    ("ties", "trec", ValueError), ("ties", 1, TypeError), ("ap_denominator", "R", ValueError),
    ("gain", "exp", ValueError), ("empty", "nan", ValueError), ("spread", "yes", ValueError),
])
def test_a_bad_option_is_named(option, bad, error):
    with pytest.raises(error, match=option if option != "spread" else "spread"):
        HammingOptions.resolve(hashing_metrics(["AP"]), **{option: bad})


def test_the_spread_is_checked_against_the_metrics_and_the_device():
    with pytest.raises(ValueError, match="GMAP"):
        HammingOptions.resolve(hashing_metrics(["GMAP"]), spread=True)
    assert HammingOptions.resolve(hashing_metrics(["GMAP"]), spread="range").spread == "range"
    with pytest.raises(ValueError, match="ties"):
        HammingOptions.resolve(hashing_metrics(["AP"]), spread=True, ties="stable")
    with pytest.raises(ValueError, match="device"):
        HammingOptions.resolve(hashing_metrics(["AP"]), spread=True, device="cuda")
    assert HammingOptions.resolve(hashing_metrics(["AP"]), spread=np.bool_(False)).spread is False


@pytest.mark.parametrize("ties", HAMMING_TIES)
@pytest.mark.parametrize("ap_denominator", AP_DENOMINATORS)
def test_every_choice_resolves(ties, ap_denominator):
    for gain in GAINS:
        for empty in EMPTY_POLICIES:
            got = HammingOptions.resolve(hashing_metrics(["AP@5"]), ties=ties, ap_denominator=ap_denominator,
                                         gain=gain, empty=empty)
            assert (got.ties, got.ap_denominator, got.gain, got.empty) == (ties, ap_denominator, gain, empty)
            assert got.stable == (ties == "stable")


def test_under_another_order_drops_curves_and_spread():
    options = HammingOptions(ap_denominator="total", gain="linear", empty="skip", curves=[1, 2], spread=True)
    assert options.under("optimistic") == HammingOptions("optimistic", "total", "linear", "skip")


def test_settings_and_keywords():
    options = HammingOptions(ties="pessimistic", gain="linear")
    assert options.settings(10, 64, "class") == {"ties": "pessimistic", "ap_denominator": "retrieved",
                                                 "gain": "linear", "empty": "zero", "n_db": 10, "n_bits": 64,
                                                 "relevance": "class"}
    q, db, ql, dl = _case(2)
    metrics = ["AP", "nDCG@5", "P@3"]
    expected = ft.evaluate(q, db, ql, dl, metrics=metrics, **options.keywords())
    got = ft.tie_stats(q, db, ql, dl).finalize(metrics, **options.keywords())
    assert got.settings == expected.settings
    for name in metrics:
        np.testing.assert_array_equal(got.per_query[name], expected.per_query[name])


@pytest.mark.parametrize("call, ties", [("evaluate", "average"), ("evaluate", "stable"), ("streamed", "average"),
                                        ("streamed", "stable"), ("tie_stats", "average")])
def test_each_door_checks_its_options_once(monkeypatch, tmp_path, call, ties):
    checked = []
    real = options_module.check_options
    monkeypatch.setattr(options_module, "check_options", lambda **kw: checked.append(kw) or real(**kw))
    q, db, ql, dl = _case(3)
    if call == "evaluate":
        ft.evaluate(q, db, ql, dl, metrics=["AP", "P@3"], ties=ties, spread=ties == "average", curves=True)
    elif call == "streamed":
        np.save(tmp_path / "a.npy", db[:25]), np.save(tmp_path / "b.npy", db[25:])
        ft.evaluate(q, [tmp_path / "a.npy", tmp_path / "b.npy"], ql, dl, metrics=["AP", "P@3"], ties=ties,
                    spread=ties == "average")
    else:  # ties="stable" needs the database order, which tie statistics do not keep
        ft.tie_stats(q, db, ql, dl).finalize(["AP", "P@3"], spread=True, curves=True)
    assert len(checked) == 1
