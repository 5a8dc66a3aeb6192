"""A cold first call compiles on two cores: a helper process compiles one set of its kernels.

numba compiles one function at a time per process. On an empty cache a front door compiles
independent sets of kernels one after the other: :func:`fasttie.evaluate` its histogram pass
(which depends on the code width and the relevance kind) and the tie walk that finalizes the
counts (which depends on the metrics and options), about 35 % and 60 % of its cold call;
:func:`fasttie.trec.evaluate` of files its readers and join, the trec_eval tie order's keys,
then the walk over the ranked lists, more than half of its cold call (dicts, as
:mod:`fasttie.compat.pytrec_eval` passes them, join in Python: nothing to compile meanwhile). Where the walk's kernel is not
cached and a second CPU is usable, a helper process compiles it and caches it meanwhile, by
evaluating made-up data with the same metrics and options (the same kernel variant and
signature): :func:`hamming_walk_in_helper` finalizes made-up counts of the same shape and
database size with :meth:`fasttie.TieStats.finalize` (the walk, which the walk's driver calls
through its address, ERR and the spread; not the driver, which the call compiles meanwhile by
calling it on no queries: ``engine.WALK_DRIVER``), :func:`ranked_walk_in_helper` ranks a
made-up list with :func:`fasttie.lists.facade.rank_lists` as the TREC door does, up to the
walk's driver (:data:`CALLER_ONLY`), while the call compiles its readers, join and tie keys,
then the finalizers the driver calls through their addresses; the call waits for the helper
before its walk and loads the driver from the cache. ``ties="stable"`` (the full
pass, and the pass over the items near enough to reach the cutoffs) runs two kernels, the scans
and the finish, which the two passes share: the call compiles the finish, the larger, by
finishing a made-up scan, while :func:`stable_scan_in_helper` scans made-up codes of the same
relevance kind and width (the near pass: their counts first); the call then waits for the helper,
once the finish is compiled (nothing else is left to compile here), and loads the rest. The walk
over ranked lists calls its finalizers through their addresses (:mod:`fasttie._kernels.address`):
:func:`callee_addresses` compiles them in a helper while the call compiles the walk's driver (by
calling it on no queries), then the call waits and loads them; so do alpha-nDCG's drivers (their
sums) and LambdaRank's per-query kernel (its pair rows, while the call compiles the ranking, the
ideal DCG and the layout). These walks sort through the radix sort's address too, which the helper
compiles with the callees (``trec.evaluate``'s: with the driver, ``beside_caller`` of
:func:`callee_addresses`). Nothing else changes: the values are this process's.

The helper is a fork of this process on Linux where no other Python thread works (fasttie's idle
pool aside; it compiles at once: imports and numba's CPU target are set up), else a new
interpreter, which first imports fasttie (:func:`_launch`). A helper that fails or is not done after :data:`WAIT_SECONDS` changes
nothing but the time (this process then compiles the walk itself). ``FASTTIE_COMPILE_HELPER=0``
turns helpers off, ``FASTTIE_COMPILE_HELPER=spawn`` starts them as new interpreters; they never
start where caching is off, with ``n_threads=1``, on one usable CPU, or where ``sys.executable``
is no interpreter (a bundled application).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

from .._kernels import _jit
from .._kernels.address import address_of
from .._kernels.cached import dispatcher_cached
from ..parallel import available_threads, only_idle_workers_beside

__all__ = ["CallerCompiled", "Helper", "callee_addresses", "callees_in_helper", "hamming_walk_in_helper",
           "ranked_walk_in_helper", "stable_scan_in_helper", "start_helper", "HELPER_ENV", "WAIT_SECONDS"]

HELPER_ENV = "FASTTIE_COMPILE_HELPER"
WAIT_SECONDS = 300.0  # a helper compiles for seconds; past this something is wrong: compile here
CALLER_ONLY = False  # set in the helper of ranked_walk_in_helper: compile the walk's driver, then stop


class CallerCompiled(Exception):
    """Raised by :func:`callee_addresses` where :data:`CALLER_ONLY` is set, once the caller is
    compiled: the helper's made-up call stops there."""

_FINALIZE_CALL = """
import numpy as np
from fasttie.hamming import engine
from fasttie.hamming.stats import TieStats
engine.WALK_DRIVER = False  # the walk's driver compiles in the call, the walk (called through its address) here
counts = np.zeros((2, {n_bits} + 1, {n_grades}), dtype=np.int64)
counts[:, 0, 0] = {n_db} - ({n_grades} - 1)  # the database's size picks the kernel variant (a cutoff inside it)
counts[:, 1, 1:] = 1  # an item of every grade
TieStats(counts, {n_bits}, {relevance!r}).finalize({metrics!r}, n_threads=1, **{options!r})
"""

