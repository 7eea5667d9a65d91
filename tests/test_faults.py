"""Faults a long sweep meets: damaged parts, unwritable or full disks, blow-ups, failed jobs.

Every fault must end in one clear line and the documented exit code, leave no temp file, and
keep every finished result whole; the next run must complete to the very dataset an
undisturbed run writes. Tests run as root in CI, where chmod does not stop writes, so a
read-only or full disk is simulated by making the writing call fail with EROFS / ENOSPC.
"""

import errno
import os
import pathlib
import shutil

import numpy as np
import pytest
import xarray as xr
import yaml

from helpers import invoke, per_job, values
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.execution import runner
from sweep.execution import simulate as sim
from sweep.storage import netcdf
from sweep.storage.locks import JobLocks
from sweep.storage.store import Store

CFG = {
    "name": "faults",
    "model": {"attention": "softmax", "d": 4, "n": 5},  # rows: a part per job
    "integrate": {"method": "euler", "dt": 0.1, "t_max": 1.0, "save_every": 0.5},
    "grid": {"beta": [0.0, 1.0, 4.0], "seed": {"range": [0, 2]}},
}



def one_clean_line(result, code):
    """The command failed with `code`, through the CLI's own message, not a traceback."""
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("error: ") and "Traceback" not in result.output
    return lines[-1]


