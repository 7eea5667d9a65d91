"""Fast path for one large system: the two n x n x d products go to BLAS.

Per velocity evaluation (x: [n, d], same case as fast.py: identity matrices, one head):
  G = x x^T              BLAS gemm against a transposed copy (measured faster than syrk)
  W = exp(beta (G - c))  in place, exp vectorised (expfast.py); z_i = sum_j W_ij
  V = W x                BLAS gemm
  f_i = P_{x_i}(V_i / z_i)   (softmax; V_i / n unnormalized)
The time loop runs in Python: at n >= 256 one step costs a millisecond or more, so the call
overhead is noise. Rows are cut into fixed tiles of TILE whose four stages are independent,
so threads (GIL released in BLAS and in the Numba passes) share the tiles out with one
barrier per velocity evaluation; BLAS itself is held to one thread by the runner, which runs
such jobs one at a time with every thread (one level of parallelism).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np

from sweep.kernels._jit import jit_fast
from sweep.kernels.drive import NONFINITE, OK, STOPPED
from sweep.kernels.expfast import exp_inplace
from sweep.kernels.gramobs import stats_rows, summarize
from sweep.kernels.integrators import EULER
from sweep.kernels.sphere import all_finite, axpy, normalize_rows

TILE = 256  # rows per BLAS call; fixed, so results never depend on the thread count


@jit_fast
def exp_rows(gram, beta, c, z, a, t):
    """gram <- exp(beta (gram - c)) in place, z[i] = its row sums.  gram: [rows, n];
    a, t: [n] float64 scratch (the rows of a float32 gram are exponentiated in float64)."""
    rows, n = gram.shape
    for i in range(rows):
        row = gram[i]
        for j in range(n):
            a[j] = beta * (row[j] - c)
        exp_inplace(a, t)
        zi = 0.0
        for j in range(n):
            row[j] = a[j]
            zi += a[j]
        z[i] = zi


@jit_fast
def finish_velocity(x, v, z, softmax, out):
    """out_i = P_{x_i}(v_i s_i), s_i = 1 / z_i (softmax) or 1 / n."""
    n, d = x.shape
    for i in range(n):
        s = 1.0 / z[i] if softmax else 1.0 / n
        dot = 0.0
        for k in range(d):
            out[i, k] = v[i, k] * s
            dot += out[i, k] * x[i, k]
        for k in range(d):
            out[i, k] -= dot * x[i, k]


class Blocked:
    """Work arrays for one system x: [n, d], allocated once per job, reused every step.

    Rows go in tiles of TILE: each tile's products are separate single-threaded BLAS calls,
    so the numbers depend on TILE but not on how many threads share the tiles out.
    """

    def __init__(self, x: np.ndarray, beta: float, softmax: bool, pool=None):
        n, d = x.shape
        self.beta, self.softmax, self.c = float(beta), bool(softmax), 1.0 if softmax else 0.0
        self.gram = np.empty((n, n), dtype=x.dtype)
        self.xt = np.empty((d, n), dtype=x.dtype)
        self.v = np.empty((n, d), dtype=x.dtype)
        self.ws = np.empty((5, n, d), dtype=x.dtype)
        self.z = np.empty(n)
        self.tiles = [(lo, min(lo + TILE, n)) for lo in range(0, n, TILE)]
        self.a, self.t = np.empty((len(self.tiles), n)), np.empty((len(self.tiles), n))
        self.map = pool.map if pool is not None else map

    def each_tile(self, fn, *args) -> None:
        list(self.map(lambda k: fn(k, *args), range(len(self.tiles))))

    def gram_tile(self, k: int, x: np.ndarray) -> None:
        lo, hi = self.tiles[k]
        np.matmul(x[lo:hi], self.xt, out=self.gram[lo:hi])

    def velocity_tile(self, k: int, x: np.ndarray, out: np.ndarray) -> None:
        lo, hi = self.tiles[k]
        self.gram_tile(k, x)
        exp_rows(self.gram[lo:hi], self.beta, self.c, self.z[lo:hi], self.a[k], self.t[k])
        np.matmul(self.gram[lo:hi], x, out=self.v[lo:hi])
        finish_velocity(x[lo:hi], self.v[lo:hi], self.z[lo:hi], self.softmax, out[lo:hi])

    def stats_tile(self, k: int, rows: np.ndarray) -> None:
        lo, hi = self.tiles[k]
        stats_rows(self.gram, lo, hi, self.beta, self.c, self.a[k], self.t[k], rows)

    def observe(self, x: np.ndarray, eps: float, out: np.ndarray, rows: np.ndarray) -> None:
        """out[:] = the observables of x (gramobs.py), row statistics tile by tile."""
        self.form_gram(x)
        self.each_tile(self.stats_tile, rows)
        summarize(x, self.gram, self.beta, self.c, eps, out, rows)

    def form_gram(self, x: np.ndarray) -> None:
        np.copyto(self.xt, x.T)
        self.each_tile(self.gram_tile, x)

    def velocity(self, x: np.ndarray, out: np.ndarray) -> None:
        np.copyto(self.xt, x.T)
        self.each_tile(self.velocity_tile, x, out)

    def step(self, x: np.ndarray, method: int, dt: float) -> None:
        """One euler or rk4 step of x in place, then renormalisation (as integrators.py)."""
        k1, k2, k3, k4, y = self.ws
        self.velocity(x, k1)
        if method == EULER:
            axpy(x, x, dt, k1)
        else:
            for k_in, k_out, h in ((k1, k2, 0.5 * dt), (k2, k3, 0.5 * dt), (k3, k4, dt)):
                axpy(y, x, h, k_in)
                self.velocity(y, k_out)
            rk4_combine(x, dt, k1, k2, k3, k4)
        normalize_rows(x)


@jit_fast
def rk4_combine(x, dt, k1, k2, k3, k4):
    h = dt / 6.0
    n, d = x.shape
    for i in range(n):
        for k in range(d):
            x[i, k] += h * (k1[i, k] + 2.0 * k2[i, k] + 2.0 * k3[i, k] + k4[i, k])


def integrate_blocked(x, beta, softmax, method, dt, save_stride, eps, obs, traj, stop,
                      threads=1):
    """drive.integrate for one large system, with fast.integrate_rows' arguments and results;
    threads share the row tiles out. Call with BLAS held to one thread (runner.py does)."""
    with ThreadPoolExecutor(threads) if threads > 1 else nullcontext() as pool:
        return _integrate(Blocked(x, beta, softmax, pool), x, method, dt, save_stride, eps,
                          obs, traj, stop)


def _integrate(work, x, method, dt, save_stride, eps, obs, traj, stop):
    n = x.shape[0]
    rows = np.empty((n, 4))
    for s in range(obs.shape[0]):
        if s > 0:
            for _ in range(save_stride):
                work.step(x, method, dt)
        if not all_finite(x):
            return NONFINITE, s
        work.observe(x, eps, obs[s], rows)
        if traj.shape[0] > 0:
            traj[s] = x
        if stop[0] != 0:
            return STOPPED, s + 1
    return OK, obs.shape[0]
