"""One job: draw the start, pick the compiled kernel, return arrays. No I/O.

Randomness enters here and nowhere else: the start depends only on (seed, init, n, d);
random attention matrices only on (seed, d, heads, qk, v), the FFN matrix on (seed, d, ffn)
and the noise stream on (seed, n, d), so every beta (and every noise level) of a sweep shares
its start, its matrices and its Brownian increments.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass

import numpy as np

from sweep.core import inputs, matrices, states
from sweep.core.config import stable_hash
from sweep.core.grid import Job
from sweep.core.layers import cost, params, stack
from sweep.kernels.blocked import TILE, integrate_blocked, symmetric_fits
from sweep.kernels.codes import (
    LAYER_SERIES,
    METHOD_CODES,
    NONFINITE,
    OBSERVABLES,
    STATUS_NONFINITE,
    STATUS_OK,
    STOPPED,
)
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import Dynamics, dynamics
from sweep.kernels.rows import integrate_rows


class Stopped(Exception):
    """The job was abandoned on request before it finished."""


@dataclass(frozen=True)
class JobResult:
    observables: np.ndarray  # [n_time, len(OBSERVABLES)] float64; NaN after a blow-up
    status: int
    wall_seconds: float
    positions: np.ndarray | None = None  # [n, d] final, or [n_time, n, d] trajectory


def _rng(seed: int, **parts) -> np.random.Generator:
    return np.random.default_rng([seed, int(stable_hash(parts), 16)])


def start_rng(job: Job) -> np.random.Generator:
    """The generator for the initial state: a function of (seed, init, n, d) alone."""
    return _rng(job.seed, init=asdict(job.init), n=job.model.n, d=job.model.d)


def initial_state(job: Job) -> np.ndarray:
    """[n, d]: unit rows, except a file's rows for a layer model whose blocks normalise
    (norm: post | pre | peri), which take them as they are (hidden states)."""
    m, init = job.model, job.init
    as_is = m.layers is not None and m.norm != "sphere"
    given = (inputs.start(init.path, job.source, m.n, m.d, job.seed, unit=not as_is)
             if init.kind == "file" else None)
    return states.draw(init, m.n, m.d, start_rng(job), given)


def noise_key(job: Job) -> int:
    """The seed of the job's counter-based noise stream: a function of (seed, n, d)."""
    return int(stable_hash({"noise": job.seed, "n": job.model.n, "d": job.model.d}), 16) >> 1


def job_dynamics(job: Job) -> Dynamics:
    """The compiled model's parameters: matrices drawn or read, the noise stream keyed,
    betas times the beta_scale factor."""
    m = job.model
    qk, v = matrices.attention(m, _rng(job.seed, d=m.d, heads=m.heads, qk=m.qk, v=m.v),
                               job.source)
    ffn = matrices.ffn(m, _rng(job.seed, d=m.d, ffn=m.ffn), job.source)
    f = m.beta_factor
    head_beta = None if m.head_beta is None else [b * f for b in m.head_beta]
    return dynamics(m.attention, m.beta * f, heads=m.heads, head_beta=head_beta, qk=qk, v=v,
                    mask=m.mask, noise=m.noise, noise_key=noise_key(job), ffn=ffn)


def simulate(job: Job, positions: str = "none", stop: np.ndarray | None = None,
             threads: int = 1) -> JobResult:
    """Integrate one job. positions: none | final | trajectory. stop: [1] int64 flag.
    threads: for a "blocked" job (see strategy), the threads its row tiles may use."""
    if job.model.layers is not None:
        return simulate_layers(job, positions, stop)
    t0 = time.perf_counter()
    integ, model = job.integrate, job.model
    x = np.ascontiguousarray(initial_state(job), dtype=np.dtype(integ.dtype))
    obs = np.full((integ.n_saves, len(OBSERVABLES)), np.nan)
    n_traj = integ.n_saves if positions == "trajectory" else 0
    traj = np.full((n_traj, model.n, model.d), np.nan, dtype=x.dtype)
    flag = np.zeros(1, dtype=np.int64) if stop is None else stop
    status, _ = _integrate(job, x, obs, traj, flag, threads)
    if status == STOPPED:
        raise Stopped(job.id)
    kept = {"none": None, "final": x, "trajectory": traj}[positions]
    return JobResult(obs, STATUS_NONFINITE if status == NONFINITE else STATUS_OK,
                     time.perf_counter() - t0, kept)


