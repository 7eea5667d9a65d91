"""Whole runs through the command line: share of wall time inside the kernels, start-up times.

Each measurement is a fresh `python -m sweep run` process, as a user would start it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import xarray as xr
import yaml

ROOT = Path(__file__).resolve().parent.parent

# 256 small jobs shaped like a real phase diagram: 16 betas x 16 seeds, 600 Euler steps each
SWEEP = {
    "name": "bench",
    "model": {"attention": "softmax", "n": 32, "d": 3},
    "integrate": {"method": "euler", "dt": 0.05, "t_max": 30.0, "save_every": 0.5},
    "grid": {"beta": {"linspace": [0.0, 9.0, 16]}, "seed": {"range": [0, 16]}},
}
TINY = ["--set", "integrate.t_max=0.5", "--set", "grid.seed=[0]", "--set", "grid.d=[3]",
        "--set", "grid.beta=[1.0]"]


def _sweep_run(args: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a `sweep run` process from start to exit."""
    t, cpu = time.perf_counter(), _child_cpu()
    subprocess.run([sys.executable, "-m", "sweep", "run", *args], check=True, cwd=ROOT,
                   env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, _child_cpu() - cpu


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def kernel_share(workers: int) -> dict:
    """Run SWEEP; the share of worker time spent inside simulate() (start + compiled call)."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg, out = Path(tmp) / "bench.yaml", Path(tmp) / "bench.nc"
        cfg.write_text(yaml.safe_dump(SWEEP, sort_keys=False))
        wall, _ = _sweep_run([str(cfg), "--out", str(out), "--workers", str(workers)])
        with xr.open_dataset(out) as ds:
            inside = float(ds["wall_seconds"].sum())
            jobs = int(ds["wall_seconds"].size)
    return {"jobs": jobs, "workers": workers, "wall_s": wall, "kernel_s": inside,
            "share_in_kernels": inside / (workers * wall)}


def start_up_times() -> dict:
    """Cold (empty Numba cache: compiles the demo's kernels) and warm `sweep run` of the demo
    reduced to one short job."""
    demo = str(ROOT / "configs" / "demo.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        env = {"NUMBA_CACHE_DIR": str(Path(tmp) / "cache")}
        run = [demo, *TINY, "--out", str(Path(tmp) / "demo.nc"), "--force"]
        cold, cold_cpu = _sweep_run(run, env)
        warm, warm_cpu = sorted(_sweep_run(run, env) for _ in range(3))[1]
    return {"cold_start_s": cold, "warm_start_s": warm, "compile_s": cold - warm,
            "cold_start_cpu_s": cold_cpu, "warm_start_cpu_s": warm_cpu}
