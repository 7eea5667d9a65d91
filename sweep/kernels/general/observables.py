"""Observables of a state x: [n, d], pure functions of x (and the model, for energy/entropy).

Column order of `observe`'s output is `kernels.codes.OBSERVABLES` (observables/records.py).
Pair quantities run over i != j; with n = 1 they are NaN (there are no pairs) and the single
token is one cluster. x may be any [n, d] state (a layer model's too): nothing here depends
on how it was reached.
"""

import numpy as np

from sweep.kernels.codes import COLUMN, EUCLIDEAN
from sweep.kernels.general.attention import head_inputs, row_weights, scores_row
from sweep.kernels.sphere import dot
from sweep.numerics._jit import jit
from sweep.observables.eigenspace import fit
from sweep.observables.extra import standalone
from sweep.observables.groups import label_clusters, resolve
from sweep.observables.points import n_points
from sweep.observables.records import POINTS_RTOL, SPAN_RTOL
from sweep.observables.span import span_dimension
from sweep.observables.summary import pair_columns, union


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
def outside_share(s, cols, m, label, i):
    """The share of row i's weights s[:m] (on partners cols[:m]) that falls on tokens j with
    label[j] != label[i]; 0 for a row with no weight."""
    z, o = 0.0, 0.0
    for c in range(m):
        z += s[c]
        if label[cols[c]] != label[i]:
            o += s[c]
    return o / z if z > 0.0 else 0.0


@jit
def head_row(x, i, keys, dyn, h, work):
    """Head h's weights of row i into work.w[:m] on partners work.cols[:m]; returns m."""
    kh = keys[min(h, keys.shape[0] - 1)]
    return row_weights(x[i], i, kh, dyn, dyn.betas[h], work.w, work.cols)


@jit
def head_terms(x, i, keys, dyn, work):
    """Add row i's energy and entropy terms of every head to work.sums[0, h], work.sums[1, h],
    and set work.groups.outside[i] to the mean over heads of the share of its weights off
    the tokens labelled as i (work.groups.label).

    work.g: [n] cosines of row i; keys: head inputs (see attention.head_inputs). Energy uses
    all pairs with the head's score matrix; entropy the model's masked weights.
    """
    n, sums, sh, grp = x.shape[0], work.sums, work.sh, work.groups
    share = 0.0
    for h in range(dyn.betas.shape[0]):
        if dyn.identity:
            sums[0, h] += energy_row_sum(work.g, dyn.betas[h])
        else:
            kh = keys[min(h, keys.shape[0] - 1)]
            for j in range(n):
                sh[j] = dot(x[i], kh[j])
            sums[0, h] += energy_row_sum(sh, dyn.betas[h])
        m = head_row(x, i, keys, dyn, h, work)
        sums[1, h] += entropy_row(work.w[:m])
        share += (outside_share(work.w, work.cols, m, grp.label, i) - share) / (h + 1)
    grp.outside[i] = share


@jit
def outside_row(x, i, keys, dyn, work):
    """Mean over heads of the share of row i's weights outside its cluster (work.groups.label
    holding the clusters' roots); a running mean, as head_mean."""
    share = 0.0
    for h in range(dyn.betas.shape[0]):
        m = head_row(x, i, keys, dyn, h, work)
        share += (outside_share(work.w, work.cols, m, work.groups.label, i) - share) / (h + 1)
    return share


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
    the model's (row-normalised, masked) attention weights; the resolved columns as
    groups.py, inter_attention with these weights; those of x alone as extra.py, and the
    eigenspace fit of the value matrices over them where V is not the identity. The
    clusters are known only after every pair: the first pass takes each token as alone (the
    weight off itself), and a second pass over the tokens in groups, if any, replaces theirs.
    """
    n = x.shape[0]
    keys = head_inputs(x, dyn.qk, dyn.identity, work.keys)
    g, parent, sums, grp = work.g, work.parent, work.sums, work.groups
    sums[:] = 0.0
    for i in range(n):
        parent[i] = i
        grp.label[i] = i
    cos_sum, cos_min, close = 0.0, np.inf, 0
    for i in range(n):
        scores_row(x, i, g)
        head_terms(x, i, keys, dyn, work)
        for j in range(n):
            if j == i:
                continue
            cos_sum += g[j]
            cos_min = min(cos_min, g[j])
            if g[j] > 1.0 - eps:
                close += 1
                union(parent, i, j)
    pair_columns(x, cos_sum, cos_min, close, parent, work.size, out)
    out[COLUMN.energy], out[COLUMN.attention_entropy] = head_mean(sums, dyn.betas, n)
    groups = label_clusters(parent, grp)
    for i in range(n if groups > 0 else 0):
        if grp.gid[i] >= 0:
            grp.outside[i] = outside_row(x, i, keys, dyn, work)
    resolve(x, groups, grp, out)
    standalone(x, out)
    if not dyn.identity:
        out[COLUMN.v_eigenvalue], out[COLUMN.v_eigen_residual] = fit(x, dyn.v)


@jit
def observe_space(x, dyn, eps, out, work):
    """`observe` on the sphere. In euclidean space (x the rescaled tokens y, docs/models.md):
    the columns of pairwise cosines and clusters of the directions y_i / |y_i| (a token at the
    origin has direction 0), energy, attention_entropy and inter_attention NaN (the sphere's
    E_beta and the configured beta's weights, not this flow's), and span_dimension, n_points
    and the eigenspace fit of y itself (gram_rank, a cluster count, of the directions). The
    directions use work.ws[4], rk4's trial state, which every step writes before it reads it."""
    if dyn.space != EUCLIDEAN:
        observe(x, dyn, eps, out, work)
        return
    u = work.ws[4]
    for i in range(x.shape[0]):
        r = np.sqrt(dot(x[i], x[i]))
        for k in range(x.shape[1]):
            u[i, k] = x[i, k] / r if r > 0.0 else 0.0
    observe(u, dyn, eps, out, work)
    out[COLUMN.energy] = np.nan
    out[COLUMN.attention_entropy] = np.nan
    out[COLUMN.inter_attention] = np.nan
    out[COLUMN.span_dimension] = span_dimension(x, SPAN_RTOL)
    out[COLUMN.n_points] = n_points(x, POINTS_RTOL)
    if not dyn.identity:
        out[COLUMN.v_eigenvalue], out[COLUMN.v_eigen_residual] = fit(x, dyn.v)
