"""The command line end to end through CliRunner: plan, run, resume, merge, show."""

import json
import re
import time

import numpy as np
import pytest
import xarray as xr
import yaml

from helpers import assert_same_results, invoke, merged, per_job
from sweep import __version__
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.execution import runner
from sweep.execution import simulate as sim
from sweep.execution.simulate import Stopped
from sweep.kernels.codes import SCALARS, SERIES
from sweep.storage.store import Store

CFG = {
    "name": "small",
    "model": {"attention": "softmax", "d": 4, "n": 6},
    "integrate": {"method": "euler", "dt": 0.1, "t_max": 2.0, "save_every": 0.5},
    "grid": {"beta": [0.0, 1.0, 4.0], "d": [4, 5], "seed": {"range": [0, 2]}},
}



@pytest.fixture
def cfg_path(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(CFG, sort_keys=False))
    return path


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and __version__ in result.output


def test_plan_table_and_json(cfg_path):
    result = invoke("plan", cfg_path)
    assert result.exit_code == 0
    assert "12 job(s)" in result.output and "beta" in result.output
    lines = invoke("plan", cfg_path, "--json").output.strip().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["index"] for r in rows] == list(range(12))
    assert rows[7]["parameters"] == {"beta": 1.0, "d": 5, "seed": 1}
    assert len({r["id"] for r in rows}) == 12


def test_run_writes_the_spec_dataset(cfg_path, tmp_path):
    out = tmp_path / "res.nc"
    result = invoke("run", cfg_path, "--out", out, "--workers", 2)
    assert result.exit_code == 0, result.output
    assert str(out) in result.output
    ds = xr.open_dataset(out)
    assert dict(ds.sizes) == {"beta": 3, "d": 2, "seed": 2, "time": 5}
    np.testing.assert_allclose(ds.time, [0, 0.5, 1.0, 1.5, 2.0])
    for name in SERIES:
        assert ds[name].dims == ("beta", "d", "seed", "time")
    for name in list(SERIES) + list(SCALARS):
        assert ds[name].attrs["long_name"] and "units" in ds[name].attrs
    for name in SCALARS:
        assert ds[name].dims == ("beta", "d", "seed")
    assert (ds.status == 0).all()
    for key in ("Conventions", "title", "source", "history", "sweep_config",
                "sweep_config_hash", "python_version", "numpy_version", "numba_version",
                "xarray_version"):
        assert key in ds.attrs
    assert config.from_dict(yaml.safe_load(ds.attrs["sweep_config"])).hash == \
        ds.attrs["sweep_config_hash"]
    # every beta of a sweep starts from the same tokens
    first = ds.mean_cosine.isel(time=0)
    np.testing.assert_array_equal(first.sel(beta=0.0), first.sel(beta=4.0))


def test_rerun_skips_completed_and_force_recomputes(cfg_path, tmp_path):
    out = tmp_path / "res.nc"
    invoke("run", cfg_path, "--out", out)
    again = invoke("run", cfg_path, "--out", out)
    assert "12 job(s) already complete" in again.output and "0 job(s) run" in again.output
    forced = invoke("run", cfg_path, "--out", out, "--force")
    assert "12 job(s) run" in forced.output


def _load(path):
    with xr.open_dataset(path) as ds:
        return ds.load()


def test_interrupted_run_resumes_to_identical_dataset(cfg_path, tmp_path, monkeypatch):
    straight = tmp_path / "straight.nc"
    assert invoke("run", cfg_path, "--out", straight, "--workers", 1).exit_code == 0

    cfg = config.load(cfg_path)
    jobs = expand(cfg)
    store = Store(cfg, tmp_path / "resumed.nc")
    real = sim.simulate

    def held_back(job, positions="none", stop=None, **options):
        # jobs 5.. wait until the run is interrupted, so exactly jobs 0..4 finish first
        while job.index >= 5 and not stop[0]:
            time.sleep(0.001)
        if job.index >= 5:
            raise Stopped(job.id)
        return real(job, positions, stop, **options)

    def job_done(job, outcome):
        if sum(store.done(j) for j in jobs) == 5:
            raise KeyboardInterrupt

    monkeypatch.setattr(runner, "simulate_batch", per_job(held_back))
    with pytest.raises(runner.Interrupted):
        runner.run(jobs, store, workers=2, hooks=runner.Hooks(job_done=job_done))
    monkeypatch.undo()
    assert [j.index for j in jobs if store.done(j)] == [0, 1, 2, 3, 4]
    assert not list(store.dir.glob(".*.tmp"))
    result = invoke("run", cfg_path, "--out", tmp_path / "resumed.nc", "--workers", 2)
    assert result.exit_code == 0
    assert "5 job(s) already complete" in result.output
    assert_same_results(_load(straight), _load(tmp_path / "resumed.nc"))


