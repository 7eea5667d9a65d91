"""Geometry of the unit sphere S^{d-1}: normalisation and tangent projection. x: [n, d]."""

import numpy as np

from sweep.kernels._jit import jit


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
def project_row(x, v):
    """v <- P_x(v) = v - <x, v> x in place (x one token, v a vector at it)."""
    c = dot(x, v)
    for k in range(v.shape[0]):
        v[k] -= c * x[k]


@jit
def axpy(out, x, a, y):
    """out = x + a y, elementwise, for [n, d] arrays (no temporaries)."""
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[i, k] = x[i, k] + a * y[i, k]


@jit
def all_finite(x):
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            if not np.isfinite(x[i, k]):
                return False
    return True
