"""The NAMES observables from a Gram matrix G = x x^T, for the fast paths (fast.py, blocked.py).

blocked.py never holds G whole: it passes row tiles of it (stats_tile, link_tile), so every
per-row and per-pair quantity here is a function of one row of G at a time.

Same columns and definitions as observables.observe, rearranged so no pass needs a scalar
libm call: with w_ij = exp(beta (g_ij - c)) (c = 1 for softmax, whose row maximum on the
sphere is g_ii = 1, and c = 0 for unnormalized attention) and z_i = sum_j w_ij,
  energy  E_beta = exp(beta c) sum_ij w_ij / (2 beta n^2)     (sum_ij g_ij / (2 n^2) at beta = 0)
  entropy H_i = -sum_j p_ij log p_ij = log z_i - beta sum_j w_ij (g_ij - c) / z_i,  p = w / z.
"""

import numpy as np

from sweep.kernels._jit import jit_fast
from sweep.kernels.expfast import exp1
from sweep.kernels.observables import _find, pair_columns

# columns of the per-row statistics array rows: [n, 4]
ROW_E, ROW_H, ROW_COS, ROW_MIN = 0, 1, 2, 3


@jit_fast
def row_stats(g, i, beta, c, a, rows):
    """rows[i] = (sum_j exp(beta g_ij) / exp(beta c), H_i, sum_{j!=i} g_ij, min_{j!=i} g_ij).

    g: [n] the row g_i. of the Gram matrix; a: [n] float64 scratch.
    """
    for j in range(g.shape[0]):
        a[j] = exp1(beta * (g[j] - c))
    row_sums(g, a, i, beta, c, rows)


@jit_fast
def row_sums(g, w, i, beta, c, rows):
    """row_stats given also the row's weights w = exp(beta (g - c)): [n]."""
    z, s, cos, mn = 0.0, 0.0, 0.0, np.inf
    for j in range(g.shape[0]):
        z += w[j]
        s += w[j] * (g[j] - c)
        cos += g[j]
        mn = min(mn, g[j] if j != i else np.inf)
    rows[i, ROW_E] = z if beta > 0.0 else cos
    rows[i, ROW_H] = np.log(z) - beta * s / z
    rows[i, ROW_COS] = cos - g[i]
    rows[i, ROW_MIN] = mn


@jit_fast
def link_close_pairs(gram, eps, parent):
    """Union-find over the graph <x_i, x_j> > 1 - eps; returns the number of ordered pairs."""
    for i in range(gram.shape[0]):
        parent[i] = i
    return link_tile(gram, 0, eps, parent)


@jit_fast
def link_tile(tile, lo, eps, parent):
    """link_close_pairs for the pairs i < j with i in rows lo .. lo + len(tile) - 1 of the Gram
    matrix, given as tile: [rows, n]; adds them to the forest parent: [n] int64."""
    close = 0
    for r in range(tile.shape[0]):
        g, i = tile[r], lo + r
        for j in range(i + 1, tile.shape[1]):
            if g[j] > 1.0 - eps:
                close += 2
                _union(parent, i, j)
    return close


@jit_fast
def _union(parent, i, j):
    """Hang the larger root under the smaller: every root stays the least index of its component
    whatever order the pairs arrive in, so forests built from any split of the pairs agree."""
    a, b = _find(parent, i), _find(parent, j)
    if a != b:
        parent[max(a, b)] = min(a, b)


@jit_fast
def merge_forests(forests):
    """Fold forests[1:] into forests[0], which then holds the components of all their pairs.

    forests: [k, n] int64, one union-find forest per share of the close pairs.
    """
    for s in range(1, forests.shape[0]):
        for i in range(forests.shape[1]):
            r = _find(forests[s], i)
            if r != i:
                _union(forests[0], i, r)


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
    pair_columns(x, cos_sum, cos_min, close, parent, np.empty(n, dtype=np.int64), out)
    out[6] = (np.exp(beta * c) * e_sum / (2.0 * n * n * beta) if beta > 0.0
              else e_sum / (2.0 * n * n))
    out[7] = h_sum / n


@jit_fast
def stats_tile(tile, lo, beta, c, a, rows):
    """row_stats for rows lo .. lo + len(tile) - 1 of the Gram matrix, given as tile: [rows, n]
    (independent of every other row: tiles may run at once)."""
    for r in range(tile.shape[0]):
        row_stats(tile[r], lo + r, beta, c, a, rows)


@jit_fast
def summarize(x, gram, beta, c, eps, out, rows):
    """out[:] from the per-row statistics and the clusters of gram; serial."""
    parent = np.empty(x.shape[0], dtype=np.int64)
    finish(x, rows, link_close_pairs(gram, eps, parent), parent, beta, c, out)


@jit_fast
def summarize_forests(x, rows, close, forests, beta, c, out):
    """summarize from per-row statistics and forests of close pairs built tile by tile
    (blocked.py): close, the number of ordered close pairs; forests: [k, n] int64."""
    merge_forests(forests)
    finish(x, rows, close, forests[0], beta, c, out)


@jit_fast
def observe_weighted(x, gram, w, beta, c, eps, out, rows):
    """out[:] = the observables of x: [n, d] given gram = x x^T and its weights
    w = exp(beta (gram - c)), both [n, n]; serial. rows: [n, 4] float64 scratch."""
    for i in range(x.shape[0]):
        row_sums(gram[i], w[i], i, beta, c, rows)
    summarize(x, gram, beta, c, eps, out, rows)
