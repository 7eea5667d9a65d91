"""gram_rank: the number of clusters as the numerical rank of the thresholded Gram matrix,
at a cosine threshold c (its record's parameter):

    A_ij = 1 if <x_i, x_j> > c else 0   (i, j = 1..n; A_ii = 1 for unit tokens),
    gram_rank = numpy.linalg.matrix_rank(A)   (A as float64, NumPy's default tolerance:
                                               singular values above n eps sigma_1).

When the graph "cosine > c" is a union of cliques (clean clusters) A is block diagonal with
blocks of ones, one per cluster, so gram_rank is the number of clusters; a component that is
not a clique counts as the rank of its block (at least 2: its rows are not all equal). 1 at
total collapse, k for k well-separated clusters.

How: A is block diagonal over the components of the graph (found by union-find on the pairs),
so its rank is the sum of its blocks'. Where every component is a clique (and every A_ii is 1),
that is the number of components, and no more is computed. Otherwise, within a component,
tokens with the same row of A (the same neighbours) are one class: with C the u x u matrix of A
between class representatives and s the class sizes, the block is P C P^T (P: [m, u]
membership) and its nonzero eigenvalues are those of the symmetric M = D^1/2 C D^1/2, D =
diag(s). The Ms of all components are brought to tridiagonal form (span.tridiagonalize), laid
end to end with zero couplings, and their eigenvalues counted by Sturm sequences: |lambda| > n
eps max|lambda|, NumPy's rule on A's singular values (A symmetric: they are its |eigenvalues|).
Cost: the n(n - 1)/2 cosines, and those within each component again (O(n^2 d), a row of cosines
at a time so that the loop vectorises), and O(u^3) per component, u its distinct rows (1 for a
clique, so a collapsed state needs no eigenvalues of size n); memory O(n d + u m) for a
component of m tokens. Each cosine is summed over k in order, without fastmath: the same x
gives the same count on every path. The tokens are unit on the sphere: <x_i, x_j> is their
cosine.
"""

import numpy as np

from sweep.numerics._jit import jit, jit_inline
from sweep.observables.points import head_squares, heads
from sweep.observables.span import count_below, largest, tridiagonalize
from sweep.observables.summary import find, union

EPS = np.finfo(np.float64).eps


@jit_inline
def cosine(x, i, j):
    s = 0.0
    for k in range(x.shape[1]):
        s += np.float64(x[i, k]) * x[j, k]
    return s


@jit_inline
def cosines_to(xi, cols, lo, out):
    """out[j] = <xi, cols[:, j]> for lo <= j < m, cols: [d, m]; summed over k in order, term
    by term as cosine() sums them (the same bits), j innermost so that the loop vectorises
    without reassociating any sum (sliced at lo and indexed from 0: a loop from lo ran
    scalar)."""
    seg = out[lo:]
    seg[:] = 0.0
    for k in range(cols.shape[0]):
        xik, row = xi[k], cols[k, lo:]
        for j in range(seg.shape[0]):
            seg[j] += xik * row[j]


BLOCK = 8  # rows of cosines computed together: each column of tokens is read once per block


@jit_inline
def cosines_block(cols, i0, i1, lo, out):
    """out[b, j] = <cols[:, i0 + b], cols[:, j]> for i0 + b < i1 and lo <= j < m, cols: [d, m];
    each summed over k in order, term by term as cosine() sums them (the same bits; sliced
    at lo and indexed from 0, as cosines_to)."""
    out[:, lo:] = 0.0
    for k in range(cols.shape[0]):
        row = cols[k, lo:]
        for b in range(i1 - i0):
            xik, seg = cols[k, i0 + b], out[b, lo:]
            for j in range(seg.shape[0]):
                seg[j] += xik * row[j]


@jit
def transposed(x, members):
    """[d, m] float64: the tokens `members` of x as columns."""
    out = np.empty((x.shape[1], members.shape[0]))
    for b in range(members.shape[0]):
        for k in range(x.shape[1]):
            out[k, b] = x[members[b], k]
    return out


