"""fasttie: exact tie-aware retrieval metrics for Hamming ranking, compiled with Numba.

Importing fasttie compiles nothing: kernels compile (or load from the cache) on first use.
"""

from . import datasets, trec
from .codes import PackedCodes, ShardedCodes, pack_codes, unpack_codes
from .diversity import alpha_ndcg, diversity_evaluate
from .errors import InputError, InputTypeError
from .lists.lambdarank import lambdarank
from .hamming import TieStats, evaluate, knn_recall, merge, search, tie_stats
from .metrics import Metric, parse_metrics
from .plots import plot_curves
from .lists.facade import rank_evaluate
from .hamming.rescore import RescoreSweep, min_oversampling, rescore_evaluate
from .result import Result
from .report.significance import Comparison, compare

__version__ = "0.1.0"

__all__ = [
    "PackedCodes", "ShardedCodes", "pack_codes", "unpack_codes", "evaluate", "search", "rank_evaluate", "Result", "Metric",
    "parse_metrics", "lambdarank", "alpha_ndcg", "diversity_evaluate", "compare", "Comparison", "plot_curves",
    "datasets", "trec", "tie_stats", "TieStats", "merge", "knn_recall", "rescore_evaluate", "RescoreSweep", "min_oversampling", "InputError", "InputTypeError",
    "__version__",
]
