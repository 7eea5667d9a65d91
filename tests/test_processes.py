"""Faults that need real processes: stop signals, kill -9 mid-write, two runs on one output.

Each test starts `python -m sweep` (or a small script around the CLI) and acts on it once it
has written its first part, so the fault lands in the middle of the sweep.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import xarray as xr
import yaml

from helpers import values
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.storage.store import Store

# ~40 jobs of a few tenths of a second each: long enough to be caught in the middle
SLOW = {
    "name": "slow",
    "model": {"attention": "softmax", "d": 4, "n": 40},
    "integrate": {"method": "euler", "dt": 0.01, "t_max": 20.0, "save_every": 0.5},
    "grid": {"beta": {"linspace": [0.0, 4.0, 10]}, "seed": {"range": [0, 4]}},
}
FAST = {
    "name": "fast",
    "model": {"attention": "softmax", "d": 4, "n": 6},
    "integrate": {"method": "euler", "dt": 0.1, "t_max": 1.0, "save_every": 0.5},
    "grid": {"beta": [0.0, 1.0, 2.0, 4.0], "seed": [0, 1]},
}
WAIT = 120  # seconds before a hung process fails the test (a guard, not a timing check)


def write_config(tmp_path, cfg):
    path = tmp_path / f"{cfg['name']}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def start(*args, script=None):
    cmd = [sys.executable, "-c", script] if script else [sys.executable, "-m", "sweep"]
    return subprocess.Popen(cmd + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=os.getcwd())


def wait_for(predicate, proc=None):
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert proc is None or proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def parts(out):
    folder = out.with_name(out.stem + ".parts")
    return list(folder.glob("*.npz")) if folder.exists() else []


def leftovers(out):
    folder = out.with_name(out.stem + ".parts")
    return [p.name for p in out.parent.rglob("*") if p.suffix in (".tmp", ".lock")
            or p.name.endswith(".broken")], folder


def store_of(path, out):
    cfg = config.load(path)
    return Store(cfg, out), expand(cfg)


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143),
                                         (signal.SIGUSR1, 138)],
                         ids=["SIGINT", "SIGTERM", "SIGUSR1"])
def test_stop_signal_stops_cleanly(tmp_path, signum, code):
    path, out = write_config(tmp_path, SLOW), tmp_path / "res.nc"
    proc = start("run", path, "--out", out, "--workers", 2)
    wait_for(lambda: parts(out), proc)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=WAIT)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr + stdout
    assert f"stopped by {signal.Signals(signum).name}" in stderr
    assert "run the same command again to resume" in stderr
    assert not out.exists() and leftovers(out)[0] == []
    store, jobs = store_of(path, out)
    finished = [j for j in jobs if store.read(j) is not None]  # every part reads whole
    assert 1 <= len(finished) < len(jobs)


KILL_MID_WRITE = textwrap.dedent("""
    import io, os, pathlib, sys, time
    import numpy as np
    from sweep import cli
    real, marker = np.savez, pathlib.Path(sys.argv[1])
    def savez(f, **arrays):  # the third part is cut off half-way, then the process hangs
        if len(list(marker.parent.glob("res.parts/*.npz"))) < 2:
            return real(f, **arrays)
        buf = io.BytesIO()
        real(buf, **arrays)
        f.write(buf.getvalue()[: len(buf.getvalue()) // 2])
        f.flush()
        marker.touch()
        time.sleep(600)
    np.savez = savez
    sys.argv = ["sweep", *sys.argv[2:]]
    cli.main()
""")


def test_kill_9_during_a_write_loses_nothing_finished(tmp_path):
    path, out = write_config(tmp_path, FAST), tmp_path / "res.nc"
    straight = tmp_path / "straight.nc"
    assert subprocess.run([sys.executable, "-m", "sweep", "run", str(path), "--out",
                           str(straight)], capture_output=True).returncode == 0
    marker = tmp_path / "writing"
    proc = start(marker, "run", path, "--out", out, "--workers", 1, script=KILL_MID_WRITE)
    wait_for(marker.exists, proc)
    proc.kill()  # SIGKILL: no handler runs, no cleanup
    proc.communicate(timeout=WAIT)
    store, jobs = store_of(path, out)
    temps = [p.name for p in store.dir.glob(".*.tmp")]
    assert len([t for t in temps if ".owner." not in t]) == 1  # the half-written part
    assert len(temps) == 2  # and the record its lock links to (sweep.storage.locks), cleared below
    assert sum(store.read(j) is not None for j in jobs) == 2  # the finished ones, whole
    rerun = subprocess.run([sys.executable, "-m", "sweep", "run", str(path), "--out", str(out)],
                           capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert "2 job(s) already complete" in rerun.stderr + rerun.stdout
    assert leftovers(out)[0] == []
    xr.testing.assert_identical(values(out), values(straight))


SLOW_WRITER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from sweep import cli
    real = np.savez
    def savez(f, **arrays):  # a slow disk: each job holds its lock for half a second more
        time.sleep(0.5)
        real(f, **arrays)
    np.savez = savez
    sys.argv = ["sweep", *sys.argv[1:]]
    cli.main()
""")


def test_two_runs_on_one_output_share_the_work(tmp_path):
    cfg = {**FAST, "grid": {"beta": [0.0, 1.0, 2.0, 4.0], "seed": {"range": [0, 4]}}}
    path, out = write_config(tmp_path, cfg), tmp_path / "res.nc"
    procs = [start("run", path, "--out", out, "--workers", 1, script=SLOW_WRITER)
             for _ in range(2)]
    outputs = [p.communicate(timeout=4 * WAIT) for p in procs]
    for proc, (stdout, stderr) in zip(procs, outputs):
        assert proc.returncode == 0, stderr
        assert "Traceback" not in stdout + stderr
    run_counts = [int(stdout.split(" job(s) run")[0].split()[-1]) for stdout, _ in outputs]
    store, jobs = store_of(path, out)
    assert sum(run_counts) == len(jobs)  # no job computed twice
    assert min(run_counts) >= 1  # and both took a share
    assert leftovers(out)[0] == []
    assert all(store.done(j) for j in jobs)
    assert int((values(out).status == 0).sum()) == len(jobs)


STALL_IN_MERGE = textwrap.dedent("""
    import pathlib, sys, time
    from sweep import cli
    from sweep.storage import netcdf
    marker = pathlib.Path(sys.argv[1])
    written = netcdf.BlockWriter.write
    def write(self, region, values):  # a block into the temporary file, then a hang
        written(self, region, values)
        marker.touch()
        time.sleep(600)
    netcdf.BlockWriter.write = write
    sys.argv = ["sweep", *sys.argv[2:]]
    cli.main()
""")


def test_sigterm_while_writing_the_dataset_leaves_no_partial_file(tmp_path):
    path, out = write_config(tmp_path, FAST), tmp_path / "res.nc"
    marker = tmp_path / "merging"
    proc = start(marker, "run", path, "--out", out, script=STALL_IN_MERGE)
    wait_for(marker.exists, proc)
    assert [p.name for p in tmp_path.glob(".res.nc.*.tmp")]  # caught mid-write
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=WAIT)
    assert proc.returncode == 143, stderr
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stdout + stderr
    assert not out.exists() and leftovers(out)[0] == []
    store, jobs = store_of(path, out)
    assert all(store.done(j) for j in jobs)


MEMORY_PROBE = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from sweep.kernels.codes import OBSERVABLES
    from sweep.kernels.general.drive import integrate
    from sweep.kernels.general.model import dynamics
    def run(n):
        x = np.zeros((n, 2)); x[:, 0] = 1.0
        integrate(x, dynamics("softmax", 1.0), 0, 0.1, 1, 1e-3,
                  np.zeros((2, len(OBSERVABLES))), np.zeros((0, n, 2)), np.zeros(1, np.int64))
    run(8)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run(int(sys.argv[1]))
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
""")


def test_kernels_never_hold_an_n_by_n_matrix():
    n = 8000  # an n x n float64 matrix would take 512 MB
    probe = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(n)], capture_output=True,
                           text=True, timeout=WAIT)
    assert probe.returncode == 0, probe.stderr
    grown_kib = int(probe.stdout.strip())
    assert grown_kib * 1024 < 0.05 * n * n * 8
