"""fasttie.dask: a database sharded along rows, tie statistics per (query block, shard), a Dask
tree reduction, one finalize: bitwise ``ft.evaluate`` on the concatenated data, for any
chunking and every tie mode (stable: a second pass with per-shard offsets), under the threaded
scheduler and on a LocalCluster of two worker processes."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fasttie as ft

da = pytest.importorskip("dask.array", reason="fasttie.dask needs the dask extra (pip install 'fasttie[dask]')")
distributed = pytest.importorskip("distributed", reason="the LocalCluster tests need distributed")
fd = pytest.importorskip("fasttie.dask")
from fasttie.hamming.dask_tasks import DaskShards  # noqa: E402

METRICS = ["AP", "AP@50", "nDCG@20", "DCG@5", "P@10", "R@30", "RR", "Rprec", "ACG@5", "WAP@10", "P(radius=20)"]
# cutoffs only: ties="stable" ranks just the items at distances that reach rank 50 (the bounded pass)
TOP_METRICS = ["AP@50", "nDCG@20", "DCG@5", "P@10", "R@30", "RR@10", "ACG@5", "WAP@10", "ERR@20", "P(radius=20)"]
DATA = ft.datasets.synthetic_hashing(24, 3000, 64, 6, flip=0.3, seed=4)
# no dashboard, and the scheduler's HTTP server on a free port: with the default (8787) a second
# cluster warns and leaks a socket (as the CLI's cluster does, fasttie/cli/evaluate.py)
NO_DASHBOARD = {"dashboard_address": None, "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"}}


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, **NO_DASHBOARD)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _same(expected, got):
    assert expected.per_query.keys() == got.per_query.keys()
    for name, values in expected.per_query.items():
        np.testing.assert_array_equal(got.per_query[name], values)
    assert got.n_empty == expected.n_empty and got.settings == expected.settings


def _unpacked():
    queries, database, query_labels, db_labels = DATA
    return ft.unpack_codes(queries), ft.unpack_codes(database), query_labels, db_labels


def test_threaded_scheduler():
    dask = pytest.importorskip("dask")
    queries, database, query_labels, db_labels = _unpacked()
    # without WAP, stable finalizes its ranks in the kernel without the optional sums
    no_optional = [m for m in METRICS if not m.startswith("WAP")]
    for ties, metrics in (("average", METRICS), ("stable", METRICS), ("stable", TOP_METRICS), ("stable", no_optional)):
        expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties)
        with dask.config.set(scheduler="threads"):
            got = fd.evaluate(queries, da.from_array(database, chunks=(450, 64)), query_labels, db_labels,
                              metrics=metrics, ties=ties, query_chunk=9)
        _same(expected, got)


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(97, 3000), st.integers(3, 24), st.sampled_from(["average", "optimistic", "pessimistic", "stable"]),
       st.integers(2, 9), st.sampled_from([METRICS, TOP_METRICS]))
def test_any_chunking_on_a_local_cluster(client, rows, query_chunk, ties, split_every, metrics):
    queries, database, query_labels, db_labels = _unpacked()
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties)
    got = fd.evaluate(queries, da.from_array(database, chunks=(rows, 64)), query_labels,
                      da.from_array(db_labels, chunks=max(1, rows // 2 + 1)), metrics=metrics, ties=ties,
                      query_chunk=query_chunk, split_every=split_every)
    _same(expected, got)


@pytest.mark.parametrize("rows", [300, 1000, 3000])
def test_stable_with_cutoffs_only_ranks_the_top_distances(client, rows):
    """Each shard ranks only its items at the distances that reach the largest cutoff; the values are
    bitwise those of one process, for class, multi-hot and listed relevance, and the shards ranked
    fewer items than the full pass would have."""
    rng = np.random.default_rng(rows)
    queries, database, query_labels, db_labels = _unpacked()
    sizes = rng.integers(0, 40, 24)
    listed = (np.r_[0, np.cumsum(sizes)], np.concatenate([rng.choice(3000, s, replace=False) for s in sizes]),
              rng.integers(1, 5, sizes.sum()))
    for relevance in (dict(query_labels=query_labels, db_labels=db_labels),
                      dict(query_labels=rng.integers(0, 2, (24, 4)), db_labels=rng.integers(0, 2, (3000, 4))),
                      dict(relevance=listed)):
        expected = ft.evaluate(queries, database, metrics=TOP_METRICS, ties="stable", **relevance)
        got = fd.evaluate(queries, da.from_array(database, chunks=(rows, 64)), metrics=TOP_METRICS, ties="stable",
                          query_chunk=7, **relevance)
        _same(expected, got)
    _, ranked = DaskShards(queries, da.from_array(database, chunks=(rows, 64)), query_labels, db_labels, None, False,
                           None, "big", 7, 1).stable(50)
    assert 0 < len(ranked[1]) < (query_labels[:, None] == db_labels[None]).sum() / 4


@pytest.mark.parametrize("ties", ["average", "optimistic", "pessimistic", "stable"])
def test_local_cluster_two_worker_processes(client, ties):
    queries, database, query_labels, db_labels = _unpacked()
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=METRICS, ties=ties, curves=True)
    got = fd.evaluate(queries, da.from_array(database, chunks=(700, 64)), query_labels, db_labels, metrics=METRICS,
                      ties=ties, curves=True, query_chunk=10)
    _same(expected, got)
    for key, curve in expected.curves.items():
        np.testing.assert_array_equal(got.curves[key], curve)


def test_multihot_and_listed_relevance(client):
    rng = np.random.default_rng(3)
    queries, database, _, _ = _unpacked()
    multihot_q, multihot_db = rng.integers(0, 2, (24, 5)), rng.integers(0, 2, (3000, 5))
    for ties in ("average", "stable"):
        expected = ft.evaluate(queries, database, multihot_q, multihot_db, metrics=METRICS, ties=ties)
        got = fd.evaluate(queries, da.from_array(database, chunks=(999, 64)), multihot_q,
                          da.from_array(multihot_db, chunks=(500, 5)), metrics=METRICS, ties=ties)
        _same(expected, got)
    sizes = rng.integers(0, 40, 24)
    indptr = np.r_[0, np.cumsum(sizes)]
    indices = np.concatenate([rng.choice(3000, s, replace=False) for s in sizes])
    grades = rng.integers(1, 5, len(indices))
    for ties in ("average", "stable"):
        expected = ft.evaluate(queries, database, relevance=(indptr, indices, grades), metrics=METRICS, ties=ties)
        got = fd.evaluate(queries, da.from_array(database, chunks=(640, 64)), relevance=(indptr, indices, grades),
                          metrics=METRICS, query_chunk=5, ties=ties)
        _same(expected, got)


def test_npy_shards_and_packed_bytes(tmp_path, client):
    queries, database, query_labels, db_labels = _unpacked()
    paths, label_paths = [], []
    for i, (lo, hi) in enumerate([(0, 1000), (1000, 1001), (1001, 3000)]):
        paths.append(str(tmp_path / f"codes_{i}.npy"))
        label_paths.append(str(tmp_path / f"labels_{i}.npy"))
        np.save(paths[-1], np.packbits(database[lo:hi].astype(bool), axis=1))
        np.save(label_paths[-1], db_labels[lo:hi])
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=METRICS)
    got = fd.evaluate(queries, paths, query_labels, label_paths, metrics=METRICS, packed=True, n_bits=64)
    _same(expected, got)


@pytest.mark.parametrize("position", ["first", "middle", "last", "every other"])
def test_empty_shards_add_nothing(tmp_path, position):
    """An empty shard (a chunk filtered to nothing, an empty .npy in a glob) adds zero counts: the
    call is bitwise one machine's, in every tie mode, whether the shards are dask chunks or files."""
    dask = pytest.importorskip("dask")
    queries, database, query_labels, db_labels = _unpacked()
    rows = {"first": (0, 1000, 2000), "middle": (1000, 0, 2000), "last": (1000, 2000, 0),
            "every other": (0, 700, 0, 0, 2300, 0)}[position]
    starts = np.concatenate([[0], np.cumsum(rows)])
    paths, label_paths = [], []
    for i, (lo, hi) in enumerate(zip(starts[:-1], starts[1:])):
        paths.append(str(tmp_path / f"codes_{i}.npy"))
        label_paths.append(str(tmp_path / f"labels_{i}.npy"))
        np.save(paths[-1], database[lo:hi])
        np.save(label_paths[-1], db_labels[lo:hi])
    for ties, metrics in (("average", METRICS), ("pessimistic", METRICS), ("stable", METRICS),
                          ("stable", TOP_METRICS)):
        expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=metrics, ties=ties)
        with dask.config.set(scheduler="threads"):
            chunked = fd.evaluate(queries, da.from_array(database, chunks=(rows, (64,))), query_labels, db_labels,
                                  metrics=metrics, ties=ties, query_chunk=10)
            from_files = fd.evaluate(queries, paths, query_labels, label_paths, metrics=metrics, ties=ties)
        _same(expected, chunked)
        _same(expected, from_files)
    with pytest.raises(ValueError, match=r"database is empty \(every shard has 0 rows\)"):
        fd.evaluate(queries, da.from_array(database[:0], chunks=((0, 0), (64,))), query_labels, db_labels[:0])


