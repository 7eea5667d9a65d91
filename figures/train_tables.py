"""The numbers of the regulariser and initialisation tables of docs/training.md (sidecars
figures/train-regularizer.json and figures/train-init.json).

    python figures/train_tables.py regularizer TRAIN.nc OUT.json   # configs/train-regularizer.yaml
    python figures/train_tables.py init TRAIN.nc OUT.json          # configs/train-init.yaml

Per point and seed, after training: the task loss of the observed run, the mean cosine at
the output and its mean over the intermediate layers 1..L-1 (regularizer); the first step
whose batch objective is at most TARGET (init). figures/sidecars.py renders the tables, with
seed means and 95% t intervals, from these.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr

TARGET = 0.3  # the stated loss of the init table: the batch objective (task loss + L2)


def _values(da) -> list[float]:
    return [round(float(v), 4) for v in da.values]


def regularizer(ds: xr.Dataset) -> dict:
    after = ds.isel(checkpoint=-1)
    inner = after.mean_cosine.isel(layer=slice(1, -1)).mean("layer")
    runs = [{"regularizer": str(r), "mu": float(mu),
             "task_loss": _values(after.eval_loss.sel(regularizer=r, mu=mu)),
             "intermediate_cosine": _values(inner.sel(regularizer=r, mu=mu)),
             "output_cosine": _values(after.mean_cosine.sel(regularizer=r, mu=mu)
                                      .isel(layer=-1))}
            for r in ds.regularizer.values for mu in ds.mu.values]
    return {"seeds": ds.sizes["seed"], "steps": ds.sizes["step"], "runs": runs}


def init(ds: xr.Dataset) -> dict:
    runs = []
    for kind in ds.init.values:
        loss = ds.loss.sel(init=kind).transpose("seed", "step").values
        reached = loss <= TARGET
        steps = [int(np.argmax(r)) if r.any() else None for r in reached]
        runs.append({"init": str(kind), "steps_to_target": steps,
                     "first_loss": [round(float(v), 4) for v in loss[:, 0]],
                     "final_task_loss": _values(ds.eval_loss.sel(init=kind)
                                                .isel(checkpoint=-1))})
    return {"seeds": ds.sizes["seed"], "steps": ds.sizes["step"], "target": TARGET,
            "init_scale": float(_scale(ds)), "runs": runs}


def _scale(ds: xr.Dataset) -> float:
    import yaml

    return yaml.safe_load(ds.attrs["sweep_training"])["training"]["init_scale"]


def main(argv: list[str]) -> None:
    kind, source, out = argv
    with xr.open_dataset(source) as ds:
        sidecar = {"regularizer": regularizer, "init": init}[kind](ds)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(sidecar, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
