"""fasttie.plots.plot_curves: files of the requested size and format, labelled axes, legends,
the data drawn equals Result.curves, clear errors, and the message when matplotlib is missing."""

import sys

import numpy as np
import pytest

import fasttie as ft
from fasttie.plots import plot_curves

pytest.importorskip("matplotlib")
import matplotlib.image as mpimg


@pytest.fixture(scope="module")
def methods():
    rng = np.random.default_rng(2)
    n_bits, n_db, n_q = 16, 500, 30
    centres = rng.integers(0, 2, (4, n_bits))
    db_labels, q_labels = rng.integers(0, 4, n_db), rng.integers(0, 4, n_q)
    database = centres[db_labels] ^ (rng.random((n_db, n_bits)) < 0.2)
    clean = centres[q_labels] ^ (rng.random((n_q, n_bits)) < 0.1)
    noisy = clean ^ (rng.random((n_q, n_bits)) < 0.3)
    return {
        name: ft.evaluate(q, database, q_labels, db_labels, metrics="AP", curves=True)
        for name, q in (("ITQ", clean), ("LSH", noisy))
    }


@pytest.mark.parametrize("size,dpi", [((1200, 400), 100), ((1001, 333), 72), ((640, 480), 96.5)])
def test_png_has_requested_pixel_size(tmp_path, methods, size, dpi):
    path = tmp_path / "curves.png"
    plot_curves(methods, path, size=size, dpi=dpi)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = mpimg.imread(path)
    assert image.shape[1] == size[0] and image.shape[0] == size[1]


def test_axes_labels_legend_and_data(methods):
    figure = plot_curves(methods)
    axes = figure.get_axes()
    assert len(axes) == 3
    expected = [("Recall", "Precision", "linear"), ("N (retrieved)", "P@N", "log"), ("N (retrieved)", "R@N", "linear")]
    for ax, (x_label, y_label, x_scale) in zip(axes, expected):
        assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale()) == (x_label, y_label, x_scale)
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ITQ", "LSH"]
    for name, line in zip(methods, axes[0].get_lines()):
        np.testing.assert_array_equal(line.get_xdata(), methods[name].curves["recall_by_radius"])
        np.testing.assert_array_equal(line.get_ydata(), methods[name].curves["precision_by_radius"])
        assert len(line.get_xdata()) == 17  # radius 0..16
    for name, line in zip(methods, axes[1].get_lines()):
        np.testing.assert_array_equal(line.get_xdata(), methods[name].curves["n"])
        np.testing.assert_array_equal(line.get_ydata(), methods[name].curves["precision_at_n"])
    for name, line in zip(methods, axes[2].get_lines()):
        np.testing.assert_array_equal(line.get_ydata(), methods[name].curves["recall_at_n"])
    title = figure._suptitle.get_text()
    assert "ties=average" in title and "30 queries" in title and "500 database codes" in title and "16 bits" in title
    assert "empty=zero (0 empty)" in title


def test_kinds_title_and_single_result(methods, tmp_path):
    figure = plot_curves(methods["ITQ"], kinds=["r_at_n"], title="CIFAR-10, 16 bits", size=(500, 400))
    (ax,) = figure.get_axes()
    assert ax.get_ylabel() == "R@N" and figure._suptitle.get_text() == "CIFAR-10, 16 bits"
    assert len(ax.get_lines()) == 1 and ax.get_legend() is None  # one unnamed result: no legend
    (ax,) = plot_curves(methods["ITQ"], kinds=["pr"], label="ITQ").get_axes()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ITQ"]
    figure = plot_curves(methods, kinds=("p_at_n", "pr"))
    assert [ax.get_ylabel() for ax in figure.get_axes()] == ["P@N", "Precision"]


def test_differing_settings_are_shown(methods):
    rng = np.random.default_rng(0)
    other = ft.evaluate(rng.integers(0, 2, (5, 16)), rng.integers(0, 2, (50, 16)), rng.integers(0, 2, 5),
                        rng.integers(0, 2, 50), metrics="AP", ties="stable", curves=True)
    title = plot_curves({"a": methods["ITQ"], "b": other})._suptitle.get_text()
    assert "ties=average/stable" in title and "30/5 queries" in title


def test_pdf(tmp_path, methods):
    path = tmp_path / "curves.PDF"
    plot_curves(methods, path)
    assert path.read_bytes()[:5] == b"%PDF-"


def test_user_pyplot_state_is_untouched(methods, tmp_path):
    import matplotlib

    backend = matplotlib.get_backend()
    had_pyplot = "matplotlib.pyplot" in sys.modules
    plot_curves(methods, tmp_path / "x.png")
    assert matplotlib.get_backend() == backend
    if not had_pyplot:
        assert "matplotlib.pyplot" not in sys.modules


