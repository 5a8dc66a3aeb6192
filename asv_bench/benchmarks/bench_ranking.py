"""asv benchmarks for fasttie.rank_evaluate() and the ranx / scikit-learn baselines on the same data.

Data: ``make_ranking_data`` of data/ranking.py (seeded): n_queries x 1,000 documents,
graded labels 0-4 with MSLR-like frequencies (about half the documents relevant), scores
``0.5 * label + N(0, 1)`` rounded to one decimal, so every document sits in a tie (~60 distinct
scores per query).  ``setup`` makes one warm-up call, so compile / cache load never lands in
``time_`` / ``peakmem_``.

Metrics: nDCG@10, AP, RR, P@10 in one call (ranx: ndcg@10, map, mrr, precision@10).
``peakmem_rank_evaluate`` should stay near the inputs (two float64 n_queries x 1,000 arrays plus
fasttie's float64 copies), never grow with documents squared.

``RanxEvaluate`` (skipped when ranx is not importable) and ``SklearnNDCG`` time the baselines on
the same data as ``RankEvaluate`` at the same ``n_queries``, so the ``time_`` values compare
directly; their ``track_speedup_*`` record the ratio baseline time / fasttie time (best of a few
calls, all threads), which is what issue 3's targets (>= 3x ranx, >= 50x scikit-learn) are about.
ranx's ``Qrels`` / ``Run`` construction runs in ``setup`` and is not timed (see
``track_ranx_construction_seconds`` and ``python scripts/bench_ranking.py`` for its cost).
"""

import time

from ._common import best_seconds, import_fasttie, sized
from .data.ranking import METRICS, RANX_NAMES, make_ranking_data, ranx_objects

ft = import_fasttie("rank_evaluate")

N_DOCS = sized(1000, 100)
_PARAMS = sized([1000, 10_000], [20])


def _data(n_queries):
    return make_ranking_data(n_queries, N_DOCS, seed=0)


class RankEvaluate:
    """rank_evaluate (4 metrics, all threads) on n_queries x 1,000 tied scores."""

    params = _PARAMS
    param_names = ["n_queries"]
    timeout = 300

    def setup(self, n_queries):
        self.data = _data(n_queries)
        self._run()  # warm-up: compile / load from cache outside the timing

    def _run(self, metrics=METRICS, n_threads=None):
        return ft.rank_evaluate(self.data.y_true, self.data.y_pred, metrics=metrics, n_threads=n_threads)

    def time_rank_evaluate(self, n_queries):
        self._run()

    def peakmem_rank_evaluate(self, n_queries):
        self._run()

    def time_rank_evaluate_ndcg10_only(self, n_queries):
        self._run(("nDCG@10",))

    def track_rows_per_second(self, n_queries):
        return n_queries * N_DOCS / best_seconds(self._run, 1)

    track_rows_per_second.unit = "rows/s"


class RankEvaluateThreads:
    """Thread scaling on 10,000 x 1,000."""

    params = [1, 2]
    param_names = ["n_threads"]
    n_queries = sized(10_000, 20)
    timeout = 300

    def setup(self, n_threads):
        self.data = _data(self.n_queries)
        self._run(n_threads)

    def _run(self, n_threads):
        return ft.rank_evaluate(self.data.y_true, self.data.y_pred, metrics=METRICS, n_threads=n_threads)

    def time_rank_evaluate(self, n_threads):
        self._run(n_threads)


# ---------------------------------------------------------------- baselines, same data


class RanxEvaluate:
    """Baseline: ranx.evaluate (numba, not tie-aware) on the data of RankEvaluate."""

    params = _PARAMS
    param_names = ["n_queries"]
    timeout = 600
    number = 1
    repeat = (1, 3, 120.0)

    def setup(self, n_queries):
        try:
            from ranx import evaluate
        except ImportError:
            raise NotImplementedError("ranx not installed") from None
        self.evaluate = evaluate
        self.names = [RANX_NAMES[m] for m in METRICS]
        self.data = _data(n_queries)
        # warm-up on 20 queries: compile (or load ranx's numba cache) before any timing
        wq, wr, *_ = ranx_objects(self.data.y_true[:20], self.data.y_pred[:20])
        evaluate(wq, wr, self.names)
        evaluate(wq.to_typed_list(), wr.to_typed_list(), self.names)
        t0 = time.perf_counter()
        self.qrels, self.run, *_ = ranx_objects(self.data.y_true, self.data.y_pred)
        self.construction_s = time.perf_counter() - t0
        self.typed = (self.qrels.to_typed_list(), self.run.to_typed_list())

    def _run(self):
        return self.evaluate(self.qrels, self.run, self.names)

    def time_ranx_evaluate(self, n_queries):
        """evaluate(Qrels, Run): includes ranx's per-call conversion to typed lists."""
        self._run()

    def time_ranx_kernels_only(self, n_queries):
        """evaluate on typed lists converted in setup: ranx's metric kernels alone."""
        self.evaluate(*self.typed, self.names)

    def track_ranx_construction_seconds(self, n_queries):
        """Python dicts + Qrels.from_dict + Run.from_dict in setup (one-off, not in the ratio)."""
        return self.construction_s

    track_ranx_construction_seconds.unit = "s"

    def track_speedup_vs_ranx(self, n_queries):
        """ranx evaluate(Qrels, Run) time / fasttie rank_evaluate time, best of 2 each."""
        ft.rank_evaluate(self.data.y_true, self.data.y_pred, metrics=METRICS)  # warm-up

        def fasttie_call():
            ft.rank_evaluate(self.data.y_true, self.data.y_pred, metrics=METRICS)

        return best_seconds(self._run, 2) / best_seconds(fasttie_call, 2)

    track_speedup_vs_ranx.unit = "x"


class SklearnNDCG:
    """Baseline: scikit-learn ndcg_score(k=10) (tie-averaged, 2-D) on the data of RankEvaluate."""

    params = _PARAMS
    param_names = ["n_queries"]
    timeout = 300

    def setup(self, n_queries):
        try:
            from sklearn.metrics import ndcg_score
        except ImportError:
            raise NotImplementedError("scikit-learn not installed") from None
        self.ndcg_score = ndcg_score
        self.data = _data(n_queries)
        ndcg_score(self.data.y_true[:10], self.data.y_pred[:10], k=10)

    def _run(self):
        return self.ndcg_score(self.data.y_true, self.data.y_pred, k=10)

    def time_ndcg_score(self, n_queries):
        self._run()

    def track_speedup_vs_sklearn(self, n_queries):
        """ndcg_score time / fasttie rank_evaluate time (4 metrics), best of 2 each."""
        ft.rank_evaluate(self.data.y_true, self.data.y_pred, metrics=METRICS)

        def fasttie_call():
            ft.rank_evaluate(self.data.y_true, self.data.y_pred, metrics=METRICS)

        return best_seconds(self._run, 2) / best_seconds(fasttie_call, 2)

    track_speedup_vs_sklearn.unit = "x"
