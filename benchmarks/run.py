"""Kernel throughput against a plain NumPy step, measured in the same run.

Prints steps per second for each shape and the ratio to NumPy; writes the table as JSON to
benchmarks/results/. Never imported by the tests.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from sweep import states
from sweep.kernels import METHOD_CODES, OBSERVABLES, dynamics, integrate

SHAPES = [(32, 3), (128, 16), (512, 64)]


def numpy_steps(x, beta, steps, dt=0.05):
    for _ in range(steps):
        s = beta * (x @ x.T)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        v = (e / e.sum(axis=1, keepdims=True)) @ x
        v -= np.sum(x * v, axis=1, keepdims=True) * x
        x = x + dt * v
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def kernel_steps(x, beta, steps, dt=0.05):
    x = x.copy()
    obs = np.zeros((2, len(OBSERVABLES)))
    integrate(x, dynamics("softmax", beta), METHOD_CODES["euler"], dt, steps, 1e-3, obs,
              np.zeros((0,) + x.shape), np.zeros(1, dtype=np.int64))
    return x


def rate(fn, x, steps, repeats=5):
    fn(x, 4.0, 1)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(x, 4.0, steps)
        times.append(time.perf_counter() - t)
    return steps / statistics.median(times)


def main():
    rows = []
    for n, d in SHAPES:
        x = states.uniform(n, d, np.random.default_rng(0))
        steps = max(5, int(2e7 / (n * n * d)))
        ref, ker = rate(numpy_steps, x, steps), rate(kernel_steps, x, steps)
        rows.append({"n": n, "d": d, "numpy_steps_per_s": ref, "kernel_steps_per_s": ker,
                     "ratio": ker / ref})
        print(f"(n={n:5d}, d={d:4d})  numpy {ref:10.0f} steps/s   kernel {ker:10.0f} steps/s   "
              f"ratio {ker / ref:6.2f}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    path = out / f"bench-{stamp}.json"
    path.write_text(json.dumps({"machine": platform.platform(), "rows": rows}, indent=2))
    print(f"written: {path}")


if __name__ == "__main__":
    main()
