"""fasttie.trec.table: a table file read in blocks (any block size, compiled pass or numpy only,
plain or gzip / bzip2 / xz, LF / CRLF / CR line endings, a last line without a newline) holds the
rows, ids, numbers and lines that ``str.split`` on each line of the decoded text gives."""

import bz2
import gzip
import lzma

import numpy as np
import pytest

from fasttie.trec import table as table_module
from fasttie.trec.table import read_table

OPENERS = {"plain": open, "gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open}


def _random_qrels(rng):
    """(lines, rows as (qid, iteration, docno, rel, 1-based line))."""
    lines, rows = [], []
    for _ in range(int(rng.integers(1, 120))):
        if rng.random() < 0.05:
            lines.append("")
            continue
        if rng.random() < 0.03:
            lines.append("# comment")
            continue
        q = f"q{int(rng.integers(0, 9))}" + ("é" if rng.random() < 0.05 else "")
        row = (q, str(int(rng.integers(0, 3))), f"doc-{int(rng.integers(0, 10**6))}", int(rng.integers(-1, 4)))
        lines.append(str(rng.choice([" ", "\t"])).join(map(str, row)))
        rows.append((*row, len(lines)))
    if not rows:
        lines.append("q0 0 d 1")
        rows.append(("q0", "0", "d", 1, len(lines)))
    return lines, rows


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("fast", [True, False])
def test_rows_as_split_lines(tmp_path, monkeypatch, seed, fast):
    rng = np.random.default_rng(seed)
    lines, rows = _random_qrels(rng)
    compression = list(OPENERS)[seed % 4]
    ending = ["\n", "\r\n", "\r"][seed % 3]
    text = ending.join(lines) + ("" if seed % 5 == 0 else ending)
    path = tmp_path / "qrels.txt"
    with OPENERS[compression](path, "wb") as f:
        f.write(text.encode("utf-8"))
    monkeypatch.setattr(table_module, "_FAST", fast)
    monkeypatch.setattr(table_module, "_BLOCK", int(rng.integers(16, 400)))  # many blocks
    table = read_table(path, "qrels", 4, "qid iter docno rel", texts=((2, "document id"), (1, "iteration")),
                       number=(3, "relevance", False), n_threads=int(rng.integers(1, 3)))
    docno, iteration = table.texts
    assert docno.tolist() == [r[2] for r in rows] and iteration.tolist() == [r[1] for r in rows]
    assert table.numbers.tolist() == [r[3] for r in rows]
    assert table.query_ids.tolist() == sorted({r[0] for r in rows})
    n = len(rows)
    assert table.query_ids[table.segments.query_of(np.arange(n))].tolist() == [r[0] for r in rows]
    assert table.lines(np.arange(n)).tolist() == [r[4] for r in rows]
    # every repeated (query, iteration, docno) row is a candidate, as is the row it repeats
    seen, repeated = {}, set()
    for i, r in enumerate(rows):
        key = r[:3]
        if key in seen:
            repeated |= {i, seen[key]}
        seen.setdefault(key, i)
    assert repeated <= set(table.candidates.tolist())


def test_run_name_and_extra_columns(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q2 Q0 d1 1 2.5 tagA\nq1 Q0 d2 2 -0.25 tagB extra words\n")  # the last line names the run
    table = read_table(path, "run", 6, "qid Q0 docno rank score tag", texts=((2, "document id"),),
                       number=(4, "score", True), extra_ok=True, name_col=5)
    assert table.name == "tagB" and table.texts[0].tolist() == ["d1", "d2"] and table.numbers.tolist() == [2.5, -0.25]
    assert table.query_ids.tolist() == ["q1", "q2"]


def test_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 x\n")
    with pytest.raises(ValueError, match=r"qrels.txt, line 2: relevance 'x' is not an integer"):
        read_table(path, "qrels", 4, "qid iter docno rel", texts=((2, "document id"), (1, "iteration")),
                   number=(3, "relevance", False))
    path.write_text("q1 0 d1 1\nq1 0 d2\n")
    with pytest.raises(ValueError, match=r"qrels.txt, line 2: expected 4 columns"):
        read_table(path, "qrels", 4, "qid iter docno rel", texts=((2, "document id"), (1, "iteration")),
                   number=(3, "relevance", False))
