"""Many small systems at once, one per SIMD lane: the fast path for n < 256, d 2 and 3.

A batch of systems of one shape is held as X: [n, d, L], system b in lane b, so every inner
loop runs over the L systems with unit stride and vectorises whatever n is (each vector
instruction advances 4 systems on AVX2, 8 on AVX-512). Nothing is summed across lanes, so
the lanes never meet: a system's numbers are the same whatever batch, block or lane it runs
in, or alone (in a block of its own, padded to the vector width: tests/test_lanes.py).

At (32, 2), the reference workload's shape, a layer step with a save of the clustered fraction
at every step costs about half of rows.py's per system in batches (docs/performance.md).
A save that records only the order parameter and the clustered fraction (SAVE_CLOSE) counts
the close pairs inside the next step's pair loop (its g_ij are the save's); any other save
builds the system's Gram matrix from its lane (the same g_ij) and uses gramobs as rows.py
does. Float32 systems are computed in float64 and rounded to float32 after every step.
The velocity and the layout are lanestep.py's: a step is methods.step over Lanes. Each block
runs in timeloop.run as a Block, whose save ends a system that is not finite where it ended
while the others go on.
"""

from typing import NamedTuple

import numpy as np

from sweep.kernels import methods
from sweep.kernels.codes import (
    COLUMN,
    LANES,
    NONFINITE,
    OK,
    SAVE_ALL,
    SAVE_CLOSE,
    STOPPED,
)
from sweep.kernels.lanestep import Lanes, count_close, lane_gram
from sweep.kernels.timeloop import implement
from sweep.numerics import simd as v
from sweep.numerics._jit import jit, jit_fma, jit_fma_inline
from sweep.numerics.expfast import exp1
from sweep.numerics.passing import Passing
from sweep.observables.gramobs import saves_of
from sweep.observables.groups import Groups, groups_scratch
from sweep.observables.summary import clustered_fraction

ORDER, CLOSE = COLUMN.order_parameter, COLUMN.clustered_fraction  # what SAVE_CLOSE records

# codes.LANES_MAX_D: up to here lanes beat rows.py per system in batches. From d = 4 the pair
# loop ran over lanes in memory: rows.py was 2-3.3x faster per system at (32, 6), (32, 8),
# (64, 4), (128, 4), (128, 8) with every observable saved every 10 steps, and at n >= 64 even
# with two saves; lanes kept 1.16-1.36x only at n = 32 with the clustered fraction alone
# (benchmarks/HISTORY.md).
# codes.LANES: systems per block (X of (32, 2) is 32 KiB, the stages as much again). A block
# costs about the same for any count up to the vector width, so a system alone costs what a
# block of WIDTH does (benchmarks/HISTORY.md: lanes without columns).


@jit_fma
def round32(X):
    """X <- X rounded to float32 (a float32 system's state after every step)."""
    n, d, L = X.shape
    for i in range(n):
        for k in range(d):
            for b in range(L):
                X[i, k, b] = np.float32(X[i, k, b])


@jit_fma
def finite_lanes(X, t):
    """t[b] = 0 where lane b is finite, else NaN (x * 0 is NaN for inf and NaN, exactly 0 for
    the rest: a sum instead of a branch per number)."""
    n, d, L = X.shape
    t[:] = 0.0
    for i in range(n):
        for k in range(d):
            for b in range(L):
                t[b] += X[i, k, b] * 0.0


@jit
def order_lanes(X, m, r):
    """r[b] = |(1/n) sum_i x_i| of lane b, as summary.order_parameter computes it (compiled,
    as it is, without contraction: the same bits); m: [L] scratch."""
    n, d, L = X.shape
    r[:] = 0.0
    for k in range(d):
        m[:] = 0.0
        for i in range(n):
            for b in range(L):
                m[b] += X[i, k, b]
        for b in range(L):
            q = m[b] / n
            r[b] += q * q
    for b in range(L):
        r[b] = np.sqrt(r[b])