@jit
def close_forest(x, threshold):
    """The union-find forest of the pairs i < j with <x_i, x_j> > threshold, and how many
    such pairs there are."""
    n = x.shape[0]
    parent, rows = np.arange(n), np.empty((BLOCK, n))
    xt = transposed(x, parent)
    close = 0
    for i0 in range(0, n, BLOCK):
        i1 = min(n, i0 + BLOCK)
        cosines_block(xt, i0, i1, i0 + 1, rows)
        for i in range(i0, i1):
            for j in range(i + 1, n):
                if rows[i - i0, j] > threshold:
                    union(parent, i, j)
                    close += 1
    return parent, close


MARGIN = 1e-9  # far above a cosine's rounding (d eps |x_i| |x_j|) for tokens of norm ~1


@jit_inline
def squares(x, i, j, reach):
    """|x_i - x_j|^2, summed over k until it passes reach (then some value above reach)."""
    s = 0.0
    for k in range(x.shape[1]):
        e = np.float64(x[i, k]) - x[j, k]
        s += e * e
        if s > reach:
            break
    return s


@jit
def quick_forest(x, threshold, n2):
    """The forest of close pairs as close_forest's, measuring fewer pairs: none already
    joined, and none whose distance passes n2_i + n2_j - 2 threshold + MARGIN (then
    <x_i, x_j> < threshold - MARGIN / 2: not close, whatever the rounding). Kept flat: each
    token's parent is its component's least index (union's root), relabelled on each of the
    at most n - 1 joins, so telling whether a pair is joined is one comparison, not two
    finds (gram_rank 4.0 -> 3.3 us at (32, 3) in four tight clusters). n2: the squared norms,
    finite (tight checks them)."""
    n = x.shape[0]
    parent, apart, h, top = np.arange(n), np.empty(n), heads(x), -np.inf
    for i in range(n):
        top = max(top, n2[i])
    for i in range(n):
        # a distance's first terms, for every j at once. Each j's reach is at most the row's
        # (n2_j <= top, and the sums round alike): a row none of whose terms is within the
        # row's reach has no pair to measure, and in the others a pair past it is left
        # before its parents are looked at
        row = n2[i] + top - 2.0 * threshold + MARGIN
        if head_squares(h, i, apart, row) == 0:
            continue
        for j in range(i + 1, n):
            if apart[j] > row:
                continue
            a, b = parent[i], parent[j]
            if a == b:
                continue
            reach = n2[i] + n2[j] - 2.0 * threshold + MARGIN
            if apart[j] <= reach and squares(x, i, j, reach) <= reach \
                    and cosine(x, i, j) > threshold:
                low, high = min(a, b), max(a, b)
                for k in range(n):
                    if parent[k] == high:
                        parent[k] = low
    return parent


@jit
def tight(x, threshold):
    """The component count where every component is provably a clique with every A_ii 1:
    each token within half of sqrt(2 min n2 - 2 threshold - MARGIN) of its root, so each pair
    is closer than that and its cosine above threshold + MARGIN / 2; -1 otherwise. Measures
    O(n) distances where the tokens are collapsed, a term or two a pair where they are apart."""
    n = x.shape[0]
    n2 = np.empty(n)
    for i in range(n):
        n2[i] = cosine(x, i, i)
        if not n2[i] > threshold:
            return -1
    parent = quick_forest(x, threshold, n2)
    low = np.full(n, np.inf)
    for i in range(n):
        r = find(parent, i)
        low[r] = min(low[r], n2[i])
    count = 0
    for i in range(n):
        r = find(parent, i)
        count += r == i
        room = 2.0 * low[r] - 2.0 * threshold - MARGIN
        if i != r and not (room > 0.0 and 4.0 * squares(x, i, r, room) < room):
            return -1
    return count


@jit
def cliques(x, roots, close, threshold):
    """The number of components where each is a clique of the graph and every A_ii is 1
    (then A is block diagonal with blocks of ones, of rank 1 each, and that number is its
    rank); -1 otherwise. A component of m tokens has at most m (m - 1) / 2 close pairs, so
    all are cliques when the pairs counted add up to the sum of those bounds."""
    n = x.shape[0]
    sizes = np.zeros(n, np.int64)
    for i in range(n):
        if not cosine(x, i, i) > threshold:
            return -1
        sizes[roots[i]] += 1
    full, count = 0, 0
    for r in range(n):
        full += sizes[r] * (sizes[r] - 1) // 2
        count += sizes[r] > 0
    return count if full == close else -1


