"""The kernel each job calls, decided once per job, and what it costs. No Numba here.

A `KernelPlan` names the compiled path a job takes: general (kernels/general/: every model),
lanes (lanes.py: a batch of small plain systems of d 2 or 3 in one compiled call,
one system per SIMD lane), rows (rows.py: one serial compiled call per such system of more
dimensions) or blocked (blocked.py: BLAS on row tiles; Symmetric when the n x n weights fit,
else tile by tile). It is made from the job here and nowhere else: simulate calls the kernel
it names, the runner groups jobs by it, resources and `sweep plan` count memory and time from
it, and the compile step compiles exactly the variants a sweep's plans name
(compiling.warm_up).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from sweep.config.grid import Job, kinds
from sweep.execution.layers import cost as layer_cost
from sweep.execution.layers.flow import as_flow
from sweep.kernels.codes import (
    EVALUATIONS,
    LANES_BATCH,
    LANES_MAX_D,
    LANES_MIN,
    N_OBS,
    STAGES_WRITTEN,
    SYMMETRIC_MAX_BYTES,
    SYMMETRIC_MIN_N,
    TILE,
)
from sweep.observables import cosines

# The fast kernels shift exponents by c = 1 (softmax) and clamp them to [-700, 708]; these
# bounds keep every exponent inside that range (softmax: RK4 stages leave the sphere by at
# most ~dt^2, so beta (<y_i, y_j> - 1) <= beta dt^2), where the result is exactly the model's.
FAST_SOFTMAX_MAX_BETA_DT2 = 500.0
FAST_UNNORMALIZED_MAX_BETA = 300.0
# From n = 256 one step is dominated by two n x n x d products, where BLAS beats the serial
# kernel's loops (benchmarks/run.py times both strategies side by side).
BLOCKED_MIN_N = 256


@dataclass(frozen=True)
class Strategy:
    """One compiled path and what planning needs to know of it: its rate, its compile time,
    the memory a job holds on it, and how the runner feeds it. What it calls is
    simulate.PATHS[strategy] (compiled code, which planning never imports).

    flops: counted flops (job_flop) per second on one core, from `make bench` and the demo
    on the project's 2-core reference machine, good to a factor of about 2; compile_seconds:
    one variant compiled into an empty cache there, beyond the save's observables (the CPU
    time of `sweep compile` for a config using only it, less GRAMOBS_COMPILE_SECONDS where
    gramobs; loading it from the cache takes a tenth of a second); gramobs: its saves compute
    the observables by observables/gramobs.py, compiled once for every such variant of a
    process; copies: the
    [n, d] float64 arrays a job holds beside its stage buffers; batched: a batch's jobs run
    in one compiled call; shared: one job's row tiles can be shared over threads;
    min_batch: the jobs a batch should hold where there are enough, the first of these
    that there are, else the smallest of them (a block of lanes, padded to the vector width,
    costs about as much for one system as for 8: a batch never holds fewer, however long
    its jobs);
    square(n, itemsize, tile): the bytes of n x n scratch a job holds (lanes share theirs
    per block of systems)."""

    name: str
    flops: float
    compile_seconds: float
    gramobs: bool = False
    copies: int = 1
    batched: bool = False
    shared: bool = False
    min_batch: tuple[int, ...] = ()
    square: Callable[[int, int, int], int] = lambda n, item, tile: 0


# Compile times measured into an empty cache (`sweep compile`, wall, 2-core reference machine):
# the demo's lanes and rows variants 19.1 and 16.4 s alone and 24.5 s together, so about 11 s
# of each is what they share (gramobs and the import); blocked alone 12.2 s; general alone
# 35.8 s, layers alone 26.6 s.
GRAMOBS_COMPILE_SECONDS = 11.0
# Of that, the observables of x alone (observables/extra.py: lanes-float64 spends 8.6 of its
# 27 s there on a slower day), which a second CPU compiles while the first compiles the rest
# (execution/compiling.py)
ALONE_COMPILE_SECONDS = 6.0
GENERAL = Strategy("general", 1.5e9, 34.0)            # kernels/general/: every model
ROWS = Strategy("rows", 1.0e10, 5.5, gramobs=True, copies=2, batched=True,  # Gram, weights
                square=lambda n, item, tile: 2 * n * n * 8)
LANES = Strategy("lanes", 2.0e10, 8.0, gramobs=True, copies=2, batched=True,
                 min_batch=(LANES_BATCH, LANES_MIN))
BLOCKED = Strategy("blocked", 2.0e10, 1.0, gramobs=True, copies=3, shared=True,  # a tile each
                   square=lambda n, item, tile: min(tile, n) * n * item + 4 * n * 8)
LAYERS = Strategy("layers", 1.5e9, 25.0)  # the general step and observables
STRATEGIES = {s.name: s for s in (GENERAL, ROWS, LANES, BLOCKED, LAYERS)}
SYMMETRIC_COMPILE_SECONDS = 5.0  # blocked with whole weights: a variant of its own


@dataclass(frozen=True)
class KernelPlan:
    """How one job is integrated; what its numbers depend on, and the threads it gets."""

    strategy: Strategy       # GENERAL | LANES | ROWS | BLOCKED | LAYERS
    dtype: str               # float64 | float32 (the state; observables are float64)
    symmetric: bool = False  # blocked: whole n x n weights (Symmetric) or [TILE, n] tiles
    tile: int = TILE         # blocked: rows per BLAS call (fixed: the numbers depend on it)
    threads: int = 1         # blocked: threads sharing the tiles out (runner.py decides)
    method: str = "euler"    # lanes, rows: the method compiled (euler also steps layer)

    @property
    def path(self) -> str:
        """general, rows, blocked (tile by tile) or symmetric (blocked, whole weights)."""
        return "symmetric" if self.symmetric else self.strategy.name

    @property
    def variant(self) -> str:
        """What compiles separately: one set of kernels per path and dtype, and on the
        batched paths per method (lanes-float64 steps euler and layer, lanes-float64-rk4
        rk4: kernels/methods.kind)."""
        method = "" if self.method == "euler" else f"-{self.method}"
        return f"{self.path}-{self.dtype}{method}"

    def on(self, threads: int) -> KernelPlan:
        """The same kernel with its row tiles shared over `threads` (blocked only)."""
        return replace(self, threads=threads) if self.strategy.shared else self


def kernel_plan(job: Job) -> KernelPlan:
    """The kernel `job` calls, on one thread."""
    model, integ = job.model, job.integrate
    if model.kind.stacked:  # its flow's fast kernel, if it is a flow that takes one
        flow = as_flow(job)
        fast = flow is not None and fast_path_covers(flow.model, flow.integrate)
        return kernel_plan(flow) if fast else KernelPlan(LAYERS, integ.dtype)
    if not fast_path_covers(model, integ):
        return KernelPlan(GENERAL, integ.dtype)
    if model.n < BLOCKED_MIN_N:
        method = "euler" if integ.method == "layer" else integ.method
        return KernelPlan(LANES if model.d <= LANES_MAX_D else ROWS, integ.dtype, method=method)
    item = np.dtype(integ.dtype).itemsize
    symmetric = SYMMETRIC_MIN_N <= model.n and model.n**2 * item <= SYMMETRIC_MAX_BYTES
    return KernelPlan(BLOCKED, integ.dtype, symmetric=symmetric)


def fast_path_covers(model, integ) -> bool:
    """Whether the fast kernels (identity matrices, one head, dense, no noise, on the sphere)
    cover a job; euclidean space runs on the general path only."""
    plain = (model.space == "sphere" and model.heads == 1 and model.head_beta is None
             and model.qk == "identity" and model.v in ("identity", "qk")
             and model.mask == "dense" and model.noise == 0.0 and model.ffn == "none")
    if not plain:
        return False
    beta = model.beta * model.beta_factor  # the effective beta (model.beta_scale)
    if model.attention == "softmax":
        return beta * integ.dt**2 <= FAST_SOFTMAX_MAX_BETA_DT2
    if model.attention == "unnormalized":
        return beta * (1.0 + integ.dt**2) <= FAST_UNNORMALIZED_MAX_BETA
    return False


# ---------------------------------------------------------------- cost

@dataclass(frozen=True)
class Cost:
    gflop: float
    peak_mib: float  # the largest job's arrays
    seconds: float   # on one core, at a nominal rate, kernels compiled

    def __repr__(self) -> str:  # what plan(...).cost shows in a notebook
        return (f"Cost(work {self.gflop:.3g} GFLOP, peak memory per job {self.peak_mib:.3g} "
                f"MiB, about {self.seconds:.3g} s on one core)")


def job_flop(job: Job) -> float:
    """Per velocity evaluation and head, about 4 n^2 d flops and n^2 exponentials (~20 flops
    each), plus 4 n d^2 for the matrix products when the matrices are not the identity.
    A layer model counts its layers (sweep.execution.layers.cost)."""
    if job.model.kind.stacked:
        return layer_cost.flop(job)
    n, d, m = job.model.n, job.model.d, job.model
    stages = EVALUATIONS[job.integrate.method]
    matrix = 0 if m.qk == m.v == "identity" else 4 * n * d * d
    per_eval = m.heads * (n * n * (4 * d + 20) + matrix)
    return job.integrate.n_steps * stages * per_eval + job.integrate.n_saves * 2 * per_eval


def job_bytes(job: Job, positions: str = "none", bins: int = 0) -> int:
    """Bytes one job holds: state, stages, scratch, series and positions (job_memory)."""
    return sum(job_memory(job, positions, bins).values())


def job_memory(job: Job, positions: str = "none", bins: int = 0) -> dict[str, int]:
    """Bytes one job holds, by the config key that drives them: model.n (state, stages,
    scratch), model.heads (per-head arrays), integrate.t_max (the series), output.positions,
    output.hist_bins (bins > 0: the trajectory the histograms are taken from, where
    output.positions does not keep it already, their pair scratch and the histograms).

    "rows" jobs (n < BLOCKED_MIN_N) hold two n x n matrices (the Gram matrix and its
    weights), "lanes" jobs none (a block of up to LANES of them shares two); a "blocked"
    job holds a [TILE, n] tile of it (and 4 n-vectors) per thread,
    counted here for one thread (a job sharing its tiles over T threads holds less than T
    one-thread jobs, which is what resources.need budgets); a symmetric one an n x n matrix
    and a few n-vectors per tile instead; every path, the cluster-resolved observables'
    scratch (O(n d), observables/groups.py). Stage buffers count as a step touches them (1 for
    euler, 5 for rk4: pages never written take no memory). Checked against the peak resident
    memory a job adds (docs/performance.md). The general kernel holds per head a beta and two
    scratch numbers, and with matrices the [heads, d, d] score and value matrices twice
    (drawn or read, then copied for the kernel) and [heads, n, d] keys and values. A layer
    model: sweep.execution.layers.cost.memory."""
    if job.model.kind.stacked:
        return layer_cost.memory(job, positions)
    n, d, saves = job.model.n, job.model.d, job.integrate.n_saves
    item = np.dtype(job.integrate.dtype).itemsize
    traj = saves * n * d * item if positions == "trajectory" else 0
    plan = kernel_plan(job)
    stages = STAGES_WRITTEN[job.integrate.method]
    m = job.model
    matrices = plan.strategy is GENERAL and not m.qk == m.v == "identity"
    per_head = 0 if plan.strategy is not GENERAL else m.heads * (3 * 8 + 4 * d * d * 8 * matrices)
    copies = plan.strategy.copies + stages
    if plan.symmetric:
        # W, x with a column of ones and its two products, and a save's statistics per tile
        # (no Gram tiles)
        tiles = -(-n // plan.tile)
        square = n * n * item + 3 * n * (d + 1) * item + 6 * tiles * n * 8 + 7 * n * 8
    else:
        square = plan.strategy.square(n, item, plan.tile)
    resolved = (n // 2 + 1) * (2 * d + 3) * 8 + 8 * n * 8  # groups.Groups, 2 more row columns
    return {"model.n": copies * n * d * 8 + 5 * n * 8 + square + resolved,
            "model.heads": per_head + 2 * m.heads * n * d * 8 * matrices,
            "integrate.t_max": saves * N_OBS * 8, "output.positions": traj,
            "output.hist_bins": hist_bytes(job, positions, bins)}


def hist_bytes(job: Job, positions: str, bins: int) -> int:
    """What output.hist_bins adds to a flow's job (job_memory)."""
    if not bins:
        return 0
    n, d, saves = job.model.n, job.model.d, job.integrate.n_saves
    item = np.dtype(job.integrate.dtype).itemsize
    traj = 0 if positions == "trajectory" else saves * n * d * item
    return traj + cosines.scratch_bytes(n, d, bins) + saves * bins * 8


