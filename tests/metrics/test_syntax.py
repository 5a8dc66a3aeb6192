"""fasttie.metrics.syntax: keyword parameters split as Python's own parser splits a call (values
as written, nothing evaluated), cutoffs read as ``int`` reads them, and did-you-mean spellings as
difflib picks them, with a typing slip (a letter added, dropped, changed or two swapped) one slip."""

import difflib
import string

import numpy as np
import pytest

from fasttie.metrics.syntax import MAX_CUTOFF, _slips, closest, keyword_parameters, parse_cutoffs

VALUES = ["0.9", "2", "'exp-log2'", "{0: 0, 1: 1, 2: 3}", "True", "-1", "(1, 2)", "[0.5, 0.25]", "1e-3"]


@pytest.mark.parametrize("seed", range(20))
def test_keyword_parameters_in_the_order_written(seed):
    rng = np.random.default_rng(seed)
    keys = list(rng.choice(["p", "rel", "gains", "judged", "alpha", "dcg", "beta"], int(rng.integers(1, 5)),
                           replace=False))
    values = [str(rng.choice(VALUES)) for _ in keys]
    spaces = [" " * int(rng.integers(0, 3)) for _ in range(3 * len(keys))]
    text = ",".join(f"{spaces[3 * i]}{k}{spaces[3 * i + 1]}={spaces[3 * i + 2]}{v}" for i, (k, v) in enumerate(zip(keys, values)))
    assert keyword_parameters(text, f"X({text})", "X(p=1)") == list(zip(keys, values))


@pytest.mark.parametrize("text", ["0.5", "p", "p=", "p=1,,q=2", "**d", "p=1, 2", "p=(", "p=1; import os"])
def test_malformed_parameters(text):
    with pytest.raises(ValueError, match=r"parameters must be name=value pairs, e\.g\. RBP\(p=0\.9\)@10"):
        keyword_parameters(text, f"RBP({text})", "RBP(p=0.9)@10")


def test_a_key_given_twice():
    with pytest.raises(ValueError, match="give p once"):
        keyword_parameters("p=0.8, p=0.9", "RBP(p=0.8, p=0.9)", "RBP(p=0.9)")


@pytest.mark.parametrize("seed", range(20))
def test_cutoff_lists_as_int_reads_them(seed):
    rng = np.random.default_rng(seed)
    items = [str(int(k)) if rng.random() < 0.8 else str(rng.choice(["ALL", "all"])) for k in
             rng.integers(1, 10**6, int(rng.integers(1, 6)))]
    expected = [None if item.upper() == "ALL" else int(item) for item in items]
    if len(items) == 1:
        assert parse_cutoffs(items[0], "m", whole_list=True) == expected
    suffix = "[" + ", ".join(items) + "]"
    assert parse_cutoffs(suffix, "m", whole_list=True) == expected
    if None in expected:
        with pytest.raises(ValueError, match="is not an integer \\(use @20 or @\\[5,10,20\\]\\)"):
            parse_cutoffs(suffix, "m", whole_list=False)
    else:
        assert parse_cutoffs(suffix, "m", whole_list=False) == expected


@pytest.mark.parametrize("suffix, fragment", [("0", "must be >= 1"), ("-3", "must be >= 1"), ("[]", "empty cutoff list"),
                                              ("x", "is not an integer"), (str(MAX_CUTOFF + 1), "is too large"),
                                              ("1.5", "is not an integer")])
def test_bad_cutoffs(suffix, fragment):
    with pytest.raises(ValueError, match=fragment):
        parse_cutoffs(suffix, "P@" + suffix, whole_list=True)
    assert parse_cutoffs(str(MAX_CUTOFF), "m", whole_list=True) == [MAX_CUTOFF]


WORDS = ["ndcg", "recall", "precision", "map", "recip_rank", "bpref", "success", "infap", "rbp", "err", "judged"]


@pytest.mark.parametrize("seed", range(30))
def test_closest_is_difflibs_choice(seed):
    rng = np.random.default_rng(seed)
    word = "".join(rng.choice(list(string.ascii_lowercase[:12]), int(rng.integers(1, 9))))
    if seed % 2:
        base = list(str(rng.choice(WORDS)))
        base[int(rng.integers(0, len(base)))] = str(rng.choice(list(string.ascii_lowercase)))
        word = "".join(base)
    found = difflib.get_close_matches(word, WORDS, n=1, cutoff=0.5)
    assert closest(word.upper(), WORDS) == (found[0] if found else None)


def _one_slip(rng, word):
    i = int(rng.integers(0, len(word)))
    letter = str(rng.choice(list(string.ascii_lowercase)))
    kind = int(rng.integers(0, 4))
    if kind == 0:
        return word[:i] + letter + word[i:]
    if kind == 1:
        return word[:i] + word[i + 1:]
    if kind == 2:
        return word[:i] + letter + word[i + 1:]
    i = min(i, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


@pytest.mark.parametrize("seed", range(30))
def test_slips_count_keystrokes(seed):
    rng = np.random.default_rng(seed)
    word = str(rng.choice(WORDS))
    once = _one_slip(rng, word)
    twice = _one_slip(rng, once)
    assert _slips(word, word) == 0 and _slips(once, word) <= 1 and _slips(twice, word) <= 2
    assert _slips(once, word) == _slips(word, once) and (_slips(once, word) == 0) == (once == word)
    assert _slips("", word) == len(word)


def test_meanings_refuse_to_pick_between_formulas():
    meanings = {"ndcg": "nDCG", "dcg": "DCG", "recall": "R", "rec": "R"}
    assert closest("dncg", meanings, meanings=True) is None  # one slip from both
    assert closest("nddcg", meanings, meanings=True) == "nDCG"
    assert closest("recal", meanings, meanings=True) == "R"  # two spellings, one meaning
    assert closest("zzzzzz", meanings, meanings=True) is None
