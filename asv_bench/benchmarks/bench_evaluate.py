"""asv benchmarks for fasttie.evaluate() and the argsort / faiss baselines on the same data.

Data: seeded class-correlated codes (data/synthetic.py: each item flips each bit of its
class prototype with probability 0.25), packed once in ``setup``; ``setup`` also makes one
warm-up call so compile time never lands in ``time_`` / ``peakmem_``.  Cold import + compile is
measured by the ``timeraw_`` benchmarks in a fresh interpreter.

``peakmem_evaluate`` must grow with the database (inputs), never with queries x database: an
Nq x Ndb float64 matrix at 200 x 10**6 would add 1.5 GiB.

The comparison classes ``EvaluateSmall`` and ``ArgsortMAP`` run the *same* 20 queries on the
same data, so their ``time_`` values compare directly; ``track_speedup_vs_argsort`` records the
ratio itself.
"""

import os
import sys
import tempfile
import time

from ._common import REPO, best_seconds, import_fasttie, sized
from .data import baselines
from .data.synthetic import make_hashing_data, words_to_bytes, words_to_pm1

ft = import_fasttie("evaluate")

METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000")
N_DB = sized(1_000_000, 2_000)  # the database of the classes that time one size


def _packed_data(n_queries, n_db, n_bits, seed=0):
    """Codes of n_bits (a multiple of 8): the first n_bits of the generator's (whole words)."""
    data = make_hashing_data(n_queries, n_db, -(-n_bits // 64) * 64, n_classes=10, flip=0.25, seed=seed)
    # wrap the generator's little-endian words as packed bytes: no (n, n_bits) bool temporary,
    # so peakmem reflects the packed inputs (8 bytes per 64 bits) plus what evaluate() allocates
    queries = ft.pack_codes(words_to_bytes(data.query_words)[:, : n_bits // 8], packed=True, n_bits=n_bits,
                            bitorder="little")
    database = ft.pack_codes(words_to_bytes(data.db_words)[:, : n_bits // 8], packed=True, n_bits=n_bits,
                             bitorder="little")
    return data, queries, database


class Evaluate:
    """Whole evaluate() (4 metrics, all threads) on 200 queries."""

    params = sized(([64, 128, 256], [100_000, 1_000_000]), ([64], [2_000]))
    param_names = ["n_bits", "n_db"]
    n_queries = sized(200, 20)
    timeout = 300

    def setup(self, n_bits, n_db):
        self.data, self.queries, self.database = _packed_data(self.n_queries, n_db, n_bits)
        self._run()  # warm-up: compile / load from cache outside the timing

    def _run(self, n_threads=None):
        return ft.evaluate(
            self.queries, self.database, self.data.query_labels, self.data.db_labels,
            metrics=METRICS, n_threads=n_threads,
        )

    def time_evaluate(self, n_bits, n_db):
        self._run()

    def peakmem_evaluate(self, n_bits, n_db):
        self._run()

    def track_pairs_per_second(self, n_bits, n_db):
        t0 = time.perf_counter()
        self._run()
        return self.n_queries * n_db / (time.perf_counter() - t0)

    track_pairs_per_second.unit = "pairs/s"


class EvaluateLarge:
    """The histogram pass where the database outgrows the cache: 32 and 64 bits at 10**6 and
    2 x 10**7 codes, 64 queries, one thread, on each pass (``FASTTIE_KERNEL``: the bit-sliced
    one where the CPU has AVX-512, the portable one everywhere); the ratio to the portable pass
    at 10**6 is what the query blocking and the bit-sliced counting change."""

    params = sized(([32, 64], [1_000_000, 20_000_000], ["auto", "portable"]), ([32], [2_000], ["auto", "portable"]))
    param_names = ["n_bits", "n_db", "kernel"]
    n_queries = sized(64, 16)
    timeout = 900

    def setup(self, n_bits, n_db, kernel):
        os.environ["FASTTIE_KERNEL"] = kernel
        self.data, self.queries, self.database = _packed_data(self.n_queries, n_db, n_bits)
        self._run()

    def teardown(self, n_bits, n_db, kernel):
        os.environ.pop("FASTTIE_KERNEL", None)

    def _run(self):
        return ft.evaluate(self.queries, self.database, self.data.query_labels, self.data.db_labels,
                           metrics=METRICS, n_threads=1)

    def time_evaluate(self, n_bits, n_db, kernel):
        self._run()

    def peakmem_evaluate(self, n_bits, n_db, kernel):
        self._run()

    def track_pairs_per_second(self, n_bits, n_db, kernel):
        t0 = time.perf_counter()
        self._run()
        return self.n_queries * n_db / (time.perf_counter() - t0)

    track_pairs_per_second.unit = "pairs/s"


class EvaluateMultihot:
    """Multi-hot relevance (grade = labels shared, the pass every CPU runs for it) at 64 bits,
    10**6 database codes, 64 queries, one thread: 24 labels, each item its class's label and
    every other one with probability 0.05."""

    n_queries, n_db, n_labels = sized(64, 16), N_DB, 24

    def setup(self):
        import numpy as np

        self.data, self.queries, self.database = _packed_data(self.n_queries, self.n_db, 64)
        rng = np.random.default_rng(1)
        self.query_labels, self.db_labels = (
            (rng.random((len(ids), self.n_labels)) < 0.05) | (np.arange(self.n_labels) == ids[:, None])
            for ids in (self.data.query_labels, self.data.db_labels))
        self._run()

    def _run(self):
        return ft.evaluate(self.queries, self.database, self.query_labels, self.db_labels, metrics=METRICS,
                           n_threads=1)

    def time_evaluate(self):
        self._run()

    def track_pairs_per_second(self):
        t0 = time.perf_counter()
        self._run()
        return self.n_queries * self.n_db / (time.perf_counter() - t0)

    track_pairs_per_second.unit = "pairs/s"


class EvaluateThreads:
    """Thread scaling at 64 bits, 10**6 database codes."""

    params = [1, 2]
    param_names = ["n_threads"]
    n_queries = sized(200, 20)
    n_db = N_DB
    timeout = 300

    def setup(self, n_threads):
        self.data, self.queries, self.database = _packed_data(self.n_queries, self.n_db, 64)
        self._run(n_threads)

    def _run(self, n_threads):
        return ft.evaluate(
            self.queries, self.database, self.data.query_labels, self.data.db_labels,
            metrics=METRICS, n_threads=n_threads,
        )

    def time_evaluate(self, n_threads):
        self._run(n_threads)


class EvaluateQueries:
    """peakmem must not grow with n_queries x n_db (64 bits, 10**6 database codes)."""

    params = sized([100, 1000], [20])
    param_names = ["n_queries"]
    n_db = N_DB
    timeout = 300

    def setup(self, n_queries):
        self.data, self.queries, self.database = _packed_data(n_queries, self.n_db, 64)
        self._run()

    def _run(self):
        return ft.evaluate(
            self.queries, self.database, self.data.query_labels, self.data.db_labels, metrics=METRICS
        )

    def time_evaluate(self, n_queries):
        self._run()

    def peakmem_evaluate(self, n_queries):
        self._run()


class StableOverAverage:
    """ties="stable" time over ties="average" time, same call otherwise (64 bits, 200 queries):
    with cutoffs only (the bounded stable pass) and with AP of the whole list (the full pass)."""

    params = (["top", "whole"], [N_DB])
    param_names = ["metrics", "n_db"]
    n_queries = sized(200, 20)
    timeout = 300
    metric_sets = {"top": ("AP@1000", "nDCG@1000", "P@1000"), "whole": METRICS}

    def setup(self, metrics, n_db):
        self.data, self.queries, self.database = _packed_data(self.n_queries, n_db, 64)
        for ties in ("average", "stable"):
            self._run(metrics, ties)  # warm-up: compile / load from the cache

    def _run(self, metrics, ties):
        return ft.evaluate(self.queries, self.database, self.data.query_labels, self.data.db_labels,
                           metrics=self.metric_sets[metrics], ties=ties)

    def time_stable(self, metrics, n_db):
        self._run(metrics, "stable")

    def track_stable_over_average(self, metrics, n_db):
        """Best of 3 stable calls over best of 3 average calls (target <= 2)."""
        stable = best_seconds(lambda: self._run(metrics, "stable"), 3)
        return stable / best_seconds(lambda: self._run(metrics, "average"), 3)

    track_stable_over_average.unit = "ratio"


# ---------------------------------------------------------------- baselines, same 20 queries

_COMPARE_PARAMS = sized(([64, 256], [100_000, 1_000_000]), ([64], [2_000]))
_COMPARE_QUERIES = 20


class EvaluateSmall:
    """fasttie on the 20 queries that ArgsortMAP times (same data, same seed)."""

    params = _COMPARE_PARAMS
    param_names = ["n_bits", "n_db"]
    timeout = 300

    def setup(self, n_bits, n_db):
        self.data, self.queries, self.database = _packed_data(_COMPARE_QUERIES, n_db, n_bits)
        self._run()

    def _run(self):
        return ft.evaluate(
            self.queries, self.database, self.data.query_labels, self.data.db_labels, metrics=("AP@1000",)
        )

    def time_evaluate_map_at_1000(self, n_bits, n_db):
        self._run()


class ArgsortMAP:
    """Baseline: argsort-based mAP@1000 (numpy, as hashing repositories compute it)."""

    params = _COMPARE_PARAMS
    param_names = ["n_bits", "n_db"]
    timeout = 600

    def setup(self, n_bits, n_db):
        data = make_hashing_data(_COMPARE_QUERIES, n_db, n_bits, n_classes=10, flip=0.25, seed=0)
        self.data = data
        self.q = words_to_pm1(data.query_words, n_bits)
        self.db = words_to_pm1(data.db_words, n_bits)

    def _run(self):
        return baselines.argsort_mAP_at_k(
            self.q, self.db, self.data.query_labels, self.data.db_labels, k=1000, chunk=_COMPARE_QUERIES
        )

    def time_argsort_map_at_1000(self, n_bits, n_db):
        self._run()

    def track_speedup_vs_argsort(self, n_bits, n_db):
        """argsort mAP@1000 time / fasttie AP@1000 time on the same 20 queries (best of 3)."""
        n_bits = self.q.shape[1]
        queries = ft.pack_codes(words_to_bytes(self.data.query_words), packed=True, n_bits=n_bits, bitorder="little")
        database = ft.pack_codes(words_to_bytes(self.data.db_words), packed=True, n_bits=n_bits, bitorder="little")

        def fasttie_call():
            ft.evaluate(queries, database, self.data.query_labels, self.data.db_labels, metrics=("AP@1000",))

        fasttie_call()  # warm-up
        t_ft = best_seconds(fasttie_call, 3)
        t_base = best_seconds(self._run, 2)
        return t_base / t_ft

    track_speedup_vs_argsort.unit = "x"


class FaissTop1000:
    """Baseline: faiss IndexBinaryFlat top-1000 search (no metrics), 200 queries, all threads."""

    params = ([64, 256], [N_DB])
    param_names = ["n_bits", "n_db"]
    n_queries = sized(200, 20)
    timeout = 300

    def setup(self, n_bits, n_db):
        try:
            import faiss  # noqa: F401
        except ImportError:
            raise NotImplementedError("faiss-cpu not installed") from None
        data = make_hashing_data(self.n_queries, n_db, n_bits, n_classes=10, flip=0.25, seed=0)
        self.index = baselines.faiss_build(words_to_bytes(data.db_words), n_bits)
        self.q = words_to_bytes(data.query_words)
        baselines.faiss_search(self.index, self.q[:20], 1000, os.cpu_count())

    def time_search_top_1000(self, n_bits, n_db):
        baselines.faiss_search(self.index, self.q, 1000, os.cpu_count())


# ---------------------------------------------------------------- cold import + compile

_RAW_CODE = """
import sys
sys.path.append({repo!r})  # the checkout only where fasttie is not installed (asv: the commit under test)
import numpy as np
import fasttie as ft
rng = np.random.default_rng(0)
q = rng.integers(0, 2, size=(10, 64)).astype(bool)
db = rng.integers(0, 2, size=(1000, 64)).astype(bool)
ft.evaluate(q, db, rng.integers(0, 10, 10), rng.integers(0, 10, 1000),
            metrics=("AP", "AP@1000", "nDCG@1000", "P@1000"))
"""

_WARM_CACHE_DIR = os.path.join(tempfile.gettempdir(), "fasttie_asv_numba_cache")


class ImportAndFirstCall:
    """Fresh interpreter: import fasttie + first evaluate on tiny data.

    ``timeraw_import_and_first_call``: empty NUMBA_CACHE_DIR (cold compile every time);
    ``timeraw_import_and_first_call_cached``: a cache dir filled in ``setup`` (load from cache).
    """

    timeout = 300
    repeat = (1, 3, 60.0)  # compiles are slow: few samples

    def setup(self):
        import subprocess

        os.makedirs(_WARM_CACHE_DIR, exist_ok=True)
        env = dict(os.environ, NUMBA_CACHE_DIR=_WARM_CACHE_DIR)
        subprocess.run([sys.executable, "-c", _RAW_CODE.format(repo=str(REPO))], env=env, check=True)

    def timeraw_import_and_first_call(self):
        # (stmt, setup): the setup (not timed) points numba at a new, empty cache dir that the
        # child removes at exit; asv calls this method once per sample, so every sample is cold
        cache = tempfile.mkdtemp(prefix="fasttie_asv_cold_")
        setup = (
            f"import os, atexit, shutil\nos.environ['NUMBA_CACHE_DIR'] = {cache!r}\n"
            f"atexit.register(shutil.rmtree, {cache!r}, True)\n"
        )
        return _RAW_CODE.format(repo=str(REPO)), setup

    def timeraw_import_and_first_call_cached(self):
        setup = f"import os\nos.environ['NUMBA_CACHE_DIR'] = {_WARM_CACHE_DIR!r}\n"
        return _RAW_CODE.format(repo=str(REPO)), setup

    def timeraw_import_only(self):
        return f"import sys\nsys.path.append({str(REPO)!r})\nimport fasttie\n"
