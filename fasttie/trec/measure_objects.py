"""ir_measures ``Measure`` objects read as metric names: :func:`metric_names_of`.

:func:`fasttie.trec.evaluate` takes ``ir_measures.nDCG@10``, ``ir_measures.AP(rel=2)`` or
``fasttie.ir_measures.RR(ties="trec")`` wherever it takes a name. A measure is read as the name
ir_measures gives it (``str(measure)``: ``nDCG@10``, ``AP(rel=2)``, ``RBP(p=0.5)``,
``SetP(relative=True)``), which fasttie's grammar reads with the same meaning, so a measure and
its name give one result under one key (``SetF(beta=b)`` included: the grammar reads it as
ir_measures and trec_eval's ``set_F.b`` mean it, (1 + b) P R / (b P + R)). ir_measures is not
imported here: a measure is known by its class (a subclass of ir_measures' ``Measure``).
"""

from __future__ import annotations

from ..errors import InputError

__all__ = ["is_measure", "metric_names_of"]


def is_measure(value) -> bool:
    """Whether ``value`` is an ir_measures ``Measure`` (fasttie's tie-aware ones included),
    told by its class without importing ir_measures."""
    return any(c.__name__ == "Measure" and c.__module__.split(".")[0] == "ir_measures" for c in type(value).__mro__)


def _name(measure, ties) -> str:
    params = dict(measure.params)
    asked = params.pop("ties", None)
    if asked is not None and asked != ties:
        raise InputError(f"metric {measure!r} asks for ties={asked!r} but evaluate() was called with ties={ties!r}; "
                         f"call evaluate(..., ties={asked!r}), or give the measure without ties")
    # the measure's own spelling without ties: the same class rebuilt from its other parameters
    return str(type(measure)(**params)) if asked is not None else str(measure)


def metric_names_of(metrics, ties: str):
    """``metrics`` with each ir_measures ``Measure`` replaced by its name; names kept as given.

    Parameters
    ----------
    metrics : str, Measure or iterable of str and Measure
    ties : str
        The tie mode of the call: a fasttie measure that names another one is refused.

    Returns
    -------
    str or list
        ``metrics`` itself when it holds no measure, else a list of names.

    Raises
    ------
    ValueError
        A fasttie measure whose ``ties`` differs from the call's.

    Examples
    --------
    >>> metric_names_of(["AP", "P@10"], "trec")
    ['AP', 'P@10']
    """
    if isinstance(metrics, str):
        return metrics
    if is_measure(metrics):
        return [_name(metrics, ties)]
    try:
        items = list(metrics)
    except TypeError:
        return metrics  # the name parser says what it expected
    return [_name(item, ties) if is_measure(item) else item for item in items]
