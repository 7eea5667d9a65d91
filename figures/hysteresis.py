"""Draw figures/hysteresis.png and its sidecar figures/hysteresis.json: the order parameter at
t_max against the noise D from a uniform and from a one-cluster start, the linear threshold
D_c = 1/kappa_c, and the window of D where the two starts end in different states.

    python figures/hysteresis.py RESULTS.nc KAPPA.nc OUT.png     (writes OUT.json too)

RESULTS.nc is `sweep run configs/hysteresis.yaml`; KAPPA.nc is `sweep theory kappa-c` at the
config's (d, beta). Each edge of the window is sweep.analysis.thresholds.threshold of one
start's branch: the noise where its seed-mean order parameter at t_max falls through 0.5,
with the 95% bootstrap interval over seeds.
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import xarray as xr  # noqa: E402
import yaml  # noqa: E402

from sweep.analysis.thresholds import threshold  # noqa: E402

STARTS = {"uniform": ("uniform start", "tab:blue"), "clusters": ("one-cluster start", "tab:orange")}


def edges(ds) -> dict:
    """Per start: where the seed-mean final order parameter falls through 0.5 along noise."""
    out = {}
    for kind in STARTS:
        th = threshold(ds.sel(kind=kind), "order_parameter", along="noise", level=0.5,
                       direction="down")
        out[kind] = {k: round(float(th[k]), 4) for k in ("threshold", "threshold_low",
                                                          "threshold_high")}
    return out


def numbers(ds, kappa) -> dict:
    """What the figure shows, for the sidecar and the docs."""
    model = yaml.safe_load(ds.attrs["sweep_config"])["model"]
    d, beta = float(kappa.d[0]), float(kappa.beta[0])
    if (d, beta) != (model["d"], model["beta"]):
        raise SystemExit(f"kappa-c file is for d = {d:g}, beta = {beta:g}; the sweep ran "
                         f"d = {model['d']}, beta = {model['beta']}")
    found = edges(ds)
    return {"config": "configs/hysteresis.yaml", "d": d, "beta": beta, "n": model["n"],
            "seeds": int(ds.sizes["seed"]), "t_max": float(ds.time[-1]),
            "beta_star": round(float(kappa.beta_star[0]), 4),
            "noise_c": round(float(kappa.noise_c[0, 0]), 4),
            "window": [found["uniform"]["threshold"], found["clusters"]["threshold"]],
            "edges": found}


def draw(ds, facts: dict, out: Path) -> None:
    r = ds.order_parameter.isel(time=-1)
    fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    lo, hi = facts["window"]
    ax.axvspan(lo, hi, color="0.88", label=f"hysteresis window D in [{lo:.3g}, {hi:.3g}]")
    for kind, (label, colour) in STARTS.items():
        branch = r.sel(kind=kind)
        mean, spread = branch.mean("seed"), branch.std("seed")
        ax.fill_between(ds.noise, mean - spread, mean + spread, color=colour, alpha=0.2, lw=0)
        ax.plot(ds.noise, mean, "o-", color=colour, ms=4, label=label)
    ax.axvline(facts["noise_c"], color="tab:red", ls="--",
               label=f"linear threshold D_c = 1/κ_c = {facts['noise_c']:.3g}")
    ax.set_xlabel("noise D (= 1/κ)")
    ax.set_ylabel(f"order parameter r at t = {facts['t_max']:g}")
    ax.set_title(f"unnormalized attention, d = {facts['d']:g}, β = {facts['beta']:g} > "
                 f"β*(d) = {facts['beta_star']:.4g}, n = {facts['n']}: mean ± sd of "
                 f"{facts['seeds']} seeds", fontsize=8)
    ax.legend(fontsize=8, loc="lower left")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    results_path, kappa_path, figure = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    with xr.open_dataset(results_path) as ds, xr.open_dataset(kappa_path) as kappa:
        facts = numbers(ds.load(), kappa.load())
        draw(ds, facts, figure)
    figure.with_suffix(".json").write_text(json.dumps(facts, indent=2) + "\n")
