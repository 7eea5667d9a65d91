"""sweep monotone: falls counted beyond rounding, on synthetic series, probe datasets and a
reduced run of configs/entropy-monotone.yaml; its sidecar and the docs table made from it."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from helpers import invoke, load
from sweep.analysis.monotonicity import monotone, relative_falls, runs_that_fell
from sweep.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def figure_script():
    spec = importlib.util.spec_from_file_location("entropy_monotone",
                                                  ROOT / "figures/entropy_monotone.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def series(values, **coords):
    """A results-like dataset: var over (seed, time) with times 0, 1, 2, ..."""
    values = np.atleast_2d(values)
    return xr.Dataset({"var": (("seed", "time"), values)},
                      coords={"seed": np.arange(len(values)),
                              "time": np.arange(values.shape[1], dtype=float), **coords},
                      attrs={"title": "t"})


def test_falls_beyond_rounding_are_counted():
    up = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    fell = up.copy()
    fell[3] = 3.0 * (1 - 1e-6)  # a fall of 1e-6 relative at t = 3
    wobble = up.copy()
    wobble[2] = 2.0 * (1 - 1e-12)  # rounding: not a fall
    gap = fell.copy()
    gap[2] = np.nan  # the fall's interval has a NaN end: it counts neither way
    out = monotone(series([up, fell, wobble, gap]), "var")
    assert list(out.falls.values) == [0, 1, 0, 0]
    assert list(out.intervals.values) == [4, 4, 4, 2]
    assert out.worst_fall.values[1] == pytest.approx(1e-6, rel=1e-6)
    assert out.worst_fall.values[0] == 0 and out.first_fall.values[1] == 3.0
    assert np.isnan(out.first_fall.values[0])
    assert out.falls.attrs["units"] == "1" and "long_name" in out.first_fall.attrs


def test_a_small_fall_after_rounding_noise():
    # 1e-12 wobbles around a plateau are rounding; a 1e-8 fall is not
    y = np.array([1.0, 1.0 - 1e-12, 1.0, 1.0 - 1e-8, 1.0])
    out = monotone(series([y]), "var")
    assert int(out.falls[0]) == 1 and float(out.first_fall[0]) == 3.0
    np.testing.assert_allclose(relative_falls(np.array([0.0, 0.0, -1.0])), [0.0, 1.0])


def test_along_layer_of_a_probe_dataset():
    ds = xr.Dataset({"attention_entropy": ("layer", [np.nan, 4.5, 3.0, 3.2, 3.7])},
                    coords={"layer": np.arange(5)})
    out = monotone(ds, "attention_entropy", along="layer")
    assert out.falls.dims == () and int(out.falls) == 1 and int(out.intervals) == 3
    assert float(out.first_fall) == 2 and float(out.worst_fall) == pytest.approx(1.5 / 4.5)
    assert runs_that_fell(out) == [{"by": None, "value": None, "fell": 1, "runs": 1,
                                   "worst_fall": pytest.approx(1 / 3)}]


def test_escape_depth_is_the_peak_the_series_first_falls_from_beyond_the_tolerance():
    signature = [0.39, 0.52, 0.61, 0.7, 0.78, 0.8, 0.83, 0.84, 0.85, 0.5, 0.07]
    rising = [0.2, 0.3, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98]
    wobble = [0.2, 0.5, 0.45, 0.6, 0.6, 0.58, 0.7, 0.8, 0.9, 0.92, 0.9]  # falls <= 0.1
    late = [0.2, 0.5, 0.5, 0.35, 0.36, 0.37, 0.38, 0.39, 0.2, 0.1, 0.0]  # first at 2
    ds = xr.Dataset({"mean_cosine": (("seed", "layer"), [signature, rising, wobble, late])},
                    coords={"seed": np.arange(4), "layer": np.arange(11)})
    out = monotone(ds, "mean_cosine", along="layer")
    np.testing.assert_allclose(out.peak_fall.values, [0.78, 0.0, 0.05, 0.5], atol=1e-12)
    assert out.escape_depth.values[0] == 8 and out.escape_depth.values[3] == 2
    assert np.isnan(out.escape_depth.values[1:3]).all() and out.attrs["escape_tol"] == 0.1
    strict = monotone(ds, "mean_cosine", along="layer", tol=0.01)
    assert strict.escape_depth.values[2] == 1  # 0.5 -> 0.45 exceeds 0.01


def test_bad_requests_are_config_errors():
    ds = series([[1.0, 2.0]], kind=("seed", ["a"]))
    with pytest.raises(ConfigError, match="'nope'"):
        monotone(ds, "nope")
    with pytest.raises(ConfigError, match="text axis"):
        monotone(ds, "var", along="kind")
    with pytest.raises(ConfigError, match="at least 2"):
        monotone(series([[1.0]]), "var")


REDUCED = ["--set", "model.n=8", "--set", "integrate.t_max=1", "--set", "grid.beta=[1.0, 9.0]",
           "--set", "grid.seed={range: [0, 2]}"]


@pytest.fixture(scope="module")
def reduced_run(tmp_path_factory):
    """configs/entropy-monotone.yaml at reduced size, as the test of every config runs it."""
    res = tmp_path_factory.mktemp("entropy") / "e.nc"
    r = invoke("run", ROOT / "configs/entropy-monotone.yaml", "--out", res, "--workers", 1,
               *REDUCED)
    assert r.exit_code == 0, r.output
    return res


def test_cli_monotone_on_a_run_energy_never_falls(reduced_run, tmp_path):
    # docs/theory.md, Energy: E_beta never decreases along SA with identity matrices (at a
    # small enough step)
    out = tmp_path / "m.nc"
    r = invoke("monotone", reduced_run, "--var", "energy", "-o", out)
    assert r.exit_code == 0, r.output
    assert "energy fell in 0 of 24 run(s)" in r.output
    ds = load(out)
    assert ds.falls.dims == ("beta", "d", "seed") and (ds.falls == 0).all()
    assert (ds.intervals == 10).all() and ds.attrs["var"] == "energy"
    for name in ds.data_vars:
        assert ds[name].attrs["long_name"] and ds[name].attrs["units"]
    assert ds.attrs["sweep_config_hash"] == load(reduced_run).attrs["sweep_config_hash"]


def test_cli_monotone_errors(reduced_run):
    r = invoke("monotone", reduced_run, "--var", "entropy")
    assert r.exit_code == 2 and "'entropy'" in r.output and "Traceback" not in r.output
    r = invoke("monotone", reduced_run, "--var", "energy", "--along", "kind")
    assert r.exit_code == 2 and "text axis" in r.output


def test_sidecar_script_on_the_reduced_run(reduced_run, tmp_path):
    mono, sidecar = tmp_path / "m.nc", tmp_path / "s.json"
    assert invoke("monotone", reduced_run, "--var", "attention_entropy", "-o",
                  mono).exit_code == 0
    doc = tmp_path / "doc.md"
    script = figure_script()
    doc.write_text(f"before\n{script.BEGIN}\nold\n{script.END}\nafter\n")
    subprocess.run([sys.executable, ROOT / "figures/entropy_monotone.py", mono, sidecar,
                    "--docs", doc], check=True, capture_output=True)
    facts = json.loads(sidecar.read_text())
    assert [(r["kind"], r["d"], r["runs"]) for r in facts["rows"]] == [
        ("uniform", 2, 4), ("uniform", 3, 4), ("uniform", 8, 4), ("uniform", 32, 4),
        ("uniform", 128, 4), ("orthonormal", 64, 4)]
    assert facts["n"] == 8 and facts["dt"] == 0.02 and facts["seeds"] == 2
    text = doc.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert script.table(facts) in text


def test_docs_table_is_the_committed_sidecars():
    facts = json.loads((ROOT / "figures/entropy-monotone.json").read_text())
    assert figure_script().table(facts) in (ROOT / "docs/analysis.md").read_text()
    # the statement of scope the docs make from it
    rows = {(r["kind"], r["d"]): r for r in facts["rows"]}
    assert all(r["fell"] > 0 for (kind, d), r in rows.items() if kind == "uniform" and d <= 8)
    assert all(r["fell"] == 0 for (kind, d), r in rows.items() if kind != "uniform" or d >= 32)
    assert 1e-4 < max(r["worst_fall"] for r in facts["rows"]) < 2e-3
