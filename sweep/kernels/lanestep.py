"""A step of many small systems at once, one per SIMD lane (lanes.py): X: [n, d, L], d 2 or 3.

The velocity, and the layout Lanes (a block of systems) for the methods (kernels/methods.py).

Each pair i < j is visited once per velocity: g_ij = sum_k x_ik x_jk (k in order), its
weight w_ij = exp(beta (g_ij - c)) (c = 1 softmax, 0 unnormalized, as rows.py) added to both
tokens' sums, and the diagonal on its own. Half the exponentials of rows.py's whole n x n
matrix, and no matrix: what stopped the symmetric half there (rows' docstring) was the
unpacking into both halves of a matrix, which lanes do not need. Every token's sums come out
in the order j = 0, 1, ..., n - 1 (the pairs (j, i) of earlier rows, then the diagonal, then
the pairs (i, j)), with no reassociation: compiled with contraction into fused multiply-adds
only (jit_fma), which keeps exp1 exact.

The pair loop (pair_sums_circle for d = 2, pair_sums_sphere for d = 3) is written in
simd.py's f64xn values, simd.WIDTH lanes at a time (8 on AVX-512, else 4; the same bits): a
token's position and sums stay in registers across its pairs, and no run-time alias checks
guard each 64-lane loop, as they did when each step of a pair was a loop over the lanes for
LLVM to vectorise. A block's lanes are padded to a multiple of WIDTH with copies of its last
system, whose numbers are never read, so a system's numbers are the same in any block. Each
pair loop is a function of its own, called once per simd.WIDTH lanes: inlined, they compiled
0.5 s longer, at the same speed (docs/performance.md, compile time). Systems of four and more
dimensions run on rows.py (sweep.execution.kernel; model.d is at least 2): the loops over
lanes that served them here were slower than rows.py there, and compiled into every lanes
kernel.
"""

from typing import NamedTuple

import numpy as np

from sweep.kernels import methods
from sweep.kernels.codes import LAYER
from sweep.numerics import simd as v
from sweep.numerics._jit import jit_fma, jit_fma_inline
from sweep.numerics.expfast import expv


@jit_fma_inline
def dots(X, i, Y, j, G):
    """G[b] = <x_i, y_j> in every lane b, the coordinates summed in order: the one way a g_ij
    is computed here (X, Y: [n, d, L])."""
    d, L = X.shape[1], X.shape[2]
    for b in range(L):
        G[b] = X[i, 0, b] * Y[j, 0, b]
    for k in range(1, d):
        for b in range(L):
            G[b] += X[i, k, b] * Y[j, k, b]


@jit_fma
def pair_sums_circle(X, b, beta, c, V, Z, e1, step):
    """Z[i] = sum_j w_ij and V[i] = sum_j w_ij x_j (j = 0, 1, ..., n - 1 in order) for d = 2
    and the WIDTH lanes from b, each pair i < j visited once, in f64xn values (simd.py): token
    i's position and sums held in registers across its pairs; beta, e1, step: f64xn. Returns
    step summed over the ordered pairs i != j with g_ij > e1, lane by lane."""
    n = X.shape[0]
    zero, cc, close = v.splat(0.0), v.splat(c), v.splat(0.0)
    for i in range(n):
        v.store(Z, (i, b), zero)
        v.store(V, (i, 0, b), zero)
        v.store(V, (i, 1, b), zero)
    for i in range(n):
        xi0, xi1 = v.load(X, (i, 0, b)), v.load(X, (i, 1, b))
        w = expv(beta * (v.fma(xi1, xi1, xi0 * xi0) - cc))
        zi = v.load(Z, (i, b)) + w
        vi0 = v.fma(w, xi0, v.load(V, (i, 0, b)))
        vi1 = v.fma(w, xi1, v.load(V, (i, 1, b)))
        for j in range(i + 1, n):
            xj0, xj1 = v.load(X, (j, 0, b)), v.load(X, (j, 1, b))
            g = v.fma(xi1, xj1, xi0 * xj0)
            w = expv(beta * (g - cc))
            zi = zi + w
            v.store(Z, (j, b), v.load(Z, (j, b)) + w)
            close = v.add_where_greater(close, g, e1, step)
            vi0 = v.fma(w, xj0, vi0)
            vi1 = v.fma(w, xj1, vi1)
            v.store(V, (j, 0, b), v.fma(w, xi0, v.load(V, (j, 0, b))))
            v.store(V, (j, 1, b), v.fma(w, xi1, v.load(V, (j, 1, b))))
        v.store(Z, (i, b), zi)
        v.store(V, (i, 0, b), vi0)
        v.store(V, (i, 1, b), vi1)
    return close