def simulate_layers(job: Job, positions: str = "none",
                    stop: np.ndarray | None = None) -> JobResult:
    """One layer model (docs/layers.md): its blocks drawn or read, h_0 through them, every
    layer observed; observables [layers + 1, len(OBSERVABLES) + 1] (token_norm last)."""
    t0 = time.perf_counter()
    blocks = params.blocks(job, functools.partial(_rng, job.seed))
    flag = np.zeros(1, dtype=np.int64) if stop is None else stop
    status, obs, kept = stack.run(job.model, initial_state(job), blocks, noise_key(job),
                                  float(job.integrate.cluster_eps), flag,
                                  positions == "trajectory")
    if status == STOPPED:
        raise Stopped(job.id)
    kept = {"none": None, "final": kept[-1], "trajectory": kept}[positions]
    return JobResult(obs, STATUS_NONFINITE if status == NONFINITE else STATUS_OK,
                     time.perf_counter() - t0, kept)


# The fast kernels shift exponents by c = 1 (softmax) and clamp them to [-700, 708]; these
# bounds keep every exponent inside that range (softmax: RK4 stages leave the sphere by at
# most ~dt^2, so beta (<y_i, y_j> - 1) <= beta dt^2), where the result is exactly the model's.
FAST_SOFTMAX_MAX_BETA_DT2 = 500.0
FAST_UNNORMALIZED_MAX_BETA = 300.0
# From n = 256 one step is dominated by two n x n x d products, where BLAS beats the serial
# kernel's loops (benchmarks/run.py times both strategies side by side).
BLOCKED_MIN_N = 256


def _use_fast_path(job: Job) -> bool:
    """Whether the fast kernels (identity matrices, one head, dense, no noise) cover the job."""
    model, integ = job.model, job.integrate
    plain = (model.heads == 1 and model.head_beta is None and model.qk == "identity"
             and model.v in ("identity", "qk") and model.mask == "dense"
             and model.noise == 0.0 and model.ffn == "none")
    if not plain:
        return False
    beta = model.beta * model.beta_factor
    if model.attention == "softmax":
        return beta * integ.dt**2 <= FAST_SOFTMAX_MAX_BETA_DT2
    if model.attention == "unnormalized":
        return beta * (1.0 + integ.dt**2) <= FAST_UNNORMALIZED_MAX_BETA
    return False


def strategy(job: Job) -> str:
    """general (drive.py), rows (fast.py: one serial compiled call) or blocked (blocked.py:
    BLAS for the two n x n x d products on fixed row tiles, which a job can share over
    threads; runner.py says when it does); layers for a layer model (sweep.core.layers)."""
    if job.model.layers is not None:
        return "layers"
    if not _use_fast_path(job):
        return "general"
    return "blocked" if job.model.n >= BLOCKED_MIN_N else "rows"


def _integrate(job: Job, x, obs, traj, flag, threads: int):
    model, integ = job.model, job.integrate
    common = (METHOD_CODES[integ.method], float(integ.dt), integ.save_stride,
              float(integ.cluster_eps), obs, traj, flag)
    how = strategy(job)
    if how == "general":
        return integrate(x, job_dynamics(job), *common)
    beta, softmax = float(model.beta * model.beta_factor), model.attention == "softmax"
    if how == "rows":
        return integrate_rows(x, beta, softmax, *common)
    return integrate_blocked(x, beta, softmax, *common, threads=threads)


def times(integ) -> np.ndarray:
    """The save grid 0, save_every, ..., t_max."""
    return np.arange(integ.n_saves) * integ.save_every


def records(job: Job) -> tuple[str, np.ndarray]:
    """(dimension, its values) of a job's rows of observables: ("time", the save grid) for a
    flow, ("layer", 0..L) for a layer model."""
    if job.model.layers is not None:
        return "layer", np.arange(job.model.layers + 1)
    return "time", times(job.integrate)


def columns(job: Job) -> tuple[str, ...]:
    """The names of a job's columns of observables (a layer model adds LAYER_SERIES)."""
    return OBSERVABLES + (tuple(LAYER_SERIES) if job.model.layers is not None else ())


def t_cluster(t: np.ndarray, clustered: np.ndarray) -> float:
    """First recorded time with clustered fraction >= 1/2; NaN if never."""
    hit = np.flatnonzero(clustered >= 0.5)
    return float(t[hit[0]]) if hit.size else np.nan


def max_clusters(n_clusters: np.ndarray) -> float:
    """Max of the cluster count over saved times t > 0 (NaN if none is finite)."""
    later = n_clusters[1:]
    return float(np.nanmax(later)) if np.isfinite(later).any() else np.nan


