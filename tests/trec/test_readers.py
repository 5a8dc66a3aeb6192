"""TREC qrels / run readers (fasttie.trec.readers): read_run and read_qrels against a plain
``line.split()`` parser written here (Python's ``float``/``int``, the semantics the vectorized
readers must reproduce exactly), on messy whitespace, comments, compressed files, odd bytes and
line endings, with every error naming the file and the line.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from decimal import Decimal, localcontext

import numpy as np
import pytest

from fasttie import trec
from fasttie.trec import grouping, numeric, table


def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        with open(path, "w", newline="") as f:  # keep "\r\n" as written
            f.write(text)
    return path


def reference_run(text):
    """{qid: {docno: score}} with a plain split() loop, as trec_eval reads runs: blank lines
    and comment lines (first non-blank character '#') skipped, columns after the tag ignored."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            qid, _, docno, _, score, _ = fields[:6]
            out.setdefault(qid, {})[docno] = float(score)
    return out


def reference_qrels(text):
    """[(qid, iteration, docno, rel)] in file order (blank and comment lines skipped)."""
    rows = (line.split() for line in text.splitlines())
    return [(f[0], f[1], f[2], int(f[3])) for f in rows if f and not f[0].startswith("#")]


def random_run_text(rng, n_queries=20, max_docs=30, messy=False):
    lines = []
    for q in rng.permutation(n_queries):
        docs = rng.choice(10**6, rng.integers(1, max_docs), replace=False)
        for rank, d in enumerate(docs, start=1):
            score = float(rng.choice([rng.normal(), round(rng.normal(), 2), float(rng.integers(-3, 3))]))
            text = rng.choice([repr(score), f"{score:.4f}", f"{score:.6e}", f"{score:g}"])
            sep = rng.choice([" ", "\t", "  ", " \t "]) if messy else " "
            lines.append(sep.join([f"q{q}", "Q0", f"doc-{d}", str(rank), text, "tag"]))
            if messy and rng.random() < 0.05:
                lines.append(rng.choice(["", "   ", "\t"]))
    end = "\r\n" if messy and rng.random() < 0.5 else "\n"
    return end.join(lines) + end


# --------------------------------------------------------------------------------------------
# reading


def test_read_run_round_trip(tmp_path):
    text = "q2 Q0 b 1 3.5 run1\nq10 Q0 a 1 2 run1\nq2 Q0 a 2 3.5 run1\nq10 Q0 c 2 -1e-3 run1\n"
    run = trec.read_run(write(tmp_path, "r.txt", text))
    assert run.query_ids.tolist() == ["q10", "q2"]  # sorted as strings, not numbers
    assert run.offsets.tolist() == [0, 2, 4]
    assert run.docno.tolist() == ["a", "c", "b", "a"]  # file order within a query
    assert run.score.tolist() == [2.0, -0.001, 3.5, 3.5]
    assert run.score.dtype == np.float64 and run.offsets.dtype == np.int64
    assert run.name == "run1" and run.path == str(tmp_path / "r.txt") and len(run) == 4
    assert run.qid.tolist() == ["q10", "q10", "q2", "q2"]
    assert run.qid_codes.tolist() == [0, 0, 1, 1]
    docno, score = run.query("q2")
    assert docno.tolist() == ["b", "a"] and score.tolist() == [3.5, 3.5]
    assert "q2" in run and "q3" not in run
    with pytest.raises(KeyError, match="q3"):
        run.query("q3")
    assert run.to_dict() == reference_run(text)
    assert [q for q, _, _ in run.items()] == ["q10", "q2"]