def test_shards_merge_to_the_unsharded_dataset(cfg_path, tmp_path):
    whole = tmp_path / "whole.nc"
    invoke("run", cfg_path, "--out", whole)
    parts = tmp_path / "parts.nc"
    for i in range(3):
        result = invoke("run", cfg_path, "--out", parts, "--shard", f"{i}/3", "--workers", 1)
        assert result.exit_code == 0 and not parts.exists()
    assert invoke("merge", cfg_path, "--set", f"output.path={parts}").exit_code == 0
    assert_same_results(_load(whole), _load(parts))


def test_out_means_the_same_place_for_run_status_and_merge(cfg_path, tmp_path, monkeypatch):
    """--out X: the results file X and its parts beside it, X.parts, for all three (after a
    stopped `run --out X`, `status --out X` counts what X.parts holds)."""
    monkeypatch.chdir(tmp_path)  # output.path of SMALL is results/small.nc, here
    other = tmp_path / "elsewhere" / "merged.nc"
    assert invoke("run", cfg_path, "--out", other, "--shard", "0/2").exit_code == 0
    status = invoke("status", cfg_path, "--out", other)
    assert status.exit_code == 0 and "6 completed, 6 missing" in status.output, status.output
    assert f"parts in {other.with_suffix('.parts')}" in status.output
    assert "0 completed" in invoke("status", cfg_path).output  # output.path's parts: none
    assert invoke("run", cfg_path, "--out", other, "--shard", "1/2").exit_code == 0
    result = invoke("merge", cfg_path, "--out", other)
    assert result.exit_code == 0, result.output
    ds = _load(other)
    assert (ds.status == 0).all() and not (tmp_path / "results" / "small.nc").exists()
    status = invoke("status", cfg_path, "--out", other)
    assert f"merged dataset: {other}, of this config" in status.output


def test_merge_lists_missing_jobs_unless_allowed(cfg_path, tmp_path):
    out = tmp_path / "m.nc"
    invoke("run", cfg_path, "--out", out, "--shard", "0/2")
    result = invoke("merge", cfg_path, "--set", f"output.path={out}")
    assert result.exit_code == 1 and "6 job(s) have no result" in result.output
    allowed = invoke("merge", cfg_path, "--set", f"output.path={out}", "--allow-missing")
    assert allowed.exit_code == 0
    ds = xr.open_dataset(out)
    assert int((ds.status == -1).sum()) == 6
    assert np.isnan(ds.order_parameter.where(ds.status == -1)).all()


def test_positions_final_and_trajectory(cfg_path, tmp_path):
    for mode, dims in [("final", ("beta", "seed", "token", "component")),
                       ("trajectory", ("beta", "seed", "time", "token", "component"))]:
        out = tmp_path / f"{mode}.nc"
        result = invoke("run", cfg_path, "--out", out, "--set", f"output.positions={mode}",
                        "--set", "grid.d=null")
        assert result.exit_code == 0, result.output
        ds = xr.open_dataset(out)
        assert ds.positions.dims == dims
        norms = np.sqrt((ds.positions ** 2).sum("component"))
        np.testing.assert_allclose(norms, 1.0, atol=1e-12)


def test_show_describes_a_results_file(cfg_path, tmp_path):
    out = tmp_path / "res.nc"
    invoke("run", cfg_path, "--out", out)
    result = invoke("show", out)
    assert result.exit_code == 0
    for word in ("beta", "order_parameter", "sweep_config_hash", "attention: softmax"):
        assert word in result.output
    missing = invoke("show", tmp_path / "none.nc")
    assert missing.exit_code == 2 and "none.nc" in missing.output


