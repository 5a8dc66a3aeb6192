"""The one place where fasttie runs work in parallel: blocks of queries on a thread pool.

Every kernel is serial and releases the GIL (``nogil``); a driver kernel takes a range of
queries ``[start, stop)`` and writes only their rows of preallocated outputs. This module cuts
the queries into blocks and runs the kernel on them from a small pool of Python threads, the
calling thread included. So:

* each query is computed by one call of the same serial code: results are bitwise identical for
  any thread count, by construction;
* kernels keep no state between calls, so several Python threads (Dask worker threads, a web
  server) may call fasttie at once; there is no numba threading layer to oversubscribe or to
  abort the process on concurrent use;
* each kernel is compiled once, serially (a ``prange`` driver costs about three times as much
  to compile as the same serial loop).

Threads per call: ``n_threads`` of the call, else ``FASTTIE_NUM_THREADS``, else the CPUs this
process may run on. Calls with little work run on the calling thread alone.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .errors import InputError, InputTypeError

__all__ = ["available_threads", "only_idle_workers_beside", "resolve_threads", "run_blocks"]

SMALL_WORK = 1 << 20  # units of work (code pairs, ranked rows x 16) below which one thread is faster
MAX_THREADS = 1024
_BLOCKS_PER_THREAD = 4  # several blocks per thread even out uneven queries

_pool = None
_pool_lock = threading.Lock()
_workers: weakref.WeakSet = weakref.WeakSet()  # the pool's threads


def available_threads() -> int:
    """Default threads per call: ``FASTTIE_NUM_THREADS`` if set, else the usable CPUs."""
    text = os.environ.get("FASTTIE_NUM_THREADS", "").strip()
    if text:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= MAX_THREADS:
            raise InputError(f"FASTTIE_NUM_THREADS must be an integer in [1, {MAX_THREADS}], got {text!r}")
        return value
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_threads(n_threads: int | None, work: int) -> int:
    """Threads for one call: the caller's ``n_threads`` (validated), else one thread for small
    calls (benchmark loops, tests), where waking threads costs more than it saves, else
    :func:`available_threads`. Results do not depend on it."""
    if n_threads is None:
        return 1 if work < SMALL_WORK else available_threads()
    if isinstance(n_threads, (bool, np.bool_)) or not isinstance(n_threads, (int, np.integer)):
        raise InputTypeError(f"{{n_threads}} must be an integer or None, got {n_threads!r}", argument="n_threads")
    if not 1 <= n_threads <= MAX_THREADS:
        raise InputError(f"{{n_threads}} must be in [1, {MAX_THREADS}], got {n_threads}", argument="n_threads")
    return int(n_threads)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=MAX_THREADS, thread_name_prefix="fasttie",
                                       initializer=lambda: _workers.add(threading.current_thread()))
        return _pool


def only_idle_workers_beside(thread: threading.Thread) -> bool:
    """Whether every Python thread but ``thread`` is a worker of fasttie's pool, then idle: only
    :func:`run_blocks` gives them work, and it returns once they are done.

    Parameters
    ----------
    thread : threading.Thread
        The thread asking (outside :func:`run_blocks`).

    Returns
    -------
    bool
    """
    return all(other is thread or other in _workers for other in threading.enumerate())


def run_blocks(kernel_call: Callable[[int, int], Any], n_items: int, n_threads: int, *, granule: int = 1,
               blocks_per_thread: int = _BLOCKS_PER_THREAD) -> None:
    """Call ``kernel_call(start, stop)`` on consecutive blocks that cover ``range(n_items)``.

    Parameters
    ----------
    kernel_call : callable
        Runs a serial ``nogil`` kernel on items ``start..stop-1``; it must write only their rows.
    n_items : int
        Number of items (queries, rows).
    n_threads : int
        Threads working at once, the calling thread included (see :func:`resolve_threads`).
    granule : int, default 1
        Block starts are multiples of it (the histogram kernel takes queries in pairs).
    blocks_per_thread : int, default 4
        Blocks per thread: several even out items of uneven cost; one suits items of equal cost
        whose block reads a large input once (the histogram pass reads the database once per
        block of queries).

    Raises
    ------
    Exception
        The first exception a block raised, after every started block has finished.
    """
    if n_items <= 0:
        return
    n_blocks = min(math.ceil(n_items / granule), n_threads * blocks_per_thread)
    if n_threads <= 1 or n_blocks <= 1:
        kernel_call(0, n_items)
        return
    size = math.ceil(n_items / n_blocks / granule) * granule
    blocks = iter([(lo, min(lo + size, n_items)) for lo in range(0, n_items, size)])
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                block = next(blocks, None)
            if block is None:
                return
            kernel_call(*block)

    helpers = [_executor().submit(work) for _ in range(min(n_threads, n_blocks) - 1)]
    error = None
    try:
        work()
    except BaseException as exc:  # drain the blocks so the helpers stop, then re-raise
        error = exc
        with lock:
            for _ in blocks:
                pass
    for future in helpers:
        exc = future.exception()
        if exc is not None and error is None:
            error = exc
    if error is not None:
        raise error
