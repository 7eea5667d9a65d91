"""Serial fast path for one small system: identity matrices, one head, dense mask, no noise.

The state is held transposed, xt: [d, n] float64 (structure of arrays), so every inner loop
runs over tokens j with unit stride and vectorises whatever d is, exp included (expfast.py).
Weights are w_ij = exp(beta (<x_i, x_j> - c)) with c = 1 for softmax (the row maximum on the
sphere is <x_i, x_i> = 1, so no pass looks for it; off the sphere, in RK4 stages, the shift
is still valid, only no longer the maximum) and c = 0 for unnormalized attention. Softmax
divides by z_i = sum_j w_ij afterwards: the reference's A_ij whatever shift was used.
Float32 jobs are computed in float64 and rounded back to float32 after every step.
"""

import numpy as np

from sweep.kernels._jit import jit_fast
from sweep.kernels.drive import NONFINITE, OK, STOPPED
from sweep.kernels.expfast import exp_inplace
from sweep.kernels.gramobs import observe_gram
from sweep.kernels.integrators import EULER
from sweep.kernels.sphere import all_finite, axpy


@jit_fast
def velocity_rows(xt, beta, c, softmax, vt, z, e, t):
    """vt = P_x(sum_j w_ij x_j / z_i) for every token; xt, vt: [d, n]; z, e, t: [n] scratch.

    Full rows of length n rather than the symmetric half: triangular loops leave scalar
    remainders that cost more than the exponentials they save (slower at n = 32, level at
    n = 128).
    """
    d, n = xt.shape
    for i in range(n):
        row, xi = xt[0], xt[0, i]
        for j in range(n):
            e[j] = xi * row[j]
        for k in range(1, d):
            row, xi = xt[k], xt[k, i]
            for j in range(n):
                e[j] += xi * row[j]
        for j in range(n):
            e[j] = beta * (e[j] - c)
        exp_inplace(e, t)
        zi = 0.0
        for j in range(n):
            zi += e[j]
        z[i] = 1.0 / zi if softmax else 1.0 / n
        for k in range(d):
            row, acc = xt[k], 0.0
            for j in range(n):
                acc += e[j] * row[j]
            vt[k, i] = acc
    project(xt, vt, z, e)


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


@jit_fast
def step_rows(xt, beta, c, softmax, method, dt, ws, z, e, t):
    """One euler or rk4 step in place, then renormalisation; ws: [5, d, n] scratch."""
    k1, k2, k3, k4, y = ws[0], ws[1], ws[2], ws[3], ws[4]
    velocity_rows(xt, beta, c, softmax, k1, z, e, t)
    if method == EULER:
        axpy(xt, xt, dt, k1)
    else:
        axpy(y, xt, 0.5 * dt, k1)
        velocity_rows(y, beta, c, softmax, k2, z, e, t)
        axpy(y, xt, 0.5 * dt, k2)
        velocity_rows(y, beta, c, softmax, k3, z, e, t)
        axpy(y, xt, dt, k3)
        velocity_rows(y, beta, c, softmax, k4, z, e, t)
        h = dt / 6.0
        d, n = xt.shape
        for k in range(d):
            for j in range(n):
                xt[k, j] += h * (k1[k, j] + 2.0 * k2[k, j] + 2.0 * k3[k, j] + k4[k, j])
    normalize_columns(xt, z)


@jit_fast
def integrate_rows(x, beta, softmax, method, dt, save_stride, eps, obs, traj, stop):
    """drive.integrate for the fast case: same arguments (beta, softmax flag for the model),
    same outputs and status codes. x: [n, d] float64 or float32, advanced in place.
    """
    n, d = x.shape
    c = 1.0 if softmax else 0.0
    xt, ws = np.empty((d, n)), np.empty((5, d, n))
    z, e, t, a = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    gram, rows = np.empty((n, n)), np.empty((n, 4))
    _load(x, xt)
    for s in range(obs.shape[0]):
        if s > 0:
            for _ in range(save_stride):
                if stop[0] != 0:  # per step, as drive.integrate: long save intervals stop fast
                    return STOPPED, s
                step_rows(xt, beta, c, softmax, method, dt, ws, z, e, t)
                _store(xt, x)
        if not all_finite(x):
            return NONFINITE, s
        _gram(xt, gram)
        observe_gram(x, gram, beta, c, eps, obs[s], rows, a, t)
        if traj.shape[0] > 0:
            traj[s] = x
        if stop[0] != 0:
            return STOPPED, s + 1
    return OK, obs.shape[0]


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


@jit_fast
def _gram(xt, gram):
    """gram[i, j] = <x_i, x_j>: full rows, which vectorise, and are exactly symmetric because
    every pair sums the same products in the same order."""
    d, n = xt.shape
    for i in range(n):
        g, row, xi = gram[i], xt[0], xt[0, i]
        for j in range(n):
            g[j] = xi * row[j]
        for k in range(1, d):
            row, xi = xt[k], xt[k, i]
            for j in range(n):
                g[j] += xi * row[j]
