"""Whole runs through the command line: share of wall time inside the kernels, start-up times.

Each measurement is a fresh `python -m sweep run` process, as a user would start it. The
sweep's worker time (workers x wall) splits into the kernels (the jobs' wall_seconds:
drawing the start and the compiled call), the fixed cost of any run (start-up, warm-up,
merge, exit: the wall of the same config cut to one job) and the rest, per job: locks,
part writes, scheduling. Usage: python benchmarks/cli_sweep.py [workers]
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import xarray as xr
import yaml

ROOT = Path(__file__).resolve().parent.parent
GNU_TIME = "/usr/bin/time"  # GNU time (Debian/Ubuntu package `time`), for peak memory
# Every timed process starts as on a user's machine, with Python's bytecode cache written
# and read: where PYTHONDONTWRITEBYTECODE is set, each module edited since its last .pyc is
# compiled again at every start (0.4 s of a one-job run of the reference config)
WARM = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}

# 256 small jobs shaped like a real phase diagram: 16 betas x 16 seeds, 600 Euler steps each
SWEEP = {
    "name": "bench",
    "model": {"attention": "softmax", "n": 32, "d": 3},
    "integrate": {"method": "euler", "dt": 0.05, "t_max": 30.0, "save_every": 0.5},
    "grid": {"beta": {"linspace": [0.0, 9.0, 16]}, "seed": {"range": [0, 16]}},
}
# The same 256 jobs with 50x the work each (n = 128, 3000 steps, ~50 ms a job): where the
# fixed cost of a run stops mattering
LONG = {**SWEEP, "model": {**SWEEP["model"], "n": 128},
        "integrate": {**SWEEP["integrate"], "t_max": 150.0, "save_every": 1.5}}
TINY = ["--set", "integrate.t_max=0.5", "--set", "grid.seed=[0]", "--set", "grid.d=[3]",
        "--set", "grid.beta=[1.0]"]


def process(argv: list[str], cwd: Path = ROOT, env: dict | None = None) -> dict:
    """Wall seconds, peak resident memory (MiB) and CPU seconds (user + system) of one
    process. The peak is GNU time's (%M): a child forked from this process would count this
    process's own memory (Linux carries the pre-exec image's high-water mark into ru_maxrss)."""
    with tempfile.NamedTemporaryFile("r") as usage:
        t = time.perf_counter()
        done = subprocess.run([GNU_TIME, "-f", "%M %U %S", "-o", usage.name, *argv], cwd=cwd,
                              env=WARM if env is None else env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE,
                              text=True)
        wall = time.perf_counter() - t
        if done.returncode:
            raise RuntimeError(f"{' '.join(argv)} exited with {done.returncode}:\n"
                               f"{done.stderr[-2000:]}")
        peak, user, system = usage.read().split()[-3:]
    return {"wall_s": wall, "peak_mib": int(peak) / 1024, "cpu_s": float(user) + float(system)}


def fresh(out: Path) -> Path:
    """out, with an earlier run's results file and parts removed: a `sweep run` into it then
    runs every job, as a first run does (else it would skip them all)."""
    from sweep.storage.store import parts_dir

    out.unlink(missing_ok=True)
    shutil.rmtree(parts_dir(out), ignore_errors=True)
    return out


def _sweep_run(args: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a `sweep run` process from start to exit."""
    wall, cpu, _ = _sweep_run_output(args, env)
    return wall, cpu


def _sweep_run_output(args: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """_sweep_run's (wall, CPU) and what the run printed on stdout."""
    t, cpu = time.perf_counter(), _child_cpu()
    done = subprocess.run([sys.executable, "-m", "sweep", "run", *args], check=True, cwd=ROOT,
                          env={**WARM, **(env or {})}, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    return time.perf_counter() - t, _child_cpu() - cpu, done.stdout


def worker_share(printed: str) -> float:
    """The share of worker time spent integrating, as `sweep run` reports it (its summary
    line: "..., 97% of worker time integrating), ...")."""
    match = re.search(r"(\d+)% of worker time integrating", printed)
    if match is None:
        raise ValueError("sweep run printed no share of worker time")
    return int(match.group(1)) / 100


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def kernel_share(workers: int, repeats: int = 3, sweep: dict = SWEEP) -> dict:
    """Run `sweep` (fresh output each time; the run of median wall is reported) and the same
    config cut to one job; the share of worker time spent inside simulate() (start +
    compiled call), and the split of the rest into a fixed part and a per-job overhead."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg, one = Path(tmp) / "bench.yaml", [str(Path(tmp) / "one.nc"), "--force"]
        cfg.write_text(yaml.safe_dump(sweep, sort_keys=False))
        single = [str(cfg), "--set", "grid.beta=[0.0]", "--set", "grid.seed=[0]", "--out"]
        _sweep_run(single + one)  # loads (or compiles) the kernels into the cache
        fixed = statistics.median(_sweep_run(single + one)[0] for _ in range(repeats))
        runs = sorted(_timed_sweep(cfg, Path(tmp) / f"bench{i}.nc", workers)
                      for i in range(repeats))
    wall, inside, jobs, integrating = runs[len(runs) // 2]
    overhead = max(workers * (wall - fixed) - inside, 0.0)
    shape = (sweep["model"]["n"], sweep["model"]["d"])
    steps = round(sweep["integrate"]["t_max"] / sweep["integrate"]["dt"])
    return {"shape": shape, "steps": steps, "jobs": jobs, "workers": workers, "wall_s": wall,
            "kernel_s": inside,
            "share_in_kernels": inside / (workers * wall), "fixed_s": fixed,
            "kernel_ms_per_job": 1e3 * inside / jobs,
            "overhead_ms_per_job": 1e3 * overhead / jobs,
            "share_after_fixed": inside / (workers * max(wall - fixed, 1e-9)),
            "worker_share_outside": 1.0 - integrating,  # as the run measured it itself
            "wall_runs_s": [r[0] for r in runs]}


def _timed_sweep(cfg: Path, out: Path, workers: int) -> tuple[float, float, int, float]:
    """(wall, summed job wall_seconds, jobs, the share of worker time integrating it printed)
    of one `sweep run` of cfg into a new output."""
    wall, _, printed = _sweep_run_output([str(cfg), "--out", str(out), "--workers",
                                          str(workers)])
    with xr.open_dataset(out) as ds:
        return (wall, float(ds["wall_seconds"].sum()), int(ds["wall_seconds"].size),
                worker_share(printed))


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


def describe(sweep: dict) -> str:
    """One line: where the sweep's worker time went."""
    return (f"sweep run, {sweep['jobs']} jobs of {tuple(sweep['shape'])} x {sweep['steps']} "
            f"steps on {sweep['workers']} worker(s): "
            f"{sweep['wall_s']:.2f} s wall = {sweep['fixed_s']:.2f} s fixed (start-up, warm-up, "
            f"merge, exit) + jobs at {sweep['kernel_ms_per_job']:.2f} ms in kernels and "
            f"{sweep['overhead_ms_per_job']:.2f} ms outside per job and worker; "
            f"{100 * sweep['share_in_kernels']:.0f}% of worker time in kernels, "
            f"{100 * sweep['share_after_fixed']:.0f}% after the fixed part")


if __name__ == "__main__":
    for config in (SWEEP, LONG):
        result = kernel_share(int(sys.argv[1]) if len(sys.argv) > 1 else 2, sweep=config)
        print(describe(result))
        print(json.dumps(result, indent=2))
