"""The compiled TREC table pass (fasttie._kernels.trec_parse) against the general numpy path.

``fasttie.trec.table`` reads each block with the compiled pass and hands the blocks it does not
take (wrong column counts, non-ASCII ids) to the numpy tokenizer, which was the whole reader
before. With ``table._FAST = False`` every block goes the numpy way: both must give the same
records, bit for bit (dtypes, -0.0, hashes included), and the same error messages, on messy
files cut into blocks anywhere. The plain ``split()`` reference of tests/trec/test_readers.py checks the
values themselves.
"""

from __future__ import annotations

import numpy as np
import pytest

from fasttie import parallel, trec
from fasttie._kernels import trec_parse
from fasttie.trec import table
from trec.test_readers import reference_qrels, reference_run, write

SCORES = ["1.5", "-0.0", "+7", "0.30000000000000004", "12345678901234567.5", "9007199254740993",
          "0.1234567890123456789", "-3.75e-2", "1E3", "42", ".5", "5.", "007.250"]
IDS = ["d1", "doc-0001", "CR93E-10279", "x" * 40, "d\u00e9j\u00e0", "\u6587\u66f8", "#d"]


def messy_lines(rng, n_lines, kind, ascii_only=False):
    """Data lines of a run or qrels with mixed separators, some blank and comment lines, ids of
    several widths (non-ASCII unless ``ascii_only``), scores of every shape."""
    ids = [i for i in IDS if i.isascii()] if ascii_only else IDS
    lines, query = [], "q1"
    for i in range(n_lines):
        if rng.random() < 0.1:
            query = f"q{rng.integers(0, 12)}"
        docno = f"{rng.choice(ids)}-{i}"
        sep = rng.choice([" ", "\t", "  "]) if rng.random() < 0.3 else " "
        if kind == "run":
            fields = [query, "Q0", docno, str(i), str(rng.choice(SCORES)), "tag"]
            if rng.random() < 0.05:
                fields += ["extra", "words"]
        else:
            fields = [query, str(rng.integers(0, 3)), docno, str(rng.integers(-1, 4))]
        lines.append(sep.join(fields))
        if rng.random() < 0.03:
            lines.append(rng.choice(["", "   ", "# a comment", "#a b c d e f", "  # indented"]))
    return lines


def read_both(monkeypatch, read, path):
    """(compiled, general) results of read(path), or the error message of each."""
    out = []
    for fast in (True, False):
        monkeypatch.setattr(table, "_FAST", fast)
        try:
            out.append(read(path))
        except ValueError as error:
            out.append(str(error))
    return out


def assert_same_records(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, str):
        assert a == b
        return
    for name in ("query_ids", "offsets", "docno", "_hash") + (("score",) if isinstance(a, trec.Run) else ("rel", "iteration")):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        if x.dtype.kind == "f":
            x, y = x.view(np.int64), y.view(np.int64)  # bitwise: -0.0 kept
        np.testing.assert_array_equal(x, y, err_msg=name)
    if isinstance(a, trec.Run):
        assert a.name == b.name


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_compiled_pass_matches_numpy_path(tmp_path, monkeypatch, seed, kind):
    rng = np.random.default_rng(seed)
    lines = messy_lines(rng, 400, kind, ascii_only=seed % 2 == 0)
    end = "\r\n" if seed % 4 == 1 else "\n"
    text = end.join(lines) + ("" if seed % 3 == 0 else end)
    path = write(tmp_path, f"t.{kind}", text)
    read = trec.read_run if kind == "run" else trec.read_qrels
    for block in (None, int(rng.integers(7, 300)), 1500):
        if block:
            monkeypatch.setattr(table, "_BLOCK", block)
        fast, general = read_both(monkeypatch, read, path)
        assert_same_records(fast, general)
    if kind == "run" and not isinstance(fast, str):
        assert fast.to_dict() == reference_run(text)
    elif kind == "qrels" and not isinstance(fast, str):
        rows = [(q, i, d, r) for q, docno, rel, iteration in fast.items()
                for d, r, i in zip(docno.tolist(), rel.tolist(), iteration.tolist())]
        assert sorted(rows) == sorted(reference_qrels(text))


