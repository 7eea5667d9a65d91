"""`make bench`: the kernels against plain NumPy (and PyTorch and JAX when installed), in one run.

For each shape: system-steps per second (median of repeats), GFLOP/s at the nominal 4 n^2 d
flops per step, the ratio to NumPy's batched step and to a ceiling measured in the same run
(the machine's own gemm rate, or its vectorised-exp rate, whichever binds).
Kernel rows, run as `sweep run` runs them (BLAS held to one thread; one system per thread,
but a single blocked system shares its row tiles over all threads):
  general     the model-zoo path (drive.integrate)
  rows        the serial fast path, one system per call (kernels/rows.py)
  lanes       a batch of systems one per SIMD lane (kernels/lanes.py), what `sweep run` picks
              for n < 256 and d <= 3: the systems split in one batch per thread
  blocked     BLAS products on row tiles + vectorised passes (blocked.py)
  symmetric   blocked computing only W's blocks on and right of the diagonal (3 n^2 d flops)
  symmetric-close  the same, its saves of the clustered fraction only (a save below SAVE_ALL:
              the work nearest the peers', which save nothing)
  blocked-mt  blocked without tile threads, BLAS free to use every core instead
Kernel calls include the observables at their first and last step, as a sweep records them.
JAX (benchmarks/jax_peer.py: jit, vmap over the systems, lax.scan over the steps, float64)
runs at JAX_SHAPES, its compilation outside the timed calls and reported apart; without jax
one line says so.
Then two sweeps through the CLI (256 jobs of 600 steps at (32, 3), and the same with ~50 ms
jobs at (128, 3)), split into fixed cost, kernels and per-job overhead, and the start-up
times. The table is written as JSON to benchmarks/results/. Timings on a shared machine
are noisy: the load is recorded too.
Usage: python benchmarks/run.py [--quick]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_sweep import LONG, describe, kernel_share, start_up_times  # noqa: E402
from jax_peer import MISSING, euler_steps_or_none  # noqa: E402
from machine import identity  # noqa: E402
from reference_step import numpy_steps, torch_steps_or_none  # noqa: E402

from sweep.execution.resources import available_cpus  # noqa: E402
from sweep.execution.states import uniform  # noqa: E402
from sweep.kernels.blocked import integrate_blocked  # noqa: E402
from sweep.kernels.codes import METHOD_CODES, OBSERVABLES, SAVE_ALL, SAVE_CLOSE  # noqa: E402
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import dynamics
from sweep.kernels.lanes import integrate_lanes  # noqa: E402
from sweep.kernels.methods import kind as method_kind  # noqa: E402
from sweep.kernels.rows import integrate_rows  # noqa: E402
from sweep.numerics._jit import jit_fast  # noqa: E402
from sweep.numerics.expfast import exp_inplace  # noqa: E402

BETA, DT = 4.0, 0.05
MIN_STEPS = 10
SHAPES = [  # n, d, systems, dtype, kernel rows to time
    (32, 3, 256, "float64", ("general", "rows", "lanes")),
    (128, 16, 64, "float64", ("general", "rows", "blocked")),
    (512, 64, 1, "float64", ("general", "rows", "blocked", "symmetric", "blocked-mt")),
    (2048, 128, 1, "float64", ("general", "blocked", "symmetric", "blocked-mt")),
    (2048, 128, 1, "float32", ("blocked", "symmetric", "blocked-mt")),
]
JAX_SHAPES = {(32, 3, 256), (2048, 128, 1)}  # where the JAX peer is timed too


def timed(fn, repeats: int, pick=statistics.median) -> float:
    """Median (or `pick`) seconds of fn() over repeats, after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return pick(times)


# A ceiling is the best the machine does: the fastest of at least this many calls (the median
# of three 30 ms gemm calls moved 1.6x between two runs an hour apart).
CEILING_REPEATS = 20


def calibrated_rate(make, systems: int, target_s: float, repeats: int) -> float:
    """System-steps per second of make(steps)(), with steps chosen so a call takes ~target_s
    but at least MIN_STEPS. Steps grow 4x at a time until a call is long enough, so a fixed
    cost per call (dispatch, the two observations) weighs on the rate as it does in a job of
    that many steps, not as in a 2-step probe."""
    steps, seconds = MIN_STEPS, timed(make(MIN_STEPS), 1)
    while seconds < target_s / 4 and steps < 25_000:
        steps *= 4
        seconds = timed(make(steps), 1)
    probed, steps = steps, int(min(max(MIN_STEPS, steps * target_s / seconds), 100_000))
    slow = seconds * steps / probed > 1.0
    return steps * systems / timed(make(steps), min(repeats, 3) if slow else repeats)


