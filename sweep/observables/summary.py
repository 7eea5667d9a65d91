"""What every path shares after its pair sums: the clusters of close pairs (a union-find
forest) and the observables' first columns (kernels.codes.OBSERVABLES) from those sums."""

import numpy as np

from sweep.numerics._jit import jit, jit_inline
from sweep.observables.records import COLUMN


@jit
def find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@jit
def union(parent, i, j):
    """Hang the larger root under the smaller: every root stays the least index of its component
    whatever order the pairs arrive in, so forests built from any split of the pairs agree."""
    a, b = find(parent, i), find(parent, j)
    if a != b:
        parent[max(a, b)] = min(a, b)


@jit
def components(parent, size):
    """(number of components, size of the largest) from a union-find forest, in O(n);
    size: [n] int scratch."""
    n = parent.shape[0]
    size[:] = 0
    count, largest = 0, 0
    for i in range(n):
        r = find(parent, i)
        if r == i:
            count += 1
        size[r] += 1
        largest = max(largest, size[r])
    return float(count), float(largest)
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


@jit_inline
def clustered_fraction(close, n):
    """The share of the n (n - 1) ordered pairs i != j that are close, given their number
    (NaN below two tokens): every path's save computes the column with it."""
    return close / (n * (n - 1)) if n > 1 else np.nan


@jit
def pair_columns(x, cos_sum, cos_min, close, parent, size, out):
    """The order parameter, cosine, close-pair and cluster columns of out from the pair sums
    over i != j and the union-find forest of close pairs; size: [n] int scratch."""
    n = x.shape[0]
    pairs = n * (n - 1)
    out[COLUMN.order_parameter] = order_parameter(x)
    out[COLUMN.mean_cosine] = cos_sum / pairs if pairs > 0 else np.nan
    out[COLUMN.min_cosine] = cos_min if pairs > 0 else np.nan
    out[COLUMN.clustered_fraction] = clustered_fraction(close, n)
    count, largest = components(parent, size)
    out[COLUMN.n_clusters], out[COLUMN.largest_cluster] = count, largest / n
