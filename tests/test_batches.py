"""Jobs run in batches (one compiled call, one part file each): the numbers never depend on
how the jobs were cut, and resume, status and merge still work job by job."""

import numpy as np
import pytest

from helpers import SMALL, invoke, merged
from sweep.config import schema as config
from sweep.config.grid import expand, shard
from sweep.execution import runner
from sweep.storage.parts import INDEX
from sweep.storage.store import Store

CFG = {**SMALL, "model": {**SMALL["model"], "d": 3},  # lanes
       "integrate": {**SMALL["integrate"], "method": "layer"},
       "grid": {"beta": [0.0, 1.0, 4.0], "seed": {"range": [0, 4]}}}  # 12 jobs


def merged_after(tmp_path, name, runs):
    """The dataset after `runs`: (jobs selector, batch size, workers) run in turn."""
    cfg = config.from_dict(CFG)
    jobs, store = expand(cfg), Store(cfg, tmp_path / f"{name}.nc")
    for pick, batch, workers in runs:
        report = runner.run(pick(jobs), store, batch=batch, workers=workers)
        assert not report.failed
    return merged(store, jobs)


def assert_same_numbers(a, b):
    for name in a.data_vars:
        if name != "wall_seconds":
            np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def test_batch_size_workers_shards_and_resume_change_no_bit(tmp_path):
    one_by_one = merged_after(tmp_path, "single", [(list, 1, 1)])
    cases = {"whole": [(list, 12, 1)], "fives": [(list, 5, 2)],
             "shards": [(lambda j: shard(j, 0, 3), 3, 1), (lambda j: shard(j, 1, 3), 2, 2),
                        (lambda j: shard(j, 2, 3), 4, 1)],
             "resumed": [(lambda j: list(j)[:7], 7, 1), (list, 12, 2)]}
    for name, runs in cases.items():
        assert_same_numbers(merged_after(tmp_path, name, runs), one_by_one)


def test_batched_parts_resume_and_report_job_by_job(tmp_path):
    cfg = config.from_dict(CFG)
    jobs, out = expand(cfg), tmp_path / "b.nc"
    store = Store(cfg, out)
    report = runner.run(jobs, store, batch=4)
    parts = sorted(store.dir.glob("*.npz"))
    assert report.completed == 12 and len(parts) == 3 and (store.dir / INDEX).is_file()
    straight = merged(store, jobs)
    store.write_failure(jobs[5], "RuntimeError: node died", 0.1)  # a newer part for job 5
    (store.dir / INDEX).unlink()  # only a cache: the parts are read again
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(config.from_dict(CFG).to_yaml())
    status = invoke("status", cfg_path, "--set", f"output.path={out}")
    assert "11 completed, 0 missing, 1 failed" in status.output, status.output
    rerun = runner.run(jobs, Store(cfg, out), batch=4)
    assert (rerun.skipped, rerun.completed) == (11, 1)
    held = store.path(jobs[9])
    held.write_bytes(held.read_bytes()[:200])  # a batch of jobs 8..11 cut short
    status = invoke("status", cfg_path, "--set", f"output.path={out}")
    assert ", 4 damaged" in status.output and "damaged: job 8" in status.output
    fixed = runner.run(jobs, Store(cfg, out), batch=4)
    assert (fixed.skipped, fixed.completed, len(fixed.damaged)) == (8, 4, 1)
    assert_same_numbers(merged(Store(cfg, out), jobs), straight)


# lanes (d <= 3) come 32 (LANES_BATCH) to a batch where each thread still gets four such
# batches, else 8 (LANES_MIN) where it gets four of those, and 8 too where it does not (a
# block of lanes costs about as much for one system as for eight); more where there are so
# many that count / (16 threads) is larger
@pytest.mark.parametrize("count,width,size", [(6, 2, 8), (100_000, 2, 256), (31, 1, 8),
                                              (32, 1, 8), (127, 1, 8), (128, 1, 32),
                                              (256, 1, 32), (256, 2, 32), (255, 2, 8),
                                              (63, 2, 8), (64, 2, 8), (1024, 2, 32),
                                              (4096, 1, 256), (1, 4, 8)])
def test_batch_sizes(count, width, size):
    job = expand(config.from_dict({**CFG, "model": {"n": 4, "d": 2}}))[0]
    assert runner.batch_size(job, count, width, "none") == size


def test_long_lanes_jobs_still_come_a_block_to_a_batch():
    """A batch holds about BATCH_SECONDS of nominal work, but lanes never fewer than a block
    of 8: one system takes a block about as long as eight. A job on another path comes alone."""
    long = {**CFG, "integrate": {"method": "euler", "dt": 0.01, "t_max": 1e5, "save_every": 1e4}}
    lanes = expand(config.from_dict({**long, "model": {"n": 64, "d": 3}}))[0]
    rows = expand(config.from_dict({**long, "model": {"n": 64, "d": 4}}))[0]
    for job in (lanes, rows):
        plan = runner.kernel_plan(job)
        assert runner.job_flop(job) / plan.strategy.flops > runner.BATCH_SECONDS
    assert [runner.batch_size(j, 1000, 2, "none") for j in (lanes, rows)] == [8, 1]


# ---------------------------------------------------------------- output.observables

@pytest.mark.parametrize("model", [{}, {"heads": 2}], ids=["rows", "general"])
@pytest.mark.parametrize("asked", [["clustered_fraction"], ["mean_cosine", "clustered_fraction"],
                                   ["order_parameter", "n_clusters"],
                                   ["n_clusters", "energy"]])
def test_observables_asked_are_the_bits_of_a_full_run(tmp_path, model, asked):
    base = {**CFG, "model": {**CFG["model"], **model}}
    full = merged_from(tmp_path / "full.nc", base)
    some = merged_from(tmp_path / "some.nc", {**base, "output": {"observables": asked}})
    series = {name for name in some.data_vars if "time" in some[name].dims}
    assert series == set(asked)
    assert ("t_cluster" in some) == ("clustered_fraction" in asked)
    assert ("max_clusters" in some) == ("n_clusters" in asked)
    for name in asked:
        np.testing.assert_array_equal(some[name].values, full[name].values, err_msg=name)


def merged_from(out, raw):
    cfg = config.from_dict(raw)
    store, jobs = Store(cfg, out), expand(cfg)
    assert not runner.run(jobs, store).failed
    return merged(store, jobs)


@pytest.mark.parametrize("value,word", [(["clustered_fraction", "entropy"], "'entropy'"),
                                        ([], "non-empty list"), ("some", "all or"),
                                        (["energy", "energy"], "distinct")])
def test_unknown_observables_are_refused_naming_the_key(tmp_path, value, word):
    path = tmp_path / "c.yaml"
    path.write_text(config.from_dict(CFG).to_yaml())
    result = invoke("plan", path, "--set", f"output.observables={value!r}".replace("'", '"'))
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: output.observables:") and word.strip("'") in line, line
