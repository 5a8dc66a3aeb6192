"""The errors fasttie raises for bad input.

One family, so that callers, and the command line, can tell a user's mistake from a bug:
:class:`InputError` (a ``ValueError``: shapes, ranges, names, files) and
:class:`InputTypeError` (also a ``TypeError``: the wrong kind of object or dtype). Every message
names the argument, what it got and the fix. Anything else that escapes fasttie is a bug.

An error can carry its parts as fields, so that another front end renders them in its own
words without reading the text: ``arguments`` (the names in the message, each written
``{name}`` there, which :meth:`InputError.render` replaces: the command line writes its option,
``--bits`` for ``n_bits``), ``fix`` (what to do) and ``kind`` (a stable tag, such as
``"unknown metric"``).
"""

from collections.abc import Iterable, Mapping
from typing import Self

__all__ = ["InputError", "InputTypeError"]


class InputError(ValueError):
    """Bad input: a shape, range, name, option value or file that fasttie cannot use.

    Parameters
    ----------
    message : str
        What is wrong; ``{name}`` in it (and in ``fix``) stands for argument ``name`` of
        ``argument``.
    argument : str or tuple of str, optional
        The argument(s) the message is about, as the Python API names them, the first the one
        it is mainly about (:attr:`arguments`; :attr:`argument` is the first).
    fix : str, optional
        What to do about it; the message ends with it.
    kind : str, optional
        A stable tag for callers that branch on the error (``"unknown metric"``).

    Examples
    --------
    >>> error = InputError("{n_threads} must be in [1, 1024], got 0", argument="n_threads")
    >>> str(error), error.render({"n_threads": "--threads"})
    ('n_threads must be in [1, 1024], got 0', '--threads must be in [1, 1024], got 0')
    """

    def __init__(self, message: str = "", *, argument: str | Iterable[str] | None = None, fix: str | None = None,
                 kind: str | None = None) -> None:
        self.template, self.fix, self.kind = message, fix, kind
        self.arguments = () if argument is None else (argument,) if isinstance(argument, str) else tuple(argument)
        super().__init__(self.render())

    @property
    def argument(self) -> str | None:
        """The argument the message is mainly about, or None."""
        return self.arguments[0] if self.arguments else None

    def render(self, names: Mapping[str, str] | None = None) -> str:
        """The message with each argument named as ``names`` maps it (a dict; default: its own name)."""
        text = self.template if self.fix is None else f"{self.template}; {self.fix}"
        for name in self.arguments:
            text = text.replace("{" + name + "}", (names or {}).get(name, name))
        return text

    def prefixed(self, prefix: str) -> Self:
        """The same error, its message behind ``prefix`` (the fields kept)."""
        return type(self)(prefix + self.template, argument=self.arguments or None, fix=self.fix, kind=self.kind)

    def __reduce__(self):  # pickled across processes (Dask workers) with its fields
        return _rebuild, (type(self), self.template, self.arguments or None, self.fix, self.kind)


def _rebuild(cls, template, argument, fix, kind):
    return cls(template, argument=argument, fix=fix, kind=kind)


class InputTypeError(InputError, TypeError):
    """Bad input of the wrong kind (type or dtype); also a ``TypeError``."""
