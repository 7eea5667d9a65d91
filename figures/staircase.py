"""The sidecar figures/two-cluster-merge.json and the table of docs/analysis.md it makes: the
energy staircase of configs/two-cluster-merge.yaml per seed, and the slope of
ln(beta T) against beta next to the theory's, the seed's initial overlap gap.

    python figures/staircase.py RESULTS.nc PLATEAUS.nc OUT.json

PLATEAUS.nc is `sweep plateaus RESULTS --var energy`. Per seed: the initial gap g
(overlap_gap at t = 0), the betas whose runs merged (two plateaus), the saddle times T and
first plateaus' durations there, and the least-squares slopes of ln(beta T) against beta,
with T the saddle time (every merged run) and the duration (runs whose plateau lasted at
least LONG); the theory's slope is g (T ~ e^{beta g} / (2 beta sin^2 theta_0)).
"""

import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr

LONG = 50.0


def sig(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits}g}")


def slope(beta: np.ndarray, t: np.ndarray) -> float | None:
    return sig(np.polyfit(beta, np.log(beta * t), 1)[0]) if len(beta) >= 2 else None


def seed_numbers(ds, found, seed) -> dict:
    runs = found.sel(seed=seed)
    beta, merged = runs.beta.values, runs["count"].values == 2
    saddle, held = runs.saddle_time.values[:, 0], runs.duration.values[:, 0]
    long = merged & (held >= LONG)
    return {"seed": int(seed), "gap": sig(float(ds.overlap_gap.isel(time=0, beta=0)
                                                .sel(seed=seed))),
            "merged_betas": [float(b) for b in beta[merged]],
            "saddle_time": [sig(t) for t in saddle[merged]],
            "duration": [sig(t) for t in held[merged]],
            "slope_saddle": slope(beta[merged], saddle[merged]),
            "slope_duration": slope(beta[long], held[long]),
            "long_betas": [float(b) for b in beta[long]]}


def numbers(ds, found) -> dict:
    return {"config": "configs/two-cluster-merge.yaml", "var": found.attrs["var"],
            "tol": found.attrs["tol"], "t_max": float(ds.time[-1]), "long": LONG,
            "seeds": [seed_numbers(ds, found, s) for s in ds.seed.values]}


if __name__ == "__main__":
    results, found, sidecar = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    with xr.open_dataset(results) as data, xr.open_dataset(found) as steps:
        facts = numbers(data.load(), steps.load())
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    sidecar.write_text(json.dumps(facts, indent=2) + "\n")