_STABLE_SCAN_CALL = """
from fasttie.hamming.engine import compile_stable_scan
compile_stable_scan({relevance!r}, {n_bits}, near={near})
"""

_RANK_CALL = """
import numpy as np
from fasttie.finalize import cold_start
from fasttie.lists.facade import rank_lists
from fasttie.lists.options import ListOptions
n = {rows}
grades = np.arange(n, dtype=np.float64) % 3  # grades 0, 1 and 2, ties of three scores each
scores = np.repeat(np.arange(n // 3 + 1, dtype=np.float64), 3)[:n]
keys = np.arange(n, dtype=np.int64) if {keyed} else None
cold_start.CALLER_ONLY = True  # the walk's driver; the call compiles its finalizers meanwhile
try:
    rank_lists(grades, scores, np.array([n, n]) // 2, qid=None, metrics={metrics!r}, doc_ids=keys,
               unretrieved=[np.array([1.0]), np.array([2.0])], judged=np.arange(n) % 5 != 4,
               pooled=np.ones(n, dtype=bool), tie_keys=True, n_threads=1, options=ListOptions(**{options!r}))
except cold_start.CallerCompiled:
    pass
"""
_MOST_ROWS = 200_000  # a made-up list longer than the deepest cutoff, up to this

_ADDRESS_CALL = """
from fasttie._kernels.address import address_of
from fasttie._kernels.cached import kernel_at
for path in {paths!r}:
    address_of(kernel_at(path))
"""


class Helper:
    """A helper process compiling kernels into the cache; :meth:`wait` once before using them."""

    def __init__(self, process: subprocess.Popen):
        self._process = process
        self._lock = threading.Lock()
        self._done = False

    def wait(self) -> None:
        """Block until the helper has finished (every thread that calls it: the first waits, the
        others find it done); past :data:`WAIT_SECONDS` stop it and go on (this process compiles)."""
        with self._lock:
            if self._done:
                return
            try:
                self._process.wait(timeout=WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._done = True

    @property
    def returncode(self) -> int | None:
        """The helper's exit status (0: its kernels are cached), None while it runs."""
        return self._process.poll()


def start_helper(code: str, n_threads: int | None = None) -> Helper | None:
    """Run ``code`` in a helper Python process where that can help a cold first call.

    Parameters
    ----------
    code : str
        Python source that makes the calls whose kernels the helper should compile and cache.
    n_threads : int or None
        The call's ``n_threads``: 1 keeps the call on one CPU (no helper).

    Returns
    -------
    Helper or None
        None where it would not help or is not wanted: caching off, fewer than two usable CPUs,
        ``n_threads=1``, ``FASTTIE_COMPILE_HELPER=0``, inside a helper, in a bundled application
        (``sys.frozen``) or an embedded Python without an interpreter to start, or a process
        that could not start.
    """
    if not _wanted(n_threads):
        return None
    process = _launch(code)
    return None if process is None else Helper(process)


def _launch(code: str):
    """The helper's process, or None where none could start. On Linux, where no other Python
    thread runs (fasttie's idle pool aside), a fork of this process: it starts compiling at once,
    with fasttie, numba and numba's CPU target already set up (a new interpreter spends 0.5-1 s on
    those first, which the call's half of the compile does not wait for, but the helper's does).
    ``FASTTIE_COMPILE_HELPER=spawn``, another platform or another thread (which might hold a lock
    the fork would need, numba's compiler lock among them): a new interpreter (``sys.executable -c``)."""
    forkable = sys.platform.startswith("linux") and only_idle_workers_beside(threading.current_thread())
    if forkable and os.environ.get(HELPER_ENV) != "spawn":
        try:
            return _Forked(code)
        except OSError:  # no fork now (a process or memory limit): a new interpreter, or none
            pass
    env = {**os.environ, HELPER_ENV: "0"}  # a helper starts no helpers of its own
    try:
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    except OSError:  # no interpreter to start (an embedded Python): compile here
        return None


class _Forked:
    """A helper forked from this process, with what :class:`Helper` uses of :class:`subprocess.Popen`
    (``poll``, ``wait``, ``kill``, ``returncode``)."""

    def __init__(self, code: str):
        from numba.core.registry import cpu_target

        # numba's CPU target (0.2-0.4 s, this process needs it too) set up before the fork: the
        # helper inherits it
        cpu_target.typing_context.refresh()
        cpu_target.target_context.refresh()
        self.returncode = None
        with warnings.catch_warnings():
            # Python 3.12+ warns of a fork while other OS threads run (numpy's BLAS pool, fasttie's
            # idle workers): the helper only compiles (numba, LLVM, the cache's files) and exits, it
            # calls no BLAS, and no other Python thread works (_launch), so none holds a lock it needs
            warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
            self.pid = os.fork()
        if self.pid == 0:  # the helper: run the code, then leave without this process's exit handlers
            status = 1
            try:
                os.environ[HELPER_ENV] = "0"  # a helper starts no helpers of its own
                logging.disable(logging.CRITICAL)  # nor writes to this process's log handlers (a log file)
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                exec(compile(code, "<fasttie compile helper>", "exec"), {"__name__": "__fasttie_helper__"})
                status = 0
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else 1
            finally:
                os._exit(status)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("fasttie compile helper", timeout)
            time.sleep(0.002)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)

    def __del__(self):  # a helper never waited for (the call failed before): reap it if done
        try:
            self.poll()
        except OSError:
            pass


