"""The GPU histogram kernel (numba-cuda), kept apart from the CPU kernels of ``_kernels``.
Imported only by :mod:`fasttie.cuda`, on first use: importing fasttie imports nothing CUDA.
Under ``NUMBA_ENABLE_CUDASIM=1`` the simulator runs it.

A block of threads takes QUERY_TILE queries and strides over the database; each thread computes
one item's distance (``popc`` of 64-bit words) and grade, and adds one to the query's
(distance, grade) count with an integer atomic in global memory.
"""

from numba import cuda

QUERY_TILE = 4
THREADS = 128
CLASS, MULTIHOT, NONE = 0, 1, 2  # how an item's grade is found ("listed" grades move on the CPU)


@cuda.jit
def hist_kernel(query_words, db_words, kind, query_labels, db_labels, query_label_words, db_label_words, hist):
    """hist[i, d, g] += items of grade g at distance d from query i (int64, zero on entry)."""
    n_queries = query_words.shape[0]
    n_db = db_words.shape[0]
    n_words = db_words.shape[1]
    n_label_words = db_label_words.shape[1]
    first = cuda.blockIdx.x * QUERY_TILE
    stride = cuda.gridDim.y * cuda.blockDim.x
    for t in range(QUERY_TILE):
        i = first + t
        if i < n_queries:
            j = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x
            while j < n_db:
                d = 0
                for w in range(n_words):
                    d += cuda.popc(query_words[i, w] ^ db_words[j, w])
                g = 0
                if kind == CLASS:
                    if db_labels[j] == query_labels[i]:
                        g = 1
                elif kind == MULTIHOT:
                    for w in range(n_label_words):
                        g += cuda.popc(query_label_words[i, w] & db_label_words[j, w])
                cuda.atomic.add(hist, (i, d, g), 1)
                j += stride
