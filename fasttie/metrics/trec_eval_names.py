"""trec_eval's measure names with a cutoff or parameters, translated to fasttie's names.

trec_eval writes cutoffs and parameters into the measure's name (``P_10``, ``ndcg_cut.5,10``,
``rbp.p=0.95``, ``ndcg.1=3,2=9``); :func:`from_trec_eval` rewrites them in ir_measures'
spelling. Its plain names (``map``, ``recip_rank``, ``set_P``, ``num_ret``, ...) are aliases of
the ranking grammar's table (:mod:`fasttie.metrics.ranking_names`).
"""

from __future__ import annotations

import re

TREC_EVAL_PERSISTENCE = 0.9  # trec_eval's rbp default (ir_measures' is 0.8)

_TREC_EVAL_NAME = re.compile(r"^(map_cut|ndcg_cut|P|relative_P|recall|success)[_.]([\d,]+)$")
_TREC_EVAL_BASE = {"map_cut": "AP", "ndcg_cut": "nDCG", "P": "P", "relative_P": "P(relative=True)", "recall": "R",
                   "success": "Success"}
_TREC_EVAL_GAINS = re.compile(r"^ndcg[_.](\d+=\d*\.?\d+(?:,\d+=\d*\.?\d+)*)$")
_TREC_EVAL_RBP = re.compile(r"^(rbp|rbp_resid)(?:\.p=(\d*\.?\d+))?$")


def from_trec_eval(name: str) -> list[str]:
    """trec_eval measure names (``P_10``, ``ndcg_cut.5,10``, ``map_cut_100``, ``recall_5``,
    ``success_10``, ``relative_P_10``, ``set_relative_P``, ``rbp``, ``rbp_resid``,
    ``rbp.p=0.95``, ``ndcg.1=3,2=9``) as fasttie names; any other name is returned as it is
    (``map``, ``ndcg``, ``recip_rank`` and ``Rprec`` are aliases already). trec_eval's RBP
    persistence is 0.9 unless given.

    Parameters
    ----------
    name : str

    Returns
    -------
    list of str
        One name per cutoff (``ndcg_cut.5,10``), else ``[name]``.

    Examples
    --------
    >>> from_trec_eval("ndcg_cut.5,10"), from_trec_eval("rbp"), from_trec_eval("map")
    (['nDCG@5', 'nDCG@10'], ['RBP(p=0.9)'], ['map'])
    """
    if name.strip() in ("set_relative_P", "SetRelP"):  # relevant retrieved / min(retrieved, R)
        return ["P(relative=True)"]
    match = _TREC_EVAL_NAME.match(name.strip())
    if match:
        base = _TREC_EVAL_BASE[match.group(1)]
        return [f"{base}@{k}" for k in match.group(2).split(",") if k]
    match = _TREC_EVAL_GAINS.match(name.strip())
    if match:  # ndcg.1=3,2=9: nDCG with these gains (trec_eval's measure parameters)
        return [f"nDCG(gains={{{match.group(1).replace('=', ': ')}}})"]
    match = re.fullmatch(r"set_F[._](\d*\.?\d+)", name.strip())
    if match:  # set_F.b: recall weighted by b, ir_measures' SetF(beta=b)
        return [f"SetF(beta={match.group(1)})"]
    match = _TREC_EVAL_RBP.match(name.strip())
    if match:
        base = "RBP" if match.group(1) == "rbp" else "RBPResid"
        return [f"{base}(p={match.group(2) or TREC_EVAL_PERSISTENCE})"]
    return [name]
