"""Serial fast path for one small system: identity matrices, one head, dense mask, no noise.

Systems of up to codes.LANES_MAX_D dimensions take lanes.py instead (sweep.execution.kernel), one
system per SIMD lane, a batch at a time: faster in batches, with other last bits.

The state is held transposed, xt: [d, n] float64 (structure of arrays), so every inner loop
runs over tokens j with unit stride and vectorises whatever d is, exp included (expfast.py).
Weights are w_ij = exp(beta (<x_i, x_j> - c)) with c = 1 for softmax (the row maximum on the
sphere is <x_i, x_i> = 1, so no pass looks for it; off the sphere, in RK4 stages, the shift
is still valid, only no longer the maximum) and c = 0 for unnormalized attention. Softmax
divides by z_i = sum_j w_ij afterwards: the reference's A_ij whatever shift was used.
Float32 jobs are computed in float64 and rounded back to float32 after every step.
"""

from typing import NamedTuple

import numpy as np

from sweep.kernels import methods
from sweep.kernels.codes import LAYER, OK, SAVE_ALL, STOPPED
from sweep.kernels.sphere import combine_dt, shift_dt
from sweep.kernels.timeloop import implement
from sweep.numerics._jit import jit_fast, jit_fast_inline, jit_fma, jit_inline
from sweep.numerics.expfast import exp1
from sweep.numerics.passing import Passing
from sweep.observables.gramobs import saves_of
from sweep.observables.groups import Groups, groups_scratch

FRESH_GRAM, FRESH_WEIGHTS = 1, 2  # what a save left in System.e for the next step


@jit_fast
def velocity_rows(xt, beta, c, softmax, method, vt, z, e, fresh):
    """vt = P_x(v) with v_i = sum_j w_ij x_j / z_i for every token (v itself for the layer
    method); xt, vt: [d, n]; e: [n, n]; z: [2, n] (the 1 / z_i, and scratch); fresh: [1]
    int, what a save of this very state left in e (FRESH_GRAM: its Gram matrix,
    FRESH_WEIGHTS: its weights), reset to 0 here.

    The whole weight matrix at once, not row by row: one exp pass over n^2 numbers instead
    of n passes of n (at n = 32 the loop overheads of short passes cost more than the
    exponentials). Full rows rather than the symmetric half: triangular loops leave scalar
    remainders that cost more than the exponentials they save (each pair once as a rectangle
    of n/2 pairs per row, unpacked into the matrix, gained nothing: the unpack's column
    stores cost what the exponentials saved; docs/performance.md). Nor without the matrix,
    each pair (i, i + k mod n), k = 1 .. n/2, adding its weight to both tokens' sums: a faster
    velocity, but no faster whole runs, and slower from d = 3, where the sums' loop (eight
    rows written per pair) compiles into far more instructions than it takes alone; and a
    save of every observable, whose weights serve the step after it, would lose that.
    The weights are exp(beta (g_ij - c)) of the plain Gram matrix, the very numbers a save
    computes, so the step after a save starts from the save's (which does not change its
    bits).
    """
    n = xt.shape[1]
    if fresh[0] < FRESH_GRAM:
        gram(xt, e, 1.0, 0.0)
    if fresh[0] < FRESH_WEIGHTS:
        weights_inplace(e.reshape(n * n), beta, c)
    fresh[0] = 0
    weighted_sums(e, xt, vt, z[0])
    if not softmax:
        z[0] = 1.0 / n
    if method == LAYER:
        scale_columns(vt, z[0])
    else:
        project(xt, vt, z[0], z[1])


@jit_fma
def weights_inplace(a, beta, c):
    """a <- exp(beta (a - c)) elementwise: the Gram matrix's entries into weights, in place
    (one array: the loop vectorises as exp_inplace's does; one array in and another out was
    slower)."""
    for j in range(a.shape[0]):
        a[j] = exp1(beta * (a[j] - c))


@jit_fma
def weights(g, w, beta, c):
    """w = exp(beta (g - c)) elementwise, as weights_inplace computes it; g, w: [n, n],
    distinct arrays."""
    src, flat = g.reshape(g.size), w.reshape(w.size)
    for j in range(flat.shape[0]):
        flat[j] = exp1(beta * (src[j] - c))


