"""asv benchmarks for fasttie.trec.evaluate() (parse + evaluate) and pytrec_eval on the same files.

Data: ``write_files`` of data/trec_files.py (seeded), written to a temporary folder in
``setup``: n_queries queries x 1,000 retrieved documents, graded qrels 0-3 for 100 of them plus
30 judged documents the run misses, 2-decimal scores (about 3 in 4 documents tied).
Measures: trec_eval's default set plus nDCG@10 (``SHARED`` there: what pytrec_eval also
computes), ties="trec". ``setup`` makes one warm-up call, so compile / cache load never lands in
``time_`` / ``peakmem_``.

``PytrecEval`` (skipped when pytrec_eval is not importable) times parse_qrel + parse_run +
RelevanceEvaluator.evaluate + means on the same files; ``track_speedup_vs_pytrec_eval`` records
pytrec_eval time / fasttie time (issue 12's target: >= 5x). ``python scripts/bench_trec_eval.py``
runs the full 10,000-query comparison and the ``fasttie trec`` command line.
"""

import shutil
import tempfile
from pathlib import Path

from ._common import best_seconds, import_fasttie, sized
from .data.trec_files import SHARED, pytrec_table, write_files

ft = import_fasttie("trec")

N_DOCS, N_JUDGED, N_UNRETRIEVED = sized((1000, 100, 30), (100, 10, 3))
_PARAMS = sized([100, 1000], [5])


class _Files:
    def setup(self, n_queries):
        self.dir = Path(tempfile.mkdtemp(prefix="fasttie-asv-trec-"))
        self.qrels, self.run = self.dir / "qrels.txt", self.dir / "run.txt"
        write_files(self.qrels, self.run, n_queries, N_DOCS, N_JUDGED, N_UNRETRIEVED)
        self._fasttie()  # warm-up: compile / cache load and page cache outside the timing

    def teardown(self, n_queries):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _fasttie(self):
        return ft.trec.evaluate(self.qrels, self.run, list(SHARED), ties="trec")


class TrecEvaluate(_Files):
    """trec.evaluate from the two files, 30 measures, all threads."""

    params = _PARAMS
    param_names = ["n_queries"]
    timeout = 300

    def time_trec_evaluate(self, n_queries):
        self._fasttie()

    def peakmem_trec_evaluate(self, n_queries):
        self._fasttie()

    def track_lines_per_second(self, n_queries):
        return n_queries * N_DOCS / best_seconds(self._fasttie, 1)

    track_lines_per_second.unit = "lines/s"


class PytrecEval(_Files):
    """Baseline: pytrec_eval parse + evaluate + means on the files of TrecEvaluate."""

    params = _PARAMS
    param_names = ["n_queries"]
    timeout = 300

    def setup(self, n_queries):
        try:
            import pytrec_eval
        except ImportError:
            raise NotImplementedError("pytrec_eval not installed") from None
        self.pytrec_eval = pytrec_eval
        super().setup(n_queries)

    def _pytrec(self):
        return pytrec_table(self.pytrec_eval, self.qrels, self.run)

    def time_pytrec_eval(self, n_queries):
        self._pytrec()

    def track_speedup_vs_pytrec_eval(self, n_queries):
        """pytrec_eval time / fasttie time, best of 2 each."""
        return best_seconds(self._pytrec, 2) / best_seconds(self._fasttie, 2)

    track_speedup_vs_pytrec_eval.unit = "x"
