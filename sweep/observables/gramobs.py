"""The OBSERVABLES from a Gram matrix G = x x^T, for the fast paths (rows.py, blocked.py).

Three ways in, one set of per-row sums out (rows: [n, 6], then finish):
  rows.py holds G and W whole and sums down their columns (column_sums: both symmetric);
  blocked.Blocked never holds G whole: it passes row tiles of it (stats_tile, link_tile), so
    every per-row and per-pair quantity is a function of one row of G at a time;
  blocked.Symmetric passes the tile-blocks on and right of the diagonal, each pair once,
    counted for its row and its column (stats_upper, finish_upper).
Every sum has a fixed order, so the numbers do not depend on how tiles go to threads.

Same columns and definitions as observables.observe, rearranged so no pass needs a scalar
libm call: with w_ij = exp(beta (g_ij - c)) (c = 1 for softmax, whose row maximum on the
sphere is g_ii = 1, and c = 0 for unnormalized attention) and z_i = sum_j w_ij,
  energy  E_beta = exp(beta c) sum_ij w_ij / (2 beta n^2)     (sum_ij g_ij / (2 n^2) at beta = 0)
  entropy H_i = -sum_j p_ij log p_ij = log z_i - beta sum_j w_ij (g_ij - c) / z_i,  p = w / z.
The resolved columns are groups.py's; the share of row i's weight outside its cluster is
1 - w_ii / z_i while i is alone, so a save without groups needs no more than the sums above,
and with groups one more pass over the weights (outside_columns, outside_tile,
outside_upper) sums sum_{j outside i's cluster} w_ij directly (no cancellation however small).
"""

import numpy as np

from sweep.numerics._jit import jit_fast, jit_fma
from sweep.numerics.expfast import exp1
from sweep.observables.extra import standalone
from sweep.observables.groups import label_clusters, resolve
from sweep.observables.records import (
    COLUMN,
    SAVE_ALL,
    SAVE_CLOSE,
    SAVE_COUNTS,
    SAVE_PAIRS,
    columns_at,
)
from sweep.observables.summary import find, order_parameter, pair_columns, union

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
        out[COLUMN.clustered_fraction] = (count_close_pairs(gram, eps) / (n * (n - 1))
                                          if n > 1 else np.nan)
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
def outside_tile(tile, lo, label, a, rows, outside):
    """outside[i] = sum_{j: label_j != label_i} w_ij / z_i for the rows i = lo + r of a tile of
    weights, tile: [rows, n] (blocked.Blocked); a: [n] float64 scratch."""
    for r in range(tile.shape[0]):
        w, li = tile[r], label[lo + r]
        for j in range(w.shape[0]):
            a[j] = w[j] * (label[j] != li)
        outside[lo + r] = tail_sum(a, 0) / rows[lo + r, ROW_Z]


@jit_fma
def column_sums(g, w, beta, c, acc, rows):
    """rows[i] = row_sums of row i for every i, run down the columns of the symmetric g and w
    (row j adds its entries to every row's sums at once): the loops run over i and vectorise
    without reassociation, and each row's sum still adds its terms in the order j = 0, 1, ...
    (2.2-2.9x faster than row_sums row by row at n = 32-200). acc: [4, n] scratch."""
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


@jit_fma
def stats_upper(w, lo, hi, beta, c, eps, a, rows, cols, diag, parent):
    """One row tile's share of the row statistics, from the Gram matrix's blocks on and right
    of the diagonal only (blocked.Symmetric's upper half): w[lo:hi, lo:] holds g_ij for the rows
    i of the tile and the columns j >= lo. Each pair i != j is stored once and counts for both
    its row and its column:
      rows[i] = (z, t, cos, min) of row i over the blocks right of the diagonal (j >= hi),
      cols[:, j] = the same four down column j (j >= lo) over the tile's rows, i = j left out
                   of cos and min,
    with z = sum w, t = sum w (g - c), cos = sum g, w = exp(beta (g - c)); diag[i] = g_ii.
    finish_upper adds them up. Links the pairs i < j with g_ij > 1 - eps into the forest parent
    and returns their number, counted as ordered pairs. Leaves the weights w in place of g (to
    the bit as blocked.exp_block computes them), for outside_upper and for the step after a
    save, which then skips its own Gram products and exponentials; rows[i, ROW_SELF] = w_ii.
    a: [n] float64 scratch. Contraction only: the sums have a fixed order, and those down
    columns vectorise without reassociation."""
    cols[0, lo:] = 0.0
    cols[1, lo:] = 0.0
    cols[2, lo:] = 0.0
    cols[3, lo:] = np.inf
    cz, ct, cs, cm = cols[0, lo:], cols[1, lo:], cols[2, lo:], cols[3, lo:]
    close, right = 0, hi - lo
    for i in range(lo, hi):
        g, r = w[i, lo:], i - lo
        m = g.shape[0]
        for j in range(m):
            a[j] = exp1(beta * (g[j] - c))
        for j in range(m):  # one accumulator per loop: fewer alias checks, all vectorise
            cz[j] += a[j]
        for j in range(m):
            ct[j] += a[j] * (g[j] - c)
        for j in range(r):
            cs[j] += g[j]
        for j in range(r + 1, m):
            cs[j] += g[j]
        for j in range(r):
            cm[j] = min(cm[j], g[j])
        for j in range(r + 1, m):
            cm[j] = min(cm[j], g[j])
        rows[i, 0], rows[i, 1], rows[i, 2], rows[i, 3] = row_tail(g, a, c, right)
        diag[i], rows[i, ROW_SELF] = g[r], a[r]
        for j in range(r + 1, m):
            if g[j] > 1.0 - eps:
                close += 2
                union(parent, i, lo + j)
        for j in range(m):
            g[j] = a[j]
    return close


