"""The Python API (`import sweep`) against the command line it stands under: the same files,
the same bits, the same one-line errors, and nothing heavy imported until it is needed."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

import sweep
from helpers import SMALL, assert_same_results, invoke, per_job
from sweep.config.grid import expand
from sweep.errors import ConfigError, StoreError
from sweep.execution import runner
from sweep.execution import simulate as sim
from sweep.storage.merging import MissingJobs, merge
from sweep.storage.store import JobsFailed, Store

ROOT = Path(__file__).parents[1]
HEAVY = ("numba", "xarray", "matplotlib", "pandas", "netCDF4")


def imported_after(code: str) -> dict:
    """{"heavy": the heavy packages sys.modules holds after `code`, "out": what it printed}."""
    script = (f"import sys\n{code}\n"
              f"print('HEAVY', sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)}))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    *out, heavy = done.stdout.strip().splitlines()
    return {"heavy": eval(heavy.removeprefix("HEAVY ")), "out": out}


def test_import_sweep_is_cheap():
    assert imported_after("import sweep")["heavy"] == []


def test_loading_and_planning_import_no_numba():
    found = imported_after("import sweep\np = sweep.plan(sweep.load('configs/demo.yaml'))\n"
                           "print(len(p.jobs), [a.name for a in p.axes], list(p.kernels))")
    assert found["heavy"] == []
    assert found["out"] == ["320 ['beta', 'd', 'seed'] ['lanes-float64', 'rows-float64']"]


def test_the_api_names_are_the_spec_names():
    for name in ("load", "plan", "run", "open_results", "threshold", "plot", "theory"):
        assert name in dir(sweep) and getattr(sweep, name) is not None
    assert callable(sweep.theory.equiangular) and callable(sweep.theory.kappa_c)
    with pytest.raises(AttributeError):
        sweep.no_such_name  # noqa: B018


def test_the_former_names_warn_and_give_the_new_functions(cfg_path):
    with pytest.warns(DeprecationWarning, match="sweep.open_results"):
        assert sweep.open is sweep.open_results
    with pytest.warns(DeprecationWarning, match="sweep.compile_kernels"):
        assert sweep.compile is sweep.compile_kernels
    with pytest.warns(DeprecationWarning, match="overrides="):
        old = sweep.load(cfg_path, set=["model.n=5"])
    assert old.hash == sweep.load(cfg_path, overrides=["model.n=5"]).hash
    with pytest.raises(ConfigError, match="not both"):
        sweep.load(cfg_path, ["model.n=5"], set=["model.n=6"])


def test_load_from_a_dict_equals_the_file_with_the_same_overrides(cfg_path):
    sets = ["model.beta=2.5", "grid.seed={range: [0, 3]}"]
    from_file, from_dict = sweep.load(cfg_path, overrides=sets), sweep.load(SMALL, overrides=sets)
    assert from_file.hash == from_dict.hash and from_file.model.beta == 2.5
    assert SMALL["grid"]["seed"] == {"range": [0, 2]}  # the caller's mapping is left alone
    assert from_file.overrides == tuple(sets) and from_file.source == cfg_path


def test_plan_counts_jobs_axes_and_cost(cfg_path):
    p = sweep.plan(sweep.load(cfg_path))
    assert len(p.jobs) == 6 and [(a.name, len(a)) for a in p.axes] == [("beta", 3),
                                                                      ("seed", 2)]
    assert p.cost.gflop > 0 and p.cost.seconds > 0 and p.workers >= 1
    assert p.output == Path("results/small.nc")


def part_arrays(store):
    """{part file name: its arrays and meta, bit for bit (NaN included: the cluster-resolved
    columns have some)}, wall_seconds left out (it is a measurement) and with it the checksum
    that covers it."""
    found = {}
    for path in sorted(store.dir.glob("*.npz")):
        with np.load(path) as f:
            found[path.name] = {k: (f[k].dtype.str, f[k].shape, f[k].tobytes())
                                for k in f.files if k not in ("wall_seconds", "checksum")}
    return found


# SMALL as it is (d = 4: rows, a part file per job), and as a lanes sweep (d = 3) of 24 jobs,
# 3 parts of 8
@pytest.mark.parametrize("sets, parts", [([], 6), (["model.d=3", "grid.seed={range: [0, 8]}"], 3)])
def test_run_writes_the_files_and_bits_of_sweep_run(cfg_path, tmp_path, sets, parts):
    cfg = sweep.load(cfg_path, overrides=sets)
    ds = sweep.run(cfg, out=tmp_path / "api.nc", workers=2)
    cli = subprocess.run([sys.executable, "-m", "sweep", "run", str(cfg_path), "--out",
                          str(tmp_path / "cli.nc"), "--workers", "1",
                          *[a for s in sets for a in ("--set", s)]],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    api, cmd = Store(cfg, tmp_path / "api.nc"), Store(cfg, tmp_path / "cli.nc")
    assert part_arrays(api) == part_arrays(cmd) and len(part_arrays(api)) == parts
    with xr.open_dataset(tmp_path / "api.nc") as a, xr.open_dataset(tmp_path / "cli.nc") as b:
        assert_same_results(a.load(), b.load())
        assert {k: v for k, v in a.attrs.items() if k != "history"} == \
            {k: v for k, v in b.attrs.items() if k != "history"}
    assert_same_results(ds, sweep.open_results(tmp_path / "cli.nc"))


def test_a_shard_writes_parts_only_and_merge_assembles_them(cfg_path, tmp_path):
    out = tmp_path / "r.nc"
    cfg = sweep.load(cfg_path, overrides=[f"output.path={out}"])  # merge reads the parts beside it
    assert sweep.run(cfg, shard="0/2") is None and not out.exists()
    with pytest.raises(MissingJobs, match="3 job"):
        sweep.merge(cfg)
    sweep.run(cfg, shard=(1, 2))
    with pytest.raises(MissingJobs, match="6 job"):  # out: the parts beside it, as for run
        sweep.merge(cfg, out=tmp_path / "merged.nc")
    merged = sweep.merge(cfg)
    assert out.is_file() and not (tmp_path / "merged.nc").exists()
    assert_same_results(merged, sweep.run(cfg, out=tmp_path / "all.nc"))


def test_errors_carry_the_line_the_command_prints(cfg_path, tmp_path):
    bad = dict(SMALL, model={"beta": -1.0})
    with pytest.raises(ConfigError) as raised:
        sweep.load(bad)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    result = invoke("plan", path)
    assert result.exit_code == 2 and str(raised.value) in result.output
    assert str(raised.value) == "model.beta: must be >= 0.0, got -1.0"
    with pytest.raises(StoreError) as missing:
        sweep.merge(sweep.load(cfg_path), out=tmp_path / "none.nc")
    result = invoke("merge", cfg_path, "--out", tmp_path / "none.nc")
    assert result.exit_code == 1 and str(missing.value) in result.output


def test_the_store_is_made_from_the_config(cfg_path, tmp_path):
    cfg = sweep.load(cfg_path)
    sweep.run(cfg, out=tmp_path / "r.nc", workers=1)
    store = sweep.store(cfg, tmp_path / "r.nc")
    meta = {json.loads(str(np.load(p)["meta"]))["config_hash"] for p in store.dir.glob("*.npz")}
    assert meta == {cfg.hash} and store.config_hash == cfg.hash
    with pytest.raises(ValueError, match="not this config's jobs"):
        merge(store, expand(cfg)[:4])
    other = sweep.load(cfg_path, overrides=["model.n=5", f"output.path={tmp_path / 'r.nc'}"])
    with pytest.raises(StoreError, match="different config"):  # a changed config is refused
        sweep.merge(other, allow_missing=True)


def test_failed_jobs_raise_with_the_dataset(cfg_path, tmp_path, monkeypatch):
    real = sim.simulate

    def fragile(job, *args, **options):
        if job.index == 4:
            raise RuntimeError("singular matrix")
        return real(job, *args, **options)

    monkeypatch.setattr(runner, "simulate_batch", per_job(fragile))
    with pytest.raises(JobsFailed, match="1 job.* indices 4; the first: RuntimeError") as e:
        sweep.run(sweep.load(cfg_path), out=tmp_path / "r.nc")
    assert isinstance(e.value, StoreError)
    assert int(e.value.dataset.status.values.ravel()[4]) == 2
    assert (tmp_path / "r.nc").is_file()


def test_threshold_and_plot_take_datasets_or_files(cfg_path, tmp_path):
    pytest.importorskip("matplotlib")
    ds = sweep.run(sweep.load(cfg_path), out=tmp_path / "r.nc")
    th = sweep.threshold(ds, "mean_cosine", along="time", level=0.5,
                         out=tmp_path / "th.nc")
    again = sweep.threshold(tmp_path / "r.nc", "mean_cosine", along="time", level=0.5)
    # the same but for the time stamp of the history line each threshold appends
    xr.testing.assert_identical(th.assign_attrs(history=""), again.assign_attrs(history=""))
    xr.testing.assert_identical(th, sweep.open_results(tmp_path / "th.nc"))
    figure = sweep.plot(tmp_path / "r.nc", "mean_cosine", tmp_path / "f.png", x="beta",
                        y="time", threshold=th)
    assert figure.stat().st_size > 1000


def test_a_plans_cost_reads_as_a_summary(cfg_path):
    cost = sweep.plan(sweep.load(cfg_path)).cost
    assert repr(cost) == (f"Cost(work {cost.gflop:.3g} GFLOP, peak memory per job "
                          f"{cost.peak_mib:.3g} MiB, about {cost.seconds:.3g} s on one core)")
    assert "gflop=" not in str(cost)