@jit_fma
def gram(xt, g, scale, shift):
    """g[i, j] = scale <x_i, x_j> - shift; xt: [d, n], g: [n, n]. Up to d = 4 all coordinates
    in one pass over each row (a small share of a whole step); from d = 8, rows four at a
    time and coordinates two at a time, so each load of x_j serves eight products and each
    store of g two (one row and one coordinate per pass is bound by its stores; at d = 3 it is
    the other way round, and four coordinates per pass there was slower). With scale 1 every
    entry sums the same products in the same order, so g is exactly symmetric (the
    observables' clusters rely on nothing more). Compiled without
    reassociation (its loops need none to vectorise): with it, the one-pass sum for d <= 4
    compiled one way fresh and another way into Numba's cache."""
    d, n = xt.shape
    if d <= 4:  # every coordinate in one pass (missing ones with weight 0): one store per g_ij
        r, s, u, v = xt[0], xt[min(1, d - 1)], xt[min(2, d - 1)], xt[min(3, d - 1)]
        ws, wu, wv = scale * (d > 1), scale * (d > 2), scale * (d > 3)
        for i in range(n):
            gi, a, b, c, e = g[i], scale * r[i], ws * s[i], wu * u[i], wv * v[i]
            for j in range(n):
                gi[j] = a * r[j] + b * s[j] + c * u[j] + e * v[j] - shift
        return
    if d < 8 or n < 4:
        for i in range(n):
            gi, row, xi = g[i], xt[0], scale * xt[0, i]
            for j in range(n):
                gi[j] = xi * row[j] - shift
            for k in range(1, d):
                row, xi = xt[k], scale * xt[k, i]
                for j in range(n):
                    gi[j] += xi * row[j]
        return
    for i in range(0, n - 3, 4):
        _gram_rows(xt, i, scale, shift, g[i], g[i + 1], g[i + 2], g[i + 3])
    if n % 4:  # a block overlapping the last one: the same rows get the same values again
        _gram_rows(xt, n - 4, scale, shift, g[n - 4], g[n - 3], g[n - 2], g[n - 1])


@jit_fma
def _gram_rows(xt, i, scale, shift, g0, g1, g2, g3):
    """Rows i .. i + 3 of gram(xt, g, scale, shift) into g0 .. g3: the first coordinate
    (odd d) or pair (even d) sets them, the remaining pairs add to them."""
    d, n = xt.shape
    r, s = xt[0], xt[min(1, d - 1)]
    w = 0.0 if d % 2 else scale  # odd d: coordinate 0 alone sets the rows
    a0, a1, a2, a3 = scale * r[i], scale * r[i + 1], scale * r[i + 2], scale * r[i + 3]
    b0, b1, b2, b3 = w * s[i], w * s[i + 1], w * s[i + 2], w * s[i + 3]
    for j in range(n):
        g0[j] = a0 * r[j] + b0 * s[j] - shift
        g1[j] = a1 * r[j] + b1 * s[j] - shift
        g2[j] = a2 * r[j] + b2 * s[j] - shift
        g3[j] = a3 * r[j] + b3 * s[j] - shift
    for k in range(2 - d % 2, d, 2):
        r, s = xt[k], xt[k + 1]
        a0, a1, a2, a3 = scale * r[i], scale * r[i + 1], scale * r[i + 2], scale * r[i + 3]
        b0, b1, b2, b3 = scale * s[i], scale * s[i + 1], scale * s[i + 2], scale * s[i + 3]
        for j in range(n):
            g0[j] += a0 * r[j] + b0 * s[j]
            g1[j] += a1 * r[j] + b1 * s[j]
            g2[j] += a2 * r[j] + b2 * s[j]
            g3[j] += a3 * r[j] + b3 * s[j]


