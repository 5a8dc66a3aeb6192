"""The one place where jit options live.

Every kernel is serial and ``nogil``: parallelism over query blocks lives in one place,
:mod:`fasttie.parallel`, never in numba's threading layer (no ``parallel=True``).

``@jit(inline="always")`` marks small helpers with one call site in each caller: numba types
them inside the caller and builds no library of their own, which took 1.5-1.7 s off the cold
first call of evaluate, rank_evaluate and trec.evaluate. Not for helpers called from several
places in one caller, and not for the LambdaRank row loops, whose machine code came out 15 %
slower that way.

numba optimizes and generates the code of every callee again inside each kernel that links it,
whether that kernel's call runs or not. Code that few calls need (the optional sums of the
finalizers: bpref, interpolated precision, RBP, a fixed order's WAP, and the tie walk's ratios
for AP@k over the retrieved relevant items; 1.35 s of the stable door's cold first call, 0.8 s
of rank_evaluate's) goes into a second kernel made from the same source (:func:`jit_pair`),
named ``..._optional``, which the facade calls only when it is needed. The Hamming tie walk has
a third (:func:`jit_variants`), ``..._ratios``, with the ratios alone: AP@k of a Hamming ranking
needs them by default (about 1 s of that door's cold first call without the optional sums). The walk
over ranked lists links none of them: it calls its finalizers through their addresses
(:mod:`.address`), the address picking the variant, so that a helper compiles them meanwhile.

Allocations spell the dtype as ``np.<type>``: numba compiles np.empty / zeros / ones once per
spelling (``np.zeros(n)``, ``dtype=float`` and ``dtype=np.float64`` are three compiles of one
array type); tests/across/test_signatures.py checks it. Each kind of array (dtype and number of
dimensions) is such a compile, 0.1-0.3 s: the histogram passes, which need many kinds of scratch,
take it from the Python function that calls them (:func:`.bitsliced.workspace`,
:func:`.histogram.tiled_workspace`), which took 0.9 s off the bit-sliced pass's first call. np.zeros, np.ones and np.full compile
an implementation per kind of their own on top of np.empty's: kernels allocate with np.empty and
fill (:mod:`.filled`), 0.2-0.35 s off the cold first call of compat.pytrec_eval, lambdarank and
alpha_ndcg.

``@jit(_nrt=False)`` marks helpers called once per database item that take arrays and branch
(:func:`.hamming_ties.count_and_record`, the ``_next_near`` scans): numba counts references to
their array arguments around each call (inlined or not), an atomic increment and decrement per
array that its pruning pass leaves in such loops, 20-70 ns per item where the work is about 1 ns.
Without NRT they may not allocate (numba refuses to compile one that does).

``no_cfunc_wrapper``: numba otherwise builds, for every compiled function, a C-callable
wrapper (for ``cfunc`` and first-class function use) that fasttie never calls. Without it the
13 call variants cold in one process make 12 % fewer calls into LLVM and 1.3 % fewer Python
calls (cProfile counts), and took 35.9 -> 33.5 s (medians of 10 alternating runs on a noisy
machine: 3-7 %). The CPython wrapper stays: the facade and the tests call kernels from Python,
and numba's kernels without one crash the interpreter when called from Python.

A kernel that numba compiles (its cache lacks it: the first call on a machine, or after an
upgrade) takes seconds, which looks like a hang. The first such compile in a process is told
once, as an INFO message of the ``fasttie`` logger (the command line prints it on stderr; not a
warning, since nothing is wrong): a listener on numba's ``numba:compile`` event, which numba
fires only when it compiles, not when it loads a kernel from its cache.

``cache=True`` keeps the warm first call short. ``FASTTIE_NO_CACHE=1`` turns caching off
(for example to inspect the assembly of a freshly compiled kernel). No ``fastmath``: metric
accumulators must be exact float64 arithmetic.

numba tells a cached kernel is stale from its own source file only, not from the files of the
callees compiled into it: after an edit of ``finalize.py`` (a ``git pull``, an editable install)
the cached ``score_ties`` kernels would run the old ``finalize_ties``, reading arrays laid out
for the new one. So the first cached kernel of a process compares a stamp of every kernel
source (names and contents) with the one stored beside the cache, and drops fasttie's cache
files there when they differ (:func:`_drop_stale_cache`).

A cache made in one copy of an environment serves every copy of it (an image layer, a virtual
environment copied or unpacked elsewhere, a container started from an image): the stamps are of
contents, not of modification times or paths (fasttie's locators stamp each kernel's source by
its contents, as numba does from 0.6x on; numba 0.60 stamped its modification time).
Beside the package (``__pycache__``) the cache travels with the files. In ``NUMBA_CACHE_DIR``
numba would file kernels under a digest of the source folder's absolute path, so two copies of
the environment would never share it; fasttie's kernels go to a folder named after the digest of
their sources instead (:class:`_SharedCacheLocator`), the same for every copy, and a new one
after any edit. numba keys each compiled kernel by the CPU's name and features as well: another
machine of the same CPU model loads it; another model compiles again (not an error).

numba caches beside the package (``__pycache__``) or in the user's cache directory; where
neither is writable (a read-only install with a read-only home, as in containers and shared
cluster installs) it cannot cache at all and refuses to decorate. fasttie then caches in a
per-user folder of the temporary directory, or compiles without a cache, and warns once:
``NUMBA_CACHE_DIR`` picks the place explicitly.
"""

