"""The figure of simulations under trained versus random attention matrices beside the
trained model's own layers (figures/trained_vs_random.py); drawn with sweep.analysis.plots'
matplotlib and sidecar conventions."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sweep.analysis import labels, results
from sweep.analysis.labels import matrix_kind
from sweep.analysis.overlays import numbers, write_numbers
from sweep.analysis.plots import _pyplot, _status


def trained_vs_random(sim, probe, path, numbers_path=None) -> Path:
    """Simulations under identity, norm-matched Gaussian and trained attention matrices (one
    row per beta: mean_cosine and clustered_fraction against time, mean over seeds), beside
    the trained model's own layers. Save it at dpi 100 (and its numbers, with numbers_path).

    sim: `sweep run configs/trained-vs-random.yaml`, whose zip dimension `qk` holds
    "identity", ".../layer<l>_qk_gaussian.npy" and ".../layer<l>_qk.npy" (one line each);
    probe: `sweep probe` of the same model (per-layer observables over `layer`).
    """
    path = Path(path)
    plt = _pyplot()
    mean = results.seed_mean(sim)
    betas = mean.beta.values if "beta" in mean.dims else [None]
    fig, axes = plt.subplots(len(betas), 3, figsize=(14, 4 * len(betas)), squeeze=False,
                             layout="constrained")
    colours = plt.cm.viridis([0.0, 0.2, 0.4, 0.6, 0.75, 0.9])
    shown = {"figure": path.name, "statistic": "mean", "seeds": sim.sizes.get("seed", 1),
             "runs": _status(sim), "time": numbers(mean.time.values), "panels": []}
    for row, beta in zip(axes, betas):
        at = mean.sel(beta=beta) if beta is not None else mean
        where = f" at β = {beta:g}" if beta is not None else ""
        for ax, var in zip(row[:2], ("mean_cosine", "clustered_fraction")):
            lines = []
            for qk in at.qk.values:
                style = _matrix_style(str(qk), colours)
                ax.plot(at.time, at[var].sel(qk=qk), **style)
                lines.append({"label": style["label"], "y": numbers(at[var].sel(qk=qk).values)})
            ax.set_xlabel("time t")
            ax.set_ylabel(labels.var_label(sim, var))
            values = np.unique([v for line in lines for v in line["y"] if v is not None])
            same = f" (constant, {values[0]:g} everywhere)" if values.size == 1 else ""
            ax.set_title(f"simulation{where}: {var}{same}", fontsize=9)
            shown["panels"].append({"panel": f"{var}{where}", "lines": lines,
                                    "constant": bool(same)})
    handles, texts = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, texts, loc="outside lower center", fontsize=7, ncol=7, frameon=False)
    shown["probe"] = _probe_panels(axes[:, 2], probe)
    shown["probe"].update({v: numbers(probe[v].values) for v in probe.data_vars
                           if probe[v].dims == ("layer",)})  # the table docs/trained.md quotes
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    if numbers_path is not None:
        write_numbers(shown, numbers_path)
    return path


def _matrix_style(label: str, colours) -> dict:
    what, layer = matrix_kind(label)
    if what == "identity":
        return dict(color="black", lw=2.5, label="identity")
    if what == "trained":
        return dict(color=colours[layer - 1], lw=1.8, label=f"trained L{layer}")
    return dict(color=colours[layer - 1], lw=1.0, ls="--", label=f"Gaussian L{layer}")


def _probe_panels(column, probe) -> dict:
    """The trained model itself by layer; below it, (mean |h|)^2, the beta its scores imply."""
    drawn = {"layer": numbers(probe.layer.values)}
    for var, style in (("mean_cosine", "o-"), ("coarse_clustered_fraction", "s-"),
                       ("pc1_share", "^-")):
        column[0].plot(probe.layer, probe[var], style, label=var)
        drawn[var] = numbers(probe[var].values)
    column[0].set_title(f"{probe.attrs.get('model')} itself: {probe.attrs.get('n_tokens')} "
                        f"tokens, coarse: cosine > {probe.attrs.get('cosine_threshold')}",
                        fontsize=9)
    column[0].legend(fontsize=8)
    if len(column) > 1:
        column[1].plot(probe.layer, probe.token_norm**2, "o-", color="grey")
        column[1].set_title("(mean |h|)^2: the beta of its scores on unit tokens", fontsize=9)
        drawn["token_norm_squared"] = numbers(probe.token_norm.values ** 2)
    for ax in column:
        ax.set_xlabel("layer (0 = embeddings)")
    return drawn
