"""The reference workload (configs/phase-glpr-reference.yaml) as every peer of `sweep run` runs
it: 90 betas x 128 starts of (n 32, d 2), the layer step x <- normalise(x + dt A x) with
A = softmax_rows(beta x x^T), dt 0.1 for 300 steps, and at every step (and the start) the
clustered fraction, the share of ordered pairs i != j with <x_i, x_j> > 1 - eps.

Written once here for the batched NumPy peer (`numpy_phase`) and the JAX one
(benchmarks/jax_peer.py), so both run what sweep runs and count what sweep counts
(tests/test_jax_peer.py checks the NumPy peer against `sweep run` without JAX).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "phase-glpr-reference.yaml"
N, D, SEEDS, DT, STEPS, EPS = 32, 2, 128, 0.1, 300, 1e-3
BETAS = (0.1, 9.0, 90)  # linspace


def betas(count: int = BETAS[2]) -> np.ndarray:
    return np.linspace(BETAS[0], BETAS[1], count)


def random_starts(seeds: int = SEEDS, n: int = N, d: int = D) -> np.ndarray:
    """[seeds, n, d] uniform points on the sphere, as a user of a peer would draw them."""
    x = np.random.default_rng(0).standard_normal((seeds, n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def sweep_starts(seeds: int = SEEDS, config: Path = CONFIG) -> np.ndarray:
    """[seeds, n, d]: the starts `sweep run` of `config` draws for seeds 0..seeds-1 (shared
    by every beta), so a peer fed them must count exactly what sweep counts."""
    from sweep.config.grid import expand
    from sweep.config.schema import load
    from sweep.execution.simulate import initial_state

    jobs = expand(load(config, ["grid.beta=[1.0]", f"grid.seed={{range: [0, {seeds}]}}"]))
    return np.stack([initial_state(job) for job in jobs])


def systems(starts: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (beta, start) pair as one system, beta-major (sweep's C order of the grid):
    (x: [len(beta) * seeds, n, d], beta per system: [len(beta) * seeds])."""
    x = np.broadcast_to(starts, (len(beta), *starts.shape)).reshape(-1, *starts.shape[1:])
    return np.ascontiguousarray(x), np.repeat(beta, len(starts))


def numpy_phase(x: np.ndarray, beta: np.ndarray, steps: int = STEPS, dt: float = DT,
                eps: float = EPS) -> np.ndarray:
    """[systems, steps + 1] clustered fraction of every system x: [systems, n, d] (beta: one
    per system), all at once: per step the Gram products, the softmax (shifted by
    <x_i, x_i> = 1), the residual step and the renormalisation."""
    x, b = x.copy(), beta[:, None, None]
    off = ~np.eye(x.shape[1], dtype=bool)
    clustered = np.empty((x.shape[0], steps + 1))
    for step in range(steps + 1):
        g = x @ x.transpose(0, 2, 1)
        clustered[:, step] = (g[:, off] > 1.0 - eps).mean(axis=1)
        if step < steps:
            w = np.exp(b * (g - 1.0))
            w /= w.sum(axis=-1, keepdims=True)
            x = x + dt * (w @ x)
            x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return clustered


def timed_numpy_phase(count: int) -> float:
    """Seconds of numpy_phase on linspace betas of `count` x SEEDS random starts."""
    x, b = systems(random_starts(), betas(count))
    t0 = time.perf_counter()
    numpy_phase(x, b)
    return time.perf_counter() - t0


def pairs_differing(a: np.ndarray, b: np.ndarray, n: int = N) -> np.ndarray:
    """Per entry, how many of the n (n - 1) ordered pairs two clustered fractions count
    differently (both are such counts over that total)."""
    return np.rint(np.abs(a - b) * n * (n - 1)).astype(np.int64)
