"""Status, job arrays and compiling ahead: the library behind `sweep status`, `submit` and
`compile` (sweep/cli/scheduling.py)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.api.sweeping import output, store
from sweep.api.training import training_output
from sweep.config.grid import expand
from sweep.config.schema import Config
from sweep.errors import ConfigError, SweepWarning
from sweep.execution.kernel import variants

if TYPE_CHECKING:
    from sweep.scheduling.survey import Survey
    from sweep.storage.store import Store


def compile_kernels(config: Config, compiling=lambda variants, seconds: None) -> list[str]:
    """Compile exactly the kernel variants the config's jobs call into the compile cache,
    before many tasks start at once, side by side on this process's CPUs; returns their
    names (KernelPlan.variant). A training config (load_training) compiles those its
    observed runs call. compiling(names, seconds) is called first with those the cache does
    not hold yet, if any, and about how long they take."""
    from sweep.execution.compiling import warm_up
    from sweep.execution.resources import available_cpus

    jobs = expand(getattr(config, "config", config))
    warm_up(jobs, compiling, available_cpus())
    return list(variants(jobs))


@dataclass(frozen=True)
class Status:
    """What a config's parts folder holds, and what to resubmit."""

    config: Config
    store: Store
    survey: Survey
    shards: int | None          # K of the array the rerun list is for (None: not known)
    rerun: list[int]            # shards of K holding a job to redo
    array: str                  # those shards as an array range, e.g. "0-2,5"
    resubmit: list[str]         # the commands that resubmit them, then the merge
    merged: str = ""            # the merged dataset: not written yet, or which config it holds

    @property
    def complete(self) -> bool:
        s = self.survey
        return not (s.missing or s.failed or s.damaged)


def status(config: Config, out: str | Path | None = None,
           shards: int | None = None) -> Status:
    """Completed, missing, failed and damaged jobs, and the shards of a K-task array to
    rerun (K: `shards`, else that of the last `sweep submit` for this output). `out` (default
    output.path) is the results file, its parts beside it, as for `run` and `merge`."""
    from sweep.scheduling import scripts, survey

    where = store(config, out)
    found = survey.survey(expand(config), where)
    record = scripts.submitted(where.output) or {}
    k = shards or record.get("shards")
    rerun = found.rerun(k) if k else []
    lines = []
    if rerun and record.get("shards") == k and scripts.rerun_script(record, where.output).is_file():
        lines = scripts.rerun_lines(record, rerun, where.output)
    merged = survey.merged_state(where.output, config.hash)
    return Status(config, where, found, k, rerun, survey.array_spec(rerun), lines, merged)


@dataclass(frozen=True)
class Submission:
    """A job array and its merge job: the scripts, and the ids the scheduler gave them."""

    scripts: dict[Path, str]        # the array script and the merge script, by path
    jobs: int                       # jobs of the config (a refinement: left in the round)
    ids: tuple[str, str] | None     # (array id, merge id); None for a dry run
    plan: object                    # sweep.scheduling.scripts.Plan: paths, logs, output
    round: int | None = None        # a refinement: the round the array runs
    refined: Path | None = None     # a refinement with every round done: its file

    @property
    def commands(self) -> list[str]:
        """How the scripts are (or were) submitted: the array, then the merge job (a
        refinement: the driver) on it."""
        from sweep.scheduling import scripts

        return scripts.submit_lines(self.plan, tuple(self.scripts) if self.scripts else None)