def test_read_qrels_round_trip_keeps_subtopics(tmp_path):
    text = "1 0 d1 1\n1 0 d2 0\n2 0 d9 -2\n1 0 d3 2\n"
    qrels = trec.read_qrels(write(tmp_path, "q.txt", text))
    assert qrels.query_ids.tolist() == ["1", "2"]
    assert qrels.docno.tolist() == ["d1", "d2", "d3", "d9"]
    assert qrels.rel.tolist() == [1, 0, 2, -2] and qrels.rel.dtype == np.int64
    assert qrels.iteration.tolist() == ["0"] * 4
    assert qrels.to_dict() == {"1": {"d1": 1, "d2": 0, "d3": 2}, "2": {"d9": -2}}
    # diversity qrels: the same document under several subtopics is fine, column 2 kept
    text = "7 1 a 1\n7 2 a 0\n7 2 b 1\n7 10 a 1\n"
    qrels = trec.read_qrels(write(tmp_path, "div.txt", text))
    docno, rel, iteration = qrels.query("7")
    assert list(zip(iteration.tolist(), docno.tolist(), rel.tolist())) == [("1", "a", 1), ("2", "a", 0), ("2", "b", 1), ("10", "a", 1)]
    assert qrels.to_dict() == {"7": {"a": 1, "b": 1}}  # highest grade over subtopics


@pytest.mark.parametrize("seed", range(6))
def test_messy_whitespace_blank_lines_and_small_blocks(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    text = random_run_text(rng, messy=seed % 2 == 1)
    path = write(tmp_path, "r.txt", text)
    expected = reference_run(text)
    assert trec.read_run(path).to_dict() == expected
    monkeypatch.setattr(table, "_BLOCK", int(rng.integers(7, 200)))  # many blocks, lines cut anywhere
    run = trec.read_run(path)
    assert run.to_dict() == expected
    assert run.query_ids.tolist() == sorted(expected)


def test_regrouping_long_and_short_segments(tmp_path):
    """Queries out of string order: long runs of one query are moved as slices, short ones
    row by row; either way rows end up grouped by query, in file order within a query."""
    rng = np.random.default_rng(5)
    blocks = [("9", 300), ("10", 200), ("9", 100), ("2", 250), ("10", 50)]  # long segments
    rows, n = [], 0
    for qid, count in blocks:
        rows += [(qid, f"d{n + i}", float(rng.integers(0, 9))) for i in range(count)]
        n += count
    short = [(f"s{rng.integers(0, 5)}", f"e{i}", 1.0) for i in range(400)]  # many short segments
    for name, content in (("long.run", rows), ("short.run", short)):
        path = write(tmp_path, name, "".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, d, s in content))
        run = trec.read_run(path)
        assert run.query_ids.tolist() == sorted({q for q, _, _ in content})
        for qid in run.query_ids:
            expected = [(d, s) for q, d, s in content if q == qid]
            docno, score = run.query(qid)
            assert list(zip(docno.tolist(), score.tolist())) == expected
        same = trec.Run.from_arrays([q for q, _, _ in content], [d for _, d, _ in content], [s for _, _, s in content])
        np.testing.assert_array_equal(same.docno, run.docno)
        np.testing.assert_array_equal(same.offsets, run.offsets)


def test_unmappable_files_are_read_in_blocks(tmp_path, monkeypatch):
    """Files that cannot be memory-mapped (pipes, ...) go through plain reads: same result."""
    rng = np.random.default_rng(11)
    text = random_run_text(rng, messy=True)
    path = write(tmp_path, "r.txt", text)
    expected = trec.read_run(path).to_dict()

    def refuse(*args, **kwargs):
        raise OSError("not mappable")

    monkeypatch.setattr(table.mmap, "mmap", refuse)
    for block in (1 << 21, 61):
        monkeypatch.setattr(table, "_BLOCK", block)
        assert trec.read_run(path).to_dict() == expected == reference_run(text)
    bom = write(tmp_path, "bom.txt", "\ufeffq 0 d 1\nq 0 e 2".encode(), "wb")
    assert trec.read_qrels(bom).to_dict() == {"q": {"d": 1, "e": 2}}


def test_file_edges(tmp_path):
    # UTF-8 byte order mark, no final newline, CRLF, tabs, leading spaces, trailing blank lines
    raw = "\ufeffq1\tQ0\td1\t1\t1.5\tt\r\n  q1 Q0 d2 2 1.25 t\r\nq1 Q0 d3 3 +7 t\n\n\n".encode()
    run = trec.read_run(write(tmp_path, "r.txt", raw, "wb"))
    assert run.to_dict() == {"q1": {"d1": 1.5, "d2": 1.25, "d3": 7.0}}
    run = trec.read_run(write(tmp_path, "r2.txt", b"q1 Q0 d1 1 2 t", "wb"))
    assert run.to_dict() == {"q1": {"d1": 2.0}}
    qrels = trec.read_qrels(write(tmp_path, "q.txt", b"q1 0 d1 1", "wb"))
    assert qrels.to_dict() == {"q1": {"d1": 1}}