def test_errors(tmp_path, methods):
    for name in ("curves.jpg", "curves.svg", "curves"):
        with pytest.raises(ValueError, match="use a .png or .pdf"):
            plot_curves(methods, tmp_path / name)
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="'.jpg'"):
        plot_curves(methods, tmp_path / "curves.jpg")
    plain = ft.Result.from_dict({**methods["ITQ"].to_dict(), "curves": {}})
    with pytest.raises(ValueError, match=r"result 'plain' has no curves.*curves=True"):
        plot_curves({"ITQ": methods["ITQ"], "plain": plain})
    partial = ft.Result.from_dict(methods["ITQ"].to_dict())
    del partial.curves["recall_at_n"]
    plot_curves(partial, kinds=["pr", "p_at_n"])  # only what is drawn must be there
    with pytest.raises(ValueError, match="'recall_at_n' missing"):
        plot_curves(partial)
    with pytest.raises(ValueError, match="unknown plot kind 'roc'"):
        plot_curves(methods, kinds=["pr", "roc"])
    with pytest.raises(ValueError, match="kinds is empty"):
        plot_curves(methods, kinds=[])
    with pytest.raises(ValueError, match="size"):
        plot_curves(methods, size=(1200,))
    with pytest.raises(ValueError, match="size"):
        plot_curves(methods, size=(12.5, 400))
    with pytest.raises(ValueError, match="dpi"):
        plot_curves(methods, dpi=0)
    with pytest.raises(TypeError, match="Result"):
        plot_curves([methods["ITQ"]])
    with pytest.raises(TypeError, match=r"results\['x'\]"):
        plot_curves({"x": methods["ITQ"].to_dict()})


def test_missing_matplotlib(monkeypatch, methods, tmp_path):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"^matplotlib is needed for plots: pip install 'fasttie\[plot\]'$"):
        plot_curves(methods, tmp_path / "x.png")


def test_radius_mean_retrieving_draws_the_precision_of_the_queries_that_retrieve(methods):
    axes = plot_curves(methods, kinds=["pr"], radius_mean="retrieving").get_axes()
    assert axes[0].get_ylabel() == "Precision (queries retrieving)"
    for name, line in zip(methods, axes[0].get_lines()):
        np.testing.assert_array_equal(line.get_ydata(), methods[name].curves["precision_by_radius_retrieving"])
    curves = dict(methods["ITQ"].curves)
    del curves["precision_by_radius_retrieving"]  # a file written before the curve existed
    old = ft.Result(mean={}, per_query={}, n_queries=30, n_empty=0, settings=methods["ITQ"].settings, curves=curves)
    with pytest.raises(ValueError, match="precision_by_radius_retrieving"):
        plot_curves(old, kinds=["pr"], radius_mean="retrieving")
    with pytest.raises(ValueError, match="radius_mean must be 'all' or 'retrieving'"):
        plot_curves(methods, radius_mean="some")
    with pytest.raises(ValueError, match="label names a single Result"):
        plot_curves(methods, label="ITQ")


@pytest.fixture(scope="module")
def sweep():
    data = ft.datasets.binarized_embeddings(n_db=400, n_queries=6, dim=32, n_clusters=5, noise=3.0, seed=3)
    return ft.rescore_evaluate(data.query_codes, data.db_codes, data.query_vectors, data.db_vectors,
                               candidates=[40, 10, 20], metrics=["nDCG@10", "NN-recall@5"],
                               query_labels=data.query_labels, db_labels=data.db_labels, spread=True)


def test_oversampling_plot_draws_the_curve_band_and_ceiling(tmp_path, sweep):
    from fasttie.plots import plot_oversampling

    path = tmp_path / "over.png"
    figure = plot_oversampling(sweep, ["nDCG@10", "NN-recall@5"], path, ceiling={"nDCG@10": 0.9}, size=(800, 300))
    assert mpimg.imread(path).shape[:2] == (300, 800)
    ax, ax2 = figure.axes
    line = ax.get_lines()[0]
    np.testing.assert_array_equal(line.get_xdata(), [1.0, 2.0, 4.0])  # sorted by candidates, / k
    np.testing.assert_array_equal(line.get_ydata(), [sweep[c].mean["nDCG@10"] for c in (10, 20, 40)])
    assert ax.get_lines()[1].get_ydata()[0] == 0.9  # the ceiling
    assert ax.get_xlabel() == "oversampling (candidates / 10)" and ax2.get_xlabel() == "oversampling (candidates / 5)"
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(min(sweep[c].mean_tie_min["nDCG@10"] for c in (10, 20, 40)))
    with pytest.raises(ValueError, match="no metric"):
        plot_oversampling(sweep, "P@3")
    with pytest.raises(TypeError, match="RescoreSweep"):
        plot_oversampling(sweep.results[0], "nDCG@10")
