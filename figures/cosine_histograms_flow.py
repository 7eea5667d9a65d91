"""Draw figures/cosine-histograms-flow.png and write its numbers (its .json sidecar): for
one run per beta of configs/cosine-histograms-flow.yaml, the histogram of the pairwise
cosines over time (`cosine_hist` over (time, bin): the fraction of the pairs i < j per bin)
as a heat map, time across and cosine up, with gram_rank (the clusters as the rank of the
thresholded Gram matrix) over it on its own scale: the figure of the pairwise cosines over
time the GLPR reference code draws for its particle simulations.

    python figures/cosine_histograms_flow.py RESULTS.nc OUT.png [--seed S]

The sidecar holds, per beta, at the first and last save: the share of pairs in the last bin
(cosine > 1 - 2 / bins), the mean cosine read off the histogram (bin centres), gram_rank and
n_clusters, for the seed drawn and as means over seeds; figures/sidecars.py renders the
table of docs/results.md from it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import xarray as xr


def _at(ds: xr.Dataset, when: int) -> dict:
    h = ds.cosine_hist.isel(time=when)
    return {"share_last_bin": round(float(h.isel(bin=-1)), 4),
            "mean_cosine_binned": round(float((h * ds.bin).sum("bin")), 4),
            "gram_rank": float(ds.gram_rank.isel(time=when)),
            "n_clusters": float(ds.n_clusters.isel(time=when))}


def numbers(ds: xr.Dataset, seed: int) -> dict:
    rows = []
    for beta in ds.beta.values:
        run = ds.sel(beta=beta)
        one = run.sel(seed=seed)
        rows.append({"beta": float(beta), "first": _at(one, 0), "last": _at(one, -1),
                     "last_seed_mean": {k: round(float(np.mean([_at(run.sel(seed=s), -1)[k]
                                                                for s in run.seed.values])), 4)
                                        for k in ("share_last_bin", "gram_rank")}})
    return {"config": "configs/cosine-histograms-flow.yaml", "seed": seed,
            "bins": ds.sizes["bin"],
            "t_max": float(ds.time[-1]), "seeds": int(ds.sizes["seed"]), "betas": rows}


def draw(ds: xr.Dataset, seed: int, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    betas = ds.beta.values
    fig, axes = plt.subplots(1, len(betas), figsize=(3.4 * len(betas), 3.0), sharey=True)
    edges_t = np.concatenate([ds.time.values, [2 * ds.time.values[-1] - ds.time.values[-2]]])
    edges_c = np.append(ds.bin_bounds.values[:, 0], ds.bin_bounds.values[-1, 1])
    for ax, beta in zip(np.atleast_1d(axes), betas):
        run = ds.sel(beta=beta, seed=seed)
        h = np.where(run.cosine_hist.values > 0, run.cosine_hist.values, np.nan)
        mesh = ax.pcolormesh(edges_t, edges_c, h.T, norm=LogNorm(1e-3, 1), cmap="viridis",
                             rasterized=True)
        ax.set_title(f"beta = {beta:g}", fontsize=9)
        ax.set_xlabel("t")
        twin = ax.twinx()
        twin.plot(run.time, run.gram_rank, color="tab:red", lw=1.2, label="gram_rank")
        twin.set_ylim(0, float(ds.gram_rank.max()) + 1)
        twin.tick_params(labelsize=7, colors="tab:red")
    np.atleast_1d(axes)[0].set_ylabel("cos(x_i, x_j)")
    fig.colorbar(mesh, ax=axes, label="fraction of pairs", shrink=0.9)
    fig.suptitle(f"pairwise cosines over time (seed {seed}); red: gram_rank", fontsize=10,
                 y=1.04)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("results")
    args.add_argument("out")
    args.add_argument("--seed", type=int, default=0)
    a = args.parse_args(argv)
    with xr.open_dataset(a.results) as ds:
        ds = ds.load()
    draw(ds, a.seed, a.out)
    Path(a.out).with_suffix(".json").write_text(json.dumps(numbers(ds, a.seed), indent=1)
                                                + "\n")


if __name__ == "__main__":
    main()