@jit_fma
def pair_sums_sphere(X, b, beta, c, V, Z, e1, step):
    """pair_sums_circle for d = 3."""
    n = X.shape[0]
    zero, cc, close = v.splat(0.0), v.splat(c), v.splat(0.0)
    for i in range(n):
        v.store(Z, (i, b), zero)
        for k in range(3):
            v.store(V, (i, k, b), zero)
    for i in range(n):
        xi0, xi1, xi2 = v.load(X, (i, 0, b)), v.load(X, (i, 1, b)), v.load(X, (i, 2, b))
        w = expv(beta * (v.fma(xi2, xi2, v.fma(xi1, xi1, xi0 * xi0)) - cc))
        zi = v.load(Z, (i, b)) + w
        vi0 = v.fma(w, xi0, v.load(V, (i, 0, b)))
        vi1 = v.fma(w, xi1, v.load(V, (i, 1, b)))
        vi2 = v.fma(w, xi2, v.load(V, (i, 2, b)))
        for j in range(i + 1, n):
            xj0, xj1, xj2 = v.load(X, (j, 0, b)), v.load(X, (j, 1, b)), v.load(X, (j, 2, b))
            g = v.fma(xi2, xj2, v.fma(xi1, xj1, xi0 * xj0))
            w = expv(beta * (g - cc))
            zi = zi + w
            v.store(Z, (j, b), v.load(Z, (j, b)) + w)
            close = v.add_where_greater(close, g, e1, step)
            vi0, vi1, vi2 = v.fma(w, xj0, vi0), v.fma(w, xj1, vi1), v.fma(w, xj2, vi2)
            v.store(V, (j, 0, b), v.fma(w, xi0, v.load(V, (j, 0, b))))
            v.store(V, (j, 1, b), v.fma(w, xi1, v.load(V, (j, 1, b))))
            v.store(V, (j, 2, b), v.fma(w, xi2, v.load(V, (j, 2, b))))
        v.store(Z, (i, b), zi)
        v.store(V, (i, 0, b), vi0)
        v.store(V, (i, 1, b), vi1)
        v.store(V, (i, 2, b), vi2)
    return close


@jit_fma
def velocity(X, beta, c, softmax, method, V, Z, G, count, eps1, counting):
    """V = P_x(v), v_i = sum_j w_ij x_j / z_i (v itself for the layer method), every lane;
    X, V: [n, d, L], d 2 or 3 (any other d is not finite), L a multiple of simd.WIDTH; Z:
    [n, L] scratch; G: [L] scratch; beta, eps1: [L]. counting: add to count[b] the ordered
    pairs i != j with g_ij > eps1[b] (= 1 - eps)."""
    n, d, L = X.shape
    if d != 2 and d != 3:  # no pair loop for it: a velocity that ends the run (NONFINITE)
        V[:] = np.nan
        return
    step = v.splat(2.0 if counting else 0.0)  # each close pair: (i, j) and (j, i)
    for b in range(0, L, v.WIDTH):
        lanes_beta, e1 = v.load(beta, b), v.load(eps1, b)
        if d == 2:
            close = pair_sums_circle(X, b, lanes_beta, c, V, Z, e1, step)
        else:
            close = pair_sums_sphere(X, b, lanes_beta, c, V, Z, e1, step)
        for q in range(v.WIDTH):
            count[b + q] += int(v.lane(close, q))
    for i in range(n):
        for b in range(L):
            Z[i, b] = 1.0 / Z[i, b] if softmax else 1.0 / n
        for k in range(d):
            for b in range(L):
                V[i, k, b] *= Z[i, b]
        if method == LAYER:
            continue
        dots(X, i, V, i, G)  # the tangent projection u - <x_i, u> x_i
        for k in range(d):
            for b in range(L):
                V[i, k, b] -= G[b] * X[i, k, b]


