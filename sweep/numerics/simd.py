"""WIDTH float64 lanes as one value (f64xn), for loops that LLVM's vectoriser will not take.

lanes.py's pair loop writes to both tokens of a pair in every lane: in plain Numba that is
stores to two rows of one array, which the loop vectoriser either guards with a block of
run-time alias checks before every 64-lane loop (381 instructions at (32, 2), for 16 vector
iterations) or, once the loop also computes the weight, refuses ("unsafe dependent memory
operations"). Written with f64xn values the loop is vector code by construction: loads and
stores are explicit, a token's sums stay in registers across the pair loop, and nothing is
left to the vectoriser. Each operation is one LLVM vector instruction with the rounding of
its scalar twin (fma is llvm.fma: one rounding, as the contraction of `a * b + c` in a
jit_fma kernel), so code written this way gives the bits of the scalar loop it replaces
(tests/test_lanes.py, tests/test_fast.py).

WIDTH is 8 (an AVX-512 register of doubles) where Numba compiles for a CPU with avx512f,
else 4 (AVX2's). It is read once, at import, from the target Numba compiles for (its
codegen's features: the host's, or NUMBA_CPU_FEATURES; none under NUMBA_CPU_NAME=generic,
docs/cluster.md's portable code, so 4), which is part of the key of every cached kernel, so
a cache never hands one width's code to a process of the other: no specialisation is added.
The lanes are independent systems and each operation is the same in every lane at either
width, so the width changes no bit (tests/test_lanes.py compares four lanes with eight).
"""

import operator

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.registry import cpu_target
from numba.extending import intrinsic, models, overload, register_model


def _target_width() -> int:
    """8 where the code Numba compiles may use AVX-512 (avx512f), else 4."""
    features = cpu_target.target_context.codegen().magic_tuple()[2]
    return 8 if "+avx512f" in features.split(",") else 4


WIDTH = _target_width()
_F = ir.VectorType(ir.DoubleType(), WIDTH)
_I = ir.VectorType(ir.IntType(64), WIDTH)


class F64xn(types.Type):
    def __init__(self):
        super().__init__(name=f"f64x{WIDTH}")


f64xn = F64xn()


@register_model(F64xn)
class _Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _F)


def _address(context, builder, aryty, ary, index, indexty):
    """A <WIDTH x double>* to ary[index] (index: an integer, or a tuple of one per dimension;
    the last dimension contiguous, no wraparound or bounds check)."""
    if isinstance(indexty, types.BaseTuple):
        idxs = cgutils.unpack_tuple(builder, index, len(indexty))
    else:
        idxs = [index]
    array = context.make_array(aryty)(context, builder, ary)
    ptr = cgutils.get_item_pointer(context, builder, aryty, array, idxs, wraparound=False)
    return builder.bitcast(ptr, _F.as_pointer())


def _indexable(ary, index):
    ndim = len(index) if isinstance(index, types.BaseTuple) else 1
    return (isinstance(ary, types.Array) and ary.dtype == types.float64 and ary.ndim == ndim
            and ary.layout == "C")


@intrinsic
def load(typingctx, ary, index):
    """ary[index], ary[index + 1], ..., the last index advancing (a C-contiguous float64
    array; index: an int for 1-d, else a tuple)."""
    if not _indexable(ary, index):
        return None

    def codegen(context, builder, sig, args):
        ptr = _address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
        return builder.load(ptr, align=8)
    return f64xn(ary, index), codegen


@intrinsic
def store(typingctx, ary, index, value):
    """ary[index ...] = the WIDTH lanes of value (as load)."""
    if not _indexable(ary, index) or value != f64xn:
        return None

    def codegen(context, builder, sig, args):
        ptr = _address(context, builder, sig.args[0], args[0], args[1], sig.args[1])
        builder.store(args[2], ptr, align=8)
    return types.void(ary, index, value), codegen


@intrinsic
def splat(typingctx, x):
    """x in every lane."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[0], sig.args[0], types.float64)
        vector = ir.Constant(_F, ir.Undefined)
        for q in range(WIDTH):
            vector = builder.insert_element(vector, value, ir.Constant(ir.IntType(32), q))
        return vector
    return f64xn(x), codegen


@intrinsic
def lane(typingctx, v, q):
    """Lane q of v as a float."""
    def codegen(context, builder, sig, args):
        return builder.extract_element(args[0], args[1])
    return types.float64(v, q), codegen


def _binary(instruction):
    @intrinsic
    def op(typingctx, a, b):
        if a != f64xn or b != f64xn:
            return None
        return f64xn(a, b), lambda context, builder, sig, args: getattr(builder, instruction)(*args)
    return op


_add, _sub, _mul = _binary("fadd"), _binary("fsub"), _binary("fmul")


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c in every lane, rounded once (llvm.fma)."""
    if not a == b == c == f64xn:
        return None

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_F, [_F] * 3),
                                            f"llvm.fma.v{WIDTH}f64")
        return builder.call(fn, args)
    return f64xn(a, b, c), codegen


def _select(comparison):
    @intrinsic
    def op(typingctx, a, b):
        """Python's min / max of floats lane by lane: a when a NaN (as Numba's scalar)."""
        if a != f64xn or b != f64xn:
            return None

        def codegen(context, builder, sig, args):
            return builder.select(builder.fcmp_unordered(comparison, *args), *args)
        return f64xn(a, b), codegen
    return op


minimum, maximum = _select("<"), _select(">")


@intrinsic
def add_where_greater(typingctx, acc, a, b, step):
    """acc + (step where a > b, else 0) lane by lane (False for NaN, as a scalar a > b)."""
    if not acc == a == b == step == f64xn:
        return None

    def codegen(context, builder, sig, args):
        acc, a, b, step = args
        taken = builder.select(builder.fcmp_ordered(">", a, b), step,
                               ir.Constant(_F, [0.0] * WIDTH))
        return builder.fadd(acc, taken)
    return f64xn(acc, a, b, step), codegen


@intrinsic
def add_exponent_bits(typingctx, p, s):
    """The float64 whose bits are bits(p) + (bits(s) << 52), lane by lane (expfast.exp1's
    last line)."""
    if p != f64xn or s != f64xn:
        return None

    def codegen(context, builder, sig, args):
        bits = builder.bitcast(args[0], _I)
        shifted = builder.shl(builder.bitcast(args[1], _I), ir.Constant(_I, [52] * WIDTH))
        return builder.bitcast(builder.add(bits, shifted), _F)
    return f64xn(p, s), codegen


@overload(operator.add)
def _ol_add(a, b):
    if a == f64xn and b == f64xn:
        return lambda a, b: _add(a, b)


@overload(operator.sub)
def _ol_sub(a, b):
    if a == f64xn and b == f64xn:
        return lambda a, b: _sub(a, b)


@overload(operator.mul)
def _ol_mul(a, b):
    if a == f64xn and b == f64xn:
        return lambda a, b: _mul(a, b)
