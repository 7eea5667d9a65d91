"""`sweep submit --refine`: one job array per round and a driver job that submits the next;
a refinement run round by round by array tasks is the refinement `sweep refine` makes."""

import numpy as np
import pytest
from test_refine import ASK, CFG, assert_same
from test_submit import fake_submitter

from helpers import invoke
from sweep import api
from sweep.config import schema as config
from sweep.scheduling.scripts import SCHEDULERS

OPTIONS = "--var clustered_fraction --level 0.3 --along beta --tol 0.5"
QUESTION = {"var": "clustered_fraction", "level": 0.3, "along": "beta", "tol": 0.5}


@pytest.fixture
def refine_path(tmp_path):
    path = tmp_path / "refine.yaml"
    path.write_text(config.from_dict({**CFG, "output": {"path": "results/r.nc"}}).to_yaml())
    return path


@pytest.mark.parametrize(("name", "array", "depend"), [
    ("slurm", "#SBATCH --array=0-3", "sbatch --parsable --dependency=afterok:ARRAY_ID {driver}"),
    ("sge", "#$ -t 1-4", "qsub -terse -hold_jid ARRAY_ID {driver}"),
    ("pbs", "#PBS -J 0-3", "qsub -W depend=afterok:ARRAY_ID {driver}"),
])
def test_dry_run_prints_the_first_round_and_its_driver(refine_path, tmp_path, monkeypatch,
                                                       name, array, depend):
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", refine_path, "--shards", 4, "--dry-run", "--scheduler", name,
                    "--workers", 2, "--refine", OPTIONS)
    assert result.exit_code == 0, result.output
    _, round_text, driver_text, commands = result.output.split("# ---- ")
    jobs, suffix = tmp_path / "results" / "r.jobs", SCHEDULERS[name].suffix
    assert round_text.startswith(f"{jobs}/round-0.{suffix}\n#!/bin/bash\n")
    assert array in round_text and "export SWEEP_SHARDS=4" in round_text
    assert (f"-m sweep refine {refine_path} {OPTIONS} --direction any --round 0 --workers 2"
            in round_text)
    assert driver_text.startswith(f"{jobs}/refine-driver.{suffix}\n")
    assert (f"-m sweep submit {refine_path} --shards 4 --scheduler {name} --workers 2 "
            f"--refine '{OPTIONS} --direction any'" in driver_text)
    assert "SHARD" not in driver_text and array not in driver_text  # a plain job
    assert commands.strip().splitlines()[-1] == depend.format(
        driver=jobs / f"refine-driver.{suffix}")
    assert not (tmp_path / "results").exists()  # a dry run writes nothing


def test_rounds_run_by_array_tasks_give_the_refinement_of_one_process(refine_path, tmp_path,
                                                                       monkeypatch):
    """Each round as the scheduler would run it: the driver's submit says which round and
    how many tasks, each task runs its shard of that round alone; then the driver finds
    every round done and writes the refinement."""
    monkeypatch.chdir(tmp_path)
    cfg = api.load(refine_path)
    computed, rounds = 0, []
    for _ in range(30):
        sub = api.submit(cfg, 3, refine=QUESTION, dry_run=True)
        if sub.refined is not None:
            break
        rounds.append(sub.round)
        for i in range(sub.plan.shards):
            done = api.refine_rounds(cfg, **QUESTION, shard=(i, sub.plan.shards),
                                     only=sub.round, workers=1)
            assert done.dataset is None and done.rounds == sub.round + (i == sub.plan.shards - 1)
            computed += done.computed
    assert rounds == list(range(len(rounds))) and len(rounds) >= 3
    ds = api.open_results(sub.refined)
    assert computed == ds.sizes["sample"]  # every job computed once, by its round's task
    alone = api.refine_rounds(config.from_dict(
        {**CFG, "output": {"path": str(tmp_path / "alone.nc")}}), **ASK)
    assert alone.computed == computed
    assert_same(ds, api.open_results(alone.path))
    np.testing.assert_array_equal(ds.threshold.values, alone.dataset.threshold.values)


def test_a_task_of_a_later_round_waits_for_the_rounds_before(refine_path, tmp_path,
                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = api.load(refine_path)
    early = api.refine_rounds(cfg, **QUESTION, only=1)
    assert early.dataset is None and early.computed == 0 and early.pending == 12
    assert "round 0: 12 job(s) are not done yet" in early.waiting


def test_submit_sends_the_round_then_the_driver_on_it(refine_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log = fake_submitter(tmp_path, monkeypatch, "sbatch", "%d;cluster")
    result = invoke("submit", refine_path, "--shards", 3, "--refine", OPTIONS)
    assert result.exit_code == 0, result.output
    assert "round 0: array job 101, 3 task(s) over 12 job(s); driver job 102" in result.output
    jobs = tmp_path / "results" / "r.jobs"
    assert log.read_text().splitlines() == [
        f"--parsable {jobs / 'round-0.sbatch'}",
        f"--parsable --dependency=afterok:101 {jobs / 'refine-driver.sbatch'}"]
    assert (jobs / "logs").is_dir() and '"round": 0' in (jobs / "refine-submitted.json").read_text()


@pytest.mark.parametrize(("options", "message"), [
    ("--var nope", "--var 'nope': not a variable"),
    ("--var clustered_fraction --bogus 1", "--bogus 1': No such option"),
    ("--var clustered_fraction --workers 2", "only the question's options"),
    ("--var 'clustered_fraction", "--refine \"--var 'clustered_fraction\""),
])
def test_bad_refine_options_are_one_line_and_exit_2(refine_path, tmp_path, monkeypatch,
                                                    options, message):
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", refine_path, "--shards", 2, "--dry-run", "--refine", options)
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1
