"""One job: draw the start, call the kernel its KernelPlan names, return arrays. No I/O;
and the warm-up that compiles exactly the kernels a sweep will call.

Randomness enters here and nowhere else: the start depends only on (seed, init, n, d);
random attention matrices only on (seed, d, heads, qk, v), the FFN matrix on (seed, d, ffn)
and the noise stream on (seed, n, d), so every beta (and every noise level) of a sweep shares
its start, its matrices and its Brownian increments.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import numpy as np

from sweep.config import inputs
from sweep.config.grid import Job
from sweep.config.schema import stable_hash
from sweep.execution import matrices, redraw, states
from sweep.execution.kernel import (
    BLOCKED,
    GENERAL,
    LANES,
    LAYERS,
    ROWS,
    KernelPlan,
    Strategy,
    kernel_plan,
)
from sweep.execution.layers import params, stack
from sweep.execution.layers.flow import as_flow
from sweep.kernels.blocked import integrate_blocked
from sweep.kernels.codes import (
    METHOD_CODES,
    NONFINITE,
    OBSERVABLES,
    SAVE_ALL,
    SAVE_CLOSE,
    STATUS_NONFINITE,
    STATUS_OK,
    STOPPED,
    save_level,
)
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import Dynamics, dynamics
from sweep.kernels.lanes import integrate_lanes
from sweep.kernels.methods import kind
from sweep.kernels.rows import integrate_rows_batch
from sweep.observables import cosines


class Stopped(Exception):
    """The job was abandoned on request before it finished."""


@dataclass(frozen=True)
class JobResult:
    observables: np.ndarray  # [n_time, len(OBSERVABLES)] float64; NaN after a blow-up
    status: int
    wall_seconds: float
    positions: np.ndarray | None = None  # [n, d] final, or [n_time, n, d] trajectory
    cosine_hist: np.ndarray | None = None  # [n_time, bins] with output.hist_bins


def _rng(seed: int, **parts) -> np.random.Generator:
    return np.random.default_rng([seed, int(stable_hash(parts), 16)])


def start_rng(job: Job) -> np.random.Generator:
    """The generator for the initial state: a function of (seed, init, n, d) alone."""
    return _start_rng(job.seed, job.init, job.model.n, job.model.d)


def _start_rng(seed: int, init, n: int, d: int) -> np.random.Generator:
    return _rng(seed, init=asdict(init), n=n, d=d)


def initial_state(job: Job) -> np.ndarray:
    """[n, d]: unit rows, except a file's rows for a layer model whose blocks normalise
    (norm: post | pre | peri), which take them as they are (hidden states). A new array."""
    m, init = job.model, job.init
    unit = m.space == "sphere"  # euclidean space keeps a start's norms and its jitter's
    if init.kind != "file":
        drawn = _drawn if m.n * m.d <= CACHED_START_SIZE else _drawn.__wrapped__
        return drawn(job.seed, init, m.n, m.d, unit).copy()
    as_is = m.kind.stacked and m.norm != "sphere" or not unit  # taken as they are
    given = inputs.start(init.path, job.source, m.n, m.d, job.seed,
                         job.digests.get("init.path"), unit=not as_is)
    return states.draw(init, m.n, m.d, start_rng(job), given, unit)


CACHED_START_SIZE = 2048  # n d of the largest start kept: 4,096 of them hold 64 MiB at most


@functools.lru_cache(maxsize=4096)
def _drawn(seed: int, init, n: int, d: int, unit: bool = True) -> np.ndarray:
    """The start drawn for (seed, init, n, d), read-only: every beta of a sweep shares it, so
    a phase diagram of small systems draws each start once, not once per beta (for small
    systems drawing is a noticeable share of a job)."""
    x = states.draw(init, n, d, _start_rng(seed, init, n, d), None, unit)
    x.flags.writeable = False
    return x


def noise_key(job: Job) -> int:
    """The seed of the job's counter-based noise stream: a function of (seed, n, d), < 2^63."""
    return int(stable_hash({"noise": job.seed, "n": job.model.n, "d": job.model.d}), 16) >> 1


def job_dynamics(job: Job, segment: int = 0) -> Dynamics:
    """The compiled model's parameters: matrices drawn or read, the noise stream keyed,
    betas times the beta_scale factor. segment k > 0: the random qk / v and the noise of
    segment k of model.redraw_every (sweep.execution.redraw)."""
    m = job.model
    again = {"segment": segment} if segment else {}
    qk, v = matrices.attention(m, _rng(job.seed, d=m.d, heads=m.heads, qk=m.qk, v=m.v,
                                       **again), job.source, job.digests)
    ffn = matrices.ffn(m, _rng(job.seed, d=m.d, ffn=m.ffn), job.source, job.digests)
    f = m.beta_factor
    head_beta = None if m.head_beta is None else [b * f for b in m.head_beta]
    key = noise_key(job) if not segment else int(stable_hash(
        {"noise": job.seed, "n": m.n, "d": m.d, **again}), 16) >> 1
    return dynamics(m.attention, m.beta * f, heads=m.heads, head_beta=head_beta, qk=qk, v=v,
                    mask=m.mask, noise=m.noise, noise_key=key, ffn=ffn, space=m.space,
                    rate=growth_rate(m.space, v))


