"""`sweep refine` against the grids it replaces, on the two questions it was built for.

demo: configs/demo.yaml's dynamics (n = 32, d in {3, 32}, 8 seeds, t = 30): the beta where
the seed-mean clustered_fraction at the final time crosses 0.5, per d. The full grid (the
config's 20 betas, 320 jobs) is run and thresholded (`sweep threshold --along beta`); refine
starts from a coarse grid (--start, default 0 4 8) with the same seeds and a tolerance of the
full grid's spacing (0.5). Jobs, wall, threshold and interval both ways, from one process,
each in its own fresh parts folder, the kernels compiled beforehand (neither pays for them).

condensation: configs/condensation.yaml's question (n_clusters, time plateau, level 1.5,
upward, along beta, per d in 2..128, 4 seeds, t_max 100) to a bracket of 0.1 in beta,
starting from beta = 0, 3, ..., 12 (--cond-start), against a uniform grid of spacing 0.1
over the config's beta range (0..12, 121 betas): its jobs counted, and unless --no-grid
run (wall, thresholds).

Both record refine's overhead as Refinement.overhead defines it: the share of refine's wall
spent between rounds (planning them, building their jobs, their preflight, reading their
results back), beside the share outside the runner (which adds the final dataset and its
netCDF file) and the seconds of every phase. --quick shrinks condensation for a small
machine (d in {2, 8, 32}, t_max 50).
Written as JSON to benchmarks/results/refine-*.json.
Usage: python benchmarks/refine.py [demo|condensation|both] [--start B ...]
       [--cond-start B ...] [--workers N] [--quick] [--no-grid]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(name: str, folder: Path, grid: dict | None = None, extra=()):
    import sweep

    overrides = [f"output.path={folder / name}.nc", *extra]
    if grid:
        overrides += [f"grid.{k}={json.dumps(v)}" for k, v in grid.items()]
    return sweep.load(ROOT / "configs" / f"{name}.yaml", overrides)


def line_values(th, dims: list[str]) -> list[dict]:
    """One row per point of the other axes: its coordinates, threshold, low, high."""
    flat = th.stack(line=dims)
    return [{**{d: flat[d].values[k].item() for d in dims},
             **{n: float(flat[n].values[k]) for n in ("threshold", "threshold_low",
                                                       "threshold_high")}}
            for k in range(flat.sizes["line"])]


def demo(folder: Path, start: list[float], workers: int | None) -> dict:
    import sweep

    full_cfg = load("demo", folder / "full")
    sweep.compile_kernels(full_cfg)
    t0 = time.perf_counter()
    full = sweep.run(full_cfg, workers=workers)
    full_wall = time.perf_counter() - t0
    th = sweep.threshold(full, "clustered_fraction", along="beta", level=0.5)
    grid_jobs = full.sizes["beta"] * full.sizes["d"] * full.sizes["seed"]
    ref_cfg = load("demo", folder / "refine", {"beta": start})
    done = sweep.api.refine_rounds(ref_cfg, "clustered_fraction", 0.5, "beta", 0.5,
                                   workers=workers)
    ds = done.dataset
    within = [float(lo) <= float(r) <= float(hi) for r, lo, hi in zip(
        ds.threshold.values, th.threshold_low.values, th.threshold_high.values)]
    return {"question": "beta where clustered_fraction at t = 30 crosses 0.5, per d",
            "start": start, "tolerance": 0.5, "seeds": int(full.sizes["seed"]),
            "grid": {"jobs": grid_jobs, "wall_s": full_wall, "lines": line_values(th, ["d"])},
            "refine": _refined(done, ["d"]),
            "jobs_ratio": done.jobs / grid_jobs, "within_grid_interval": within}


def condensation(folder: Path, start: list[float], workers: int | None, quick: bool,
                 grid_run: bool) -> dict:
    import numpy as np

    import sweep

    extra = ["integrate.t_max=50.0"] if quick else []
    d = {"d": [2, 8, 32]} if quick else {}
    cfg = load("condensation", folder / "cond", {"beta": start, **d}, extra)
    sweep.compile_kernels(cfg)
    done = sweep.api.refine_rounds(cfg, "n_clusters", 1.5, "beta", 0.1, time="plateau",
                                   direction="up", workers=workers)
    ds = done.dataset
    betas = np.round(np.arange(0.0, 12.0 + 1e-9, 0.1), 10).tolist()
    uniform = len(betas) * ds.sizes["d"] * ds.attrs["seeds"]
    report = {"question": "beta where the plateau n_clusters first rises through 1.5, per d",
              "start": start, "tolerance": 0.1, "quick": quick, "extra": extra,
              "d": ds.d.values.tolist(), "uniform_grid_jobs": uniform,
              "refine": _refined(done, ["d"]), "jobs_ratio": done.jobs / uniform,
              "bracket_widths": (ds.bracket_high - ds.bracket_low).values.tolist()}
    if grid_run:  # the uniform grid itself, in its own parts folder
        grid_cfg = load("condensation", folder / "cond-grid",
                        {"beta": {"linspace": [0.0, 12.0, len(betas)]}, **d}, extra)
        t0 = time.perf_counter()
        full = sweep.run(grid_cfg, workers=workers)
        report["uniform_grid_wall_s"] = time.perf_counter() - t0
        th = sweep.threshold(full, "n_clusters", along="beta", level=1.5, time="plateau",
                             direction="up")
        report["uniform_grid_lines"] = line_values(th, ["d"])
    return report


def _refined(done, dims: list[str]) -> dict:
    ds = done.dataset
    return {"jobs": done.jobs, "rounds": done.rounds, "per_round": done.per_round,
            "wall_s": done.seconds, "runner_s": done.run_seconds,
            "overhead_share": done.overhead, "outside_runner_share": done.outside_runner,
            "phases_s": done.phases, "lines": line_values(ds, dims),
            "brackets": [[float(a), float(b)] for a, b in zip(ds.bracket_low.values.ravel(),
                                                              ds.bracket_high.values.ravel())],
            "settled": ds.settled.values.ravel().tolist()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="?", default="both",
                        choices=("demo", "condensation", "both"))
    parser.add_argument("--start", nargs="+", type=float, default=[0.0, 4.0, 8.0],
                        help="demo: refine's start (default 0 4 8)")
    parser.add_argument("--cond-start", nargs="+", type=float, default=[0.0, 3.0, 6.0, 9.0, 12.0],
                        help="condensation: refine's start (default 0 3 6 9 12)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-grid", action="store_true",
                        help="condensation: count the uniform grid's jobs, do not run it")
    args = parser.parse_args()
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.which in ("demo", "both"):
            report["demo"] = demo(Path(tmp), args.start, args.workers)
        if args.which in ("condensation", "both"):
            report["condensation"] = condensation(Path(tmp), args.cond_start, args.workers,
                                                  args.quick, not args.no_grid)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    out = ROOT / "benchmarks" / "results" / f"refine-{stamp}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
