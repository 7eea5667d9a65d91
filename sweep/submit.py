"""Job-array and merge scripts for a scheduler, and their submission.

`sweep submit` writes two scripts into `<output>.jobs/`: an array whose task I runs
`sweep run` on shard I of K (parts only), and a merge job that runs `sweep merge` once every
task has succeeded (`afterok`). Nothing stays running on the login node.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sweep.cluster import SchedulerError

SCHEDULERS = ("slurm",)

# Seconds before the time limit at which SLURM sends SIGUSR1, so a task stops cleanly (jobs
# in flight are abandoned, finished parts kept) instead of being killed mid-write.
SIGNAL_LEAD = 120


@dataclass(frozen=True)
class Plan:
    """Everything the scripts need, as absolute paths (tasks may start in any directory)."""

    name: str
    config: Path
    sets: tuple[str, ...]
    output: Path
    shards: int
    parallel: int | None
    workers: int | None
    scheduler_args: tuple[str, ...]
    workdir: Path
    numba_cache: Path

    @property
    def jobs_dir(self) -> Path:
        return jobs_dir(self.output)

    @property
    def logs(self) -> Path:
        return self.jobs_dir / "logs"

    def sweep(self, command: str, *extra: str) -> list[str]:
        """The command line a task execs: this interpreter, so the task gets this install."""
        args = [sys.executable, "-m", "sweep", command, str(self.config)]
        for s in self.sets:
            args += ["--set", s]
        return args + [*extra]


def jobs_dir(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(output.stem + ".jobs")


def make_plan(name: str, config: Path, sets: list[str], output: Path, shards: int,
              parallel: int | None = None, workers: int | None = None,
              scheduler_args: list[str] | None = None) -> Plan:
    for arg in scheduler_args or []:
        if "\n" in arg or not arg.startswith("-"):
            raise SchedulerError(f"--scheduler-arg {arg!r}: expected one option such as "
                                 "--partition=short or --time=02:00:00")
    cwd = Path.cwd()
    cache = os.environ.get("NUMBA_CACHE_DIR") or str(jobs_dir(cwd / output) / "numba-cache")
    return Plan(name, (cwd / config).resolve(), tuple(sets), (cwd / output).resolve(), shards,
                parallel, workers, tuple(scheduler_args or ()), cwd, Path(cache).resolve())


def slurm_array(plan: Plan) -> str:
    """The array script: task I runs shard I of K; rerun some with sbatch --array=LIST."""
    throttle = f"%{plan.parallel}" if plan.parallel else ""
    workers = ("--workers", str(plan.workers)) if plan.workers else ()
    lines = _slurm_head(plan, f"sweep-{plan.name}", f"{plan.logs}/array-%A_%a.out")
    lines.insert(2, f"#SBATCH --array=0-{plan.shards - 1}{throttle}")
    if not any(a.startswith("--signal") for a in plan.scheduler_args):
        lines.insert(3, f"#SBATCH --signal=B:USR1@{SIGNAL_LEAD}")
    return "\n".join(lines + [
        "",
        f"export SWEEP_SHARDS={plan.shards}",
        "# The array's task ids are the shard numbers, also when a subset is resubmitted",
        "# (sbatch --array=1,4 ...), where SLURM_ARRAY_TASK_MIN would shift them.",
        'export SWEEP_SHARD="${SLURM_ARRAY_TASK_ID}/${SWEEP_SHARDS}"',
        f"export NUMBA_CACHE_DIR={shlex.quote(str(plan.numba_cache))}",
        f"exec {shlex.join(plan.sweep('run', '--out', str(plan.output), *workers))}",
        ""])


def slurm_merge(plan: Plan) -> str:
    """The merge script; submitted with --dependency=afterok:<array job>."""
    lines = _slurm_head(plan, f"sweep-{plan.name}-merge", f"{plan.logs}/merge-%j.out")
    return "\n".join(lines + [
        "",
        f"export NUMBA_CACHE_DIR={shlex.quote(str(plan.numba_cache))}",
        f"exec {shlex.join(plan.sweep('merge', '--out', str(plan.output)))}",
        ""])


def _slurm_head(plan: Plan, job_name: str, log: str) -> list[str]:
    return ["#!/bin/bash",
            f"#SBATCH --job-name={job_name}",
            f"#SBATCH --output={log}",
            f"#SBATCH --chdir={plan.workdir}",
            *(f"#SBATCH {arg}" for arg in plan.scheduler_args),
            "set -eu"]


def write_scripts(plan: Plan) -> tuple[Path, Path]:
    """Write both scripts (and the log directory: SLURM fails silently without it)."""
    plan.logs.mkdir(parents=True, exist_ok=True)
    paths = plan.jobs_dir / "array.sbatch", plan.jobs_dir / "merge.sbatch"
    for path, text in zip(paths, (slurm_array(plan), slurm_merge(plan))):
        path.write_text(text)
        path.chmod(0o755)
    return paths


def compile_kernels(plan: Plan) -> None:
    """Compile the kernels once into the tasks' cache before the array starts.

    Many tasks compiling into one empty cache at the same moment can crash; a warm cache is
    only read. A subprocess, because Numba reads NUMBA_CACHE_DIR when it is imported.
    """
    plan.numba_cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(plan.numba_cache)}
    done = subprocess.run(plan.sweep("compile"), env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SchedulerError(f"compiling the kernels failed: {_last_line(done.stderr)}")


def _need_sbatch() -> None:
    if shutil.which("sbatch") is None:
        raise SchedulerError("sbatch not found: is SLURM installed here? (--dry-run prints "
                             "the scripts without submitting)")


def sbatch(script: Path, *options: str) -> str:
    """Submit one script; its job id."""
    done = subprocess.run(["sbatch", "--parsable", *options, str(script)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SchedulerError(f"sbatch {script} refused: {_last_line(done.stderr)}")
    return done.stdout.strip().split(";")[0]


def submit(plan: Plan, config_hash: str) -> tuple[str, str]:
    """Compile, write, submit the array and its merge job; (array id, merge id)."""
    _need_sbatch()
    compile_kernels(plan)
    array, merge = write_scripts(plan)
    array_id = sbatch(array)
    try:
        merge_id = sbatch(merge, f"--dependency=afterok:{array_id}")
    except SchedulerError as err:
        raise SchedulerError(f"{err} (array job {array_id} is submitted; scancel it or "
                             f"submit {merge} yourself)") from None
    record = {"scheduler": "slurm", "shards": plan.shards, "array_job": array_id,
              "merge_job": merge_id, "config_hash": config_hash,
              "submitted": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    (plan.jobs_dir / "submitted.json").write_text(json.dumps(record, indent=1) + "\n")
    return array_id, merge_id


def submitted(output: str | Path) -> dict | None:
    """The record of the last submission for this output, if any."""
    try:
        return json.loads((jobs_dir(output) / "submitted.json").read_text())
    except (OSError, ValueError):
        return None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"
