"""Draw figures/random-matrices.png and its sidecar figures/random-matrices.json: random
attention matrices drawn once (configs/random-matrices.yaml) and drawn afresh every tau
(configs/redrawn-matrices.yaml), against the identity.

    python figures/random_matrices.py ONCE.nc REDRAWN.nc OUT.png     (writes OUT.json too)

Per (qk, v, beta) of ONCE and (v, redraw_every, beta) of REDRAWN, over the seeds:
- energy: in how many runs the saved energy ever falls beyond rounding between consecutive
  saves (relative fall > sweep.analysis.monotonicity.RTOL, as `sweep monotone`) and the worst
  relative fall; of REDRAWN also `fell_within`, the same count leaving out the intervals
  across a redraw (the save ending a segment is observed under that segment's matrices, the
  next under the new draw's: two different energies);
- clustering: the runs whose clustered fraction reached 1/2 (t_cluster finite), the mean of
  their t_cluster, the mean and range of n_clusters and span_dimension at t_max, and the
  runs whose span_dimension is below their n_clusters (clusters along shared directions,
  such as an antipodal pair: span 1, two clusters).
The pair qk: identity, v: qk of ONCE is the identity itself (v is tied to the identity): its
rows are left out. `span` holds the seed-mean span_dimension over time, per variant of ONCE,
for the figure's left panel.
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

from sweep.analysis.monotonicity import RTOL, relative_falls  # noqa: E402

FIGURE_BETA = 4.0  # the beta the figure shows


def sig(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits}g}")


def spread(values: np.ndarray) -> dict:
    return {"mean": sig(values.mean()), "min": float(values.min()), "max": float(values.max())}


def energy_falls(energy: np.ndarray, skip: np.ndarray | None = None) -> dict:
    """energy: [seed, time]; skip: [time - 1] intervals not counted (None: none)."""
    fall = relative_falls(energy)
    fell = fall > RTOL
    if skip is not None:
        fell &= ~skip
    worst = fall[fell].max() if fell.any() else 0.0
    return {"fell": int(fell.any(axis=-1).sum()), "worst_fall": sig(worst, 2)}


def run_numbers(runs) -> dict:
    """The clustering numbers of one grid point's seeds (runs: over seed, time)."""
    t = runs.t_cluster.values
    final = runs.isel(time=-1)
    done = np.isfinite(t)
    clusters, span = final.n_clusters.values, final.span_dimension.values
    return {"runs": int(runs.sizes["seed"]), "clustered": int(done.sum()),
            "t_cluster": sig(t[done].mean()) if done.any() else None,
            "n_clusters": spread(clusters), "span_dimension": spread(span),
            "span_below_clusters": int((span < clusters).sum())}


def once_rows(ds) -> list[dict]:
    rows = []
    for qk in ds.qk.values:
        for v in ds.v.values:
            if qk == "identity" and v == "qk":
                continue
            for beta in ds.beta.values:
                runs = ds.sel(qk=qk, v=v, beta=beta)
                energy = runs.energy.transpose("seed", "time").values
                rows.append({"qk": str(qk), "v": str(v), "beta": float(beta),
                             **energy_falls(energy), **run_numbers(runs)})
    return rows


def redraw_crossings(tau: float, save_every: float, saves: int) -> np.ndarray:
    """[saves - 1]: True for the intervals from a segment's last save to the next draw's
    first (redraw.integrate_segments)."""
    per = int(round(tau / save_every))
    k = np.arange(saves - 1)
    return (k > 0) & (k % per == 0)


def redrawn_rows(ds, save_every: float) -> list[dict]:
    rows = []
    for v in ds.v.values:
        for tau in ds.redraw_every.values:
            skip = redraw_crossings(float(tau), save_every, ds.sizes["time"])
            for beta in ds.beta.values:
                runs = ds.sel(v=v, redraw_every=tau, beta=beta)
                energy = runs.energy.transpose("seed", "time").values
                within = energy_falls(energy, skip)
                rows.append({"v": str(v), "redraw_every": float(tau), "beta": float(beta),
                             **energy_falls(energy), "fell_within": within["fell"],
                             "worst_within": within["worst_fall"], **run_numbers(runs)})
    return rows


def span_lines(ds) -> list[dict]:
    runs = ds.sel(beta=FIGURE_BETA).span_dimension.mean("seed")
    return [{"qk": str(qk), "v": str(v),
             "y": [sig(y) for y in runs.sel(qk=qk, v=v).values]}
            for qk in ds.qk.values for v in ds.v.values
            if not (qk == "identity" and v == "qk")]


def numbers(once, redrawn) -> dict:
    """What the figure and the docs tables show, for the sidecar."""
    cfg = yaml.safe_load(once.attrs["sweep_config"])
    integ = yaml.safe_load(redrawn.attrs["sweep_config"])["integrate"]
    return {"configs": ["configs/random-matrices.yaml", "configs/redrawn-matrices.yaml"],
            "n": cfg["model"]["n"], "d": cfg["model"]["d"],
            "attention": cfg["model"]["attention"], "method": cfg["integrate"]["method"],
            "dt": cfg["integrate"]["dt"], "t_max": float(once.time[-1]),
            "seeds": int(once.sizes["seed"]), "rtol": RTOL, "figure_beta": FIGURE_BETA,
            "once": once_rows(once), "redrawn": redrawn_rows(redrawn, integ["save_every"]),
            "time": [float(t) for t in once.time.values], "span": span_lines(once)}


def draw(facts: dict, out: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 4.0), layout="constrained")
    for line in facts["span"]:
        left.plot(facts["time"], line["y"], label=f"Q^T K = {line['qk']}, V = {line['v']}")
    left.set_xlabel("t")
    left.set_ylabel("span_dimension (seed mean)")
    left.set_title("drawn once", fontsize=9)
    left.legend(fontsize=7)
    beta = facts["figure_beta"]
    once = {(r["qk"], r["v"]): r for r in facts["once"] if r["beta"] == beta}
    for v, colour in (("qk", "tab:blue"), ("identity", "tab:orange")):
        rows = [r for r in facts["redrawn"] if r["v"] == v and r["beta"] == beta]
        tau = [r["redraw_every"] for r in rows]
        for key, style in (("n_clusters", "o-"), ("span_dimension", "s--")):
            right.plot(tau, [r[key]["mean"] for r in rows], style, color=colour, ms=4,
                       label=f"GOE Q^T K, V = {v}: {key}")
    for key, style in (("n_clusters", "-"), ("span_dimension", "--")):
        right.axhline(once[("identity", "identity")][key]["mean"], ls=style, color="gray",
                      lw=1, label=f"identity: {key}")
    right.set_xscale("log")
    right.set_xlabel(f"redraw_every tau (tau = {facts['t_max']:g}: drawn once)")
    right.set_ylabel(f"at t = {facts['t_max']:g} (seed mean)")
    right.set_title("redrawn every tau", fontsize=9)
    right.legend(fontsize=7)
    fig.suptitle(f"{facts['attention']}, n = {facts['n']}, d = {facts['d']}, beta = {beta:g}, "
                 f"{facts['seeds']} seeds", fontsize=9)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    figure = Path(sys.argv[3])
    with xr.open_dataset(sys.argv[1]) as a, xr.open_dataset(sys.argv[2]) as b:
        facts = numbers(a.load(), b.load())
    draw(facts, figure)
    figure.with_suffix(".json").write_text(json.dumps(facts, indent=2) + "\n")
