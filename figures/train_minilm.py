"""The numbers of the MiniLM-token training table of docs/training.md (sidecar
figures/train-minilm.json).

    python figures/train_minilm.py TRAIN.nc OUT.json   # configs/train-minilm.yaml

Per (lambda, D), before and after training (the first and last checkpoint), per layer: the
mean cosine, the mean cosine between the two sentences' tokens and within each sentence, the
clusters at cosine > 1 - cluster_eps; and the task loss of the observed run.
figures/sidecars.py renders the table from these.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import xarray as xr

LAYERED = ("mean_cosine", "between_cosine", "within_cosine", "n_clusters")


def _layers(point: xr.Dataset) -> dict:
    return {name: [round(float(v), 4) for v in point[name].values] for name in LAYERED}


def numbers(ds: xr.Dataset) -> dict:
    import yaml

    cfg = yaml.safe_load(ds.attrs["sweep_config"])
    runs = []
    point_of = ds.isel(seed=0) if "seed" in ds.dims else ds
    for lam in ds["lambda"].values:
        for noise in ds.noise.values:
            point = point_of.sel({"lambda": lam, "noise": noise})
            runs.append({"lambda": float(lam), "noise": float(noise),
                         "before": _layers(point.isel(checkpoint=0)),
                         "after": _layers(point.isel(checkpoint=-1)),
                         "eval_loss": [round(float(v), 4) for v in
                                       point.eval_loss.isel(checkpoint=[0, -1]).values]})
    return {"n": cfg["model"]["n"], "d": cfg["model"]["d"], "layers": cfg["model"]["layers"],
            "beta": cfg["model"]["beta"], "cluster_eps": cfg["integrate"]["cluster_eps"],
            "steps": ds.sizes["step"], "runs": runs}


def main(argv: list[str]) -> None:
    source, out = argv
    with xr.open_dataset(source) as ds:
        sidecar = numbers(ds)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(sidecar, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
