"""JAX, what many would pick instead of sweep: the reference workload (benchmarks/workload.py)
and the Euler step of benchmarks/reference_step.py written as a JAX user would write them.

float64 (jax_enable_x64), one jit over every system: vmap over the systems, lax.scan over the
steps, the statistic inside the scan (the Gram matrix of a step serves both the clustered
fraction and the softmax), nothing back on the host until the end. The systems go through in
chunks of CHUNK (lax.map with batch_size: vmap within a chunk, a loop over chunks), so a step's
[chunk, n, n] arrays stay in cache: one vmap over all 11,520 systems of the reference workload
streams ~94 MB per array per step through memory and took 4x the CPU time (16.9 s against
3.9 s for 30 betas, one core). Compilation (lower +
compile, ahead of time) is timed apart from the steady call of the compiled function.
jax is optional and for benchmarks only (`pip install 'sweep[bench]'`): `available()` says
whether it is importable, and nothing else in the repository imports it.

Usage: python benchmarks/jax_peer.py reference [--betas B] [--starts FILE.npy] [--out FILE.npy]
       [--times FILE.json]
       python benchmarks/jax_peer.py euler [--shape N D] [--betas LO HI COUNT] [--seeds S]
       [--dt DT] [--steps K] ...   (cli_sweep.SWEEP's jobs by default, with beta 0 9 16)
  {"compile_s", "steady_s", "systems"} to FILE.json (else printed); one process as a user runs
  it (benchmarks/jax_targets.py times the whole process, pinned to one core or not).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workload  # noqa: E402

# One XLA thread and one Eigen thread: a pinned single-core run as sweep's one worker
ONE_CORE = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
CHUNK = 128  # systems per vmap: one beta's starts (32 to 512 tried on 30 betas: 128 fastest)
MISSING = "jax not installed (pip install 'sweep[bench]'): its rows are not measured"


def available() -> bool:
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def _jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def reference_fn(steps: int = workload.STEPS, dt: float = workload.DT, eps: float = workload.EPS):
    """A jitted f(x: [systems, n, d], beta: [systems]) -> [systems, steps + 1] clustered
    fraction (workload.numpy_phase's numbers)."""
    jax = _jax()
    jnp = jax.numpy

    def one(x, beta):
        n = x.shape[0]
        off = ~jnp.eye(n, dtype=bool)

        def fraction(g):
            return jnp.sum((g > 1.0 - eps) & off) / (n * (n - 1))

        def step(x, _):
            g = x @ x.T
            w = jnp.exp(beta * (g - 1.0))  # shift by <x_i, x_i> = 1: exact on the sphere
            x = x + dt * ((w / w.sum(axis=-1, keepdims=True)) @ x)
            return x / jnp.linalg.norm(x, axis=-1, keepdims=True), fraction(g)

        last, seen = jax.lax.scan(step, x, None, length=steps)
        return jnp.append(seen, fraction(last @ last.T))

    return chunked(jax, one)


def euler_fn(dt: float, steps: int):
    """A jitted f(x: [systems, n, d], beta: [systems]) -> x after `steps` of
    reference_step.numpy_steps's Euler step (softmax shifted by its row maximum, the tangent
    projection, renormalisation)."""
    jax = _jax()
    jnp = jax.numpy

    def one(x, beta):
        def step(x, _):
            a = jax.nn.softmax(beta * (x @ x.T), axis=-1)
            v = a @ x
            x = x + dt * (v - jnp.sum(x * v, axis=-1, keepdims=True) * x)
            return x / jnp.linalg.norm(x, axis=-1, keepdims=True), None

        return jax.lax.scan(step, x, None, length=steps)[0]

    return chunked(jax, one)


def chunked(jax, one):
    """jit of one(x, beta) over systems x: [systems, n, d], beta: [systems], CHUNK at a time."""
    return jax.jit(lambda x, beta: jax.lax.map(lambda a: one(*a), (x, beta), batch_size=CHUNK))


def compiled(fn, *args) -> tuple[object, float]:
    """(fn compiled ahead of time for args, seconds to trace, lower and compile it)."""
    t = time.perf_counter()
    done = fn.lower(*args).compile()
    return done, time.perf_counter() - t


def steady(done, *args) -> tuple[np.ndarray, float]:
    """(the result on the host, seconds of one call of the compiled function)."""
    t = time.perf_counter()
    out = np.asarray(done(*args).block_until_ready())
    return out, time.perf_counter() - t


def euler_steps_or_none():
    """f(x, beta, dt, steps) as reference_step.numpy_steps (compiled once per (dt, steps,
    shape, dtype), outside the calls a caller times; f.compile_s: the seconds of the latest
    compilation), or None without jax."""
    if not available():
        return None
    cache: dict = {}

    def steps_fn(x: np.ndarray, beta: float, dt: float, steps: int) -> np.ndarray:
        b = np.full(len(x), beta, dtype=x.dtype)
        key = (dt, steps, x.shape, x.dtype.str)
        if key not in cache:
            cache[key], steps_fn.compile_s = compiled(euler_fn(dt, steps), x, b)
        return steady(cache[key], x, b)[0]

    return steps_fn


def timed_run(fn, *args) -> tuple[np.ndarray, dict]:
    """(fn(*args) on the host, {"compile_s", "steady_s", "systems"})."""
    done, compile_s = compiled(fn, *args)
    out, steady_s = steady(done, *args)
    return out, {"compile_s": compile_s, "steady_s": steady_s, "systems": len(args[0])}


def reference(count: int, starts: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """The reference workload on linspace betas of `count` x starts (default: random ones):
    clustered fraction [systems, steps + 1] and the times."""
    starts = workload.random_starts() if starts is None else starts
    return timed_run(reference_fn(), *workload.systems(starts, workload.betas(count)))


def euler(n: int, d: int, betas: tuple[float, float, int], seeds: int, dt: float,
          steps: int) -> tuple[np.ndarray, dict]:
    """linspace(*betas) x `seeds` random starts of (n, d), `steps` Euler steps each: the
    final positions and the times."""
    starts = workload.random_starts(seeds, n, d)
    x, beta = workload.systems(starts, np.linspace(*betas[:2], int(betas[2])))
    return timed_run(euler_fn(dt, steps), x, beta)


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", choices=["reference", "euler"])
    parser.add_argument("--betas", type=float, nargs="+",
                        help="reference: a count (90); euler: LO HI COUNT (0 9 16)")
    parser.add_argument("--starts", help="reference: [seeds, n, d] .npy (default: random)")
    parser.add_argument("--shape", type=int, nargs=2, default=(32, 3), help="euler: n d")
    parser.add_argument("--seeds", type=int, default=16, help="euler: starts per beta")
    parser.add_argument("--dt", type=float, default=0.05, help="euler: step")
    parser.add_argument("--steps", type=int, default=600, help="euler: steps")
    parser.add_argument("--out", help="write the result here (.npy)")
    parser.add_argument("--times", help="write the times here (.json) instead of printing them")
    args = parser.parse_args(argv)
    if args.workload == "reference":
        starts = None if args.starts is None else np.load(args.starts)
        out, times = reference(int((args.betas or [workload.BETAS[2]])[0]), starts)
    else:
        betas = tuple(args.betas or (0.0, 9.0, 16))
        out, times = euler(*args.shape, betas, args.seeds, args.dt, args.steps)
    if args.out:
        np.save(args.out, out)
    if args.times:
        Path(args.times).write_text(json.dumps(times))
    else:
        print(json.dumps(times))


if __name__ == "__main__":
    main(sys.argv[1:])
