"""The table reader shared by :func:`~fasttie.trec.read_run` and :func:`~fasttie.trec.read_qrels`
(package-internal).

A file is cut into blocks of whole lines (memory-mapped views where the file can be mapped).
Each block is tokenized and parsed by one compiled pass
(:func:`fasttie._kernels.trec_parse.scan_table`), the blocks in parallel: text spans and
hashes, numbers, query segments, duplicate candidates. Blank lines and comment lines (first non-blank
character ``#``, as trec_eval 10.0) hold no row. A block the compiled pass does not take (a line
with the wrong number of columns, non-ASCII ids, a NUL byte, a lone carriage return) goes the
general way (:mod:`fasttie.trec.general_block`: a block tokenized with numpy), which raises
:class:`~fasttie.InputError` naming the file and the 1-based line, or decodes UTF-8. A file
whose lines end with a carriage return alone (classic Mac OS, or mixed endings) is read again
with every line ending made a line feed.
:func:`read_table` then fills the output columns (str arrays without a copy of the text
through Python) and returns rows with their query segments and line map; the numbers the
compiled pass leaves over are read by :mod:`fasttie.trec.numeric`.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import mmap
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .._kernels import trec_parse
from ..errors import InputError
from ..parallel import resolve_threads, run_blocks
from . import grouping
from .general_block import Block, LineEndings, query_segments
from .grouping import ITER_KEY, QUERY_KEY, Segments, byte_matrix_hash, hash_strings
from .numeric import finish_numbers, parse_floats, parse_ints

__all__ = ["Table", "read_table"]

_BLOCK = 1 << 21          # bytes read per block
_BOM = b"\xef\xbb\xbf"
_FAST = True              # tokenize with the compiled pass (False: numpy only, for tests)
_NO_INTS, _NO_FLOATS = np.zeros(0, dtype=np.int64), np.zeros(0)  # the number column not written
# compressed files, known by their first bytes (TREC distributes runs gzipped): magic -> opener
_COMPRESSED = ((b"\x1f\x8b", "gzip", gzip.open), (b"BZh", "bzip2", bz2.open),
               (b"\xfd7zXZ\x00", "xz", lzma.open))


@contextmanager
def _file_blocks(path, block_size=None, line_feeds=False):
    """The blocks of whole lines covering the file, as a list of ``(source, lo, hi)``: bytes
    ``source[lo:hi]`` (a read-only uint8 array) end with a newline.

    Regular files are memory-mapped, so blocks are views (no copies) while the context is open;
    other files are read block by block. A last line without a newline gets one, in a copy of
    that line. With ``line_feeds`` the file is read whole and every line ending (CR LF, CR)
    becomes a line feed. The caller empties the list before the context closes.
    """
    block_size = block_size or _BLOCK
    compressed = _compression(path)
    if compressed is not None:
        yield _decompressed_blocks(path, *compressed, block_size, line_feeds)
        return
    with open(path, "rb") as f:
        if line_feeds:
            data = f.read().replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            yield _cut(data, np.frombuffer(data, dtype=np.uint8), block_size)
            return
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # empty file, pipe, ...
            mapped = None
        if mapped is None:
            yield list(_read_blocks(f, block_size))
            return
        source = np.frombuffer(mapped, dtype=np.uint8)
        try:
            yield _cut(mapped, source, block_size)
        finally:
            del source
            try:
                mapped.close()
            except BufferError:  # views still referenced (an exception unwinding): GC closes it
                pass


def _compression(path):
    """(format, opener) of a gzip, bzip2 or xz file, by its magic bytes; None for plain text."""
    with open(path, "rb") as f:
        head = f.read(6)
    for magic, name, opener in _COMPRESSED:
        if head.startswith(magic):
            return name, opener
    return None


def _decompressed_blocks(path, name, opener, block_size, line_feeds):
    """The blocks of a compressed file, decompressed into memory (a damaged file: InputError)."""
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError, lzma.LZMAError) as error:  # gzip.BadGzipFile is an OSError
        raise InputError(f"{path}: cannot decompress this {name} file ({error})") from None
    if line_feeds:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return _cut(data, np.frombuffer(data, dtype=np.uint8), block_size)


def _cut(mapped, source, block_size):
    blocks = []
    n = len(source)
    pos = len(_BOM) if mapped[: len(_BOM)] == _BOM else 0
    while pos < n:
        cut = mapped.rfind(b"\n", pos, min(pos + block_size, n)) + 1
        if cut <= pos:  # no newline within a block: a very long line
            cut = mapped.find(b"\n", min(pos + block_size, n)) + 1
        if cut <= pos:  # the last line has no newline
            tail = np.frombuffer(mapped[pos:n] + b"\n", dtype=np.uint8)
            blocks.append((tail, 0, len(tail)))
            break
        blocks.append((source, pos, cut))
        pos = cut
    return blocks


def _read_blocks(f, block_size):
    carry = f.read(len(_BOM))
    if carry == _BOM:
        carry = b""
    while True:
        block = f.read(block_size)
        if not block:
            if carry:
                data = np.frombuffer(carry + b"\n", dtype=np.uint8)
                yield data, 0, len(data)
            return
        data = carry + block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            continue
        yield np.frombuffer(data, dtype=np.uint8), 0, cut
        carry = data[cut:]


class _LineMap:
    """Global row -> 1-based file line, over the blocks of one file that hold rows."""

    def __init__(self, row0, line0, row_lines):
        self.row0, self.line0, self.row_lines = np.asarray(row0, dtype=np.int64), line0, row_lines

    def __call__(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        which = np.searchsorted(self.row0, rows, side="right") - 1
        out = np.empty(len(rows), dtype=np.int64)
        for i, (b, row) in enumerate(zip(which.tolist(), rows.tolist())):
            local = row - int(self.row0[b])
            row_lines = self.row_lines[b]
            out[i] = self.line0[b] + 1 + (local if row_lines is None else int(row_lines[local]))
        return out


@dataclass(frozen=True)
class _Layout:
    """The columns a reader keeps: text columns ``texts`` ((column, name in errors), at most two;
    the first is hashed on its own, the second mixed into the duplicate key), one number column
    ``number`` (column, name, whether float), the column of the name (-1: none)."""

    kind: str
    n_cols: int
    spec: str
    texts: tuple
    number: tuple
    extra_ok: bool
    name_col: int


class _Part:
    """One block's rows, from the compiled pass (``spans`` into ``source``) or the general one
    (``codes``, code point matrices of the text columns)."""

    def __init__(self, n_rows, n_lines, row_lines):
        self.n_rows, self.n_lines, self.row_lines = n_rows, n_lines, row_lines
        self.source = self.spans = self.codes = self.name = None
        self.segments = self.segment_ids = self.segment_lengths = None


def _scan(source, lo, hi, layout, cap=None):
    """The compiled pass over one block; ``cap`` rows expected (retried with the most a block
    can hold when it holds more). None when the block needs the general path."""
    if hi - lo >= 1 << 31:  # offsets in the block are int32
        return None
    source = source[lo:hi]
    safe = (hi - lo) // (2 * layout.n_cols) + 1  # a row takes at least 2 bytes a column
    cap = safe if cap is None else min(cap, safe)
    text_cols = [c for c, _ in layout.texts] + [-1]
    hash_keys = np.concatenate((grouping._WORD_KEYS, [grouping._MIX, ITER_KEY])).astype(np.uint64)
    params = np.array([layout.n_cols, layout.extra_ok, layout.number[0], layout.number[2], 64 - trec_parse.TABLE_BITS,
                       text_cols[0], text_cols[1]], dtype=np.int64)
    while True:
        info = np.zeros(trec_parse.INFO_SIZE, dtype=np.int64)
        rows = np.empty((cap, 5), dtype=np.int32)
        hashes = np.empty(cap, dtype=np.uint64)
        numbers = np.empty(cap, dtype=np.float64 if layout.number[2] else np.int64)
        segments = np.empty((cap, 4), dtype=np.int64)
        slow = np.empty((cap, 5), dtype=np.int64)
        slots = np.zeros(1 << trec_parse.TABLE_BITS, dtype=np.int64)
        slot_keys = np.empty(1 << trec_parse.TABLE_BITS, dtype=np.uint64)
        repeats = np.empty((cap, 2), dtype=np.int64)
        trec_parse.scan_table(source, params, hash_keys, rows, hashes, numbers if numbers.dtype.kind == "i" else _NO_INTS,
                              numbers if numbers.dtype.kind == "f" else _NO_FLOATS, segments, slow, slots, slot_keys,
                              repeats, info)
        if info[trec_parse.STATUS] != trec_parse.FULL or cap == safe:
            break
        cap = safe
    if info[trec_parse.STATUS] != 0:
        return None
    n, n_seg, n_slow, n_repeats = (int(info[i]) for i in (trec_parse.N_ROWS, trec_parse.N_SEGMENTS,
                                                          trec_parse.N_SLOW, trec_parse.N_REPEATS))
    part = _Part(n, int(info[trec_parse.N_LINES]), None if n == info[trec_parse.N_LINES] else rows[:n, 4])
    part.source, part.spans, part.hashes = source, rows, hashes[:n]
    part.numbers = numbers[:n]
    part.candidates = np.unique(repeats[:n_repeats])
    part.segments = segments[:n_seg].copy()  # the small outputs are copied, their buffers dropped
    part.slow = slow[:n_slow].copy()
    part.widths = [int(rows[:n, 2 * t + 1].max(initial=0)) for t in range(len(layout.texts))]
    return part


def _candidates(keys):
    """Rows (ascending) whose key another row has."""
    ordered = np.sort(keys)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    return np.flatnonzero(np.isin(keys, repeated, kind="sort")) if repeated.size else np.zeros(0, dtype=np.int64)


def _span_strings(source, starts, lengths):
    """str array of ASCII byte spans ``source[start:start + length]``."""
    width = int(lengths.max())
    index = starts[:, None] + np.arange(width)
    inside = np.arange(width) < lengths[:, None]
    codes = np.where(inside, source[np.where(inside, index, 0)], 0).astype(np.uint32)
    return codes.view(np.dtype(("U", width)))[:, 0]


def _finish_scan(part, path, line0, layout):
    """Query segments and numbers left over of a block from the compiled pass; raises
    on a number that is not one, naming the line."""
    segments = part.segments
    part.segment_ids = _span_strings(part.source, segments[:, 1], segments[:, 2])
    part.segment_lengths = np.diff(np.append(segments[:, 0], part.n_rows))
    part.unchecked = segments[:, 3].astype(bool)
    if len(part.slow):
        col, what, is_float = layout.number

        def fail(i, text, reason):
            row = int(part.slow[i, 0])
            line = line0 + 1 + (row if part.row_lines is None else int(part.row_lines[row]))
            raise InputError(f"{path}, line {line}: {what} {text!r} {reason}")

        finish_numbers(part.numbers, part.source, part.slow, is_float, fail)
    part.slow = part.segments = None


def _general(source, lo, hi, line0, path, layout):
    """One block the numpy way (:class:`Block`): raises the errors of the block, decodes UTF-8."""
    block = Block(source, lo, hi, line0, layout.n_cols, path, layout.spec, layout.extra_ok)
    part = _Part(block.n_rows, block.n_lines, block.row_lines)
    if block.n_rows == 0:
        return part
    part.segment_ids, part.segment_lengths, id_hashes = query_segments(block)
    part.unchecked = np.zeros(len(part.segment_ids), dtype=bool)  # the whole block is compared below
    part.codes, part.widths = [], []
    col, what, is_float = layout.number
    for t, (text_col, text_what) in enumerate(layout.texts):  # errors in the order of the columns read
        mat, lengths = block.column(text_col)
        hashes = byte_matrix_hash(mat)
        codes = block.code_points(mat, lengths, text_what)
        part.codes.append(codes)
        part.widths.append(codes.shape[1])
        if t == 0:
            part.hashes, keys = hashes, hashes.copy()
            part.numbers = (parse_floats if is_float else parse_ints)(block, col, what)
        else:
            keys += hashes * ITER_KEY
    keys += np.repeat(id_hashes, part.segment_lengths) * QUERY_KEY
    part.candidates = _candidates(keys)
    if layout.name_col >= 0:
        part.name = block.text(block.n_rows - 1, layout.name_col)
    return part


def _last_name(part, layout):
    """The name column of a block's last row (trec_eval keeps the run tag of the run's last line)."""
    if part.name is not None:  # the general path read it
        return part.name
    # the compiled pass keeps the span of the first text column (the docno): the name is a token after it
    at, index = int(part.spans[part.n_rows - 1, 0]), layout.name_col - layout.texts[0][0]
    chunk = 256
    while True:
        text = part.source[at:at + chunk].tobytes()
        end = text.find(b"\n")
        if end >= 0 or at + chunk >= len(part.source):
            line = text[:end] if end >= 0 else text
            return re.findall(rb"[^\x00-\x20]+", line)[index].decode("utf-8", "replace")
        chunk *= 4


@dataclass(eq=False)
class Table:
    """The rows of a table file, in file order: the sorted query ids and the query segments,
    a str array per text column, the uint64 hash of the first text column per row, the number
    column, the rows that may repeat the text columns of another row of their query (ascending;
    every duplicate is among them, with the row it repeats), a row -> line map and the name (or
    None)."""

    path: str
    query_ids: np.ndarray
    segments: Segments
    texts: list
    hashes: np.ndarray
    numbers: np.ndarray
    candidates: np.ndarray
    lines: _LineMap
    name: str | None


def read_table(path, kind, n_cols, spec, texts, number, *, extra_ok=False, name_col=-1, n_threads=None) -> Table:
    """Tokenize and parse a table file (``kind``, "run" or "qrels", names it in errors).

    ``texts``: the text columns kept, ((column, name), ...), at most two: the first (the
    document id) is hashed on its own, the second (qrels' iteration) is mixed into the key of
    what must be unique within a query. ``number``: (column, name, whether float).
    ``extra_ok``: lines may have more than ``n_cols`` columns (runs). ``name_col``: the column
    whose value on the last row names the table, or -1. ``n_threads``: see
    :func:`fasttie.parallel.resolve_threads` (None: by the file's size).
    """
    layout = _Layout(kind, n_cols, spec, tuple(texts), tuple(number), bool(extra_ok), int(name_col))
    path = os.fspath(path)
    with _file_blocks(path) as blocks:
        try:
            return _read_blocks_of(path, blocks, layout, n_threads)
        except LineEndings:  # carriage returns that end lines alone: read again, every line ending a line feed
            pass
        finally:
            blocks.clear()  # no view of the mapping may outlive it
    with _file_blocks(path, line_feeds=True) as blocks:
        try:
            return _read_blocks_of(path, blocks, layout, n_threads)
        finally:
            blocks.clear()


def _read_blocks_of(path, blocks, layout, n_threads):
    n_blocks = len(blocks)
    parts = [None] * n_blocks
    n_threads = resolve_threads(n_threads, sum(hi - lo for _, lo, hi in blocks))  # work: bytes
    if _FAST and n_blocks:
        # the lines a byte of the first block, for the rows to expect in each block
        source, lo, hi = blocks[0]
        per_byte = np.count_nonzero(source[lo:hi] == 10) / (hi - lo)

        def scan(start, stop):
            for b in range(start, stop):
                source, lo, hi = blocks[b]
                parts[b] = _scan(source, lo, hi, layout, int((hi - lo) * per_byte * 1.25) + 64)

        run_blocks(scan, n_blocks, n_threads)
    line0 = 0
    row0, line0s, row_lines, kept = [0], [], [], []
    for b in range(n_blocks):  # in file order: the first error of the file is raised
        source, lo, hi = blocks[b]
        part = parts[b]
        if part is None:
            part = parts[b] = _general(source, lo, hi, line0, path, layout)
        elif part.n_rows:
            _finish_scan(part, path, line0, layout)
        if part.n_rows:
            kept.append(part)
            row0.append(row0[-1] + part.n_rows)
            line0s.append(line0)
            row_lines.append(part.row_lines)
        line0 += part.n_lines
    parts.clear()
    if not kept:
        raise InputError(f"{path}: no {layout.kind} lines (the file is empty, or has only blank and comment lines)")
    name = _last_name(kept[-1], layout) if layout.name_col >= 0 else None

    n_rows = row0[-1]
    text_out = [np.empty((n_rows, max(p.widths[t] for p in kept)), dtype=np.uint32) for t in range(len(layout.texts))]
    hashes = np.empty(n_rows, dtype=np.uint64)
    numbers = np.empty(n_rows, dtype=kept[0].numbers.dtype)

    def fill(start, stop):
        for i in range(start, stop):
            part, lo, hi = kept[i], row0[i], row0[i + 1]
            for t, out in enumerate(text_out):
                if part.codes is None:
                    trec_parse.fill_text(part.source, part.spans, t, part.n_rows, out, lo)
                else:
                    width = part.codes[t].shape[1]
                    out[lo:hi, :width] = part.codes[t]
                    out[lo:hi, width:] = 0
            hashes[lo:hi] = part.hashes
            numbers[lo:hi] = part.numbers
            kept[i] = None  # the block's buffers go as soon as they are copied

    segment_ids = [p.segment_ids for p in kept]
    segment_lengths = [p.segment_lengths for p in kept]
    unchecked = np.concatenate([p.unchecked for p in kept])
    candidates = [p.candidates + r for p, r in zip(kept, row0)]
    run_blocks(fill, len(kept), n_threads)
    query_ids, segment_codes = np.unique(np.concatenate(segment_ids), return_inverse=True)
    segments = Segments(segment_codes.ravel(), np.concatenate(segment_lengths), len(query_ids))
    texts = [out.view(np.dtype(("U", out.shape[1])))[:, 0] for out in text_out]
    candidates.append(_candidates_across_segments(segments, unchecked, hashes, texts[1:]))
    return Table(path, query_ids, segments, texts, hashes, numbers, np.unique(np.concatenate(candidates)),
                 _LineMap(row0[:-1], line0s, row_lines), name)


def _candidates_across_segments(segments, unchecked, hashes, more_texts):
    """Duplicate candidates among the rows of the queries with several segments or a segment
    not compared in full (``unchecked``; each block compared the rows of each segment): in a
    file written query by query, the queries a block boundary cuts and the very long ones."""
    n_segments = np.bincount(segments.codes)
    spread = (n_segments[segments.codes] > 1) | (np.bincount(segments.codes, weights=unchecked) > 0)[segments.codes]
    if not spread.any():
        return np.zeros(0, dtype=np.int64)
    lengths = segments.lengths[spread]
    rows = np.repeat(segments.starts[spread] - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    keys = hashes[rows] + (segments.query_of(rows) + 1).astype(np.uint64) * QUERY_KEY
    for text in more_texts:
        keys += hash_strings(text[rows]) * ITER_KEY
    return rows[_candidates(keys)]
