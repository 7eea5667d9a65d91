"""The observables a row tile at a time, for blocked.py (gramobs.py's sums, rearranged):
blocked.Blocked's weight outside each cluster from row tiles of the weights (outside_tile);
blocked.Symmetric's statistics from the Gram matrix's tile-blocks on and right of the diagonal,
each pair once, counted for its row and its column (stats_upper, finish_upper; outside_upper,
finish_outside); for a save of the close pairs alone, their count (count_after). Every sum
has a fixed order, so the numbers do not depend on how tiles go to threads.
"""

import numpy as np

from sweep.numerics._jit import jit_fma
from sweep.numerics.expfast import weight
from sweep.observables.gramobs import ROW_SELF, ROW_Z, put_row
from sweep.observables.summary import union


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
            a[j] = weight(g[j], beta, c)
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
def count_after(tile, first, eps):
    """The close pairs i < j (g_ij > 1 - eps) of the rows i = first + r of the Gram matrix
    that tile: [rows, n] holds (its columns j >= first + r + 1 read), counted as ordered pairs:
    link_tile's and stats_upper's count without linking them or any statistic, for a save
    of the clustered fraction alone (SAVE_CLOSE)."""
    close = 0
    for r in range(tile.shape[0]):
        g = tile[r, first + r + 1:]
        for j in range(g.shape[0]):
            close += g[j] > 1.0 - eps
    return 2 * close


@jit_fma
def row_tail(g, a, c, start):
    """(sum a, sum a (g - c), sum g, min g) over j >= start, in four interleaved partial sums
    per quantity (a fixed order: scalar adds, but four chains in flight, not one)."""
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
