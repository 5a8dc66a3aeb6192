"""Hamming ranking: binary codes ranked by Hamming distance, scored tie-aware.

One concept per module, each layer importing only the ones below it:

==============  ==============================================================================
``facade``      :func:`evaluate` and :func:`search`: validation, packing, the options resolved
                once, the back end chosen
``options``     :class:`HammingOptions`: the door's options, checked once, read by every back end
``in_memory``   the back end of a database in memory: the CPU passes, the progress bar, the
                helper, the spread
``knn_recall``  :func:`knn_recall`: recall@k of an approximate index against the exact k-NN
``stats``       :class:`TieStats`, :func:`tie_stats`, :func:`merge`: the mergeable counts (the
                only place that builds them)
``gpu``         the passes on an NVIDIA GPU (numba-cuda), finalized by the engine
``dask_tasks``  a sharded database's Dask tasks (:mod:`fasttie.dask`'s faces)
``collective``  a database sharded over the ranks of a group (:mod:`fasttie.torch`'s face)
``streamed``    a database in files (memory-mapped, sharded) counted tile by tile, then finalized
``engine``      the CPU passes over the database by query blocks, counts -> metric values
``stable``      a stable pass over a database in parts, written once over a transport (Dask,
                torch.distributed, streamed tiles; GPU chunks use its rank bases)
``spreads``     ``spread=True``'s callbacks on the counts (standard deviations, extremes)
``rescore``     :func:`fasttie.rescore_evaluate`: Hamming candidates rescored by float vectors
==============  ==============================================================================
"""

from .facade import evaluate, search
from .knn_recall import knn_recall
from .stats import TieStats, merge, tie_stats

__all__ = ["TieStats", "evaluate", "knn_recall", "merge", "search", "tie_stats"]
