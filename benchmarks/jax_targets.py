"""targets.py's `jax` entry: the JAX peer (benchmarks/jax_peer.py) against `sweep run` on the
reference workload, whole processes one after the other in the same run, compile included for
both (sweep's kernels come from its cache, JAX compiles at every start, as a user meets them):

  one core   both pinned to core 0 (taskset -c 0): `sweep run --workers 1`, JAX with one XLA
             and one Eigen thread (jax_peer.ONE_CORE)
  two cores  `sweep run --workers 2` and JAX as it starts, on every core
Each side runs PAIRS times, in turn (sweep, JAX, sweep, JAX, ...), and each side's run of
median wall is the one reported: single runs on a shared machine moved sweep's wall by 50%
between two runs of the same code, more than they moved JAX's (benchmarks/HISTORY.md).
JAX's own compile and steady-call seconds come from inside its process. Its statistic, fed
sweep's starts (seeds 0..127), is compared with the clustered fraction of the one-core sweep
run, pair by pair. {"measured": False} when jax is not installed.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cli_sweep  # noqa: E402
import jax_peer  # noqa: E402
import workload  # noqa: E402
from cli_sweep import WARM, fresh, process  # noqa: E402

PEER = Path(jax_peer.__file__).resolve()


def pinned() -> list[str]:
    return ["taskset", "-c", "0"] if shutil.which("taskset") else []


def sweep_timed(out: Path, betas: int, workers: int, pin: list[str]) -> dict:
    """One `sweep run` of the workload into `out`, from nothing (an earlier run's results
    and parts there removed: else it would skip every job)."""
    grid = f"grid.beta={{linspace: [{workload.BETAS[0]}, {workload.BETAS[1]}, {betas}]}}"
    return process([*pin, sys.executable, "-m", "sweep", "run", str(workload.CONFIG),
                    "--set", grid, "--workers", str(workers), "--out", str(fresh(out))])


def jax_timed(tmp: Path, betas: int, starts: Path, env: dict, pin: list[str]) -> dict:
    """One JAX process: wall, peak memory, CPU (cli_sweep.process) and its compile and steady
    seconds; its clustered fraction in tmp/jax.npy."""
    times = tmp / "jax-times.json"
    timed = process([*pin, sys.executable, str(PEER), "reference", "--betas", str(betas),
                     "--starts", str(starts), "--out", str(tmp / "jax.npy"), "--times",
                     str(times)], env={**WARM, **env})
    return {**timed, **json.loads(times.read_text())}


def agreement(jax_out: np.ndarray, results: Path) -> dict:
    """Cells (system, save) where JAX's clustered fraction counts another number of ordered
    pairs than sweep's results file (beta-major systems, as workload.systems orders them)."""
    with xr.open_dataset(results) as ds:
        cf = ds.clustered_fraction.transpose("beta", "seed", "time").values
    ours = cf.reshape(-1, cf.shape[-1])
    if ours.shape != jax_out.shape:
        raise ValueError(f"{results}: {ours.shape} cells, JAX gave {jax_out.shape}")
    pairs = workload.pairs_differing(jax_out, ours)
    return {"cells": int(pairs.size), "cells_differing": int((pairs > 0).sum()),
            "max_pairs_differing": int(pairs.max())}


def small(tmp: Path, sweep: dict) -> dict:
    """JAX on the jobs of targets.py's `small` entry (cli_sweep.SWEEP: 16 betas x 16 starts of
    (32, 3), 600 Euler steps of dt 0.05), pinned to one core: end to end against that
    `sweep run`'s wall (one worker), steady state against the time its jobs spent in the
    kernels. The JAX step records nothing; sweep's jobs save every observable 61 times."""
    if not jax_peer.available():
        return {"measured": False, "why": jax_peer.MISSING}
    cfg, times = cli_sweep.SWEEP, tmp / "jax-small.json"
    grid, integ = cfg["grid"], cfg["integrate"]
    steps = round(integ["t_max"] / integ["dt"])
    timed = process([*pinned(), sys.executable, str(PEER), "euler", "--shape",
                     str(cfg["model"]["n"]), str(cfg["model"]["d"]), "--betas",
                     *map(str, grid["beta"]["linspace"]), "--seeds",
                     str(grid["seed"]["range"][1]), "--dt", str(integ["dt"]), "--steps",
                     str(steps), "--times", str(times)], env={**WARM, **jax_peer.ONE_CORE})
    jax = {**timed, **json.loads(times.read_text())}
    return {"measured": True, "jax": jax, "ratio": {
        "end_to_end": jax["wall_s"] / sweep["wall_s"],
        "steady": jax["steady_s"] / sweep["kernel_s"]}}


PAIRS = 3


def median_run(runs: list[dict]) -> dict:
    """The run of median wall (the lower middle one of an even count), every run's wall
    beside it."""
    middle = sorted(runs, key=lambda r: r["wall_s"])[(len(runs) - 1) // 2]
    return {**middle, "walls_s": [r["wall_s"] for r in runs]}


def paired(sweep_run, jax_run, pairs: int = PAIRS) -> dict:
    """sweep_run() and jax_run() called in turn `pairs` times: each side's median run."""
    runs = [(sweep_run(), jax_run()) for _ in range(pairs)]
    return {"sweep": median_run([s for s, _ in runs]), "jax": median_run([j for _, j in runs])}


def ratios(sweep: dict, jax: dict) -> dict:
    return {"end_to_end": jax["wall_s"] / sweep["wall_s"],
            "steady": jax["steady_s"] / sweep["wall_s"]}


def entry(tmp: Path, betas: int) -> dict:
    """The `jax` entry of a targets JSON (see the module's docstring)."""
    if not jax_peer.available():
        return {"measured": False, "why": jax_peer.MISSING}
    starts = tmp / "sweep-starts.npy"
    np.save(starts, workload.sweep_starts())
    one = paired(lambda: sweep_timed(tmp / "one.nc", betas, 1, pinned()),
                 lambda: jax_timed(tmp, betas, starts, jax_peer.ONE_CORE, pinned()))
    one["agreement"] = agreement(np.load(tmp / "jax.npy"), tmp / "one.nc")
    two = paired(lambda: sweep_timed(tmp / "two.nc", betas, 2, []),
                 lambda: jax_timed(tmp, betas, starts, {}, []))
    for side in (one, two):
        side["ratio"] = ratios(side["sweep"], side["jax"])
    return {"measured": True, "betas": betas, "pinned": " ".join(pinned()), "pairs": PAIRS,
            "one_core": one, "two_cores": two,
            "workers_speedup": one["sweep"]["wall_s"] / two["sweep"]["wall_s"]}
