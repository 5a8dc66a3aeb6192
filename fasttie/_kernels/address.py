"""Kernels called through their address: a caller that does not link its callee's code.

numba links the code of every callee into each kernel that calls it, so a caller compiles only
after its callees, in the same process. A call through the callee's address (its compiled entry
point, in numba's own calling convention, as numba calls first-class functions) links nothing:
the caller compiles without its callee. A cold first call can then compile the caller while a
helper process compiles the callee (:mod:`fasttie.finalize.cold_start`), and a caller of two
variants of a callee is one kernel, the address picking the variant. numba's first-class
functions would do it too, but they take the address of a C wrapper that fasttie's kernels do not
have (``no_cfunc_wrapper``, :mod:`._jit`).

Caller and callee must agree on the argument types exactly: a mismatch would not be an error but
a crash. So each such callee declares its argument types once (:func:`declare`: a tuple of numba
types, every array C-contiguous), the intrinsic that calls it (:func:`caller_of`)
refuses, when the caller compiles, arguments of other types or non-contiguous arrays, and
:func:`address_of` compiles or loads the callee for exactly the declared types.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.errors import NumbaTypeError
from numba.extending import intrinsic

__all__ = ["address_of", "caller_of", "declare", "declared"]

_DECLARED = {}  # callee dispatcher -> its argument types


def _as_declared(given):
    """The declared type that an argument of numba type ``given`` is passed as: itself, but for
    arrays the flags that do not change how they are passed (alignment); None for a
    non-contiguous array, which cannot be."""
    if isinstance(given, types.Array):
        return types.Array(given.dtype, given.ndim, "C", readonly=not given.mutable) if given.layout == "C" else None
    return given


def declare(dispatcher, arg_types):
    """Declare the argument types of a kernel called through its address; returns the kernel.

    Parameters
    ----------
    dispatcher : numba dispatcher
        The callee (returns nothing: it writes its results into arrays).
    arg_types : tuple of numba types
        Its arguments, arrays C-contiguous (``types.float64[::1]``, read-only where the caller
        passes read-only arrays).
    """
    _DECLARED[dispatcher] = tuple(arg_types)
    return dispatcher


def declared(dispatcher) -> tuple:
    """The argument types :func:`declare` gave ``dispatcher``."""
    return _DECLARED[dispatcher]


def caller_of(arg_types, name):
    """An intrinsic ``call(address, args)`` that calls the kernel at ``address`` (from
    :func:`address_of`) with the tuple ``args`` and returns nothing.

    Parameters
    ----------
    arg_types : tuple of numba types
        The declared argument types of the callees it calls (:func:`declare`).
    name : str
        The callee's name, for the error a caller of other argument types gets.
    """
    arg_types = tuple(arg_types)

    def call(typingctx, address, args):
        if not isinstance(address, types.Integer) or not isinstance(args, types.BaseTuple):
            return None
        given = tuple(args.types)
        passed = tuple(_as_declared(t) for t in given)
        if passed != arg_types:  # refused here, where numba compiles the caller: never a crash
            raise NumbaTypeError(f"{name} through its address takes {arg_types}, got {given}")

        def codegen(context, builder, signature, llargs):
            address_value, values = llargs
            arguments = [builder.extract_value(values, i) for i in range(len(given))]
            pointer = builder.inttoptr(address_value,
                                       context.call_conv.get_function_type(types.none, arg_types).as_pointer())
            status, _ = context.call_conv.call_function(builder, pointer, types.none, arg_types, arguments)
            with cgutils.if_unlikely(builder, status.is_error):  # the callee raised: so does the caller
                context.call_conv.return_status_propagate(builder, status)
            return context.get_dummy_value()

        return types.none(address, args), codegen

    call.__name__ = f"call_{name}"
    return intrinsic(call)


def address_of(dispatcher) -> int:
    """The address of a declared kernel's entry point, compiled (or loaded from numba's cache) for
    its declared argument types. The dispatcher keeps the machine code alive.

    Parameters
    ----------
    dispatcher : numba dispatcher
        A kernel :func:`declare` has declared.

    Returns
    -------
    int
        What the intrinsic of :func:`caller_of` takes as ``address`` (pass it as ``np.uint64``).
    """
    arg_types = _DECLARED[dispatcher]
    # compiled by its argument types alone, as numba compiles a call: a signature with its return
    # type would file the kernel in numba's cache under another key than a caller's linked call
    dispatcher.compile(arg_types)
    result = dispatcher.overloads[arg_types]
    return result.library.get_pointer_to_function(result.fndesc.llvm_func_name)
