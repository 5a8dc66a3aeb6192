"""The tie arrays both front doors fill for the finalizer (:func:`.finalize.finalize_ties`).

A query's ties in rank order are five arrays: items n, relevant items r, judged non-relevant
items u (int64), grade sum and gain sum (float64). Hamming buckets (:mod:`.hamming_ties`) and
runs of equal scores (:mod:`.score_ties`) allocate them here, so the layout lives in one place.
"""

import numpy as np

from ._jit import jit
from .filled import filled


@jit(inline="always")
def empty_ties(size):
    """Zeroed tie arrays (n, r, u, grade sum, gain sum) for at most ``size`` ties."""
    tie_n = filled(np.empty(size, dtype=np.int64), 0)
    tie_r = filled(np.empty(size, dtype=np.int64), 0)
    tie_u = filled(np.empty(size, dtype=np.int64), 0)
    tie_s = filled(np.empty(size, dtype=np.float64), 0.0)
    tie_g = filled(np.empty(size, dtype=np.float64), 0.0)
    return tie_n, tie_r, tie_u, tie_s, tie_g
