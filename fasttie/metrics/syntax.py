"""The spelling both metric families share: ir_measures' ``Name(key=value, ...)@cutoff``.

Keyword parameters are split here without evaluating any code (each family reads its own
values: literals for the ranking metrics, numbers in [0, 1] for the diversity ones); cutoffs are
integers >= 1, a list ``@[5,10,20]``, or ``@ALL`` where a family has a whole-list value; and an
unknown word's closest spelling is found here for the did-you-mean hints of both families.
"""

from __future__ import annotations

import ast
import difflib

from ..errors import InputError

MAX_CUTOFF = (1 << 63) - 2  # int64, below the whole-list sentinel


def keyword_parameters(text: str, name: str, example: str) -> list[tuple[str, str]]:
    """The ``key=value`` pairs inside a metric's parentheses, values as written.

    Parameters
    ----------
    text : str
        What stands between the parentheses, e.g. ``"p=0.9, gains={0: 0, 1: 1}"``.
    name : str
        The whole metric name, for the error message.
    example : str
        A well-formed name of the family, shown in the error message.

    Returns
    -------
    list of (str, str)
        (key, value's source text) in the order written.

    Raises
    ------
    InputError
        Not a comma-separated list of ``name=value`` pairs, or a name given twice.

    Examples
    --------
    >>> keyword_parameters("p=0.9, gains={0: 0, 1: 1}", "RBP(...)", "RBP(p=0.9)@10")
    [('p', '0.9'), ('gains', '{0: 0, 1: 1}')]
    """
    source = f"f({text})"
    try:  # parsed as a call's keywords (ast, not eval: nothing runs)
        call = ast.parse(source, mode="eval").body
    except SyntaxError:
        call = None
    if not isinstance(call, ast.Call) or call.args or any(kw.arg is None for kw in call.keywords):
        raise malformed_parameters(name, example)
    keys = [kw.arg for kw in call.keywords]
    for key in keys:
        if keys.count(key) > 1:  # RBP(p=0.8, p=0.9): which one was meant cannot be told
            raise InputError(f"metric {name!r}: give {key} once")
    return [(kw.arg, ast.get_source_segment(source, kw.value)) for kw in call.keywords]


def malformed_parameters(name: str, example: str) -> InputError:
    """The error for parameters that are not ``name=value`` pairs (or not values the family reads)."""
    return InputError(f"metric {name!r}: parameters must be name=value pairs, e.g. {example}")


def parse_cutoffs(suffix: str, name: str, *, whole_list: bool) -> list:
    """The cutoffs after ``@``: one (``10``) or a list (``[5, 10, 20]``).

    Parameters
    ----------
    suffix : str
        The text after ``@``.
    name : str
        The whole metric name, for the error message.
    whole_list : bool
        Whether ``ALL`` (the whole list, returned as None) is allowed: the ranking metrics have
        a whole-list value, the diversity measures with a cutoff do not.

    Returns
    -------
    list of int or None
        In the order written.

    Raises
    ------
    InputError
        An empty list, a cutoff that is not an integer, < 1, or past int64.

    Examples
    --------
    >>> parse_cutoffs("[1, 10,ALL]", "P@[1, 10,ALL]", whole_list=True)
    [1, 10, None]
    """
    if suffix.startswith("[") and suffix.endswith("]"):
        parts = [part.strip() for part in suffix[1:-1].split(",") if part.strip()]
        if not parts:
            raise InputError(f"metric {name!r}: empty cutoff list")
        return [_cutoff(part, name, whole_list) for part in parts]
    return [_cutoff(suffix, name, whole_list)]


def _cutoff(text, name, whole_list):
    if whole_list and text.upper() == "ALL":
        return None
    try:
        k = int(text)
    except ValueError:
        usage = "use @10, @ALL or @[1,10]" if whole_list else "use @20 or @[5,10,20]"
        raise InputError(f"metric {name!r}: cutoff {text!r} is not an integer ({usage})") from None
    if k <= 0:
        raise InputError(f"metric {name!r}: cutoff must be >= 1, got {k}")
    if k > MAX_CUTOFF:
        whole = "; @ALL means the whole list" if whole_list else ""
        raise InputError(f"metric {name!r}: cutoff {k} is too large (at most {MAX_CUTOFF}{whole})")
    return k


def closest(word: str, spellings, *, meanings: bool = False) -> str | None:
    """The known spelling closest to ``word`` (case-insensitive; spellings are lower case), or
    None when none is close (difflib ratio below 0.5).

    Parameters
    ----------
    word : str
    spellings : iterable of str, or dict of str to str
        With ``meanings=True``, a dict from each spelling to what it means (a metric's name).
    meanings : bool, default False
        Return what the closest spelling means, and None where spellings of two different
        meanings are as close: a did-you-mean must not pick one of two formulas at random. A
        slip of one or two keystrokes (letters added, dropped, changed or swapped) is read as
        such: ``dncg`` is one from ``ndcg`` and from ``dcg``, so None.

    Returns
    -------
    str or None

    Examples
    --------
    >>> closest("recal", ["recall", "precision"]), closest("dncg", {"ndcg": "nDCG", "dcg": "DCG"}, meanings=True)
    ('recall', None)
    """
    word = word.lower()
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    scores = {}
    for spelling in spellings:
        matcher.set_seq1(spelling)
        scores[spelling] = matcher.ratio()
    best = max(scores.values(), default=0.0)
    if best < 0.5:
        return None
    if not meanings:
        return max(s for s in scores if scores[s] == best)  # difflib.get_close_matches' choice among equals
    distances = {spelling: _slips(word, spelling) for spelling in scores}
    fewest = min(distances.values())
    if fewest <= 2:  # a typing slip: the spellings it is fewest slips from, if close by difflib too
        tied = [s for s in scores if distances[s] == fewest and scores[s] >= 0.5]
    else:
        tied = [s for s in scores if scores[s] == best]
    found = {spellings[s] for s in tied}
    return found.pop() if len(found) == 1 else None


def _slips(a: str, b: str) -> int:
    """Keystrokes between two words: insertions, deletions, substitutions and swaps of two
    neighbours (optimal string alignment distance)."""
    previous, row = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous, row = previous, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[len(b)]
