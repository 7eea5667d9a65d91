"""Fast path for one large system: the two n x n x d products go to BLAS.

Per velocity evaluation (x: [n, d], same case as rows.py: identity matrices, one head):
  G = x x^T              BLAS gemm against a transposed copy (faster than syrk)
  W = exp(beta (G - c))  in place, exp vectorised (expfast.py); z_i = sum_j W_ij
  V = W x                BLAS gemm
  f_i = P_{x_i}(V_i / z_i)   (softmax; V_i / n unnormalized)
The time loop runs in Python: at n >= 256 one step costs a millisecond or more, so the call
overhead is noise. Rows are cut into fixed tiles of TILE whose four stages are independent,
so threads (GIL released in BLAS and in the Numba passes) share the tiles out with one
barrier per velocity evaluation. In Blocked, G and W exist one tile at a time ([TILE, n] per
thread), and the observables at a save are gathered from the same tiles, so a job needs
O(TILE n) memory per thread, never n x n (n = 50,000 would be 20 GB). Symmetric, for the
sizes where an n x n matrix is affordable (codes.SYMMETRIC_MAX_BYTES), keeps W whole and
computes only its upper tile-blocks: a quarter fewer flops and half the exponentials. Which
of the two a job runs is decided with the rest of its kernel, in sweep.execution.kernel (by size
alone, never by thread count, so a job's numbers do not depend on its threads). BLAS is held
to one thread by the runner, which runs such jobs one at a time with every thread (one level
of parallelism).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from sweep.kernels import methods
from sweep.kernels.codes import COLUMN, EULER, LAYER, SAVE_ALL, SAVE_CLOSE, TILE
from sweep.kernels.sphere import add_scaled, axpy, normalize_rows, rk4_combine
from sweep.kernels.timeloop import implement, run
from sweep.numerics._jit import jit_fast, jit_fma
from sweep.numerics.expfast import exp1, weight
from sweep.observables.extra import compute
from sweep.observables.gramobs import link_tile, stats_tile, summarize_forests
from sweep.observables.groups import groups_scratch, resolve
from sweep.observables.records import columns_above
from sweep.observables.summary import clustered_fraction, order_parameter
from sweep.observables.tiles import (
    count_after,
    finish_outside,
    finish_upper,
    outside_tile,
    outside_upper,
    stats_upper,
)


@jit_fast
def exp_rows(gram, beta, c, z):
    """gram <- exp(beta (gram - c)) in place, z[i] = its row sums.  gram: [rows, n] (a float32
    gram is exponentiated in float64 and rounded back)."""
    rows, n = gram.shape
    for i in range(rows):
        row, zi = gram[i], 0.0
        for j in range(n):
            w = exp1(beta * (row[j] - c))
            row[j] = w
            zi += w
        z[i] = zi


@jit_fma
def exp_block(w, lo, hi, beta, c):
    """w[lo:hi, lo:] <- exp(beta (w - c)) in place, in w's precision (expfast.weight); w: [n, n].
    Each row is sliced and then indexed from 0: a loop over range(lo, n) of the whole row ran
    scalar, several times slower."""
    for i in range(lo, hi):
        row = w[i, lo:]
        for j in range(row.shape[0]):
            row[j] = weight(row[j], beta, c)


@jit_fast
def finish_velocity(x, v, z, softmax, n, method, out):
    """out_i = P_{x_i}(v_i s_i), s_i = 1 / z_i (softmax) or 1 / n, n the system's token count
    (x, v, z, out: one tile's rows); v_i s_i itself for the layer method."""
    rows, d = x.shape
    for i in range(rows):
        s = 1.0 / z[i] if softmax else 1.0 / n
        dot = 0.0
        for k in range(d):
            out[i, k] = v[i, k] * s
            dot += out[i, k] * x[i, k]
        if method != LAYER:
            for k in range(d):
                out[i, k] -= dot * x[i, k]


class Blocked:
    """Work arrays for one system x: [n, d], allocated once per job, reused every step.

    Rows go in tiles of TILE: each tile's products are separate single-threaded BLAS calls,
    so the numbers depend on TILE but not on how many threads share the tiles out. The Gram
    matrix is never whole: each of min(threads, tiles) slots holds one tile of it, gram[s]:
    [TILE, n], and works through tiles s, s + slots, ... (memory TILE n per thread, not n^2).
    """

    def __init__(self, x: np.ndarray, beta: float, softmax: bool, pool=None, threads: int = 1):
        self._common(x, beta, softmax, pool, threads)
        n = x.shape[0]
        slots = max(1, min(threads, len(self.tiles)))
        self.gram = np.empty((slots, min(TILE, n), n), dtype=x.dtype)
        self.a = np.empty((slots, n))
        self.forests = np.empty((slots, n), dtype=np.int64)  # close pairs seen by each slot
        self.close = np.zeros(slots, dtype=np.int64)
        self.map = pool.map if pool is not None and slots > 1 else map

    def _common(self, x: np.ndarray, beta: float, softmax: bool, pool, threads: int) -> None:
        """The parameters, the tiles, and the arrays a step and a save need in both classes."""
        n, d = x.shape
        self.beta, self.softmax, self.c = float(beta), bool(softmax), 1.0 if softmax else 0.0
        self.tiles = [(lo, min(lo + TILE, n)) for lo in range(0, n, TILE)]
        self.xt = np.empty((d, n), dtype=x.dtype)
        self.v = np.empty((n, d), dtype=x.dtype)
        self.ws = np.empty((methods.STAGES, n, d), dtype=x.dtype)
        self.z, self.rows = np.empty(n), np.empty((n, 6))
        self.groups = groups_scratch(n, d)  # the resolved observables' (groups.py)
        self.spread = pool.map if pool is not None else map  # side by side on the threads
        parts = max(1, min(threads, n)) if pool is not None else 1
        self.parts = [(n * p // parts, n * (p + 1) // parts) for p in range(parts)]

    def by_rows(self, fn) -> None:
        """fn(lo, hi) over the rows in one part per thread, side by side: for the elementwise
        steps between velocities (each row's numbers are its own, whatever the parts)."""
        list(self.spread(lambda part: fn(*part), self.parts))

    def each_tile(self, fn, *args) -> None:
        """fn(s, k, *args) for every tile k, slot s taking tiles s, s + slots, ... in turn."""
        slots, count = len(self.gram), len(self.tiles)
        list(self.map(lambda s: [fn(s, k, *args) for k in range(s, count, slots)], range(slots)))

    def gram_tile(self, s: int, k: int, x: np.ndarray) -> np.ndarray:
        """Rows lo..hi-1 of x x^T into slot s's buffer; returns that [hi - lo, n] view."""
        lo, hi = self.tiles[k]
        return np.matmul(x[lo:hi], self.xt, out=self.gram[s, :hi - lo])

    def velocity_tile(self, s: int, k: int, x: np.ndarray, out: np.ndarray,
                      method: int) -> None:
        lo, hi = self.tiles[k]
        g = self.gram_tile(s, k, x)
        exp_rows(g, self.beta, self.c, self.z[lo:hi])
        np.matmul(g, x, out=self.v[lo:hi])
        finish_velocity(x[lo:hi], self.v[lo:hi], self.z[lo:hi], self.softmax, x.shape[0],
                        method, out[lo:hi])

    def observe_tile(self, s: int, k: int, x: np.ndarray, eps: float) -> None:
        lo = self.tiles[k][0]
        g = self.gram_tile(s, k, x)
        stats_tile(g, lo, self.beta, self.c, self.a[s], self.rows)
        self.close[s] += link_tile(g, lo, eps, self.forests[s])

    def outside_share_tile(self, s: int, k: int, x: np.ndarray) -> None:
        lo, hi = self.tiles[k]
        g = self.gram_tile(s, k, x)
        exp_rows(g, self.beta, self.c, self.z[lo:hi])
        outside_tile(g, lo, self.groups.label, self.a[s], self.rows, self.groups.outside)

    def observe(self, x: np.ndarray, eps: float, out: np.ndarray, keep: bool = False,
                level: int = SAVE_ALL) -> None:
        """out[:] = the observables of x (gramobs.py, groups.py): row statistics and close
        pairs tile by tile (gather), the forests merged (the same clusters for any split);
        where groups exist, one more pass over the tiles for the weight outside each token's
        cluster (outside). keep: see Symmetric.gather. level (codes.save_level): below
        SAVE_ALL, the columns of the levels above it are NaN and neither the cluster-resolved
        pass nor the observables of x alone run, and SAVE_CLOSE counts the close pairs alone
        (count_close); the others are those of a full save, bit for bit."""
        self.transpose(x)
        if level == SAVE_CLOSE:
            n = x.shape[0]
            self.count_close(x, eps, keep)
            out[list(columns_above(level))] = np.nan
            out[COLUMN.order_parameter] = order_parameter(x)
            out[COLUMN.clustered_fraction] = clustered_fraction(int(self.close.sum()), n)
            return
        self.forests[:] = np.arange(x.shape[0])
        self.gather(x, eps, keep)
        groups = summarize_forests(x, self.rows, int(self.close.sum()), self.forests, self.beta,
                                   self.c, out, self.groups)
        if level != SAVE_ALL:
            out[list(columns_above(level))] = np.nan
            return
        if groups > 0:
            self.outside(x)
        resolve(x, groups, self.groups, out)
        compute(x, out, self.spread)  # the observables of x alone (observables/extra.py)

    def gather(self, x: np.ndarray, eps: float, keep: bool) -> None:
        """Row statistics and forests of close pairs, tile by tile (keep: ignored, no weights
        outlive their tile here)."""
        self.close[:] = 0
        self.each_tile(self.observe_tile, x, eps)

    def close_tile(self, s: int, k: int, x: np.ndarray, eps: float) -> None:
        lo = self.tiles[k][0]
        self.close[s] += count_after(self.gram_tile(s, k, x), lo, eps)

    def count_close(self, x: np.ndarray, eps: float, keep: bool) -> None:
        """close: the close pairs, tile by tile, as gather counts them (keep: ignored)."""
        self.close[:] = 0
        self.each_tile(self.close_tile, x, eps)

    def outside(self, x: np.ndarray) -> None:
        """groups.outside of every row: the tiles' weights again (Blocked keeps none)."""
        self.each_tile(self.outside_share_tile, x)

    def transpose(self, x: np.ndarray) -> None:
        """xt = x^T, a part of the rows per thread."""
        self.by_rows(lambda lo, hi: np.copyto(self.xt[:, lo:hi], x[lo:hi].T))

    def velocity(self, x: np.ndarray, out: np.ndarray, method: int = EULER) -> None:
        """out = P_x(v) for every token (v itself for the layer method)."""
        self.transpose(x)
        self.each_tile(self.velocity_tile, x, out, method)


class Symmetric(Blocked):
    """Blocked for systems whose n x n weights fit in memory (sweep.execution.kernel). W is
    symmetric, so only its blocks on and right of the diagonal are computed, W[I, I:] for each
    row tile I (half the Gram flops, half the exponentials), and the blocks left of the
    diagonal are read as the transposes of those above it:
        [V_I | z_I] = W[I, I:] [x | 1][I:] + W[:I, I]^T [x | 1][:I],
    3 n^2 d flops per velocity instead of 4 (the column of ones gives each row's sum of
    weights from the same products, where a pass of its own over W took a tenth of their
    time). Two phases, all weights then all products; a tile is computed whole by one thread
    in each, so the numbers do not depend on the threads.
    A save (observe) computes the same upper blocks of G, leaves their weights in w (for the
    weight outside each cluster and, unless it is the job's last save, for the step that
    follows it). Memory: the n x n w (kernel.job_bytes counts all of it) and a few
    n-vectors per tile for a save.
    """

    def __init__(self, x: np.ndarray, beta: float, softmax: bool, pool=None, threads: int = 1):
        self._common(x, beta, softmax, pool, threads)
        n, tiles = x.shape[0], len(self.tiles)
        self.w = np.empty((n, n), dtype=x.dtype)
        # x with a column of ones, so each product also gives its rows' sums of weights, and
        # its transpose (whose first d rows are the Gram products' x^T)
        d = x.shape[1]
        self.xa = np.ones((n, d + 1), dtype=x.dtype)
        self.xta = np.ones((d + 1, n), dtype=x.dtype)
        self.xt = self.xta[:d]
        self.v = np.empty_like(self.xa)  # the products with the blocks on and right of the diagonal
        # ... and with those above it, transposed where W is the right operand (product_tile)
        self.w_right = x.dtype == np.float64
        self.u = [np.empty((d + 1, hi - lo) if self.w_right else (hi - lo, d + 1), x.dtype)
                  for lo, hi in self.tiles]
        # a save's statistics, per tile (tiles.stats_upper): any thread may take any tile
        self.a = np.empty((tiles, n))
        self.cols, self.diag = np.empty((tiles, 4, n)), np.empty(n)
        self.part = np.empty(n)  # a save's outside sums right of the diagonal blocks
        self.forests = np.empty((tiles, n), dtype=np.int64)
        self.close = np.zeros(tiles, dtype=np.int64)
        self.tile_map = pool.map if pool is not None and tiles > 1 else map
        self.weights_of = None  # the state whose weights w holds, when a save left them there

    def gram_upper(self, k: int, x: np.ndarray) -> tuple[int, int]:
        """Tile k's blocks on and right of the diagonal of x x^T into w[lo:hi, lo:] (the one
        product that a velocity's weights and every save start from); returns (lo, hi)."""
        lo, hi = self.tiles[k]
        np.matmul(x[lo:hi], self.xt[:, lo:], out=self.w[lo:hi, lo:])
        return lo, hi

    def weights_tile(self, k: int, x: np.ndarray) -> None:
        lo, hi = self.gram_upper(k, x)
        exp_block(self.w, lo, hi, self.beta, self.c)

    def product_tile(self, k: int, x: np.ndarray, out: np.ndarray, method: int) -> None:
        """[v | z] for tile k's rows: [x | 1] times the blocks on and right of the diagonal,
        plus the transposes of those above it (z, the rows' sums of weights, comes out of the
        same products as v). In float64 the latter as ([x | 1]^T W[:lo, I])^T: OpenBLAS runs
        W as the right operand at 66 GFLOP/s on one thread, transposed on the left at 48; in
        float32 the two run alike, and the step was slower with the former
        (benchmarks/HISTORY.md)."""
        lo, hi = self.tiles[k]
        v, right, above = self.v[lo:hi], self.w[lo:hi, lo:], self.w[:lo, lo:hi]
        np.matmul(right, self.xa[lo:], out=v)
        if lo > 0:
            if self.w_right:
                np.add(v, np.matmul(self.xta[:, :lo], above, out=self.u[k]).T, out=v)
            else:
                np.add(v, np.matmul(above.T, self.xa[:lo], out=self.u[k]), out=v)
        self.z[lo:hi] = v[:, -1]
        finish_velocity(x[lo:hi], v, self.z[lo:hi], self.softmax, x.shape[0], method,
                        out[lo:hi])

    def velocity(self, x: np.ndarray, out: np.ndarray, method: int = EULER) -> None:
        d = x.shape[1]
        self.by_rows(lambda lo, hi: (np.copyto(self.xt[:, lo:hi], x[lo:hi].T),
                                     np.copyto(self.xa[lo:hi, :d], x[lo:hi])))
        tiles = range(len(self.tiles))
        if self.weights_of is not x:  # else a save has just left x's weights in w
            list(self.tile_map(lambda k: self.weights_tile(k, x), tiles))
        self.weights_of = None
        list(self.tile_map(lambda k: self.product_tile(k, x, out, method), tiles))

    def observe_upper(self, k: int, x: np.ndarray, eps: float) -> None:
        lo, hi = self.gram_upper(k, x)
        self.close[k] = stats_upper(self.w, lo, hi, self.beta, self.c, eps, self.a[k],
                                    self.rows, self.cols[k], self.diag, self.forests[k])

    def close_upper(self, k: int, x: np.ndarray, eps: float, keep: bool) -> None:
        lo, hi = self.gram_upper(k, x)
        self.close[k] = count_after(self.w[lo:hi], lo, eps)
        if keep:
            exp_block(self.w, lo, hi, self.beta, self.c)

    def count_close(self, x: np.ndarray, eps: float, keep: bool) -> None:
        """close: the close pairs from the upper tile-blocks, as gather counts them; keep: the
        tiles' weights, exp_block's (weights_tile's bits), left in w for the next velocity at
        x, as gather leaves them."""
        list(self.tile_map(lambda k: self.close_upper(k, x, eps, keep), range(len(self.tiles))))
        self.weights_of = x if keep else None

    def outside_upper_tile(self, k: int) -> None:
        lo, hi = self.tiles[k]
        outside_upper(self.w, lo, hi, self.groups.label, self.a[k], self.part, self.cols[k, 0])

    def gather(self, x: np.ndarray, eps: float, keep: bool) -> None:
        """Blocked.gather from the Gram matrix's upper tile-blocks only: each pair's entry
        counts for its row and its column (tiles.stats_upper, finish_upper). keep: the
        weights left in w serve the next velocity at x (the step after a save)."""
        list(self.tile_map(lambda k: self.observe_upper(k, x, eps), range(len(self.tiles))))
        self.weights_of = x if keep else None
        finish_upper(self.diag, TILE, self.cols, self.beta, self.c, self.rows)

    def outside(self, x: np.ndarray) -> None:
        """groups.outside from the weights gather left in w (the statistics in cols are
        spent: their first row holds each tile's column sums now)."""
        list(self.tile_map(self.outside_upper_tile, range(len(self.tiles))))
        finish_outside(TILE, self.cols, self.part, self.rows, self.groups.outside)


@dataclass(frozen=True)
class System:
    """One system of the blocked path for the time loop: its work arrays and how it steps;
    also its layout for the methods (kernels/methods.py), whose primitives are these Python
    methods (ws: the work arrays' stages)."""

    work: Blocked
    method: int
    dt: float
    eps: float
    level: int = SAVE_ALL

    @property
    def ws(self) -> np.ndarray:
        return self.work.ws

    def advance(self, x: np.ndarray, tick: int, steps: int, stop: np.ndarray) -> int:
        for r in range(steps):
            if stop[0] != 0:
                return r
            methods.step(self, x, tick + r)
        return steps

    def record(self, x: np.ndarray, obs: np.ndarray, s: int) -> None:
        # a save that is not the job's last may leave its weights for the step after it
        self.work.observe(x, self.eps, obs[s], keep=s + 1 < obs.shape[0], level=self.level)

    def velocity(self, x: np.ndarray, k: np.ndarray, stage: int) -> None:
        self.work.velocity(x, k, self.method)

    def diffuse(self, x: np.ndarray, k: np.ndarray, tick: int) -> None:
        """No noise on the fast paths."""

    def shift(self, out: np.ndarray, x: np.ndarray, frac: float, k: np.ndarray) -> None:
        a = frac * self.dt
        if out is x:
            self.work.by_rows(lambda lo, hi: add_scaled(x[lo:hi], a, k[lo:hi]))
        else:
            self.work.by_rows(lambda lo, hi: axpy(out[lo:hi], x[lo:hi], a, k[lo:hi]))

    def rk4_combine(self, x, k1, k2, k3, k4) -> None:
        self.work.by_rows(lambda lo, hi: rk4_combine(x[lo:hi], self.dt, k1[lo:hi], k2[lo:hi],
                                                     k3[lo:hi], k4[lo:hi]))

    def normalise(self, x: np.ndarray) -> None:
        self.work.by_rows(lambda lo, hi: normalize_rows(x[lo:hi]))


implement(System, System.advance, System.record)
methods.implement(System, **{name: getattr(System, name) for name in
                             ("velocity", "diffuse", "shift", "rk4_combine", "normalise")})


def integrate_blocked(x, beta, softmax, method, dt, save_stride, eps, obs, traj, stop,
                      threads=1, symmetric=False, level=SAVE_ALL):
    """drive.integrate for one large system, with rows.integrate_rows' arguments and results
    (level as there: NaN in the columns a save below SAVE_ALL leaves out); threads share the
    row tiles out. symmetric: Symmetric or Blocked (the job's KernelPlan says which, by size
    alone). Call with BLAS held to one thread (runner.py does)."""
    kind = Symmetric if symmetric else Blocked
    with ThreadPoolExecutor(threads) if threads > 1 else nullcontext() as pool:
        system = System(kind(x, beta, softmax, pool, threads), method, dt, eps, level)
        return run(system, x, save_stride, obs, traj, stop)  # the steps call BLAS