def test_bad_shard_fails_the_call_and_names_it():
    queries, database, query_labels, db_labels = _unpacked()
    with_nan = database.astype(float)
    with_nan[2100, 3] = np.nan
    with pytest.raises(ValueError, match=r"database shard 2 \(rows 2000\.\.2999\): database contains NaN"):
        fd.evaluate(queries, da.from_array(with_nan, chunks=(1000, 64)), query_labels, db_labels)
    with pytest.raises(ValueError, match=r"database shard \d \(rows \d+\.\.\d+\): queries have 48 bits but database has 64"):
        fd.evaluate(queries[:, :48], da.from_array(database, chunks=(1000, 64)), query_labels, db_labels)
    tripled = database.copy()
    tripled[1000:2000] *= 3  # only shard 1 holds values other than 0/1
    with pytest.raises(ValueError, match=r"database shard 1 \(rows 1000\.\.1999\).*±1, 0/1 or bool"):
        fd.evaluate(queries, da.from_array(tripled, chunks=(1000, 64)), query_labels, db_labels)
    with pytest.raises(ValueError, match="db_labels has 10 rows"):
        fd.evaluate(queries, da.from_array(database, chunks=(1000, 64)), query_labels, db_labels[:10])


def test_cli_shard_globs_and_local_cluster(tmp_path, capsys):
    from fasttie.cli import main

    queries, database, query_labels, db_labels = _unpacked()
    np.save(tmp_path / "queries.npy", queries)
    np.save(tmp_path / "query_labels.npy", query_labels)
    np.save(tmp_path / "database.npy", database)
    np.save(tmp_path / "db_labels.npy", db_labels)
    for i, (lo, hi) in enumerate([(0, 1200), (1200, 1201), (1201, 3000)]):
        np.save(tmp_path / f"db-{i}.npy", database[lo:hi])
        np.save(tmp_path / f"dl-{i}.npy", db_labels[lo:hi])
    common = ["evaluate", "--queries", str(tmp_path / "queries.npy"), "--query-labels",
              str(tmp_path / "query_labels.npy"), "-m", *METRICS, "--csv", "--quiet"]
    outputs = []
    for extra in (["--database", str(tmp_path / "database.npy"), "--db-labels", str(tmp_path / "db_labels.npy")],
                  ["--database", str(tmp_path / "db-*.npy"), "--db-labels", str(tmp_path / "dl-*.npy")],
                  ["--database", str(tmp_path / "db-*.npy"), "--db-labels", str(tmp_path / "db_labels.npy"),
                   "--dask", "--query-chunk", "7"]):
        assert main(common + extra) == 0
        outputs.append(capsys.readouterr().out)
    zarr = pytest.importorskip("zarr", reason="the zarr case needs zarr (test extra)")
    store = zarr.open_array(str(tmp_path / "db.zarr"), mode="w", shape=database.shape, chunks=(700, 64),
                            dtype=database.dtype)
    store[:] = database
    assert main(common + ["--database", str(tmp_path / "db.zarr"), "--db-labels", str(tmp_path / "db_labels.npy")]) == 0
    outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2] == outputs[3]  # printed at full precision: bitwise equal
    assert main(common + ["--database", str(tmp_path / "nope-*.npy"), "--db-labels", str(tmp_path / "dl-*.npy")]) == 2
    assert "no file matches" in capsys.readouterr().err