@pytest.mark.parametrize("ending", ["\r", "mixed"])
@pytest.mark.parametrize("mappable", [True, False])
def test_carriage_return_line_endings_are_lines(tmp_path, monkeypatch, ending, mappable):
    """CR-only line endings (classic Mac OS), or CR, LF and CR LF mixed, are line endings: the
    file reads as its LF twin, whole blocks and lines cut across blocks alike, mapped or not."""
    rng = np.random.default_rng(5)
    text = random_run_text(rng, messy=True)
    lines = text.splitlines(keepends=True)
    endings = ["\r"] * len(lines) if ending == "\r" else [["\r", "\n", "\r\n"][i % 3] for i in range(len(lines))]
    odd = "".join(line.rstrip("\r\n") + end for line, end in zip(lines, endings))
    path = write(tmp_path, "r.txt", odd.encode(), "wb")
    if not mappable:
        monkeypatch.setattr(table.mmap, "mmap", lambda *a, **k: (_ for _ in ()).throw(OSError("not mappable")))
    for block in (1 << 21, 61):
        monkeypatch.setattr(table, "_BLOCK", block)
        assert trec.read_run(path).to_dict() == reference_run(text)
    qrels = write(tmp_path, "q.txt", "q1 0 d1 1\rq1 0 d2 0\rq2 0 d1 2\r".encode(), "wb")
    assert trec.read_qrels(qrels).to_dict() == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}


def test_carriage_return_run_evaluates_as_its_line_feed_twin(tmp_path):
    """The issue's case: a CR-only run was one line, its first document alone counted."""
    qrels = write(tmp_path, "q.txt", "q1 0 d2 1\nq1 0 d3 1\n")
    lf = write(tmp_path, "lf.txt", "q1 Q0 d1 1 3 r\nq1 Q0 d2 2 2 r\nq1 Q0 d3 3 1 r\n")
    cr = write(tmp_path, "cr.txt", "q1 Q0 d1 1 3 r\rq1 Q0 d2 2 2 r\rq1 Q0 d3 3 1 r\r")
    for run in (lf, cr):
        assert trec.evaluate(qrels, run, ["AP", "NumRet"]).mean == {"AP": pytest.approx(7 / 12), "NumRet": 3.0}


