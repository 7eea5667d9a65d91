"""The integrators side by side on the reference's phase diagram (docs/integrators.md).

From identical starts (the same seeds), softmax attention with identity matrices, d = 2,
n = 32: the boundary time per beta, when the seed mean of clustered_fraction (cluster_eps
1e-3, the reference's pooled pair statistic) first reaches 1/2, linearly interpolated between
saves. `euler` and `layer` at dt = 0.1 (layer is the reference code's step) against RK4 at
dt = 0.01, itself checked against RK4 at dt = 0.02 (its fourth-order error is then 1/16 of
that difference). Writes docs/integrators.json and the table between the
<!-- integrators-table --> markers of docs/integrators.md.
Usage: python benchmarks/integrators.py [--seeds 128]   (about three minutes on one core)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.execution.simulate import simulate
from sweep.kernels.codes import COLUMN, OBSERVABLES

MEAN_COSINE = OBSERVABLES.index("mean_cosine")

ROOT = Path(__file__).resolve().parents[1]
JSON = ROOT / "docs" / "integrators.json"
DOC = ROOT / "docs" / "integrators.md"
MARK, END = "<!-- integrators-table -->", "<!-- /integrators-table -->"

BETAS = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5]  # from 5, no crossing by t = 50
T_MAX, SAVE_EVERY, LEVEL = 50.0, 0.1, 0.5
RUNS = {"euler": ("euler", 0.1), "layer": ("layer", 0.1), "rk4": ("rk4", 0.01),
        "rk4 dt 0.02": ("rk4", 0.02)}


def seed_means(method: str, dt: float, betas: list[float], seeds: int,
               t_max: float) -> np.ndarray:
    """[2, beta, time] the means over seeds 0..seeds-1 of clustered_fraction and mean_cosine."""
    raw = {"name": "integrators", "model": {"attention": "softmax", "d": 2, "n": 32},
           "integrate": {"method": method, "dt": dt, "t_max": t_max, "save_every": SAVE_EVERY,
                         "cluster_eps": 1e-3},
           "grid": {"beta": list(betas), "seed": {"range": [0, seeds]}}}
    sums = np.zeros((2, len(betas), round(t_max / SAVE_EVERY) + 1))
    for job in expand(config.from_dict(raw)):
        obs = simulate(job).observables
        sums[:, betas.index(job.model.beta)] += obs[:, [COLUMN.clustered_fraction, MEAN_COSINE]].T
    return sums / seeds


def boundary_time(t: np.ndarray, fraction: np.ndarray, level: float = LEVEL) -> float | None:
    """The first time fraction reaches level, linear between the saves around it; None if
    never."""
    hit = np.flatnonzero(fraction >= level)
    if not hit.size:
        return None
    k = hit[0]
    if k == 0:
        return float(t[0])
    f0, f1 = fraction[k - 1], fraction[k]
    return float(t[k - 1] + (level - f0) / (f1 - f0) * (t[k] - t[k - 1]))


def measure(betas: list[float], seeds: int, t_max: float = T_MAX) -> tuple[dict, list]:
    """({run: [boundary time per beta]} for every entry of RUNS, [per beta, the largest
    difference of the mean mean_cosine between RK4 at dt 0.02 and 0.01 over the saves])."""
    t = np.arange(round(t_max / SAVE_EVERY) + 1) * SAVE_EVERY
    curves = {name: seed_means(m, dt, betas, seeds, t_max) for name, (m, dt) in RUNS.items()}
    times = {name: [boundary_time(t, f) for f in c[0]] for name, c in curves.items()}
    gap = np.abs(curves["rk4 dt 0.02"][1] - curves["rk4"][1]).max(axis=1)
    return times, [float(g) for g in gap]


def deviation(value: float, exact: float) -> float:
    return (value - exact) / exact


def _time(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f}"


def _percent(value: float | None, exact: float | None) -> str:
    if value is None or exact is None:
        return "-"
    return f"{100 * deviation(value, exact):+.1f}%"


def table(result: dict) -> str:
    """The markdown table of docs/integrators.md, from the JSON result."""
    times, gap = result["boundary_time"], result["rk4_cosine_gap"]
    lines = ["| beta | RK4 dt 0.01 | euler dt 0.1 | vs RK4 | layer dt 0.1 | vs RK4 | "
             "RK4 dt 0.02 vs 0.01: boundary, cosine |", "|---|---|---|---|---|---|---|"]
    for i, beta in enumerate(result["betas"]):
        exact = times["rk4"][i]
        lines.append(f"| {beta:g} | {_time(exact)} | {_time(times['euler'][i])} | "
                     f"{_percent(times['euler'][i], exact)} | {_time(times['layer'][i])} | "
                     f"{_percent(times['layer'][i], exact)} | "
                     f"{_percent(times['rk4 dt 0.02'][i], exact)}, {gap[i]:.1e} |")
    return "\n".join(lines)


def with_table(doc: str, rows: str) -> str:
    """doc with the text between the markers replaced by rows."""
    head, _, rest = doc.partition(MARK)
    _, _, tail = rest.partition(END)
    return f"{head}{MARK}\n{rows}\n{END}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=128)
    args = parser.parse_args()
    start = time.perf_counter()
    result = {"betas": BETAS, "seeds": args.seeds, "t_max": T_MAX, "save_every": SAVE_EVERY,
              "level": LEVEL, "runs": {name: {"method": m, "dt": dt}
                                       for name, (m, dt) in RUNS.items()},
              **dict(zip(("boundary_time", "rk4_cosine_gap"), measure(BETAS, args.seeds))),
              "command": "python benchmarks/integrators.py" + (
                  f" --seeds {args.seeds}" if args.seeds != 128 else ""),
              "seconds": round(time.perf_counter() - start, 1),
              "machine": platform.processor() or platform.machine()}
    JSON.write_text(json.dumps(result, indent=1) + "\n")
    DOC.write_text(with_table(DOC.read_text(), table(result)))
    print(table(result))
    print(f"written {JSON.relative_to(ROOT)} and the table of {DOC.relative_to(ROOT)}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
