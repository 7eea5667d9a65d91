"""One kernel decision per job, and the compile cache: `sweep compile` compiles exactly what
`sweep run` then calls, into the one cache `make` and a plain `sweep` share."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr
import yaml

import sweep
from helpers import assert_same_results
from sweep.execution import kernel
from sweep.execution.kernel import KernelPlan, kernel_plan
from sweep.numerics import cache

ROOT = Path(__file__).parents[1]

# rows (n = 8), blocked tile by tile (n = 300) and Symmetric (n = 1030), and the general
# path (relu attention), a few steps each
MIXED = {
    "name": "mixed",
    "model": {"d": 3},
    "integrate": {"method": "euler", "dt": 0.1, "t_max": 0.2, "save_every": 0.1},
    "grid": {"n": [8, 300, 1030], "attention": ["softmax", "relu"]},
}
# the two blocked variants: the demo test covers rows, and test_zoo_config that the general
# path's warm-up serves every model (compiling it into an empty cache takes a minute)
BLOCKED = {**MIXED, "name": "blocked", "grid": {"n": [300, 1030]}}


def sweep_cli(*args, cache_dir):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, "-m", "sweep", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def contents(directory: Path) -> dict:
    """Every file under `directory` with its size and modification time."""
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in directory.rglob("*") if p.is_file()}


# these compile into an empty cache, which takes minutes on a busy two-core machine: a bound
# for a hang, not the suite-wide one meant for a lock never released
cold = pytest.mark.timeout(1200)


def test_each_job_gets_one_kernel_plan():
    jobs = sweep.plan(sweep.load(MIXED)).jobs
    plans = {(j.model.n, j.model.attention): kernel_plan(j) for j in jobs}
    assert plans[8, "softmax"] == KernelPlan(kernel.LANES, "float64")
    assert plans[300, "softmax"] == KernelPlan(kernel.BLOCKED, "float64", symmetric=False)
    assert plans[1030, "softmax"] == KernelPlan(kernel.BLOCKED, "float64", symmetric=True)
    assert {plans[n, "relu"] for n in (8, 300, 1030)} == {KernelPlan(kernel.GENERAL, "float64")}
    assert sweep.plan(sweep.load(MIXED)).kernels.keys() == {
        "general-float64", "lanes-float64", "blocked-float64", "symmetric-float64"}


@cold
def test_compile_demo_compiles_the_fast_kernels_its_jobs_run_and_no_others(tmp_path):
    # every demo job runs lanes.py (d 3) or rows.py (d 32): the general path is never
    # called, so never compiled
    sets = ["--set", "grid.beta=[1.0]", "--set", "grid.seed=[0]", "--set", "integrate.t_max=1"]
    store = tmp_path / "numba"
    said = sweep_cli("compile", "configs/demo.yaml", cache_dir=store)
    assert "lanes-float64" in said and "rows-float64" in said and "general" not in said
    compiled = contents(store)
    folders = {Path(name).parts[0].rsplit("_", 1)[0] for name in compiled}
    assert folders == {"kernels", "observables", "numerics", "sweep-compiled"}  # not general
    # one signature per function: a call first typed with a literal argument (f(x, 0) in a
    # loop whose counter starts at 0) compiles its callee twice (docs/performance.md)
    indexes = list(store.rglob("*.nbi"))
    twice = [p.name for p in indexes if len(list(p.parent.glob(f"{p.stem}.*.nbc"))) != 1]
    assert indexes and twice == []
    sweep_cli("run", "configs/demo.yaml", *sets, "--out", tmp_path / "demo.nc", cache_dir=store)
    assert contents(store) == compiled
    # on two CPUs or more the two variants compiled side by side, rows-float64 in a process
    # of its own whose cache was copied in (execution/compiling.py): the bits of the kernels
    # this process compiled by itself
    cfg = sweep.load(ROOT / "configs" / "demo.yaml", [s for s in sets if s != "--set"])
    with xr.open_dataset(tmp_path / "demo.nc") as there:
        assert_same_results(sweep.run(cfg, out=tmp_path / "here.nc"), there.load())


@cold
def test_after_compile_a_run_adds_nothing_to_the_cache(tmp_path):
    config, store = tmp_path / "blocked.yaml", tmp_path / "numba"
    config.write_text(yaml.safe_dump(BLOCKED))
    sweep_cli("compile", config, cache_dir=store)
    compiled = contents(store)
    assert len(compiled) > 10
    sweep_cli("run", config, "--out", tmp_path / "blocked.nc", cache_dir=store)
    assert contents(store) == compiled  # nothing compiled, nothing rewritten
    # nor by saves of the clustered fraction alone, which count the close pairs on their own
    sweep_cli("run", config, "--out", tmp_path / "close.nc", "--set",
              "output.observables=[clustered_fraction]", cache_dir=store)
    assert contents(store) == compiled


def test_plan_says_when_the_kernels_must_compile_first(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    cfg = sweep.load("configs/demo.yaml")
    cold = sweep.plan(cfg)
    assert cold.cold == ["lanes-float64", "rows-float64"] and cold.compile_seconds > 0
    for name in cold.cold:  # what the warm-up leaves once the kernels are compiled
        cache.mark(name)
    assert sweep.plan(cfg).cold == [] and sweep.plan(cfg).compile_seconds == 0


@pytest.mark.parametrize("xdg", [True, False])
def test_one_default_cache_for_make_and_a_plain_sweep(tmp_path, xdg):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(tmp_path / "home")
    if xdg:
        env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    # one folder per version of the kernels' sources: a new version never loads an old one's
    where = ((tmp_path / "xdg" if xdg else tmp_path / "home" / ".cache") / "sweep" / "numba"
             / cache.source_key())
    code = "import sweep.kernels.rows, numba; print(numba.config.CACHE_DIR)"
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert shown == str(where)
    # what make's recipes see: nothing, so `make demo` and `sweep run` use the same cache
    show = 'show:\n\t@echo "[$$NUMBA_CACHE_DIR]"\n'
    make = subprocess.run(["make", "-s", "-f", "Makefile", "-f", "-", "show"], cwd=ROOT,
                          env=env, input=show, capture_output=True, text=True, check=True)
    assert make.stdout.strip() == "[]"
    # set by the user (CI sets it inside the clone), it is used as given
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert shown == str(tmp_path / "mine")