def growth_rate(space: str, v) -> float:
    """c of euclidean space's state y = exp(-c t) x (docs/models.md): 1 for V = I (then y is
    the paper's z = exp(-t V) x), else the largest real part of an eigenvalue of any V_h, or
    0 if none is positive; 0 on the sphere."""
    if space != "euclidean":
        return 0.0
    if v is None:
        return 1.0
    return max(0.0, float(np.max(np.linalg.eigvals(v).real)))


def simulate(job: Job, positions: str = "none", stop: np.ndarray | None = None,
             kernel: KernelPlan | None = None, columns: tuple[str, ...] = OBSERVABLES,
             bins: int = 0) -> JobResult:
    """Integrate one job (a batch of one: the bits of any batch it could be in).
    positions: none | final | trajectory. stop: [1] int64 flag. kernel: the job's kernel_plan
    (default), or that plan on more threads (runner.py); columns: the series to record
    (output.columns); bins: output.hist_bins. Raises what the job raised."""
    result, = simulate_batch([job], positions, stop, kernel, columns, bins)
    if isinstance(result, Exception):
        raise result
    return result


def simulate_batch(jobs: list[Job], positions: str = "none", stop: np.ndarray | None = None,
                   kernel: KernelPlan | None = None, columns: tuple[str, ...] = OBSERVABLES,
                   bins: int = 0) -> list[JobResult | Exception]:
    """Integrate jobs of one batch_key: flows on the lanes or rows path in one compiled call,
    others one after another. A job whose start or model cannot be built gives its exception
    in its place (the others run); Stopped if the stop flag ended the batch (none of it is
    kept). Each job's wall_seconds: building its start, plus its share of the compiled call.
    Results hold the `columns` only (and a layer model's LAYER_SERIES after them); the lanes,
    rows and blocked paths compute no more than they need (codes.save_level). bins > 0: each
    flow's cosine_hist, from the trajectory the kernel keeps for it (dropped unless
    `positions` asks for it): the kernels are the same, and no result bit depends on bins."""
    kernel = kernel or kernel_plan(jobs[0])
    flag = np.zeros(1, dtype=np.int64) if stop is None else stop
    if not kernel.strategy.batched or jobs[0].model.kind.stacked:
        level = save_level(columns)
        return [_chosen(_one(job, kernel, positions, flag, bins, level), columns)
                for job in jobs]
    out = _starts(jobs, kernel.dtype)  # a start, or the exception that stopped drawing it
    ready = [k for k, x in enumerate(out) if not isinstance(x, Exception)]
    if ready:
        done = _rows_batch([jobs[k] for k in ready], [out[k] for k in ready], kernel,
                           positions, flag, columns, bins)
        for k, result in zip(ready, done):
            out[k] = result
    return out


def _chosen(result: JobResult | Exception, columns: tuple[str, ...]):
    """The result with the observables `columns` only (a layer model's LAYER_SERIES kept)."""
    if isinstance(result, Exception) or columns == OBSERVABLES:
        return result
    keep = _indices(columns) + list(range(len(OBSERVABLES), result.observables.shape[1]))
    return replace(result, observables=result.observables[:, keep])


def _indices(columns: tuple[str, ...]) -> list[int]:
    """Where the series `columns` are among the kernels' OBSERVABLES."""
    return [OBSERVABLES.index(c) for c in columns]


def _one(job: Job, kernel: KernelPlan, positions: str, flag: np.ndarray, bins: int,
         level: int = SAVE_ALL):
    t0 = time.perf_counter()
    try:
        if job.model.kind.stacked:
            return simulate_layers(job, positions, flag, kernel)
        x = np.ascontiguousarray(initial_state(job), dtype=np.dtype(job.integrate.dtype))
        obs, traj = _outputs(1, job, positions, x.dtype, bins)
        status, _ = PATHS[kernel.strategy].one(job, kernel, x, obs[0], traj[0], flag, level)
    except Stopped:
        raise
    except Exception as err:  # noqa: BLE001 - a failed job is a result of its own
        return err
    if status == STOPPED:
        raise Stopped(job.id)
    return _result(obs[0], status, time.perf_counter() - t0, x, traj[0], positions, bins)


