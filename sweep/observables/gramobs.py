"""The OBSERVABLES from a Gram matrix G = x x^T, for the fast paths (rows.py, blocked.py).

Three ways in, one set of per-row sums out (rows: [n, 6], then finish):
  rows.py holds G and W whole and sums down their columns (column_sums: both symmetric);
  blocked.Blocked never holds G whole: it passes row tiles of it (stats_tile, link_tile), so
    every per-row and per-pair quantity is a function of one row of G at a time;
  blocked.Symmetric passes the tile-blocks on and right of the diagonal, each pair once,
    counted for its row and its column (tiles.py: stats_upper, finish_upper).
Every sum has a fixed order, so the numbers do not depend on how tiles go to threads.

Same columns and definitions as kernels.general.observables.observe, rearranged so no pass
needs a scalar libm call: with w_ij = exp(beta (g_ij - c)) (c = 1 for softmax, whose row
maximum on the sphere is g_ii = 1, and c = 0 for unnormalized attention) and z_i = sum_j w_ij,
  energy  E_beta = exp(beta c) sum_ij w_ij / (2 beta n^2)     (sum_ij g_ij / (2 n^2) at beta = 0)
  entropy H_i = -sum_j p_ij log p_ij = log z_i - beta sum_j w_ij (g_ij - c) / z_i,  p = w / z.
The resolved columns are groups.py's; the share of row i's weight outside its cluster is
1 - w_ii / z_i while i is alone, so a save without groups needs no more than the sums above,
and with groups one more pass over the weights (outside_columns; tiles.py: outside_tile,
outside_upper) sums sum_{j outside i's cluster} w_ij directly (no cancellation however small).
"""

import functools

import numpy as np
from numba import typeof, types

from sweep.numerics._jit import jit_fast, jit_fma
from sweep.numerics.expfast import exp1
from sweep.numerics.passing import function_type
from sweep.observables.extra import standalone
from sweep.observables.groups import groups_scratch, label_clusters, resolve
from sweep.observables.records import (
    COLUMN,
    SAVE_ALL,
    SAVE_CLOSE,
    SAVE_COUNTS,
    SAVE_PAIRS,
    columns_at,
)
from sweep.observables.summary import (
    clustered_fraction,
    find,
    order_parameter,
    pair_columns,
    union,
)

# columns of the per-row statistics array rows: [n, 6]; ROW_Z = z_i, ROW_SELF = w_ii
ROW_E, ROW_H, ROW_COS, ROW_MIN, ROW_Z, ROW_SELF = 0, 1, 2, 3, 4, 5
# the observables' columns by the least save level that computes them (observe_pairs: NaN
# in those a save leaves out)
COUNTS, PAIRS, ALL = columns_at(SAVE_COUNTS), columns_at(SAVE_PAIRS), columns_at(SAVE_ALL)