def kernel_call(kind: str, x: np.ndarray, steps: int, threads: int = 1) -> None:
    """Integrate one system x: [n, d] for `steps` Euler steps, observables at both ends
    (symmetric-close: the clustered fraction and the order parameter only)."""
    obs = np.zeros((2, len(OBSERVABLES)))
    args = (METHOD_CODES["euler"], DT, steps, 1e-3, obs, np.zeros((0,) + x.shape, x.dtype),
            np.zeros(1, dtype=np.int64))
    if kind == "general":
        integrate(x, dynamics("softmax", BETA), *args)
    elif kind == "rows":
        integrate_rows(x, BETA, True, *args)
    else:
        integrate_blocked(x, BETA, True, *args, threads=threads,
                          symmetric=kind.startswith("symmetric"),
                          level=SAVE_CLOSE if kind == "symmetric-close" else SAVE_ALL)


def kernel_maker(kind: str, xs: np.ndarray, threads: int):
    """steps -> a callable running every system of xs, one per thread (blocked-mt: in turn)."""
    def make(steps):
        def go():
            if kind == "lanes":
                with ThreadPoolExecutor(threads) as pool:
                    list(pool.map(lambda part: lanes_call(part.copy(), steps),
                                  np.array_split(xs, threads)))
                return
            work = [x.copy() for x in xs]
            if kind == "blocked-mt":
                for x in work:
                    kernel_call("blocked", x, steps)
                return
            with threadpool_limits(1, user_api="blas"):
                if len(work) == 1:
                    return kernel_call(kind, work[0], steps, threads)
                with ThreadPoolExecutor(threads) as pool:
                    list(pool.map(lambda x: kernel_call(kind, x, steps), work))
        return go
    return make


def lanes_call(xs: np.ndarray, steps: int) -> None:
    """Integrate the systems xs: [B, n, d] in one `lanes` call for `steps` Euler steps,
    every observable at both ends (as kernel_call)."""
    B, ones = len(xs), np.ones(len(xs))
    integrate_lanes(xs, BETA * ones, True, method_kind(METHOD_CODES["euler"]), DT * ones, steps,
                    1e-3 * ones, np.zeros((B, 2, len(OBSERVABLES))),
                    np.zeros((B, 0) + xs.shape[1:], xs.dtype), np.zeros(1, dtype=np.int64),
                    np.zeros(B, dtype=np.int64), np.zeros(B, dtype=np.int64), SAVE_ALL)


@jit_fast
def exp_passes(a, passes):
    """exp_inplace over a, passes times, in one compiled call (no dispatch per pass)."""
    for _ in range(passes):
        exp_inplace(a)


def ceilings(threads: int, repeats: int) -> dict:
    """gemm GFLOP/s (the shape of the big Gram product; BLAS on one thread and on all) and
    vectorised exponentials per second (all threads), each from its fastest call of
    max(repeats, CEILING_REPEATS)."""
    repeats = max(repeats, CEILING_REPEATS)
    out = {}
    for dtype in ("float64", "float32"):
        a = np.random.default_rng(0).standard_normal((2048, 128)).astype(dtype)
        b, c = np.ascontiguousarray(a.T), np.empty((2048, 2048), dtype=dtype)
        for label, limit in (("1t", 1), ("all", None)):
            with threadpool_limits(limit, user_api="blas"):
                seconds = timed(lambda a=a, b=b, c=c: np.matmul(a, b, out=c), repeats,
                                min)
            out[f"gemm_{label}_gflops_{dtype}"] = 2 * 2048 * 2048 * 128 / seconds / 1e9
    # exponentials on a buffer that stays in L1 (as the kernels' rows and small matrices do),
    # one buffer per thread
    size, passes = 1 << 12, 1024
    bufs = [np.linspace(-20, 0, size) for _ in range(threads)]

    def exps():
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda a: exp_passes(a, passes), bufs))
    out["exp_per_s"] = threads * passes * size / timed(exps, repeats, min)
    return out


def ceiling_rate(n: int, d: int, dtype: str, ceil: dict, threads: int) -> float:
    """System-steps per second if the step ran at the machine's best gemm rate (one thread
    per core, or BLAS's own threads) or at its exp rate, whichever binds."""
    gemm = max(ceil[f"gemm_1t_gflops_{dtype}"] * threads, ceil[f"gemm_all_gflops_{dtype}"])
    return min(gemm * 1e9 / (4 * n * n * d), ceil["exp_per_s"] / (n * n))


