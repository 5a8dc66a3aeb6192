"""fasttie.trec.numeric: a column of scores reads as Python's ``float()`` reads each text
(bitwise: short decimals, 17 to 20 digit mantissas, exponents, signs), integers as ``int()``,
and junk, NaN, infinities and overflowing integers raise naming the line."""

import numpy as np
import pytest

from fasttie.trec.general_block import Block
from fasttie.trec.numeric import parse_floats, parse_ints


def _block(texts):
    source = np.frombuffer("".join(f"q {t}\n" for t in texts).encode(), dtype=np.uint8)
    return Block(source, 0, len(source), 0, 2, "run.txt", "query score")


def _random_decimal(rng):
    kind = rng.integers(0, 6)
    digits = "".join(map(str, rng.integers(0, 10, int(rng.integers(1, 22)))))
    cut = int(rng.integers(0, len(digits) + 1))
    sign = str(rng.choice(["", "-", "+"]))
    if kind == 0:
        return sign + digits
    if kind == 1:
        return f"{sign}{digits[:cut]}.{digits[cut:]}".rstrip(".") or "0"
    if kind == 2:
        return f"{sign}{digits[:cut] or '0'}.{digits[cut:] or '0'}e{int(rng.integers(-30, 30))}"
    if kind == 3:  # a double's shortest repr, and its neighbours near a rounding midpoint
        return repr(float(rng.standard_normal() * 10.0 ** int(rng.integers(-8, 8))))
    if kind == 4:
        return f"{sign}0.{'0' * int(rng.integers(0, 5))}{digits}"
    return f"{sign}{digits[:cut] or '0'}.{digits[cut:]}5"


@pytest.mark.parametrize("seed", range(10))
def test_floats_as_python_reads_them(seed):
    rng = np.random.default_rng(seed)
    texts = [_random_decimal(rng) for _ in range(400)]
    texts += ["9007199254740993", "0.30000000000000004", "12345678901234567.5", "-0.0", "1E3", ".5", "5.",
              "18446744073709551615", "0.1234567890123456789"]
    got = parse_floats(_block(texts), 1, "score")
    expected = np.array([float(t) for t in texts])
    assert np.array_equal(got.view(np.uint64), expected.view(np.uint64)), [
        t for t, a, b in zip(texts, got, expected) if a != b]


@pytest.mark.parametrize("seed", range(4))
def test_ints_as_python_reads_them(seed):
    rng = np.random.default_rng(seed)
    texts = [str(int(x)) for x in rng.integers(-(2**62), 2**62, 200)] + ["+7", "-0", "007", str(2**63 - 1),
                                                                          str(-(2**63))]
    assert parse_ints(_block(texts), 1, "grade").tolist() == [int(t) for t in texts]


@pytest.mark.parametrize("text, reason", [("nan", "is not finite"), ("-inf", "is not finite"), ("1e999", "is not finite"),
                                          ("1_000", "is not a number"), ("0x10", "is not a number"),
                                          ("1.2.3", "is not a number")])
def test_bad_scores_name_the_line(text, reason):
    with pytest.raises(ValueError, match=rf"^run.txt, line 3: score '{text}' {reason}"):
        parse_floats(_block(["1", "2.5", text]), 1, "score")


@pytest.mark.parametrize("text, reason", [("1.0", "is not an integer"), (str(2**63), "does not fit in int64"),
                                          ("1_0", "is not an integer")])
def test_bad_ints_name_the_line(text, reason):
    with pytest.raises(ValueError, match=rf"^run.txt, line 2: grade '{text}' {reason}"):
        parse_ints(_block(["1", text]), 1, "grade")
