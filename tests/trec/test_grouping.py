"""fasttie.trec.grouping: row hashes (the same for a string and its zero-padded UTF-8 bytes,
whatever the padding), query segments regrouped as numpy's stable sort by query does, and
duplicates found as a plain loop over the rows finds them, never on a mere hash collision."""

import numpy as np
import pytest

from fasttie.trec.grouping import Segments, byte_matrix_hash, hash_strings, raise_duplicate


def _padded_bytes(strings, width):
    """Zero-padded UTF-8 rows of ``width`` bytes, built one string at a time."""
    out = np.zeros((len(strings), width), dtype=np.uint8)
    for i, text in enumerate(strings):
        data = text.encode("utf-8")
        out[i, : len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def _random_strings(rng, n, alphabet):
    return [
        "".join(rng.choice(alphabet, size=int(rng.integers(0, 30)))) for _ in range(n)
    ]


@pytest.mark.parametrize("alphabet", [list("abcXYZ019-_."), list("aé€𝄞z")])
def test_string_hash_is_the_byte_hash_at_any_padding(alphabet):
    rng = np.random.default_rng(len(alphabet))
    strings = _random_strings(rng, 300, alphabet)
    hashed = hash_strings(np.array(strings, dtype=str))
    longest = max(len(s.encode("utf-8")) for s in strings)
    for width in (-(-longest // 8) * 8, -(-longest // 8) * 8 + 8, 128):
        assert np.array_equal(byte_matrix_hash(_padded_bytes(strings, width)), hashed)
    # equal strings, equal hashes; different strings, different hashes (64 bits: no collision here)
    by_string = {}
    for text, h in zip(strings, hashed.tolist()):
        by_string.setdefault(text, set()).add(h)
    assert all(len(h) == 1 for h in by_string.values())
    assert len({h.pop() for h in by_string.values()}) == len(by_string)


def test_empty_inputs():
    assert hash_strings(np.array([], dtype=str)).shape == (0,)
    assert np.array_equal(hash_strings(np.array(["", ""], dtype=str)), byte_matrix_hash(np.zeros((2, 8), np.uint8)))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("run_length", [1, 40])  # short runs: one gather per row; long: whole slices
def test_segments_regroup_as_a_stable_sort(seed, run_length):
    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(1, 8))
    runs = rng.integers(0, n_queries, int(rng.integers(1, 30)))
    codes = np.repeat(runs, rng.integers(1, run_length + 1, len(runs)))
    rows = np.arange(len(codes)) * 10  # a column that tells where each row came from
    segments = Segments.from_codes(codes, n_queries)
    (grouped_codes, grouped_rows) = segments.regroup(codes, rows)
    order = np.argsort(codes, kind="stable")
    assert np.array_equal(grouped_codes, codes[order]) and np.array_equal(grouped_rows, rows[order])
    assert np.array_equal(segments.offsets, np.concatenate(([0], np.cumsum(np.bincount(codes, minlength=n_queries)))))
    assert segments.grouped == bool(np.all(np.diff(codes) >= 0))
    probe = rng.integers(0, len(codes), 50)
    assert np.array_equal(segments.query_of(probe), codes[probe])
    assert int(segments.lengths.sum()) == len(codes) and np.all(segments.codes[1:] != segments.codes[:-1])


def _first_duplicate(query, docno, iteration):
    """(row, first row) of the first repeated (query, iteration, docno), in row order."""
    seen = {}
    for row, key in enumerate(zip(query, docno, iteration)):
        if key in seen:
            return row, seen[key]
        seen[key] = row
    return None


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("with_iteration", [False, True])
def test_duplicates_as_a_loop_finds_them(seed, with_iteration):
    rng = np.random.default_rng(seed)
    n = 40
    query = rng.integers(0, 3, n)
    docno = np.array([f"d{x}" for x in rng.integers(0, 25, n)])
    iteration = np.array([str(x) for x in rng.integers(0, 2, n)]) if with_iteration else None
    query_ids = np.array(["qa", "qb", "qc"])
    keys = hash_strings(docno) + query.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    if with_iteration:
        keys = keys + hash_strings(iteration) * np.uint64(3)
    expected = _first_duplicate(query.tolist(), docno.tolist(), [None] * n if iteration is None else iteration.tolist())

    def call(keys):
        raise_duplicate(keys, docno, iteration, query_ids, lambda rows: query[rows], lambda rows: rows + 1, "line",
                        "run")

    if expected is None:
        call(keys)
    else:
        row, first = expected
        with pytest.raises(ValueError) as error:
            call(keys)
        assert str(error.value).startswith(f"line {row + 1}: duplicate document {str(docno[row])!r} for query "
                                           f"{str(query_ids[query[row]])!r}")
        assert str(error.value).endswith(f"in the run (first seen on line {first + 1})")
    # every key equal: all candidates, and only real repeats raise (a collision never does)
    unique = np.array([f"u{i}" for i in range(n)])
    raise_duplicate(np.zeros(n, np.uint64), unique, None, query_ids, lambda rows: query[rows], lambda rows: rows + 1,
                    "line", "run")