import functools
import hashlib
import logging
import os
import tempfile
import warnings

import numba
from numba.core import caching, event

CACHE = os.environ.get("FASTTIE_NO_CACHE", "") not in ("1", "true", "yes")


logger = logging.getLogger("fasttie")


class _FirstCompile(event.Listener):
    """Logs the first compile of a fasttie kernel in this process (numba:compile: cache misses only)."""

    told = False

    def on_start(self, ev):
        if _FirstCompile.told:
            return
        function = getattr(ev.data.get("dispatcher"), "py_func", None)
        if getattr(function, "__module__", "").startswith("fasttie."):
            _FirstCompile.told = True  # numba compiles under its global lock: no race
            logger.info("compiling kernels on first use (%s first; seconds, once: numba caches them, "
                        "and 'fasttie warmup' compiles every front door's ahead)",
                        f"{function.__module__.rsplit('.', 1)[-1]}.{function.__name__}")

    def on_end(self, ev):
        pass


event.register("numba:compile", _FirstCompile())


def _writable(path):
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


def _fall_back():
    """numba found no writable cache location: use a temporary one, or none. Warns once."""
    global CACHE
    try:  # gettempdir raises when no candidate directory is writable
        fallback = os.path.join(tempfile.gettempdir(), f"fasttie-numba-cache-{getattr(os, 'getuid', lambda: 'user')()}")
    except OSError:
        fallback = None
    if fallback and _writable(fallback):
        numba.config.CACHE_DIR = fallback
        where = f"caching compiled kernels in {fallback}"
    else:
        CACHE = False
        where = "compiling without a cache (every new process compiles again)"
    warnings.warn(
        "fasttie: numba cannot write its cache beside the package or in the home directory; "
        f"{where}. Set NUMBA_CACHE_DIR to a writable directory to choose where kernels are cached.",
        RuntimeWarning,
        stacklevel=4,
    )


_STAMP = "fasttie-kernel-sources.stamp"  # beside the cache files: the kernel sources they were compiled from
_checked_caches = set()


_FOLDER = os.path.dirname(os.path.abspath(__file__))


def sources_stamp(folder=_FOLDER):
    """A digest of every kernel source file's name and contents (``folder``: fasttie's kernels).

    The same for every copy of the package, whatever its path and modification times; another
    after any edit. Read once per cache folder and process: 0.3 MB, about a millisecond."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), "rb") as f:
                digest.update(name.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return digest.hexdigest()


# numba's locators: public names from numba 0.6x on, private before (0.60, the floor of pyproject.toml)
_USER_DIR = getattr(caching, "UserProvidedCacheLocator", None) or caching._UserProvidedCacheLocator
_IN_TREE = getattr(caching, "InTreeCacheLocator", None) or caching._InTreeCacheLocator


@functools.lru_cache(maxsize=None)
def _source_digest(path, size, mtime_ns):
    """sha256 of a kernel source; the key holds its size and time so that an edit while the
    process runs is read again."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class _KernelLocator:
    """What fasttie's locators share: they take fasttie's kernels only (numba's own locators
    decide for any other function), and stamp a kernel's source by its contents, as numba does
    from 0.6x on: numba 0.60 stamps the modification time, which every copy of the files changes."""

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.path.dirname(os.path.abspath(py_file)) != _FOLDER:
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self):
        status = os.stat(self._py_file)
        return _source_digest(self._py_file, status.st_size, status.st_mtime_ns)


