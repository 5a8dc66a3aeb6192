"""asv benchmarks for fasttie.lambdarank() and its baselines on the same data.

Data: ``make_lambdarank_data`` of data/lambdarank.py (seeded): n_queries x 100
documents, labels 0-4 with MSLR-like frequencies, scores ``0.5 * label + N(0, 1)``. ``setup``
makes one warm-up call, so compile / cache load never lands in ``time_`` / ``peakmem_``.

``Lambdarank`` times the defaults (Burges: every pair) and LightGBM's settings (k=30,
lambdarank_norm); ``peakmem_lambdarank`` should stay near the inputs plus two output arrays
(O(n) scratch per query, never n_docs**2 per query held at once).

``track_speedup_vs_numpy`` (the issue's target: >= 50x) is the per-query time of the
straightforward numpy implementation (n x n matrices per query, on the first 200 queries) over
fasttie's, best of a few calls each, all threads. ``LightGBMRound.track_objective_ratio``
estimates LightGBM's own gradient time inside one boosting round (built-in objective minus a
custom objective returning precomputed arrays) over fasttie's call with the same settings.
"""

from ._common import best_seconds, import_fasttie, sized
from .data.lambdarank import LGB_SETTINGS, make_lambdarank_data, numpy_lambdarank

import_fasttie("lambdarank")
from fasttie.lists.lambdarank import lambdarank  # noqa: E402

N_DOCS = 100
N_NUMPY = sized(200, 10)
N_QUERIES = sized(10_000, 50)  # the thread scaling and the numpy comparison
N_LIGHTGBM = sized(1000, 50)


class Lambdarank:
    """lambdarank on n_queries x 100 documents, all threads."""

    params = sized(([1000, 10_000], ["burges", "lightgbm"]), ([50], ["burges", "lightgbm"]))
    param_names = ["n_queries", "settings"]
    timeout = 300

    def setup(self, n_queries, settings):
        self.y_true, self.y_pred = make_lambdarank_data(n_queries, N_DOCS, seed=0)
        self.kwargs = {} if settings == "burges" else LGB_SETTINGS
        self._run()  # warm-up

    def _run(self):
        return lambdarank(self.y_true, self.y_pred, **self.kwargs)

    def time_lambdarank(self, n_queries, settings):
        self._run()

    def peakmem_lambdarank(self, n_queries, settings):
        self._run()


class LambdarankThreads:
    """Thread scaling on 10,000 x 100 (Burges defaults)."""

    params = [1, 2]
    param_names = ["n_threads"]
    timeout = 300

    def setup(self, n_threads):
        self.y_true, self.y_pred = make_lambdarank_data(N_QUERIES, N_DOCS, seed=0)
        lambdarank(self.y_true, self.y_pred, n_threads=n_threads)

    def time_lambdarank(self, n_threads):
        lambdarank(self.y_true, self.y_pred, n_threads=n_threads)


class NumpyBaseline:
    """Baseline: numpy n x n matrices per query, on the first 200 queries of the same data."""

    timeout = 300

    def setup(self):
        self.y_true, self.y_pred = make_lambdarank_data(N_QUERIES, N_DOCS, seed=0)
        lambdarank(self.y_true, self.y_pred)
        numpy_lambdarank(self.y_true[:2], self.y_pred[:2])

    def time_numpy_200_queries(self):
        numpy_lambdarank(self.y_true[:N_NUMPY], self.y_pred[:N_NUMPY])

    def track_speedup_vs_numpy(self):
        """numpy per-query time / fasttie per-query time (10,000 queries), best of 2 and of 5."""
        numpy_s = best_seconds(lambda: numpy_lambdarank(self.y_true[:N_NUMPY], self.y_pred[:N_NUMPY]), 2) / N_NUMPY
        fasttie_s = best_seconds(lambda: lambdarank(self.y_true, self.y_pred), 5) / len(self.y_true)
        return numpy_s / fasttie_s

    track_speedup_vs_numpy.unit = "x"


class LightGBMRound:
    """One LightGBM boosting round (1,000 x 100, 10 features): built-in objective vs fasttie."""

    timeout = 300

    def setup(self):
        try:
            import lightgbm as lgb
        except ImportError:
            raise NotImplementedError("lightgbm not installed") from None
        import numpy as np

        self.lgb = lgb
        y_true, y_pred = make_lambdarank_data(N_LIGHTGBM, N_DOCS, seed=0)
        self.y_true, self.y_pred = y_true, y_pred
        x = np.random.default_rng(1).standard_normal((y_true.size, 10))
        self.sizes = np.full(len(y_true), N_DOCS)
        self.labels = y_true.ravel().astype(np.float64)
        self.dataset = lgb.Dataset(x, self.labels, group=self.sizes, init_score=y_pred.ravel(),
                                   free_raw_data=False, params={"verbose": -1})
        self.dataset.construct()
        self.params = {"learning_rate": 0.1, "num_leaves": 31, "verbose": -1, "seed": 0,
                       "lambdarank_truncation_level": LGB_SETTINGS["k"], "lambdarank_norm": True}
        lam, hes = lambdarank(y_true, y_pred, **LGB_SETTINGS)
        precomputed = (lam.ravel(), hes.ravel())
        labels, sizes = self.labels, self.sizes

        # plain functions, not bound methods: lgb.train deep-copies its params
        def fasttie_objective(preds, data):
            return lambdarank(labels, preds, sizes, **LGB_SETTINGS)

        def precomputed_objective(preds, data):
            return precomputed

        self._fasttie_objective, self._precomputed_objective = fasttie_objective, precomputed_objective
        for objective in ("lambdarank", fasttie_objective, precomputed_objective):
            self._round(objective)

    def _round(self, objective):
        return self.lgb.train({**self.params, "objective": objective}, self.dataset, num_boost_round=1)

    def time_round_builtin(self):
        self._round("lambdarank")

    def time_round_fasttie_objective(self):
        self._round(self._fasttie_objective)

    def track_objective_ratio(self):
        """(built-in round - precomputed round) / fasttie call: LightGBM's gradients vs fasttie's."""
        builtin = best_seconds(lambda: self._round("lambdarank"), 3)
        precomputed = best_seconds(lambda: self._round(self._precomputed_objective), 3)
        fasttie = best_seconds(lambda: lambdarank(self.y_true, self.y_pred, **LGB_SETTINGS), 3)
        return (builtin - precomputed) / fasttie

    track_objective_ratio.unit = "x"
