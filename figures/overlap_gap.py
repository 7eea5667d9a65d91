"""Draw figures/overlap-gap.png and its sidecar figures/overlap-gap.json: inter-cluster
attention at t_max against d from k tight clusters (configs/overlap-gap.yaml), one line per
beta_scale, the overlap gap beside it, and the decay rate of log inter_attention fitted
against the theory's inter ~ exp(-beta_eff gap).

    python figures/overlap_gap.py RESULTS.nc OUT.png     (writes OUT.json too)

Per (beta_scale, d): the seed medians and ranges of inter_attention, overlap_gap and n_groups
at t_max. Per beta_scale, two fits of ln inter_attention (natural log):
- the rate: minus the least-squares slope of the seed-median ln inter_attention against
  beta_eff over d, next to the theory's rate, the same fit of its prediction -beta_eff g with
  g the seed-median overlap gap at each d (the gap itself where it does not move with d);
  none where beta_eff does not vary with d, as under `none`;
- per run: ln inter_attention = a - r beta_eff gap over every run, r (theory: 1).
And the theory's bounds for k tight clusters of m = n / k tokens at overlap gap g: a token of
the closest pair of clusters puts at least e^{-beta g} / (1 + (k - 1) e^{-beta g}) outside
its cluster, every token at most (k - 1) e^{-beta g} / (1 + (k - 1) e^{-beta g}) (all
centres at cosine 1 - g: the equiangular case), so inter_attention lies between
2 / (k (k - 1)) and 1 times the equiangular value; `bounds` gives the range over the runs of
ln(measured / equiangular), k a run's n_groups, and `lower_bound` ln(2 / (k (k - 1))) at the
config's k.
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
import yaml  # noqa: E402

from sweep.config.schema import BETA_FACTORS  # noqa: E402

COLOURS = {"none": "tab:gray", "sqrt_d": "tab:orange", "d": "tab:blue"}


def sig(x: float, digits: int = 2) -> float:
    return float(f"{x:.{digits}g}")


def equiangular(beta_eff, gap, k: int):
    """The weight outside its cluster of a token among k tight equiangular clusters."""
    w = (k - 1) * np.exp(-np.multiply(beta_eff, gap))
    return w / (1 + w)


def effective(runs, n: int) -> np.ndarray:
    """beta_eff per d of one beta_scale's runs."""
    scale = str(runs.beta_scale.item())
    return np.array([float(runs.beta.item()) * BETA_FACTORS[scale](int(d), n)
                     for d in runs.d.values])


def spread(values: np.ndarray) -> dict:
    return {"median": sig(np.median(values)), "min": sig(values.min()),
            "max": sig(values.max())}


def scale_numbers(runs, n: int) -> dict:
    """Rows, fits and bounds of one beta_scale (runs over d and seed, at t_max)."""
    beta = effective(runs, n)
    inter = runs.inter_attention.transpose("d", "seed").values
    gap = runs.overlap_gap.transpose("d", "seed").values
    groups = runs.n_groups.transpose("d", "seed").values
    rows = [{"d": int(d), "beta": sig(b), "n_groups": spread(groups[i]),
             "overlap_gap": spread(gap[i]), "inter_attention": spread(inter[i])}
            for i, (d, b) in enumerate(zip(runs.d.values, beta))]
    logs, together = np.log(inter), beta[:, None] * gap
    varies = np.ptp(beta) > 0
    rate = -np.polyfit(beta, np.median(logs, axis=1), 1)[0] if varies else None
    theory = np.polyfit(beta, beta * np.median(gap, axis=1), 1)[0] if varies else None
    per_run = np.polyfit(together.ravel(), logs.ravel(), 1)
    ratio = logs - np.log(equiangular(beta[:, None], gap, groups))
    return {"beta_scale": str(runs.beta_scale.item()), "rows": rows,
            "rate_fitted": None if rate is None else sig(rate, 3),
            "rate_theory": None if theory is None else sig(theory, 3),
            "per_run_r": sig(-per_run[0], 3), "per_run_a": sig(per_run[1], 3),
            "bounds": [sig(ratio.min(), 3), sig(ratio.max(), 3)]}


def numbers(ds) -> dict:
    """What the figure shows, for the sidecar and the docs."""
    cfg = yaml.safe_load(ds.attrs["sweep_config"])
    n, init, integ = cfg["model"]["n"], cfg["init"], cfg["integrate"]
    final, k = ds.isel(time=-1), init["clusters"]
    scales = [scale_numbers(final.isel(beta_scale=s), n)
              for s in range(ds.sizes["beta_scale"])]
    return {"config": "configs/overlap-gap.yaml", "n": n, "clusters": init["clusters"],
            "spread": init.get("spread", 0.1), "method": integ["method"], "dt": integ["dt"],
            "t_max": float(ds.time[-1]), "seeds": int(ds.sizes["seed"]),
            "lower_bound": sig(np.log(2 / (k * (k - 1))), 3), "scales": scales}


def panel(ax, facts: dict, key: str, log: bool) -> None:
    for scale in facts["scales"]:
        d = [r["d"] for r in scale["rows"]]
        mid, lo, hi = ([r[key][q] for r in scale["rows"]] for q in ("median", "min", "max"))
        colour = COLOURS.get(scale["beta_scale"], "k")
        ax.fill_between(d, lo, hi, color=colour, alpha=0.15, lw=0)
        ax.plot(d, mid, "o-", color=colour, ms=4, label=f"beta_scale: {scale['beta_scale']}")
        if log:
            beta = [r["beta"] for r in scale["rows"]]
            gap = [r["overlap_gap"]["median"] for r in scale["rows"]]
            ax.plot(d, equiangular(beta, gap, facts["clusters"]), ":", color=colour, lw=1)
    ax.set_xticks([r["d"] for r in facts["scales"][0]["rows"]],
                  [str(r["d"]) for r in facts["scales"][0]["rows"]])
    ax.set_xlabel("d")
    if log:
        ax.set_yscale("log")


def draw(facts: dict, out: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 4.0), layout="constrained")
    panel(left, facts, "inter_attention", log=True)
    left.set_ylabel(f"inter_attention at t = {facts['t_max']:g}")
    left.set_title("median and range over seeds; dotted: equiangular theory at the median gap",
                   fontsize=8)
    left.legend(fontsize=8, loc="lower left")
    panel(right, facts, "overlap_gap", log=False)
    right.set_ylim(0, 1)
    right.set_ylabel(f"overlap_gap at t = {facts['t_max']:g}")
    fits = "; ".join(f"{s['beta_scale']}: {s['rate_fitted']:.3g} (theory {s['rate_theory']:.3g})"
                     for s in facts["scales"] if s["rate_fitted"] is not None)
    right.set_title(f"decay rate of ln inter_attention in beta_eff, fitted:\n{fits}",
                    fontsize=8)
    fig.suptitle(f"softmax, n = {facts['n']} in {facts['clusters']} clusters (spread "
                 f"{facts['spread']:g}), {facts['seeds']} seeds", fontsize=9)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    results, figure = sys.argv[1], Path(sys.argv[2])
    with xr.open_dataset(results) as data:
        facts = numbers(data.load())
    draw(facts, figure)
    figure.with_suffix(".json").write_text(json.dumps(facts, indent=2) + "\n")