@jit_fma
def count_close(X, eps1, G, count):
    """count[b] = the ordered pairs i != j of lane b with g_ij > eps1[b], from the very g_ij
    velocity computes."""
    n, d, L = X.shape
    count[:] = 0
    for i in range(n):
        for j in range(i + 1, n):
            dots(X, i, X, j, G)
            for b in range(L):
                count[b] += 2 * (G[b] > eps1[b])


@jit_fma
def lane_gram(X, b, g):
    """g[i, j] = g_ij of lane b, as velocity computes it (so exactly symmetric)."""
    n, d = X.shape[0], X.shape[1]
    for i in range(n):
        for j in range(i, n):
            s = X[i, 0, b] * X[j, 0, b]
            for k in range(1, d):
                s += X[i, k, b] * X[j, k, b]
            g[i, j] = s
            g[j, i] = s


class Lanes(NamedTuple):
    """A block's systems as a layout for the methods (kernels/methods.py): the state X and
    the stages ws[s]: [n, d, P], system b in lane b; beta, dt, sixth (dt / 6), eps1 (1 - eps):
    [P], each lane's; Z: [n, P], G, h: [P] scratch; count: [P], the close pairs a
    counting velocity adds up; counting: [1], whether a step's first velocity counts them."""

    method: int
    ws: np.ndarray
    beta: np.ndarray
    c: float
    softmax: bool
    dt: np.ndarray
    sixth: np.ndarray
    eps1: np.ndarray
    Z: np.ndarray
    G: np.ndarray
    h: np.ndarray
    count: np.ndarray
    counting: np.ndarray


@jit_fma
def axpy(out, x, a, y):
    """out = x + a y, a: [L] one factor per lane; [n, d, L] arrays."""
    n, d, L = x.shape
    for i in range(n):
        for k in range(d):
            for b in range(L):
                out[i, k, b] = x[i, k, b] + a[b] * y[i, k, b]


@jit_fma
def steps_of(h, frac, dt):
    """h = frac dt, lane by lane."""
    for b in range(h.shape[0]):
        h[b] = frac * dt[b]


@jit_fma
def combine(X, sixth, k1, k2, k3, k4):
    """X += sixth (k1 + 2 k2 + 2 k3 + k4), sixth: [L] (dt / 6 of each lane): rk4's step."""
    n, d, L = X.shape
    for i in range(n):
        for k in range(d):
            for b in range(L):
                X[i, k, b] += sixth[b] * (k1[i, k, b] + 2.0 * k2[i, k, b]
                                          + 2.0 * k3[i, k, b] + k4[i, k, b])


@jit_fma
def normalise(X, G):
    """x_i <- x_i / |x_i| in every lane; G: [L] scratch."""
    n, d, L = X.shape
    for i in range(n):
        dots(X, i, X, i, G)
        for b in range(L):
            G[b] = 1.0 / np.sqrt(G[b])
        for k in range(d):
            for b in range(L):
                X[i, k, b] *= G[b]


# The layout's primitives, inlined into the methods: each a call of a kernel above
# (or lanefield's velocity), compiled with contraction only (jit_fma), as when the steps were
# written out here.
@jit_fma_inline
def _velocity(lay, x, k, stage):
    velocity(x, lay.beta, lay.c, lay.softmax, methods.method_code(lay.method), k, lay.Z, lay.G,
             lay.count, lay.eps1, (stage == 0) & lay.counting[0])


@jit_fma_inline
def _diffuse(lay, x, k, tick):
    """No noise on the fast paths."""


@jit_fma_inline
def _shift(lay, out, x, frac, k):
    steps_of(lay.h, frac, lay.dt)
    axpy(out, x, lay.h, k)


@jit_fma_inline
def _combine(lay, x, k1, k2, k3, k4):
    combine(x, lay.sixth, k1, k2, k3, k4)


@jit_fma_inline
def _normalise(lay, x):
    normalise(x, lay.G)


methods.implement(Lanes, velocity=_velocity, diffuse=_diffuse, shift=_shift,
                  rk4_combine=_combine, normalise=_normalise)