def warm_up(dtypes: set[str], strategies: tuple[str, ...] = ("general",)) -> None:
    """Compile (or load from cache) the kernels for each dtype before workers start."""
    for dtype in sorted(dtypes):
        x = np.eye(2, dtype=np.dtype(dtype))
        args = (0, 0.1, 1, 1e-3, np.zeros((2, len(OBSERVABLES))),
                np.zeros((0, 2, 2), dtype=x.dtype), np.zeros(1, dtype=np.int64))
        if "general" in strategies:
            integrate(x.copy(), dynamics("softmax", 1.0), *args)
        if "rows" in strategies:
            integrate_rows(x.copy(), 1.0, True, *args)
        if "blocked" in strategies:
            integrate_blocked(x.copy(), 1.0, True, *args)
        if "layers" in strategies:
            stack.warm_up()


def warm_up_jobs(jobs: list[Job]) -> None:
    """warm_up for exactly the kernels these jobs will call."""
    for dtype in {j.integrate.dtype for j in jobs}:
        warm_up({dtype}, tuple({strategy(j) for j in jobs if j.integrate.dtype == dtype}))


@dataclass(frozen=True)
class Cost:
    gflop: float
    peak_mib: float  # the largest job's arrays
    seconds: float   # on one core, at a nominal rate


# Counted flops (job_flop) per second on one core, by strategy, from `make bench` and the
# demo on this project's 2-core reference machine; good to a factor of about 2.
NOMINAL_FLOPS = {"general": 1.5e9, "rows": 1.0e10, "blocked": 2.0e10, "layers": 1.5e9}


def job_flop(job: Job) -> float:
    """Per velocity evaluation and head, about 4 n^2 d flops and n^2 exponentials (~20 flops
    each), plus 4 n d^2 for the matrix products when the matrices are not the identity."""
    if job.model.layers is not None:
        return cost.flop(job)
    n, d, m = job.model.n, job.model.d, job.model
    stages = 4 if job.integrate.method == "rk4" else 1
    matrix = 0 if m.qk == m.v == "identity" else 4 * n * d * d
    per_eval = m.heads * (n * n * (4 * d + 20) + matrix)
    return job.integrate.n_steps * stages * per_eval + job.integrate.n_saves * 2 * per_eval


def job_bytes(job: Job, positions: str = "none") -> int:
    """Bytes one job holds: state, stages, scratch, series and positions. "rows" jobs
    (n < BLOCKED_MIN_N) hold two n x n matrices (the Gram matrix and its weights); a "blocked"
    job holds a [TILE, n] tile of it (and 4 n-vectors) per thread, counted here for one
    thread (a job sharing its tiles over T threads holds less than T one-thread jobs, which
    is what resources.need budgets); when its weights fit (blocked.symmetric_fits), an n x n
    matrix and a few n-vectors per tile instead. Stage buffers count as a step touches them
    (1 for euler, 5 for rk4: pages never written take no memory). Checked against the peak
    resident memory a job adds (docs/performance.md)."""
    if job.model.layers is not None:
        return cost.nbytes(job, positions)
    n, d, saves = job.model.n, job.model.d, job.integrate.n_saves
    item = np.dtype(job.integrate.dtype).itemsize
    traj = saves * n * d * item if positions == "trajectory" else 0
    how = strategy(job)
    stages = 5 if job.integrate.method == "rk4" else 1
    # x, working copies, stages; the general kernel's per-head keys and values
    m = job.model
    heads = 0 if how != "general" or m.qk == m.v == "identity" else 2 * m.heads
    copies = {"general": 1, "rows": 2, "blocked": 3}[how] + stages + heads
    square = {"general": 0, "rows": 2 * n * n * 8, "blocked": min(TILE, n) * n * item + 4 * n * 8}
    if how == "blocked" and symmetric_fits(n, item):
        # W, the products with its transpose, and a save's statistics per tile (no Gram tiles)
        tiles = -(-n // TILE)
        square["blocked"] = n * n * item + n * d * item + 6 * tiles * n * 8 + 6 * n * 8
    return copies * n * d * 8 + 5 * n * 8 + saves * len(OBSERVABLES) * 8 + traj + square[how]


def estimate(jobs: list[Job], positions: str = "none") -> Cost:
    flop = sum(job_flop(j) for j in jobs)
    peak = max(job_bytes(j, positions) for j in jobs) / 2**20
    seconds = sum(job_flop(j) / NOMINAL_FLOPS[strategy(j)] for j in jobs)
    return Cost(flop / 1e9, peak, seconds)
