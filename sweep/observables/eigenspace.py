"""v_eigenvalue, v_eigen_residual: which eigenspace of the value matrix the tokens x: [n, d]
lie in. With V the mean of the heads' value matrices (the linear part of the heads' mean
velocity) and X the tokens as columns,

    v_eigenvalue     lambda = <X, V X> / |X|^2    = sum_i <x_i, V x_i> / sum_i |x_i|^2,
    v_eigen_residual        |V X - lambda X| / |X| (Frobenius norms),

so the residual is 0 exactly when every token is an eigenvector of V for one eigenvalue, and
lambda then says which: in euclidean space with V of simple positive top eigenvalue lambda_1
(arXiv 2305.05465, its hyperplane theorem), the rescaled tokens y_i turn onto the top
eigenline, lambda -> lambda_1 and the residual decays like exp(-(lambda_1 - lambda_2) t)
(docs/models.md). Scale-free in x (the same for x and a x, a != 0), NaN when every token is 0.

With V = I (the fast paths' only case) every vector is an eigenvector: lambda = 1 and the
residual 0, the records' kernels on every path; the general path (the only one with other
matrices) writes `fit` over them where V is not the identity. Summed in a fixed order without
fastmath, so the same x and V give the same bits wherever they are computed.
"""

import numpy as np

from sweep.numerics._jit import jit


@jit
def _image(v, x, i, k):
    """(V x_i)_k for V the mean of v: [h, d, d], a running mean over the heads in order (as
    the velocity's), so identical heads give exactly one head's value."""
    s = 0.0
    for h in range(v.shape[0]):
        t = 0.0
        for q in range(x.shape[1]):
            t += v[h, k, q] * np.float64(x[i, q])
        s += (t - s) / (h + 1)
    return s


@jit
def fit(x, v):
    """(lambda, residual) of x: [n, d] for the value matrices v: [h, d, d] (module docstring):
    two passes, the second recomputing V x_i, so the residual carries no cancellation."""
    n, d = x.shape
    xx, xvx = 0.0, 0.0
    for i in range(n):
        for k in range(d):
            xk = np.float64(x[i, k])
            xx += xk * xk
            xvx += xk * _image(v, x, i, k)
    if xx == 0.0:
        return np.nan, np.nan
    lam = xvx / xx
    r = 0.0
    for i in range(n):
        for k in range(d):
            e = _image(v, x, i, k) - lam * x[i, k]
            r += e * e
    return lam, np.sqrt(r / xx)


@jit
def _any(x):
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            if x[i, k] != 0.0:
                return True
    return False


@jit
def identity_eigenvalue(x):
    """v_eigenvalue for V = I: 1, NaN when every token is 0."""
    return 1.0 if _any(x) else np.nan


@jit
def identity_residual(x):
    """v_eigen_residual for V = I: 0, NaN when every token is 0."""
    return 0.0 if _any(x) else np.nan
