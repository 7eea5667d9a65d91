"""What a run costs outside the kernels, guarded by counts rather than times: each part is
read at most once, light commands never load the data stack.
"""

import collections
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr

from helpers import invoke, load, values
from sweep.storage.store import Store

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def counted_reads(monkeypatch):
    """Part files whose results were read, by name (a part holds a batch of jobs: one job
    each at these sizes)."""
    found = collections.Counter()
    real = Store._load

    def load(self, name, header, job):
        found[name] += 1
        return real(self, name, header, job)

    monkeypatch.setattr(Store, "_load", load)
    return found


def test_a_run_and_a_merge_read_each_part_once_and_write_the_same_bits(cfg_path, tmp_path,
                                                                       counted_reads):
    out = tmp_path / "res.nc"
    assert invoke("run", cfg_path, "--out", out, "--workers", 2).exit_code == 0
    assert sorted(counted_reads.values()) == [1] * 6  # by the merge; the run reads none
    ran = load(out)
    counted_reads.clear()
    assert invoke("merge", cfg_path, "--set", f"output.path={out}").exit_code == 0
    assert sorted(counted_reads.values()) == [1] * 6
    merged = load(out)
    xr.testing.assert_identical(ran.assign_attrs(history=""), merged.assign_attrs(history=""))


def test_a_resumed_run_reads_each_finished_part_once(cfg_path, tmp_path, counted_reads):
    out, straight = tmp_path / "res.nc", tmp_path / "straight.nc"
    assert invoke("run", cfg_path, "--out", out, "--shard", "0/2").exit_code == 0
    assert not counted_reads  # a shard writes parts only
    assert invoke("run", cfg_path, "--out", out).exit_code == 0
    assert sorted(counted_reads.values()) == [1] * 6  # every part, by the merge only
    assert invoke("run", cfg_path, "--out", straight).exit_code == 0
    xr.testing.assert_identical(values(out), values(straight))


HEAVY = ("xarray", "pandas", "netCDF4", "matplotlib", "scipy.linalg")


@pytest.mark.parametrize("args", [["plan", "configs/demo.yaml"], ["--help"]],
                         ids=["plan", "help"])
def test_light_commands_do_not_load_the_data_stack(args):
    code = ("import sys\nfrom sweep.cli import app\n"
            f"sys.argv = ['sweep', *{args!r}]\n"
            "try:\n    app()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            f"print(*[m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.splitlines()[-1] == "", out.stdout
