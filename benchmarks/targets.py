"""The whole-command targets of a phase-diagram sweep, each a fresh `sweep` process as a user
starts it (compiled kernels and Python's bytecode cached: cli_sweep.WARM), written as JSON
to benchmarks/results/targets-*.json (benchmarks/targets_table.py turns the latest into the
table of docs/performance.md).

  reference  configs/phase-glpr-reference.yaml (d 2, n 32, 90 betas x 128 starts, layer
             steps dt 0.1 to t 30, clustered fraction at every step) on one worker, against a
             batched NumPy implementation of the same workload timed in the same run: wall,
             peak memory, size of the results file
  reference_code  the public code of arXiv 2312.10794 on the same workload, pinned to one
             core, and its statistic against sweep's (benchmarks/reference_code.py; only
             when SWEEP_REFERENCE_CODE names a checkout of it, else marked not measured)
  jax        the JAX peer on the reference workload against `sweep run`, one core each and
             two cores each, compile apart from steady state (benchmarks/jax_targets.py; only
             when jax is installed, else marked not measured)
  small      256 jobs of (32, 3) x 600 Euler steps: share of worker time inside the kernels;
             jax_small: the JAX peer on the same jobs
  large      (2048, 128) x 1, float64 and float32: `symmetric` against NumPy, JAX and the
             gemm ceiling (benchmarks/run.py's rows), saving every observable and (rows
             apart) the clustered fraction only; the ceilings measured again after every
             row, the best of the two kept (best_ceilings)
  tiny       100,000 jobs of (4, 2) x 2 steps: part files, then a fully skipped rerun,
             `status` and `merge`
  plan       `sweep plan` of a 1,000,000-job grid: wall and peak memory
  cold_compile  `sweep compile configs/demo.yaml` into an empty compile cache (what the
             first run after an install waits for): wall, CPU
Usage: python benchmarks/targets.py [--quick]  (--quick: a tenth of each size)
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jax_targets  # noqa: E402
import machine  # noqa: E402
import reference_code  # noqa: E402
import workload  # noqa: E402
from cli_sweep import SWEEP, WARM, fresh, kernel_share, process  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "configs" / "phase-glpr-reference.yaml"
DEMO = ROOT / "configs" / "demo.yaml"
N, SEEDS, STEPS = workload.N, workload.SEEDS, workload.STEPS


def command(*args: str, cwd: Path = ROOT) -> dict:
    """Wall seconds, peak resident memory (MiB) and CPU seconds of one `sweep` process."""
    return process([sys.executable, "-m", "sweep", *args], cwd=cwd)


def reference(tmp: Path, betas: int) -> dict:
    out, grid = tmp / "phase.nc", f"grid.beta={{linspace: [0.1, 9.0, {betas}]}}"
    command("run", str(REFERENCE), "--set", "grid.beta=[1.0]", "--set", "grid.seed=[0]",
            "--out", str(tmp / "warm.nc"))  # loads (or compiles) the kernels
    runs = []
    for _ in range(jax_targets.PAIRS):  # the median of a few runs: one run moves with the load
        runs.append(command("run", str(REFERENCE), "--workers", "1", "--set", grid, "--out",
                            str(fresh(out))))
    run = jax_targets.median_run(runs)
    numpy_s = workload.timed_numpy_phase(betas)
    exps = betas * SEEDS * STEPS * N * (N + 1) // 2  # lanes.py: one per pair i <= j per step
    rate = exp_rate()
    return {"jobs": betas * SEEDS, **run, "output_mb": out.stat().st_size / 1e6,
            "numpy_s": numpy_s, "speedup_vs_numpy": numpy_s / run["wall_s"],
            "exps": exps, "exp_per_s": rate, "exp_ceiling_share": exps / rate / run["wall_s"]}


def exp_rate(repeats: int = 5) -> float:
    """Exponentials per second of the kernels' exp on one core, over a buffer the size of
    the reference's weight matrix (n^2), best of `repeats` compiled calls."""
    from run import exp_passes, timed  # imports the kernels: only once the sweep has run

    a, passes = np.random.default_rng(0).uniform(-9.0, 0.0, N * N), 20_000
    return passes * a.size / timed(lambda: exp_passes(a, passes), repeats, min)


def large(quick: bool) -> dict:
    """(2048, 128) x 1 in float64 and float32: the `symmetric` kernel `sweep run` picks there
    (saving every observable, and the clustered fraction only), NumPy's batched step, the JAX
    peer when installed, and the gemm ceiling, measured as `make bench` measures them
    (benchmarks/run.py), steady state."""
    import run  # imports the kernels: only once the sweep has run

    threads, repeats = run.available_cpus(), 3
    ceil = run.ceilings(threads, repeats)
    rows = [row for dtype in ("float64", "float32")
            for row in run.shape_rows(2048, 128, 1, dtype, ("symmetric", "symmetric-close"),
                                      ceil, threads, 0.15 if quick else 0.4, repeats)]
    return {"ceilings": ceil, "rows": rows}