@jit_fma
def row_tail(g, a, c, start):
    """(sum a, sum a (g - c), sum g, min g) over j >= start, in four interleaved partial sums
    per quantity (a fixed order: scalar adds, but four chains in flight, 1.8x one chain)."""
    m = g.shape[0]
    z0 = z1 = z2 = z3 = t0 = t1 = t2 = t3 = s0 = s1 = s2 = s3 = 0.0
    m0 = m1 = m2 = m3 = np.inf
    j = start
    while j + 4 <= m:
        z0, z1, z2, z3 = z0 + a[j], z1 + a[j + 1], z2 + a[j + 2], z3 + a[j + 3]
        t0 += a[j] * (g[j] - c)
        t1 += a[j + 1] * (g[j + 1] - c)
        t2 += a[j + 2] * (g[j + 2] - c)
        t3 += a[j + 3] * (g[j + 3] - c)
        s0, s1, s2, s3 = s0 + g[j], s1 + g[j + 1], s2 + g[j + 2], s3 + g[j + 3]
        m0, m1 = min(m0, g[j]), min(m1, g[j + 1])
        m2, m3 = min(m2, g[j + 2]), min(m3, g[j + 3])
        j += 4
    z, t, s = (z0 + z1) + (z2 + z3), (t0 + t1) + (t2 + t3), (s0 + s1) + (s2 + s3)
    mn = min(min(m0, m1), min(m2, m3))
    for k in range(j, m):
        z += a[k]
        t += a[k] * (g[k] - c)
        s += g[k]
        mn = min(mn, g[k])
    return z, t, s, mn


@jit_fma
def finish_upper(diag, tile, cols, beta, c, rows):
    """rows[i] <- (ROW_E, ROW_H, ROW_COS, ROW_MIN) of every row, as row_sums gives them, from
    stats_upper's parts: row i's own blocks right of the diagonal, then its column in tiles
    0, 1, ... up to its own (in that order, so the numbers do not depend on the threads).
    diag: [n] the Gram matrix's diagonal; tile: rows per tile; cols: [tiles, 4, n]."""
    for i in range(rows.shape[0]):
        z, t, s, mn = rows[i, 0], rows[i, 1], rows[i, 2], rows[i, 3]
        for k in range(i // tile + 1):
            z += cols[k, 0, i]
            t += cols[k, 1, i]
            s += cols[k, 2, i]
            mn = min(mn, cols[k, 3, i])
        put_row(rows, i, beta, z, t, s + diag[i], s, mn, rows[i, ROW_SELF])


@jit_fma
def tail_sum(a, start):
    """sum_{j >= start} a_j in four interleaved partial sums (a fixed order, as row_tail)."""
    m = a.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    j = start
    while j + 4 <= m:
        s0, s1, s2, s3 = s0 + a[j], s1 + a[j + 1], s2 + a[j + 2], s3 + a[j + 3]
        j += 4
    s = (s0 + s1) + (s2 + s3)
    for k in range(j, m):
        s += a[k]
    return s


@jit_fma
def outside_upper(w, lo, hi, label, a, part, col):
    """One row tile's share of the weight outside each row's cluster, from the weights that
    stats_upper left in the blocks on and right of the diagonal, w[lo:hi, lo:]: part[i] =
    sum over j >= hi of row i (i in the tile), col[j] = the sum down column j >= lo over the
    tile's rows, each term w_ij with label_j != label_i. finish_outside adds them up, as
    finish_upper. a: [n] float64 scratch."""
    col[lo:] = 0.0
    co, lab, right = col[lo:], label[lo:], hi - lo
    for i in range(lo, hi):
        g, li = w[i, lo:], label[i]
        for j in range(g.shape[0]):
            a[j] = g[j] * (lab[j] != li)
        for j in range(g.shape[0]):
            co[j] += a[j]
        part[i] = tail_sum(a[:g.shape[0]], right)


@jit_fma
def finish_outside(tile, cols, part, rows, outside):
    """outside[i] = (part[i] + col[i] of tiles 0, 1, ... up to i's own) / z_i, in that order;
    cols: [tiles, 4, n], whose cols[k, 0] is outside_upper's col of tile k (passed whole: a
    view of one slice is contiguous or not by the number of tiles, two Numba types)."""
    for i in range(rows.shape[0]):
        o = part[i]
        for k in range(i // tile + 1):
            o += cols[k, 0, i]
        outside[i] = o / rows[i, ROW_Z]