def temp_files(folder):
    return sorted(p.name for p in pathlib.Path(folder).rglob("*.tmp"))


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The dataset of an undisturbed run, to compare every recovery with."""
    folder = tmp_path_factory.mktemp("straight")
    path = folder / "c.yaml"
    path.write_text(yaml.safe_dump(CFG))
    assert invoke("run", path, "--out", folder / "res.nc").exit_code == 0
    return values(folder / "res.nc")


@pytest.fixture
def setup(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(CFG))
    cfg = config.load(path)
    return path, tmp_path / "res.nc", Store(cfg, tmp_path / "res.nc"), expand(cfg)


def assert_parts_whole(store, jobs):
    for job in jobs:
        store.read(job)  # raises StoreError on a damaged part
    assert not temp_files(store.dir)


# ---------------------------------------------------------------- damaged and foreign parts

def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def foreign(path, other):
    shutil.copyfile(other, path)


def wrong_shape(path, other):
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["observables"] = arrays["observables"][:-1]
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def huge_shape(path, other):
    """Every array's header claims 10^12 numbers; the file holds a few bytes of each."""
    import zipfile

    with np.load(path) as f:
        dtypes = {name: f[name].dtype for name in f.files}
    with zipfile.ZipFile(path, "w") as archive:
        for name, dtype in dtypes.items():
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array_header_1_0(member, {
                    "descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                    "shape": (10**6, 10**6)})
                member.write(b"\0" * 64)


def text_observables(path, other):
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["observables"] = np.full(arrays["observables"].shape, "x")
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def rewritten(path, change):
    """The part's arrays through `change` (name -> array), written back as a valid zip."""
    with np.load(path) as f:
        arrays = change({k: f[k] for k in f.files})
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def one_bit_flipped(arrays):
    """One bit of one value flipped: the zip is whole (its CRCs are recomputed), only the
    part's own checksum can tell."""
    data = arrays["observables"].copy()
    data.view(np.uint64).flat[3] ^= np.uint64(1 << 40)
    return {**arrays, "observables": data}


def folder(path, other):
    path.unlink()
    path.mkdir()
    (path / "kept.txt").write_text("whatever was here")


def fifo(path, other):
    path.unlink()
    os.mkfifo(path)  # reading it would wait for a writer forever


@pytest.mark.parametrize("damage,word", [
    (lambda p, o: truncate(p), "damaged"),
    (lambda p, o: p.write_bytes(b""), "damaged"),
    (lambda p, o: p.write_bytes(b"PK\x03\x04 not really a zip"), "damaged"),
    (foreign, "foreign"),
    (wrong_shape, "observables of shape"),
    (huge_shape, "of shape (1000000, 1000000)"),
    (text_observables, "observables of dtype <U1"),
    (folder, "a directory, not a regular file"),
    (fifo, "a FIFO, not a regular file"),
    (lambda p, o: rewritten(p, one_bit_flipped), "checksum mismatch"),
    (lambda p, o: rewritten(p, lambda a: {**a, "wall_seconds": a["wall_seconds"] + 1}),
     "checksum mismatch"),
    (lambda p, o: p.write_bytes(flipped_byte(p.read_bytes())), "Bad CRC-32"),
], ids=["truncated", "empty", "garbage", "foreign", "wrong-shape", "huge-shape", "text",
        "folder", "fifo", "bit-flip", "time-changed", "byte-flip"])
def test_bad_part_stops_merge_and_is_recomputed_by_run(setup, straight, damage, word):
    path, out, store, jobs = setup
    assert invoke("run", path, "--out", out).exit_code == 0
    damage(store.path(jobs[2]), store.path(jobs[4]))
    line = one_clean_line(invoke("merge", path, "--set", f"output.path={out}"), 1)
    assert store.path(jobs[2]).name in line and word in line
    status = invoke("status", path, "--set", f"output.path={out}")
    assert status.exit_code == 0 and ", 1 damaged" in status.output and word in status.output
    rerun = invoke("run", path, "--out", out)
    assert rerun.exit_code == 0, rerun.output
    assert "recomputing" in rerun.output and "1 job(s) run" in rerun.output
    xr.testing.assert_identical(values(out), straight)


def flipped_byte(data: bytes) -> bytes:
    """One bit flipped inside the observables' bytes, the zip left as it was."""
    at = data.index(b"observables.npy") + 200  # inside that member's data
    return data[:at] + bytes([data[at] ^ 4]) + data[at + 1:]


def test_parts_without_a_checksum_from_before_are_read_as_they_are(setup, straight):
    path, out, store, jobs = setup
    assert invoke("run", path, "--out", out).exit_code == 0
    for job in jobs:
        rewritten(store.path(job), lambda a: {k: v for k, v in a.items() if k != "checksum"})
    merge = invoke("merge", path, "--set", f"output.path={out}")
    assert merge.exit_code == 0, merge.output
    xr.testing.assert_identical(values(out), straight)


@pytest.mark.parametrize("command", ["merge", "status"])
def test_a_parts_folder_that_cannot_be_listed_is_one_line(setup, monkeypatch, command):
    """chmod 000 by another user (root, as in CI, reads through it: the refusal is made)."""
    path, out, store, jobs = setup
    assert invoke("run", path, "--out", out).exit_code == 0
    listed = os.scandir

    def refused(where):
        if pathlib.Path(where) == store.dir:
            raise PermissionError(errno.EACCES, "Permission denied", str(where))
        return listed(where)

    monkeypatch.setattr(os, "scandir", refused)
    line = one_clean_line(invoke(command, path, "--set", f"output.path={out}"), 1)
    assert f"{store.dir}: cannot read the parts folder (Permission denied)" in line


def test_merge_counts_every_bad_part(setup):
    path, out, store, jobs = setup
    invoke("run", path, "--out", out)
    for job in jobs[:3]:
        truncate(store.path(job))
    line = one_clean_line(invoke("merge", path, "--set", f"output.path={out}"), 1)
    assert "3 damaged or foreign part(s)" in line and "sweep run" in line


# ---------------------------------------------------------------- unwritable and full disks

def fail_with(code):
    def raiser(*args, **kwargs):
        raise OSError(code, __import__("os").strerror(code))
    return raiser


def test_read_only_output_is_refused_before_any_job_runs(setup, monkeypatch):
    path, out, store, jobs = setup
    computed = []
    monkeypatch.setattr(pathlib.Path, "write_bytes", fail_with(errno.EROFS))
    monkeypatch.setattr(runner, "simulate_batch", lambda *a, **k: computed.append(a))
    line = one_clean_line(invoke("run", path, "--out", out), 1)
    assert "Read-only file system" in line and "res.parts" in line
    assert not computed and not temp_files(out.parent)


def test_disk_full_mid_run_stops_and_keeps_whole_parts(setup, straight, monkeypatch):
    path, out, store, jobs = setup
    real, calls = np.savez, []

    def savez_until_full(f, **arrays):
        calls.append(1)
        if len(calls) > 2:
            f.write(b"PK\x03\x04partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        real(f, **arrays)

    monkeypatch.setattr(np, "savez", savez_until_full)
    line = one_clean_line(invoke("run", path, "--out", out, "--workers", 1), 1)
    assert "No space left on device" in line and "res.parts" in line
    assert sum(store.done(j) for j in jobs) == 2 and not out.exists()
    assert_parts_whole(store, jobs)
    monkeypatch.setattr(np, "savez", real)
    assert invoke("run", path, "--out", out).exit_code == 0
    xr.testing.assert_identical(values(out), straight)


def test_disk_full_while_writing_the_dataset(setup, straight, monkeypatch):
    path, out, store, jobs = setup

    def half_then_full(self):  # the file made and its variables defined, then the disk fills
        pathlib.Path(self.side).write_text("CDF partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(netcdf.BlockWriter, "_copy_coordinates", half_then_full)
        line = one_clean_line(invoke("run", path, "--out", out), 1)
    assert "res.nc: cannot write results (No space left on device)" in line
    assert not out.exists() and not temp_files(out.parent)
    assert_parts_whole(store, jobs)
    assert invoke("merge", path, "--set", f"output.path={out}").exit_code == 0
    xr.testing.assert_identical(values(out), straight)


def test_no_room_for_lock_files(setup, monkeypatch):
    path, out, store, jobs = setup
    monkeypatch.setattr(JobLocks, "_create", fail_with(errno.ENOSPC))
    line = one_clean_line(invoke("run", path, "--out", out), 1)
    assert "cannot create a lock file (No space left on device)" in line
    assert not any(store.done(j) for j in jobs) and not temp_files(out.parent)


def test_output_that_is_a_directory(setup, monkeypatch):
    path, out, store, jobs = setup
    out.mkdir()
    computed = []
    monkeypatch.setattr(runner, "simulate_batch", lambda *a, **k: computed.append(a))
    line = one_clean_line(invoke("run", path, "--out", out), 2)  # a user mistake, at plan time
    assert "is a directory" in line and not computed


# ---------------------------------------------------------------- jobs that blow up or fail

def test_blow_up_job_is_a_result_and_leaves_the_others_intact(tmp_path):
    cfg = {**CFG, "model": {"attention": "unnormalized", "d": 3, "n": 5},
           "grid": {"beta": [1.0, 800.0, 2.0], "seed": [0, 1]}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    result = invoke("run", path, "--out", tmp_path / "all.nc")
    assert result.exit_code == 0, result.output
    assert "non-finite values (status 1)" in result.output and "overflows" in result.output
    ds = values(tmp_path / "all.nc")
    np.testing.assert_array_equal(ds.status, [[0, 0], [1, 1], [0, 0]])
    assert np.isnan(ds.order_parameter.sel(beta=800.0).isel(time=-1)).all()
    clean = tmp_path / "clean.nc"
    invoke("run", path, "--out", clean, "--set", "grid.beta=[1.0, 2.0]")
    xr.testing.assert_identical(ds.sel(beta=[1.0, 2.0]).drop_attrs(),
                                values(clean).drop_attrs())


def test_failed_job_is_recorded_and_the_sweep_goes_on(setup, straight, monkeypatch):
    path, out, store, jobs = setup
    real = sim.simulate

    def fragile(job, *args, **options):
        if job.index == 3:
            raise RuntimeError("singular matrix")
        return real(job, *args, **options)

    monkeypatch.setattr(runner, "simulate_batch", per_job(fragile))
    result = invoke("run", path, "--out", out)
    assert result.exit_code == 1
    assert "job 3" in result.output and "RuntimeError: singular matrix" in result.output
    ds = values(out)
    assert int(ds.status.values.ravel()[3]) == 2
    others = np.arange(6) != 3
    flat = ds.order_parameter.values.reshape(6, -1)
    np.testing.assert_array_equal(flat[others],
                                  straight.order_parameter.values.reshape(6, -1)[others])
    monkeypatch.setattr(runner, "simulate_batch", sim.simulate_batch)
    assert invoke("run", path, "--out", out).exit_code == 0  # a failed job is retried
    xr.testing.assert_identical(values(out), straight)
