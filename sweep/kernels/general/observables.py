"""Observables of a state x: [n, d], pure functions of x (and the model, for energy/entropy).

Column order of `observe`'s output is `kernels.codes.OBSERVABLES`. Pair quantities run over
i != j; with n = 1 they are NaN (there are no pairs) and the single token is one cluster.
"""

import numpy as np

from sweep.kernels._jit import jit
from sweep.kernels.general.attention import head_inputs, row_weights, scores_row
from sweep.kernels.sphere import dot
from sweep.kernels.summary import find, pair_columns


@jit
def energy_row_sum(g, beta):
    """sum_j exp(beta g_j), or sum_j g_j at beta = 0 (the limit of E_beta - 1/(2 beta))."""
    s = 0.0
    for j in range(g.shape[0]):
        s += g[j] if beta == 0.0 else np.exp(beta * g[j])
    return s


@jit
def entropy_row(w):
    """-sum_j p_j log p_j for the row-normalised weights p = w / sum(w); 0 for a row with no
    weight (relu when every score is negative, hardmax with no partner)."""
    z = 0.0
    for j in range(w.shape[0]):
        z += w[j]
    h = 0.0
    if z <= 0.0:
        return h
    for j in range(w.shape[0]):
        p = w[j] / z
        if p > 0.0:
            h -= p * np.log(p)
    return h


@jit
def head_terms(x, i, g, keys, dyn, e_sum, h_sum, s, cols, sh):
    """Add row i's energy and entropy terms of every head to e_sum[h], h_sum[h].

    g: [n] cosines of row i; keys: head inputs (see attention.head_inputs); sh: [n] float64.
    Energy uses all pairs with the head's score matrix; entropy the model's masked weights.
    """
    n = x.shape[0]
    for h in range(dyn.betas.shape[0]):
        kh = keys[min(h, keys.shape[0] - 1)]
        if dyn.identity:
            e_sum[h] += energy_row_sum(g, dyn.betas[h])
        else:
            for j in range(n):
                sh[j] = dot(x[i], kh[j])
            e_sum[h] += energy_row_sum(sh, dyn.betas[h])
        m = row_weights(x[i], i, kh, dyn, dyn.betas[h], s, cols)
        h_sum[h] += entropy_row(s[:m])


@jit
def head_mean(sums, betas, n):
    """(mean over heads of E_{beta_h}, mean over heads of the entropy) from the row sums.
    A running mean, so identical heads give exactly the one-head values."""
    energy, entropy = 0.0, 0.0
    for h in range(betas.shape[0]):
        e = sums[0, h] / (2.0 * n * n * (betas[h] if betas[h] > 0.0 else 1.0))
        energy += (e - energy) / (h + 1)
        entropy += (sums[1, h] / n - entropy) / (h + 1)
    return energy, entropy


@jit
def observe(x, dyn, eps, out, work):
    """out[:] = the OBSERVABLES of x.  work: workspace.Work scratch.

    Clusters are connected components of the graph with edges <x_i, x_j> > 1 - eps.
    Energy: the mean over heads of E_beta_h = (1 / (2 beta_h n^2)) sum_ij exp(beta_h s_ij),
    s_ij = <x_i, M_h x_j>; entropy: the mean over heads and rows of the Shannon entropy of
    the model's (row-normalised, masked) attention weights.
    """
    n = x.shape[0]
    keys = head_inputs(x, dyn.qk, dyn.identity, work.keys)
    g, parent, sums = work.g, work.parent, work.sums
    sums[:] = 0.0
    for i in range(n):
        parent[i] = i
    cos_sum, cos_min, close = 0.0, np.inf, 0
    for i in range(n):
        scores_row(x, i, g)
        head_terms(x, i, g, keys, dyn, sums[0], sums[1], work.w, work.cols, work.sh)
        for j in range(n):
            if j == i:
                continue
            cos_sum += g[j]
            cos_min = min(cos_min, g[j])
            if g[j] > 1.0 - eps:
                close += 1
                a, b = find(parent, i), find(parent, j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    pair_columns(x, cos_sum, cos_min, close, parent, work.size, out)
    out[6], out[7] = head_mean(sums, dyn.betas, n)
