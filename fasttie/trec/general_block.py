"""The general path of the table reader (package-internal): one block of whole lines
tokenized with numpy, :class:`Block`.

:mod:`fasttie.trec.table` hands a block here when the compiled pass does not take it (a line
with the wrong number of columns, a comment line, non-ASCII ids). A Block finds its tokens and
rows, raises :class:`~fasttie.InputError` naming the file and the 1-based line, and gives its
columns as zero-padded byte matrices, str arrays (decoding UTF-8) and the query segments
(:func:`query_segments`); :mod:`fasttie.trec.numeric` reads its number columns.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import InputError
from .grouping import byte_matrix_hash

__all__ = ["Block", "LineEndings", "query_segments"]

_SNIPPET = 120            # characters of an offending line quoted in error messages
_BYTE_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)  # r low bytes


class LineEndings(Exception):
    """A block holds carriage returns that end lines alone (classic Mac OS, or mixed line
    endings): :func:`fasttie.trec.table.read_table` reads the file again with every line ending
    made a line feed."""


def _check_bytes(body, line0, path):
    """Raise for what the tokenizer would read silently wrong: :class:`LineEndings` for a lone
    carriage return, InputError naming the line for a NUL byte (taken for a blank) or a UTF-8
    byte order mark past the start of the file (two files concatenated: it would start a query
    id). A block ends with a line feed, so a carriage return is never its last byte."""
    carriage = np.flatnonzero(body == 13)
    if carriage.size and np.any(body[carriage + 1] != 10):
        raise LineEndings
    marks = np.flatnonzero(body[:-2] == 0xEF)
    marks = marks[(body[marks + 1] == 0xBB) & (body[marks + 2] == 0xBF)]
    nul = np.flatnonzero(body == 0)
    if marks.size or nul.size:
        at = int(min(marks[:1].tolist() + nul[:1].tolist()))
        line = line0 + 1 + int(np.count_nonzero(body[:at] == 10))
        if nul.size and nul[0] == at:
            raise InputError(f"{path}, line {line}: a NUL byte; the file is binary or damaged (remove NUL bytes with "
                             "tr -d '\\000')")
        raise InputError(f"{path}, line {line}: a UTF-8 byte order mark (U+FEFF) past the start of the file, as when "
                         "files that begin with one are concatenated; remove it from each file before concatenating")


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
        _check_bytes(body, line0, path)
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


def query_segments(block: Block):
    """Runs of equal consecutive query ids in a block (its first column).

    Parameters
    ----------
    block : Block
        A block with at least one row.

    Returns
    -------
    ids : ndarray of str, shape (n_runs,)
        The query id of each run, in block order (UTF-8 decoded).
    run_lengths : ndarray of int64, shape (n_runs,)
        Rows in each run.
    id_hashes : ndarray of uint64, shape (n_runs,)
        The hash of each run's query id (:func:`fasttie.trec.grouping.byte_matrix_hash`).
    """
    mat, lengths = block.column(0)
    words = mat.view(np.uint64)
    change = words[1:, 0] != words[:-1, 0]
    for j in range(1, words.shape[1]):
        change |= words[1:, j] != words[:-1, j]
    heads = np.concatenate(([0], np.flatnonzero(change) + 1))
    run_lengths = np.diff(np.append(heads, len(words)))
    return block.strings(mat[heads], lengths[heads], "query id"), run_lengths, byte_matrix_hash(mat[heads])
