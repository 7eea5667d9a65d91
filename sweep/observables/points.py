"""n_points: how many distinct positions the tokens x: [n, d] occupy, at a tolerance rtol
(its record's parameter) relative to the largest norm:

    n_points = the number of components of the graph |x_i - x_j| <= rtol max_k |x_k|.

In euclidean space (model.space: euclidean, docs/models.md) x is the rescaled state
y = exp(-c t) x, and with V = I the tokens converge to 0 or to points of the boundary of a
convex polytope (arXiv 2305.05465, its theorem for V = I; to its vertices, in the paper's
experiments): n_points is then the number of distinct limit points reached. On the sphere
it is a cluster count at the cosine 1 - rtol^2 / 2. Scale-free (the same for x and a x,
a > 0), summed in a fixed order, so the same x gives the same count on every path. O(n^2 d) at
most; a pair already joined is not measured again, and a distance is left as soon as it
passes the reach, so spread-out and collapsed tokens both cost about n^2 / 2 cheap steps.
"""

import numpy as np

from sweep.numerics._jit import jit
from sweep.observables.summary import find, union


@jit
def near(x, i, j, reach):
    """|x_i - x_j|^2 <= reach, the squares summed over k in order and the sum left as soon as
    it passes reach (it only grows): the answer of the whole sum, mostly after a term or two
    for tokens apart."""
    s = 0.0
    for k in range(x.shape[1]):
        e = np.float64(x[i, k]) - x[j, k]
        s += e * e
        if s > reach:
            return False
    return True


@jit
def heads(x):
    """[min(d, 2), n] float64: the first two coordinates of every token, each a contiguous
    row, for head_squares (a column of x is strided by d: at d = 128 each of its entries
    is a cache line of its own)."""
    n, m = x.shape[0], min(x.shape[1], 2)
    out = np.empty((m, n))
    for i in range(n):
        for k in range(m):
            out[k, i] = x[i, k]
    return out


@jit
def head_squares(h, i, out, reach):
    """out[j] = the first two terms of |x_i - x_j|^2 for every j > i (one where d is 1), from
    h = heads(x), summed in order as near() and its like sum the whole: the same partial sums,
    bit for bit, in a loop over j without a branch. Returns how many of them are at most
    reach. The terms only add, so out[j] > reach means near(x, i, j, reach) leaves within
    these terms and answers False: such a pair needs no more, and a row where none is within
    reach needs no more at all (a count, which vectorises, instead of a scan of the row)."""
    # sliced at i + 1 and indexed from 0: a loop from i + 1 ran scalar
    later, first, a, hits = out[i + 1:], h[0, i + 1:], h[0, i], 0
    if h.shape[0] == 1:
        for j in range(later.shape[0]):
            e = a - first[j]
            s = e * e
            later[j] = s
            hits += s <= reach
        return hits
    b, second = h[1, i], h[1, i + 1:]
    for j in range(later.shape[0]):
        e, f = a - first[j], b - second[j]
        s = e * e + f * f
        later[j] = s
        hits += s <= reach
    return hits


@jit
def n_points(x, rtol):
    """The number of distinct positions of the rows of x (see the module docstring)."""
    n, d = x.shape
    top = 0.0
    for i in range(n):
        r2 = 0.0
        for k in range(d):
            r2 += np.float64(x[i, k]) * x[i, k]
        top = max(top, r2)
    reach = rtol * rtol * top
    parent, apart, h = np.arange(n), np.empty(n), heads(x)
    for i in range(n):
        if head_squares(h, i, apart, reach) == 0:
            continue  # every later token of the row out of reach
        for j in range(i + 1, n):
            if apart[j] <= reach and find(parent, i) != find(parent, j) \
                    and near(x, i, j, reach):
                union(parent, i, j)
    count = 0
    for i in range(n):
        if find(parent, i) == i:
            count += 1
    return float(count)