@jit
def copy_lane(X, b, x):
    """x <- lane b of X (rounded to x's dtype)."""
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            x[i, k] = X[i, k, b]


class Block(NamedTuple):
    """Systems lo..hi-1 of a batch for the time loop (timeloop.run): their layout (lanes), the
    state X: [n, d, P] as the saves read it, each lane's beta and eps ([P]), and the block's
    rows of the outputs (xs, obs, traj, status, recorded); alive: [P], whose run goes on;
    last: [1], the save whose close pairs the next step counts (SAVE_CLOSE); t, m, r: [P] and
    g, e, rows, acc, parent, grp: a save's scratch; weighted, pairs: the save's functions
    (gramobs.saves), passed by address."""

    lanes: Lanes
    X: np.ndarray
    beta: np.ndarray
    eps: np.ndarray
    xs: np.ndarray
    obs: np.ndarray
    traj: np.ndarray
    status: np.ndarray
    recorded: np.ndarray
    alive: np.ndarray
    last: np.ndarray
    level: int
    single: bool
    t: np.ndarray
    m: np.ndarray
    r: np.ndarray
    g: np.ndarray
    e: np.ndarray
    rows: np.ndarray
    acc: np.ndarray
    parent: np.ndarray
    grp: Groups
    weighted: object
    pairs: object


