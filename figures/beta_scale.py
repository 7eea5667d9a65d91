"""The sidecar figures/beta-scale.json and the table of docs/models.md it makes: the
inter-cluster attention of configs/beta-scale.yaml on each run's metastable multi-cluster
state, per beta_scale and dimension.

    python figures/beta_scale.py RESULTS.nc OUT.json

A run's plateau is the longest-held n_groups >= 2 after n_groups first moves
(sweep.analysis.results.plateau_span); inter_attention there is its median over the
plateau's saves. Per cell: the seeds that reached a plateau, the median over them of the
plateau's group count, its first time, how long it held (to t_max at most), that median
inter_attention and the median overlap_gap over the same saves; a cell where no seed
formed two groups by t_max has none. figures/sidecars.py renders the table of docs/models.md
from the sidecar (`make figures`).
"""

import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr
import yaml

from sweep.analysis.results import plateau_span
from sweep.config.schema import BETA_FACTORS


def _sig(x: float) -> float | None:
    return None if np.isnan(x) else float(f"{x:.2g}")


def cell(ds, scale: int, d, n: int) -> dict:
    """The plateau numbers of one (beta_scale, d) over its seeds (n tokens)."""
    runs = ds.isel(beta_scale=scale).sel(d=d)
    t = runs.time.values
    found = []
    for s in runs.seed.values:
        groups = runs.n_groups.sel(seed=s).values
        span = plateau_span(groups, low=2)
        if span is not None:
            inter = runs.inter_attention.sel(seed=s).values[span]
            gap = runs.overlap_gap.sel(seed=s).values[span]
            held = t[span.stop - 1] - t[span.start]
            found.append((groups[span.start], t[span.start], held, np.median(inter),
                          np.median(gap)))
    med = np.median(np.array(found), axis=0) if found else np.full(5, np.nan)
    name = str(runs.beta_scale.item())
    return {"beta_scale": name, "d": int(d),
            "beta": _sig(float(runs.beta.item()) * BETA_FACTORS[name](int(d), n)),
            "plateaus": len(found), "seeds": int(runs.sizes["seed"]),
            "n_groups": _sig(med[0]), "from_time": _sig(med[1]), "held_for": _sig(med[2]),
            "inter_attention": _sig(med[3]), "overlap_gap": _sig(med[4])}


def numbers(ds) -> dict:
    """What the table shows, for the sidecar."""
    cfg = yaml.safe_load(ds.attrs["sweep_config"])
    n, integ = cfg["model"]["n"], cfg["integrate"]
    rows = [cell(ds, k, d, n) for k in range(ds.sizes["beta_scale"]) for d in ds.d.values]
    return {"config": "configs/beta-scale.yaml", "n": n,
            "method": integ["method"], "dt": integ["dt"], "t_max": integ["t_max"],
            "save_every": integ["save_every"], "cluster_eps": integ["cluster_eps"],
            "seeds": int(ds.sizes["seed"]), "rows": rows}


if __name__ == "__main__":
    results, sidecar = sys.argv[1], Path(sys.argv[2])
    with xr.open_dataset(results) as data:
        facts = numbers(data.load())
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    sidecar.write_text(json.dumps(facts, indent=2) + "\n")
