"""sweep.plateaus / `sweep plateaus`: the metastable plateaus of a saved series, on a series
whose plateaus are known, and on the two-cluster merge (configs/two-cluster-merge.yaml),
whose energy plateau lasts T ~ e^{beta g} / (2 beta sin^2 theta_0), g the initial gap."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import sweep
from helpers import invoke
from sweep.analysis.plateaus import plateaus
from sweep.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def staircase() -> xr.Dataset:
    """Two runs along time 0..100: steps 1 -> 2 (ramp over 30..33) and 1 -> 2 -> 4."""
    t = np.arange(101.0)
    one = np.interp(t, [0, 30, 33, 100], [1, 1, 2, 2])
    two = np.interp(t, [0, 20, 21, 60, 64, 100], [1, 1, 2, 2, 4, 4])
    energy = xr.DataArray(np.stack([one, two]), dims=("seed", "time"),
                          coords={"seed": [0, 1], "time": t})
    return xr.Dataset({"energy": energy}, attrs={"title": "staircase"})


def test_the_plateaus_of_a_known_staircase():
    found = plateaus(staircase(), "energy")
    assert found["count"].values.tolist() == [2, 3]
    first, second = found.sel(seed=0), found.sel(seed=1)
    assert first.level.values[:2].tolist() == [1, 2] and np.isnan(first.level.values[2])
    assert first.start.values[:2].tolist() == [0, 33] and first.end.values[:2].tolist() == [30, 100]
    assert first.duration.values[:2].tolist() == [30, 67]
    assert second.level.values.tolist() == [1, 2, 4]
    assert second.duration.values.tolist() == [20, 39, 36]
    # the saddle: the interval of fastest change between two plateaus, at its midpoint
    assert second.saddle_time.values.tolist() == [20.5, 60.5]
    assert 30 < first.saddle_time.values[0] < 33 and np.isnan(first.saddle_time.values[1])
    assert found.attrs["var"] == "energy" and found.attrs["tol"] == 1e-3


def test_min_duration_tolerance_and_non_finite_values():
    ds = staircase()
    assert plateaus(ds, "energy", min_duration=37)["count"].values.tolist() == [1, 1]
    # a ramp of relative rate about 0.3 per unit time is flat at tol 1
    assert plateaus(ds, "energy", tol=1.0)["count"].values.tolist() == [1, 1]
    ds.energy[0, 50] = np.nan  # splits the second plateau of run 0 in two
    broken = plateaus(ds, "energy").sel(seed=0)
    assert int(broken["count"]) == 3 and broken.end.values[1] == 49
    assert broken.start.values[2] == 51


@pytest.mark.parametrize("options, key", [({"tol": -1}, "tol"),
                                          ({"min_duration": -1}, "min_duration"),
                                          ({"along": "seed"}, "seed")])
def test_impossible_options_are_config_errors(options, key):
    ds = staircase().assign_coords(seed=["a", "b"])
    with pytest.raises(ConfigError, match=key):
        plateaus(ds, "energy", **options)


@pytest.fixture(scope="module")
def merge(tmp_path_factory):
    out = tmp_path_factory.mktemp("merge") / "m.nc"
    ran = invoke("run", ROOT / "configs/two-cluster-merge.yaml", "--out", out, "--workers", 1)
    assert ran.exit_code == 0, ran.output
    return out


def test_the_two_cluster_plateau_grows_like_exp_of_gap_times_beta(merge):
    ds = sweep.open_results(merge)
    found = sweep.plateaus(ds, "energy")
    for seed in ds.seed.values:
        runs, gap = found.sel(seed=seed), float(ds.overlap_gap.isel(time=0, beta=0).sel(seed=seed))
        beta, count = runs.beta.values, runs["count"].values
        merged = count == 2
        assert merged.sum() >= 4 and set(count) <= {1, 2}
        # before the merge E ~ e^beta / (4 beta), after it e^beta / (2 beta)
        levels = runs.level.values[merged]
        assert levels[:, 1] / levels[:, 0] == pytest.approx(2, rel=0.02)
        assert levels[:, 1] == pytest.approx(np.exp(beta[merged]) / (2 * beta[merged]), rel=1e-3)
        # ln(beta T) = g beta + const: the saddle time, and the plateau where it is long
        saddle = runs.saddle_time.values[merged, 0]
        assert np.polyfit(beta[merged], np.log(beta[merged] * saddle), 1)[0] == \
            pytest.approx(gap, rel=0.06)
        held = runs.duration.values[:, 0]
        long = merged & (held >= 50)
        assert long.sum() >= 3
        assert np.polyfit(beta[long], np.log(beta[long] * held[long]), 1)[0] == \
            pytest.approx(gap, rel=0.1)
        assert all(np.diff(saddle) > 0)  # sharper attention, longer metastable state


def test_the_command_prints_the_plateaus_and_writes_them(merge, tmp_path):
    out = tmp_path / "p.nc"
    done = invoke("plateaus", merge, "--var", "energy", "--min-duration", 5, "-o", out)
    assert done.exit_code == 0, done.output
    assert "plateaus of energy along time" in done.output and f"plateaus: {out}" in done.output
    written = sweep.open_results(out)
    assert written.attrs["min_duration"] == 5 and set(written["count"].dims) == {"beta", "seed"}
    spelt = [invoke("plateaus", merge, "--var", "energy", flag, 0.01, "-o", tmp_path / f"{k}.nc")
             for k, flag in enumerate(("--rtol", "--tol"))]
    assert [r.exit_code for r in spelt] == [0, 0], spelt[0].output
    a, b = (sweep.open_results(tmp_path / f"{k}.nc") for k in (0, 1))
    # --rtol, the interface's name, and --tol: one tolerance, one dataset
    assert a.attrs["tol"] == b.attrs["tol"] == 0.01 and a.equals(b)
    bad = invoke("plateaus", merge, "--var", "nonsense")
    assert bad.exit_code == 2 and "nonsense" in bad.output and "Traceback" not in bad.output
    assert len(bad.output.strip().splitlines()) == 1


def test_the_sidecar_script_remakes_the_committed_sidecar(merge, tmp_path):
    steps, made = tmp_path / "p.nc", tmp_path / "s.json"
    assert invoke("plateaus", merge, "--var", "energy", "-o", steps).exit_code == 0
    subprocess.run([sys.executable, ROOT / "figures/staircase.py", merge, steps, made],
                   check=True, capture_output=True)
    facts = json.loads(made.read_text())
    assert facts == json.loads((ROOT / "figures/two-cluster-merge.json").read_text())
    # the statements of docs/analysis.md: each slope near the seed's gap
    for r in facts["seeds"]:
        assert r["slope_saddle"] == pytest.approx(r["gap"], rel=0.06)
        assert r["slope_duration"] == pytest.approx(r["gap"], rel=0.1)
        assert len(r["long_betas"]) >= 3 and all(t >= 50 for t, b in
                                                zip(r["duration"], r["merged_betas"])
                                                if b in r["long_betas"])
