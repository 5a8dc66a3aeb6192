"""One threading model: serial nogil kernels over blocks of queries on a thread pool.

* ``run_blocks`` covers every item exactly once, in blocks aligned to the granule, and
  re-raises a block's exception;
* every front door gives bitwise identical results at 1, 2 and 3 threads;
* every front door called from 4 Python threads at once gives the results of serial calls
  (numba's workqueue layer aborted the process here before; fasttie no longer uses it).
"""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fasttie as ft
from fasttie.parallel import available_threads, only_idle_workers_beside, resolve_threads, run_blocks


@pytest.mark.parametrize("n_items", [0, 1, 2, 7, 64, 1001])
@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
@pytest.mark.parametrize("granule", [1, 2])
def test_blocks_cover_every_item_once(n_items, n_threads, granule):
    seen = np.zeros(n_items, dtype=np.int64)
    lock = threading.Lock()
    starts = []

    def call(lo, hi):
        with lock:
            seen[lo:hi] += 1
            starts.append(lo)

    run_blocks(call, n_items, n_threads, granule=granule)
    assert (seen == 1).all()
    assert all(lo % granule == 0 for lo in starts)


def test_only_the_pools_idle_workers_beside_a_thread_let_it_fork(monkeypatch):
    # fasttie's pool has a worker once run_blocks ran on two threads; it is idle once run_blocks returns
    run_blocks(lambda lo, hi: None, 8, 2)
    this = threading.current_thread()
    workers = [t for t in threading.enumerate() if t.name.startswith("fasttie")]
    assert workers
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        for live, expected in (([this], True), ([this, *workers], True), ([this, *workers, other], False),
                               ([this, other], False)):
            monkeypatch.setattr(threading, "enumerate", lambda live=live: live)
            assert only_idle_workers_beside(this) is expected
    finally:
        monkeypatch.undo()
        release.set()
        other.join()


def test_block_errors_are_raised():
    def call(lo, hi):
        if lo <= 50 < hi:
            raise ZeroDivisionError("block with item 50")

    with pytest.raises(ZeroDivisionError, match="item 50"):
        run_blocks(call, 100, 4)


def test_thread_settings(monkeypatch):
    assert resolve_threads(None, 10) == 1  # tiny work: the calling thread alone
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "3")
    assert available_threads() == 3 and resolve_threads(None, 1 << 30) == 3
    assert resolve_threads(5, 10) == 5
    monkeypatch.setenv("FASTTIE_NUM_THREADS", "zero")
    with pytest.raises(ValueError, match="FASTTIE_NUM_THREADS"):
        available_threads()
    with pytest.raises(TypeError, match="n_threads"):
        resolve_threads(2.0, 10)
    with pytest.raises(ValueError, match="n_threads must be in"):
        resolve_threads(0, 10)


def _front_doors():
    """name -> zero-argument call of each front door on data large enough to use threads."""
    rng = np.random.default_rng(11)
    q, db, ql, dl = ft.datasets.synthetic_hashing(40, 30000, 128, 5, flip=0.3, seed=2)
    mh_q, mh_db = rng.integers(0, 2, (40, 6)), rng.integers(0, 2, (30000, 6))
    sizes = rng.integers(1, 300, 400)
    y_true = rng.integers(0, 4, sizes.sum()).astype(float)
    y_pred = rng.integers(0, 30, sizes.sum()) / 3.0
    subtopics = rng.integers(0, 2, (sizes.sum(), 5))
    metrics = ["AP", "AP@100", "nDCG@50", "P@10", "RR", "P(radius=40)"]
    doors = {}
    for ties in ("average", "stable", "optimistic"):
        doors[f"evaluate class {ties}"] = lambda t=ties, **kw: ft.evaluate(q, db, ql, dl, metrics=metrics, ties=t, **kw).per_query
    doors["evaluate multihot"] = lambda **kw: ft.evaluate(q, db, mh_q, mh_db, metrics=metrics, **kw).per_query
    doors["search"] = lambda **kw: ft.search(q, db, 50, **kw)
    doors["search radius"] = lambda **kw: ft.search(q, db, radius=45, **kw)
    for ties in ("average", "stable"):
        doors[f"rank_evaluate {ties}"] = lambda t=ties, **kw: ft.rank_evaluate(
            y_true, y_pred, sizes, metrics=["AP", "nDCG@10", "P@5", "RR"], ties=t, **kw).per_query
    doors["lambdarank"] = lambda **kw: ft.lambdarank(y_true, y_pred, sizes, **kw)
    doors["alpha_ndcg"] = lambda **kw: ft.alpha_ndcg(subtopics, y_pred, sizes, k=[5, 20], **kw)
    return doors


def _same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    else:
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.fixture(scope="module")
def doors():
    return _front_doors()


@pytest.mark.parametrize("name", list(_front_doors()))
def test_bitwise_identical_at_1_2_3_threads(doors, name):
    one = doors[name](n_threads=1)
    for n_threads in (2, 3):
        _same(one, doors[name](n_threads=n_threads))


@pytest.mark.parametrize("name", list(_front_doors()))
def test_concurrent_calls_from_python_threads(doors, name):
    serial = doors[name](n_threads=1)
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(doors[name], n_threads=n) for n in (1, 2, 3, 2, 1, 3, 2, 2)]
        results = [f.result(timeout=300) for f in futures]
    for result in results:
        _same(serial, result)