@pytest.mark.parametrize("compress", ["gzip", "bz2", "lzma"])
def test_compressed_files_are_read_by_their_magic_bytes(tmp_path, monkeypatch, compress):
    """gzip, bzip2 and xz runs and qrels (TREC distributes runs gzipped), whatever their names:
    the same rows as the plain file, errors still naming the line, a lone CR still a line end,
    a damaged file refused with its name (through the command line too)."""
    import bz2, gzip, lzma  # noqa: E401

    pack = {"gzip": gzip.compress, "bz2": bz2.compress, "lzma": lzma.compress}[compress]
    text = random_run_text(np.random.default_rng(3), messy=True)
    path = write(tmp_path, "run.txt", pack(text.encode()), "wb")  # no telling extension
    for block in (1 << 21, 61):
        monkeypatch.setattr(table, "_BLOCK", block)
        assert trec.read_run(path).to_dict() == reference_run(text)
    qrels_text = "q1 0 d1 1\rq1 0 d2 0\rq2 0 d1 2\r"  # classic Mac OS endings inside
    qrels = write(tmp_path, "qrels", pack(qrels_text.encode()), "wb")
    assert trec.read_qrels(qrels).to_dict() == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}
    bad = write(tmp_path, "bad.run", pack(b"q1 Q0 d0 1 9 r\nq1 Q0 d1 2 x r\n"), "wb")
    with pytest.raises(ValueError, match=r"bad\.run.*line 2"):
        trec.read_run(bad)
    damaged = write(tmp_path, "damaged.run", pack(text.encode())[:-9], "wb")
    with pytest.raises(ValueError, match=r"damaged\.run: cannot decompress this (gzip|bzip2|xz) file"):
        trec.read_run(damaged)
    done = subprocess.run([sys.executable, "-m", "fasttie", "trec", str(qrels), str(damaged)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 2 and "cannot decompress" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("raw, line, what", [
    (b"q1 Q0 d0 1 9 r\nq1 Q0 d1\0x 2 0.5 r\n", 2, "a NUL byte"),
    (b"q1 Q0 d0 1 9 r\nq1 Q0 d1 2 0.5 r\0\n", 2, "a NUL byte"),
    (b"\xef\xbb\xbfq1 Q0 d0 1 9 r\n\xef\xbb\xbfq1 Q0 d1 2 0.5 r\n", 2, "byte order mark"),
    (b"q1 Q0 d0 1 9 r\rq1 Q0 d2 2 8 r\rq1 Q0 d1\0x 3 0.5 r\r", 3, "a NUL byte"),
    (b"q1 Q0 d0 1 9 r\n\nq1 Q0 \xef\xbb\xbfd1 2 0.5 r\n", 3, "byte order mark"),
])
def test_odd_bytes_name_the_file_and_line(tmp_path, monkeypatch, raw, line, what):
    """A NUL byte (it would split a document id) and a byte order mark past the start (two
    files concatenated: it would start a query id) are errors that name the file and line,
    mapped or not; through the command line too (exit 2)."""
    path = write(tmp_path, "r.txt", raw, "wb")
    qrels = write(tmp_path, "q.txt", "q1 0 d1 1\n")
    message = rf"{re.escape(str(path))}, line {line}: .*{what}"
    with pytest.raises(ValueError, match=message):
        trec.read_run(path)
    code = subprocess.run([sys.executable, "-m", "fasttie", "trec", str(qrels), str(path)], capture_output=True,
                          text=True)
    assert code.returncode == 2 and re.search(message, code.stderr), code.stderr
    monkeypatch.setattr(table.mmap, "mmap", lambda *a, **k: (_ for _ in ()).throw(OSError("not mappable")))
    with pytest.raises(ValueError, match=message):
        trec.read_run(path)


# --------------------------------------------------------------------------------------------
# what trec_eval 10.0 accepts beyond the plain format: '#' comment lines (its test file
# qrels.test.with-comments) and text after a run line's tag (its test file results.trunc)

QRELS_WITH_COMMENTS = (
    "# comment here\n"
    "301 0 CR93E-10279 0\n"
    "# and comment here\n"        # four words: the shape of a qrels line
    "# and another\n"             # consecutive comments (trec_eval's qrels loop skips one, then
                                  # parses the next line as data: an error, or a qid '#')
    "301 0 CR93E-1282 1\n"
    "   # indented comment\n"
    "301 0 CR#93E-1860 2\n"       # '#' inside a docno is data
    "302 #iter d1 1\n"            # ... and so is a column opening with '#'
    "#no space after the hash\n"
    "302 0 d2 3\n"
    "# last line, no newline"
)


@pytest.mark.parametrize("block", [None, 23, 64])
def test_qrels_comment_lines_are_skipped(tmp_path, monkeypatch, block):
    if block:  # comments cut by block boundaries, alone in a block, first in a block
        monkeypatch.setattr(table, "_BLOCK", block)
    qrels = trec.read_qrels(write(tmp_path, "q.txt", QRELS_WITH_COMMENTS))
    rows = [(q, i, d, r) for q, docno, rel, iteration in qrels.items()
            for d, r, i in zip(docno.tolist(), rel.tolist(), iteration.tolist())]
    assert rows == reference_qrels(QRELS_WITH_COMMENTS) == [
        ("301", "0", "CR93E-10279", 0), ("301", "0", "CR93E-1282", 1), ("301", "0", "CR#93E-1860", 2),
        ("302", "#iter", "d1", 1), ("302", "0", "d2", 3),
    ]
    # line numbers count the comment lines
    bad = QRELS_WITH_COMMENTS.replace("302 0 d2 3", "302 0 d2 x")
    with pytest.raises(ValueError, match=r"q2.txt, line 10: relevance 'x' is not an integer"):
        trec.read_qrels(write(tmp_path, "q2.txt", bad))


def test_comment_lines_on_the_fast_path(tmp_path):
    """Single-spaced files take the reader's fast path, which must still see a comment line
    that has exactly as many words as a data line."""
    lines = [f"q{i % 3} 0 d{i} {i % 4}" for i in range(200)]
    lines[0] = "# a b c"
    lines[77] = "#a b c d"
    text = "\n".join(lines) + "\n"
    path = write(tmp_path, "q.txt", text)
    qrels = trec.read_qrels(path)
    expected = {}
    for q, _, d, r in reference_qrels(text):
        expected.setdefault(q, {})[d] = r
    assert qrels.to_dict() == expected and len(qrels) == 198
    run_lines = [f"q{i % 3} Q0 d{i} {i} {-i} t" for i in range(200)]
    run_lines[0], run_lines[150] = "# a b c d e", "#a b c d e f"
    run = trec.read_run(write(tmp_path, "r.txt", "\n".join(run_lines) + "\n"))
    assert run.to_dict() == reference_run("\n".join(run_lines)) and len(run) == 198
    run_lines[151] = "q1 Q0 d151 151 x t"
    with pytest.raises(ValueError, match=r"r2.txt, line 152: score 'x' is not a number"):
        trec.read_run(write(tmp_path, "r2.txt", "\n".join(run_lines) + "\n"))


RUN_WITH_EXTRAS = (
    "301\tQ0\tFBIS3-27619\t99\t  2.138276\tSTANDARD more junk at\n"
    "303\tQ0\tFT941-17652\t99\t  1.857372\tSTANDARD end of lines.\n"
    "301\tQ0\tFBIS3-2934\t98\t  2.139655\tSTANDARD reserved for \n"
    "# a comment, as trec_eval allows in runs\n"
    "301\tQ0\tFBIS3-25796\t97\t  2.143418\tSTANDARD\n"
    "303 Q0 FT934-4015 97 1.875063 STANDARD 1 2 3 nan # x y z\n"
)


@pytest.mark.parametrize("block", [None, 17, 50])
def test_run_columns_after_the_tag_are_ignored(tmp_path, monkeypatch, block):
    if block:
        monkeypatch.setattr(table, "_BLOCK", block)
    run = trec.read_run(write(tmp_path, "r.txt", RUN_WITH_EXTRAS))
    assert run.to_dict() == reference_run(RUN_WITH_EXTRAS) == {
        "301": {"FBIS3-27619": 2.138276, "FBIS3-2934": 2.139655, "FBIS3-25796": 2.143418},
        "303": {"FT941-17652": 1.857372, "FT934-4015": 1.875063},
    }
    assert run.name == "STANDARD"
    # every line with extra columns (no line of the plain shape): same rows
    extra = "".join(f"q Q0 d{i} {i} {1 / (i + 1)!r} tag x{i}\n" for i in range(300))
    run = trec.read_run(write(tmp_path, "r2.txt", extra))
    assert run.to_dict() == reference_run(extra) and len(run) == 300


def test_non_ascii_ids(tmp_path):
    text = "q\u00e9 Q0 d\u00f6c 1 1.0 t\nq\u00e9 Q0 \u6587\u66f8 2 0.5 t\nq1 Q0 plain 1 0.1 t\n"
    run = trec.read_run(write(tmp_path, "r.txt", text))
    assert run.to_dict() == reference_run(text)
    qrels = trec.Qrels.from_dict({"q\u00e9": {"\u6587\u66f8": 2, "other": 1}})
    aligned = trec.align(qrels, run)
    assert aligned.query_ids.tolist() == ["q\u00e9"]
    assert aligned.grade.tolist() == [0, 2]
    assert [u.tolist() for u in aligned.unretrieved] == [[1]]


@pytest.mark.parametrize("seed", range(3))
def test_scores_parse_exactly_as_float(tmp_path, seed):
    rng = np.random.default_rng(seed)
    values = np.concatenate([
        rng.normal(size=300) * 10.0 ** rng.integers(-8, 9, 300),
        rng.integers(-(2**62), 2**62, 50).astype(np.float64),
    ])
    texts = []
    for v in values:
        texts += [repr(float(v)), f"{v:.17g}", f"{v:.3f}", f"{v:.19g}", f"{v:e}"]
    # decimal strings within 1e-19 of the midpoint between two doubles: rounding them to
    # extended precision first often lands exactly on the midpoint, and rounding that to a
    # double then goes the wrong way; the reader must round once, as float() does
    with localcontext() as context:
        context.prec = 60
        mids = [(Decimal(float(v)) + Decimal(math.nextafter(float(v), math.inf))) / 2
                for v in rng.uniform(1, 2, 300) * 2.0 ** rng.integers(-3, 60, 300)]
    hard = [f"{mid:{digits}}" for mid in mids for digits in (".19g", ".18g")]
    hard = [t for t in hard if "e" not in t and "." in t]
    if numeric._HAS_LONGDOUBLE:  # the cases are hard: rounding twice errs on some of them
        mantissa = np.array([int(t.replace(".", "")) for t in hard], dtype=np.uint64).astype(np.longdouble)
        scale = np.array([10 ** (len(t) - 1 - t.index(".")) for t in hard], dtype=np.uint64).astype(np.longdouble)
        twice = (mantissa / scale).astype(np.float64)
        assert np.sum(twice != np.array([float(t) for t in hard])) > 0
    texts += hard
    texts += ["9007199254740993", "9007199254740993.0", "0.1", "-0", "-0.0", ".5", "5.", "+.5",
              "00012.5000", "1E3", "1.7976931348623157e308", "5e-324", "123456789012345678901234567890",
              "0.30000000000000004", "18446744073709551615", "9999999999999999999"]
    text = "".join(f"q Q0 d{i} 1 {t} x\n" for i, t in enumerate(texts))
    run = trec.read_run(write(tmp_path, "r.txt", text))
    got = dict(zip(run.docno.tolist(), run.score.tolist()))
    for i, t in enumerate(texts):
        assert got[f"d{i}"] == float(t), (t, got[f"d{i}"], float(t))
        assert math.copysign(1, got[f"d{i}"]) == math.copysign(1, float(t)), t  # -0.0 kept


def test_grades_parse(tmp_path):
    text = "q 0 a 3\nq 0 b -1\nq 0 c +2\nq 0 d 000\nq 0 e 123456789012345678901\n"
    with pytest.raises(ValueError, match=r"line 5: relevance '123456789012345678901' does not fit in int64"):
        trec.read_qrels(write(tmp_path, "q.txt", text))
    qrels = trec.read_qrels(write(tmp_path, "q2.txt", text.rsplit("q 0 e", 1)[0] + "q 0 e 9223372036854775807\n"))
    assert qrels.rel.tolist() == [3, -1, 2, 0, 2**63 - 1]


# --------------------------------------------------------------------------------------------
# errors: file and 1-based line in every message


RUN_ERRORS = [
    ("q Q0 d1 1 1.0 t\nq Q0 d2 2 1.0\n", 2, r"expected at least 6 columns .* found 5: 'q Q0 d2 2 1.0'"),
    ("q Q0 d1 1 1.0 t extra\n\n# note\nq Q0 d2 2 1.0\n", 4, r"expected at least 6 columns .* found 5"),
    ("# a run\nq Q0 d1 1 1.0 t\nq Q0 d2 #2 1.0 t\nq\n", 4, r"expected at least 6 columns .* found 1: 'q'"),
    ("q Q0 d1 1 1.0 t\nq Q0 d2 2 1.0 t # a note\n q Q0 d3 3 # t\n", 3, r"score '#' is not a number"),
    ("q Q0 d1 1 1.0 t\nq Q0 d2 2 abc t\n", 2, r"score 'abc' is not a number"),
    ("q Q0 d1 1 1.0 t\nq Q0 d2 2 1.0.0 t\n", 2, r"score '1.0.0' is not a number"),
    ("q Q0 d1 1 1_0 t\n", 1, r"score '1_0' is not a number"),
    ("q Q0 d1 1 1.0 t\nq Q0 d2 2 nan t\n", 2, r"score 'nan' is not finite"),
    ("q Q0 d1 1 1.0 t\nq Q0 d2 2 -inf t\n", 2, r"score '-inf' is not finite"),
    ("q Q0 d1 1 1.0 t\nq Q0 d2 2 1e999 t\n", 2, r"score '1e999' is not finite"),
    ("q Q0 d1 1 1.0 t\np Q0 d1 1 1.0 t\nq Q0 d1 3 0.5 t\n", 3, r"duplicate document 'd1' for query 'q' .*first seen on line 1"),
]


@pytest.mark.parametrize("text, line, message", RUN_ERRORS)
def test_run_errors_name_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, "bad.run", text)
    with pytest.raises(ValueError, match=rf"^{path}, line {line}: {message}"):
        trec.read_run(path)


QRELS_ERRORS = [
    ("q 0 d1 1\nq 0 d2\n", 2, r"expected 4 columns \(qid iter docno rel\), found 3"),
    # trec_eval rejects a fifth column of qrels (only runs may have more): so does fasttie
    ("q 0 d1 1\nq 0 d2 1 x\n", 2, r"expected 4 columns \(qid iter docno rel\), found 5: 'q 0 d2 1 x'"),
    ("# judged by x\nq 0 d1 1\n\n# note\nq 0 d2 1 # note\n", 5, r"expected 4 columns .* found 6"),
    ("#\n#\nq 0 d1 1\nq 0 d2 #1\n", 4, r"relevance '#1' is not an integer"),
    ("q 0 d1 1\nq 0 #d1 1\nq 0 #d1 2\n", 3, r"duplicate document '#d1' for query 'q' .*first seen on line 2"),
    ("q 0 d1 1\nq 0 d2 1.5\n", 2, r"relevance '1.5' is not an integer"),
    ("q 0 d1 1\nq 0 d2 high\n", 2, r"relevance 'high' is not an integer"),
    ("q 0 d1 1\nq 0 d2 1\nq 0 d1 0\n", 3, r"duplicate document 'd1' for query 'q' and iteration '0'.*first seen on line 1"),
    ("q 1 d1 1\nq 2 d1 1\nq 2 d1 0\n", 3, r"duplicate document 'd1' for query 'q' and iteration '2'.*first seen on line 2"),
]


@pytest.mark.parametrize("text, line, message", QRELS_ERRORS)
def test_qrels_errors_name_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, "bad.qrels", text)
    with pytest.raises(ValueError, match=rf"^{path}, line {line}: {message}"):
        trec.read_qrels(path)


