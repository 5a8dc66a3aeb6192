"""The errors fasttie raises for bad input.

One family, so that callers, and the command line, can tell a user's mistake from a bug:
:class:`InputError` (a ``ValueError``: shapes, ranges, names, files) and
:class:`InputTypeError` (also a ``TypeError``: the wrong kind of object or dtype). Every message
names the argument, what it got and the fix. Anything else that escapes fasttie is a bug.
"""

__all__ = ["InputError", "InputTypeError"]


class InputError(ValueError):
    """Bad input: a shape, range, name, option value or file that fasttie cannot use."""


class InputTypeError(InputError, TypeError):
    """Bad input of the wrong kind (type or dtype); also a ``TypeError``."""
