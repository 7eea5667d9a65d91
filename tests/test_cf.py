"""Results, threshold and theory files read cleanly in other tools: the IOOS CF checker
(compliance-checker, which ships the CF standard-name table and needs no network) finds no
error and no warning in them.

One check is left out: the checker wants every dimension named `time` to be a calendar time
(standard_name time, units "<unit> since <date>"). Ours is the dimensionless time of the
dynamics (units 1; SPEC names the dimension), which CF does not make a time coordinate; CDO,
which keys on calendar units, skips such series too (docs/results.md)."""

import json

import pytest
import xarray as xr

from helpers import invoke

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the checker's own
runner = pytest.importorskip("compliance_checker.runner",
                             reason="compliance-checker is in the test extra (make install)")
CALENDAR_TIME_ONLY = "check_spatiotemporal_dims_have_coordinate_vars"


def cf_findings(path, tmp_path):
    """(errors, warnings, messages) of the CF 1.8 checks on a netCDF file."""
    runner.CheckSuite.load_all_available_checkers()
    report = tmp_path / f"{path.stem}.cf.json"
    runner.ComplianceChecker.run_checker(str(path), ["cf:1.8"], 0, "normal",
                                         skip_checks=[CALENDAR_TIME_ONLY],
                                         output_filename=str(report), output_format="json")
    found = json.loads(report.read_text())["cf:1.8"]
    said = [m for level in ("high_priorities", "medium_priorities")
            for check in found[level] for m in check["msgs"]]
    return found["high_count"], found["medium_count"], said


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A results file with text and integer axes, its threshold, and both theory files."""
    tmp = tmp_path_factory.mktemp("cf")
    cfg = tmp / "c.yaml"
    cfg.write_text("name: cf\nmodel: {n: 6, d: 3}\n"
                   "integrate: {dt: 0.1, t_max: 2.0, save_every: 0.5}\n"
                   "grid: {mask: [dense, causal], beta: [0.0, 4.0], seed: {range: [0, 2]}}\n")
    made = {"results": tmp / "r.nc", "threshold": tmp / "th.nc",
            "equiangular": tmp / "eq.nc", "kappa-c": tmp / "k.nc"}
    for args in (["run", cfg, "--out", made["results"], "--workers", 1],
                 ["threshold", made["results"], "--var", "clustered_fraction", "--along",
                  "beta", "--time", "all", "-o", made["threshold"]],
                 ["theory", "equiangular", "--n", 6, "-o", made["equiangular"]],
                 ["theory", "kappa-c", "--d", 3, "--beta", 1, "-o", made["kappa-c"]]):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
    return made


@pytest.mark.parametrize("kind", ["results", "threshold", "equiangular", "kappa-c"])
def test_a_cf_checker_finds_nothing_wrong(files, kind, tmp_path):
    errors, warnings, said = cf_findings(files[kind], tmp_path)
    assert (errors, warnings) == (0, 0), said


def test_status_flags_units_and_coordinates_as_cf_wants(files):
    ds = xr.open_dataset(files["results"])
    assert ds.status.attrs["flag_meanings"] == "missing ok non_finite failed"
    assert list(ds.status.attrs["flag_values"]) == [-1, 0, 1, 2]
    assert ds.status.attrs["flag_values"].dtype == ds.status.dtype
    assert ds.attention_entropy.attrs["units"] == "1"  # "nat" is nano-atmospheres in UDUNITS
    assert "nats" in ds.attention_entropy.attrs["long_name"]
    assert ds.time.attrs["long_name"] == "dimensionless time"
    for name in ds.coords:
        assert "_FillValue" not in ds[name].encoding or ds[name].encoding["_FillValue"] is None
    assert ds.seed.dtype == "int32"
    for kind in ("threshold", "equiangular", "kappa-c"):
        attrs = xr.open_dataset(files[kind]).attrs
        assert attrs["Conventions"].startswith("CF-") and attrs["history"], kind
    # the threshold's history is its results' history plus its own line (newest last)
    results = xr.open_dataset(files["results"]).attrs["history"]
    history = xr.open_dataset(files["threshold"]).attrs["history"].splitlines()
    assert len(history) == 2 and history[0] == results
