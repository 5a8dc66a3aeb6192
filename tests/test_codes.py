"""Bit conventions: packing round trips, exact Hamming distances, and every error path."""

import numpy as np
import pytest

import fasttie as ft
from fasttie._kernels.popcount import distance
from fasttie.codes import memory_mapped

N_BITS = [1, 7, 8, 63, 64, 65, 1024]


@pytest.mark.parametrize("n_bits", N_BITS)
def test_round_trip_matrix(n_bits):
    rng = np.random.default_rng(n_bits)
    bits = rng.integers(0, 2, (9, n_bits)).astype(np.uint8)
    for codes in (bits, bits.astype(bool), 2 * bits.astype(np.int8) - 1, 2.0 * bits - 1.0):
        packed = ft.pack_codes(codes)
        assert packed.n_bits == n_bits and packed.n_words == (n_bits + 63) // 64
        np.testing.assert_array_equal(ft.unpack_codes(packed), bits)
    # column-major and strided matrices, and more rows than one packing chunk
    many = rng.integers(0, 2, ((1 << 16) + 3, n_bits)).astype(bool) if n_bits <= 65 else bits.astype(bool)
    for codes in (np.asfortranarray(bits), bits[::2], bits[:, ::-1], many):
        np.testing.assert_array_equal(ft.unpack_codes(ft.pack_codes(codes)), codes)


@pytest.mark.parametrize("n_bits", N_BITS)
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_round_trip_packed_bytes(n_bits, bitorder):
    rng = np.random.default_rng(n_bits + 1)
    bits = rng.integers(0, 2, (5, n_bits)).astype(np.uint8)
    raw = np.packbits(bits, axis=1, bitorder=bitorder)
    packed = ft.pack_codes(raw, packed=True, n_bits=n_bits, bitorder=bitorder)
    np.testing.assert_array_equal(packed.words, ft.pack_codes(bits).words)
    np.testing.assert_array_equal(ft.unpack_codes(packed), bits)


@pytest.mark.parametrize("n_bits", N_BITS)
def test_padding_is_zero(n_bits):
    packed = ft.pack_codes(np.ones((3, n_bits), dtype=np.uint8))
    assert int(np.bitwise_count(packed.words).sum()) == 3 * n_bits


@pytest.mark.parametrize("n_bits", [1, 63, 64, 65, 128, 200, 256, 1024])
def test_hamming_distances_match_unpackbits(n_bits):
    rng = np.random.default_rng(7 * n_bits)
    a = rng.integers(0, 2, (4, n_bits)).astype(np.uint8)
    b = rng.integers(0, 2, (50, n_bits)).astype(np.uint8)
    pa, pb = ft.pack_codes(a), ft.pack_codes(b)
    raw_a, raw_b = np.packbits(a, axis=1), np.packbits(b, axis=1)
    for i in range(len(a)):
        expected = np.unpackbits(raw_a[i] ^ raw_b, axis=1).sum(axis=1)
        got = [distance(pa.words[i], pb.words, j, pb.n_words) for j in range(len(b))]
        np.testing.assert_array_equal(got, expected)


def test_packed_codes_pass_through_and_slicing():
    packed = ft.pack_codes(np.eye(4, 70, dtype=np.uint8))
    assert ft.pack_codes(packed) is packed
    assert packed[1:3].n == 2 and packed[[0, 3]].n == 2
    np.testing.assert_array_equal(ft.unpack_codes(packed[1:3]), np.eye(4, 70, dtype=np.uint8)[1:3])


@pytest.mark.parametrize(
    "codes, error, match",
    [
        (np.array([[1, -1, 0]]), ValueError, "mixes -1 and 0"),
        (np.array([[1, 2, 0]]), ValueError, "packed=True"),
        (np.array([[1.0, np.nan]]), ValueError, "NaN"),
        (np.array([1, -1, 1]), ValueError, "2-D"),
        (np.zeros((0, 8)), ValueError, "empty"),
        (np.zeros((3, 0)), ValueError, "empty"),
        (np.array([["a", "b"]]), TypeError, "numeric"),
        (np.array([[0.5, 1.0]]), ValueError, "±1, 0/1"),
    ],
)
def test_code_errors(codes, error, match):
    with pytest.raises(error, match=match):
        ft.pack_codes(codes)


def test_uint8_matrix_is_never_guessed_packed():
    raw = np.packbits(np.ones((2, 16), dtype=np.uint8), axis=1)
    with pytest.raises(ValueError, match="packed=True"):
        ft.pack_codes(raw)


def test_packed_byte_errors():
    raw = np.packbits(np.ones((2, 12), dtype=np.uint8), axis=1)
    with pytest.raises(ValueError, match="needs n_bits"):
        ft.pack_codes(raw, packed=True)
    with pytest.raises(ValueError, match="shape"):
        ft.pack_codes(raw, packed=True, n_bits=24)
    with pytest.raises(TypeError, match="uint8"):
        ft.pack_codes(raw.astype(np.int16), packed=True, n_bits=12)
    with pytest.raises(ValueError, match="padding bits"):
        ft.pack_codes(np.full((1, 2), 255, dtype=np.uint8), packed=True, n_bits=12)
    with pytest.raises(ValueError, match="bitorder"):
        ft.pack_codes(raw, packed=True, n_bits=12, bitorder="middle")


