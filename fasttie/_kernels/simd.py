"""Eight 64-bit lanes as one value: LLVM's ``<8 x i64>`` vector type in numba kernels.

numba has no vector type, and LLVM does not vectorize the bit-sliced counters of
:mod:`.bitsliced` from plain loops (the lanes are rows of small arrays that numba keeps in
memory). These intrinsics emit the vector IR directly, so the values stay in registers: on
AVX-512 each operation is one instruction on a zmm register (``vpxorq``, ``vpopcntq``,
``vpsllvq``, ``vpternlogq``). Elsewhere LLVM splits the same IR into the vectors the target
has: the results are the same everywhere, only the speed differs.

Every function here takes and returns :data:`lanes` values, except :func:`load`, :func:`store`,
:func:`store_at`, :func:`splat`, :func:`splat_pairs`, :func:`consecutive`, and :func:`top_bits`,
:func:`nonzero_bits` and :func:`equal_bits` (bit masks); none checks bounds (the caller's loops
keep every index inside its array).
Where numba compiles for AVX-512 (:func:`.cpu.target_has_avx512`), :func:`one_hot`,
:func:`sum3` and :func:`majority` call the AVX-512 instructions by name; elsewhere they are
plain logic with the same results.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

from .cpu import target_has_avx512

N_LANES = 8
_I64 = ir.IntType(64)
_VECTOR = ir.VectorType(_I64, N_LANES)


class Lanes(types.Type):
    """The numba type of eight uint64 lanes (an LLVM ``<8 x i64>``)."""

    def __init__(self):
        super().__init__(name="Lanes8xU64")


lanes = Lanes()


@register_model(Lanes)
class _LanesModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VECTOR)


def _constant(values):
    return ir.Constant(_VECTOR, [ir.Constant(_I64, v) for v in values])


def _row_pointer(context, builder, array_type, array, row):
    """Pointer to ``array[row, 0]`` of a 2-D C-contiguous array, as ``<8 x i64>*``."""
    ary = context.make_array(array_type)(context, builder, array)
    zero = ir.Constant(row.type, 0)
    pointer = cgutils.get_item_pointer(context, builder, array_type, ary, [row, zero], wraparound=False,
                                       boundscheck=False)
    return builder.bitcast(pointer, _VECTOR.as_pointer())


def _is_rows(array, row):
    return (isinstance(array, types.Array) and array.ndim == 2 and array.dtype == types.uint64 and array.layout == "C"
            and isinstance(row, types.Integer))


@intrinsic
def load(typingctx, array, row):
    """The eight consecutive words from ``array[row, 0]`` of a 2-D C-contiguous uint64 array:
    the codes of rows row..row+7 of a (n, 1) array, or row ``row`` of a (m, 8) array."""
    if not _is_rows(array, row):
        return None

    def codegen(context, builder, signature, args):
        value = builder.load(_row_pointer(context, builder, signature.args[0], args[0], args[1]))
        value.align = 8
        return value

    return lanes(array, row), codegen


@intrinsic
def store(typingctx, array, row, value):
    """``array[row, 0:8] = value`` of a 2-D C-contiguous uint64 array of eight columns."""
    if not (_is_rows(array, row) and value == lanes):
        return None

    def codegen(context, builder, signature, args):
        store = builder.store(args[2], _row_pointer(context, builder, signature.args[0], args[0], args[1]))
        store.align = 8
        return context.get_dummy_value()

    return types.void(array, row, value), codegen


@intrinsic
def splat(typingctx, x):
    """Eight copies of a uint64."""
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return _splat(builder, args[0])

    return lanes(x), codegen


def _binary(operation, doc):
    @intrinsic
    def function(typingctx, a, b):
        if not (a == lanes and b == lanes):
            return None

        def codegen(context, builder, signature, args):
            return getattr(builder, operation)(args[0], args[1])

        return lanes(a, b), codegen

    function.__doc__ = doc
    return function


xor = _binary("xor", "Lane-wise a ^ b.")
and_ = _binary("and_", "Lane-wise a & b.")
or_ = _binary("or_", "Lane-wise a | b.")
add = _binary("add", "Lane-wise a + b (modulo 2**64).")
sub = _binary("sub", "Lane-wise a - b (modulo 2**64).")
shift_left = _binary("shl", "Lane-wise a << b (b below 64).")
shift_right = _binary("lshr", "Lane-wise a >> b (b below 64).")


@intrinsic
def splat_pairs(typingctx, a, b):
    """Four copies of the pair (a, b): lanes a, b, a, b, ... (the words of a two-word code)."""
    if not (a == types.uint64 and b == types.uint64):
        return None

    def codegen(context, builder, signature, args):
        mask = ir.Constant(ir.VectorType(ir.IntType(32), N_LANES), [0, N_LANES] * (N_LANES // 2))
        return builder.shuffle_vector(_splat(builder, args[0]), _splat(builder, args[1]), mask)

    return lanes(a, b), codegen


@intrinsic
def swap_pairs(typingctx, a):
    """Lanes 0 and 1, 2 and 3, ... exchanged (``vpshufd`` on AVX-512): with :func:`add`, the sum of
    each pair in both its lanes."""
    if a != lanes:
        return None

    def codegen(context, builder, signature, args):
        mask = ir.Constant(ir.VectorType(ir.IntType(32), N_LANES), [1, 0, 3, 2, 5, 4, 7, 6])
        return builder.shuffle_vector(args[0], ir.Constant(_VECTOR, ir.Undefined), mask)

    return lanes(a), codegen


@intrinsic
def popcount(typingctx, a):
    """Lane-wise number of set bits (``vpopcntq`` on AVX-512 VPOPCNTDQ)."""
    if a != lanes:
        return None

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VECTOR, [_VECTOR]),
                                                  "llvm.ctpop.v8i64")
        return builder.call(function, [args[0]])

    return lanes(a), codegen


def _lane_test(test, doc):
    """An intrinsic: bit i of a uint64 set where ``test(builder, lanes)`` (an <8 x i1>) holds for
    lane i."""

    @intrinsic
    def function(typingctx, a):
        if a != lanes:
            return None

        def codegen(context, builder, signature, args):
            return _as_bits(builder, test(builder, args[0]))

        return types.uint64(a), codegen

    function.__doc__ = doc
    return function


top_bits = _lane_test(
    lambda builder, a: builder.icmp_signed("<", a, _constant([0] * N_LANES)),
    """The top bit of each lane, bit i of a uint64 for lane i (``vpmovq2m`` on AVX-512): with
    :func:`sub`, the lanes where an unsigned x < y, as the top bit of x - y (x, y < 2**63).""")
nonzero_bits = _lane_test(
    lambda builder, a: builder.icmp_unsigned("!=", a, _constant([0] * N_LANES)),
    "Bit i of a uint64 set where lane i is not zero (``vptestmq`` on AVX-512).")


@intrinsic
def nonzero_mask(typingctx, a):
    """Lane-wise all ones where a lane is not zero, else 0: with :func:`and_`, a value kept where
    a lane is set (on AVX-512 a ``vptestmq`` and a masked operation)."""
    if a != lanes:
        return None

    def codegen(context, builder, signature, args):
        return builder.sext(builder.icmp_unsigned("!=", args[0], _constant([0] * N_LANES)), _VECTOR)

    return lanes(a), codegen


@intrinsic
def equal_bits(typingctx, array, start, value):
    """Bit i of a uint64 set where ``array[start + i] == value``, for i < 16: sixteen int32 compared
    at once (``vpcmpeqd`` on AVX-512); array[start:start + 16] must lie inside the array."""
    if not (isinstance(array, types.Array) and array.ndim == 1 and array.dtype == types.int32
            and array.layout == "C" and isinstance(start, types.Integer) and value == types.int32):
        return None
    words = ir.VectorType(ir.IntType(32), 16)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, signature.args[0], ary, [args[1]], wraparound=False,
                                           boundscheck=False)
        loaded = builder.load(builder.bitcast(pointer, words.as_pointer()))
        loaded.align = 4
        first = builder.insert_element(ir.Constant(words, ir.Undefined), args[2], ir.Constant(ir.IntType(32), 0))
        every = builder.shuffle_vector(first, ir.Constant(words, ir.Undefined),
                                       ir.Constant(ir.VectorType(ir.IntType(32), 16), [0] * 16))
        return _as_bits(builder, builder.icmp_signed("==", loaded, every))

    return types.uint64(array, start, value), codegen


@intrinsic
def consecutive(typingctx, x):
    """The eight numbers x, x + 1, ..., x + 7."""
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.add(_splat(builder, args[0]), _constant(range(N_LANES)))

    return lanes(x), codegen


@intrinsic
def compress(typingctx, a, bits):
    """The lanes of ``a`` whose bit is set in ``bits`` (a uint64 of eight bits), moved to the first
    lanes in their order, the others zero (``vpcompressq`` on AVX-512)."""
    if not (a == lanes and bits == types.uint64):
        return None

    def codegen(context, builder, signature, args):
        selected = builder.bitcast(builder.trunc(args[1], ir.IntType(N_LANES)), ir.VectorType(ir.IntType(1), N_LANES))
        zero = _constant([0] * N_LANES)
        if target_has_avx512():
            function = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(_VECTOR, [_VECTOR, _VECTOR, selected.type]),
                "llvm.x86.avx512.mask.compress.v8i64")
            return builder.call(function, [args[0], zero, selected])
        result, place = zero, ir.Constant(ir.IntType(32), 0)
        for lane in range(N_LANES):  # lane by lane: each selected one inserted at the next place
            keep = builder.extract_element(selected, ir.Constant(ir.IntType(32), lane))
            moved = builder.insert_element(result, builder.extract_element(args[0], ir.Constant(ir.IntType(32), lane)),
                                           place)
            result = builder.select(keep, moved, result)
            place = builder.add(place, builder.zext(keep, ir.IntType(32)))
        return result

    return lanes(a, bits), codegen


@intrinsic
def store_at(typingctx, array, row, column, value):
    """``array[row, column:column + 8] = value`` of a 2-D C-contiguous uint64 array (no alignment
    asked: ``column`` is any)."""
    if not (_is_rows(array, row) and isinstance(column, types.Integer) and value == lanes):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, signature.args[0], ary, [args[1], args[2]],
                                           wraparound=False, boundscheck=False)
        store = builder.store(args[3], builder.bitcast(pointer, _VECTOR.as_pointer()))
        store.align = 8
        return context.get_dummy_value()

    return types.void(array, row, column, value), codegen


@intrinsic
def full_width(typingctx):
    """Let LLVM vectorize the loops of the calling kernel with whole 512-bit registers on AVX-512
    (:func:`.cpu.target_has_avx512`): LLVM's tuning for Intel server CPUs prefers 256-bit
    vectors. Nothing elsewhere."""

    def codegen(context, builder, signature, args):
        if target_has_avx512():  # a string attribute, which llvmlite's attribute set does not list
            set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()

    return types.void(), codegen


def _as_bits(builder, flags):
    """A vector of n i1 flags as the low n bits of an i64 (n <= 64)."""
    return builder.zext(builder.bitcast(flags, ir.IntType(flags.type.count)), _I64)


def _splat(builder, x):
    first = builder.insert_element(ir.Constant(_VECTOR, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    mask = ir.Constant(ir.VectorType(ir.IntType(32), N_LANES), [0] * N_LANES)
    return builder.shuffle_vector(first, ir.Constant(_VECTOR, ir.Undefined), mask)


def _x86(builder, name, arguments):
    """A call of the AVX-512 intrinsic ``llvm.x86.avx512.<name>`` on <8 x i64> arguments (and an
    i32 immediate where given)."""
    types_ = [a.type for a in arguments]
    function = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VECTOR, types_),
                                              f"llvm.x86.avx512.{name}")
    return builder.call(function, arguments)


@intrinsic
def one_hot(typingctx, a):
    """Lane-wise ``1 << a`` where ``a < 64``, else 0 (``vpsllvq``, whose shifts of 64 and more
    give 0)."""
    if a != lanes:
        return None

    def codegen(context, builder, signature, args):
        if target_has_avx512():  # vpsllvq by name: no compare and select for a >= 64
            return _x86(builder, "psllv.q.512", [_constant([1] * N_LANES), args[0]])
        inside = builder.icmp_unsigned("<", args[0], _constant([64] * N_LANES))
        bit = builder.shl(_constant([1] * N_LANES), builder.and_(args[0], _constant([63] * N_LANES)))
        return builder.select(inside, bit, _constant([0] * N_LANES))

    return lanes(a), codegen


def _ternary(immediate, generic, doc):
    @intrinsic
    def function(typingctx, a, b, c):
        if not (a == lanes and b == lanes and c == lanes):
            return None

        def codegen(context, builder, signature, args):
            if target_has_avx512():  # one vpternlogq (LLVM does not always merge the logic into one)
                return _x86(builder, "pternlog.q.512", [*args, ir.Constant(ir.IntType(32), immediate)])
            return generic(builder, *args)

        return lanes(a, b, c), codegen

    function.__doc__ = doc
    return function


sum3 = _ternary(0x96, lambda builder, a, b, c: builder.xor(builder.xor(a, b), c),
                "Lane-wise a ^ b ^ c: the sum bits of a carry-save adder (vpternlogq 0x96).")
majority = _ternary(
    0xE8, lambda builder, a, b, c: builder.or_(builder.and_(a, b), builder.and_(c, builder.or_(a, b))),
    "Lane-wise majority of a, b, c: the carry bits of a carry-save adder (vpternlogq 0xE8).")
