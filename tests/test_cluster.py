"""Shards from scheduler variables, status, resume after kill -9, merge refusals, submit."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml

from helpers import SMALL as CFG
from helpers import assert_same_results, invoke, load
from sweep.config import schema as config
from sweep.config.grid import expand, shard
from sweep.errors import ConfigError
from sweep.scheduling import shards
from sweep.scheduling import survey as status
from sweep.storage.store import Store, parts_dir

# ---------------------------------------------------------------- shard variables

@pytest.mark.parametrize(("env", "expected"), [
    ({"SWEEP_SHARD": "2/5"}, (2, 5, "SWEEP_SHARD")),
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "4"},
     (3, 4, "SLURM")),
    # --array=1-4: 1-based ids
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"},
     (0, 4, "SLURM")),
    # qsub -t 1-7:2 -> tasks 1, 3, 5, 7
    ({"SGE_TASK_ID": "5", "SGE_TASK_FIRST": "1", "SGE_TASK_LAST": "7",
      "SGE_TASK_STEPSIZE": "2"}, (2, 4, "SGE")),
    ({"PBS_ARRAY_INDEX": "0", "SWEEP_SHARDS": "3"}, (0, 3, "PBS")),
    ({"LSB_JOBINDEX": "3", "SWEEP_SHARDS": "3"}, (2, 3, "LSF")),  # bsub -J name[1-3]
    # SWEEP_SHARD overrides any scheduler
    ({"SWEEP_SHARD": "0/2", "SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0",
      "SLURM_ARRAY_TASK_COUNT": "4"}, (0, 2, "SWEEP_SHARD")),
])
def test_shard_from_each_scheduler(env, expected):
    found = shards.shard_from_env(env)
    assert (found.index, found.count, found.source) == expected


def test_no_array_means_the_whole_sweep():
    assert shards.shard_from_env({}) is None
    assert shards.shard_from_env({"SGE_TASK_ID": "undefined", "PATH": "/bin"}) is None
    assert shards.resolve_shard(None, {}) is None


@pytest.mark.parametrize(("env", "named"), [
    ({"SLURM_ARRAY_TASK_ID": "3"}, "SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT"),
    ({"SGE_TASK_ID": "2", "SGE_TASK_FIRST": "1"}, "SGE_TASK_LAST, SGE_TASK_STEPSIZE"),
    ({"PBS_ARRAY_INDEX": "2"}, "SWEEP_SHARDS"),
    ({"LSB_JOBINDEX": "2"}, "SWEEP_SHARDS"),
    ({"LSB_JOBINDEX": "5", "SWEEP_SHARDS": "3"}, "LSB_JOBINDEX and SWEEP_SHARDS"),
    # a resubmitted subset (--array=2,5): MIN shifts the ids, which must not be guessed at
    ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "2", "SLURM_ARRAY_TASK_COUNT": "2"},
     "SLURM_ARRAY_TASK_COUNT"),
    ({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "2"},
     "not integers"),
    ({"SWEEP_SHARD": "4/4"}, "SWEEP_SHARD"),
])
def test_incomplete_or_inconsistent_variables_are_errors(env, named):
    with pytest.raises(ConfigError, match=named):
        shards.shard_from_env(env)


def test_command_line_shard_wins_over_the_environment():
    found = shards.resolve_shard("1/3", {"SWEEP_SHARD": "0/2"})
    assert (found.index, found.count, found.source) == (1, 3, "--shard")


def test_workers_follow_the_task_allocation():
    cpus = len(os.sched_getaffinity(0))
    assert shards.task_cpus({}) == cpus
    assert shards.task_cpus({"SLURM_CPUS_PER_TASK": "1"}) == 1
    assert shards.task_cpus({"NSLOTS": str(cpus + 64)}) == cpus


@pytest.mark.parametrize("digits", ["\u00b2", "\u0663", "1_0", "\uff13", "", "2.0"])
def test_only_ascii_digits_count_as_numbers(cfg_path, digits):
    """str.isdigit() takes a superscript two, int() takes Arabic-Indic digits and 1_0: each
    is a one-line error from --shard, SWEEP_SHARD, the array and the CPU-count variables."""
    run = ("run", cfg_path)
    cases = [(run + ("--shard", f"{digits}/4"), None), (run, {"SWEEP_SHARD": f"1/{digits}"}),
             (run, {"PBS_ARRAY_INDEX": "1", "SWEEP_SHARDS": digits}),
             (run, {"SLURM_ARRAY_TASK_ID": digits, "SLURM_ARRAY_TASK_MIN": "0",
                    "SLURM_ARRAY_TASK_COUNT": "2"}),
             (("plan", cfg_path), {"SLURM_CPUS_PER_TASK": digits}),
             (("plan", cfg_path), {"NSLOTS": digits})]
    for args, env in cases:
        if not digits and env and "SWEEP_SHARD" not in env:
            continue  # an empty variable is an unset one
        result = invoke(*args, env=env)
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit), args
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output


def test_array_spec():
    assert status.array_spec([5, 0, 1, 2, 8, 7]) == "0-2,5,7-8"
    assert status.array_spec([3]) == "3"


# ---------------------------------------------------------------- shards end to end

def test_shards_from_the_environment_merge_to_the_unsharded_result(cfg_path, tmp_path):
    whole = tmp_path / "whole.nc"
    assert invoke("run", cfg_path, "--out", whole).exit_code == 0
    out = tmp_path / "sharded.nc"
    k, n_jobs = 4, 6
    done = 0
    for i in range(k):  # SGE-style 1-based ids
        env = {"SGE_TASK_ID": str(i + 1), "SGE_TASK_FIRST": "1", "SGE_TASK_LAST": str(k),
               "SGE_TASK_STEPSIZE": "1"}
        result = invoke("run", cfg_path, "--out", out, env=env)
        assert result.exit_code == 0, result.output
        assert f"shard {i} of {k} (from SGE)" in result.output
        assert not out.exists()  # a task writes its parts only
        done += len(range(i, n_jobs, k))
        assert len(list(parts_dir(out).glob("*.npz"))) == done
    assert invoke("merge", cfg_path, "--set", f"output.path={out}").exit_code == 0
    assert_same_results(load(out), load(whole))


def test_more_shards_than_jobs(cfg_path, tmp_path):
    jobs = expand(config.load(cfg_path))
    assert shard(jobs, 6, 10) == [] and len(shard(jobs, 5, 10)) == 1
    out = tmp_path / "x.nc"
    result = invoke("run", cfg_path, "--out", out, env={"SWEEP_SHARD": "8/10"})
    assert result.exit_code == 0 and "0 job(s) run" in result.output
    assert not list(parts_dir(out).glob("*.npz")) and not out.exists()


# ---------------------------------------------------------------- status, retries

def test_status_lists_missing_and_failed_and_the_shards_to_rerun(cfg_path, tmp_path):
    out = tmp_path / "x.nc"
    invoke("run", cfg_path, "--out", out)
    cfg = config.load(cfg_path)
    jobs, store = expand(cfg), Store(cfg, out)
    store.path(jobs[1]).unlink()
    store.write_failure(jobs[4], "FloatingPointError: boom", 0.1)
    result = invoke("status", cfg_path, "--set", f"output.path={out}", "--shards", 3)
    assert result.exit_code == 0, result.output
    assert "4 completed, 1 missing, 1 failed" in result.output
    assert "missing: 1" in result.output and "boom" in result.output
    assert "--array=1" in result.output  # jobs 1 and 4 are both in shard 1 of 3
    result = invoke("status", cfg_path, "--set", f"output.path={out}", "--shards", 2)
    assert "--array=0-1" in result.output
    assert "--shards K" in invoke("status", cfg_path, "--set", f"output.path={out}").output
    store.path(jobs[0]).write_bytes(store.path(jobs[2]).read_bytes()[:100])  # cut short
    result = invoke("status", cfg_path, "--set", f"output.path={out}", "--shards", 3)
    assert result.exit_code == 0 and "1 damaged" in result.output
    assert "damaged: job 0" in result.output and "--array=0-1" in result.output


def test_only_failed_retries_failed_jobs_only(cfg_path, tmp_path):
    out = tmp_path / "x.nc"
    invoke("run", cfg_path, "--out", out)
    cfg = config.load(cfg_path)
    jobs, store = expand(cfg), Store(cfg, out)
    before = load(out)
    store.path(jobs[0]).unlink()
    store.write_failure(jobs[3], "RuntimeError: node died", 0.1)
    result = invoke("run", cfg_path, "--out", out, "--only-failed")
    assert result.exit_code == 0, result.output
    assert "1 job(s) run" in result.output
    assert store.done(jobs[3]) and store.read(jobs[0]) is None
    invoke("run", cfg_path, "--out", out)
    assert_same_results(load(out), before)


# ---------------------------------------------------------------- merge refusals

def test_merge_refuses_missing_and_foreign_parts(cfg_path, tmp_path):
    out = tmp_path / "x.nc"
    invoke("run", cfg_path, "--out", out)
    cfg = config.load(cfg_path)
    jobs, store = expand(cfg), Store(cfg, out)
    shutil.copy(store.path(jobs[2]), store.path(jobs[5]))  # job 2's part under job 5's name
    result = invoke("merge", cfg_path, "--set", f"output.path={out}")
    assert result.exit_code == 1 and f"holds job {jobs[2].id}, not {jobs[5].id}" in result.output
    store.path(jobs[5]).unlink()
    result = invoke("merge", cfg_path, "--set", f"output.path={out}")
    assert result.exit_code == 1 and "indices 5" in result.output


def test_merge_refuses_a_config_edited_after_the_run(cfg_path, tmp_path):
    out = tmp_path / "x.nc"
    invoke("run", cfg_path, "--out", out)
    old = config.load(cfg_path).hash
    edited = {**CFG, "model": {**CFG["model"], "n": 7}}
    cfg_path.write_text(yaml.safe_dump(edited, sort_keys=False))
    for extra in ((), ("--allow-missing",)):
        result = invoke("merge", cfg_path, "--set", f"output.path={out}", *extra)
        assert result.exit_code == 1
        assert "config changed after the run" in result.output and old in result.output
    # a grid that only shrank reuses the parts of the jobs it kept, into its own file or,
    # with --force, in place of the larger grid's
    cfg_path.write_text(yaml.safe_dump({**CFG, "grid": {"beta": [1.0], "seed": [1]}}))
    assert invoke("merge", cfg_path, "--set", f"output.path={out}").exit_code == 2
    assert invoke("merge", cfg_path, "--set", f"output.path={out}", "--force").exit_code == 0
    assert load(out).sizes["beta"] == 1


# ---------------------------------------------------------------- resume after kill -9

def test_kill_9_midway_then_resume_gives_identical_results(tmp_path):
    cfg = {**CFG, "model": {**CFG["model"], "n": 48},
           "integrate": {**CFG["integrate"], "t_max": 40.0, "dt": 0.05},
           "grid": {"beta": [0.0, 1.0, 2.0, 4.0], "seed": {"range": [0, 6]}}}
    path = tmp_path / "kill.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "killed.nc"
    cmd = [sys.executable, "-m", "sweep", "run", str(path), "--out", str(out), "--workers", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parts = parts_dir(out)
    deadline = time.monotonic() + 120
    while len(list(parts.glob("*.npz"))) < 2 and proc.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    written = len(list(parts.glob("*.npz")))
    assert 0 < written < 24 and not out.exists()  # really killed midway
    result = invoke("run", path, "--out", out)
    assert result.exit_code == 0 and f"{written} job(s) already complete" in result.output
    clean = tmp_path / "clean.nc"
    assert invoke("run", path, "--out", clean, "--workers", 2).exit_code == 0
    assert_same_results(load(out), load(clean))
