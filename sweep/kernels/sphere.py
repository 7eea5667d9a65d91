"""Geometry of the unit sphere S^{d-1}: normalisation and tangent projection. x: [n, d]."""

import numpy as np

from sweep.numerics._jit import jit, jit_inline


@jit
def dot(a, b):
    """<a, b> for two vectors, accumulated in float64."""
    s = 0.0
    for k in range(a.shape[0]):
        s += a[k] * b[k]
    return s


@jit
def normalize_rows(x):
    """x_i <- x_i / |x_i| in place."""
    for i in range(x.shape[0]):
        inv = 1.0 / np.sqrt(dot(x[i], x[i]))
        for k in range(x.shape[1]):
            x[i, k] *= inv


@jit
def project_row(x, v, radial):
    """v <- v - radial <x, v> x in place (x one token, v a vector at it): P_x(v) for
    radial = 1; v itself, bit for bit, for radial = 0 (x finite)."""
    c = radial * dot(x, v)
    for k in range(v.shape[0]):
        v[k] -= c * x[k]


@jit
def axpy(out, x, a, y):
    """out = x + a y, elementwise, for [n, d] arrays (no temporaries)."""
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[i, k] = x[i, k] + a * y[i, k]


@jit
def add_scaled(x, a, y):
    """x = x + a y in place: axpy(x, x, a, y) to the bit, in a loop LLVM vectorises (axpy's
    run-time check that its output and input do not overlap fails when they are one array,
    and it runs scalar: 4x slower on a [2048, 128] float32 state)."""
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            x[i, k] = x[i, k] + a * y[i, k]


@jit
def rk4_combine(x, dt, k1, k2, k3, k4):
    """x += (dt / 6) (k1 + 2 k2 + 2 k3 + k4): classical RK4's step from its four stages.

    2-d arrays of one shape ([n, d], or [d, n] for the rows path's transposed state)."""
    h = dt / 6.0
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            x[i, k] += h * (k1[i, k] + 2.0 * k2[i, k] + 2.0 * k3[i, k] + k4[i, k])


@jit
def all_finite(x):
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            if not np.isfinite(x[i, k]):
                return False
    return True


# The shift and rk4_combine primitives (kernels/methods.py) of a layout with one dt (fields
# dt, and the state as sphere's [n, d] or rows' [d, n]): the general path's and rows'.
@jit_inline
def shift_dt(lay, out, x, frac, k):
    axpy(out, x, frac * lay.dt, k)


@jit_inline
def combine_dt(lay, x, k1, k2, k3, k4):
    rk4_combine(x, lay.dt, k1, k2, k3, k4)