def _starts(jobs: list[Job], dtype: str) -> list:
    """Each job's start as `dtype` with the seconds drawing it took, or its exception."""
    out = []
    for job in jobs:
        t0 = time.perf_counter()
        try:
            x = np.asarray(initial_state(job), dtype=np.dtype(dtype))
        except Exception as err:  # noqa: BLE001 - a failed job is a result of its own
            out.append(err)
            continue
        out.append((x, time.perf_counter() - t0))
    return out


def _rows_batch(jobs: list[Job], starts: list, kernel: KernelPlan, positions: str,
                flag: np.ndarray, columns: tuple[str, ...], bins: int) -> list:
    """JobResults of jobs whose starts are drawn, from one compiled call of their strategy's
    path (lanes or rows), with the observables `columns` only (computed to
    codes.save_level, taken out once)."""
    t0 = time.perf_counter()
    first, integ = jobs[0], jobs[0].integrate
    xs = np.stack([x for x, _ in starts])
    obs, traj = _outputs(len(jobs), first, positions, xs.dtype, bins)
    status = np.zeros(len(jobs), dtype=np.int64)
    betas, dts, epss = (np.ascontiguousarray(a) for a in np.array(
        [[j.model.beta * j.model.beta_factor, j.integrate.dt, j.integrate.cluster_eps]
         for j in jobs], float).T)
    args = (xs, betas, first.model.attention == "softmax", kind(METHOD_CODES[integ.method]),
            dts, integ.save_stride, epss, obs, traj, flag, status)
    code = PATHS[kernel.strategy].batch(args, save_level(columns))
    if code == STOPPED:
        raise Stopped(first.id)
    if columns != OBSERVABLES:
        obs = obs[:, :, _indices(columns)]
    share = (time.perf_counter() - t0) / len(jobs)
    return [_result(obs[b], status[b], share + starts[b][1], xs[b], traj[b], positions, bins)
            for b in range(len(jobs))]


def _outputs(count: int, job: Job, positions: str, dtype, bins: int = 0,
             ) -> tuple[np.ndarray, np.ndarray]:
    """NaN-filled observables [count, n_saves, N_OBS] and positions [count, n_saves or 0, n,
    d] for `count` jobs shaped like `job` (a trajectory for a trajectory or histograms)."""
    saves, m = job.integrate.n_saves, job.model
    obs = np.full((count, saves, len(OBSERVABLES)), np.nan)
    n_traj = saves if positions == "trajectory" or bins else 0
    return obs, np.full((count, n_traj, m.n, m.d), np.nan, dtype=dtype)


def _result(obs, status, seconds: float, x, traj, positions: str, bins: int = 0) -> JobResult:
    kept = {"none": None, "final": x, "trajectory": traj}[positions]
    hist = cosines.fractions(traj, bins) if bins else None
    return JobResult(obs, STATUS_NONFINITE if status == NONFINITE else STATUS_OK, seconds, kept,
                     hist)


def layer_blocks(job: Job) -> tuple[params.Block, ...]:
    """A layer model's blocks, drawn (from the job's seed) or read."""
    return params.blocks(job, functools.partial(_rng, job.seed))


def simulate_layers(job: Job, positions: str = "none", stop: np.ndarray | None = None,
                    kernel: KernelPlan | None = None,
                    blocks: tuple[params.Block, ...] | None = None) -> JobResult:
    """One layer model (docs/layers.md): its blocks drawn or read, h_0 through them, every
    layer observed; observables [layers + 1, len(OBSERVABLES) + 1] (token_norm last).
    blocks: other blocks than the config's (trained ones), run on the layer stack."""
    kernel = kernel or kernel_plan(job)
    if blocks is None and kernel.strategy is not LAYERS:  # a flow on a fast kernel (layers.flow)
        return _as_flow(job, kernel, positions, stop)
    t0 = time.perf_counter()
    blocks = layer_blocks(job) if blocks is None else blocks
    flag = np.zeros(1, dtype=np.int64) if stop is None else stop
    status, obs, kept = stack.run(job.model, initial_state(job), blocks, noise_key(job),
                                  float(job.integrate.cluster_eps), flag,
                                  positions == "trajectory", job.integrate.dtype)
    if status == STOPPED:
        raise Stopped(job.id)
    kept = {"none": None, "final": kept[-1], "trajectory": kept}[positions]
    return JobResult(obs, STATUS_NONFINITE if status == NONFINITE else STATUS_OK,
                     time.perf_counter() - t0, kept)


