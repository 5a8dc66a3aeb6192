"""fasttie: exact tie-aware retrieval metrics for Hamming ranking, compiled with Numba.

Importing fasttie compiles nothing: kernels compile (or load from the cache) on first use.
"""

from . import datasets, trec
from .codes import PackedCodes, pack_codes, unpack_codes
from .diversity import alpha_ndcg, diversity_evaluate
from .errors import InputError, InputTypeError
from .significance import Comparison, compare
from .hashing import evaluate, search
from .lambdarank import lambdarank
from .metrics import Metric, parse_metrics
from .result import Result
from .plots import plot_curves
from .ranking import rank_evaluate
from .tie_stats import TieStats, merge, tie_stats

__version__ = "0.1.0"

__all__ = [
    "PackedCodes", "pack_codes", "unpack_codes", "evaluate", "search", "rank_evaluate", "Result", "Metric",
    "parse_metrics", "lambdarank", "alpha_ndcg", "diversity_evaluate", "compare", "Comparison", "plot_curves",
    "datasets", "trec", "tie_stats", "TieStats", "merge", "InputError", "InputTypeError", "__version__",
]
