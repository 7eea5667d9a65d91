"""The reference phase diagram (configs/phase-glpr-reference.yaml) through `sweep run` against a
batched NumPy implementation of the same workload, measured in the same process.

NumPy: every (beta, start) system at once, x: [systems, n, d]; per step the Gram products, a
softmax, the residual step x + dt A x and the renormalisation (the `layer` method), and at
every save the clustered fraction (pairs i != j with cosine > 1 - eps). `sweep run`: a fresh
process with a warm compile cache and one worker, its wall time and peak memory, and the
size of the results file. Usage: python benchmarks/phase_workload.py [BETAS] (default 90;
fewer betas cut both sides alike). Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "phase-glpr-reference.yaml"
N, D, SEEDS, DT, STEPS, EPS = 32, 2, 128, 0.1, 300, 1e-3


def numpy_phase(betas: np.ndarray, seed: int = 0) -> tuple[float, np.ndarray]:
    """(seconds, clustered fraction [betas * SEEDS, STEPS + 1]) of the batched NumPy run."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((SEEDS, N, D))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    x = np.repeat(x[None], len(betas), axis=0).reshape(-1, N, D)
    beta = np.repeat(betas, SEEDS)[:, None, None]
    off = ~np.eye(N, dtype=bool)
    clustered = np.empty((x.shape[0], STEPS + 1))
    t0 = time.perf_counter()
    for step in range(STEPS + 1):
        g = x @ x.transpose(0, 2, 1)
        clustered[:, step] = (g[:, off] > 1.0 - EPS).mean(axis=1)
        if step == STEPS:
            break
        w = np.exp(beta * (g - 1.0))
        w /= w.sum(axis=-1, keepdims=True)
        x = x + DT * (w @ x)
        x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return time.perf_counter() - t0, clustered


def cli_run(betas: int, out: Path) -> dict:
    """Wall seconds and peak memory of `sweep run` of the reference config (warm cache)."""
    cmd = [sys.executable, "-m", "sweep", "run", str(CONFIG), "--workers", "1", "--out",
           str(out), "--force", "--set", f"grid.beta={{linspace: [0.1, 9.0, {betas}]}}"]
    subprocess.run(cmd[:4] + ["--set", "grid.seed=[0]", "--set", "grid.beta=[1.0]",
                              "--out", str(out.with_name("warm.nc"))],
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"wall_s": wall, "peak_mib": peak, "output_mb": out.stat().st_size / 1e6}


def main(betas: int = 90) -> dict:
    grid = np.linspace(0.1, 9.0, betas)
    with tempfile.TemporaryDirectory() as tmp:
        cli = cli_run(betas, Path(tmp) / "phase.nc")
    numpy_s, _ = numpy_phase(grid)
    return {"betas": betas, "systems": betas * SEEDS, "numpy_s": numpy_s, "sweep": cli,
            "speedup_vs_numpy": numpy_s / cli["wall_s"], "load": os.getloadavg()[0]}


if __name__ == "__main__":
    print(json.dumps(main(*map(int, sys.argv[1:2])), indent=1))