def _as_flow(job: Job, kernel: KernelPlan, positions: str, stop) -> JobResult:
    """A layer model's result from its flow's: the same series, token_norm appended."""
    flow = simulate(as_flow(job), "trajectory", stop, kernel)
    traj = flow.positions
    token_norm = np.linalg.norm(traj.astype(np.float64), axis=-1).mean(axis=-1)
    kept = {"none": None, "final": traj[-1], "trajectory": traj}[positions]
    return replace(flow, observables=np.column_stack([flow.observables, token_norm]),
                   positions=kept)


# ---------------------------------------------------------------- the paths

def _common(job: Job, obs, traj, flag) -> tuple:
    integ = job.integrate
    return (METHOD_CODES[integ.method], float(integ.dt), integ.save_stride,
            float(integ.cluster_eps), obs, traj, flag)


def _general(job: Job, kernel: KernelPlan, x, obs, traj, flag, level: int):
    if job.model.redraw_every is not None:
        return redraw.integrate_segments(x, functools.partial(job_dynamics, job),
                                         redraw.saves_per_segment(job.model, job.integrate),
                                         *_common(job, obs, traj, flag))
    return integrate(x, job_dynamics(job), *_common(job, obs, traj, flag))


def _blocked(job: Job, kernel: KernelPlan, x, obs, traj, flag, level: int):
    m = job.model
    return integrate_blocked(x, float(m.beta * m.beta_factor), m.attention == "softmax",
                             *_common(job, obs, traj, flag), threads=kernel.threads,
                             symmetric=kernel.symmetric, level=level)


def _lanes(args: tuple, level: int, call=integrate_lanes) -> int:
    return call(*args, np.zeros(len(args[0]), dtype=np.int64), level)


def _rows(args: tuple, level: int, call=integrate_rows_batch) -> int:
    return call(*args, level)


def _pair_start(kernel: KernelPlan):
    """One save of two groups of two tokens: the same compiled functions, with the same
    argument types, as every job of a variant (one kernel per dtype serves every general
    model); groups, so that the passes a save makes only when groups exist compile too."""
    x = np.repeat(np.eye(2, dtype=np.dtype(kernel.dtype)), 2, axis=0)
    common = (METHOD_CODES["euler"], 0.1, 1, 1e-3, np.zeros((2, len(OBSERVABLES))),
              np.zeros((0, 4, 2), dtype=x.dtype), np.zeros(1, dtype=np.int64))
    return x, common


def _warm_general(kernel: KernelPlan) -> None:
    x, common = _pair_start(kernel)
    integrate(x, dynamics("softmax", 1.0), *common)


def _warm_blocked(kernel: KernelPlan) -> None:
    x, common = _pair_start(kernel)
    for level in (SAVE_ALL, SAVE_CLOSE):  # a save of the close pairs alone has its own count
        integrate_blocked(x.copy(), 1.0, True, *common, symmetric=kernel.symmetric, level=level)


def _batch_start(kernel: KernelPlan) -> tuple:
    """A batch of one _pair_start system: the arguments of every batch of a variant."""
    x, common = _pair_start(kernel)
    one, status = np.ones(1), np.zeros(1, dtype=np.int64)
    return (x[None], one, True, kind(METHOD_CODES[kernel.method]), one * 0.1, 1, one * 1e-3,
            common[4][None], common[5][None], common[6], status)


def _warm_batch(kernel: KernelPlan) -> None:
    PATHS[kernel.strategy].batch(_batch_start(kernel), SAVE_ALL)


def _prepared(batch, passing):
    """A batched path's `prepare`: its kernel compiled (or loaded) for the variant, not the
    save's functions it is passed (numerics/passing.py)."""
    return lambda kernel: batch(_batch_start(kernel), SAVE_ALL, passing.compile)


@dataclass(frozen=True)
class Path:
    """What a strategy (kernel.Strategy: the facts planning needs) calls: one(job, kernel, x,
    obs, traj, flag, level) -> (status, saves) integrates a job (the general path computes
    every column whatever the save level), batch(args, level) -> status a batch in one
    compiled call (the strategy is batched), warm(kernel) compiles it; prepare(kernel), for
    a kernel that calls passed functions (numerics/passing.py), compiles that kernel alone,
    not the functions (execution/compiling.py's children)."""

    warm: Callable[[KernelPlan], None]
    one: Callable | None = None
    batch: Callable[[tuple, int], int] | None = None
    prepare: Callable[[KernelPlan], None] | None = None


PATHS: dict[Strategy, Path] = {
    GENERAL: Path(_warm_general, one=_general),
    BLOCKED: Path(_warm_blocked, one=_blocked),
    LANES: Path(_warm_batch, batch=_lanes, prepare=_prepared(_lanes, integrate_lanes)),
    ROWS: Path(_warm_batch, batch=_rows, prepare=_prepared(_rows, integrate_rows_batch)),
    LAYERS: Path(lambda kernel: stack.warm_up(kernel.dtype)),
}