def hamming_walk_in_helper(kernel, metrics, *, options, n_db, n_bits, n_grades, relevance, n_threads) -> Helper | None:
    """Start compiling the tie walk's kernels of one :func:`fasttie.evaluate` call in a helper,
    where ``kernel`` (the walk's variant that the call runs) is not cached.

    Parameters
    ----------
    kernel : numba dispatcher
        The tie walk's kernel the call's plan picks (only its cache is read here).
    metrics : list of str
        The metric names asked (canonical).
    options : dict
        ``ties``, ``ap_denominator``, ``gain``, ``empty``, ``curves``, ``spread`` of the call, as
        :meth:`fasttie.TieStats.finalize` takes them.
    n_db, n_bits, n_grades : int
        Database size, code width and grades of the counts (the plan and the signature depend on them).
    relevance : str
        The relevance kind of the counts.
    n_threads : int or None
        The call's ``n_threads``.

    Returns
    -------
    Helper or None
    """
    # compiled or loaded in this process already (or a test's wrapper of it), or made-up counts
    # impossible: nothing to do; the cache's index is read last (a file read per call, not for
    # every call of a warm process)
    if getattr(kernel, "signatures", True) or n_db < n_grades - 1 or not _wanted(n_threads) or dispatcher_cached(kernel) is not False:
        return None
    code = _FINALIZE_CALL.format(n_bits=int(n_bits), n_grades=int(n_grades), n_db=int(n_db), relevance=relevance,
                                 metrics=list(metrics), options=options)
    return start_helper(code, n_threads)


def stable_scan_in_helper(scan, finish, near, *, relevance, n_bits, n_threads) -> Helper | None:
    """Start compiling the scan kernel of the stable pass of one :func:`fasttie.evaluate` call
    (``ties="stable"``) in a helper, where neither it nor ``finish`` (the variant of the finish
    kernel the call runs) is cached: the call compiles the finish meanwhile (the larger of the
    two, so the call's own compile is the longer one and the helper is done before it).

    Parameters
    ----------
    scan, finish : numba dispatchers
        The scan kernel and the finish kernel the call runs (only their caches are read here).
    near : bool
        The scan is the near pass's (:func:`fasttie.hamming.engine.compile_stable_scan`): the
        helper compiles the counting pass before it.
    relevance : str
        The relevance kind ("class", "multihot" or "listed"): the scan's signature.
    n_bits : int
        The code width (the counting pass depends on it).
    n_threads : int or None
        The call's ``n_threads``.

    Returns
    -------
    Helper or None
    """
    kernels = (scan, finish)
    if any(getattr(kernel, "signatures", True) for kernel in kernels) or not _wanted(n_threads):
        return None
    if any(dispatcher_cached(kernel) is not False for kernel in kernels):
        return None
    return start_helper(_STABLE_SCAN_CALL.format(relevance=relevance, n_bits=int(n_bits), near=bool(near)), n_threads)


def _wanted(n_threads):
    """Whether a helper may start: caching on, two usable CPUs and more than one thread allowed,
    helpers not turned off (nor this a helper), and an interpreter to start (not a bundled
    application, whose ``sys.executable`` is the application, nor an embedded Python)."""
    if not _jit.CACHE or n_threads == 1 or os.environ.get(HELPER_ENV, "").strip() == "0":
        return False
    if getattr(sys, "frozen", False) or not sys.executable:
        return False
    return available_threads() >= 2


