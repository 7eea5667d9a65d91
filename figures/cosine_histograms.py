"""Draw figures/cosine-histograms.png and write its numbers (figures/cosine-histograms.json):
per layer of a trained model, the histogram of the pairwise cosines of a text's tokens (the
figure the reference code of "A mathematical perspective on Transformers" draws for ALBERT).

    python figures/cosine_histograms.py PROBE.nc OUT.png

PROBE.nc is `sweep probe` (its `cosine_hist` over (layer, bin): a density). The probe has
no randomised-weights comparison, so the figure shows the trained model's layers alone. The
sidecar holds, per layer, the bin edges' range, the densities, and the mean and median of
the cosines read off the histogram; figures/sidecars.py renders docs/trained.md's table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr


def numbers(ds: xr.Dataset) -> dict:
    """Per layer: the density and, from it, the mean and median cosine (bin centres)."""
    width = (ds.bin_bounds[:, 1] - ds.bin_bounds[:, 0]).values
    centres = ds.bin.values
    layers = []
    for layer in ds.layer.values:
        p = ds.cosine_hist.sel(layer=layer).values * width
        cdf = np.cumsum(p)
        layers.append({"layer": int(layer), "density": [round(float(v), 4) for v in
                                                         ds.cosine_hist.sel(layer=layer)],
                       "mean": round(float(np.sum(p * centres)), 3),
                       "median_bin": round(float(centres[np.searchsorted(cdf, 0.5)]), 3),
                       "share_above_0.5": round(float(p[centres > 0.5].sum()), 3)})
    return {"model": ds.attrs["model"], "text": Path(ds.attrs["text"]).name,
            "n_tokens": int(ds.attrs["n_tokens"]), "edges": [float(ds.bin_bounds[0, 0]),
                                                            float(ds.bin_bounds[-1, 1])],
            "bins": ds.sizes["bin"], "layers": layers}


def draw(ds: xr.Dataset, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layers = ds.layer.values
    fig, axes = plt.subplots(1, len(layers), figsize=(2.2 * len(layers), 2.6), sharey=True)
    width = (ds.bin_bounds[:, 1] - ds.bin_bounds[:, 0]).values
    for ax, layer in zip(axes, layers):
        ax.bar(ds.bin.values, ds.cosine_hist.sel(layer=layer).values, width=width,
               color="tab:blue", edgecolor="none")
        ax.set_title("embeddings" if layer == 0 else f"layer {layer}", fontsize=9)
        ax.set_xlim(-1, 1)
        ax.set_xticks([-1, -0.5, 0, 0.5, 1], ["-1", "", "0", "", "1"])
        ax.set_xlabel("cos(x_i, x_j)", fontsize=8)
    axes[0].set_ylabel("density of pairs")
    fig.suptitle(f"{ds.attrs['model']}: pairwise cosines of the {ds.attrs['n_tokens']} tokens "
                 f"of {Path(ds.attrs['text']).name}, per layer", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> None:
    source, out = argv
    with xr.open_dataset(source) as ds:
        draw(ds, out)
        sidecar = numbers(ds)
    Path(out).with_suffix(".json").write_text(json.dumps(sidecar, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
