"""`sweep submit` on a real SLURM cluster: K = 3 array tasks and a merge job.

Needs a reachable SLURM controller whose nodes see this file system (.ci/slurm-up.sh starts a
one-node cluster on localhost). Skipped with the reason otherwise, unless
SWEEP_REQUIRE_SLURM=1 (as in CI), where a missing cluster fails the test.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest
import yaml
from typer.testing import CliRunner

from helpers import assert_same_results, load
from sweep.cli import app

pytestmark = pytest.mark.slurm

CFG = {
    "name": "onslurm",
    "model": {"attention": "softmax", "d": 4, "n": 8},  # rows: a part per job
    "integrate": {"method": "euler", "dt": 0.1, "t_max": 3.0, "save_every": 0.5},
    "grid": {"beta": [0.0, 1.0, 4.0, 9.0], "seed": {"range": [0, 2]}},
}
ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED"}


def _why_not() -> str | None:
    """None when the test may submit: a cluster answers and it is the local test cluster
    (or SWEEP_REQUIRE_SLURM=1 asks for whichever answers: jobs must see this /tmp)."""
    if shutil.which("sbatch") is None:
        return "SLURM is not installed (no sbatch)"
    probe = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True,
                           timeout=60)
    if probe.returncode != 0:
        return f"no SLURM controller reachable ({probe.stderr.strip()[-200:]})"
    name = next((line.split("=", 1)[1].strip() for line in probe.stdout.splitlines()
                 if line.startswith("ClusterName")), "?")
    if name != "sweepci" and os.environ.get("SWEEP_REQUIRE_SLURM") != "1":
        return f"SLURM cluster {name!r} is not the local test cluster of .ci/slurm-up.sh"
    return None


@pytest.fixture(scope="module")
def slurm():
    reason = _why_not()
    if reason and os.environ.get("SWEEP_REQUIRE_SLURM") == "1":
        pytest.fail(f"{reason}, but SWEEP_REQUIRE_SLURM=1")
    if reason:
        pytest.skip(f"{reason}; .ci/slurm-up.sh starts one")


def sweep(*args, cwd):
    """The installed command, as a user would run it on the login node."""
    done = subprocess.run([sys.executable, "-m", "sweep", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def wait(job_ids, timeout=300.0) -> dict[str, str]:
    """Block until none of the jobs (array tasks included) is queued or running; their states.

    Polls squeue: the cluster keeps finished jobs for MinJobAge and has no accounting (sacct).
    """
    deadline = time.monotonic() + timeout
    while True:
        q = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(job_ids),
                            "-o", "%i %T"], capture_output=True, text=True)
        states = dict(line.split() for line in q.stdout.splitlines() if line.strip())
        if q.returncode == 0 and states and not ACTIVE & set(states.values()):
            return states
        if time.monotonic() > deadline:
            pytest.fail(f"jobs {job_ids} not finished after {timeout} s: {states}")
        time.sleep(0.5)


def logs_of(directory) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text()}" for p in sorted(directory.glob("*")))



def test_submit_k3_merges_to_the_unsharded_result(slurm, tmp_path):
    cfg = tmp_path / "onslurm.yaml"
    cfg.write_text(yaml.safe_dump(CFG, sort_keys=False))
    sweep("submit", cfg, "--shards", 3, "--parallel", 2, "--scheduler-arg=--time=00:10:00",
          cwd=tmp_path)
    jobs = tmp_path / "results" / "onslurm.jobs"
    record = yaml.safe_load((jobs / "submitted.json").read_text())
    states = wait([record["array_job"], record["merge_job"]])
    logs = logs_of(jobs / "logs")
    assert set(states.values()) == {"COMPLETED"} and len(states) == 4, f"{states}\n{logs}"
    assert len(list((jobs / "logs").glob("array-*_*.out"))) == 3, logs

    local = tmp_path / "local.nc"
    assert CliRunner().invoke(app, ["run", str(cfg), "--out", str(local)]).exit_code == 0
    merged = tmp_path / "results" / "onslurm.nc"
    assert_same_results(load(merged), load(local))

    # a shard lost with its node: status names it, resubmitting that one task repairs it
    ids = [json.loads(line)["id"] for line in sweep("plan", cfg, "--json", cwd=tmp_path)
           .splitlines()]
    for index in (1, 7):
        (tmp_path / "results" / "onslurm.parts" / f"{ids[index]}.npz").unlink()
    status = sweep("status", cfg, cwd=tmp_path)
    assert "2 missing" in status and "--array=1" in status, status
    again = subprocess.run(["sbatch", "--parsable", "--array=1", str(jobs / "array.sbatch")],
                           capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert set(wait([again.stdout.strip()]).values()) == {"COMPLETED"}, logs_of(jobs / "logs")
    assert "shards to rerun (K=3): none" in sweep("status", cfg, cwd=tmp_path)
    sweep("merge", cfg, cwd=tmp_path)
    assert_same_results(load(merged), load(local))


def test_array_variables_as_slurm_sets_them(slurm, tmp_path):
    """The SLURM formula of docs/cluster.md on a 1-based array, and workers from --cpus-per-task."""
    probe = ("from sweep.scheduling.shards import shard_from_env, task_cpus; s = shard_from_env(); "
             "print(s.index, s.count, s.source, task_cpus())")
    logs = tmp_path / "logs"
    logs.mkdir()
    done = subprocess.run(["sbatch", "--parsable", "--array=1-3", "--cpus-per-task=1",
                           f"--output={logs}/%a.out", "--wrap",
                           f"{shlex.quote(sys.executable)} -c {shlex.quote(probe)}"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    wait([done.stdout.strip()])
    seen = {(logs / f"{task}.out").read_text().strip() for task in (1, 2, 3)}
    assert seen == {"0 3 SLURM 1", "1 3 SLURM 1", "2 3 SLURM 1"}, logs_of(logs)