def estimate(jobs: list[Job], positions: str = "none", bins: int = 0) -> Cost:
    flop = peak = seconds = 0.0
    for job, count in kinds(jobs):  # a job's cost does not depend on its seed or start
        flop += count * job_flop(job)
        peak = max(peak, job_bytes(job, positions, bins) / 2**20)
        seconds += count * job_flop(job) / kernel_plan(job).strategy.flops
    return Cost(flop / 1e9, peak, seconds)


def cold_compile_seconds(variants: list[str], processes: int = 1) -> float:
    """About how long these variants (KernelPlan.variant names) take to compile when the
    cache holds none of them, side by side on up to `processes` CPUs (compile_split)."""
    here, apart = compile_split(variants, processes)
    if processes < 2 or not here:
        return _serial_seconds(here)
    # a child compiles the observables of x alone for what compiles here, the first child
    # before its own variant, which (of one dtype) calls them too
    first = max(ALONE_COMPILE_SECONDS, _serial_seconds(apart[:1]))
    return max([_serial_seconds(here) - ALONE_COMPILE_SECONDS, first]
               + [_serial_seconds([name]) for name in apart[1:]])


def compile_split(variants: list[str], processes: int) -> tuple[list[str], list[str]]:
    """(here, apart): of these cold variants, those a process compiles itself and those it
    has compiled side by side, each in a process of its own (execution/compiling.py): the
    costliest here, up to processes - 1 of the next apart, any more here after it."""
    order = sorted(variants, key=lambda name: -_serial_seconds([name]))
    apart = set(order[1:max(processes, 1)])
    return ([name for name in variants if name not in apart],
            [name for name in variants if name in apart])


def _serial_seconds(variants: list[str]) -> float:
    """cold_compile_seconds in one process: each variant's own, and gramobs once."""
    paths = [name.split("-")[0] for name in variants]
    strategies = [STRATEGIES["blocked" if p == "symmetric" else p] for p in paths]
    seconds = sum(SYMMETRIC_COMPILE_SECONDS if p == "symmetric" else s.compile_seconds
                  for p, s in zip(paths, strategies))
    return seconds + (GRAMOBS_COMPILE_SECONDS if any(s.gramobs for s in strategies) else 0.0)


def variants(jobs: list[Job]) -> dict[str, KernelPlan]:
    """The distinct compiled variants `jobs` call, by name, in a stable order."""
    found = {}
    for job, _ in kinds(jobs):  # the kernel does not depend on a job's seed or start
        plan = kernel_plan(job)
        found.setdefault(plan.variant, plan)
    return dict(sorted(found.items()))
