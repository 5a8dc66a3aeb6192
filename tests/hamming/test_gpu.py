"""The GPU passes (fasttie.hamming.gpu) give the CPU's counts, ranks and neighbours bitwise, so the same metrics.

CI has no GPU: tests/conftest.py turns the CUDA simulator on (NUMBA_ENABLE_CUDASIM=1) where no
NVIDIA device is present, and the same kernels run on the CPU; on a GPU machine they run there.
Small ``split_size`` values cut the database into many splits per block of queries, the case
that the per-split counts, rank bases and output slots must get right.
"""

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fasttie as ft

pytest.importorskip("numba_cuda", reason="device='cuda' needs numba-cuda (pip install 'fasttie[cuda]')")

from numba import cuda as numba_cuda  # noqa: E402

from fasttie.hamming import gpu as cuda  # noqa: E402
from fasttie._kernels import cuda as kernels  # noqa: E402
from fasttie.hamming.options import HammingOptions  # noqa: E402
from fasttie.relevance import make_relevance  # noqa: E402

METRICS = ["AP", "AP@10", "nDCG@20", "DCG@5", "P@5", "R@10", "RR", "Rprec", "ACG@5", "WAP@10", "P(radius=3)"]
SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"  # tests/conftest.py: no NVIDIA device here


def _relevance(kind, rng, n_q, n_db, n_labels=70):
    if kind == "class":
        return dict(query_labels=rng.integers(0, 3, n_q), db_labels=rng.integers(0, 3, n_db))
    if kind == "multihot":
        return dict(query_labels=rng.integers(0, 2, (n_q, n_labels)), db_labels=rng.integers(0, 2, (n_db, n_labels)))
    sizes = rng.integers(0, 25, n_q)
    sizes[0] = 0  # a query with nothing listed
    indptr = np.r_[0, np.cumsum(sizes)]
    indices = np.concatenate([rng.choice(n_db, s, replace=False) for s in sizes])
    return dict(relevance=(indptr, indices, rng.integers(1, 5, len(indices))))


