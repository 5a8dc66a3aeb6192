"""fasttie.hamming.dask_tasks: a sharded database's tasks on Dask's synchronous scheduler give the
counts and the stable ranks of the whole database, for any cut into shards and query blocks
(tests/test_dask.py runs the faces on a threaded scheduler and local clusters)."""

import numpy as np
import pytest

dask = pytest.importorskip("dask", reason="fasttie.dask needs the dask extra (pip install 'fasttie[dask]')")
da = pytest.importorskip("dask.array")

import fasttie as ft  # noqa: E402
from fasttie.hamming.dask_tasks import DaskShards, import_dask  # noqa: E402
from fasttie.hamming.engine import rank_depth, hashing_metrics  # noqa: E402


def _case(seed, n_db=90, n_bits=24):
    rng = np.random.default_rng(seed)
    queries = rng.integers(0, 2, (9, n_bits)).astype(np.uint8)
    database = rng.integers(0, 2, (n_db, n_bits)).astype(np.uint8)
    return queries, database, rng.integers(0, 3, 9), rng.integers(0, 3, n_db), rng


def _shards(seed, query_chunk):
    queries, database, query_labels, db_labels, rng = _case(seed)
    cuts = np.sort(rng.choice(np.arange(1, len(database)), 3, replace=False))
    chunks = tuple(np.diff(np.concatenate([[0], cuts, [len(database)]])).tolist())
    sharded = da.from_array(database, chunks=(chunks, database.shape[1]))
    return DaskShards(queries, sharded, query_labels, db_labels, None, False, None, "big", query_chunk, 1), \
        (queries, database, query_labels, db_labels)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("query_chunk", [None, 2, 4])
def test_summed_counts_are_the_whole_databases(seed, query_chunk):
    shards, (queries, database, query_labels, db_labels) = _shards(seed, query_chunk)
    assert len(shards.shards) == 4 and shards.n_db == len(database)
    with dask.config.set(scheduler="synchronous"):
        summed = shards.summed(split_every=2)
    np.testing.assert_array_equal(summed.counts, ft.tie_stats(queries, database, query_labels, db_labels).counts)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("metrics", [["AP", "nDCG@10"], ["P@3", "AP@5"]])
def test_stable_ranks_are_the_database_orders(seed, metrics):
    shards, (queries, database, query_labels, db_labels) = _shards(seed, 4)
    with dask.config.set(scheduler="synchronous"):
        counted, (indptr, ranks, grades) = shards.stable(rank_depth(hashing_metrics(metrics), len(database)))
    np.testing.assert_array_equal(counted.counts, ft.tie_stats(queries, database, query_labels, db_labels).counts)
    distances = (queries[:, None, :] != database[None, :, :]).sum(-1)
    for q in range(len(queries)):
        order = np.argsort(distances[q], kind="stable")
        relevant = np.flatnonzero(db_labels[order] == query_labels[q]) + 1  # the 1-based ranks of the relevant items
        got = ranks[indptr[q] : indptr[q + 1]]
        assert set(got.tolist()) <= set(relevant.tolist())  # the bounded pass ranks the top distances only
        if metrics == ["AP", "nDCG@10"]:
            np.testing.assert_array_equal(np.sort(got), relevant)
        else:  # every relevant item within the depth (rank 5) is ranked
            assert set(relevant[relevant <= 5].tolist()) <= set(got.tolist())
        assert (grades[indptr[q] : indptr[q + 1]] == 1).all()


def test_a_bad_shard_is_named_with_its_rows(tmp_path):
    queries, database, query_labels, db_labels, _ = _case(5)
    np.save(tmp_path / "a.npy", database[:40])
    np.save(tmp_path / "b.npy", database[40:, :16])  # 16 bits in the second shard
    shards = DaskShards(queries, [tmp_path / "a.npy", tmp_path / "b.npy"], query_labels, db_labels, None, False, None,
                        "big", None, 1)
    with dask.config.set(scheduler="synchronous"), pytest.raises(ValueError, match=r"database shard 1 \(rows 40\.\.89\)"):
        shards.summed(split_every=8)


def test_inputs_are_checked_before_any_task():
    queries, database, query_labels, db_labels, _ = _case(6)
    with pytest.raises(ValueError, match="query_chunk"):
        DaskShards(queries, database, query_labels, db_labels, None, False, None, "big", 0, 1)
    with pytest.raises(ValueError, match="db_labels"):
        DaskShards(queries, database, query_labels, db_labels[:-1], None, False, None, "big", None, 1)
    with pytest.raises(ValueError, match="relevance"):
        DaskShards(queries, database, query_labels, None, None, False, None, "big", None, 1)
    assert import_dask()[1] is da
