"""exp written so LLVM vectorises it inside any loop that calls it.

llvmlite's PyPI build ships without SVML, so `np.exp` inside a Numba loop stays a scalar libm
call. Here exp(a) = 2^k exp(r), k = round(a / ln 2), r = a - k ln 2 (Cody-Waite split
of ln 2), exp(r) by its degree-13 Taylor polynomial (|r| <= ln2 / 2: truncation < 1e-17), and
the factor 2^k added straight into the exponent bits. The polynomial is two Horner chains of
seven terms, 1 .. r^6 / 6! and r^7 / 7! .. r^13 / 13!, joined by one multiply-add with r^7:
half the dependent steps of a single chain, so a higher rate in a loop, the low chain still
the one that rounds the result. The bits are reinterpreted by an LLVM bitcast (`_bits`,
`_real`), a no-op that vectorises, so `exp1` is branch-free straight-line code: a loop
`a[j] = exp1(...)` runs 8 doubles per AVX-512 instruction with nothing stored in between (an
earlier version needed a second pass through an int64 view of a scratch buffer).
Accuracy: at most 1 ulp (mean 0.25 ulp) over [-700, 700], checked against np.exp to 2 ulp in
tests/test_fast.py.

Compiled without fastmath: the rounding trick (y * log2 e + ROUND) - ROUND is exactly what
reassociation would delete. Only contraction into fused multiply-adds is allowed: it halves the
polynomial's instructions (a higher rate) and rounds once where a multiply and an add round
twice. LLVM inlines exp1 into its callers keeping these flags on its own instructions, so it
stays exact inside the reassociating loops of rows.py and blocked.py.
"""

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from sweep.numerics import simd as v
from sweep.numerics._jit import jit_fma

LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01  # ln 2 with its low bits zeroed, so k * LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10
ROUND = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer in the low mantissa bits
LOW, HIGH = -700.0, 708.0   # keeps 2^k a normal number; exp(-700) ~ 1e-304 is "zero" here


@intrinsic
def _bits(typingctx, x):
    """The IEEE bits of a float64 as an int64."""
    if x != types.float64:
        return None
    return types.int64(types.float64), lambda ctx, b, sig, args: b.bitcast(args[0], ir.IntType(64))


@intrinsic
def _real(typingctx, i):
    """The float64 whose IEEE bits are the int64 i."""
    if i != types.int64:
        return None
    return types.float64(types.int64), lambda ctx, b, sig, args: b.bitcast(args[0], ir.DoubleType())


@jit_fma
def exp1(a):
    """exp(a) for a float64, a clamped to [-700, 708]: callers keep their arguments inside that
    range or treat anything below -700 as negligible (softmax weights next to one of order 1)."""
    y = min(max(a, LOW), HIGH)
    s = y * LOG2E + ROUND
    k = s - ROUND
    r = (y - k * LN2_HI) - k * LN2_LO
    r2 = r * r
    r7 = (r2 * r2) * (r2 * r)
    h = r * (1.0 / 6227020800.0) + 1.0 / 479001600.0  # the terms r^7 .. r^13 / 13!
    h = h * r + 1.0 / 39916800.0
    h = h * r + 1.0 / 3628800.0
    h = h * r + 1.0 / 362880.0
    h = h * r + 1.0 / 40320.0
    h = h * r + 1.0 / 5040.0
    p = r * (1.0 / 720.0) + 1.0 / 120.0  # the terms 1 .. r^6 / 6!
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    p = h * r7 + p
    return _real(_bits(p) + (_bits(s) << 52))  # the low 12 bits of s hold k (two's complement)


@jit_fma
def exp_inplace(a):
    """a[j] <- exp(a[j]) for a float64 buffer (clamped as exp1)."""
    for j in range(a.shape[0]):
        a[j] = exp1(a[j])


@jit_fma
def expv(a):
    """exp1 of each lane of an f64xn (simd.py: simd.WIDTH lanes), the same operations in the
    same order: each `x * y + z` that LLVM contracts in exp1 is a v.fma here, so the bits are
    exp1's (tests/test_fast.py, NaN and infinities included). An ordinary compiled function,
    not inlined by Numba: it takes no arrays, so LLVM inlines the call at no cost, and
    lanes.py's four calls are typed once (3 s less compile time than inline="always")."""
    y = v.minimum(v.maximum(a, v.splat(LOW)), v.splat(HIGH))
    s = v.fma(y, v.splat(LOG2E), v.splat(ROUND))
    k = s - v.splat(ROUND)
    r = v.fma(k, v.splat(-LN2_LO), v.fma(k, v.splat(-LN2_HI), y))
    r2 = r * r
    r7 = (r2 * r2) * (r2 * r)
    h = v.fma(r, v.splat(1.0 / 6227020800.0), v.splat(1.0 / 479001600.0))
    h = v.fma(h, r, v.splat(1.0 / 39916800.0))
    h = v.fma(h, r, v.splat(1.0 / 3628800.0))
    h = v.fma(h, r, v.splat(1.0 / 362880.0))
    h = v.fma(h, r, v.splat(1.0 / 40320.0))
    h = v.fma(h, r, v.splat(1.0 / 5040.0))
    p = v.fma(r, v.splat(1.0 / 720.0), v.splat(1.0 / 120.0))
    p = v.fma(p, r, v.splat(1.0 / 24.0))
    p = v.fma(p, r, v.splat(1.0 / 6.0))
    p = v.fma(p, r, v.splat(0.5))
    p = v.fma(p, r, v.splat(1.0))
    p = v.fma(p, r, v.splat(1.0))
    p = v.fma(h, r7, p)
    return v.add_exponent_bits(p, s)


@jit_fma
def expv_inplace(a):
    """a <- expv of a, simd.WIDTH at a time (a's length a multiple of it): for tests."""
    for j in range(0, a.shape[0], v.WIDTH):
        v.store(a, j, expv(v.load(a, j)))
