"""Every scratch array of the general kernel path, allocated once per job.

`integrate` builds one `Work` and hands it down, so the time-step loop allocates nothing:
head inputs, partner lists, accumulators and noise draws reuse these arrays at every step.
Shapes for x: [n, d] and h heads: ws [5, n, d] (RK4 stages), w [n] (x's dtype: one row's
weights), keys and values [h, n, d] (x's dtype, rows M_h x_j; [0, n, d] when every matrix is
the identity, as x itself then serves), g, sh [n] float64 (one row's cosines and head
scores), parent, size [n] int64 (cluster forest), cols [n] int64 (one row's partners),
acc, xi [d] float64 (one head's sum, one token's noise), sums [2, h] float64 (energy and
entropy row sums per head), groups (the cluster-resolved observables' scratch,
groups.Groups).
"""

from typing import NamedTuple

import numpy as np

from sweep.kernels import methods
from sweep.numerics._jit import jit
from sweep.observables.groups import Groups, groups_scratch


class Work(NamedTuple):
    ws: np.ndarray
    w: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    g: np.ndarray
    sh: np.ndarray
    parent: np.ndarray
    size: np.ndarray
    cols: np.ndarray
    acc: np.ndarray
    xi: np.ndarray
    sums: np.ndarray
    groups: Groups


@jit
def workspace(x, dyn):
    """The scratch of one system x: [n, d] under the model dyn (see the module docstring)."""
    n, d = x.shape
    heads = dyn.betas.shape[0]
    mats = 0 if dyn.identity else heads
    return Work(np.empty((methods.STAGES, n, d), dtype=x.dtype), np.empty(n, dtype=x.dtype),
                np.empty((mats, n, d), dtype=x.dtype), np.empty((mats, n, d), dtype=x.dtype),
                np.empty(n, dtype=np.float64), np.empty(n, dtype=np.float64),
                np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
                np.empty(n, dtype=np.int64), np.empty(d, dtype=np.float64),
                np.empty(d, dtype=np.float64), np.empty((2, heads), dtype=np.float64),
                groups_scratch(n, d))
