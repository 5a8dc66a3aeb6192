"""Tokenizing and parsing a block of TREC table lines in one pass (run and qrels files).

:func:`scan_table` reads the whitespace-separated lines of a block byte by byte and writes, per
data row, what the readers keep: the spans of the text columns (document id, qrels' iteration),
the document id's hash, the number column and the row's line; per run of rows with one query id
(a segment), the id's span; and the pairs of rows of one segment with the same document id (and
iteration), found with a small cache-resident hash table: duplicate candidates. It handles the
common case only: a line with the wrong number of columns, a non-ASCII byte in a kept text
column, a NUL byte or a carriage return that does not end a line with its line feed stops it
(``info[STATUS] = GENERAL``) and the block goes the general numpy way
(:mod:`fasttie.trec.table`), which raises the same errors or decodes UTF-8. Numbers it cannot
parse exactly (exponents, more than 19 digits, junk) are listed for Python.
:func:`fill_text` then copies text spans into a zero-padded code point matrix (a numpy str
array).

Serial, nogil, no global state: blocks run in parallel on :mod:`fasttie.parallel`. Two kernels,
one signature each: every argument has one dtype whatever the file (a cold compile adds about
1.3 s to the first ``trec.evaluate``; cached afterwards).
"""

import numpy as np

from ._jit import jit

# params[...] of scan_table; TEXT_COL and TEXT_COL + 1: the text columns (-1: none)
N_COLS, EXTRA_OK, NUMBER_COL, FLOATS, SLOT_SHIFT, TEXT_COL = range(6)
TABLE_BITS = 13  # slots of the duplicate table: 2**13; a segment's first 2**12 rows are compared
N_PARAMS = TEXT_COL + 2
# info[...] of scan_table
N_ROWS, N_LINES, N_SEGMENTS, N_SLOW, N_REPEATS, STATUS = range(6)
INFO_SIZE = STATUS + 1
GENERAL, FULL = 1, 2  # info[STATUS]: the block needs the general path; more rows than `rows` holds
# hash_keys of scan_table: 64 word keys (grouping._WORD_KEYS), then these
WORD_MIX, ITER_KEY = 64, 65

_POW10 = 10.0 ** np.arange(23)  # exact doubles: 10**k for k <= 22
_EXACT = np.uint64(1 << 53)     # integers below it are exact doubles (Clinger's fast path)
_SPREAD = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: a key's slot in the table