@jit_fast
def row_stats(g, i, beta, c, a, rows):
    """rows[i] = (sum_j exp(beta g_ij) / exp(beta c), H_i, sum_{j!=i} g_ij, min_{j!=i} g_ij,
    z_i, w_ii).

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
    put_row(rows, i, beta, z, s, cos, cos - g[i], mn, w[i])


@jit_fma
def put_row(rows, i, beta, z, t, cos, cos_off, mn, w_self):
    """rows[i] from row i's sums: z = sum_j w_ij, t = sum_j w_ij (g_ij - c), cos = sum_j g_ij
    and cos_off the same without j = i, mn = min_{j != i} g_ij, w_self = w_ii (the one place
    that turns the sums into the ROW_ columns, for all three ways in)."""
    rows[i, ROW_E] = z if beta > 0.0 else cos
    rows[i, ROW_H] = np.log(z) - beta * t / z
    rows[i, ROW_COS] = cos_off
    rows[i, ROW_MIN] = mn
    rows[i, ROW_Z] = z
    rows[i, ROW_SELF] = w_self


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
                union(parent, i, j)
    return close


@jit_fast
def merge_forests(forests):
    """Fold forests[1:] into forests[0], which then holds the components of all their pairs.

    forests: [k, n] int64, one union-find forest per share of the close pairs.
    """
    for s in range(1, forests.shape[0]):
        for i in range(forests.shape[1]):
            r = find(forests[s], i)
            if r != i:
                union(forests[0], i, r)


@jit_fast
def finish(x, rows, close, parent, beta, c, out):
    """out's pair columns (summary.pair_columns), energy and attention_entropy from the
    per-row sums and the union-find forest."""
    n = x.shape[0]
    e_sum, h_sum, cos_sum, cos_min = 0.0, 0.0, 0.0, np.inf
    for i in range(n):
        e_sum += rows[i, ROW_E]
        h_sum += rows[i, ROW_H]
        cos_sum += rows[i, ROW_COS]
        cos_min = min(cos_min, rows[i, ROW_MIN])
    pair_columns(x, cos_sum, cos_min, close, parent, np.empty(n, dtype=np.int64), out)
    out[COLUMN.energy] = (np.exp(beta * c) * e_sum / (2.0 * n * n * beta) if beta > 0.0
                          else e_sum / (2.0 * n * n))
    out[COLUMN.attention_entropy] = h_sum / n


@jit_fast
def stats_tile(tile, lo, beta, c, a, rows):
    """row_stats for rows lo .. lo + len(tile) - 1 of the Gram matrix, given as tile: [rows, n]
    (independent of every other row: tiles may run at once)."""
    for r in range(tile.shape[0]):
        row_stats(tile[r], lo + r, beta, c, a, rows)


@jit_fast
def summarize_forests(x, rows, close, forests, beta, c, out, grp):
    """finish's columns from per-row statistics and forests of close pairs built tile by tile
    (blocked.py): close, the number of ordered close pairs; forests: [k, n] int64. Then
    forests[0] holds the clusters: returns their groups, as label_alone."""
    merge_forests(forests)
    finish(x, rows, close, forests[0], beta, c, out)
    return label_alone(forests[0], rows, grp)


@jit_fast
def label_alone(parent, rows, grp):
    """groups.label_clusters, and grp.outside[i] = 1 - w_ii / z_i, the share of row i's weight
    outside its cluster while i is alone; returns the number of groups."""
    for i in range(rows.shape[0]):
        grp.outside[i] = (rows[i, ROW_Z] - rows[i, ROW_SELF]) / rows[i, ROW_Z]
    return label_clusters(parent, grp)


@jit_fast
def observe_weighted(x, gram, w, beta, c, eps, out, rows, acc, parent, grp):
    """out[:] = the observables of x: [n, d] given gram = x x^T and its weights
    w = exp(beta (gram - c)), both [n, n]; serial. rows: [n, 6], acc: [4, n] float64, parent:
    [n] int64 and grp (groups.Groups) scratch."""
    column_sums(gram, w, beta, c, acc, rows)
    finish(x, rows, link_close_pairs(gram, eps, parent), parent, beta, c, out)
    groups = label_alone(parent, rows, grp)
    if groups > 0:
        outside_columns(w, grp.label, acc[0], rows, grp.outside)
    resolve(x, groups, grp, out)
    standalone(x, out)


@jit_fast
def observe_pairs(x, gram, eps, level, out, rows, acc, parent):
    """The columns of SAVE_PAIRS and below (order parameter, cosines, clusters: what
    gram = x x^T alone gives) exactly as observe_weighted computes them, the other columns
    NaN: no weights, no groups, for a save
    that records only those (rows.py). level (codes.save_level): SAVE_PAIRS all six;
    SAVE_COUNTS without the cluster count and size (NaN), so the close pairs are only
    counted, not linked; SAVE_CLOSE without the cosines either. Scratch as
    observe_weighted's."""
    n = x.shape[0]
    if level == SAVE_CLOSE:
        out[COLUMN.order_parameter] = order_parameter(x)
        out[COLUMN.clustered_fraction] = clustered_fraction(count_close_pairs(gram, eps), n)
        for k in COUNTS:
            out[k] = np.nan
    else:
        column_sums(gram, gram, 0.0, 0.0, acc, rows)  # its cosine columns do not read w
        if level == SAVE_PAIRS:
            close = link_close_pairs(gram, eps, parent)
        else:  # counted, not linked: a forest of lone tokens, whose columns are dropped
            close = count_close_pairs(gram, eps)
            for i in range(n):
                parent[i] = i
        finish(x, rows, close, parent, 0.0, 0.0, out)
    if level != SAVE_PAIRS:
        for k in PAIRS:
            out[k] = np.nan
    for k in ALL:
        out[k] = np.nan