FAULTS = {
    "run": ["q1 Q0 d 1 2.0", "q1 Q0 x 1 zz t", "q1 Q0 x 1 nan t", "q1 Q0 x 1 1_0 t", "q1 Q0 x 1 -inf t",
            "q1 Q0 caf\udce9 1 1 t"],
    "qrels": ["q1 0 x", "q1 0 x 1 2", "q1 0 x 1.5", "q1 0 x 99999999999999999999", "q1 0 x high"],
}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_errors_are_the_same_on_both_paths(tmp_path, monkeypatch, seed, kind):
    """A bad line anywhere (in a later block, after comments and blank lines): the same message,
    the same line, whichever path its block takes."""
    rng = np.random.default_rng(100 + seed)
    read = trec.read_run if kind == "run" else trec.read_qrels
    monkeypatch.setattr(table, "_BLOCK", int(rng.integers(50, 400)))
    for fault in FAULTS[kind]:
        lines = messy_lines(rng, 300, kind, ascii_only=seed % 2 == 0)
        lines.insert(int(rng.integers(0, len(lines))), fault)
        raw = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")  # \udce9: a lone latin-1 byte
        fast, general = read_both(monkeypatch, read, write(tmp_path, f"bad.{kind}", raw, "wb"))
        assert isinstance(fast, str), fault
        assert fast == general


@pytest.mark.parametrize("table_bits", [None, 3])
@pytest.mark.parametrize("block", [None, 64, 333])
def test_duplicates_across_blocks(tmp_path, monkeypatch, block, table_bits):
    """Each block compares the rows of each query segment (up to half its table's size); the
    queries with several segments (cut by a block boundary, or in a file not written query by
    query) and longer segments are compared afterwards. The first duplicate in file order is the
    one reported."""
    if block:
        monkeypatch.setattr(table, "_BLOCK", block)
    if table_bits:  # 8 slots: a segment's rows after the 4th are left to the check afterwards
        monkeypatch.setattr(trec_parse, "TABLE_BITS", table_bits)
    good = [f"q{i // 50} Q0 d{i} {i} {i / 7:.4f} t" for i in range(500)]
    cases = [
        (good + ["q9 Q0 d451 1 0 t"], 501, "d451", "q9", 452),                         # query q9 spans blocks
        (good[:260] + ["q1 Q0 d60 1 0 t"] + good[260:], 261, "d60", "q1", 61),        # query q1 returns later
        (good[:10] + ["q0 Q0 d3 1 0 t"] + good[10:] + ["q0 Q0 d4 1 0 t"], 11, "d3", "q0", 4),
    ]
    for lines, line, docno, query, first in cases:
        path = write(tmp_path, "dup.run", "\n".join(lines) + "\n")
        for fast in (True, False):
            monkeypatch.setattr(table, "_FAST", fast)
            with pytest.raises(ValueError, match=rf"^{path}, line {line}: duplicate document '{docno}' for query "
                                                 rf"'{query}' in the run \(first seen on line {first}\)"):
                trec.read_run(path)
    qrels = [f"q{i // 40} {i % 3} d{i // 3} 1" for i in range(400)]  # one docno under three subtopics
    path = write(tmp_path, "dup.qrels", "\n".join(qrels + ["q9 2 d130 0"]) + "\n")
    for fast in (True, False):
        monkeypatch.setattr(table, "_FAST", fast)
        with pytest.raises(ValueError, match=r"line 401: duplicate document 'd130' for query 'q9' and iteration '2'"):
            trec.read_qrels(path)


def test_rows_denser_than_the_first_block(tmp_path, monkeypatch):
    """The first block sets how many rows a block is expected to hold; a block of much shorter
    lines holds more and is scanned again with room for the most a block can hold."""
    monkeypatch.setattr(table, "_BLOCK", 4096)
    long = [f"q1 Q0 {'x' * 200}{i} {i} 1.5 {'t' * 100}" for i in range(20)]
    short = [f"q2 Q0 d{i} {i} 2 t" for i in range(3000)]
    text = "\n".join(long + short) + "\n"
    path = write(tmp_path, "dense.run", text)
    fast, general = read_both(monkeypatch, trec.read_run, path)
    assert_same_records(fast, general)
    assert fast.to_dict() == reference_run(text) and len(fast) == 3020


def test_blocks_in_parallel(tmp_path, monkeypatch):
    """A file large enough for several threads (past parallel.SMALL_WORK bytes), in many blocks:
    the same records with one thread, with two, and on the numpy path."""
    rng = np.random.default_rng(7)
    lines = [f"{100 + q} Q0 doc{rng.integers(0, 10**8):08d}-{i} {i} {rng.normal():.4f} run"
             for q in range(40) for i in range(700)]
    lines[12345] = "# a comment"
    path = write(tmp_path, "big.run", "\n".join(lines) + "\n")
    assert path.stat().st_size > parallel.SMALL_WORK
    monkeypatch.setattr(table, "_BLOCK", 1 << 15)
    runs = []
    for threads in ("1", "2"):
        monkeypatch.setenv("FASTTIE_NUM_THREADS", threads)
        runs.append(trec.read_run(path))
    monkeypatch.setattr(table, "_FAST", False)
    runs.append(trec.read_run(path))
    for run in runs[1:]:
        assert_same_records(runs[0], run)
    assert len(runs[0]) == len(lines) - 1