def _case(n_bits, kind, seed, n_q=9, n_db=300, n_labels=70):
    rng = np.random.default_rng(seed)
    queries, database = rng.integers(0, 2, (n_q, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    database[::7] = queries[0]  # many ties at distance 0 too
    relevance = _relevance(kind, rng, n_q, n_db, n_labels)
    spec = make_relevance(relevance.get("query_labels"), relevance.get("db_labels"), relevance.get("relevance"),
                          n_q, n_db)
    return ft.pack_codes(queries), ft.pack_codes(database), relevance, spec


def _assert_same(on_gpu, on_cpu):
    assert on_gpu.settings == on_cpu.settings and on_gpu.n_empty == on_cpu.n_empty
    assert on_gpu.per_query.keys() == on_cpu.per_query.keys()
    for name, values in on_cpu.per_query.items():
        np.testing.assert_array_equal(on_gpu.per_query[name], values, err_msg=name)
    for key, curve in (on_cpu.curves or {}).items():
        np.testing.assert_array_equal(on_gpu.curves[key], curve, err_msg=key)


@pytest.mark.parametrize("n_bits", [1, 7, 64, 65, 130, 256])
@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
def test_gpu_counts_equal_cpu_counts(n_bits, kind):
    q, db, relevance, spec = _case(n_bits, kind, n_bits)
    expected = ft.tie_stats(q, db, **relevance).counts
    np.testing.assert_array_equal(cuda.counts(q, db, spec), expected)
    np.testing.assert_array_equal(cuda.counts(q, db, spec, split_size=37), expected)
    for ties in ("average", "optimistic"):
        _assert_same(ft.evaluate(q, db, **relevance, metrics=METRICS, ties=ties, curves=True, device="cuda"),
                     ft.evaluate(q, db, **relevance, metrics=METRICS, ties=ties, curves=True))


def test_counters_too_large_for_shared_memory_take_global_atomics():
    """Multi-hot grades at 256 bits: (257 x grades) counters per query exceed a block's shared memory."""
    q, db, relevance, spec = _case(256, "multihot", 3, n_labels=90)
    device = cuda._Pass(db, spec, 256)
    assert device.layout(q.n)[1] is False  # the global-atomics branch
    assert cuda._Pass(*_case(64, "class", 3)[1::2], 64).layout(9)[:2] == (64, True)
    np.testing.assert_array_equal(cuda.counts(q, db, spec, split_size=50), ft.tie_stats(q, db, **relevance).counts)


@pytest.mark.parametrize("n_bits", [7, 64, 130])
@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
def test_gpu_stable_ranks_equal_cpu(n_bits, kind):
    """ties="stable": the whole list (every relevant item ranked) and the bounded pass of metrics
    with cutoffs only (items at the distances that reach the largest cutoff)."""
    q, db, relevance, spec = _case(n_bits, kind, 100 + n_bits, n_labels=5)
    for metrics in (["AP", "nDCG@10", "P@5", "Rprec", "ERR@10"] if kind == "listed" else ["AP", "nDCG@10", "P@5"],
                    ["AP@7", "P@3", "nDCG@20"]):
        on_cpu = ft.evaluate(q, db, **relevance, metrics=metrics, ties="stable")
        got = cuda.evaluate(q, db, spec, metrics, HammingOptions(ties="stable"), n_threads=1, split_size=37)
        _assert_same(got, on_cpu)
        _assert_same(ft.evaluate(q, db, **relevance, metrics=metrics, ties="stable", device="cuda"), on_cpu)


@pytest.mark.parametrize("n_bits", [5, 64, 130])
def test_gpu_search_equals_cpu(n_bits):
    q, db, _, _ = _case(n_bits, "class", n_bits)
    for k in (1, 9, 300):
        expected = ft.search(q, db, k=k)
        for got in (ft.search(q, db, k=k, device="cuda"), cuda.knn(q, db, k, split_size=37)):
            np.testing.assert_array_equal(got[0], expected[0])
            np.testing.assert_array_equal(got[1], expected[1])
            assert got[0].dtype == np.int64 and got[1].dtype == np.int32
    for radius in (0, n_bits // 3, n_bits):
        expected = ft.search(q, db, radius=radius)
        for got in (ft.search(q, db, radius=radius, device="cuda"), cuda.radius_search(q, db, radius, split_size=37)):
            for a, b in zip(got, expected):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n_bits", [7, 130])
@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
def test_database_in_chunks_gives_the_whole_database_results(n_bits, kind):
    """A host database uploaded in chunks (110 items: 3 chunks, the last short, splits of 37 inside
    them): the same counts, every tie mode (the stable whole list and the bounded pass, whose ranks
    and output slots carry over from chunk to chunk) and the same neighbours."""
    q, db, relevance, spec = _case(n_bits, kind, 200 + n_bits, n_labels=5)
    assert cuda._Database(db, spec, n_bits, chunk_size=110).bounds == [(0, 110), (110, 220), (220, 300)]
    np.testing.assert_array_equal(cuda.counts(q, db, spec, split_size=37, chunk_size=110),
                                  ft.tie_stats(q, db, **relevance).counts)
    for ties, metrics in (("average", METRICS), ("stable", ["AP", "nDCG@10", "P@5", "Rprec"]),
                          ("stable", ["AP@7", "P@3", "nDCG@20"])):
        _assert_same(cuda.evaluate(q, db, spec, metrics, HammingOptions(ties=ties), n_threads=1, split_size=37,
                                   chunk_size=110),
                     ft.evaluate(q, db, **relevance, metrics=metrics, ties=ties))
    if kind == "class":
        for k in (1, 9, 300):
            for got, expected in zip(cuda.knn(q, db, k, split_size=37, chunk_size=110), ft.search(q, db, k=k)):
                np.testing.assert_array_equal(got, expected)
        for radius in (0, n_bits // 2):
            got = cuda.radius_search(q, db, radius, split_size=37, chunk_size=110)
            for a, b in zip(got, ft.search(q, db, radius=radius)):
                np.testing.assert_array_equal(a, b)


def test_a_chunk_that_does_not_fit_is_halved(monkeypatch):
    """Device out-of-memory while uploading the database: the chunks are halved until they fit
    (from the whole database on, or from a chunk size too large), with the same results."""
    q, db, relevance, spec = _case(64, "class", 13)
    original = cuda._Pass.__init__
    uploads = []

    def upload(self, db_codes, spec, n_bits, split_size=None, lo=0, hi=None):
        hi = db_codes.n if hi is None else hi
        uploads.append(hi - lo)
        if hi - lo > 80:
            raise RuntimeError("cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")
        original(self, db_codes, spec, n_bits, split_size, lo, hi)

    monkeypatch.setattr(cuda._Pass, "__init__", upload)
    for ties in ("average", "stable"):
        uploads.clear()
        _assert_same(ft.evaluate(q, db, **relevance, metrics=["AP", "P@5"], ties=ties, device="cuda"),
                     ft.evaluate(q, db, **relevance, metrics=["AP", "P@5"], ties=ties))
        assert uploads[:3] == [300, 150, 75] and max(uploads[3:]) <= 75
    got = cuda.knn(q, db, 20)
    np.testing.assert_array_equal(got[0], ft.search(q, db, k=20)[0])


def test_chunk_size_from_the_free_device_memory(monkeypatch):
    """Half the free memory for the database: 8 bytes per code word, 4 per class label."""
    q, db, relevance, spec = _case(64, "class", 14)

    class Context:
        def get_memory_info(self):
            return (2400, 10**9)

    monkeypatch.setattr(numba_cuda, "current_context", lambda: Context())
    assert cuda._Database(db, spec, 64).chunk_size == 100  # 2400 / 2 / (8 + 4)
    assert cuda._Database(db, None, 64).chunk_size == 150
    on_device = ft.PackedCodes(numba_cuda.to_device(db.words), 64)
    assert cuda._Database(on_device, spec, 64).chunk_size == 300  # already on the GPU: used in place, whole


def test_codes_and_labels_already_on_the_gpu():
    """Device arrays go in without a copy of the codes; PackedCodes built from them stay on the GPU."""
    rng = np.random.default_rng(5)
    queries = np.where(rng.random((6, 70)) < 0.5, -1.0, 1.0).astype(np.float32)
    database = np.where(rng.random((200, 70)) < 0.5, -1.0, 1.0).astype(np.float32)
    database[::5] = queries[1]
    query_labels, db_labels = rng.integers(0, 4, 6), rng.integers(0, 4, 200)
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=METRICS, ties="stable")
    on_device = [numba_cuda.to_device(a) for a in (queries, database, query_labels, db_labels)]
    packed = ft.pack_codes(on_device[1])
    assert packed.on_device and packed.n_bits == 70
    np.testing.assert_array_equal(packed.to_host().words, ft.pack_codes(database).words)
    np.testing.assert_array_equal(ft.unpack_codes(packed), (database > 0).astype(np.uint8))
    np.testing.assert_array_equal(packed[10:20].to_host().words, ft.pack_codes(database[10:20]).words)
    for device in ("cuda", "cpu", "auto"):
        _assert_same(ft.evaluate(on_device[0], packed, *on_device[2:], metrics=METRICS, ties="stable",
                                 device=device), expected)
    ids, distances = ft.search(on_device[0], on_device[1], k=12, device="cuda")
    np.testing.assert_array_equal(ids, ft.search(queries, database, k=12)[0])
    # bool and 0/1 integer codes, and packed bytes on the device
    bits = rng.integers(0, 2, (30, 20))
    for matrix in (bits.astype(bool), bits.astype(np.int8)):
        np.testing.assert_array_equal(ft.pack_codes(numba_cuda.to_device(matrix)).to_host().words,
                                      ft.pack_codes(bits).words)
    raw = np.packbits(bits.astype(np.uint8), axis=1)
    from_bytes = ft.pack_codes(numba_cuda.to_device(raw), packed=True, n_bits=20)
    assert from_bytes.on_device
    np.testing.assert_array_equal(from_bytes.to_host().words, ft.pack_codes(bits).words)


@pytest.mark.parametrize("bad, message", [
    (np.float32(np.nan), r"found nan at \[2, 3\]"),
    (np.float32(0.5), r"found 0.5 at \[2, 3\]"),
    (np.float32(0.0), "mixes -1 and 0"),
])
def test_bad_codes_on_the_gpu_name_the_position(bad, message):
    codes = np.ones((4, 9), dtype=np.float32)
    codes[0, 0] = -1.0
    codes[2, 3] = bad
    with pytest.raises(ft.InputError, match=message):
        ft.pack_codes(numba_cuda.to_device(codes))
    with pytest.raises(ft.InputError, match="must be 2-D"):
        ft.pack_codes(numba_cuda.to_device(np.ones(5, dtype=np.float32)))


def test_out_of_memory_halves_the_block_of_queries(monkeypatch):
    """A device out-of-memory error on a block of queries retries it in halves: same results."""
    q, db, relevance, spec = _case(64, "class", 11, n_q=13)
    original = cuda._Pass.counts
    sizes = []

    def counts(self, queries, rows, n, ranks=False):
        sizes.append(n)
        if n > 3:
            raise RuntimeError("cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")
        return original(self, queries, rows, n, ranks)

    monkeypatch.setattr(cuda._Pass, "counts", counts)
    for ties in ("average", "stable"):
        sizes.clear()
        _assert_same(ft.evaluate(q, db, **relevance, metrics=["AP", "P@5"], ties=ties, device="cuda"),
                     ft.evaluate(q, db, **relevance, metrics=["AP", "P@5"], ties=ties))
        assert sizes[:4] == [13, 6, 3, 3] and max(sizes[3:]) <= 3
    def failing(*args, **kwargs):
        raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED")

    monkeypatch.setattr(cuda._Pass, "counts", failing)
    with pytest.raises(RuntimeError, match="LAUNCH_FAILED"):  # other errors are not retried
        ft.evaluate(q, db, **relevance, device="cuda")


def test_stable_ranks_past_the_budget_go_in_smaller_blocks(monkeypatch):
    """Blocks whose stable ranks would pass the rank budget are halved (the bounded pass and the whole list)."""
    q, db, relevance, spec = _case(64, "class", 12, n_q=11)
    monkeypatch.setattr(cuda, "_RANK_BYTES", 16 * 150)
    for metrics in (["P@5", "nDCG@30"], ["AP", "P@5"]):
        _assert_same(ft.evaluate(q, db, **relevance, metrics=metrics, ties="stable", device="cuda"),
                     ft.evaluate(q, db, **relevance, metrics=metrics, ties="stable"))


@pytest.mark.skipif(SIMULATOR, reason="the CUDA simulator runs one kernel at a time: it swaps the kernel's module "
                    "globals and keeps the thread index on the Python thread")
def test_concurrent_device_calls_from_python_threads():
    """Four Python threads calling the GPU front doors at once (each on its own CUDA stream of the
    same context) get the results of serial calls: the GPU path keeps fasttie's threading model."""
    q, db, relevance, _ = _case(64, "class", 21, n_q=40, n_db=3000)
    mq, mdb, multihot, _ = _case(130, "multihot", 22, n_q=20, n_db=2000, n_labels=5)
    calls = [
        lambda: ft.evaluate(q, db, **relevance, metrics=METRICS, device="cuda").per_query,
        lambda: ft.evaluate(q, db, **relevance, metrics=["AP", "nDCG@10", "P@5"], ties="stable",
                            device="cuda").per_query,
        lambda: ft.evaluate(mq, mdb, **multihot, metrics=["AP", "nDCG@10"], device="cuda").per_query,
        lambda: dict(enumerate(ft.search(q, db, k=25, device="cuda"))),
    ]
    serial = [call() for call in calls]
    with ThreadPoolExecutor(4) as pool:
        futures = [(n, pool.submit(calls[n])) for n in (0, 1, 2, 3, 3, 2, 1, 0)]
        results = [(n, future.result(timeout=600)) for n, future in futures]
    for n, result in results:
        assert result.keys() == serial[n].keys()
        for key in result:
            np.testing.assert_array_equal(result[key], serial[n][key], err_msg=f"call {n}, {key}")


@pytest.mark.skipif(SIMULATOR, reason="the simulator compiles nothing to cache")
def test_gpu_kernels_load_from_the_cache_in_a_new_process(tmp_path):
    """A second process on the same NUMBA_CACHE_DIR loads the GPU kernels instead of compiling them."""
    code = textwrap.dedent("""
        import gc
        import numpy as np, fasttie as ft
        rng = np.random.default_rng(0)
        q, db = rng.integers(0, 2, (10, 64)), rng.integers(0, 2, (500, 64))
        ql, dl = rng.integers(0, 3, 10), rng.integers(0, 3, 500)
        ft.evaluate(q, db, ql, dl, metrics=["AP", "P@5"], device="cuda")
        ft.evaluate(q, db, ql, dl, metrics=["AP"], ties="stable", device="cuda")
        kernels = [x for x in gc.get_objects() if type(x).__name__ == "CUDADispatcher"
                   and getattr(getattr(x, "py_func", None), "__module__", None) == "fasttie._kernels.cuda"]
        print("STATS", sum(sum(k.stats.cache_misses.values()) for k in kernels),
              sum(sum(k.stats.cache_hits.values()) for k in kernels))
    """)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    stats = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr
        stats.append(tuple(int(x) for x in done.stdout.split("STATS")[1].split()))
    (cold_misses, cold_hits), (warm_misses, warm_hits) = stats
    assert cold_misses >= 4 and cold_hits == 0 and warm_misses == 0 and warm_hits == cold_misses, stats


def test_auto_and_errors():
    q, db = np.array([[1, 0, 1]]), np.array([[1, 0, 0], [0, 1, 1]])
    expected = ft.evaluate(q, db, [0], [0, 1], metrics=["AP"])
    assert ft.evaluate(q, db, [0], [0, 1], metrics=["AP"], device="auto").mean == expected.mean
    assert ft.evaluate(q, db, [0], [0, 1], metrics=["AP"], ties="stable", device="cuda").mean == {"AP": 1.0}
    with pytest.raises(ft.InputError, match="device must be 'cpu', 'cuda' or 'auto'"):
        ft.evaluate(q, db, [0], [0, 1], device="gpu")
    with pytest.raises(ft.InputError, match="device must be"):
        ft.search(q, db, k=1, device="tpu")
    assert kernels.queries_per_block(10**6) == 0 and kernels.queries_per_block(65 * 2) == 64


def test_without_numba_cuda_the_error_says_how_to_install():
    code = (
        "import sys; sys.modules['numba.cuda'] = None\n"
        "import fasttie as ft\n"
        "try:\n"
        "    ft.evaluate([[1, 0]], [[1, 1]], [0], [0], device='cuda')\n"
        "except ImportError as error:\n"
        "    print(error)\n"
        "print(ft.evaluate([[1, 0]], [[1, 1]], [0], [0], device='auto').mean)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert "pip install 'fasttie[cuda]'" in done.stdout and "{'AP': 1.0}" in done.stdout