@jit_fast
def count_close_pairs(gram, eps):
    """The number of ordered pairs i != j with <x_i, x_j> > 1 - eps (link_close_pairs' count,
    without linking them): the whole matrix, then less its diagonal, so every row is one
    vectorised pass (gram is exactly symmetric: rows.gram)."""
    n, close = gram.shape[0], 0
    flat = gram.reshape(gram.size)
    for k in range(flat.shape[0]):
        close += flat[k] > 1.0 - eps
    for i in range(n):
        close -= gram[i, i] > 1.0 - eps
    return close


@jit_fma
def outside_columns(w, label, o, rows, outside):
    """outside[i] = sum_{j: label_j != label_i} w_ij / z_i for every row, down the columns of
    the symmetric w: [n, n] as column_sums (vectorised, each sum in the order j = 0, 1, ...).
    o: [n] scratch."""
    n = w.shape[0]
    o[:] = 0.0
    for j in range(n):
        wj, lj = w[j], label[j]
        for i in range(n):
            o[i] += wj[i] * (label[i] != lj)
    for i in range(n):
        outside[i] = o[i] / rows[i, ROW_Z]


@jit_fma
def column_sums(g, w, beta, c, acc, rows):
    """rows[i] = row_sums of row i for every i, run down the columns of the symmetric g and w
    (row j adds its entries to every row's sums at once): the loops run over i and vectorise
    without reassociation, and each row's sum still adds its terms in the order j = 0, 1, ...
    (several times faster than row_sums row by row at small n). acc: [4, n] scratch."""
    n = g.shape[0]
    z, t, s, mn = acc[0], acc[1], acc[2], acc[3]
    z[:] = 0.0
    t[:] = 0.0
    s[:] = 0.0
    mn[:] = np.inf
    for j in range(n):
        gj, wj = g[j], w[j]
        for i in range(n):
            z[i] += wj[i]
            t[i] += wj[i] * (gj[i] - c)
            s[i] += gj[i]
        for i in range(j):
            mn[i] = min(mn[i], gj[i])
        for i in range(j + 1, n):
            mn[i] = min(mn[i], gj[i])
    for i in range(n):
        put_row(rows, i, beta, z[i], t[i], s[i], s[i] - g[i, i], mn[i], w[i, i])


@functools.cache
def saves(dtype: np.dtype) -> tuple:
    """((observe_weighted, its type), (observe_pairs, its type)): the functions the saves
    of rows.py and lanes.py are passed for tokens x of `dtype`, each with the first-class
    type of its call there (numerics/passing.py): x: [n, d] of dtype, the scratch float64
    (parent int64), every array C-contiguous, grp a groups.Groups."""
    x = typeof(np.empty((1, 1), dtype=np.dtype(dtype)))
    f2, f1, i1 = typeof(np.empty((1, 1))), typeof(np.empty(1)), typeof(np.empty(1, np.int64))
    grp = typeof(groups_scratch.py_func(2, 1))
    f8 = types.float64
    return ((observe_weighted, function_type(x, f2, f2, f8, f8, f8, f1, f2, f2, i1, grp)),
            (observe_pairs, function_type(x, f2, f8, types.int64, f1, f2, f2, i1)))


def saves_of(args: tuple) -> tuple:
    """saves() for the arguments of a fast path's kernel, the tokens first."""
    return saves(args[0].dtype)
