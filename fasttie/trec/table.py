"""The table reader shared by :func:`~fasttie.trec.read_run` and :func:`~fasttie.trec.read_qrels`
(package-internal).

A file is cut into blocks of whole lines (memory-mapped views where the file can be mapped);
each :class:`Block` tokenizes its lines into a fixed number of columns with numpy, without
per-line Python code on well-formed input. Blank lines and comment lines (first non-blank
character ``#``, as trec_eval 10.0) hold no row; a line with the wrong number of columns raises
:class:`~fasttie.InputError` naming the file and the 1-based line. :func:`read_table` drives the
blocks, fills the columns in place and returns rows with their query segments and line map;
the numbers of a column are parsed by :mod:`fasttie.trec.numeric`.
"""

from __future__ import annotations

import mmap
import os

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import InputError
from .grouping import QUERY_KEY, Segments, byte_matrix_hash

__all__ = ["Block", "Text", "read_table"]

_BLOCK = 1 << 21          # bytes read per block
_BOM = b"\xef\xbb\xbf"
_SNIPPET = 120            # characters of an offending line quoted in error messages
_BYTE_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)  # r low bytes


def _blocks(path, block_size=None):
    """Yield blocks of whole lines covering the file, as ``(source, lo, hi)``: bytes
    ``source[lo:hi]`` (a uint8 array) end with a newline.

    Regular files are memory-mapped, so blocks are views (no copies); other files are read
    block by block. A last line without a newline gets one, in a copy of that line.
    """
    block_size = block_size or _BLOCK
    with open(path, "rb") as f:
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # empty file, pipe, ...
            mapped = None
        if mapped is None:
            yield from _read_blocks(f, block_size)
            return
        source = np.frombuffer(mapped, dtype=np.uint8)
        try:
            n = len(source)
            pos = len(_BOM) if mapped[: len(_BOM)] == _BOM else 0
            while pos < n:
                cut = mapped.rfind(b"\n", pos, min(pos + block_size, n)) + 1
                if cut <= pos:  # no newline within a block: a very long line
                    cut = mapped.find(b"\n", min(pos + block_size, n)) + 1
                if cut <= pos:  # the last line has no newline
                    tail = np.frombuffer(mapped[pos:n] + b"\n", dtype=np.uint8)
                    yield tail, 0, len(tail)
                    break
                yield source, pos, cut
                pos = cut
        finally:
            del source
            try:
                mapped.close()
            except BufferError:  # views still referenced (an exception unwinding): GC closes it
                pass


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