def ranked_walk_in_helper(driver, metrics, deepest, *, options, keyed, n_threads) -> Helper | None:
    """Start compiling the driver of the walk over ranked lists of one :func:`fasttie.trec.evaluate`
    call in a helper, where it is not cached: the call compiles its readers, join and tie keys
    meanwhile, then the finalizers that the driver calls through their addresses (pass the helper
    to :func:`callee_addresses` as ``caller_helper``).

    Parameters
    ----------
    driver : numba dispatcher
        The walk's driver for the call's tie mode (only its cache is read here).
    metrics : list of str
        The ranking metrics asked.
    deepest : int
        The deepest cutoff among them (0: none): the made-up lists are longer.
    options : dict
        The call's :class:`fasttie.lists.options.ListOptions` as keywords (``keywords()``; no
        score floor: the TREC door sets none).
    keyed : bool
        Whether the call passes tie-break keys (trec_eval's and ndeval's orders).
    n_threads : int or None
        The call's ``n_threads``.

    Returns
    -------
    Helper or None
    """
    if getattr(driver, "signatures", True) or not _wanted(n_threads) or dispatcher_cached(driver) is not False:
        return None
    rows = 2 * min(max(int(deepest), 3) + 3, _MOST_ROWS)
    code = _RANK_CALL.format(rows=rows, keyed=bool(keyed), metrics=list(metrics), options=options)
    return start_helper(code, n_threads)


def callees_in_helper(callees, n_threads) -> Helper | None:
    """Start compiling kernels called through their addresses (:mod:`fasttie._kernels.address`) in
    a helper, those of them neither compiled in this process nor cached: their caller compiles
    here meanwhile, without them (a kernel that another door compiled here, the radix sort of the
    ranked lists, say, leaves the others to the helper).

    Parameters
    ----------
    callees : sequence of numba dispatchers
        Declared kernels of ``fasttie._kernels`` (:func:`fasttie._kernels.address.declare`).
    n_threads : int or None
        The call's ``n_threads``.

    Returns
    -------
    Helper or None
    """
    if not callees or not _wanted(n_threads):
        return None
    # the cache's index is read only for kernels not compiled here (a file read per call of a cold door)
    cold = [kernel for kernel in callees if not getattr(kernel, "signatures", True) and dispatcher_cached(kernel) is False]
    if not cold:
        return None
    paths = [f"{kernel.py_func.__module__.rsplit('.', 1)[1]}.{kernel.py_func.__name__}" for kernel in cold]
    return start_helper(_ADDRESS_CALL.format(paths=paths), n_threads)


def callee_addresses(callees, n_threads, compile_caller, caller_helper=None, beside_caller=()) -> list:
    """The addresses of the kernels a caller calls through their addresses, as the caller takes
    them. On a cold cache the callees compile in a helper (:func:`callees_in_helper`) while
    ``compile_caller()`` compiles the caller here (by calling it on no queries), or here while
    ``caller_helper`` compiles the caller and those ``beside_caller`` (:func:`ranked_walk_in_helper`).

    Parameters
    ----------
    callees : sequence of numba dispatchers or None
        Declared kernels; None where the caller takes address 0 (a callee not asked for).
    n_threads : int or None
        The call's ``n_threads``.
    compile_caller : callable
        Compiles the caller; called only where a helper compiles the callees, or in the helper of
        :func:`ranked_walk_in_helper` (:data:`CALLER_ONLY`), which then raises
        :class:`CallerCompiled`.
    caller_helper : Helper or None
        A helper compiling the caller: waited for once the callees are compiled here.
    beside_caller : sequence of numba dispatchers
        Callees that a helper compiling the caller compiles too (after it), not this process.

    Returns
    -------
    list of numpy.uint64
    """
    if CALLER_ONLY:
        compile_caller()
        for kernel in beside_caller:
            address_of(kernel)
        raise CallerCompiled
    declared = [kernel for kernel in callees if kernel is not None]
    helper = callees_in_helper(declared, n_threads) if caller_helper is None else None
    if helper is not None:
        compile_caller()
        helper.wait()
    later = () if caller_helper is None else beside_caller  # the caller's helper compiles those
    addresses = {kernel: address_of(kernel) for kernel in declared if kernel not in later}
    if caller_helper is not None:
        caller_helper.wait()
    return [np.uint64(0 if kernel is None else addresses.get(kernel) or address_of(kernel)) for kernel in callees]