def test_bad_shard_spec(cfg_path):
    result = invoke("run", cfg_path, "--shard", "3/3")
    assert result.exit_code == 2 and "--shard" in result.output


def test_merge_reads_only_parts_of_this_grid(cfg_path, tmp_path):
    cfg = config.load(cfg_path)
    out = tmp_path / "x.nc"
    invoke("run", cfg_path, "--out", out)
    bigger = config.load(cfg_path, ["grid.beta=[0.0, 1.0, 4.0, 8.0]"])
    result = invoke("run", cfg_path, "--out", out, "--set", "grid.beta=[0.0, 1.0, 4.0, 8.0]")
    assert "12 job(s) already complete" in result.output  # extending a grid reuses results
    ds = merged(Store(cfg, out))
    assert ds.sizes["beta"] == 3 and bigger.hash != cfg.hash


def test_two_configs_never_silently_share_one_results_file(cfg_path, tmp_path):
    out, variant = tmp_path / "shared.nc", ("--set", "model.n=5")
    assert invoke("run", cfg_path, "--out", out).exit_code == 0
    first = xr.open_dataset(out).load().attrs["sweep_config_hash"]
    other = config.load(cfg_path, ["model.n=5"]).hash
    assert invoke("run", cfg_path, *variant, "--out", out, "--shard", "0/1").exit_code == 0
    for command in ("run", "merge"):  # the variant's parts are there: only the file is shared
        result = invoke(command, cfg_path, *variant, "--out", out)
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
        line = result.output.strip().splitlines()[-1]
        assert line.startswith(f"error: {out}: holds the results of another config (hash "
                               f"{first}), not of this one (hash {other})")
        assert "--out" in line and "--force" in line
    assert xr.open_dataset(out).load().attrs["sweep_config_hash"] == first  # untouched
    assert invoke("run", cfg_path, "--out", out).exit_code == 0  # its own config: fine
    assert invoke("run", cfg_path, *variant, "--out", out, "--force").exit_code == 0
    assert xr.open_dataset(out).load().attrs["sweep_config_hash"] == other
    out.with_name("notes.nc").write_text("not a results file")
    result = invoke("merge", cfg_path, "--out", out.with_name("notes.nc"))
    assert result.exit_code == 2 and "exists and is not a sweep results file" in result.output


@pytest.mark.parametrize("grid", ["[8.0, 9.0]", "[1.0, 8.0]"], ids=["disjoint", "overlapping"])
def test_a_config_run_after_another_that_left_only_parts_is_refused(cfg_path, tmp_path, grid):
    """The first ran by shards (or stopped before its merge): no results file yet, only its
    parts; a second config given that output is refused as one given the file would be."""
    out, other = tmp_path / "shared.nc", ("--set", f"grid.beta={grid}")
    assert invoke("run", cfg_path, "--out", out, "--shard", "0/1").exit_code == 0
    result = invoke("run", cfg_path, *other, "--out", out)
    assert result.exit_code == 2 and not out.exists(), result.output
    line, = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {out.with_suffix('.parts')}: holds the results of ")
    assert "not jobs of this config" in line and "--force" in line
    assert invoke("run", cfg_path, "--out", out).exit_code == 0  # its own config: fine
    assert invoke("run", cfg_path, *other, "--out", tmp_path / "own.nc").exit_code == 0


def test_the_run_summary_names_its_overall_and_kernel_rates(cfg_path, tmp_path):
    result = invoke("run", cfg_path, "--out", tmp_path / "r.nc", "--workers", "1")
    assert result.exit_code == 0, result.output
    line, = [x for x in result.output.splitlines() if " job(s) run in " in x]
    overall, kernel = (float(re.search(rf"{name} rate ([0-9.e+]+) jobs/s", line).group(1))
                       for name in ("overall", "kernel"))
    assert 0 < overall < kernel  # one worker: its integrating is a part of the wall time
    assert "start-up, warm-up and waits included" in line and "jobs/s per worker" in line