class Block:
    """One block of whole lines, ``source[lo:hi]``, tokenized into n_cols columns.

    Blank lines and comment lines (first non-blank character ``#``, as trec_eval) hold no
    row. With ``extra_ok``, tokens after the first n_cols of a line are dropped (trec_eval
    ignores what follows a run line's tag); otherwise a line needs exactly n_cols tokens.
    Token offsets are relative to ``lo``.
    """

    def __init__(self, source: np.ndarray, lo: int, hi: int, line0: int, n_cols: int, path, spec: str,
                 extra_ok: bool = False):
        self.source, self.lo, self.hi, self.line0, self.path = source, lo, hi, line0, path
        self.row_lines = None  # 0-based line of each row inside the block; None = row i on line i
        body = source[lo:hi]
        space = body <= 32
        sep = np.flatnonzero(space)
        n_lines = len(sep) // n_cols
        fast = len(sep) == n_cols * n_lines and sep[0] > 0
        if fast:  # one separator between fields, a newline after the last: no blank lines
            newline = body[sep] == 10
            fast = bool(
                np.count_nonzero(newline) == n_lines
                and np.all(newline[n_cols - 1 :: n_cols])
                and np.all(sep[1:] - sep[:-1] > 1)
            )
        # a comment line may have n_cols words: lines opening with '#' (rare) go the general way
        if fast and (body[0] == 35 or np.any(body[1:][sep[n_cols - 1 : -1 : n_cols]] == 35)):
            fast = False
        if fast:
            self.n_lines = n_lines
            self.starts, self.ends = None, sep.reshape(n_lines, n_cols)
        else:
            self.starts, self.ends = self._general(body, space, n_cols, spec, extra_ok)
        self.n_rows = len(self.ends)

    def _bytes(self, start: int, end: int) -> bytes:
        return self.source[self.lo + start : self.lo + end].tobytes()

    def span(self, col: int):
        """Start offsets and lengths of the tokens of one column."""
        ends = self.ends[:, col]
        if self.starts is not None:
            starts = self.starts[:, col]
        elif col > 0:
            starts = self.ends[:, col - 1] + 1
        else:
            starts = np.empty_like(ends)
            starts[0] = 0
            np.add(self.ends[:-1, -1], 1, out=starts[1:])
        return starts, ends - starts

    def _general(self, body, space, n_cols, spec, extra_ok):
        token = ~space
        starts = np.flatnonzero(token[1:] & space[:-1]) + 1
        if token[0]:
            starts = np.concatenate(([0], starts))
        ends = np.flatnonzero(token[:-1] & space[1:]) + 1
        newlines = np.flatnonzero(body == 10)
        self.n_lines = len(newlines)
        line_of = np.searchsorted(newlines, starts)
        counts = np.bincount(line_of, minlength=len(newlines))
        first = np.cumsum(counts) - counts  # each line's first token
        lines = np.flatnonzero(counts)
        comments = lines[body[starts[first[lines]]] == 35]  # O(lines): cheap when there are none
        if comments.size:
            keep = ~np.isin(line_of, comments)
            starts, ends, line_of = starts[keep], ends[keep], line_of[keep]
            counts[comments] = 0
            first = np.cumsum(counts) - counts
            lines = np.flatnonzero(counts)
        bad = np.flatnonzero((counts != 0) & ((counts < n_cols) if extra_ok else (counts != n_cols)))
        if bad.size:
            line = int(bad[0])
            expected = f"at least {n_cols}" if extra_ok else f"{n_cols}"
            raise InputError(
                f"{self.path}, line {self.line0 + line + 1}: expected {expected} columns ({spec}), "
                f"found {counts[line]}: {self._line_text(newlines, line)!r}"
            )
        if extra_ok and counts.max(initial=0) > n_cols:  # keep each line's first n_cols tokens
            keep = np.arange(len(starts)) - first[line_of] < n_cols
            starts, ends = starts[keep], ends[keep]
        self.row_lines = lines
        return starts.reshape(-1, n_cols), ends.reshape(-1, n_cols)

    def _line_text(self, newlines, line):
        start = 0 if line == 0 else int(newlines[line - 1]) + 1
        text = self._bytes(start, int(newlines[line])).decode("utf-8", "replace").rstrip("\r")
        return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."

    def lines(self, rows):
        """1-based file line numbers of rows of this block."""
        rows = np.asarray(rows, dtype=np.int64)
        return self.line0 + 1 + (rows if self.row_lines is None else self.row_lines[rows])

    def column(self, col: int):
        """Zero-padded bytes of one column: (n, width) uint8 with width % 8 == 0, and lengths."""
        starts, lengths = self.span(col)
        width = max(8, -(-int(lengths.max(initial=1)) // 8) * 8)
        if self.hi + width <= len(self.source):  # windows may run past the block, not the source
            mat = sliding_window_view(self.source, width)[starts + self.lo]
        else:
            size = self.hi - self.lo
            padded = np.zeros(size + width, dtype=np.uint8)
            padded[:size] = self.source[self.lo : self.hi]
            mat = sliding_window_view(padded, width)[starts]
        words = mat.view(np.uint64)
        for k in range(int(lengths.min(initial=width)) // 8, width // 8):  # zero what follows
            words[:, k] &= _BYTE_MASKS[np.clip(lengths - 8 * k, 0, 8)]
        return mat, lengths

    def text(self, row: int, col: int) -> str:
        end = int(self.ends[row, col])
        if self.starts is not None:
            start = int(self.starts[row, col])
        elif col > 0:
            start = int(self.ends[row, col - 1]) + 1
        else:
            start = 0 if row == 0 else int(self.ends[row - 1, -1]) + 1
        return self._bytes(start, end).decode("utf-8", "replace")

    def strings(self, mat, lengths, what):
        """str array of the rows of a column matrix (UTF-8 decoded)."""
        codes = self.code_points(mat, lengths, what)
        if codes.shape[1] == 0:
            return np.zeros(len(codes), dtype="U1")
        return np.ascontiguousarray(codes, dtype=np.uint32).view(np.dtype(("U", codes.shape[1])))[:, 0]

    def code_points(self, mat, lengths, what):
        """(n, width) matrix of the Unicode code points of each row, zero-padded: the bytes
        themselves for ASCII text, else the UTF-8 decoding (invalid UTF-8 raises)."""
        width = int(lengths.max(initial=0))
        sub = mat[:, :width]
        if len(sub) == 0 or sub.max(initial=0) < 128:
            return sub
        raw = np.ascontiguousarray(sub).view(np.dtype(("S", width)))[:, 0]
        try:
            text = np.char.decode(raw, "utf-8")
        except UnicodeDecodeError:
            for row, item in enumerate(raw.tolist()):
                try:
                    item.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise InputError(f"{self.path}, line {int(self.lines([row])[0])}: {what} is not valid UTF-8 ({err.reason})") from None
            raise  # pragma: no cover
        return text.view(np.uint32).reshape(len(text), -1)

    def release(self):
        """Drop the block's bytes; keep only what maps rows to lines."""
        self.source = self.starts = self.ends = None

    def fail(self, row, col, what, reason):
        raise InputError(f"{self.path}, line {int(self.lines([row])[0])}: {what} {self.text(row, col)!r} {reason}")


def _query_segments(block: Block):
    """Runs of equal consecutive query ids in a block: (ids of the runs, run lengths)."""
    mat, lengths = block.column(0)
    words = mat.view(np.uint64)
    change = words[1:, 0] != words[:-1, 0]
    for j in range(1, words.shape[1]):
        change |= words[1:, j] != words[:-1, j]
    heads = np.concatenate(([0], np.flatnonzero(change) + 1))
    run_lengths = np.diff(np.append(heads, len(words)))
    return block.strings(mat[heads], lengths[heads], "query id"), run_lengths, byte_matrix_hash(mat[heads])


class _LineMap:
    """Global row -> 1-based file line, over the blocks of one file."""

    def __init__(self, blocks):
        self.blocks = blocks
        self.row0 = np.cumsum([0] + [b.n_rows for b in blocks])

    def __call__(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        which = np.searchsorted(self.row0, rows, side="right") - 1
        return np.array([self.blocks[b].lines([r - self.row0[b]])[0] for b, r in zip(which, rows)])


class Text:
    """Code points of one block's strings, (n, width) integer matrix (see Block.code_points)."""

    def __init__(self, codes):
        self.codes = codes


class _Growing:
    """A column filled block by block in place (no list of pieces to concatenate at the end).

    Numbers go to a 1-D array; text (:class:`Text` pieces) to a (rows, width) uint32 matrix of
    code points that becomes a str array without a copy. Capacity and width grow on demand.
    """

    def __init__(self, capacity):
        self.capacity, self.n, self.data = max(int(capacity), 16), 0, None

    def add(self, piece):
        text = isinstance(piece, Text)
        values = piece.codes if text else piece
        k = len(values)
        if self.data is None:
            shape = (self.capacity, values.shape[1]) if text else (self.capacity,)
            self.data = np.zeros(shape, dtype=np.uint32 if text else values.dtype)
        width = self.data.shape[1] if text else 0
        if self.n + k > len(self.data) or (text and values.shape[1] > width):
            rows = len(self.data) if self.n + k <= len(self.data) else max(self.n + k, len(self.data) * 3 // 2)
            grown = np.zeros((rows, max(width, values.shape[1])) if text else (rows,), dtype=self.data.dtype)
            if text:
                grown[: self.n, :width] = self.data[: self.n]
            else:
                grown[: self.n] = self.data[: self.n]
            self.data = grown
        if text:
            self.data[self.n : self.n + k, : values.shape[1]] = values
        else:
            self.data[self.n : self.n + k] = values
        self.n += k

    def result(self):
        if self.data is None:
            return np.zeros(0)
        out = self.data[: self.n]
        if out.ndim == 2:
            return out.view(np.dtype(("U", out.shape[1])))[:, 0] if out.shape[1] else np.zeros(self.n, dtype="U1")
        return out


def read_table(path, kind, n_cols, spec, per_block, extra_ok=False):
    """Tokenize a file block by block (``kind``, "run" or "qrels", names it in errors).

    ``per_block(block)`` returns the block's columns and a uint64 hash per row of what must be
    unique within a query (docno, or iteration and docno). Returns the path, the sorted query
    ids, the segments, the columns, per-row duplicate keys (hash of the query mixed in) and a
    row -> line map.
    """
    path = os.fspath(path)
    size = os.path.getsize(path)
    segment_ids, segment_lengths, blocks, columns = [], [], [], None
    line0 = 0
    for source, lo, hi in _blocks(path):
        block = Block(source, lo, hi, line0, n_cols, path, spec, extra_ok)
        line0 += block.n_lines
        if block.n_rows == 0:
            continue
        ids, run_lengths, id_hashes = _query_segments(block)
        segment_ids.append(ids)
        segment_lengths.append(run_lengths)
        pieces, unique_hash = per_block(block)
        unique_hash += np.repeat(id_hashes, run_lengths) * QUERY_KEY
        pieces = (*pieces, unique_hash)
        if columns is None:  # rows expected from the first block's bytes per row
            columns = [_Growing(size / (hi - lo) * block.n_rows * 1.02 + 64) for _ in pieces]
        for column, piece in zip(columns, pieces):
            column.add(piece)
        block.release()
        blocks.append(block)
    if not blocks:
        raise InputError(f"{path}: no {kind} lines (the file is empty, or has only blank and comment lines)")
    query_ids, segment_codes = np.unique(np.concatenate(segment_ids), return_inverse=True)
    segments = Segments(segment_codes.ravel(), np.concatenate(segment_lengths), len(query_ids))
    *values, keys = [column.result() for column in columns]
    return path, query_ids, segments, values, keys, _LineMap(blocks)

