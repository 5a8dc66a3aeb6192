"""trec_eval's ``relstring``: the judgments of the first documents of each ranking, as text.

One character per document (m_relstring.c): its grade when 0..9, ``>`` above 9, ``.`` for a
document judged with a negative grade (in the pool but not judged), ``-`` for one without a
qrels line. A string is one order of the documents, so it needs a fixed tie order: trec_eval's
(score, then document id descending), pyndeval's (document id ascending), the file's
("stable"), or the grades' (optimistic / pessimistic: higher / lower grades first inside ties);
an average over tie orders has no single string.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..options import TREC_TIES
from ..errors import InputError
from .dict_join import align_dicts
from .evaluation import ascending_tie_keys
from .join import align
from .readers import as_qrels

__all__ = ["relstring"]

_ORDERS = tuple(t for t in TREC_TIES if t != "average")  # relstring is one order's text: no average


def relstring(qrels: Any, run: Any, *, length: int = 10, ties: str = "trec", complete: bool = False,
              max_retrieved: int | None = None, judged_only: bool = False) -> dict:
    """trec_eval's ``relstring.length`` of each evaluated query.

    Parameters
    ----------
    qrels, run
        As in :func:`fasttie.trec.evaluate`.
    length : int, default 10
        Documents per string (trec_eval's parameter; fewer when fewer were retrieved).
    ties : {"trec", "pyndeval", "stable", "optimistic", "pessimistic"}, default "trec"
        The order inside ties (see :func:`fasttie.trec.evaluate`); "average" has no single string.
    complete, max_retrieved, judged_only
        As in :func:`fasttie.trec.evaluate` (``complete``: judged queries missing from the run
        get an empty string, as trec_eval -c prints them).

    Returns
    -------
    dict of str to str
        Query id -> string, queries sorted as strings.

    Raises
    ------
    ValueError
        ``ties`` not a fixed order, ``length`` not an integer >= 0, and the errors of
        :func:`fasttie.trec.evaluate`'s join.

    Examples
    --------
    ``d2`` (judged 2) and ``d3`` (no qrels line) tie; trec_eval ranks the larger id first:

    >>> relstring({"q1": {"d1": 0, "d2": 2, "d4": -1}}, {"q1": {"d1": 3.0, "d2": 1.0, "d3": 1.0, "d4": 0.5}})
    {'q1': '0-2.'}
    >>> relstring({"q1": {"d1": 0, "d2": 2, "d4": -1}}, {"q1": {"d1": 3.0, "d2": 1.0, "d3": 1.0, "d4": 0.5}},
    ...           ties="pyndeval", length=2)
    {'q1': '02'}
    """
    if ties not in _ORDERS:
        raise InputError(f"{{ties}} must be one of {_ORDERS} for relstring (one order of the documents), "
                         f"got {ties!r}", argument="ties")
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
        raise InputError(f"{{length}} must be an integer >= 0, got {length!r}", argument="length")
    aligned = None
    if not (complete or max_retrieved is not None) and ties in ("trec", "pyndeval"):
        aligned = align_dicts(qrels, run, judged_only=judged_only, tie_keys=True)
    if aligned is None:
        aligned = align(as_qrels(qrels), run, complete=complete, max_retrieved=max_retrieved,
                        judged_only=judged_only)
    n_queries = len(aligned.query_ids)
    query = np.repeat(np.arange(n_queries), aligned.sizes)
    score = np.asarray(aligned.score, dtype=np.float64)
    rows = np.arange(len(query))
    if ties in ("trec", "pyndeval"):
        order = np.lexsort((ascending_tie_keys(aligned, ties), -score, query))
    elif ties == "stable":
        order = np.lexsort((rows, -score, query))
    else:  # higher (lower) grades first inside ties, then file order
        grade = np.asarray(aligned.grade, dtype=np.float64)
        order = np.lexsort((rows, -grade if ties == "optimistic" else grade, -score, query))
    grade = np.asarray(aligned.grade)[order]
    judged, pooled = np.asarray(aligned.judged)[order], np.asarray(aligned.pooled)[order]
    chars = np.where(judged, np.where(grade > 9, ">", (np.clip(grade, 0, 9).astype(np.int64)).astype(str)),
                     np.where(pooled, ".", "-"))
    out = {}
    for i, qid in enumerate(aligned.query_ids.tolist()):
        lo = aligned.offsets[i]
        out[str(qid)] = "".join(chars[lo:lo + min(length, aligned.sizes[i])].tolist())
    return out