@jit
def scan_table(source, params, hash_keys, rows, hashes, ints, floats, segments, slow, slots, slot_keys, repeats,
               info):
    """Tokenize and parse the lines of a block, ``source`` (ending with a newline).

    Blank lines and comment lines (first token opening with ``#``) hold no row; a data line has
    ``params[N_COLS]`` tokens (more when ``params[EXTRA_OK]``; the first ``N_COLS`` count);
    column 0 is the query id. Per row r: ``rows[r]`` = start (index into source) and length of
    text column ``params[TEXT_COL]``, the same of ``params[TEXT_COL + 1]`` (0, 0 without one),
    and the row's 0-based line in the block; ``hashes[r]`` the hash of the first text column
    (grouping._hash_words); the number of column ``params[NUMBER_COL]`` in ``floats[r]`` when
    ``params[FLOATS]`` (decimals correctly rounded), else in ``ints[r]``.
    Per segment s: ``segments[s]`` = first row, id start, id length, and 1 when it has more
    rows than were compared for duplicates (half the table), else 0. Numbers left to Python:
    ``slow[i]`` = row, token start, token stop, and -1, or the number of decimals and the
    digits as uint64 bits when these are exact but too many for a double. ``repeats[i]`` =
    (earlier row, row): rows of one segment with equal keys (the hashes of the text columns
    mixed), candidates for a duplicate; the table's slots hold the key and the segment number
    (1, 2, ...) x 2**32 + the row, so a new segment starts with an empty table at no cost.
    ``info``: see the constants above; ``info[STATUS]`` is GENERAL when the block needs the
    general path, FULL when it has more rows than ``rows`` holds (the other outputs are then
    unfinished). The caller zeroes ``slots`` and ``info``.

    Each column is scanned once, by a loop that does its work on the way: the query id is
    compared with the previous row's, text is hashed, the number parsed.

    Parameters
    ----------
    source : (n,) uint8, read-only
        The block's bytes, ending with a newline; n < 2**31.
    params : (N_PARAMS,) int64
        N_COLS, EXTRA_OK, NUMBER_COL, FLOATS, SLOT_SHIFT (= 64 - TABLE_BITS), then the two text
        columns (-1: none; columns other than 0).
    hash_keys : (66,) uint64
        The 64 word keys of grouping._WORD_KEYS, then WORD_MIX and ITER_KEY.
    rows : (cap, 5) int32
        Written: per row, text column 0's start and length, text column 1's, and the line.
    hashes : (cap,) uint64
        Written: hash of each row's first text column.
    ints : (cap,) or (0,) int64
        Written without params[FLOATS]: the number column (may be empty otherwise).
    floats : (cap,) or (0,) float64
        Written with params[FLOATS]: the number column (may be empty otherwise).
    segments : (cap, 4) int64
        Written: per segment, first row, id start, id length, 1 if not all rows were compared.
    slow : (cap, 5) int64
        Written: the numbers left to Python (row, token start, token stop, -1 or decimals, digits).
    slots : (2**TABLE_BITS,) int64
        The duplicate table's segment and row per slot; zeros from the caller, written.
    slot_keys : (2**TABLE_BITS,) uint64
        The duplicate table's keys; written.
    repeats : (cap, 2) int64
        Written: (earlier row, row) pairs with equal keys.
    info : (INFO_SIZE,) int64
        Zeros from the caller; written: counts and STATUS (see the constants above).
    """
    n_cols = params[N_COLS]
    text0 = params[TEXT_COL]
    text1 = params[TEXT_COL + 1]
    number_col = params[NUMBER_COL]
    floats_wanted = params[FLOATS] != 0
    word_mix = hash_keys[WORD_MIX]
    mask = np.uint64(slots.shape[0] - 1)
    slot_shift = np.uint64(params[SLOT_SHIFT])  # the top bits of key x _SPREAD pick the slot
    seg_rows = 0
    pos = 0
    hi = source.shape[0]
    line = 0
    r = 0
    n_seg = 0
    n_slow = 0
    n_repeats = 0
    q_start = np.int64(0)
    q_len = np.int64(-1)
    while pos < hi:
        n_tok = 0
        comment = False
        same_query = True
        high = 0  # OR of the text bytes: >= 128 when one is not ASCII
        h0 = np.uint64(0)
        h1 = np.uint64(0)
        s0 = e0 = s1 = e1 = sn = en = sq = eq = 0  # token spans: text 0, text 1, number, query id
        negative = False
        mantissa = np.uint64(0)
        n_digits = 0
        dot = -1
        number_ok = True
        while True:
            c = source[pos]
            while c <= 32 and c != 10:
                if c == 0 or (c == 13 and source[pos + 1] != 10):  # NUL, a line ending CR alone
                    info[STATUS] = GENERAL
                    return
                pos += 1
                c = source[pos]
            if c == 10:
                break
            start = pos
            if n_tok == 0:  # the query id, compared with the previous row's on the way
                comment = c == 35
                i = 0
                while c > 32:
                    if i >= q_len or source[q_start + i] != c:
                        same_query = False
                    i += 1
                    pos += 1
                    c = source[pos]
                if i != q_len:
                    same_query = False
                sq, eq = start, pos
            elif n_tok == text0 or n_tok == text1:  # text, hashed on the way in 8-byte words
                h = np.uint64(0)
                word = np.uint64(0)
                shift = np.uint64(0)
                j = 0
                while c > 32:
                    word |= np.uint64(c) << shift
                    high |= c
                    shift += np.uint64(8)
                    pos += 1
                    c = source[pos]
                    if shift == 64 or c <= 32:
                        x = word * hash_keys[j & 63]
                        x ^= x >> np.uint64(29)
                        h += x * word_mix
                        j += 1
                        word = np.uint64(0)
                        shift = np.uint64(0)
                h ^= h >> np.uint64(32)
                if n_tok == text0:
                    h0, s0, e0 = h, start, pos
                else:
                    h1, s1, e1 = h, start, pos
            elif n_tok == number_col:  # optional sign, digits, one decimal point for floats
                negative = c == 45
                if c == 45 or c == 43:
                    pos += 1
                    c = source[pos]
                while c > 32:
                    if 48 <= c <= 57:
                        mantissa = mantissa * np.uint64(10) + np.uint64(c - 48)
                        n_digits += 1
                    elif c == 46 and dot < 0 and floats_wanted:
                        dot = pos
                    else:
                        number_ok = False
                    pos += 1
                    c = source[pos]
                sn, en = start, pos
            else:
                while c > 32:
                    pos += 1
                    c = source[pos]
            n_tok += 1
        pos += 1  # the newline
        line += 1
        if n_tok == 0 or comment:
            continue
        if n_tok < n_cols or (n_tok > n_cols and params[EXTRA_OK] == 0) or high >= 128:
            info[STATUS] = GENERAL
            return
        if r == rows.shape[0]:
            info[STATUS] = FULL
            return
        if not same_query:  # a new segment
            for b in range(sq, eq):
                if source[b] >= 128:
                    info[STATUS] = GENERAL
                    return
            segments[n_seg, 0] = r
            segments[n_seg, 1] = sq
            segments[n_seg, 2] = eq - sq
            segments[n_seg, 3] = 0
            n_seg += 1
            seg_rows = 0
        q_start, q_len = sq, eq - sq
        # rows of one segment with equal keys: duplicate candidates
        seg_rows += 1
        if 2 * seg_rows <= slots.shape[0]:
            key = h0 + h1 * hash_keys[ITER_KEY]
            slot = (key * _SPREAD) >> slot_shift
            while True:
                if slots[slot] >> 32 != n_seg:  # free for this segment
                    slots[slot] = (n_seg << 32) + r
                    slot_keys[slot] = key
                    break
                if slot_keys[slot] == key:
                    repeats[n_repeats, 0] = slots[slot] & 0xFFFFFFFF
                    repeats[n_repeats, 1] = r
                    n_repeats += 1
                    break
                slot = (slot + np.uint64(1)) & mask
        else:
            segments[n_seg - 1, 3] = 1
        hashes[r] = h0
        rows[r, 0] = s0
        rows[r, 1] = e0 - s0
        rows[r, 2] = s1
        rows[r, 3] = e1 - s1
        rows[r, 4] = line - 1
        fast = number_ok and n_digits >= 1 and n_digits <= (19 if floats_wanted else 18)
        if fast and floats_wanted and mantissa < _EXACT:  # both exact: one correctly rounded division
            value = np.float64(mantissa) / _POW10[en - 1 - dot if dot >= 0 else 0]
            floats[r] = -value if negative else value
        elif fast and not floats_wanted:
            ints[r] = -np.int64(mantissa) if negative else np.int64(mantissa)
        else:
            slow[n_slow, 0] = r
            slow[n_slow, 1] = sn
            slow[n_slow, 2] = en
            slow[n_slow, 3] = (en - 1 - dot if dot >= 0 else 0) if fast else -1
            slow[n_slow, 4] = np.int64(mantissa)
            n_slow += 1
        r += 1
    info[N_ROWS] = r
    info[N_LINES] = line
    info[N_SEGMENTS] = n_seg
    info[N_SLOW] = n_slow
    info[N_REPEATS] = n_repeats


@jit
def fill_text(source, spans, column, n_rows, codes, row0):
    """codes[row0 + r] = the bytes of span ``column`` of row r (spans[r, 2 column] start,
    spans[r, 2 column + 1] length), zero-padded, for r < n_rows.

    source : (n,) uint8, read-only, ASCII where the spans are; spans : (cap, k) int32 (the
    ``rows`` of scan_table); codes : (n_total, width) uint32, written (the buffer of a numpy str
    array).
    """
    width = codes.shape[1]
    for r in range(n_rows):
        start = spans[r, 2 * column]
        length = spans[r, 2 * column + 1]
        out = row0 + r
        for c in range(length):
            codes[out, c] = source[start + c]
        for c in range(length, width):
            codes[out, c] = 0
