"""pytest configuration of the repository root: the docstring examples of ``fasttie/``.

``--doctest-modules`` (pyproject.toml) runs every ``>>>`` example of the package beside
``tests/``. Examples that need an optional extra are skipped, not failed, where the extra is
absent (the minimum-versions job of ``.ci/run`` installs none), and modules that cannot even be
imported without one are not collected.
"""

import importlib.util

import pytest

# import name of an optional dependency -> the extra that installs it
_EXTRA = {"matplotlib": "plot", "scipy": "stats", "sklearn": "test", "pandas": "frame", "dask": "dask",
          "numba_cuda": "cuda", "torch": "torch"}

# doctest item (module, or module.object) -> the optional package its examples need
_NEEDS = {
    "fasttie.plots": "matplotlib",
    "fasttie.report.significance.compare": "scipy",
    "fasttie.report.significance.paired_t_interval": "scipy",
    "fasttie.datasets.digits_hashing": "sklearn",
    "fasttie.dask": "dask",
    "fasttie.trec.records.Run.from_frame": "pandas",
    "fasttie.torch": "torch",
}

# modules whose import needs the extra itself
collect_ignore = []
if importlib.util.find_spec("numba_cuda") is None:
    collect_ignore.append("fasttie/_kernels/cuda.py")
if importlib.util.find_spec("ir_measures") is None:  # its measures subclass ir_measures' (the test extra)
    collect_ignore.append("fasttie/ir_measures.py")
if importlib.util.find_spec("torchmetrics") is None:  # its metrics subclass torchmetrics' (the torch extra)
    collect_ignore.append("fasttie/torchmetrics.py")


def _missing(name):
    return importlib.util.find_spec(name) is None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if type(item).__name__ != "DoctestItem":
            continue
        for prefix, package in _NEEDS.items():
            if (item.name == prefix or item.name.startswith(prefix + ".")) and _missing(package):
                item.add_marker(pytest.mark.skip(
                    reason=f"example needs {package} (pip install 'fasttie[{_EXTRA[package]}]')"))
