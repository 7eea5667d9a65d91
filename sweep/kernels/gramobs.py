"""The NAMES observables from a Gram matrix G = x x^T, for the fast paths (fast.py, blocked.py).

Same columns and definitions as observables.observe, rearranged so no pass needs a scalar
libm call: with w_ij = exp(beta (g_ij - c)) (c = 1 for softmax, whose row maximum on the
sphere is g_ii = 1, and c = 0 for unnormalized attention) and z_i = sum_j w_ij,
  energy  E_beta = exp(beta c) sum_ij w_ij / (2 beta n^2)     (sum_ij g_ij / (2 n^2) at beta = 0)
  entropy H_i = -sum_j p_ij log p_ij = log z_i - beta sum_j w_ij (g_ij - c) / z_i,  p = w / z.
"""

import numpy as np

from sweep.kernels._jit import jit_fast
from sweep.kernels.expfast import exp_inplace
from sweep.kernels.observables import _find, pair_columns

# columns of the per-row statistics array rows: [n, 4]
ROW_E, ROW_H, ROW_COS, ROW_MIN = 0, 1, 2, 3


@jit_fast
def row_stats(g, i, beta, c, a, t, rows):
    """rows[i] = (sum_j exp(beta g_ij) / exp(beta c), H_i, sum_{j!=i} g_ij, min_{j!=i} g_ij).

    g: [n] the row g_i. of the Gram matrix; a, t: [n] float64 scratch.
    """
    n = g.shape[0]
    for j in range(n):
        a[j] = beta * (g[j] - c)
    exp_inplace(a, t)
    z, s, cos, mn = 0.0, 0.0, 0.0, np.inf
    for j in range(n):
        z += a[j]
        s += a[j] * (g[j] - c)
        cos += g[j]
        mn = min(mn, g[j] if j != i else np.inf)
    rows[i, ROW_E] = z if beta > 0.0 else cos
    rows[i, ROW_H] = np.log(z) - beta * s / z
    rows[i, ROW_COS] = cos - g[i]
    rows[i, ROW_MIN] = mn


@jit_fast
def link_close_pairs(gram, eps, parent):
    """Union-find over the graph <x_i, x_j> > 1 - eps; returns the number of ordered pairs."""
    n = gram.shape[0]
    for i in range(n):
        parent[i] = i
    close = 0
    for i in range(n):
        for j in range(i + 1, n):
            if gram[i, j] > 1.0 - eps:
                close += 2
                a, b = _find(parent, i), _find(parent, j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    return close


@jit_fast
def finish(x, rows, close, parent, beta, c, out):
    """Fill out[:] (NAMES order) from the per-row sums and the union-find forest."""
    n = x.shape[0]
    e_sum, h_sum, cos_sum, cos_min = 0.0, 0.0, 0.0, np.inf
    for i in range(n):
        e_sum += rows[i, ROW_E]
        h_sum += rows[i, ROW_H]
        cos_sum += rows[i, ROW_COS]
        cos_min = min(cos_min, rows[i, ROW_MIN])
    pair_columns(x, cos_sum, cos_min, close, parent, out)
    out[6] = (np.exp(beta * c) * e_sum / (2.0 * n * n * beta) if beta > 0.0
              else e_sum / (2.0 * n * n))
    out[7] = h_sum / n


@jit_fast
def stats_rows(gram, lo, hi, beta, c, a, t, rows):
    """row_stats for rows lo..hi-1 (independent of every other row: tiles may run at once)."""
    for i in range(lo, hi):
        row_stats(gram[i], i, beta, c, a, t, rows)


@jit_fast
def summarize(x, gram, beta, c, eps, out, rows):
    """out[:] from the per-row statistics and the clusters of gram; serial."""
    parent = np.empty(x.shape[0], dtype=np.int64)
    finish(x, rows, link_close_pairs(gram, eps, parent), parent, beta, c, out)


@jit_fast
def observe_gram(x, gram, beta, c, eps, out, rows, a, t):
    """out[:] = the observables of x: [n, d] given gram = x x^T: [n, n]; serial.

    rows: [n, 4] float64, a, t: [n] float64 scratch.
    """
    stats_rows(gram, 0, x.shape[0], beta, c, a, t, rows)
    summarize(x, gram, beta, c, eps, out, rows)
