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
from sweep.core.store import Store

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def counted_reads(monkeypatch):
    """Store.read calls that found a part, by job id."""
    found = collections.Counter()
    real = Store.read

    def read(self, job):
        part = real(self, job)
        if part is not None:
            found[job.id] += 1
        return part

    monkeypatch.setattr(Store, "read", read)
    return found


def test_a_run_reads_no_part_it_wrote_and_merges_the_same_bits(cfg_path, tmp_path,
                                                               counted_reads):
    out = tmp_path / "res.nc"
    assert invoke("run", cfg_path, "--out", out, "--workers", 2).exit_code == 0
    assert not counted_reads  # the merge took every part from memory
    ran = load(out)
    assert invoke("merge", cfg_path, "--set", f"output.path={out}").exit_code == 0
    assert sorted(counted_reads.values()) == [1] * 6  # read from disk this time
    merged = load(out)
    xr.testing.assert_identical(ran.assign_attrs(history=""), merged.assign_attrs(history=""))


def test_a_resumed_run_reads_each_finished_part_once(cfg_path, tmp_path, counted_reads):
    out, straight = tmp_path / "res.nc", tmp_path / "straight.nc"
    assert invoke("run", cfg_path, "--out", out, "--shard", "0/2").exit_code == 0
    counted_reads.clear()
    assert invoke("run", cfg_path, "--out", out).exit_code == 0
    assert sorted(counted_reads.values()) == [1] * 3  # the shard's parts, in the triage only
    assert invoke("run", cfg_path, "--out", straight).exit_code == 0
    xr.testing.assert_identical(values(out), values(straight))


def test_with_positions_the_merge_reads_them_from_disk(cfg_path, tmp_path, counted_reads):
    out = tmp_path / "res.nc"
    result = invoke("run", cfg_path, "--out", out, "--set", "output.positions=final")
    assert result.exit_code == 0, result.output
    assert sorted(counted_reads.values()) == [1] * 6  # positions are never held by the run
    assert load(out)["positions"].notnull().all()


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
