"""Draw figures/trained-vs-random.png: simulations with identity, norm-matched Gaussian and
trained (all-MiniLM-L6-v2) attention matrices, beside the trained model's own layers.

    python figures/trained_vs_random.py SIMULATIONS.nc PROBE.nc OUT.png

SIMULATIONS.nc is `sweep run configs/trained-vs-random.yaml`; PROBE.nc is `sweep probe`.
The zip dimension `qk` holds "identity", ".../layer<l>_qk_gaussian.npy" and
".../layer<l>_qk.npy"; each becomes one line, mean over seeds.
"""

import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import xarray as xr  # noqa: E402


def kind(label: str) -> tuple[str, int]:
    """('identity' | 'gaussian' | 'trained', layer) of a qk coordinate."""
    found = re.search(r"layer(\d+)_qk(_gaussian)?\.npy", label)
    if not found:
        return "identity", 0
    return ("gaussian" if found.group(2) else "trained"), int(found.group(1))




def _style(label: str, colours) -> dict:
    what, layer = kind(label)
    if what == "identity":
        return dict(color="black", lw=2.5, label="identity")
    if what == "trained":
        return dict(color=colours[layer - 1], lw=1.8, label=f"trained L{layer}")
    return dict(color=colours[layer - 1], lw=1.0, ls="--", label=f"Gaussian L{layer}")


def main(sim_path: str, probe_path: str, out: str) -> None:
    sim, real = xr.open_dataset(sim_path), xr.open_dataset(probe_path)
    mean = sim.mean("seed") if "seed" in sim.dims else sim
    betas = mean.beta.values if "beta" in mean.dims else [None]
    fig, axes = plt.subplots(len(betas), 3, figsize=(14, 4 * len(betas)), squeeze=False,
                             layout="constrained")
    colours = plt.cm.viridis([0.0, 0.2, 0.4, 0.6, 0.75, 0.9])
    for row, beta in zip(axes, betas):
        at = mean.sel(beta=beta) if beta is not None else mean
        for label in at.qk.values:
            for ax, var in zip(row[:2], ("mean_cosine", "clustered_fraction")):
                ax.plot(at.time, at[var].sel(qk=label), **_style(str(label), colours))
                ax.set_xlabel("time t")
                ax.set_ylabel(var)
                ax.set_title(f"simulation at beta = {beta:g}: {var}", fontsize=9)
    axes[0, 0].legend(fontsize=7, ncol=2)
    for var, style in (("mean_cosine", "o-"), ("coarse_clustered_fraction", "s-"),
                       ("pc1_share", "^-")):
        axes[0, 2].plot(real.layer, real[var], style, label=var)
    axes[0, 2].set_title(f"{real.attrs.get('model')} itself: {real.attrs.get('n_tokens')} "
                         f"tokens, coarse: cosine > {real.attrs.get('cosine_threshold')}",
                         fontsize=9)
    axes[0, 2].legend(fontsize=8)
    if len(betas) > 1:
        axes[1, 2].plot(real.layer, real.token_norm**2, "o-", color="grey")
        axes[1, 2].set_title("(mean |h|)^2: the beta of its scores on unit tokens",
                             fontsize=9)
    for ax in axes[:, 2]:
        ax.set_xlabel("layer (0 = embeddings)")
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main(*sys.argv[1:4])
