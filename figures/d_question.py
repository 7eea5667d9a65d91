"""The sidecar figures/d-question.json: the three threshold recipes docs/analysis.md documents,
each taken on configs/condensation.yaml's sweep (beta in [0, 12], d from 2 to 128), per d,
with their 95% bootstrap intervals and whether they move monotonically with d.

    python figures/d_question.py RESULTS.nc OUT.json

figures/sidecars.py renders the table of docs/analysis.md from the sidecar (`make figures`).
"""

import json
import sys
from pathlib import Path

import numpy as np

from sweep import api

BETA_FOR_TIME = 4.0  # the beta at which recipe "time" reads the clustering time

# (name, the command's options, the question the recipe answers)
RECIPES = (
    ("nucleation", dict(var="n_clusters", along="beta", level=1.5, time="plateau",
                        direction="up"),
     "from which beta several clusters nucleate and hold (the plateau of n_clusters)"),
    ("collapse by t_max", dict(var="clustered_fraction", along="beta", level=0.5,
                               time="final"),
     "up to which beta half of the pairs have merged by t_max"),
    ("time", dict(var="clustered_fraction", along="time", level=0.5, time="all"),
     f"how long half of the pairs take to merge at beta = {BETA_FOR_TIME:g}"),
)


def _number(x) -> float | None:
    return None if not np.isfinite(x) else float(f"{x:.3g}")


def _options(opts: dict) -> str:
    words = [f"--var {opts['var']}", f"--along {opts['along']}", f"--level {opts['level']:g}",
             f"--time {opts['time']}"]
    return " ".join(words + ([f"--direction {opts['direction']}"] if "direction" in opts
                             else []))


def recipe(ds, name: str, opts: dict, question: str) -> dict:
    th = api.threshold(ds, **opts)
    if opts["along"] == "time":
        th = th.sel(beta=BETA_FOR_TIME)
    values = [_number(v) for v in th.threshold.values]
    found = np.array([np.nan if v is None else v for v in values])
    steps = np.diff(found[np.isfinite(found)])
    return {"recipe": name, "options": _options(opts), "question": question,
            "d": [int(d) for d in th.d.values], "threshold": values,
            "low": [_number(v) for v in th.threshold_low.values],
            "high": [_number(v) for v in th.threshold_high.values],
            "monotone": bool((steps >= 0).all() or (steps <= 0).all())}


def main(argv: list[str]) -> None:
    source, out = argv
    ds = api.open_results(source)
    sidecar = {"config": "configs/condensation.yaml",
               "recipes": [recipe(ds, *r) for r in RECIPES]}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(sidecar, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
