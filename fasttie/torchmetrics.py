"""Tie-aware metrics shaped as ``torchmetrics.Metric``: evaluation inside a training loop.

Two kinds, both synced exactly across processes by torchmetrics' own machinery:

* :class:`HammingRetrieval` ranks a database of binary codes, streamed chunk by chunk through
  ``update(db_codes, db_labels)``, for fixed queries. Its state is the integer table of
  :func:`fasttie.tie_stats` (summed, so its size never grows with the database) and ``compute()``
  gives what :func:`fasttie.evaluate` gives on the whole database.
* :class:`RetrievalMAP`, :class:`RetrievalNormalizedDCG`, :class:`RetrievalPrecision`,
  :class:`RetrievalRecall`, :class:`RetrievalMRR`, :class:`RetrievalRPrecision` and
  :class:`RetrievalHitRate` take torchmetrics' ``(preds, target, indexes)`` and constructor
  arguments, keep the rows (as torchmetrics does) and score them once with
  :func:`fasttie.rank_evaluate`. Equal scores are averaged over every order (``ties=``).

Where no score ties and every score is positive the values are torchmetrics' (up to its float32
arithmetic). Otherwise they differ on purpose: torchmetrics ranks ties in ``torch.topk`` /
``argsort`` order (nDCG excepted, which averages ties as fasttie does), and its AP, precision,
recall and MRR count an item scored ``<= 0`` as not relevant (``torch.where(preds > 0, target,
0)`` in ``torchmetrics.functional.retrieval``); fasttie ranks every item by its score, whatever
its sign. See docs/training.md.

Empty input, one rule for every class: an update without rows (a 0-row database chunk, or a
process that never calls ``update()``) adds nothing, so a process left without data under DDP
changes no value; ``compute()`` when no process added anything raises a ``ValueError``, as
torchmetrics' own retrieval metrics do (with no row there is no value to report, and 0.0 would
read as a measured one).

Needs torch and torchmetrics (``pip install torchmetrics``); ``import fasttie`` does not load them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat
from torchmetrics.utilities.distributed import gather_all_tensors

from .options import HAMMING_TIES
from .codes import PackedCodes
from .conventions import HAMMING as _HAMMING_DOOR, takes_convention
from .errors import InputError, InputTypeError
from .hamming.engine import hashing_metrics
from .hamming.options import HammingOptions
from .hamming.stats import TieStats, finalized, padded, tie_stats
from .lists.facade import rank_evaluate
from .relevance import make_relevance

__all__ = [
    "HammingRetrieval",
    "RetrievalHitRate",
    "RetrievalMAP",
    "RetrievalMRR",
    "RetrievalNormalizedDCG",
    "RetrievalPrecision",
    "RetrievalRPrecision",
    "RetrievalRecall",
]

_EMPTY_ACTIONS = ("neg", "pos", "skip", "error")
# the ranked-list states' dtypes, the same on every process (a placeholder must match them)
_STATE_DTYPES = {"indexes": torch.int64, "preds": torch.float64, "target": torch.float64}
_AGGREGATIONS = ("mean", "median", "min", "max")


def _numpy(x, name):
    """A host numpy copy of a tensor or array_like (codes and labels for fasttie's kernels)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if x is None:
        raise InputTypeError(f"{{{name}}} is missing", argument=name)
    return np.asarray(x)


class HammingRetrieval(Metric):
    """Tie-aware Hamming retrieval metrics of fixed queries over a database given in chunks.

    Parameters
    ----------
    queries : tensor or array_like, shape (n_queries, n_bits), or PackedCodes
        Query codes, as in :func:`fasttie.evaluate` (±1, 0/1 or bool). The same on every process.
    query_labels : tensor or array_like, optional
        1-D integer class ids (grades 0/1) or a 2-D multi-hot 0/1 matrix (grade = shared labels).
        Leave out to give listed relevance per chunk (``update(..., relevance=...)``), then
        ``max_grade`` is required.
    metrics : str or sequence of str, default "AP"
        As in :func:`fasttie.evaluate`. ``compute()`` returns one tensor when ``metrics`` is a
        string naming one metric, and a dict of canonical name -> tensor otherwise (what
        Lightning's ``log_dict`` takes).
    convention : str, optional
        "deephash" or "hashnet": one word for ``ties``, ``gain``, ``ap_denominator`` and ``empty``
        as :func:`fasttie.evaluate` takes it; options passed explicitly win.
    ties : {"average", "optimistic", "pessimistic"}, default "average"
        "stable" needs each item's global database index, which summed counts do not keep.
    ap_denominator, gain, empty
        As in :func:`fasttie.evaluate`.
    max_grade : int, optional
        Listed relevance only: the largest grade any chunk may list; it fixes the state's
        shape (n_queries, n_bits + 1, max_grade + 1), so that the sum across processes is a
        plain tensor sum.
    **kwargs
        torchmetrics' ``Metric`` options (``process_group``, ``dist_sync_on_step``, ...).

    Notes
    -----
    The state is ``counts``: int64, (n_queries, n_bits + 1, n_grades), items of each grade at
    each distance, summed over updates and, when ``torch.distributed`` is initialised, over
    processes (``dist_reduce_fx="sum"``). Integers add exactly in any order, so the result is
    bitwise :func:`fasttie.evaluate` on the concatenated database, whatever the chunking and
    the number of processes; its size does not depend on the database.

    A chunk of 0 rows adds nothing, and so does a process that never calls ``update()``;
    ``compute()`` raises a ``ValueError`` when no process added a database item.

    Examples
    --------
    >>> import numpy as np
    >>> from fasttie.torchmetrics import HammingRetrieval
    >>> q = np.array([[1, 1, 1, 1]]); db = np.array([[1, 1, 1, -1], [1, -1, 1, 1], [-1, -1, 1, 1]])
    >>> m = HammingRetrieval(q, [0], metrics="AP")
    >>> m.update(db[:2], [0, 1]); m.update(db[2:], [0])
    >>> # class 0 is relevant; the first two items tie at distance 1: AP 5/6 or 7/12, 17/24 on average
    >>> round(float(m.compute()), 6)
    0.708333
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    @takes_convention(_HAMMING_DOOR)
    def __init__(self, queries: Any, query_labels: Any = None, *, metrics: str | Sequence[str] = "AP",
                 ties: str = "average", ap_denominator: str = "retrieved", gain: str = "exp2", empty: str = "zero",
                 max_grade: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if ties == "stable":
            raise InputError("HammingRetrieval sums counts, which do not keep database order: ties='stable' is "
                             "not available; use 'average', 'optimistic' or 'pessimistic', or fasttie.evaluate",
                             argument="ties")
        self.queries = _numpy(queries, "queries") if not hasattr(queries, "words") else queries
        self.query_labels = None if query_labels is None else _numpy(query_labels, "query_labels")
        self.metrics = metrics
        self.options = HammingOptions.resolve(hashing_metrics(metrics), ties=ties, ap_denominator=ap_denominator,
                                              gain=gain, empty=empty)
        if self.query_labels is None:
            if max_grade is None or not isinstance(max_grade, (int, np.integer)) or max_grade < 1:
                raise InputError("without {query_labels} each update lists relevance, and {max_grade} (an "
                                 f"int >= 1, the largest listed grade) must fix the state's size; got {max_grade!r}",
                                 argument=("query_labels", "max_grade"))
            n_grades = int(max_grade) + 1
        else:
            if max_grade is not None:
                raise InputError("{max_grade} is for listed relevance; labels fix the grades themselves",
                                 argument="max_grade")
            n_grades = _label_grades(self.query_labels)
        # a dry run against a one-item database (the first query): checks codes, labels and
        # metric names at construction rather than at the first compute; gives n_queries, n_bits
        packed = hasattr(self.queries, "words")
        first = PackedCodes(np.ascontiguousarray(self.queries.words[:1]), self.queries.n_bits) if packed \
            else self.queries[:1]
        if self.query_labels is not None:
            probe = tie_stats(self.queries, first, self.query_labels, self.query_labels[:1])
        else:
            n_queries = len(self.queries.words) if packed else len(self.queries)
            probe = tie_stats(self.queries, first, relevance=(np.zeros(n_queries + 1, np.int64), np.zeros(0, np.int64)))
        finalized(probe, metrics, replace(self.options, empty="zero"))
        self._n_bits, self._relevance = probe.n_bits, probe.relevance
        self.add_state("counts", default=torch.zeros((probe.n_queries, probe.n_bits + 1, n_grades),
                                                     dtype=torch.int64), dist_reduce_fx="sum")

    def update(self, db_codes: Any, db_labels: Any = None, *, relevance: Any = None) -> None:
        """Add a chunk of the database.

        Parameters
        ----------
        db_codes : tensor or array_like, shape (n_chunk, n_bits), or PackedCodes
            ``n_chunk`` may be 0 (a process whose shard is empty): the chunk adds nothing.
        db_labels : tensor or array_like, optional
            The chunk's labels, of the kind of ``query_labels``.
        relevance : tuple or scipy.sparse matrix, optional
            Listed relevance of the chunk (its own row numbers), when no labels were given.
        """
        codes = db_codes if hasattr(db_codes, "words") else _numpy(db_codes, "db_codes")
        if self.query_labels is None:
            if db_labels is not None:
                raise InputError("this metric was built without {query_labels}: give {relevance}= per chunk, "
                                 "not {db_labels}", argument=("db_labels", "relevance"))
        elif relevance is not None:
            raise InputError("this metric was built with {query_labels}: give {db_labels}, not {relevance}=",
                             argument=("db_labels", "relevance"))
        else:
            db_labels = _numpy(db_labels, "db_labels")
        if (codes.n if hasattr(codes, "words") else len(codes)) == 0:
            # a process whose shard is empty adds nothing (as in fasttie.torch.evaluate_distributed),
            # instead of failing while the other processes wait for it in compute()'s sync
            self._check_empty_chunk(db_labels, relevance)
            return
        if self.query_labels is None:
            stats = tie_stats(self.queries, codes, relevance=relevance)
        else:
            stats = tie_stats(self.queries, codes, self.query_labels, db_labels)
        n_grades = self.counts.shape[2]
        if stats.counts.shape[2] > n_grades:
            raise InputError(f"the chunk lists grade {stats.counts.shape[2] - 1} but {{max_grade}} is "
                             f"{n_grades - 1}; build the metric with a larger max_grade", argument="max_grade")
        self.counts += torch.from_numpy(padded(stats.counts, n_grades)).to(self.counts.device)

    def _check_empty_chunk(self, db_labels, relevance):
        """A 0-row chunk's labels must have 0 rows, and its listed relevance list nothing."""
        if db_labels is not None and len(db_labels):
            raise InputError(f"{{db_labels}} has {len(db_labels)} rows but {{db_codes}} has 0; give one label "
                             "row per code", argument=("db_labels", "db_codes"))
        if self.query_labels is None:
            make_relevance(None, None, relevance, self.counts.shape[0], 0)

    def compute(self) -> torch.Tensor | dict[str, torch.Tensor]:
        """The metrics of every chunk added (on every process): a tensor or a dict of tensors.

        Raises
        ------
        ValueError
            No process added a database item: there is nothing to score.
        """
        if not bool(self.counts.any()):
            # every item adds 1 per query, so all-zero counts mean an empty database
            raise InputError("nothing to score: no process added a database item; call update() with database "
                             "codes before compute()", argument="db_codes")
        stats = TieStats(self.counts.detach().cpu().numpy().astype(np.int64), self._n_bits, self._relevance)
        mean = finalized(stats, self.metrics, self.options).mean
        values = {k: torch.tensor(v, dtype=torch.float64, device=self.counts.device) for k, v in mean.items()}
        if isinstance(self.metrics, str) and len(values) == 1:
            return next(iter(values.values()))
        return values


def _label_grades(query_labels) -> int:
    """Grade count of labels: 2 for class ids, 1 + the most labels of a query for multi-hot
    (a grade is the number of labels shared with the query, so it never exceeds the query's)."""
    if query_labels.ndim == 2:
        return max(2, int((query_labels != 0).sum(axis=1).max(initial=0)) + 1)
    return 2


class _RankedRetrieval(Metric):
    """(preds, target, indexes) rows kept as list states and scored once by rank_evaluate.

    Subclasses set ``_graded`` (targets beyond 0/1 allowed) and ``_names(top_k)``.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    _graded = False
    _options: dict = {}

    def __init__(self, empty_target_action="neg", ignore_index=None, top_k=None, aggregation="mean", *,
                 ties="average", **kwargs):
        super().__init__(**kwargs)
        if empty_target_action not in _EMPTY_ACTIONS:
            raise InputError(f"{{empty_target_action}} must be one of {_EMPTY_ACTIONS}, got {empty_target_action!r}",
                             argument="empty_target_action")
        if ignore_index is not None and not isinstance(ignore_index, int):
            raise InputTypeError(f"{{ignore_index}} must be an int or None, got {ignore_index!r}",
                                 argument="ignore_index")
        if top_k is not None and not (isinstance(top_k, int) and not isinstance(top_k, bool) and top_k > 0):
            raise InputError(f"{{top_k}} must be a positive int or None, got {top_k!r}", argument="top_k")
        if not (aggregation in _AGGREGATIONS or callable(aggregation)):
            raise InputError(f"{{aggregation}} must be one of {_AGGREGATIONS} or a callable, got {aggregation!r}",
                             argument="aggregation")
        if ties not in HAMMING_TIES:
            raise InputError(f"{{ties}} must be one of {HAMMING_TIES}, got {ties!r}", argument="ties")
        self.empty_target_action = empty_target_action
        self.ignore_index = ignore_index
        self.top_k = top_k
        self.aggregation = aggregation
        self.ties = ties
        self.add_state("indexes", default=[], dist_reduce_fx="cat")
        self.add_state("preds", default=[], dist_reduce_fx="cat")
        self.add_state("target", default=[], dist_reduce_fx="cat")

    def update(self, preds, target, indexes) -> None:
        """Add rows: scores, relevance and query ids of the same shape (flattened).

        Parameters
        ----------
        preds : tensor of float
            Scores, any sign; higher ranks first. Kept as float64, which holds every float16,
            bfloat16, float32 and float64 value exactly: ties in the given dtype stay ties and
            distinct scores stay distinct. An update with no rows adds nothing.
        target : tensor of bool, int or float
            0/1 relevance (graded, >= 0, for nDCG). Rows equal to ``ignore_index`` are dropped.
        indexes : tensor of int
            Query id of each row.
        """
        for name, x in (("preds", preds), ("target", target), ("indexes", indexes)):
            if not isinstance(x, torch.Tensor):
                raise InputTypeError(f"{{{name}}} must be a torch tensor, got {type(x).__name__}", argument=name)
        if not (preds.shape == target.shape == indexes.shape):
            raise InputError(f"{{preds}}, {{target}} and {{indexes}} must have one shape, got {tuple(preds.shape)}, "
                             f"{tuple(target.shape)} and {tuple(indexes.shape)}",
                             argument=("preds", "target", "indexes"))
        if not preds.is_floating_point():
            raise InputTypeError(f"{{preds}} must be floating point scores, got {preds.dtype}", argument="preds")
        if indexes.is_floating_point() or indexes.is_complex() or indexes.dtype == torch.bool:
            raise InputTypeError(f"{{indexes}} must be integer query ids, got {indexes.dtype}", argument="indexes")
        preds, target, indexes = preds.flatten(), target.flatten(), indexes.flatten().long()
        if self.ignore_index is not None:
            keep = target != self.ignore_index
            preds, target, indexes = preds[keep], target[keep], indexes[keep]
        if target.dtype == torch.bool:
            target = target.long()
        if target.is_floating_point() and not self._graded and not bool(((target == 0) | (target == 1)).all()):
            raise InputError("{target} must be 0/1 (binary relevance) for this metric", argument="target")
        if not self._graded and target.numel() and (target.min() < 0 or target.max() > 1):
            raise InputError("{target} must be 0/1 (binary relevance) for this metric; graded relevance is for "
                             "RetrievalNormalizedDCG", argument="target")
        if target.numel() and target.min() < 0:
            raise InputError("{target} must be >= 0 (graded relevance)", argument="target")
        self.preds.append(preds.detach().double())
        self.target.append(target.detach().double())
        self.indexes.append(indexes.detach())

    def _sync_dist(self, dist_sync_fn=gather_all_tensors, process_group=None) -> None:
        """torchmetrics' gather, each state of a process that added no rows sent as 0 rows of the
        state's own dtype: torchmetrics would send a float32 placeholder for every state, which gloo
        cannot match with the other processes' float64 and int64 rows (it aborts the process)."""
        for name, dtype in _STATE_DTYPES.items():
            if len(getattr(self, name)) == 0:
                setattr(self, name, [torch.zeros(0, dtype=dtype, device=self.device)])
        super()._sync_dist(dist_sync_fn, process_group)

    def compute(self) -> torch.Tensor:
        """The aggregated metric (float64) over the queries of every row added, on every process.

        Raises
        ------
        ValueError
            No process added a row (or ``ignore_index`` dropped them all): there is nothing to
            score. Queries that are all without a positive target are not this case: they follow
            ``empty_target_action``.
        """
        preds = dim_zero_cat(self.preds) if len(self.preds) else torch.zeros(0, dtype=torch.float64)
        device = preds.device
        if preds.numel() == 0:
            # torchmetrics' retrieval metrics raise here too ("No samples to concatenate"); a 0.0
            # would read as a measured value
            raise InputError("nothing to score: no process added a (preds, target, indexes) row, or "
                             "{ignore_index} dropped them all; call update() with rows before compute()",
                             argument="ignore_index")
        y_pred = preds.detach().cpu().numpy()
        y_true = dim_zero_cat(self.target).cpu().numpy()
        qid = dim_zero_cat(self.indexes).cpu().numpy()
        query_ids, sizes = np.unique(qid, return_counts=True)
        names = self._names(int(sizes.max()))
        # empty queries follow torchmetrics' rule (no positive target: 0, 1, left out or an error),
        # applied here because fasttie's empty="one" gives P@k and Success@k 0, not 1
        relevant = np.bincount(np.searchsorted(query_ids, qid), weights=y_true, minlength=len(query_ids))
        is_empty = relevant == 0
        if is_empty.any() and self.empty_target_action == "error":
            raise InputError(f"{int(is_empty.sum())} of {len(query_ids)} queries have no positive target; choose "
                             "empty_target_action='neg', 'pos' or 'skip'", argument="empty_target_action")
        result = rank_evaluate(y_true, y_pred, qid=qid, metrics=list(dict.fromkeys(names)), ties=self.ties,
                               empty="skip", **self._options)
        values = self._per_query(result.per_query, names, sizes)
        if self.empty_target_action == "skip":
            values = values[~is_empty]
        else:
            values = np.where(is_empty, 1.0 if self.empty_target_action == "pos" else 0.0, values)
        if len(values) == 0:
            return torch.tensor(0.0, dtype=torch.float64, device=device)
        values = torch.from_numpy(np.ascontiguousarray(values)).to(device)
        if callable(self.aggregation):  # called as torchmetrics calls it
            return self.aggregation(values, dim=None)
        if self.aggregation == "median":
            return values.median()  # torch's: the lower of the two middle values, as torchmetrics
        return getattr(values, self.aggregation)()

    def _names(self, longest):
        """fasttie metric names for this top_k (``longest``: the longest query's row count)."""
        raise NotImplementedError

    def _per_query(self, per_query, names, sizes):
        return per_query[names[0]]


class RetrievalMAP(_RankedRetrieval):
    """Tie-aware mean average precision of ``(preds, target, indexes)``, torchmetrics' arguments.

    Parameters
    ----------
    empty_target_action : {"neg", "pos", "skip", "error"}, default "neg"
        Queries without a positive target count 0, count 1, are left out (0.0 if all are) or raise.
    ignore_index : int, optional
        Rows whose target equals it are dropped.
    top_k : int, optional
        AP@k over the top k; its denominator is the relevant items in the top k, as torchmetrics
        (fasttie's ``ap_denominator="retrieved"``). None: the whole list.
    aggregation : {"mean", "median", "min", "max"} or callable, default "mean"
        Over the per-query values.
    ties : {"average", "optimistic", "pessimistic", "stable"}, default "average"
        Equal scores: exact average over their orders, best / worst order, or input order.
    **kwargs
        torchmetrics' ``Metric`` options.

    Notes
    -----
    torchmetrics' ``RetrievalMAP`` on tie-free positive scores. Under ties the exact mean over
    all orders of the tied rows; items scored <= 0 are ranked, not counted as irrelevant.

    Every class here: an update without rows adds nothing (under DDP, so does a process that
    never calls ``update()``), and ``compute()`` raises a ``ValueError`` when no process added a
    row, as torchmetrics' retrieval metrics do.
    """

    _options = {"ap_denominator": "retrieved"}

    def _names(self, longest):
        return ["AP" if self.top_k is None else f"AP@{self.top_k}"]


class RetrievalNormalizedDCG(_RankedRetrieval):
    """Tie-aware nDCG (linear gain, log2 discount) of ``(preds, target, indexes)``.

    Parameters are :class:`RetrievalMAP`'s; ``target`` may be graded (any value >= 0).

    Notes
    -----
    torchmetrics already averages tied scores here (scikit-learn's tie-averaged DCG), so the two
    agree under ties and for scores of any sign, up to torchmetrics' float32 arithmetic.
    """

    _graded = True
    _options = {"gain": "linear"}

    def _names(self, longest):
        return ["nDCG" if self.top_k is None else f"nDCG@{self.top_k}"]


class RetrievalPrecision(_RankedRetrieval):
    """Tie-aware precision of the top k of ``(preds, target, indexes)``.

    Parameters
    ----------
    adaptive_k : bool, default False
        With ``top_k`` larger than a query's list, divide by the list length instead of top_k.
    empty_target_action, ignore_index, top_k, aggregation, ties, **kwargs
        As in :class:`RetrievalMAP`; ``top_k=None`` is the whole list.

    Notes
    -----
    P@k divides by k even for lists shorter than k (torchmetrics and trec_eval), unless
    ``adaptive_k``.
    """

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None, top_k: int | None = None,
                 adaptive_k: bool = False, aggregation: str | Callable[..., Any] = "mean", **kwargs: Any) -> None:
        super().__init__(empty_target_action, ignore_index, top_k, aggregation, **kwargs)
        if not isinstance(adaptive_k, bool):
            raise InputTypeError(f"{{adaptive_k}} must be a bool, got {adaptive_k!r}", argument="adaptive_k")
        self.adaptive_k = adaptive_k

    def _names(self, longest):
        if self.top_k is None:
            return ["P"]
        # adaptive: lists shorter than k use the whole list ("P"); both come from one pass
        return [f"P@{self.top_k}", "P"] if self.adaptive_k else [f"P@{self.top_k}"]

    def _per_query(self, per_query, names, sizes):
        if len(names) == 1:
            return per_query[names[0]]
        return np.where(sizes < self.top_k, per_query["P"], per_query[names[0]])


