"""A database read tile by tile (memory-mapped files, lists of shards): the same values, bitwise,
as the in-memory pass over the concatenated database, with no whole-database array."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fasttie as ft
from fasttie.codes import memory_mapped
from fasttie.hamming import streamed

from oracle import grades_from_labels, hamming_distances, oracle_evaluate

METRICS = ["AP", "AP@7", "nDCG", "nDCG@5", "P@4", "R@9", "RR", "Rprec", "WAP@6", "P(radius=20)", "R(radius=24)",
           "AP(radius=22)"]


def _case(seed, n_db=3000, n_q=9, n_classes=5):
    rng = np.random.default_rng(seed)
    centers = rng.integers(0, 256, (n_classes, 8), dtype=np.uint8)
    db_labels = rng.integers(0, n_classes, n_db)
    # codes near their class's center: ties and relevant items at small distances
    db = centers[db_labels] ^ (rng.random((n_db, 64)) < 0.2).reshape(n_db, 8, 8).astype(np.uint8).dot(
        1 << np.arange(8)).astype(np.uint8)
    query_labels = rng.integers(0, n_classes, n_q)
    queries = centers[query_labels] ^ rng.integers(0, 256, (n_q, 8), dtype=np.uint8) & 0x11
    return queries, db, query_labels, db_labels


def _pack(x):
    return ft.pack_codes(x, packed=True, n_bits=64, bitorder="little")


def _same(a, b):
    assert a.mean.keys() == b.mean.keys()
    for name in a.per_query:
        np.testing.assert_array_equal(a.per_query[name], b.per_query[name], err_msg=name)
    assert a.mean == b.mean or all(np.isnan(a.mean[k]) and np.isnan(b.mean[k]) or a.mean[k] == b.mean[k]
                                   for k in a.mean)
    assert a.n_empty == b.n_empty and a.settings == b.settings


@pytest.fixture
def tiles(monkeypatch):
    """Tiles of 700 rows, and the database size of every counts_of call."""
    monkeypatch.setattr(streamed, "TILE_ROWS", 700)
    seen = []
    original = streamed.counts_of

    def counting(queries, database, *args, **kwargs):
        seen.append(database.n)
        return original(queries, database, *args, **kwargs)

    monkeypatch.setattr(streamed, "counts_of", counting)
    return seen


@pytest.mark.parametrize("ties", ["average", "stable", "pessimistic"])
def test_memory_mapped_file_is_streamed_bitwise(tmp_path, tiles, ties, monkeypatch):
    queries, db, query_labels, db_labels = _case(1)
    np.save(tmp_path / "db.npy", db)
    np.save(tmp_path / "labels.npy", db_labels.astype(np.int32))
    mapped = np.load(tmp_path / "db.npy", mmap_mode="r")
    packed = _pack(mapped)
    assert np.shares_memory(packed.words, mapped) and not packed.words.flags.writeable
    labels = np.load(tmp_path / "labels.npy", mmap_mode="r")
    if ties == "stable":  # ranks of at most 1,000 items a sub-block: the queries' ranks in several passes
        monkeypatch.setattr(streamed, "_RANK_BUDGET", 16 * 1000)
        blocks = streamed._rank_blocks(ft.tie_stats(_pack(queries), _pack(db.copy()), query_labels, db_labels).counts,
                                       len(db), len(db), 64)
        assert len(blocks) == len(queries) and blocks[0] == (0, 1)  # ~600 relevant items per query
    streamed_result = ft.evaluate(_pack(queries), packed, query_labels, labels, metrics=METRICS, ties=ties)
    assert max(tiles) == 700 and sum(tiles) == len(db)  # counted tile by tile, never whole
    in_memory = ft.evaluate(_pack(queries), _pack(db.copy()), query_labels, db_labels, metrics=METRICS, ties=ties)
    _same(streamed_result, in_memory)


@pytest.mark.parametrize("ties", ["average", "stable"])
def test_list_of_files_is_streamed_bitwise(tmp_path, tiles, ties):
    queries, db, query_labels, db_labels = _case(2)
    bounds = [0, 1000, 1000, 2300, 3000]  # an empty shard too
    paths, label_paths = [], []
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        paths.append(tmp_path / f"db{i}.npy")
        label_paths.append(tmp_path / f"labels{i}.npy")
        np.save(paths[-1], db[lo:hi])
        np.save(label_paths[-1], db_labels[lo:hi])
    sharded = ft.pack_codes(paths, packed=True, n_bits=64, bitorder="little")
    assert isinstance(sharded, ft.ShardedCodes) and sharded.n == len(db) and len(sharded.shards) == 4
    # the non-empty shards are words viewing their files, the empty one stays as it is
    assert [memory_mapped(s.words) for s in sharded.shards if isinstance(s, ft.PackedCodes)] == [True] * 3
    in_memory = ft.evaluate(_pack(queries), _pack(db.copy()), query_labels, db_labels, metrics=METRICS, ties=ties)
    np.save(tmp_path / "labels.npy", db_labels)
    for labels in (label_paths, db_labels, np.load(tmp_path / "labels.npy", mmap_mode="r")):
        _same(ft.evaluate(_pack(queries), sharded, query_labels, labels, metrics=METRICS, ties=ties), in_memory)
    assert max(tiles) <= 700 and sum(tiles) == 3 * len(db)


def test_shards_are_packed_tile_by_tile(tmp_path, tiles):
    """Shards that are not yet words (big-endian bytes, ±1 matrices) are packed one tile at a time."""
    queries, db, query_labels, db_labels = _case(3, n_db=2000)
    big = np.packbits(np.unpackbits(db, axis=1, bitorder="little"), axis=1)  # the same bits, MSB first
    in_memory = ft.evaluate(_pack(queries), _pack(db.copy()), query_labels, db_labels, metrics=METRICS)
    sharded = ft.pack_codes([big[:1500], big[1500:]], packed=True, n_bits=64)
    assert not any(isinstance(s, ft.PackedCodes) for s in sharded.shards)  # packed when read, tile by tile
    _same(ft.evaluate(_pack(queries), sharded, query_labels, db_labels, metrics=METRICS), in_memory)
    pm1 = np.unpackbits(db, axis=1, bitorder="little").astype(np.int8) * 2 - 1
    np.save(tmp_path / "pm1.npy", pm1)
    _same(ft.evaluate(_pack(queries), [tmp_path / "pm1.npy"], query_labels, db_labels, metrics=METRICS), in_memory)


@pytest.mark.parametrize("kind", ["multihot", "listed"])
def test_other_relevance_and_options(tmp_path, tiles, kind):
    queries, db, _, _ = _case(4, n_db=2500, n_q=6)
    rng = np.random.default_rng(4)
    if kind == "multihot":
        relevance = dict(query_labels=rng.integers(0, 2, (6, 3)), db_labels=rng.integers(0, 2, (2500, 3)))
    else:
        grades = rng.integers(0, 4, (6, 2500)) * (rng.random((6, 2500)) < 0.05)
        indptr = np.r_[0, np.cumsum((grades > 0).sum(1))]
        indices = np.concatenate([np.flatnonzero(g) for g in grades])
        relevance = dict(relevance=(indptr, indices, np.concatenate([g[g > 0] for g in grades])))
    np.save(tmp_path / "db.npy", db)
    mapped = _pack(np.load(tmp_path / "db.npy", mmap_mode="r"))
    options = dict(metrics=["AP", "nDCG@10", "P@5", "RR"], curves=[1, 10, 100])
    for extra in (dict(ties="average", spread=True), dict(ties="optimistic"), dict(ties="stable")):
        in_memory = ft.evaluate(_pack(queries), _pack(db.copy()), **relevance, **options, **extra)
        result = ft.evaluate(_pack(queries), mapped, **relevance, **options, **extra)
        _same(result, in_memory)
        for name, curve in in_memory.curves.items():
            np.testing.assert_array_equal(result.curves[name], curve)
        if extra.get("spread"):
            for name in in_memory.tie_std:
                np.testing.assert_array_equal(result.tie_std[name], in_memory.tie_std[name])
                np.testing.assert_array_equal(result.tie_min[name], in_memory.tie_min[name])


def test_query_blocks_and_progress(tmp_path, tiles, monkeypatch, capsys):
    """Several query blocks each read the database once; a progress bar counts code pairs."""
    monkeypatch.setattr(streamed, "_block_size", lambda *args: 4)
    queries, db, query_labels, db_labels = _case(5, n_db=1500)
    np.save(tmp_path / "db.npy", db)
    mapped = _pack(np.load(tmp_path / "db.npy", mmap_mode="r"))
    result = ft.evaluate(_pack(queries), mapped, query_labels, db_labels, metrics=METRICS, progress=True)
    assert sum(tiles) == 3 * len(db)  # 9 queries in blocks of 4: three reads
    assert "fasttie" in capsys.readouterr().err
    _same(result, ft.evaluate(_pack(queries), _pack(db.copy()), query_labels, db_labels, metrics=METRICS))


def test_against_the_oracle(tmp_path, monkeypatch):
    """A tiny case whose every tie order the oracle enumerates, the database in three files."""
    monkeypatch.setattr(streamed, "TILE_ROWS", 2)
    rng = np.random.default_rng(6)
    bits = rng.integers(0, 2, (7, 3))
    queries = rng.integers(0, 2, (2, 3))
    db_labels, query_labels = rng.integers(0, 2, 7), np.array([0, 1])
    paths = []
    for i, (lo, hi) in enumerate([(0, 3), (3, 4), (4, 7)]):
        paths.append(tmp_path / f"{i}.npy")
        np.save(paths[-1], bits[lo:hi].astype(np.int8))
    metrics = ["AP", "nDCG@3", "P@2", "RR"]
    result = ft.evaluate(queries, paths, query_labels, db_labels, metrics=metrics)
    _, expected, _ = oracle_evaluate(hamming_distances(queries, bits), grades_from_labels(query_labels, db_labels),
                                     metrics)
    for name in metrics:
        np.testing.assert_allclose(result.per_query[name], expected[name], rtol=0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.lists(st.integers(0, 600), min_size=1, max_size=4),
       st.sampled_from(["average", "stable", "optimistic"]))
def test_any_tiling_is_bitwise(seed, tile_rows, sizes, ties):
    if sum(sizes) == 0:
        sizes = sizes + [1]
    queries, db, query_labels, db_labels = _case(seed, n_db=sum(sizes), n_q=5)
    bounds = np.r_[0, np.cumsum(sizes)]
    shards = [db[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]
    original = streamed.TILE_ROWS
    streamed.TILE_ROWS = tile_rows
    try:
        result = ft.evaluate(_pack(queries), ft.pack_codes(shards, packed=True, n_bits=64, bitorder="little"),
                             query_labels, db_labels, metrics=METRICS, ties=ties)
    finally:
        streamed.TILE_ROWS = original
    _same(result, ft.evaluate(_pack(queries), _pack(db.copy()), query_labels, db_labels, metrics=METRICS, ties=ties))


@pytest.mark.parametrize("n_bits", [128, 256])
@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
@pytest.mark.parametrize("metrics", [["AP", "nDCG@10", "RR"], ["AP@10", "nDCG@20", "P@5"]])
def test_stable_tiles_of_wider_codes_and_every_relevance_kind(tiles, n_bits, kind, metrics):
    """ties="stable" over tiles ranks each tile's items with the in-memory pass's scans (the sweeps
    of a class's queries for the whole list, the near scan with cutoffs only: one kernel per code
    width) and merges the tiles' ranks per query: bitwise the in-memory pass."""
    rng = np.random.default_rng(n_bits)
    n_q, n_db = 10, 2000
    centers = rng.integers(0, 2, (4, n_bits), dtype=np.uint8)
    db_labels = rng.integers(0, 4, n_db)
    db = (centers[db_labels] ^ (rng.random((n_db, n_bits)) < 0.15)).astype(np.uint8)
    query_labels = rng.integers(0, 4, n_q)
    queries = (centers[query_labels] ^ (rng.random((n_q, n_bits)) < 0.1)).astype(np.uint8)
    if kind == "class":
        relevance = dict(query_labels=query_labels, db_labels=db_labels)
    elif kind == "multihot":
        relevance = dict(query_labels=np.eye(4, dtype=np.uint8)[query_labels] | rng.integers(0, 2, (n_q, 4)),
                         db_labels=np.eye(4, dtype=np.uint8)[db_labels])
    else:
        grades = (db_labels[None, :] == query_labels[:, None]) * rng.integers(1, 4, (n_q, n_db))
        indptr = np.r_[0, np.cumsum((grades > 0).sum(1))]
        indices = np.concatenate([np.flatnonzero(g) for g in grades])
        relevance = dict(relevance=(indptr, indices, np.concatenate([g[g > 0] for g in grades])))
    parts = ft.pack_codes([db[:900], db[900:]], n_bits=n_bits)
    streamed_result = ft.evaluate(queries, parts, metrics=metrics, ties="stable", **relevance)
    assert max(tiles) <= 700 and sum(tiles) == n_db
    _same(streamed_result, ft.evaluate(queries, db, metrics=metrics, ties="stable", **relevance))