def test_error_lines_in_later_blocks(tmp_path, monkeypatch):
    good = "".join(f"q{i % 7} Q0 d{i} {i} {i / 3:.5f} tag\n" for i in range(500))
    monkeypatch.setattr(table, "_BLOCK", 97)
    cases = [
        (good + "\n" * 3 + "q1 Q0 x 1 2\n", 504, "expected at least 6 columns"),
        (good + "# a comment\n#\n" + good.replace(" d", " e") + "q1 Q0 x 1 2\n", 1003, "expected at least 6 columns"),
        (good + "q1 Q0 x 1 zz tag\n" + good.replace(" d", " e"), 501, "score 'zz'"),
        (good + "q3 Q0 d10 1 0 tag\n", 501, "duplicate document 'd10' for query 'q3'.*first seen on line 11"),
        (good[: good.index("q0 Q0 d350")] + "\r\n\r\n" + good[good.index("q0 Q0 d350"):] + "q3 Q0 d101 1 0 tag\n", 503,
         r"duplicate document 'd101' for query 'q3'.*first seen on line 102\)"),
    ]
    for text, line, message in cases:
        path = write(tmp_path, "bad.run", text)
        with pytest.raises(ValueError, match=rf"^{path}, line {line}: {message}"):
            trec.read_run(path)


