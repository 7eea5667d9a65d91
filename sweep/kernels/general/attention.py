"""Attention weights, the attention output v_i and the velocity field dx_i/dt = P_{x_i}(v_i).

Per head h, with scores s_ij = <x_i, M_h x_j> (M_h = Q_h^T K_h) over the allowed partners j:
softmax (SA):        v_i^h = sum_j A_ij V_h x_j,  A_ij = exp(beta_h s_ij) / Z_i (allowed j only)
unnormalized (USA):  v_i^h = (1/n) sum_j exp(beta_h s_ij) V_h x_j
relu:                v_i^h = (1/n) sum_j max(0, beta_h s_ij) V_h x_j
hardmax:             v_i^h = V_h x_j*,  j* = argmax_{j != i} s_ij
and v_i = (1/h) sum_h v_i^h + W x_i (W the optional FFN matrix). Leaders never move.
In euclidean space (model.space) the state is y = exp(-c t) x, whose field is
dy_i/dt = v_i - c y_i with every beta_h times gain = exp(2 c t): the scores of x itself.
(Geshkovski, Letrouit, Polyanskiy, Rigollet, arXiv 2312.10794; hardmax: Alcalde, Geshkovski,
Ruiz-Balet, arXiv 2508.09628.)
"""

import numpy as np

from sweep.kernels.codes import (
    EUCLIDEAN,
    HARDMAX,
    LAYER,
    LEADERS,
    RELU,
    SOFTMAX,
    TOPK,
    UNNORMALIZED,
)
from sweep.kernels.general.masks import keep_top, partners
from sweep.kernels.sphere import dot, project_row
from sweep.numerics._jit import jit


@jit
def scores_row(x, i, w):
    """w[j] = <x_i, x_j> for every j."""
    for j in range(x.shape[0]):
        w[j] = dot(x[i], x[j])


@jit
def head_inputs(x, mats, identity, out):
    """out: [h, n, d] with row j of head h = M_h x_j, or x itself as [1, n, d] when identity
    (out is then not touched). Returns the one that holds them.

    Precomputing M_h x_j costs h n d^2 per evaluation instead of n^2 d^2 per pair.
    """
    n, d = x.shape
    if identity:
        return x.reshape((1, n, d))
    for h in range(mats.shape[0]):
        for j in range(n):
            for k in range(d):
                out[h, j, k] = dot(mats[h, k], x[j])
    return out


@jit
def _softmax(s, m, beta):
    """The row maximum is subtracted before exp, so beta up to 1e3 cannot overflow."""
    top = s[0]
    for c in range(1, m):
        top = max(top, s[c])
    z = 0.0
    for c in range(m):
        s[c] = np.exp(beta * (s[c] - top))
        z += s[c]
    for c in range(m):
        s[c] /= z


@jit
def _unnormalized(s, m, beta, n):
    inv_n = 1.0 / n
    for c in range(m):
        s[c] = np.exp(beta * s[c]) * inv_n


@jit
def _relu(s, m, beta, n):
    inv_n = 1.0 / n
    for c in range(m):
        s[c] = max(0.0, beta * s[c]) * inv_n


@jit
def _hardmax(s, cols, m, i):
    """One partner, the best-scoring j != i (the first on ties); 0 when i has none."""
    best = -1
    for c in range(m):
        if cols[c] != i and (best < 0 or s[c] > s[best]):
            best = c
    if best < 0:
        return 0
    cols[0] = cols[best]
    s[0] = 1.0
    return 1


@jit
def row_weights(xi, i, keys, dyn, beta, s, cols):
    """Weights of row i for one head: s[c] for partner cols[c], c < m; returns m.

    xi: [d]; keys: [n, d] rows M_h x_j; s: [n] float scratch; cols: [n] int scratch.
    """
    n = keys.shape[0]
    m = partners(i, n, dyn.mask, dyn.mask_param, cols)
    for c in range(m):
        s[c] = dot(xi, keys[cols[c]])
    if dyn.mask == TOPK:
        m = keep_top(s, cols, m, dyn.mask_param)
    if dyn.attention == SOFTMAX:
        _softmax(s, m, beta)
    elif dyn.attention == UNNORMALIZED:
        _unnormalized(s, m, beta, n)
    elif dyn.attention == RELU:
        _relu(s, m, beta, n)
    elif dyn.attention == HARDMAX:
        m = _hardmax(s, cols, m, i)
    return m


@jit
def frozen(i, dyn):
    """Leaders (tokens 0..L-1 under a leaders:L mask) never move."""
    return dyn.mask == LEADERS and i < dyn.mask_param


@jit
def moving(x, dyn):
    """The rows that move: all but the leaders (a prefix), so renormalising only these keeps
    the leaders bit-for-bit where they started."""
    return x[dyn.mask_param:] if dyn.mask == LEADERS else x[0:]


@jit
def velocity_row(x, i, keys, values, dyn, radial, gain, out, s, cols, acc):
    """out[:] = v_i - radial <x_i, v_i> x_i: P_{x_i}(v_i) for radial = 1, v_i itself for 0
    (the layer method adds the attention output to x unprojected; a factor, not a branch,
    which cost the general path time). The heads are combined as a running mean, so
    h identical heads give exactly the one-head velocity (acc - out is then exactly zero).
    gain multiplies every beta_h (1.0 on the sphere, where the product is beta_h exactly)."""
    d = x.shape[1]
    out[:] = 0.0
    if frozen(i, dyn):
        return
    for h in range(dyn.betas.shape[0]):
        m = row_weights(x[i], i, keys[min(h, keys.shape[0] - 1)], dyn, dyn.betas[h] * gain,
                        s, cols)
        vh = values[min(h, values.shape[0] - 1)]
        acc[:] = 0.0
        for c in range(m):
            wc, j = s[c], cols[c]
            for k in range(d):
                acc[k] += wc * vh[j, k]
        for k in range(d):
            out[k] += (acc[k] - out[k]) / (h + 1)
    if dyn.ffn.shape[0] > 0:
        for k in range(d):
            out[k] += dot(dyn.ffn[k], x[i])
    project_row(x[i], out, radial)


@jit
def velocity(x, dyn, method, out, work, gain):
    """out[i] = P_{x_i}(v_i) for all i, or v_i for the layer method, or v_i - c x_i in
    euclidean space (x then the rescaled y, gain = exp(2 c t)).  x, out: [n, d];
    method: a METHOD_CODES value (a variable, never a literal: a literal argument would
    compile another specialisation); work: workspace.Work scratch."""
    keys = head_inputs(x, dyn.qk, dyn.identity, work.keys)
    values = head_inputs(x, dyn.v, dyn.identity, work.values)
    euclidean = dyn.space == EUCLIDEAN
    radial = 0.0 if method == LAYER or euclidean else 1.0
    for i in range(x.shape[0]):
        velocity_row(x, i, keys, values, dyn, radial, gain, out[i], work.w, work.cols,
                     work.acc)
    if euclidean:
        for i in range(x.shape[0]):
            for k in range(x.shape[1]):
                out[i, k] -= dyn.rate * x[i, k]