def submit(config: Config, shards: int, out: str | Path | None = None,
           parallel: int | None = None, workers: int | None = None,
           scheduler: str = "slurm", scheduler_args: list[str] | None = None,
           dry_run: bool = False, env_lines: list[str] | None = None,
           refine: dict | None = None, cpus: int | None = None,
           memory: str | None = None) -> Submission:
    """Write a job-array script of `shards` tasks and a merge job for the config's file,
    compile its kernels into the compile cache, and submit both (`sweep submit`); with
    dry_run, only make the scripts. env_lines: shell lines both scripts run first
    (`module load ...`, `source ...`). cpus and memory ('4G'): what each task asks for
    (default: `workers` CPUs, else 1, and the memory the plan says that many running jobs
    need, sweep.scheduling.requests). SchedulerError (a ConfigError) if the scheduler refuses.
    refine: a refinement instead (refine_rounds' keywords: var, level, along, tol, ...): the
    array of its first round not done and a driver job that submits the next
    (sweep/scheduling/rounds.py); `out` is then where the refinement is written."""
    from sweep.scheduling import scripts

    if refine is not None:
        return _submit_refine(config, shards, refine, out, parallel, workers, scheduler,
                              scheduler_args, dry_run, env_lines, cpus, memory)
    training = not isinstance(config, Config)  # a training config: its tasks run sweep train
    if training:
        points = math.prod(len(a) for a in config.axes)
        config = config.config
        out = training_output(config, out)
    if config.source is None:
        raise ConfigError("submit: the array's tasks read a config file; load one from a file")
    layer_jobs = expand(config)
    jobs = len(layer_jobs) * (points if training else 1)
    if shards > jobs:
        warnings.warn(f"{shards} shards for {jobs} job(s); shards {jobs} to {shards - 1} have "
                      "nothing to do", SweepWarning, stacklevel=2)
    wanted = task_requests(config, layer_jobs, -(-jobs // shards), cpus or workers or 1,
                           memory)
    made = scripts.make_plan(config.name, config.source, list(config.overrides),
                             output(config, out), shards, parallel, workers, scheduler_args,
                             scheduler, "train" if training else "run", env_lines, wanted)
    texts = dict(zip(made.scripts, (scripts.array_script(made), scripts.merge_script(made))))
    ids = None if dry_run else scripts.submit(made, config.hash)
    return Submission(texts, jobs, ids, made)


def _submit_refine(config: Config, shards: int, refine: dict, out, parallel, workers,
                   scheduler: str, scheduler_args, dry_run: bool, env_lines, cpus,
                   memory) -> Submission:
    """The array of the refinement's first round not done, and its driver (rounds.py)."""
    from sweep.api.refining import refine_rounds
    from sweep.scheduling import rounds, scripts

    if config.source is None:
        raise ConfigError("submit: the array's tasks read a config file; load one from a file")
    done = refine_rounds(config, **refine, out=out, compute=False)  # checks the question
    tasks = max(1, min(shards, done.pending))
    wanted = task_requests(config, expand(config), -(-done.pending // tasks),
                           cpus or workers or 1, memory)
    made = scripts.make_plan(config.name, config.source, list(config.overrides),
                             output(config, None), tasks, parallel, workers, scheduler_args,
                             scheduler, "refine", env_lines, wanted)
    if done.dataset is not None:  # every round is done: the refinement is written
        return Submission({}, 0, None, made, done.rounds, done.path)
    options = rounds.refine_options(refine)
    again = [*(["--parallel", str(parallel)] if parallel else []),
             *(["--workers", str(workers)] if workers else []),
             *(["--cpus", str(cpus)] if cpus else []),
             *(["--mem", memory] if memory else []),
             *(f"--scheduler-arg={a}" for a in scheduler_args or []),
             *(f"--env-line={line}" for line in env_lines or []),
             *(["--out", str(out)] if out else [])]
    paths = rounds.round_paths(made, done.rounds)
    texts = dict(zip(paths, (rounds.round_script(made, done.rounds, options, out and str(out)),
                             rounds.driver_script(made, shards, options, again))))
    ids = None if dry_run else rounds.submit_round(made, done.rounds, texts, config.hash)
    return Submission(texts, done.pending, ids, made, done.rounds)


def task_requests(config: Config, jobs: list, per_task: int, cpus: int,
                  memory: str | None = None) -> tuple:
    """(the array tasks' Request, the merge job's): `cpus` jobs at once in a task holding
    `per_task` jobs, the merge on one CPU; `memory` ('4G') replaces the tasks' estimate."""
    from sweep.execution import resources
    from sweep.scheduling.requests import Request, memory_mib, parse_memory

    need = resources.need(jobs, config.output.positions, cpus, merged=True,
                          bins=config.output.hist_bins)
    task = cpus * need.per_job + per_task * resources.JOB_OBJECT_BYTES
    mib = parse_memory(memory) if memory is not None else memory_mib(task)
    return Request(cpus, mib), Request(1, memory_mib(need.merged))