def test_empty_and_invalid_files(tmp_path):
    for content in (b"", b"\n\n  \n", b"# only\n  # comments\n\n"):
        path = write(tmp_path, "empty.run", content, "wb")
        with pytest.raises(ValueError, match=rf"^{path}: no run lines \(the file is empty"):
            trec.read_run(path)
        with pytest.raises(ValueError, match=rf"^{path}: no qrels lines \(the file is empty"):
            trec.read_qrels(path)
    path = write(tmp_path, "latin1.run", "q Q0 d1 1 1 t\nq Q0 caf\xe9 2 1 t\n".encode("latin-1"), "wb")
    with pytest.raises(ValueError, match=rf"^{path}, line 2: document id is not valid UTF-8"):
        trec.read_run(path)
    with pytest.raises(FileNotFoundError):
        trec.read_run(tmp_path / "missing.run")


def test_hash_collisions_stay_exact(tmp_path, monkeypatch):
    """With every hash equal, duplicate checks and the qrels join fall back to exact paths."""
    # zero word keys: every id hashes to 0, in the compiled reader and in hash_strings alike
    monkeypatch.setattr(grouping, "_WORD_KEYS", np.zeros_like(grouping._WORD_KEYS))
    run = trec.read_run(write(tmp_path, "r.txt", "q Q0 a 1 2 t\nq Q0 b 2 1 t\np Q0 a 1 1 t\n"))
    qrels = trec.read_qrels(write(tmp_path, "q.txt", "q 0 b 2\nq 0 c 1\nq 1 c 3\np 0 z 1\n"))
    assert not run._hash.any() and not qrels._hash.any()
    aligned = trec.align(qrels, run)
    assert aligned.query_ids.tolist() == ["p", "q"]
    assert aligned.docno.tolist() == ["a", "a", "b"]
    assert aligned.grade.tolist() == [0, 0, 2]
    assert aligned.judged.tolist() == [False, False, True]
    assert [u.tolist() for u in aligned.unretrieved] == [[1], [3]]
    with pytest.raises(ValueError, match=r"line 3: duplicate document 'a' for query 'q'"):
        trec.read_run(write(tmp_path, "d.txt", "q Q0 a 1 2 t\nq Q0 b 2 1 t\nq Q0 a 1 1 t\n"))