@jit_fast
def weighted_sums(w, xt, vt, z):
    """vt[:, i] = sum_j w_ij x_j and z_i = 1 / sum_j w_ij; w: [n, n], xt, vt: [d, n].
    Rows four at a time and coordinates two at a time, so each load of w_ij serves two
    products and each of x_j four (faster than one coordinate per pass). The row sums
    pair with the last coordinate when d is odd, so no pass is spent on a coordinate twice."""
    d, n = xt.shape
    for i in range(0, n, 4):
        i1, i2, i3 = min(i + 1, n - 1), min(i + 2, n - 1), min(i + 3, n - 1)
        w0, w1, w2, w3 = w[i], w[i1], w[i2], w[i3]
        z0 = z1 = z2 = z3 = 0.0
        if d % 2:
            r = xt[d - 1]
            a0 = a1 = a2 = a3 = 0.0
            for j in range(n):
                z0 += w0[j]
                z1 += w1[j]
                z2 += w2[j]
                z3 += w3[j]
                a0 += w0[j] * r[j]
                a1 += w1[j] * r[j]
                a2 += w2[j] * r[j]
                a3 += w3[j] * r[j]
            vt[d - 1, i3], vt[d - 1, i2], vt[d - 1, i1], vt[d - 1, i] = a3, a2, a1, a0
        else:
            for j in range(n):
                z0 += w0[j]
                z1 += w1[j]
                z2 += w2[j]
                z3 += w3[j]
        z[i3], z[i2], z[i1], z[i] = 1.0 / z3, 1.0 / z2, 1.0 / z1, 1.0 / z0
        for k in range(0, d - 1, 2):
            r, s = xt[k], xt[k + 1]
            a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = 0.0
            for j in range(n):
                a0 += w0[j] * r[j]
                a1 += w1[j] * r[j]
                a2 += w2[j] * r[j]
                a3 += w3[j] * r[j]
                b0 += w0[j] * s[j]
                b1 += w1[j] * s[j]
                b2 += w2[j] * s[j]
                b3 += w3[j] * s[j]
            vt[k + 1, i3], vt[k + 1, i2], vt[k + 1, i1], vt[k + 1, i] = b3, b2, b1, b0
            vt[k, i3], vt[k, i2], vt[k, i1], vt[k, i] = a3, a2, a1, a0


@jit_fast
def project(xt, vt, scale, s):
    """vt_i <- P_{x_i}(scale_i vt_i) = u - <x_i, u> x_i with u = scale_i vt_i; s: [n] scratch."""
    d, n = xt.shape
    s[:] = 0.0
    for k in range(d):
        for j in range(n):
            vt[k, j] *= scale[j]
            s[j] += xt[k, j] * vt[k, j]
    for k in range(d):
        for j in range(n):
            vt[k, j] -= s[j] * xt[k, j]


@jit_fast
def scale_columns(vt, scale):
    """vt_i <- scale_i vt_i for every token (columns of vt: [d, n])."""
    for k in range(vt.shape[0]):
        for j in range(vt.shape[1]):
            vt[k, j] *= scale[j]


@jit_fast
def normalize_columns(xt, s):
    """x_j <- x_j / |x_j| for every token (columns of xt); s: [n] scratch."""
    d, n = xt.shape
    s[:] = 0.0
    for k in range(d):
        for j in range(n):
            s[j] += xt[k, j] * xt[k, j]
    for j in range(n):
        s[j] = 1.0 / np.sqrt(s[j])
    for k in range(d):
        for j in range(n):
            xt[k, j] *= s[j]


class System(NamedTuple):
    """One system of the rows path: the parameters, the float64 transposed state xt: [d, n]
    and the scratch of a step (ws, z, e) and of a save (g, rows, acc, parent, grp); fresh:
    what the last save left in e for the next step (velocity_rows)."""

    xt: np.ndarray
    beta: float
    c: float
    softmax: bool
    method: int
    dt: float
    eps: float
    ws: np.ndarray
    z: np.ndarray
    e: np.ndarray
    g: np.ndarray
    rows: np.ndarray
    acc: np.ndarray
    parent: np.ndarray
    grp: Groups
    level: int  # SAVE_ALL, or only those of the Gram matrix (SAVE_PAIRS, SAVE_COUNTS)
    fresh: np.ndarray
    weighted: object  # the save's functions (gramobs.saves), passed by address
    pairs: object


@jit_inline
def _velocity(lay, x, k, stage):
    """f(x) by velocity_rows (rk4's later stages compute their own weights)."""
    velocity_rows(x, lay.beta, lay.c, lay.softmax, methods.method_code(lay.method), k, lay.z,
                  lay.e, lay.fresh)


@jit_inline
def _diffuse(lay, x, k, tick):
    """No noise on the fast paths."""


@jit_inline
def _normalise(lay, x):
    normalize_columns(x, lay.z[0])


# A System is its own layout (kernels/methods.py): the state xt, ws [5, d, n] its stages.
methods.implement(System, velocity=_velocity, diffuse=_diffuse, shift=shift_dt,
                  rk4_combine=combine_dt, normalise=_normalise)


@jit_fast_inline
def _advance(system, x, tick, steps, stop):
    """Steps of xt; x <- xt rounded to x's dtype (and xt to that, so float32 stays float32)
    after every float32 step, and at the end."""
    r = system
    xt, single = r.xt, x.itemsize == 4
    for k in range(steps):
        if stop[0] != 0:
            _store(xt, x)
            return k
        methods.step(r, xt, tick + k)
        if single:
            _store(xt, x)
    _store(xt, x)
    return steps


