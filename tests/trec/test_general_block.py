"""fasttie.trec.general_block: a block of lines tokenized with numpy gives the rows, columns,
file lines and query runs that ``str.split`` on each line and ``itertools.groupby`` give, on
random files with any whitespace, blank and comment lines; malformed lines raise naming them."""

import itertools

import numpy as np
import pytest

from fasttie.trec.general_block import Block, LineEndings, query_segments
from fasttie.trec.grouping import hash_strings

ALPHABET = list("abcXYZ0129-_.:/") + ["é", "文"]


def _random_file(rng, n_cols, comments=True, extra=False):
    """(text, rows as token lists, 1-based line of each row)."""
    lines, rows, at = [], [], []
    queries = [f"q{i}" for i in range(int(rng.integers(1, 5)))]
    for _ in range(int(rng.integers(1, 40))):
        kind = rng.random()
        if comments and kind < 0.1:
            lines.append(rng.choice([" ", "", "\t "]))  # blank
            continue
        if comments and kind < 0.2:
            lines.append("# a comment with " + " ".join(["w"] * n_cols))
            continue
        tokens = [str(rng.choice(queries))] + ["".join(rng.choice(ALPHABET, int(rng.integers(1, 12))))
                                               for _ in range(n_cols - 1)]
        shown = tokens + (["extra", "tokens"] if extra and rng.random() < 0.5 else [])
        gaps = [str(rng.choice([" ", "\t", "  ", " \t "])) for _ in shown]
        lines.append(gaps[0] * int(rng.random() < 0.2) + "".join(t + g for t, g in zip(shown[:-1], gaps[1:])) + shown[-1])
        rows.append(tokens)
        at.append(len(lines))
    if not rows:  # at least one row
        lines.append(" ".join(["q0"] + ["x"] * (n_cols - 1)))
        rows.append(lines[-1].split())
        at.append(len(lines))
    return "\n".join(lines) + "\n", rows, at


def _block(text, n_cols, line0=0, extra_ok=False):
    source = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    return Block(source, 0, len(source), line0, n_cols, "f.txt", "query docno score", extra_ok=extra_ok)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("n_cols", [2, 4])
def test_rows_columns_and_lines_as_str_split(seed, n_cols):
    rng = np.random.default_rng(seed)
    extra = seed % 3 == 0
    text, rows, at = _random_file(rng, n_cols, comments=seed % 2 == 0, extra=extra)
    block = _block(text, n_cols, line0=7, extra_ok=extra)
    assert block.n_rows == len(rows)
    assert block.lines(np.arange(len(rows))).tolist() == [7 + line for line in at]
    for col in range(n_cols):
        mat, lengths = block.column(col)
        assert mat.shape[1] % 8 == 0
        assert block.strings(mat, lengths, "id").tolist() == [row[col] for row in rows]
        assert [block.text(r, col) for r in range(len(rows))] == [row[col] for row in rows]
        # zero padding after each token
        for r, row in enumerate(rows):
            assert not mat[r, len(row[col].encode("utf-8")):].any()
    ids, run_lengths, id_hashes = query_segments(block)
    runs = [(key, len(list(group))) for key, group in itertools.groupby(row[0] for row in rows)]
    assert ids.tolist() == [key for key, _ in runs] and run_lengths.tolist() == [n for _, n in runs]
    assert np.array_equal(id_hashes, hash_strings(np.array([key for key, _ in runs])))


def test_malformed_lines_name_their_line():
    with pytest.raises(ValueError, match=r"^f.txt, line 13: expected 3 columns \(query docno score\), found 2: 'q1 d2'"):
        _block("q1 d1 1\n\n# c\nq1 d2\n", 3, line0=9)
    with pytest.raises(ValueError, match=r"^f.txt, line 12: expected at least 3 columns"):
        _block("q1 d1 1 x y\nq1 d2 2\nq1\n", 3, line0=9, extra_ok=True)
    with pytest.raises(ValueError, match="f.txt, line 2: a NUL byte"):
        _block("q1 d1 1\nq1 d\0 2\n", 3)
    with pytest.raises(ValueError, match="f.txt, line 2: a UTF-8 byte order mark"):
        _block("q1 d1 1\n\ufeffq1 d2 2\n", 3)
    with pytest.raises(LineEndings):
        _block("q1 d1 1\rq1 d2 2\n", 3)
    _block("q1 d1 1\r\nq1 d2 2\r\n", 3)  # Windows line endings are whitespace
    block = _block("q1 d1 x1\n", 3)
    with pytest.raises(ValueError, match=r"^f.txt, line 1: score 'x1' is wrong$"):
        block.fail(0, 2, "score", "is wrong")
    block = _block("q1 \xff\n", 2)
    block.source = block.source.copy()
    block.source[3:5] = [0xC3, 0x28]  # invalid UTF-8
    mat, lengths = block.column(1)
    with pytest.raises(ValueError, match="f.txt, line 1: docno is not valid UTF-8"):
        block.strings(mat, lengths, "docno")
