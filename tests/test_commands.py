"""The command line as users expect it: thin commands over the library, readable help,
completion, JSON for scripts, and logs that a scheduler's output file can hold."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import invoke

ROOT = Path(__file__).parents[1]


def sweep(*args, cwd=ROOT):
    """`python -m sweep ARGS` with stdout and stderr going to a file, as in a batch job."""
    log = Path(cwd) / "sweep.log"
    with open(log, "w") as f:
        done = subprocess.run([sys.executable, "-m", "sweep", *map(str, args)], cwd=cwd,
                              stdout=f, stderr=subprocess.STDOUT)
    return done.returncode, log.read_text()


def test_sweep_plan_imports_neither_numba_nor_xarray():
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "sweep", "plan",
                           "configs/demo.yaml"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "320 job(s)" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert {"sweep.cli", "sweep.api", "yaml"} <= imported
    assert not {"numba", "xarray", "matplotlib", "netCDF4"} & imported


def test_a_log_gets_progress_lines_and_unbroken_paths(cfg_path, tmp_path):
    deep = tmp_path / ("a-folder-whose-name-alone-is-longer-than-a-terminal-line-of-eighty-"
                       "columns") / "results-with-a-long-name.nc"
    code, log = sweep("run", cfg_path, "--out", deep, "--workers", 1, cwd=tmp_path)
    assert code == 0, log
    progress = [line for line in log.splitlines() if line.startswith("small: ")]
    assert [line.split(" job(s)")[0] for line in progress] == [
        f"small: {k}/6" for k in range(1, 7)]
    assert all(re.search(r"jobs/s, eta \d+:\d\d:\d\d$", line) for line in progress)
    assert f"results: {deep}\n" in log  # one line, however long
    assert all(len(line) > 80 for line in log.splitlines() if str(deep.parent.name) in line)


def test_help_is_dash_h_and_choices_are_choices(tmp_path):
    for args in (["-h"], ["run", "-h"], ["theory", "equiangular", "-h"]):
        result = invoke(*args)
        assert result.exit_code == 0 and "Usage" in result.output
    assert "--install-completion" in invoke("--help").output
    submit = invoke("submit", "-h").output
    assert "slurm|pbs|lsf|sge" in submit.replace(" ", "")
    assert "--workers" in submit and "N" in submit
    for args in (["submit", "x.yaml", "--shards", 2, "--scheduler", "condor"],
                 ["threshold", "x.nc", "--var", "v", "--direction", "sideways"]):
        result = invoke(*args)
        assert result.exit_code == 2 and "is not one of" in result.output


def test_metavars_read_as_words():
    text = invoke("run", "-h").output
    assert "I/K" in text and "KEY=VALUE" in text and "int range" not in text
    assert "<list[str]>" not in invoke("plan", "-h").output
    for command in (["run"], ["merge"], ["submit"], ["extract"], ["plot"]):  # flags take no value
        assert "<bool>" not in invoke(*command, "-h").output


def test_status_and_threshold_speak_json(cfg_path, tmp_path):
    out = tmp_path / "r.nc"
    invoke("run", cfg_path, "--out", out, "--shard", "0/2")
    found = json.loads(invoke("status", cfg_path, "--set", f"output.path={out}", "--shards", 2,
                              "--json").output)
    assert (found["jobs"], found["completed"], found["missing"]) == (6, 3, [1, 3, 5])
    assert found["rerun"] == [1] and found["shards"] == 2
    invoke("run", cfg_path, "--out", out)
    lines = invoke("threshold", out, "--var", "mean_cosine", "--along", "time", "--level",
                   0.5, "--json").output.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["beta"] for r in rows] == [0.0, 1.0, 4.0]
    assert all(list(r) == ["beta", "threshold", "low", "high"] for r in rows)
    never = [r for r in rows if r["threshold"] is None]  # NaN is null: the JSON stays JSON
    assert all(r["low"] is None and r["high"] is None for r in never)


def test_the_cli_reference_page_is_current():
    from sweep.cli import _docs

    assert (ROOT / "docs" / "cli.md").read_text() == _docs.text(), \
        "docs/cli.md is stale: run `make docs`"


@pytest.mark.parametrize("command", ["plan", "run", "merge", "status", "submit", "compile",
                                     "show", "threshold", "monotone", "plot", "probe",
                                     "extract", "train"])
def test_every_command_is_documented(command):
    assert f"## `sweep {command}`" in (ROOT / "docs" / "cli.md").read_text()


def test_completion_script_names_the_commands():
    env = {**os.environ, "_SWEEP_COMPLETE": "complete_bash", "COMP_WORDS": "sweep thr",
           "COMP_CWORD": "1"}
    done = subprocess.run([Path(sys.executable).parent / "sweep"], env=env,
                          capture_output=True, text=True)
    assert "threshold" in done.stdout
