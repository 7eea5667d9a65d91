"""span_dimension: the numerical rank of the tokens' matrix x: [n, d], the dimension of the
subspace they span, at a relative tolerance rtol (its record's parameter):

    span_dimension = #{k : sigma_k > rtol sigma_1},   sigma_1 >= sigma_2 >= ... of x,

numpy.linalg.matrix_rank(x, rtol=rtol). The reference code of arXiv 2312.10794
(phase-diagrams.py, its --plotdim figures) counts the eigenvalues of the Gram matrix above a
fixed 1e-3; measured against the largest instead, the count does not depend on n or on the
tokens' scale (a layer model's hidden states), and it is 1 at total collapse and for
antipodal tokens, k for k clusters at independent centres (k <= d).

How: the squares sigma_k^2 are the eigenvalues of the m x m matrix S = x^T x (m = d <= n) or
G = x x^T (m = n < d), whichever is smaller; S is brought to tridiagonal form by Householder
reflections (4/3 m^3 flops, backward stable) and its eigenvalues above rtol^2 lambda_1 are
counted by Sturm sequences, lambda_1 itself by bisection on the same counts. This is exact up
to rounding in S (a count changes only for an eigenvalue within rounding of the threshold),
needs no LAPACK (Numba's np.linalg would import SciPy into every kernel), and costs
O(n m^2 + m^3): little beside a save's O(n^2 d) pair sums while d is small against n, a
sizeable share of a save when d ~ n (a run that does not record span_dimension skips it:
its level is SAVE_ALL). Compiled without fastmath and summed in a fixed order, so the same x
gives the same count on every path.
"""

import numpy as np

from sweep.numerics._jit import jit

BISECTIONS = 60  # lambda_1 to a relative 2^-60 of its Gershgorin bound: well below rounding


@jit
def second_moment(x, a):
    """a = x^T x: [d, d] if d <= n, else x x^T: [n, n] (float64 whatever x's dtype)."""
    n, d = x.shape
    if d <= n:
        a[:] = 0.0
        i = 0
        while i + 8 <= n:  # eight rows a pass over a (in L2 at d = 128), each sum in row order
            r0, r1, r2, r3 = x[i], x[i + 1], x[i + 2], x[i + 3]
            r4, r5, r6, r7 = x[i + 4], x[i + 5], x[i + 6], x[i + 7]
            for k in range(d):
                x0, x1 = np.float64(r0[k]), np.float64(r1[k])
                x2, x3 = np.float64(r2[k]), np.float64(r3[k])
                x4, x5 = np.float64(r4[k]), np.float64(r5[k])
                x6, x7 = np.float64(r6[k]), np.float64(r7[k])
                ak = a[k]
                for q in range(d):
                    ak[q] = (((((((ak[q] + x0 * r0[q]) + x1 * r1[q]) + x2 * r2[q])
                                + x3 * r3[q]) + x4 * r4[q]) + x5 * r5[q]) + x6 * r6[q]) \
                        + x7 * r7[q]
            i += 8
        for r in range(i, n):
            for k in range(d):
                xk = np.float64(x[r, k])
                for q in range(d):
                    a[k, q] += xk * x[r, q]
        return
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                s += np.float64(x[i, k]) * x[j, k]
            a[i, j] = s


@jit
def tridiagonalize(a, diag, off):
    """The symmetric a: [m, m] (destroyed) as the tridiagonal matrix with the same eigenvalues:
    diag: [m], off: [m] (off[k] couples k and k + 1; off[m - 1] unused). Householder: column k
    below the diagonal reflected onto its first entry, A22 <- H A22 H."""
    m = a.shape[0]
    v, p = np.empty(m), np.empty(m)
    for k in range(m - 2):
        norm = 0.0
        for i in range(k + 1, m):
            norm += a[i, k] * a[i, k]
        norm = np.sqrt(norm)
        alpha = -norm if a[k + 1, k] >= 0.0 else norm
        vv = 0.0
        for i in range(k + 1, m):
            v[i] = a[i, k]
            vv += v[i] * v[i]
        v[k + 1] -= alpha
        vv += v[k + 1] * v[k + 1] - a[k + 1, k] * a[k + 1, k]
        off[k] = alpha if vv > 0.0 else a[k + 1, k]
        if vv > 0.0:
            reflect(a, k + 1, v, p, 2.0 / vv)
    for k in range(m):
        diag[k] = a[k, k]
    if m > 1:
        off[m - 2] = a[m - 1, m - 2]
    off[m - 1] = 0.0


@jit
def reflect(a, lo, v, p, tau):
    """a[lo:, lo:] <- H a[lo:, lo:] H, H = I - tau v v^T (v: entries lo..m-1)."""
    m = a.shape[0]
    pl = p[lo:]  # p = a v by rows of a (a is symmetric, to the bit: a[j, i] is a[i, j]), so
    pl[:] = 0.0  # that each p[i] sums over j in order and the loop over i vectorises
    for j in range(lo, m):
        vj, row = v[j], a[j, lo:]
        for i in range(pl.shape[0]):
            pl[i] += row[i] * vj
    vp = 0.0
    for i in range(lo, m):
        p[i] = tau * p[i]
        vp += v[i] * p[i]
    half = 0.5 * tau * vp
    for i in range(lo, m):
        p[i] -= half * v[i]
    for i in range(lo, m):
        for j in range(lo, m):
            a[i, j] -= v[i] * p[j] + p[i] * v[j]


@jit
def count_below(diag, off, t):
    """The eigenvalues of the tridiagonal (diag, off) below t (Sturm: the negative pivots of
    T - t I = L D L^T; a zero pivot is nudged off zero, as LAPACK's dstebz)."""
    below, q = 0, 1.0
    for k in range(diag.shape[0]):
        b2 = off[k - 1] * off[k - 1] if k > 0 else 0.0
        q = diag[k] - t - (b2 / q if k > 0 else 0.0)
        if q == 0.0:
            q = -1e-300
        below += q < 0.0
    return below


@jit
def largest(diag, off):
    """lambda_1 of the tridiagonal (diag, off) by bisection within its Gershgorin bounds."""
    m = diag.shape[0]
    lo, hi = np.inf, -np.inf
    for k in range(m):
        r = abs(off[k]) * (k < m - 1) + (abs(off[k - 1]) if k > 0 else 0.0)
        lo, hi = min(lo, diag[k] - r), max(hi, diag[k] + r)
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        if count_below(diag, off, mid) == m:
            hi = mid
        else:
            lo = mid
    return hi


@jit
def span_dimension(x, rtol):
    """#{k : sigma_k > rtol sigma_1} of x: [n, d] (module docstring); 0 for x = 0."""
    n, d = x.shape
    m = min(n, d)
    a, diag, off = np.empty((m, m)), np.empty(m), np.empty(m)
    second_moment(x, a)
    tridiagonalize(a, diag, off)
    top = largest(diag, off)
    if not top > 0.0:
        return 0.0
    return float(m - count_below(diag, off, rtol * rtol * top))
