"""The checks every front door shares: numeric arrays, option values, the empty-query policy,
ERR's grades.

Kernels never validate; facades call these first. Each raises :class:`fasttie.InputError` /
:class:`fasttie.InputTypeError` with the argument's name, what it got and the fix.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._kernels.err import MAX_GRADE
from .errors import InputError, InputTypeError

__all__ = ["check_empty_policy", "check_err_grades", "mean_of_kept", "numeric_array"]


def numeric_array(values: npt.ArrayLike, name: str, expected: str = "numeric") -> np.ndarray:
    """``np.asarray(values)``, which must hold numbers or bools (not objects, strings, complex).

    Parameters
    ----------
    values : array_like
    name : str
        The argument's name, for the message.
    expected : str, default "numeric"
        What the argument must be, for the message ("a numeric or bool 0/1 matrix", ...).

    Returns
    -------
    ndarray

    Raises
    ------
    InputTypeError
        Any other dtype.
    """
    array = np.asarray(values)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise InputTypeError(f"{name} must be {expected}, got dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.complexfloating):
        raise InputTypeError(f"{name} must be real, got dtype {array.dtype}")
    return array


def first_not_finite(values: np.ndarray) -> int | None:
    """Index of the first NaN or infinite value of a float array, None when every value is finite.

    One summing pass; the exact check runs only when the sum is not finite, which finite values
    too large to add up also give (no overflow warning: that is not the caller's error).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        total = values.sum()
    if np.isfinite(total):
        return None
    bad = np.flatnonzero(~np.isfinite(values))
    return int(bad[0]) if bad.size else None


def mean_of_kept(values: npt.ArrayLike) -> float:
    """Mean over the values that are not NaN (queries left out by the empty policy); NaN when
    none is left."""
    values = np.asarray(values, dtype=np.float64)
    kept = values[~np.isnan(values)]
    return float(np.mean(kept)) if len(kept) else float("nan")


def check_empty_policy(empty: str, n_empty: int, n_queries: int, what: str = "relevant item") -> None:
    """Raise for ``empty="error"`` when a query was empty.

    Raises
    ------
    InputError
        Naming how many queries were empty and the other choices.
    """
    if empty == "error" and n_empty:
        raise InputError(
            f"{n_empty} of {n_queries} queries have no {what}; choose empty='zero', 'skip' or 'one'"
            + (" (or 'skip_missed' for evaluate)" if what == "relevant item" else "")
        )


def check_err_grades(top_grade: float, where: str, argument: str) -> None:
    """ERR's stop probability (2**g - 1) / 16 (gdeval's) holds for grades 0..4 only.

    Parameters
    ----------
    top_grade : float
        The largest grade ERR would read.
    where : str
        Where it sits, for the message ("y_true has 5 at row 12").
    argument : str
        The argument that holds it.

    Raises
    ------
    InputError
        When ``top_grade`` passes 4, naming ``where`` and the fix.
    """
    if top_grade > MAX_GRADE:
        raise InputError(f"ERR takes grades 0..{MAX_GRADE:g} (gdeval's stop probability (2**g - 1) / 16; gdeval "
                         f"refuses larger judgments), but {where}", argument=argument,
                         fix=f"map the grades into 0..{MAX_GRADE:g} first")
