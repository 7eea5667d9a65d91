"""The cluster-resolved observables (Gao, Yang, Chen, "Clustered attractor manifolds and
dynamical condensation in self-attention"), the same on every path.

Clusters are those of `n_clusters`: components of the graph <x_i, x_j> > 1 - eps, from the
union-find forest each path builds. A *group* is a cluster of at least 2 tokens; G groups
A, B, ... with m_A tokens and sums s_A = sum_{i in A} x_i. Every pair sum is a product of
group sums, sum_{i in A, j in B} <x_i, x_j> = <s_A, s_B>, so no n x n matrix is needed and
the cost is O(n d + G^2 d + n G d):
  n_groups            G
  singleton_fraction  (tokens in no group) / n
  overlap_gap         sum_A (|s_A|^2 - sum_{i in A} |x_i|^2) / sum_A m_A (m_A - 1)
                      - max_{A != B} <s_A, s_B> / (m_A m_B)     (mean intra-group cosine over
                      pairs i != j, minus the largest mean cosine between two groups)
  silhouette          mean over i in groups of (b_i - a_i) / max(a_i, b_i), cosine distance
                      1 - <x_i, x_j>: a_i = 1 - (<x_i, s_A> - |x_i|^2) / (m_A - 1) the mean
                      distance to the rest of i's group A, b_i = 1 - max_{B != A} <x_i, s_B> / m_B
                      the mean distance to the nearest other group (singletons take no part)
  inter_attention     mean over i of outside[i], the share of row i's attention weight on
                      tokens outside i's cluster (a path's weights: the path fills outside)
overlap_gap and silhouette are NaN with fewer than 2 groups. Each is its own function, so a
save can leave any of them out; they are inlined into resolve, since a call passing the
Groups tuple counts a reference to each of its arrays up and down (which shows at small n).
"""

from typing import NamedTuple

import numpy as np

from sweep.numerics._jit import jit, jit_inline
from sweep.observables.records import COLUMN
from sweep.observables.summary import find


class Groups(NamedTuple):
    """Scratch of the resolved observables for x: [n, d]: label, gid, size [n] int64 (root
    of each token's cluster, its group or -1, cluster sizes by root); sums, means
    [n // 2 + 1, d] (s_A, s_A / m_A: G <= n / 2), count, square, dots [n // 2 + 1] float64
    (m_A, sum_{i in A} |x_i|^2, one vector's products with the groups); norms, outside,
    silhouette [n] float64 (per token: |x_i|^2 and the two observables' shares)."""

    label: np.ndarray
    gid: np.ndarray
    size: np.ndarray
    sums: np.ndarray
    means: np.ndarray
    count: np.ndarray
    square: np.ndarray
    dots: np.ndarray
    norms: np.ndarray
    outside: np.ndarray
    silhouette: np.ndarray


@jit
def groups_scratch(n, d):
    g = n // 2 + 1
    return Groups(np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
                  np.empty(n, dtype=np.int64), np.empty((g, d)), np.empty((g, d)),
                  np.empty(g), np.empty(g), np.empty(g), np.empty(n), np.empty(n), np.empty(n))


@jit_inline
def label_clusters(parent, grp):
    """grp.label[i] = the root of token i's cluster (its least token: summary.union keeps it
    so), grp.gid[i] = its group, numbered 0, 1, ... by that root, or -1 alone; returns G."""
    n = parent.shape[0]
    label, gid, size = grp.label, grp.gid, grp.size
    size[:] = 0
    for i in range(n):
        label[i] = find(parent, i)
        size[label[i]] += 1
    groups = 0
    for i in range(n):  # a root precedes its members, so its group is numbered first
        r = label[i]
        if size[r] < 2:
            gid[i] = -1
        elif r == i:
            gid[i] = groups
            groups += 1
        else:
            gid[i] = gid[r]
    return groups


@jit
def group_sums(x, groups, grp):
    """grp.sums[A] = s_A, grp.count[A] = m_A, grp.square[A] = sum_{i in A} |x_i|^2 and
    grp.norms[i] = |x_i|^2 of the tokens in groups, summed in token order (float64 whatever
    x's dtype)."""
    s, m, sq = grp.sums[:groups], grp.count[:groups], grp.square[:groups]
    s[:] = 0.0
    m[:] = 0.0
    sq[:] = 0.0
    for i in range(x.shape[0]):
        a = grp.gid[i]
        if a >= 0:
            q = 0.0
            for k in range(x.shape[1]):
                q += x[i, k] * x[i, k]
                s[a, k] += x[i, k]
            m[a] += 1.0
            sq[a] += q
            grp.norms[i] = q