@pytest.mark.parametrize("n_bits", [64, 128])
def test_bytes_in_the_words_layout_are_not_copied(tmp_path, n_bits):
    """Little-endian bytes of whole words (faiss's layout) become the words as a read-only view:
    a memory-mapped .npy stays on disk; other layouts are copied into new words."""
    rng = np.random.default_rng(n_bits)
    bits = rng.integers(0, 2, (20, n_bits)).astype(np.uint8)
    np.save(tmp_path / "codes.npy", np.packbits(bits, axis=1, bitorder="little"))
    mapped = np.load(tmp_path / "codes.npy", mmap_mode="r")
    packed = ft.pack_codes(mapped, packed=True, n_bits=n_bits, bitorder="little")
    assert np.shares_memory(packed.words, mapped) and not packed.words.flags.writeable
    assert memory_mapped(packed.words) and memory_mapped(packed[3:9].words)
    np.testing.assert_array_equal(ft.unpack_codes(packed), bits)
    big = np.packbits(bits, axis=1)
    for copied in (ft.pack_codes(big, packed=True, n_bits=n_bits),  # MSB first: every byte reordered
                   ft.pack_codes(np.asfortranarray(mapped), packed=True, n_bits=n_bits, bitorder="little")):
        assert not np.shares_memory(copied.words, mapped) and not np.shares_memory(copied.words, big)
        np.testing.assert_array_equal(ft.unpack_codes(copied), bits)
    odd = np.packbits(bits[:, :60], axis=1, bitorder="little")  # padding: words of their own
    assert not np.shares_memory(ft.pack_codes(odd, packed=True, n_bits=60, bitorder="little").words, odd)
    assert not memory_mapped(ft.pack_codes(np.array(mapped), packed=True, n_bits=n_bits, bitorder="little").words)


def test_sharded_codes(tmp_path):
    """A list of arrays or .npy paths is a database in shards, packed tile by tile."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2, (30, 70)).astype(np.uint8)
    np.save(tmp_path / "a.npy", 2 * bits[:10].astype(np.int8) - 1)
    sharded = ft.pack_codes([tmp_path / "a.npy", bits[10:25].astype(bool), bits[25:]])
    assert isinstance(sharded, ft.ShardedCodes) and (sharded.n, sharded.n_bits, sharded.n_words) == (30, 70, 2)
    np.testing.assert_array_equal(sharded.starts, [0, 10, 25, 30])
    assert repr(sharded) == "ShardedCodes(n=30, n_bits=70, shards=3)" and len(sharded) == 30
    tiles = [sharded.tile(1, 10, 18), sharded.tile(1, 18, 25), sharded.tile(0, 0, 10), sharded.tile(2, 25, 30)]
    np.testing.assert_array_equal(np.concatenate([ft.unpack_codes(t) for t in tiles]),
                                  bits[np.r_[10:25, 0:10, 25:30]])
    assert ft.pack_codes(sharded) is sharded
    with pytest.raises(IndexError, match="not within shard 0"):
        sharded.tile(0, 5, 12)
    with pytest.raises(ValueError, match="n_bits"):
        ft.pack_codes(sharded, n_bits=64)
    with pytest.raises(ValueError, match="every shard has 0 rows"):
        ft.pack_codes([np.zeros((0, 4))])
    with pytest.raises(TypeError, match="uint8"):
        ft.pack_codes([np.zeros((2, 8), dtype=np.int8)], packed=True, n_bits=64)
    with pytest.raises(ValueError, match="needs n_bits"):
        ft.pack_codes([np.zeros((2, 8), dtype=np.uint8)], packed=True)
    with pytest.raises(ValueError, match="4 bit columns but n_bits=5"):
        ft.pack_codes([np.zeros((2, 4))], n_bits=5)
    with pytest.raises(TypeError, match="shards must be"):
        ft.ShardedCodes([])
    bad = ft.pack_codes([np.ones((3, 4)), np.full((2, 4), 2.0)])  # values checked when the tile is read
    with pytest.raises(ValueError, match=r"codes shard 1 \(rows 3\.\.4\)"):
        bad.tile(1, 3, 5)


def test_queries_in_shards_are_refused_naming_them(tmp_path):
    # only evaluate's database is read tile by tile; queries in shards get a TypeError naming them
    # and the fix, on the streamed path and the in-memory one alike
    rng = np.random.default_rng(0)
    shards = [rng.integers(0, 2, (5, 64)).astype(np.uint8) for _ in range(2)]
    database = [np.packbits(s, axis=1, bitorder="little") for s in shards]
    with pytest.raises(TypeError, match="queries in shards.*np.concatenate"):
        ft.evaluate(shards, database, [0] * 10, [0] * 10, metrics=["AP"])
    with pytest.raises(TypeError, match="queries in shards.*np.concatenate"):
        ft.evaluate(shards, np.concatenate(shards), [0] * 10, [0] * 10, metrics=["AP"])
    with pytest.raises(TypeError, match="database in shards"):
        ft.search(np.concatenate(shards), shards, k=2)