@jit_inline
def same_row(rows, c, dots, threshold):
    """Whether row c of rows is the row [dots > threshold]."""
    for j in range(dots.shape[0]):
        if rows[c, j] != (dots[j] > threshold):
            return False
    return True


@jit
def classes(x, members, threshold):
    """Tokens `members` (one component) grouped by their row of A: (the representatives'
    member positions, the class sizes, the class count u). Written in loops: array-wide
    comparisons and row assignments cost seconds of compile time for nothing at run time."""
    m = members.shape[0]
    cols = transposed(x, members)
    rows = np.empty((min(m, 8), m), np.bool_)
    dots = np.empty(m)
    reps, sizes = np.empty(m, np.int64), np.zeros(m, np.int64)
    u = 0
    for a in range(m):
        cosines_to(cols[:, a], cols, 0, dots)
        c = 0
        while c < u and not same_row(rows, c, dots, threshold):
            c += 1
        if c == u:
            if u == rows.shape[0]:
                grown = np.empty((2 * u, m), np.bool_)
                for r in range(u):
                    for j in range(m):
                        grown[r, j] = rows[r, j]
                rows = grown
            for j in range(m):
                rows[u, j] = dots[j] > threshold
            reps[u] = a
            u += 1
        sizes[c] += 1
    return reps[:u], sizes[:u], u


@jit
def component_tridiagonal(x, members, threshold, diag, off, at):
    """The tridiagonal form of one component's M (module docstring) into diag/off[at:at + u];
    returns u."""
    reps, sizes, u = classes(x, members, threshold)
    a = np.empty((u, u))
    for p in range(u):
        for q in range(u):
            rp, rq = members[reps[p]], members[reps[q]]
            one = cosine(x, rp, rq) > threshold
            a[p, q] = np.sqrt(np.float64(sizes[p] * sizes[q])) if one else 0.0
    tridiagonalize(a, diag[at:at + u], off[at:at + u])
    return u


@jit
def grouped(roots):
    """The tokens ordered by root, each root's in index order: np.argsort(roots,
    kind="mergesort") as a counting sort (roots lie in [0, n)), without the compile time of
    Numba's mergesort."""
    n = roots.shape[0]
    start = np.zeros(n + 1, np.int64)
    for i in range(n):
        start[roots[i] + 1] += 1
    for r in range(n):
        start[r + 1] += start[r]
    order = np.empty(n, np.int64)
    for i in range(n):
        order[start[roots[i]]] = i
        start[roots[i]] += 1
    return order


@jit
def gram_rank(x, threshold):
    """numpy.linalg.matrix_rank of A_ij = <x_i, x_j> > threshold (module docstring)."""
    n = x.shape[0]
    quick = tight(x, threshold)
    if quick >= 0:  # clean clusters or tokens apart: the count, measured cheaply
        return float(quick)
    (parent, close), roots = close_forest(x, threshold), np.empty(n, np.int64)
    for i in range(n):
        roots[i] = find(parent, i)
    clean = cliques(x, roots, close, threshold)
    if clean >= 0:  # the common case, without eigenvalues
        return float(clean)
    order = grouped(roots)
    diag, off = np.zeros(n), np.zeros(n)
    used, start = np.int64(0), 0  # not a literal 0: component_tridiagonal compiled once
    while start < n:
        stop = start + 1
        while stop < n and roots[order[stop]] == roots[order[start]]:
            stop += 1
        if stop - start == 1:  # a token alone: its 1 x 1 block A_ii
            diag[used] = 1.0 if cosine(x, order[start], order[start]) > threshold else 0.0
            used += 1
        else:
            used += component_tridiagonal(x, order[start:stop], threshold, diag, off, used)
        start = stop
    diag, off = diag[:used], off[:used]
    top = max(largest(diag, off), largest(-diag, off))
    if not top > 0.0:
        return 0.0
    tol = top * n * EPS
    return float(used - count_below(diag, off, tol) + count_below(diag, off, -tol))