@jit_fast_inline
def _record(system, x, obs, s):
    """obs[s] from the Gram matrix of xt: into e, for the next step to turn into its weights,
    when the save needs no weights; else into g, with the weights into e, for that step to
    take as they are."""
    r = system
    if r.level != SAVE_ALL:
        gram(r.xt, r.e, 1.0, 0.0)
        pairs = r.pairs
        pairs(x, r.e, r.eps, r.level, obs[s], r.rows, r.acc, r.parent)
        r.fresh[0] = FRESH_GRAM
        return
    gram(r.xt, r.g, 1.0, 0.0)
    weights(r.g, r.e, r.beta, r.c)
    weighted = r.weighted
    weighted(x, r.g, r.e, r.beta, r.c, r.eps, obs[s], r.rows, r.acc, r.parent, r.grp)
    r.fresh[0] = FRESH_WEIGHTS


run = implement(System, _advance, _record)


@jit_fast_inline
def _integrate_rows(x, beta, softmax, method, dt, save_stride, eps, obs, traj, stop, level,
                    weighted, pairs):
    """integrate_rows, its save's observables computed by the functions passed (weighted,
    pairs: gramobs.saves). Inlined into _integrate_rows_batch, the path's entry: called,
    its whole linked code was optimised and compiled to machine code again inside the
    batch's (3 s of a cold start)."""
    n, d = x.shape
    xt = np.empty((d, n))
    _load(x, xt)
    system = System(xt, beta, 1.0 if softmax else 0.0, softmax, method, dt, eps,
                    np.empty((methods.STAGES, d, n)), np.empty((2, n)), np.empty((n, n)),
                    np.empty((n, n)), np.empty((n, 6)), np.empty((4, n)),
                    np.empty(n, dtype=np.int64), groups_scratch(n, d), level,
                    np.zeros(1, dtype=np.int64), weighted, pairs)
    return run(system, x, save_stride, obs, traj, stop)


@jit_fast
def _integrate_rows_batch(xs, betas, softmax, method, dts, save_stride, epss, obs, traj, stop,
                          status, level, weighted, pairs):
    """integrate_rows for B systems of one shape in one compiled call, one after another, so
    a sweep of small systems pays its Python and I/O costs per batch, not per system. Each
    system gets exactly integrate_rows' arithmetic: the batch size changes no bit.

    xs: [B, n, d] advanced in place; betas, dts, epss: [B] float64; obs: [B, n_saves, N_OBS];
    traj: [B, n_saves, n, d], or [B, 0, n, d] for none; stop: [1] int; status: [B] int64,
    filled with each system's status (OK or NONFINITE); level: integrate_rows'. Returns OK,
    or STOPPED as soon as one system stops (the systems after it are not started).
    """
    for b in range(xs.shape[0]):
        status[b] = _integrate_rows(xs[b], betas[b], softmax, method, dts[b], save_stride,
                                    epss[b], obs[b], traj[b], stop, level, weighted, pairs)[0]
        if status[b] == STOPPED:
            return STOPPED
    return OK


# the entries, called from Python: each save's observables computed by gramobs' functions,
# passed by address (numerics/passing.py), not compiled into the path's code
integrate_rows_batch = Passing(_integrate_rows_batch, saves_of)
_integrate_one = Passing(_integrate_rows, saves_of)


def integrate_rows(x, beta, softmax, method, dt, save_stride, eps, obs, traj, stop,
                   level=SAVE_ALL):
    """drive.integrate for the fast case: same arguments (beta, softmax flag for the model),
    same outputs and status codes. x: [n, d] float64 or float32, advanced in place.
    level: SAVE_ALL records every observable, the others of codes.save_level less (NaN in
    the columns they leave out)."""
    return _integrate_one(x, beta, softmax, method, dt, save_stride, eps, obs, traj, stop, level)


@jit_fast
def _load(x, xt):
    for j in range(x.shape[0]):
        for k in range(x.shape[1]):
            xt[k, j] = x[j, k]


@jit_fast
def _store(xt, x):
    """x <- xt (rounded to x's dtype), and xt <- that rounded value, so float32 stays float32."""
    for j in range(x.shape[0]):
        for k in range(x.shape[1]):
            x[j, k] = xt[k, j]
            xt[k, j] = x[j, k]
