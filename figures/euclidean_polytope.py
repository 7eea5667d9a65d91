"""Draw figures/euclidean-polytope.png and its sidecar figures/euclidean-polytope.json: the
limit points of euclidean space's flow with V = Q^T K = I (configs/euclidean-polytope.yaml)
against the convex hulls of the start and of the limits.

    python figures/euclidean_polytope.py RESULTS.nc OUT.png     (writes OUT.json too)

Per beta, over the seeds: n_points at t_max (the distinct limit points of the rescaled tokens
z = exp(-t) x), the vertices of the start's hull conv z(0), how many runs end with every
limit point inside conv z(0) and every one a vertex of the hull of the limits (the V = I theorem of
arXiv 2305.05465: the limits lie on the boundary of a polytope K inside conv z(0); the paper's
experiments, at its vertices), and how many limit points sit within n_points' tolerance of a
start vertex (the tokens that stayed put, the leaders). The figure: the trajectories of one
seed at beta = 1 with both hulls drawn.
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
from scipy.spatial import ConvexHull  # noqa: E402

RTOL = 1e-3  # n_points' tolerance (its record)


def distinct(points: np.ndarray) -> np.ndarray:
    """One representative per group of points within RTOL times the largest norm."""
    reach = RTOL * np.linalg.norm(points, axis=1).max()
    kept = []
    for p in points:
        if all(np.linalg.norm(p - q) > reach for q in kept):
            kept.append(p)
    return np.array(kept)


def hull_vertices(points: np.ndarray) -> set[int]:
    """The vertices of the hull of points in the plane (a segment's two ends, one point)."""
    if len(points) <= 2:
        return set(range(len(points)))
    return {int(i) for i in ConvexHull(points).vertices}


def run_facts(traj: np.ndarray) -> dict:
    """traj: [time, n, 2] of one run."""
    start, end = traj[0], traj[-1]
    limits = distinct(end)
    hull = ConvexHull(start)
    scale = np.abs(start).max()
    inside = bool((hull.equations[:, :-1] @ limits.T + hull.equations[:, -1:]
                   <= 1e-9 * scale).all())
    corners = start[hull.vertices]
    stayed = sum(np.linalg.norm(corners - p, axis=1).min() <= RTOL * scale for p in limits)
    return {"limits": len(limits), "start_vertices": len(hull.vertices), "inside": inside,
            "vertices": hull_vertices(limits) == set(range(len(limits))),
            "at_start_vertices": int(stayed)}


def numbers(ds) -> dict:
    cfg = yaml.safe_load(ds.attrs["sweep_config"])
    rows = []
    for beta in ds.beta.values:
        runs = ds.sel(beta=beta)
        facts = [run_facts(runs.positions.sel(seed=s).values) for s in runs.seed.values]
        counts = runs.n_points.isel(time=-1).values
        assert all(f["limits"] == c for f, c in zip(facts, counts))  # the record agrees
        rows.append({
            "beta": float(beta), "seeds": len(facts),
            "n_points": {"median": float(np.median(counts)), "min": int(counts.min()),
                         "max": int(counts.max())},
            "start_vertices": float(np.median([f["start_vertices"] for f in facts])),
            "inside": sum(f["inside"] for f in facts),
            "vertices": sum(f["vertices"] for f in facts),
            "at_start_vertices": float(np.median([f["at_start_vertices"] for f in facts]))})
    integ = cfg["integrate"]
    return {"config": "configs/euclidean-polytope.yaml", "n": cfg["model"]["n"],
            "d": cfg["model"]["d"], "method": integ["method"], "dt": integ["dt"],
            "t_max": integ["t_max"], "rows": rows}


def draw(ds, out: Path) -> None:
    traj = ds.sel(beta=1.0).isel(seed=0).positions.values
    fig, ax = plt.subplots(figsize=(5, 5))
    for i in range(traj.shape[1]):
        ax.plot(traj[:, i, 0], traj[:, i, 1], color="tab:orange", lw=0.8)
    for points, style, label in ((traj[0], "k--", "hull of the start"),
                                 (distinct(traj[-1]), "b-", "hull of the limits")):
        if len(points) > 2:
            loop = list(ConvexHull(points).vertices)
            loop.append(loop[0])
            ax.plot(points[loop, 0], points[loop, 1], style, lw=1, label=label)
        else:
            ax.plot(points[:, 0], points[:, 1], style, lw=1, label=label)
    ax.scatter(traj[0, :, 0], traj[0, :, 1], s=12, color="k", zorder=3, label="start")
    ax.scatter(traj[-1, :, 0], traj[-1, :, 1], s=40, color="b", zorder=4,
               label=f"t = {float(ds.time[-1]):g}")
    ax.set_aspect("equal")
    ax.set_xlabel("z_1 = exp(-t) x_1")
    ax.set_ylabel("z_2 = exp(-t) x_2")
    ax.set_title("euclidean space, V = I, beta = 1: tokens end at polytope vertices",
                 fontsize=9)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    results, figure = sys.argv[1], Path(sys.argv[2])
    with xr.open_dataset(results) as data:
        data = data.load()
    figure.parent.mkdir(parents=True, exist_ok=True)
    draw(data, figure)
    facts = numbers(data)
    figure.with_suffix(".json").write_text(json.dumps(facts, indent=2) + "\n")
