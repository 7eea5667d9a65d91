"""Draw figures/train-phase.png and write its numbers (figures/train-phase.json): the
training-induced escape over (lambda, D), the FFN trained on the output distribution
(`training.task: spread`).

    python figures/train_phase.py TRAIN.nc OUT.png

TRAIN.nc is `sweep train configs/train-phase.yaml` (dimensions lambda x noise x seed x
checkpoint x layer). The escape of a run is read from the dataset (`peak_fall`,
`escape_depth`: mean_cosine along layer, as `sweep monotone --along layer` measures it);
every number drawn is in the JSON sidecar OUT.json, from which figures/sidecars.py renders
the table and prose of docs/training.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr


def numbers(ds: xr.Dataset) -> dict:
    """{"runs": [{lambda, noise, per seed: escape_depth, peak_fall; seed means: mean_cosine
    before / after per layer, ffn_norm per block, last_share}]}, after the last checkpoint."""
    import yaml

    cfg = yaml.safe_load(ds.attrs["sweep_config"])
    out = {"n": cfg["model"]["n"], "d": cfg["model"]["d"], "beta": cfg["model"]["beta"],
           "layers": cfg["model"]["layers"], "spread": cfg["init"]["spread"],
           "seeds": ds.sizes["seed"], "steps": ds.sizes["step"],
           "escape_tol": float(ds.attrs["escape_tol"]), "runs": []}
    after, before = ds.isel(checkpoint=-1), ds.isel(checkpoint=0)
    norms = np.sqrt((after.ffn_weight ** 2).sum(("row", "column")))
    for lam in ds["lambda"].values:
        for noise in ds.noise.values:
            at = {"lambda": lam, "noise": noise}
            norm = norms.sel(at)
            out["runs"].append({
                "lambda": float(lam), "noise": float(noise),
                "escape_depth": _series(after.escape_depth.sel(at)),
                "peak_fall": _series(after.peak_fall.sel(at)),
                "mean_cosine": {"before": _series(before.mean_cosine.sel(at).mean("seed")),
                                "after": _series(after.mean_cosine.sel(at).mean("seed"))},
                "ffn_norm": _series(norm.mean("seed")),
                "last_share": round(float((norm.isel(block=-1) / norm.sum("block"))
                                          .mean("seed")), 4)})
    return out


def _series(da) -> list[float | None]:
    """4 decimals; None where NaN (a run without an escape)."""
    return [None if v != v else round(float(v), 4) for v in np.atleast_1d(da.values)]


def grid(sidecar: dict, value) -> tuple[list, list, np.ndarray]:
    """(lambdas, noises, value(run) over [noise, lambda])."""
    runs = sidecar["runs"]
    lambdas = sorted({r["lambda"] for r in runs})
    noises = sorted({r["noise"] for r in runs})
    table = np.full((len(noises), len(lambdas)), np.nan)
    for r in runs:
        table[noises.index(r["noise"]), lambdas.index(r["lambda"])] = value(r)
    return lambdas, noises, table


def _mean(values: list) -> float:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else float("nan")


MAPS = (("fall of mean cosine from its peak (seed mean)", lambda r: _mean(r["peak_fall"])),
        ("escape depth (seed mean of the runs that escape)",
         lambda r: _mean(r["escape_depth"])),
        ("mean cosine at the output (seed mean)", lambda r: r["mean_cosine"]["after"][-1]))


def draw(sidecar: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(19, 3.8), layout="constrained")
    for ax, (title, value) in zip(axes, MAPS):
        lambdas, noises, table = grid(sidecar, value)
        image = ax.imshow(table, origin="lower", aspect="auto", cmap="viridis")
        for (i, j), v in np.ndenumerate(table):
            ax.text(j, i, "-" if v != v else f"{v:.2g}", ha="center", va="center",
                    color="w" if v < np.nanmean(table) else "k", fontsize=8)
        ax.set_xticks(range(len(lambdas)), [f"{x:g}" for x in lambdas])
        ax.set_yticks(range(len(noises)), [f"{x:g}" for x in noises])
        ax.set_xlabel("L2 weight $\\lambda$")
        ax.set_ylabel("noise $D$")
        ax.set_title(title, fontsize=9)
        fig.colorbar(image, ax=ax)
    lines = axes[-1]
    noise = max(r["noise"] for r in sidecar["runs"] if _mean(r["peak_fall"]) == max(
        _mean(q["peak_fall"]) for q in sidecar["runs"]))
    here = [r for r in sidecar["runs"] if r["noise"] == noise]
    for r in here:
        lines.plot(r["mean_cosine"]["after"], "o-", ms=3, label=f"$\\lambda$ = {r['lambda']:g}")
    lines.plot(here[0]["mean_cosine"]["before"], "k--", label="untrained")
    lines.set_xlabel("layer")
    lines.set_ylabel("mean cosine")
    lines.set_title(f"$D$ = {noise:g}: mean cosine per layer after training", fontsize=9)
    lines.legend(fontsize=7)
    fig.suptitle(f"FFN trained on spread ($|\\bar x^L|^2$): $n$ = {sidecar['n']}, $d$ = "
                 f"{sidecar['d']}, $\\beta$ = {sidecar['beta']:g}, one input cluster (spread "
                 f"{sidecar['spread']:g}), {sidecar['steps']} Adam steps, {sidecar['seeds']} "
                 f"seeds", fontsize=10)
    fig.savefig(path, dpi=90)
    plt.close(fig)


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
