"""Attention weights and the projected velocity field dx_i/dt = P_{x_i}(v_i).

softmax (SA):        v_i = sum_j A_ij x_j,  A_ij = exp(beta <x_i,x_j>) / Z_i
unnormalized (USA):  v_i = (1/n) sum_j exp(beta <x_i,x_j>) x_j
(Geshkovski, Letrouit, Polyanskiy, Rigollet, arXiv 2312.10794.)
"""

import numpy as np

from sweep.kernels._jit import jit
from sweep.kernels.model import SOFTMAX
from sweep.kernels.sphere import dot, project_row


@jit
def scores_row(x, i, w):
    """w[j] = <x_i, x_j> for every j."""
    for j in range(x.shape[0]):
        w[j] = dot(x[i], x[j])


@jit
def softmax_row(x, i, beta, w):
    """w[j] = A_ij, the row-i softmax of beta <x_i, x_j>.

    The row maximum is subtracted before exp, so beta up to 1e3 cannot overflow.
    """
    scores_row(x, i, w)
    m = w[0]
    for j in range(1, w.shape[0]):
        m = max(m, w[j])
    z = 0.0
    for j in range(w.shape[0]):
        w[j] = np.exp(beta * (w[j] - m))
        z += w[j]
    for j in range(w.shape[0]):
        w[j] /= z


@jit
def unnormalized_row(x, i, beta, w):
    """w[j] = exp(beta <x_i, x_j>) / n."""
    scores_row(x, i, w)
    inv_n = 1.0 / w.shape[0]
    for j in range(w.shape[0]):
        w[j] = np.exp(beta * w[j]) * inv_n


@jit
def attention_row(x, i, dyn, w):
    """w[j] = the weight token i gives token j under the model `dyn`."""
    if dyn.attention == SOFTMAX:
        softmax_row(x, i, dyn.beta, w)
    else:
        unnormalized_row(x, i, dyn.beta, w)


@jit
def velocity(x, dyn, out, w):
    """out[i] = P_{x_i}(sum_j w_ij x_j) for all i.  x, out: [n, d]; w: [n] scratch."""
    n, d = x.shape
    for i in range(n):
        attention_row(x, i, dyn, w)
        for k in range(d):
            out[i, k] = 0.0
        for j in range(n):
            wj = w[j]
            for k in range(d):
                out[i, k] += wj * x[j, k]
        project_row(x[i], out[i])