class _DieOnce(distributed.WorkerPlugin):
    """Kills its worker process the first time any worker starts a shard task (a marker file
    makes it once per test, across workers and restarts)."""

    def __init__(self, marker):
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        import os

        name = key[0] if isinstance(key, tuple) else key
        if finish == "executing" and "shard_stats" in str(name) and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)  # the process dies mid-evaluation, as with kill -9


def test_killed_worker_loses_nothing(tmp_path):
    queries, database, query_labels, db_labels = _unpacked()
    expected = ft.evaluate(queries, database, query_labels, db_labels, metrics=METRICS)
    marker = tmp_path / "killed"
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, **NO_DASHBOARD)
    client = distributed.Client(cluster)
    try:
        client.register_plugin(_DieOnce(str(marker)))
        got = fd.evaluate(queries, da.from_array(database, chunks=(300, 64)), query_labels, db_labels,
                          metrics=METRICS, query_chunk=8)
    finally:
        client.close()
        cluster.close()
    assert marker.exists()  # a worker did die during the evaluation
    _same(expected, got)


@pytest.mark.parametrize("ties", ["average", "stable", "trec"])
@pytest.mark.parametrize("npartitions", [1, 3, 8])
def test_ranked_lists_from_a_dask_dataframe(ties, npartitions):
    dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe needs pyarrow (fasttie[dask])")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(npartitions)
    n = 4000
    frame = pd.DataFrame({"query_id": rng.integers(0, 250, n), "doc_id": rng.permutation(n),
                          "relevance": rng.integers(0, 4, n).astype(float), "score": rng.integers(0, 9, n) / 4})
    names = ["AP", "nDCG@10", "P@5", "RR", "Rprec"]
    if ties == "stable":  # equal scores in index order: the frame's order, whatever the shuffle
        frame = frame.sort_values("query_id", kind="stable").reset_index(drop=True)
    expected = ft.rank_evaluate(frame.relevance.to_numpy(), frame.score.to_numpy(), qid=frame.query_id.to_numpy(),
                                metrics=names, ties=ties, doc_ids=frame.doc_id.to_numpy()).to_frame()
    parts = dd.from_pandas(frame, npartitions=npartitions, sort=False)
    got = fd.rank_evaluate(parts, names, doc="doc_id", ties=ties)
    assert list(got.index) == list(expected.index) and list(got.columns) == names
    np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())


