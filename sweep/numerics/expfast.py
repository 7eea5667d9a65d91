"""exp written so LLVM vectorises it inside any loop that calls it.

llvmlite's PyPI build ships without SVML, so `np.exp` inside a Numba loop stays a scalar libm
call. Here exp(a) = 2^k exp(r), k = round(a / ln 2), r = a - k ln 2 (Cody-Waite split
of ln 2), exp(r) by a degree-11 polynomial, 1 + r + r^2 / 2 + r^3 s(r) with s fitted to
(e^r - 1 - r - r^2 / 2) / r^3 on |r| <= ln2 / 2 (Chebyshev fit, mpmath at 50 digits; relative
error of the polynomial with its float64 coefficients 3.3e-17, a sixth of the last bit near 1),
and the factor 2^k added straight into the exponent bits. The polynomial is one Horner chain
of eleven multiply-adds, where the degree-13 Taylor polynomial in two chains took thirteen and
four multiplies: a 23% higher rate in a loop, and the one chain rounds more closely
(benchmarks/HISTORY.md). The bits are reinterpreted by an LLVM bitcast (`_bits`,
`_real`), a no-op that vectorises, so `exp1` is branch-free straight-line code: a loop
`a[j] = exp1(...)` runs 8 doubles per AVX-512 instruction with nothing stored in between (an
earlier version needed a second pass through an int64 view of a scratch buffer).
Accuracy: under 1 ulp (mean 0.26 ulp) over [-700, 700], checked against np.exp to 2 ulp in
tests/test_fast.py. `exp1f` is the same scheme in float32 (under 1 ulp of float32, 16 lanes
to an AVX-512 vector where exp1 has 8); `weight(g, beta, c)` picks one by g's precision,
for the blocked path's exponentials of a Gram matrix held in float32.

Compiled without fastmath: the rounding trick (y * log2 e + ROUND) - ROUND is exactly what
reassociation would delete. Only contraction into fused multiply-adds is allowed: it halves the
polynomial's instructions (a higher rate) and rounds once where a multiply and an add round
twice. LLVM inlines exp1 into its callers keeping these flags on its own instructions, so it
stays exact inside the reassociating loops of rows.py and blocked.py.
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from sweep.numerics import simd as v
from sweep.numerics._jit import jit_fma

LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01  # ln 2 with its low bits zeroed, so k * LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10
ROUND = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer in the low mantissa bits
LOW, HIGH = -700.0, 708.0   # keeps 2^k a normal number; exp(-700) ~ 1e-304 is "zero" here
# exp(r) ~ 1 + r + r^2 / 2 + C3 r^3 + ... + C11 r^11 on |r| <= ln2 / 2 (see above)
C3, C4, C5 = 0.16666666666666666, 0.041666666666651364, 0.008333333333332157
C6, C7, C8 = 0.0013888888905871347, 0.0001984126985433077, 2.4801536409064087e-05
C9, C10, C11 = 2.7557280082684685e-06, 2.761379555451986e-07, 2.509554598170022e-08


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
    p = r * C11 + C10
    p = p * r + C9
    p = p * r + C8
    p = p * r + C7
    p = p * r + C6
    p = p * r + C5
    p = p * r + C4
    p = p * r + C3
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    return _real(_bits(p) + (_bits(s) << 52))  # the low 12 bits of s hold k (two's complement)


# exp1f: the same scheme in float32 (Cephes' expf): ln 2 split in two (9 bits in the first, so
# k * LN2_HI_F is exact), exp(r) = 1 + r + r^2 p(r) with p of degree 5; under 1 ulp of float32
# (tests/test_fast.py). LOW_F keeps 2^k's exponent field positive (exp(-86) ~ 4e-38).
LOG2E_F, ROUND_F = np.float32(LOG2E), np.float32(12582912.0)  # 1.5 * 2^23, as ROUND
LN2_HI_F, LN2_LO_F = np.float32(0.693359375), np.float32(-2.12194440e-4)
P0_F, P1_F, P2_F, P3_F, P4_F, P5_F = map(np.float32, (
    1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
    5.0000001201e-1))
LOW_F, HIGH_F, ONE_F = np.float32(-86.0), np.float32(88.0), np.float32(1.0)


@intrinsic
def _scaled_f(typingctx, p, s):
    """The float32 p times 2^k, k held in the low bits of the float32 s (as exp1's last line)."""
    if p != types.float32 or s != types.float32:
        return None

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        bits = [builder.bitcast(a, i32) for a in args]
        k = builder.shl(bits[1], ir.Constant(i32, 23))
        return builder.bitcast(builder.add(bits[0], k), ir.FloatType())
    return types.float32(types.float32, types.float32), codegen


@jit_fma
def exp1f(a):
    """exp(a) for a float32, in float32 arithmetic (twice exp1's lanes per vector), a clamped
    to [-86, 88] (callers as exp1's)."""
    y = min(max(a, LOW_F), HIGH_F)
    s = y * LOG2E_F + ROUND_F
    k = s - ROUND_F
    r = (y - k * LN2_HI_F) - k * LN2_LO_F
    p = r * P0_F + P1_F
    p = p * r + P2_F
    p = p * r + P3_F
    p = p * r + P4_F
    p = p * r + P5_F
    p = p * (r * r) + r + ONE_F
    return _scaled_f(p, s)


def weight(g, beta, c):
    """exp(beta (g - c)), a softmax weight, in g's precision: exp1 of float64 arithmetic for
    a float64 g, exp1f of float32 arithmetic (beta and c rounded to float32) for a float32 g
    (blocked.Symmetric's float32 jobs: their Gram entries carry float32's error already)."""
    return math.exp(beta * (g - c))


@overload(weight, jit_options=dict(fastmath={"contract"}))
def _weight(g, beta, c):
    if g == types.float32:
        return lambda g, beta, c: exp1f(np.float32(beta) * (g - np.float32(c)))
    return lambda g, beta, c: exp1(beta * (g - c))


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
    p = v.fma(r, v.splat(C11), v.splat(C10))
    p = v.fma(p, r, v.splat(C9))
    p = v.fma(p, r, v.splat(C8))
    p = v.fma(p, r, v.splat(C7))
    p = v.fma(p, r, v.splat(C6))
    p = v.fma(p, r, v.splat(C5))
    p = v.fma(p, r, v.splat(C4))
    p = v.fma(p, r, v.splat(C3))
    p = v.fma(p, r, v.splat(0.5))
    p = v.fma(p, r, v.splat(1.0))
    p = v.fma(p, r, v.splat(1.0))
    return v.add_exponent_bits(p, s)


@jit_fma
def expv_inplace(a):
    """a <- expv of a, simd.WIDTH at a time (a's length a multiple of it): for tests."""
    for j in range(0, a.shape[0], v.WIDTH):
        v.store(a, j, expv(v.load(a, j)))
