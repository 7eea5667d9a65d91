"""Draw figures/training.png and write its numbers (figures/training.json): per-layer
clustering of a noisy layer model before and after its FFN is trained, for both tasks,
across lambda and the noise D.

    python figures/training.py TRAIN.nc OUT.png

TRAIN.nc is `sweep train configs/train-escape.yaml` (dimensions task x lambda x noise x seed
x checkpoint x layer). Every number drawn is a seed mean in the JSON sidecar OUT.json;
figures/sidecars.py renders the table and prose of docs/training.md from it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import xarray as xr

VARIABLES = ("mean_cosine", "order_parameter", "n_groups", "overlap_gap", "inter_attention",
             "attention_entropy")
SHOWN = ("mean_cosine", "n_groups")  # the figure's rows, per task
LABELS = {"mean_cosine": "mean cosine", "n_groups": "groups (≥ 2 tokens)"}


def numbers(ds: xr.Dataset) -> dict:
    """{"runs": [{task, lambda, noise, eval_loss: [before, after], var: {before, after}}]}:
    per-layer seed means at the first and last checkpoint."""
    import yaml

    cfg = yaml.safe_load(ds.attrs["sweep_config"])
    out = {"n": cfg["model"]["n"], "d": cfg["model"]["d"], "beta": cfg["model"]["beta"],
           "cluster_eps": cfg["integrate"]["cluster_eps"], "seeds": ds.sizes["seed"],
           "steps": ds.sizes["step"], "runs": []}
    mean = ds.mean("seed")
    for task in ds.task.values:
        for lam in ds["lambda"].values:
            for noise in ds.noise.values:
                point = mean.sel({"task": task, "lambda": lam, "noise": noise})
                run = {"task": str(task), "lambda": float(lam), "noise": float(noise),
                       "eval_loss": _series(point.eval_loss.isel(checkpoint=[0, -1]))}
                for var in VARIABLES:
                    run[var] = {"before": _series(point[var].isel(checkpoint=0)),
                                "after": _series(point[var].isel(checkpoint=-1))}
                out["runs"].append(run)
    return out


def _series(da) -> list[float | None]:
    """4 decimals; None where NaN (overlap_gap with < 2 groups)."""
    return [None if v != v else round(float(v), 4) for v in da.values]


def draw(sidecar: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sidecar["runs"]
    tasks = list(dict.fromkeys(r["task"] for r in runs))
    noises = sorted({r["noise"] for r in runs})
    lambdas = sorted({r["lambda"] for r in runs})
    colours = dict(zip(lambdas, ("tab:blue", "tab:orange", "tab:red", "tab:green")))
    shape = (len(SHOWN) * len(tasks), len(noises))
    fig, axes = plt.subplots(*shape, figsize=(5 * shape[1], 2.6 * shape[0]), sharex=True,
                             sharey="row", layout="constrained", squeeze=False)
    for i, (task, var) in enumerate((t, v) for t in tasks for v in SHOWN):
        for ax, noise in zip(axes[i], noises):
            here = [r for r in runs if r["task"] == task and r["noise"] == noise]
            before = _floats(here[0][var]["before"])
            ax.plot(range(len(before)), before, "k--", lw=1.2, label="untrained")
            for r in here:
                after = _floats(r[var]["after"])
                ax.plot(range(len(after)), after, "o-", ms=3, color=colours[r["lambda"]],
                        label=f"trained, $\\lambda$ = {r['lambda']:g}")
            ax.set_title(f"task {task}, $D$ = {noise:g}: {LABELS[var]}", fontsize=9)
            ax.set_ylabel(LABELS[var])
    for ax in axes[-1]:
        ax.set_xlabel("layer")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"FFN trained under L2: $n$ = {sidecar['n']}, $d$ = {sidecar['d']}, "
                 f"$\\beta$ = {sidecar['beta']:g}, {sidecar['steps']} Adam steps, mean of "
                 f"{sidecar['seeds']} seeds; groups at cosine > "
                 f"{1 - sidecar['cluster_eps']:g}", fontsize=10)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _floats(values: list) -> list[float]:
    return [float("nan") if x is None else x for x in values]


def main(argv: list[str]) -> None:
    source, figure = argv
    with xr.open_dataset(source) as ds:
        sidecar = numbers(ds)
    figure = Path(figure)
    figure.parent.mkdir(parents=True, exist_ok=True)
    figure.with_suffix(".json").write_text(json.dumps(sidecar, indent=1) + "\n")
    draw(sidecar, figure)


if __name__ == "__main__":
    main(sys.argv[1:])