@jit_inline
def against_groups(v, i, s, groups, dots):
    """dots[B] = <v[i], s[B]> for every group B, v: [., d], s: [>= G, d]: four groups at a
    time, so four sums are in flight (one dot after another is one long chain of dependent
    adds). Indices, not row views, and inlined: each view or call costs atomic reference
    counts, which at n = 32 cost more than the products."""
    for b in range(0, groups - 3, 4):
        a0 = a1 = a2 = a3 = 0.0
        for k in range(v.shape[1]):
            a0 += v[i, k] * s[b, k]
            a1 += v[i, k] * s[b + 1, k]
            a2 += v[i, k] * s[b + 2, k]
            a3 += v[i, k] * s[b + 3, k]
        dots[b], dots[b + 1], dots[b + 2], dots[b + 3] = a0, a1, a2, a3
    for b in range(groups - groups % 4, groups):
        a0 = 0.0
        for k in range(v.shape[1]):
            a0 += v[i, k] * s[b, k]
        dots[b] = a0
    return dots


@jit
def overlap_gap(groups, grp):
    """Mean intra-group cosine (pairs i != j) minus the largest mean inter-group cosine."""
    if groups < 2:
        return np.nan
    m = grp.count
    intra, pairs, inter = 0.0, 0.0, -np.inf
    for a in range(groups):
        dots = against_groups(grp.sums, a, grp.sums, groups, grp.dots)
        intra += dots[a] - grp.square[a]
        pairs += m[a] * (m[a] - 1.0)
        for b in range(a + 1, groups):
            inter = max(inter, dots[b] / (m[a] * m[b]))
    return intra / pairs - inter


@jit_inline
def silhouette_rows(x, lo, hi, groups, grp):
    """grp.silhouette[i] for the tokens lo <= i < hi (0 for a singleton), given the group
    means (group_means). Both distances 0 gives 0, as scikit-learn."""
    m = grp.count
    for i in range(lo, hi):
        a = grp.gid[i]
        if a < 0:
            grp.silhouette[i] = 0.0
            continue
        dots = against_groups(x, i, grp.means, groups, grp.dots)
        own = 1.0 - (m[a] * dots[a] - grp.norms[i]) / (m[a] - 1.0)
        near = -np.inf
        for b in range(groups):
            if b != a:
                near = max(near, dots[b])
        other = 1.0 - near
        top = max(own, other)
        grp.silhouette[i] = (other - own) / top if top > 0.0 else 0.0


@jit_inline
def group_means(groups, grp):
    """grp.means[A] = s_A / m_A."""
    for a in range(groups):
        inv = 1.0 / grp.count[a]
        for k in range(grp.sums.shape[1]):
            grp.means[a, k] = grp.sums[a, k] * inv


@jit
def silhouette(x, groups, grp):
    if groups < 2:
        return np.nan
    group_means(groups, grp)
    silhouette_rows(x, 0, x.shape[0], groups, grp)
    total, count = 0.0, 0
    for i in range(x.shape[0]):
        if grp.gid[i] >= 0:
            total += grp.silhouette[i]
            count += 1
    return total / count


@jit
def resolve(x, groups, grp, out):
    """out's resolved columns from the labelled clusters (label_clusters) and grp.outside.
    group_sums, overlap_gap and silhouette are called, once a save, not inlined: inlined,
    they made this one function whose compile took 2 s longer (docs/performance.md)."""
    n = x.shape[0]
    alone = 0
    for i in range(n):
        alone += grp.gid[i] < 0
    out[COLUMN.n_groups] = groups
    out[COLUMN.singleton_fraction] = alone / n
    group_sums(x, groups, grp)
    out[COLUMN.overlap_gap] = overlap_gap(groups, grp)
    out[COLUMN.silhouette] = silhouette(x, groups, grp)
    inter = 0.0
    for i in range(n):
        inter += grp.outside[i]
    out[COLUMN.inter_attention] = inter / n
