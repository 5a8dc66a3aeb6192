"""Numbers of a table column (package-internal): the numbers the compiled pass leaves over
(:func:`finish_numbers`), and whole columns of a block read the general way, with numpy
(:func:`parse_floats`, :func:`parse_ints`).

Scores are read exactly as Python's ``float()`` reads them (correctly rounded): short decimal
literals take Clinger's fast path (an exact integer mantissa divided by an exact power of
ten), longer ones an extended-precision quotient where ``np.longdouble`` has a 64-bit
mantissa, and everything else, including exponents, goes through ``float()`` row by row. NaN,
infinities and junk raise :class:`~fasttie.InputError` naming the file and the line.
"""

from __future__ import annotations

import numpy as np

__all__ = ["finish_numbers", "parse_floats", "parse_ints"]

_POW10 = 10.0 ** np.arange(23)
_EXACT_F64 = np.uint64(1 << 53)
_HAS_LONGDOUBLE = np.finfo(np.longdouble).nmant >= 63
if _HAS_LONGDOUBLE:
    _POW10_LD = np.array([10**i for i in range(20)], dtype=object).astype(np.longdouble)


def _count_true(mask):
    """Number of True per row of a C-contiguous (n, width) bool matrix, width % 8 == 0."""
    words = mask.view(np.uint64)
    counts = np.bitwise_count(words[:, 0]).astype(np.int64)
    for j in range(1, words.shape[1]):
        counts += np.bitwise_count(words[:, j])
    return counts


def _digits(mat, lengths):
    """Shared first step of number parsing: digit values, masks and counts per row."""
    values = mat - np.uint8(48)
    is_digit = values < 10
    first = mat[:, 0]
    negative = first == 45
    signed = negative | (first == 43)
    return values, is_digit, negative, signed, _count_true(is_digit)


def _horner(values, is_digit, width):
    """Integer value of the digits in the first ``width`` bytes of each row (other bytes are
    skipped), uint64; exact below 10**19."""
    digit = is_digit.view(np.uint8)  # 0/1 bytes: uint8 arithmetic, no bool casts
    multiplier = digit * np.uint8(9)
    multiplier += np.uint8(1)
    addend = values * digit
    mantissa = addend[:, 0].astype(np.uint64)
    for j in range(1, width):
        mantissa *= multiplier[:, j]
        mantissa += addend[:, j]
    return mantissa


def parse_floats(block, col: int, what: str) -> np.ndarray:
    """Scores of one column: decimal literals exactly as ``float()`` reads them (correctly
    rounded), others through ``float()``; NaN, infinities and junk raise with the line."""
    mat, lengths = block.column(col)
    values, is_digit, negative, signed, n_digits = _digits(mat, lengths)
    is_dot = mat == 46
    n_dots = _count_true(is_dot)
    fast = (n_digits + n_dots + signed == lengths) & (n_dots <= 1) & (n_digits >= 1) & (n_digits <= 19)
    mantissa = _horner(values, is_digit, int(lengths.max()))
    frac = np.where(fast & (n_dots > 0), lengths - 1 - is_dot.argmax(axis=1), 0)
    out = mantissa.astype(np.float64) / _POW10[frac]
    slow = ~fast
    wide = fast & (mantissa >= _EXACT_F64)  # Clinger's fast path needs an exact mantissa
    if wide.any():
        rows = np.flatnonzero(wide)
        out[rows], ambiguous = _wide_quotients(mantissa[rows], frac[rows])
        slow[rows[ambiguous]] = True
    np.negative(out, out=out, where=negative)
    for row in np.flatnonzero(slow).tolist():
        value = _python_value(block, row, col, what, float, "a number")
        if not np.isfinite(value):
            block.fail(row, col, what, "is not finite (NaN and infinite scores are not allowed)")
        out[row] = value
    return out


def _wide_quotients(mantissa, frac):
    """mantissa / 10**frac, correctly rounded, for exact integer mantissas of 54 to 64 bits:
    (values, ambiguous), the ambiguous ones to be read by ``float()``."""
    if not _HAS_LONGDOUBLE:
        return np.zeros(len(mantissa)), np.ones(len(mantissa), dtype=bool)
    quotient = mantissa.astype(np.longdouble) / _POW10_LD[frac]
    nearest = quotient.astype(np.float64)
    residue = quotient - nearest.astype(np.longdouble)
    other = np.nextafter(nearest, np.where(residue > 0, np.inf, -np.inf))
    midpoint = (nearest.astype(np.longdouble) + other.astype(np.longdouble)) / 2
    # rounding twice is wrong only where the extended result sits on a double midpoint
    return nearest, (residue != 0) & (quotient == midpoint)


def _python_number(text: str, parse):
    """A number Python's ``float`` / ``int`` reads, without their ``_`` digit separators (not
    numbers in a TREC file); ValueError otherwise."""
    if "_" in text:
        raise ValueError
    return parse(text)


def finish_numbers(values, source, slow, is_float, fail):
    """Write the numbers the compiled pass left over (``slow`` of ``trec_parse.scan_table``:
    row, token start and stop, decimals or -1, digits) into ``values``: wide decimals rounded
    once from extended precision, the rest read by ``float()`` / ``int()``, in row order;
    ``fail(i, text, reason)`` raises for entry i."""
    todo = np.ones(len(slow), dtype=bool)
    if is_float:
        wide = np.flatnonzero(slow[:, 3] >= 0)
        if wide.size:
            nearest, ambiguous = _wide_quotients(slow[wide, 4].view(np.uint64), slow[wide, 3])
            negative = source[slow[wide, 1]] == 45
            values[slow[wide, 0]] = np.where(negative, -nearest, nearest)
            todo[wide[~ambiguous]] = False
    for i in np.flatnonzero(todo).tolist():
        row, start, stop = (int(x) for x in slow[i, :3])
        text = source[start:stop].tobytes().decode("utf-8", "replace")
        try:
            value = _python_number(text, float if is_float else int)
        except ValueError:
            fail(i, text, "is not a number" if is_float else "is not an integer")
        if is_float and not np.isfinite(value):
            fail(i, text, "is not finite (NaN and infinite scores are not allowed)")
        if not is_float and not -(2**63) <= value < 2**63:
            fail(i, text, "does not fit in int64")
        values[row] = value


def _python_value(block, row: int, col: int, what: str, parse, noun: str):
    """One cell the vectorized parser left over, read by :func:`_python_number`; otherwise the
    block's error."""
    try:
        return _python_number(block.text(row, col), parse)
    except ValueError:
        block.fail(row, col, what, f"is not {noun}")


def parse_ints(block, col: int, what: str) -> np.ndarray:
    """Integers of one column (optional sign, decimal digits); anything else raises."""
    mat, lengths = block.column(col)
    values, is_digit, negative, signed, n_digits = _digits(mat, lengths)
    fast = (n_digits + signed == lengths) & (n_digits >= 1) & (n_digits <= 18)
    out = _horner(values, is_digit, int(lengths.max())).astype(np.int64)
    np.negative(out, out=out, where=negative)
    for row in np.flatnonzero(~fast).tolist():
        value = _python_value(block, row, col, what, int, "an integer")
        if not -(2**63) <= value < 2**63:
            block.fail(row, col, what, "does not fit in int64")
        out[row] = value
    return out