def test_many_trec_runs_in_parallel(tmp_path):
    import pathlib
    import shutil

    data = pathlib.Path(__file__).parent / "data"
    for i in range(3):
        shutil.copy(data / "run.txt", tmp_path / f"run{i}.txt")
    names = ["AP", "P@5", "nDCG@10", "RR"]
    got = fd.trec_evaluate(data / "qrels.txt", str(tmp_path / "run*.txt"), names, complete=True)
    expected = ft.trec.evaluate(data / "qrels.txt", data / "run.txt", names, complete=True).to_frame()
    assert list(got.index.get_level_values("run").unique()) == ["run0.txt", "run1.txt", "run2.txt"]
    for run in ("run0.txt", "run2.txt"):
        np.testing.assert_array_equal(got.loc[run].to_numpy(), expected.to_numpy())
        assert list(got.loc[run].index) == list(expected.index)
    with pytest.raises(ValueError, match="no run file matches"):
        fd.trec_evaluate(data / "qrels.txt", str(tmp_path / "nothing*.txt"), names)


@pytest.mark.parametrize("npartitions", [1, 4])
def test_trec_run_as_a_dask_dataframe(npartitions):
    dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe needs pyarrow (fasttie[dask])")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(npartitions)
    n = 3000
    frame = pd.DataFrame({"query_id": [f"q{q}" for q in rng.integers(0, 60, n)],
                          "doc_id": [f"d{d}" for d in rng.permutation(n)],
                          "score": rng.integers(0, 12, n) / 5})
    judged = frame.sample(frac=0.5, random_state=1)
    qrels = {}
    for q, d, g in zip(judged.query_id, judged.doc_id, rng.integers(0, 3, len(judged))):
        qrels.setdefault(q, {})[d] = int(g)
    qrels.setdefault("q_unretrieved", {})["d_x"] = 1  # judged, never retrieved: absent without -c
    names = ["AP", "P@5", "nDCG@10", "RR", "Rprec", "R@20"]
    run = ft.trec.Run.from_arrays(frame.query_id.to_numpy(), frame.doc_id.to_numpy(), frame.score.to_numpy())
    expected = ft.trec.evaluate(qrels, run, names).to_frame()
    got = fd.trec_evaluate(qrels, dd.from_pandas(frame, npartitions=npartitions, sort=False), names)
    assert list(got.index) == list(expected.index)
    np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())
    with pytest.raises(ValueError, match="complete"):
        fd.trec_evaluate(qrels, frame, names, complete=True)
    broken = frame.rename(columns={"score": "sim"}).assign(sim=frame.score.where(frame.index != 7))
    with pytest.raises(ValueError, match="is nan; scores must be finite"):  # checked as any DataFrame run
        fd.trec_evaluate(qrels, dd.from_pandas(broken, npartitions=npartitions, sort=False), names, score="sim")