def best_ceilings(*measured: dict) -> dict:
    """Each ceiling's best over several measurements: a ceiling is the best the machine does,
    and one measured while something else held a core reads low (a share above 1 then:
    benchmarks/HISTORY.md, "Saves at (2048, 128)")."""
    return {key: max(m[key] for m in measured) for key in measured[0]}


def ceilings_again(result: dict) -> None:
    """The ceilings measured once more after every row, the best of the two kept and the
    rows' shares taken against it (both measurements kept beside)."""
    import run

    first, threads = result["large"]["ceilings"], run.available_cpus()
    again = run.ceilings(threads, 3)
    best = best_ceilings(first, again)
    result["large"] |= {"ceilings": best, "ceilings_measured": [first, again]}
    for rows in (result["large"]["rows"], result["lanes_small"]["rows"]):
        run.against(rows, best, threads)


def lanes_small(quick: bool, ceil: dict) -> dict:
    """(32, 3) x 256 float64: the `lanes` kernel `sweep run` picks there (one batch per
    core), NumPy's batched step and the JAX peer, against the exp ceiling `large` measured
    (benchmarks/run.py's rows for that shape, steady state)."""
    import run

    threads = run.available_cpus()
    return {"rows": run.shape_rows(32, 3, 256, "float64", ("lanes",), ceil, threads,
                                   0.15 if quick else 0.4, 3)}


def tiny(tmp: Path, seeds: int) -> dict:
    cfg = tmp / "tiny.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "tiny", "model": {"n": 4, "d": 2},
        "integrate": {"dt": 0.1, "t_max": 0.2, "save_every": 0.1},
        "grid": {"beta": {"linspace": [0.1, 9.0, 100]}, "seed": {"range": [0, seeds]}},
        "output": {"path": str(tmp / "tiny.nc")}}))
    from sweep.storage.store import parts_dir

    first = command("run", str(cfg), "--workers", "1")
    parts = sum(1 for p in parts_dir(tmp / "tiny.nc").iterdir() if p.suffix == ".npz")
    return {"jobs": 100 * seeds, "first_run": first, "part_files": parts,
            "skipped_rerun": command("run", str(cfg), "--workers", "1"),
            "status": command("status", str(cfg)), "merge": command("merge", str(cfg))}


def plan(tmp: Path, seeds: int) -> dict:
    cfg = tmp / "million.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "million", "model": {"n": 4, "d": 2},
        "integrate": {"dt": 0.1, "t_max": 0.2, "save_every": 0.1},
        "grid": {"beta": {"linspace": [0.1, 9.0, 1000]}, "seed": {"range": [0, seeds]}}}))
    return {"jobs": 1000 * seeds, **command("plan", str(cfg))}


def cold_compile(tmp: Path) -> dict:
    """`sweep compile` of the demo into an empty compile cache (Python's bytecode cached)."""
    env = {**WARM, "NUMBA_CACHE_DIR": str(tmp / "cold-cache")}
    return {"variants": ["lanes-float64", "rows-float64"],
            **process([sys.executable, "-m", "sweep", "compile", str(DEMO)], env=env)}


def main(quick: bool = False) -> Path:
    scale = 10 if quick else 1
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        result = {"when": datetime.datetime.now(datetime.timezone.utc).isoformat("T", "seconds"),
                  "cores": os.cpu_count(), "machine": machine.identity(),
                  "load_before": os.getloadavg()[0],
                  "bytecode_cache": "PYTHONDONTWRITEBYTECODE" not in WARM,
                  "cold_compile": cold_compile(tmp),
                  "reference": reference(tmp, 90 // scale)}
        result["reference_code"] = reference_code.entry(tmp, 90 // scale, result["reference"],
                                                        tmp / "phase.nc")
        result["jax"] = jax_targets.entry(tmp, 90 // scale)
        result |= {"plan": plan(tmp, 1000 // scale), "tiny": tiny(tmp, 1000 // scale),
                   "small": kernel_share(1, sweep=SWEEP), "quick": quick}
        result["jax_small"] = jax_targets.small(tmp, result["small"])
        result["large"] = large(quick)
        result["lanes_small"] = lanes_small(quick, result["large"]["ceilings"])
        ceilings_again(result)
    result["load_after"] = os.getloadavg()[0]
    stamp = result["when"].replace(":", "").replace("-", "").split("+")[0]
    path = Path(__file__).parent / "results" / f"targets-{stamp}.json"
    path.write_text(json.dumps(result, indent=2))
    return path


if __name__ == "__main__":
    print(main("--quick" in sys.argv[1:]))
