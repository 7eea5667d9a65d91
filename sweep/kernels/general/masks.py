"""Which partners j token i may attend to, as a list of column indices per row.

dense: every j;  causal: j <= i;  window:W: |i - j| <= W;  groups:G: the block of i, blocks
of consecutive tokens whose sizes differ by at most one (block g is [g n // G, (g+1) n // G));
leaders:L: j < L (Karagodin, Polyanskiy, Rigollet, arXiv 2411.04990);  topk:K: every j here,
then `keep_top` keeps the K largest scores once they are known.
A row's partners are filled once per row, so the loop over j never tests the mask.
"""

from sweep.kernels.codes import CAUSAL, GROUPS, LEADERS, WINDOW
from sweep.numerics._jit import jit


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
def _worse(s, cols, a, b):
    """Entry a ranks below entry b: a lower score, or the same score and a larger j."""
    return s[a] < s[b] or (s[a] == s[b] and cols[a] > cols[b])


@jit
def _sift_down(s, cols, i, k):
    while True:
        low, left = i, 2 * i + 1
        for child in (left, left + 1):
            if child < k and _worse(s, cols, child, low):
                low = child
        if low == i:
            return
        s[i], s[low] = s[low], s[i]
        cols[i], cols[low] = cols[low], cols[i]
        i = low


@jit
def keep_top(s, cols, m, k):
    """Keep the k largest of s[:m] (ties: the smaller j), in place in s[:k], cols[:k].

    A heap of the k best seen so far, worst at the root: O(m log k), and far cheaper to
    compile than np.argsort. The kept entries come out in heap order.
    """
    if k >= m:
        return m
    for i in range(k // 2 - 1, -1, -1):
        _sift_down(s, cols, i, k)
    for c in range(k, m):
        if _worse(s, cols, 0, c):
            s[0], cols[0] = s[c], cols[c]
            _sift_down(s, cols, 0, k)
    return k