class _SharedCacheLocator(_KernelLocator, _USER_DIR):
    """numba's locator for ``NUMBA_CACHE_DIR``, for fasttie's kernels: the folder
    ``fasttie-kernels-<digest of the kernel sources>`` in it instead of one named after the
    digest of the kernels' absolute path, so that a copy of the environment elsewhere (another
    virtual environment, container or CI job mounting the same cache) finds them."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(numba.config.CACHE_DIR, f"fasttie-kernels-{_shared_folder_digest()}")


class _InTreeLocator(_KernelLocator, _IN_TREE):
    """numba's locator of ``__pycache__`` beside the kernels, with the content stamp."""


@functools.lru_cache(maxsize=1)
def _shared_folder_digest():
    """The kernel sources' digest naming the shared folder, read once per process."""
    return sources_stamp()[:16]


class _KernelCacheImpl(caching.CompileResultCacheImpl):
    # numba's order: NUMBA_CACHE_DIR when set, else beside the source, else its fallbacks
    _locator_classes = [_SharedCacheLocator, _InTreeLocator, *caching.CompileResultCacheImpl._locator_classes]


class _KernelCache(caching.FunctionCache):
    """numba's function cache with fasttie's locators tried first."""

    _impl_class = _KernelCacheImpl


def _drop_stale_cache(cache_path, stamp):
    """Remove fasttie's cached kernels in ``cache_path`` unless they were compiled from the
    sources ``stamp`` describes (a missing stamp counts as stale), then record ``stamp``. A
    cache that cannot be written is left as it is (numba then compiles in memory)."""
    stamp_file = os.path.join(cache_path, _STAMP)
    try:
        with open(stamp_file, encoding="ascii") as f:
            if f.read().strip() == stamp:
                return False
    except OSError:
        pass
    modules = tuple(name[:-3] + "." for name in os.listdir(os.path.dirname(os.path.abspath(__file__)))
                    if name.endswith(".py"))
    try:
        for name in os.listdir(cache_path):
            if name.startswith(modules) and name.endswith((".nbi", ".nbc")):
                os.remove(os.path.join(cache_path, name))
        with open(stamp_file, "w", encoding="ascii") as f:
            f.write(stamp + "\n")
    except OSError:
        pass
    return True


def _njit(fn, options):
    dispatcher = numba.njit(**{**options, "cache": False})(fn)
    if options.get("cache"):
        try:  # what numba's enable_caching does, with fasttie's locator first
            dispatcher._cache = _KernelCache(dispatcher.py_func)
        except RuntimeError as error:
            if "no locator available" not in str(error):
                raise
            _fall_back()
            if CACHE:
                dispatcher._cache = _KernelCache(dispatcher.py_func)
    cache_path = getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)
    if options.get("cache") and cache_path and cache_path not in _checked_caches:
        _checked_caches.add(cache_path)  # once per process and cache folder, before any kernel loads from it
        _drop_stale_cache(cache_path, sources_stamp())
    return dispatcher


def jit(fn=None, **options):
    """Serial nopython kernel with the project's options."""
    if fn is None:
        return lambda f: jit(f, **options)
    return _njit(fn, {"nogil": True, "cache": CACHE, "no_cfunc_wrapper": True, **options})


# the flags of a factory with a ratios variant: (optional sums, ratios) -> the plain kernel, the
# ratios alone, and everything (:func:`jit_variants`)
WITH_RATIOS = {"": (False, False), "_ratios": (False, True), "_optional": (True, True)}


def jit_pair(make, **options):
    """(kernel, kernel_optional): :func:`jit_variants` of ``make(False)`` and ``make(True)``, a
    function a factory makes once per value of the flag it closes over (the optional sums)."""
    return jit_variants(make, {"": (False,), "_optional": (True,)}, **options)


def jit_variants(make, flags, **options):
    """:func:`jit` of ``make(*flags[suffix])`` for each suffix of ``flags`` (a dict, in order),
    named as the function ``make`` returns + the suffix: a tuple of kernels made from one source.

    numba takes a closure's variables as constants and prunes the branches they decide before
    typing, so each kernel compiles only the code it runs: what the others need is neither
    compiled nor linked. The name gives each a cache index of its own (numba names the index
    after the function): :func:`fasttie.warmup.kernel_cached` reads it.
    """
    kernels = []
    for suffix, args in flags.items():
        fn = make(*args)
        fn.__name__ = fn.__qualname__ = fn.__name__ + suffix
        kernels.append(jit(fn, **options))
    return tuple(kernels)
