"""fasttie.cli.loaders: the command line's array files (.npy memory-mapped, .npz by key), packed
codes and listed relevance read back to what was saved, and each bad file a one-line error
naming the option."""

import numpy as np
import pytest

import fasttie as ft
from fasttie.cli.loaders import load_array, load_codes, load_relevance, split_key


def test_split_key():
    assert split_key("a.npz:codes") == ("a.npz", "codes")
    assert split_key("C:\\data\\a.npy") == ("C:\\data\\a.npy", None)
    assert split_key("dir:x/a.npz") == ("dir:x/a.npz", None)


@pytest.mark.parametrize("seed", range(3))
def test_arrays_read_back(tmp_path, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(-5, 5, (7, 3)), rng.random(11)
    np.save(tmp_path / "a.npy", a)
    np.savez(tmp_path / "ab.npz", a=a, b=b)
    np.savez(tmp_path / "only.npz", b=b)
    mapped = load_array(str(tmp_path / "a.npy"), option="--x")
    assert isinstance(mapped, np.memmap) and not mapped.flags.writeable and np.array_equal(mapped, a)
    assert np.array_equal(load_array(f"{tmp_path / 'ab.npz'}:b", option="--x"), b)
    assert np.array_equal(load_array(str(tmp_path / "ab.npz"), option="--x", default_key="a"), a)
    assert np.array_equal(load_array(str(tmp_path / "only.npz"), option="--x"), b)  # the only array


def test_bad_files_name_the_option(tmp_path):
    np.savez(tmp_path / "ab.npz", a=np.zeros(2), b=np.ones(2))
    np.save(tmp_path / "objects.npy", np.array([{}], dtype=object), allow_pickle=True)
    (tmp_path / "x.txt").write_text("1 0\n")
    cases = [(tmp_path / "missing.npy", "file not found"), (tmp_path / "ab.npz", "holds 2 arrays (a, b)"),
             (f"{tmp_path / 'ab.npz'}:c", "has no array 'c'; it holds: a, b"), (tmp_path / "x.txt", "expected a .npy"),
             (tmp_path, "is a directory")]
    for spec, fragment in cases:
        with pytest.raises(ValueError, match="^--q: ") as error:
            load_array(str(spec), option="--q")
        assert fragment in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(ValueError, match="^--q: cannot read .*objects.npy"):  # never unpickled
        load_array(str(tmp_path / "objects.npy"), option="--q")


@pytest.mark.parametrize("n_bits", [13, 64, 70])
def test_codes_packed_or_not_give_the_same_words(tmp_path, n_bits):
    rng = np.random.default_rng(n_bits)
    bits = rng.integers(0, 2, (9, n_bits)).astype(np.uint8)
    np.save(tmp_path / "pm.npy", bits.astype(np.int8) * 2 - 1)  # +-1 codes
    for order in ("big", "little"):
        np.save(tmp_path / f"{order}.npy", np.packbits(bits, axis=1, bitorder=order))
        packed = load_codes(str(tmp_path / f"{order}.npy"), option="--q", packed=True, n_bits=n_bits, bitorder=order)
        assert np.array_equal(packed.words, ft.pack_codes(bits).words)
    assert np.array_equal(load_codes(str(tmp_path / "pm.npy"), option="--q").words, ft.pack_codes(bits).words)
    # unpacked again, the words are the saved bits
    unpacked = np.asarray(ft.unpack_codes(load_codes(str(tmp_path / "pm.npy"), option="--q")))
    assert np.array_equal(unpacked > 0, bits.astype(bool))
    with pytest.raises(ValueError, match="--q: --packed needs --bits N"):
        load_codes(str(tmp_path / "big.npy"), option="--q", packed=True)


def test_relevance_from_savez_and_scipy(tmp_path):
    rng = np.random.default_rng(4)
    sizes = rng.integers(0, 5, 6)
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    indices = np.concatenate([np.sort(rng.choice(20, s, replace=False)) for s in sizes])
    grades = rng.integers(1, 4, len(indices))
    np.savez(tmp_path / "rel.npz", indptr=indptr, indices=indices, grades=grades)
    relevance, shape = load_relevance(str(tmp_path / "rel.npz"))
    assert shape is None and all(np.array_equal(x, y) for x, y in zip(relevance, (indptr, indices, grades)))
    sparse = pytest.importorskip("scipy.sparse")
    sparse.save_npz(tmp_path / "csr.npz", sparse.csr_matrix((grades, indices, indptr), shape=(6, 20)))
    (p, i, g), shape = load_relevance(str(tmp_path / "csr.npz"))
    assert shape == (6, 20)
    dense = np.zeros((6, 20), int)
    for q in range(6):
        dense[q, i[p[q]:p[q + 1]]] = g[p[q]:p[q + 1]]
    expected = np.zeros((6, 20), int)
    for q in range(6):
        expected[q, indices[indptr[q]:indptr[q + 1]]] = grades[indptr[q]:indptr[q + 1]]
    assert np.array_equal(dense, expected)
    with pytest.raises(ValueError, match="--relevance: expected a .npz file"):
        load_relevance(str(tmp_path / "rel.npy"))