class RetrievalRecall(_RankedRetrieval):
    """Tie-aware recall of the top k of ``(preds, target, indexes)``; :class:`RetrievalMAP`'s parameters."""

    def _names(self, longest):
        return ["R" if self.top_k is None else f"R@{self.top_k}"]


class RetrievalMRR(_RankedRetrieval):
    """Tie-aware mean reciprocal rank (of the first relevant item within the top k, else 0);
    :class:`RetrievalMAP`'s parameters."""

    def _names(self, longest):
        return ["RR" if self.top_k is None else f"RR@{self.top_k}"]


class RetrievalHitRate(_RankedRetrieval):
    """Tie-aware hit rate: the probability of a relevant item in the top k (fasttie's
    ``Success@k``); :class:`RetrievalMAP`'s parameters."""

    def _names(self, longest):
        return [f"Success@{self.top_k if self.top_k is not None else longest}"]


class RetrievalRPrecision(_RankedRetrieval):
    """Tie-aware R-precision (precision of the top R, R = relevant items of the query).

    Parameters
    ----------
    empty_target_action, ignore_index, aggregation, ties, **kwargs
        As in :class:`RetrievalMAP` (no ``top_k``).

    Notes
    -----
    torchmetrics' ``retrieval_r_precision`` does not zero items scored <= 0, so the two agree on
    every tie-free list.
    """

    def __init__(self, empty_target_action: str = "neg", ignore_index: int | None = None,
                 aggregation: str | Callable[..., Any] = "mean", **kwargs: Any) -> None:
        super().__init__(empty_target_action, ignore_index, None, aggregation, **kwargs)

    def _names(self, longest):
        return ["Rprec"]
