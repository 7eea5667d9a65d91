"""Observables of a state x: [n, d], pure functions of x (and the model, for energy/entropy).

Column order of `observe`'s output is `NAMES`. Pair quantities run over i != j; with n = 1
they are NaN (there are no pairs) and the single token is one cluster.
"""

import numpy as np

from sweep.kernels._jit import jit
from sweep.kernels.attention import attention_row, scores_row

NAMES = (
    "order_parameter",
    "mean_cosine",
    "min_cosine",
    "clustered_fraction",
    "n_clusters",
    "largest_cluster",
    "energy",
    "attention_entropy",
)
N_OBS = len(NAMES)
CLUSTERED = NAMES.index("clustered_fraction")
N_CLUSTERS = NAMES.index("n_clusters")


@jit
def _find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@jit
def order_parameter(x):
    """r = |(1/n) sum_i x_i|."""
    n, d = x.shape
    r2 = 0.0
    for k in range(d):
        m = 0.0
        for i in range(n):
            m += x[i, k]
        r2 += (m / n) ** 2
    return np.sqrt(r2)


@jit
def energy_row_sum(g, beta):
    """sum_j exp(beta g_j), or sum_j g_j at beta = 0 (the limit of E_beta - 1/(2 beta))."""
    s = 0.0
    for j in range(g.shape[0]):
        s += g[j] if beta == 0.0 else np.exp(beta * g[j])
    return s


@jit
def entropy_row(w):
    """-sum_j p_j log p_j for the row-normalised weights p = w / sum(w)."""
    z = 0.0
    for j in range(w.shape[0]):
        z += w[j]
    h = 0.0
    for j in range(w.shape[0]):
        p = w[j] / z
        if p > 0.0:
            h -= p * np.log(p)
    return h


@jit
def observe(x, dyn, eps, out, g, w, parent):
    """out[:] = the NAMES observables of x.  g, w: [n] float scratch; parent: [n] int scratch.

    Clusters are connected components of the graph with edges <x_i, x_j> > 1 - eps.
    Energy E_beta = (1 / (2 beta n^2)) sum_ij exp(beta <x_i, x_j>); entropy is the mean over
    rows of the Shannon entropy of the model's (row-normalised) attention weights.
    """
    n = x.shape[0]
    beta = dyn.beta
    for i in range(n):
        parent[i] = i
    cos_sum, cos_min, close, e_sum, h_sum = 0.0, np.inf, 0, 0.0, 0.0
    for i in range(n):
        scores_row(x, i, g)
        e_sum += energy_row_sum(g, beta)
        for j in range(n):
            if j == i:
                continue
            cos_sum += g[j]
            cos_min = min(cos_min, g[j])
            if g[j] > 1.0 - eps:
                close += 1
                a, b = _find(parent, i), _find(parent, j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        attention_row(x, i, dyn, w)
        h_sum += entropy_row(w)
    pair_columns(x, cos_sum, cos_min, close, parent, out)
    out[6] = e_sum / (2.0 * n * n * (beta if beta > 0.0 else 1.0))
    out[7] = h_sum / n


@jit
def pair_columns(x, cos_sum, cos_min, close, parent, out):
    """out[0:6] from the pair sums over i != j and the union-find forest of close pairs."""
    n = x.shape[0]
    pairs = n * (n - 1)
    out[0] = order_parameter(x)
    out[1] = cos_sum / pairs if pairs > 0 else np.nan
    out[2] = cos_min if pairs > 0 else np.nan
    out[3] = close / pairs if pairs > 0 else np.nan
    out[4], out[5] = _clusters(parent)
    out[5] /= n


@jit
def _clusters(parent):
    """(number of components, size of the largest) from a union-find forest."""
    n = parent.shape[0]
    count = 0
    for i in range(n):
        if _find(parent, i) == i:
            count += 1
    largest = 0
    for r in range(n):
        if parent[r] != r:
            continue
        size = 0
        for i in range(n):
            if _find(parent, i) == r:
                size += 1
        largest = max(largest, size)
    return float(count), float(largest)