def test_errors(tmp_path):
    queries, db, query_labels, db_labels = _case(7, n_db=100)
    sharded = ft.pack_codes([db[:60], db[60:]], packed=True, n_bits=64, bitorder="little")
    with pytest.raises(ValueError, match="db_labels.*shard 1 has 30 rows"):
        ft.evaluate(_pack(queries), sharded, query_labels, [db_labels[:60], db_labels[60:90]])
    with pytest.raises(ValueError, match="99 rows"):
        ft.evaluate(_pack(queries), sharded, query_labels, db_labels[:99])
    with pytest.raises(ValueError, match="different code lengths"):
        ft.pack_codes([np.ones((3, 5)), np.ones((3, 4))])
    with pytest.raises(ValueError, match="shape"):
        ft.pack_codes([db, np.zeros((3, 16), dtype=np.uint8)], packed=True, n_bits=64, bitorder="little")
    with pytest.raises(ValueError, match="bits"):
        ft.evaluate(ft.pack_codes(queries[:, :4], packed=True, n_bits=32), sharded, query_labels, db_labels)
    with pytest.raises(TypeError, match="database in shards.*only fasttie.evaluate's database"):
        ft.search(_pack(queries), sharded, k=3)
    bad = np.ones((5, 3), dtype=np.int8) * 3
    with pytest.raises(ValueError, match=r"shard 1 \(rows 100\.\.104\)"):
        ft.evaluate(np.ones((2, 3)), [np.ones((100, 3), dtype=np.int8), bad], [0, 1], np.zeros(105, dtype=int))
    with pytest.raises(ValueError, match="cannot read"):
        ft.pack_codes([tmp_path / "missing.npy"])


def test_a_sharded_database_is_refused_on_the_gpu():
    queries, db, query_labels, db_labels = _case(8, n_db=50)
    with pytest.raises(ValueError, match="streamed on the CPU"):
        ft.evaluate(_pack(queries), [db[:20], db[20:]], query_labels, db_labels, device="cuda")