@pytest.mark.parametrize("kind", ["class", "listed"])
def test_memory_mapped_shards_are_counted_tile_by_tile(tmp_path, monkeypatch, kind):
    """A task counts its shard a tile at a time (as ft.evaluate streams a memory-mapped database):
    the same counts, so the same values, bitwise; listed ids are made local to each tile."""
    dask = pytest.importorskip("dask")
    from fasttie.hamming import stats, streamed

    monkeypatch.setattr(streamed, "TILE_ROWS", 400)
    seen = []
    original = stats.tie_stats

    def counting(queries, database, *args, **kwargs):
        seen.append(database.n)
        return original(queries, database, *args, **kwargs)

    monkeypatch.setattr(stats, "tie_stats", counting)
    queries, database, query_labels, db_labels = DATA
    raw = database.words.view(np.uint8)  # the words' bytes: read by the tasks without a copy
    paths, label_paths = [], []
    for i, (lo, hi) in enumerate([(0, 1000), (1000, 1001), (1001, 3000)]):
        paths.append(str(tmp_path / f"codes_{i}.npy"))
        label_paths.append(str(tmp_path / f"labels_{i}.npy"))
        np.save(paths[-1], raw[lo:hi])
        np.save(label_paths[-1], db_labels[lo:hi])
    if kind == "class":
        relevance = dict(query_labels=query_labels, db_labels=db_labels)
        sharded = dict(query_labels=query_labels, db_labels=label_paths)
    else:
        rng = np.random.default_rng(8)
        sizes = rng.integers(0, 60, 24)
        indices = np.concatenate([rng.choice(3000, s, replace=False) for s in sizes])
        relevance = sharded = dict(relevance=(np.r_[0, np.cumsum(sizes)], indices, rng.integers(1, 4, len(indices))))
    expected = ft.evaluate(queries, database, **relevance, metrics=METRICS)
    with dask.config.set(scheduler="threads"):
        got = fd.evaluate(queries, paths, **sharded, metrics=METRICS, packed=True, n_bits=64, bitorder="little",
                          query_chunk=10)
    _same(expected, got)
    assert max(seen) == 400 and sum(seen) == 3 * 3000  # three query blocks, each reading every tile