@jit_fma_inline
def _block(xs, betas, softmax, method, dts, epss, lo, hi, obs, traj, status, recorded, level,
           weighted, pairs):
    """Systems lo..hi-1 as a Block: P lanes, the last system repeated up to a multiple of the
    vector width (the extra lanes' numbers are never read)."""
    n, d = xs.shape[1], xs.shape[2]
    L = hi - lo
    P = -(-L // v.WIDTH) * v.WIDTH
    status[lo:hi] = OK
    recorded[lo:hi] = 0
    X, bs, ts, es = np.empty((n, d, P)), np.empty(P), np.empty(P), np.empty(P)
    for b in range(P):
        src = lo + min(b, L - 1)
        bs[b], ts[b], es[b] = betas[src], dts[src], epss[src]
        for i in range(n):
            for k in range(d):
                X[i, k, b] = xs[src, i, k]
    lanes = Lanes(method, np.empty((methods.STAGES, n, d, P)), bs, 1.0 if softmax else 0.0,
                  softmax, ts, ts / 6.0, 1.0 - es, np.empty((n, P)), np.empty(P), np.empty(P),
                  np.zeros(P, dtype=np.int64), np.zeros(1, dtype=np.bool_))
    return Block(lanes, X, bs, es, xs[lo:hi], obs[lo:hi], traj[lo:hi], status[lo:hi],
                 recorded[lo:hi], np.ones(P, dtype=np.bool_), np.zeros(1, dtype=np.int64),
                 level, xs.itemsize == 4, np.empty(P), np.empty(P), np.empty(P),
                 np.empty((n, n)), np.empty((n, n)), np.empty((n, 6)), np.empty((4, n)),
                 np.empty(n, dtype=np.int64), groups_scratch(n, d), weighted, pairs)


@jit_fma_inline
def _close_pairs(blk, s):
    """obs[b, s] of each running system gets the close pairs its lane counted (count)."""
    n, count, alive, obs = blk.X.shape[0], blk.lanes.count, blk.alive, blk.obs
    for b in range(obs.shape[0]):
        if alive[b]:
            obs[b, s, CLOSE] = clustered_fraction(count[b], n)


@jit_fma_inline
def _advance(blk, X, tick, steps, stop):
    """timeloop.advance for a block: steps of every lane, the first counting the close pairs
    of the save before it when the saves record only those."""
    lanes, single = blk.lanes, blk.single
    counts = blk.level == SAVE_CLOSE
    done = steps
    for k in range(steps):
        if stop[0] != 0:
            done = k
            break
        counting = k == 0 and counts
        lanes.counting[0] = counting
        if counting:
            lanes.count[:] = 0
        methods.step(lanes, X, tick + k)
        if single:
            round32(X)
        if counting:
            _close_pairs(blk, blk.last[0])
    return done


@jit_fma_inline
def _record(blk, X, b, out):
    """out = the observables of lane b from its Gram matrix as velocity computes it (not for
    SAVE_CLOSE, whose order parameter _save takes from order_lanes)."""
    x, g, e, beta, c = blk.xs[b], blk.g, blk.e, blk.beta[b], blk.lanes.c
    copy_lane(X, b, x)
    lane_gram(X, b, g)
    if blk.level == SAVE_ALL:
        for i in range(g.shape[0]):
            for j in range(g.shape[1]):
                e[i, j] = exp1(beta * (g[i, j] - c))
        weighted = blk.weighted
        weighted(x, g, e, beta, c, blk.eps[b], out, blk.rows, blk.acc, blk.parent, blk.grp)
    else:
        pairs = blk.pairs
        pairs(x, g, blk.eps[b], blk.level, out, blk.rows, blk.acc, blk.parent)


@jit_fma_inline
def _save(blk, X, obs, traj, s):
    """timeloop.save for a block: each running system recorded if finite, else ended where it
    is (NONFINITE); whether any runs on. The block's arrays are taken out of it once (Numba
    counts a reference each time: per lane, a sizeable share of a small system's step)."""
    t, r, xs, alive, status, recorded = blk.t, blk.r, blk.xs, blk.alive, blk.status, blk.recorded
    close = blk.level == SAVE_CLOSE  # the order parameter now, the close pairs next step
    finite_lanes(X, t)
    if close:
        order_lanes(X, blk.m, r)
    blk.last[0] = s
    going = False
    for b in range(obs.shape[0]):
        if not alive[b]:
            continue
        if t[b] != 0.0:  # not finite: the run ends here, x as it is
            copy_lane(X, b, xs[b])
            alive[b], status[b] = False, NONFINITE
            continue
        going = True
        recorded[b] = s + 1
        if close:
            obs[b, s, ORDER] = r[b]
        else:
            _record(blk, X, b, obs[b, s])
        if traj.shape[1] > 0:  # copied, not assigned: an array assignment compiles a
            copy_lane(X, b, xs[b])  # shape check whose error message costs seconds
            copy_lane(X, b, traj[b, s])
    return going


run = implement(Block, _advance, save_fn=_save)


@jit_fma_inline
def _finish(blk):
    """After the last save: each running system's x, and its close pairs there."""
    for b in range(blk.xs.shape[0]):
        if blk.alive[b]:
            copy_lane(blk.X, b, blk.xs[b])
    if blk.level == SAVE_CLOSE:
        count_close(blk.X, blk.lanes.eps1, blk.lanes.G, blk.lanes.count)
        _close_pairs(blk, blk.obs.shape[1] - 1)


@jit_fma
def _integrate_lanes(xs, betas, softmax, method, dts, save_stride, epss, obs, traj, stop,
                     status, recorded, level, weighted, pairs):
    """rows.integrate_rows_batch's arguments and results, the systems in blocks of up to
    LANES lanes (blocks of near-equal size, each padded to a multiple of simd.WIDTH),
    each block run to the end before the next; recorded: [B] int64, the saves each system
    recorded. One compiled function for the whole loop: each level of jitted calls
    recompiles the code under it (a block's own function cost seconds of compile time)."""
    B = xs.shape[0]
    blocks = -(-B // LANES)
    for k in range(blocks):
        lo, hi = k * B // blocks, (k + 1) * B // blocks
        blk = _block(xs, betas, softmax, method, dts, epss, lo, hi, obs, traj, status,
                     recorded, level, weighted, pairs)
        if run(blk, blk.X, save_stride, blk.obs, blk.traj, stop)[0] == STOPPED:
            return STOPPED
        _finish(blk)
    return OK


# the entry, called from Python: each save's observables computed by gramobs' functions,
# passed by address (numerics/passing.py), not compiled into the path's code
integrate_lanes = Passing(_integrate_lanes, saves_of)