def against(rows: list[dict], ceil: dict, threads: int) -> None:
    """Each row's share of the ceiling `ceil` (ceiling_rate at its shape), in place."""
    for row in rows:
        top = ceiling_rate(row["n"], row["d"], row["dtype"], ceil, threads)
        row.update(vs_ceiling=row["steps_per_s"] / top, ceiling_steps_per_s=top)


def shape_rows(n, d, systems, dtype, kinds, ceil, threads, target_s, repeats) -> list[dict]:
    rng = np.random.default_rng(0)
    xs = np.stack([uniform(n, d, rng) for _ in range(systems)]).astype(dtype)
    flop = 4 * n * n * d
    makers = {"numpy": lambda s: lambda: numpy_steps(xs, BETA, DT, s)}
    torch_fn = torch_steps_or_none()
    if torch_fn is not None:
        makers["torch"] = lambda s: lambda: torch_fn(xs, BETA, DT, s)
    jax_fn = euler_steps_or_none() if (n, d, systems) in JAX_SHAPES else None
    if jax_fn is not None:  # each step count compiles once, in the untimed call of `timed`
        makers["jax"] = lambda s: lambda: jax_fn(xs, BETA, DT, s)
    makers.update({k: kernel_maker(k, xs, threads) for k in kinds})
    rates = {k: calibrated_rate(m, systems, target_s, repeats) for k, m in makers.items()}
    rows = [{"n": n, "d": d, "systems": systems, "dtype": dtype, "impl": k,
             "steps_per_s": r, "gflops": r * flop / 1e9, "vs_numpy": r / rates["numpy"]}
            for k, r in rates.items()]
    against(rows, ceil, threads)
    for row in rows:
        if row["impl"] == "jax":
            row["compile_s"] = jax_fn.compile_s  # of the timed step count
    return rows


def machine() -> dict:
    return {**identity(), "numba": numba.__version__, "numba_threads": numba.get_num_threads()}


def print_table(rows: list[dict], ceil: dict) -> None:
    print("gemm GFLOP/s (BLAS on 1 thread / all): " + ", ".join(
        f"{t} {ceil[f'gemm_1t_gflops_{t}']:.1f} / {ceil[f'gemm_all_gflops_{t}']:.1f}"
        for t in ("float64", "float32")) + f"; exp {ceil['exp_per_s'] / 1e6:.0f} M/s")
    print(f"{'shape':>18} {'dtype':>8} {'impl':>10} {'steps/s':>11} {'GFLOP/s':>8} "
          f"{'x NumPy':>8} {'x ceiling':>9}")
    for r in rows:
        shape = f"({r['n']},{r['d']})x{r['systems']}"
        rate = f"{r['steps_per_s']:.0f}" if r["steps_per_s"] >= 100 else f"{r['steps_per_s']:.1f}"
        print(f"{shape:>18} {r['dtype']:>8} {r['impl']:>10} {rate:>11} "
              f"{r['gflops']:8.2f} {r['vs_numpy']:8.2f} {r['vs_ceiling']:9.2f}")


def main(quick: bool = False) -> Path:
    threads, repeats, target = available_cpus(), 3 if quick else 5, 0.15 if quick else 0.4
    load_before = os.getloadavg()
    ceil = ceilings(threads, repeats)
    rows = []
    if euler_steps_or_none() is None:
        print(MISSING)
    for n, d, systems, dtype, kinds in SHAPES:
        rows += shape_rows(n, d, systems, dtype, kinds, ceil, threads, target, repeats)
    print_table(rows, ceil)
    sweep, long = kernel_share(threads), kernel_share(threads, sweep=LONG)
    start = start_up_times()
    print(describe(sweep))
    print(describe(long))
    print(f"start-up: cold {start['cold_start_s']:.1f} s wall, {start['cold_start_cpu_s']:.1f} s "
          f"CPU (compiles the demo's kernels); warm {start['warm_start_s']:.2f} s wall, "
          f"{start['warm_start_cpu_s']:.2f} s CPU")
    result = {"machine": machine(), "load_before": load_before, "load_after": os.getloadavg(),
              "ceilings": ceil, "rows": rows, "sweep": sweep, "sweep_long": long,
              "start_up": start,
              "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    path = out / f"bench-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"written: {path}")
    return path


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