def test_readers_take_n_threads(tmp_path):
    run_path = write(tmp_path, "r.txt", "q Q0 a 1 2 t\nq Q0 b 2 1 t\n")
    qrels_path = write(tmp_path, "q.txt", "q 0 b 2\n")
    assert trec.read_run(run_path, n_threads=2).to_dict() == trec.read_run(run_path).to_dict()
    assert trec.evaluate(qrels_path, run_path, ["AP"], n_threads=1).mean == {"AP": 0.5}
    with pytest.raises(ValueError, match=r"n_threads must be in \[1, "):
        trec.read_qrels(qrels_path, n_threads=0)
    with pytest.raises(TypeError, match="n_threads must be an integer"):
        trec.align(qrels_path, run_path, n_threads="2")


# --------------------------------------------------------------------------------------------
# the readers' benchmark


def test_bench_script_runs(tmp_path):
    """The reader benchmark runs end to end on a tiny file (it checks both readers agree)."""
    pytest.importorskip("pytrec_eval")
    import importlib.util

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts",
                          "bench_trec_read.py")
    spec = importlib.util.spec_from_file_location("bench_trec_read", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--lines", "2000", "--queries", "20", "--repeats", "1", "--dir", str(tmp_path), "--qrels"]) == 0


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("block", [None, 7])
def test_run_name_is_the_last_lines_tag(tmp_path, monkeypatch, fast, block):
    """trec_eval's runid is the tag of the run's last line (get_trec_results.c keeps run_id_ptr
    from the last line parsed for every query); blank and '#' comment lines after it, text after
    the tag and a missing final line feed change nothing. Both passes, one block or many."""
    monkeypatch.setattr(table, "_FAST", fast)
    if block:
        monkeypatch.setattr(table, "_BLOCK", block)
    text = "q2 Q0 b 1 3.5 first\nq1 Q0 a 1 2 middle\n  q1\tQ0 c 2 -1e-3   last  extra words\n\n# x y z w v u\n  \n"
    assert trec.read_run(write(tmp_path, "r.txt", text)).name == "last"
    assert trec.read_run(write(tmp_path, "s.txt", "q1 Q0 a 1 2 one\nq1 Q0 b 2 1 two")).name == "two"
