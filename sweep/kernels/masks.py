"""Which partners j token i may attend to, as a list of column indices per row.

dense: every j;  causal: j <= i;  window:W: |i - j| <= W;  groups:G: the block of i, blocks
of consecutive tokens whose sizes differ by at most one (block g is [g n // G, (g+1) n // G));
leaders:L: j < L (Karagodin, Polyanskiy, Rigollet, arXiv 2411.04990);  topk:K: every j here,
then `keep_top` keeps the K largest scores once they are known.
A row's partners are filled once per row, so the loop over j never tests the mask.
"""

import numpy as np

from sweep.kernels._jit import jit
from sweep.kernels.model import CAUSAL, GROUPS, LEADERS, WINDOW


@jit
def partner_range(i, n, mask, param):
    """(lo, hi): row i attends to lo <= j < hi (before any top-k selection)."""
    if mask == CAUSAL:
        return 0, i + 1
    if mask == WINDOW:
        return max(0, i - param), min(n, i + param + 1)
    if mask == GROUPS:
        g = ((i + 1) * param - 1) // n
        return g * n // param, (g + 1) * n // param
    if mask == LEADERS:
        return 0, param
    return 0, n


@jit
def partners(i, n, mask, param, cols):
    """cols[:m] = the partners of row i in ascending order; returns m."""
    lo, hi = partner_range(i, n, mask, param)
    for c in range(hi - lo):
        cols[c] = lo + c
    return hi - lo


@jit
def keep_top(s, cols, m, k):
    """Keep the k largest of s[:m] (ties: the smaller j first), compacted to s[:k], cols[:k].

    A stable sort of -s makes the tie rule exact, so the NumPy reference can match it.
    """
    if k >= m:
        return m
    order = np.argsort(-s[:m], kind="mergesort")[:k]
    top_s = s[:m][order]
    top_c = cols[:m][order]
    s[:k] = top_s
    cols[:k] = top_c
    return k
