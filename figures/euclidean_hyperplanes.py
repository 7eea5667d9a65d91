"""Draw figures/euclidean-hyperplanes.png and its sidecar figures/euclidean-hyperplanes.json:
euclidean space's flow with V of simple positive top eigenvalue (configs/euclidean-
hyperplanes.yaml) against the hyperplane theorem of arXiv 2305.05465.

    python figures/euclidean_hyperplanes.py RESULTS.nc OUT.png     (writes OUT.json too)

V = S diag(lambda_1, lambda_2) S^-1 is read from the config's matrix file; phi, psi are its
right and left top eigenvectors (<psi, phi> = 1). Per beta, over the seeds: the number of
distinct levels a = <psi, y_i> at t_max (tolerance 1e-3 max |a|, n_points' rule on a line:
the theorem allows at most three), n_points, and the recorded v_eigenvalue and
v_eigen_residual at t_max, with the residual's decay rate fitted over the second half of the
run (least squares on its log) against the theory's lambda_1 - lambda_2. The figure: one run's
trajectories with the top eigenline and the levels it ends on, and the residual over time.
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

RTOL = 1e-3  # n_points' tolerance (its record), here on the line of the levels a


def levels(a: np.ndarray) -> np.ndarray:
    """One representative per group of values within RTOL max |a| of each other."""
    reach = RTOL * np.abs(a).max()
    kept: list[float] = []
    for value in np.sort(a):
        if not kept or value - kept[-1] > reach:
            kept.append(float(value))
    return np.array(kept)


def eigen(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(eigenvalues descending, phi, psi) of v, <psi, phi> = 1."""
    lam, right = np.linalg.eig(v)
    order = np.argsort(-lam.real)
    lam, right = lam.real[order], right.real[:, order]
    left = np.linalg.inv(right)
    return lam, right[:, 0], left[0]


def decay_rate(time: np.ndarray, series: np.ndarray) -> float:
    """-slope of log(series) over the second half of the run."""
    late = time >= time[-1] / 2
    return float(-np.polyfit(time[late], np.log(series[late]), 1)[0])


def _spread(values) -> dict:
    values = np.asarray(values, float)
    return {"median": float(np.median(values)), "min": float(values.min()),
            "max": float(values.max())}


def numbers(ds, psi: np.ndarray, lam: np.ndarray, config: dict) -> dict:
    time = ds.time.values
    rows = []
    for beta in ds.beta.values:
        runs = ds.sel(beta=beta)
        seeds = runs.seed.values
        counts = [len(levels(runs.positions.sel(seed=s).values[-1] @ psi)) for s in seeds]
        residual = runs.v_eigen_residual.values  # [seed, time]
        rows.append({
            "beta": float(beta), "seeds": len(seeds),
            "levels": _spread(counts), "at_most_three": int(sum(c <= 3 for c in counts)),
            "n_points": _spread(runs.n_points.isel(time=-1).values),
            "eigenvalue": _spread(runs.v_eigenvalue.isel(time=-1).values),
            "residual": _spread(residual[:, -1]),
            "rate": _spread([decay_rate(time, r) for r in residual])})
    integ = config["integrate"]
    return {"config": "configs/euclidean-hyperplanes.yaml", "n": config["model"]["n"],
            "d": config["model"]["d"], "method": integ["method"], "dt": integ["dt"],
            "t_max": integ["t_max"], "eigenvalues": [float(x) for x in lam],
            "theory_rate": float(lam[0] - lam[1]), "rows": rows}


def draw(ds, phi: np.ndarray, psi: np.ndarray, theory_rate: float, out: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.4))
    traj = ds.sel(beta=1.0).isel(seed=0).positions.values
    for i in range(traj.shape[1]):
        left.plot(traj[:, i, 0], traj[:, i, 1], color="tab:orange", lw=0.8)
    left.scatter(traj[0, :, 0], traj[0, :, 1], s=12, color="k", zorder=3, label="start")
    left.scatter(traj[-1, :, 0], traj[-1, :, 1], s=40, color="b", zorder=4,
                 label=f"t = {float(ds.time[-1]):g}")
    reach = np.abs(traj).max() * 1.1
    line = np.linspace(-reach, reach, 2)
    left.plot(line * phi[0], line * phi[1], "k:", lw=1, label="top eigenline R phi")
    normal = np.array([-psi[1], psi[0]])
    for k, a in enumerate(levels(traj[-1] @ psi)):
        base = a * psi / (psi @ psi)
        left.plot(base[0] + line * normal[0], base[1] + line * normal[1], "b--", lw=0.7,
                  label="its levels <psi, y> = a" if k == 0 else None)
    left.set_xlim(-reach, reach)
    left.set_ylim(-reach, reach)
    left.set_aspect("equal")
    left.set_xlabel("y_1 = exp(-t) x_1")
    left.set_ylabel("y_2 = exp(-t) x_2")
    left.set_title("beta = 1, one seed: the tokens end on the top eigenline", fontsize=9)
    left.legend(fontsize=7, loc="best")
    time = ds.time.values
    for beta in ds.beta.values:
        right.semilogy(time, np.median(ds.v_eigen_residual.sel(beta=beta).values, axis=0),
                       label=f"beta = {float(beta):g} (median of seeds)")
    start = float(np.median(ds.v_eigen_residual.isel(time=len(time) // 2).values))
    late = time >= time[-1] / 2
    right.semilogy(time[late], start * np.exp(-theory_rate * (time[late] - time[late][0])),
                   "k--", lw=1, label=f"exp(-(lambda_1 - lambda_2) t), rate {theory_rate:g}")
    right.set_xlabel("t")
    right.set_ylabel("v_eigen_residual  |V Y - lambda Y| / |Y|")
    right.set_title("distance from V's top eigenspace", fontsize=9)
    right.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    results, figure = sys.argv[1], Path(sys.argv[2])
    with xr.open_dataset(results) as data:
        data = data.load()
    config = yaml.safe_load(data.attrs["sweep_config"])
    lam, phi, psi = eigen(np.load(Path("configs") / config["model"]["v"]))
    figure.parent.mkdir(parents=True, exist_ok=True)
    facts = numbers(data, psi, lam, config)
    draw(data, phi, psi, facts["theory_rate"], figure)
    figure.with_suffix(".json").write_text(json.dumps(facts, indent=2) + "\n")
