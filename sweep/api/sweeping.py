"""Configs, plans, runs and merges: the library behind `sweep plan`, `run` and `merge`
(sweep/cli/sweeping.py)."""

from __future__ import annotations

import copy
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.config import grid, schema, usage
from sweep.config.grid import Axis, Job, axes, expand
from sweep.config.schema import Config
from sweep.config.yamltext import apply_overrides
from sweep.errors import ConfigError, Interrupted, SweepWarning
from sweep.execution.kernel import Cost, KernelPlan, cold_compile_seconds, estimate, variants
from sweep.numerics import cache
from sweep.scheduling import shards

if TYPE_CHECKING:
    import xarray

    from sweep.execution.runner import Hooks, RunReport
    from sweep.storage.store import Store


# ---------------------------------------------------------------- configs and plans

def load(source: str | Path | dict, overrides: list[str] | tuple[str, ...] = (), *,
         set: list[str] | tuple[str, ...] | None = None) -> Config:
    """A validated Config from a YAML file or a mapping, with `--set` style overrides
    ("model.beta=2.5", YAML-typed). ConfigError names the offending key or file. A mapping's
    relative input paths resolve against the working directory, a file's against the file.
    `set=` is the former name of `overrides` (deprecated)."""
    overrides = renamed_overrides(overrides, set)
    if isinstance(source, dict):
        raw = apply_overrides(copy.deepcopy(source), overrides)
        return schema.from_dict(raw, overrides=tuple(overrides))
    return schema.load(source, overrides)


def renamed_overrides(overrides, set_) -> list[str]:
    """`overrides`, or the deprecated `set=` that preceded it (with a DeprecationWarning)."""
    if set_ is None:
        return list(overrides)
    if overrides:
        raise ConfigError("give overrides= or its former name set=, not both")
    warnings.warn("set= is deprecated: call with overrides=", DeprecationWarning, stacklevel=3)
    return list(set_)


@dataclass(frozen=True)
class Plan:
    """What running a config will do, before anything runs."""

    config: Config
    jobs: list[Job]
    axes: list[Axis]
    cost: Cost
    kernels: dict[str, KernelPlan]  # the compiled variants the jobs call, by name
    cold: list[str]                 # the variants the compile cache does not hold yet
    workers: int                    # jobs at once: this task's CPUs, or fewer if memory says
    output: Path

    @property
    def compile_seconds(self) -> float:
        """About how long the cold variants take to compile (once, then they are cached)."""
        return cold_compile_seconds(self.cold, self.workers)

    @property
    def overridden(self) -> list[str]:
        """The section values an axis overrides (`model.n = 8 overridden by grid.n`)."""
        return usage.overridden(self.config, self.axes)


def plan(config: Config, out: str | Path | None = None, workers: int | None = None) -> Plan:
    """Expand the grid and cost it: jobs, axes, flops, memory, time, kernels to compile.
    ConfigError if the grid is invalid or one job (or the merged dataset) cannot fit in
    memory; a SweepWarning per unstable step size and when fewer jobs fit at once."""
    jobs = expand(config)
    width = preflight(config, jobs, workers or shards.task_cpus(), merged=True)
    kernels = variants(jobs)
    return Plan(config, jobs, axes(config), estimate(jobs, config.output.positions,
                                                       config.output.hist_bins), kernels,
                [name for name in kernels if not cache.holds(name)], width,
                output(config, out))


def _check_parts(where: Store, jobs, force: bool) -> None:
    """ConfigError if, with no results file yet, the parts folder holds jobs this config
    does not have: another config (or --set variant) ran there, by shards or stopped before
    its merge. The rule check_replaceable applies to a results file, applied to its parts."""
    if force or os.path.lexists(where.output):
        return  # a results file: check_replaceable has decided
    held = where.index().jobs
    if not held:
        return  # nothing there (a first run): spares building every job's id
    ids = {job.id for job in jobs}
    others = sum(job_id not in ids for job_id in held)
    if others:
        raise ConfigError(f"{where.dir}: holds the results of {others} job(s) that are not "
                          "jobs of this config (another config or --set variant ran into "
                          "this output); give this config its own file with --out (or "
                          "output.path), or run it here anyway with --force")


def preflight(config: Config, jobs: list[Job], workers: int, merged: bool,
              warn: bool = True, available: tuple | None = None) -> int:
    """Refuse what cannot fit in memory (ConfigError); warn about unstable steps; return
    how many of `workers` jobs fit in memory at once. available: resources.memory_limit()
    if the caller read it already (it reads a dozen files)."""
    from sweep.execution import resources, stability

    need = resources.need(jobs, config.output.positions, workers, merged,
                          bins=config.output.hist_bins)
    available, limit = resources.memory_limit() if available is None else available
    resources.check(need, available, limit)  # before any warning: a refused config: one line
    for line in stability.warnings(jobs) if warn else ():
        warnings.warn(line, SweepWarning, stacklevel=3)
    fit = resources.workers_that_fit(need, available)
    if fit < need.workers:
        warnings.warn(f"memory: at most {fit} job(s) fit at once, not {need.workers}: each "
                      f"needs {need.per_job / 2**30:.3g} GiB of the {available / 2**30:.3g} "
                      f"GiB available; running {fit} at once", SweepWarning, stacklevel=3)
    return fit


def output(config: Config, out: str | Path | None) -> Path:
    """out if given (`~` expanded, checked like output.path), else the config's output.path."""
    return Path(config.output.path if out is None else schema.output_path(str(out), "--out"))


def store(config: Config, out: str | Path | None = None) -> Store:
    """The parts folder of a config's results (sweep.storage.store.Store), made from it."""
    from sweep.storage.store import Store

    return Store(config, output(config, out))


# ---------------------------------------------------------------- running

@dataclass
class Outcome:
    """What `execute` did: the runner's report, and the merged results file unless a shard."""

    report: RunReport
    store: Store
    total: int                      # jobs of the config
    shard: shards.Shard | None
    todo: int                       # jobs this call was to run (the shard's, or failed ones)
    path: Path | None = None        # the results file written (or found current)


def run(config: Config, out: str | Path | None = None, workers: int | None = None,
        shard: str | tuple[int, int] | None = None, force: bool = False,
        hooks: Hooks | None = None) -> xarray.Dataset | None:
    """Run every job not already complete, then merge and write the results: the files and
    bits of `sweep run`. Returns the results opened from the file written, lazily (variables
    are read when used; `with` closes the file), None for a shard (which writes parts only).

    out: the results file (default output.path); workers: jobs at once (default: this task's
    CPUs); shard: "I/K" or (I, K) to run jobs I, I + K, ... only (default: from SWEEP_SHARD
    or a scheduler's array variables, as the command); force: recompute complete jobs.
    JobsFailed (a StoreError) if some jobs raised: it carries the dataset all the same.
    Interrupted on Ctrl-C or a stop signal, after keeping every finished job.
    """
    from sweep.analysis.results import open_results
    from sweep.storage.store import JobsFailed

    outcome = execute(config, out, workers, shard, force, hooks=hooks)
    dataset = None if outcome.path is None else open_results(outcome.path, load=False)
    if outcome.report.failed:
        raise JobsFailed(outcome.report.failed, dataset)
    return dataset


def execute(config: Config, out: str | Path | None = None, workers: int | None = None,
            shard: str | tuple[int, int] | None = None, force: bool = False,
            only_failed: bool = False, hooks: Hooks | None = None,
            keep_current: bool = False) -> Outcome:
    """`run`, reporting instead of raising for failed jobs (what `sweep run` prints).
    only_failed: retry only the jobs whose part records a failure (parts only).
    keep_current: when nothing was left to run and the results file is this config's and
    newer than every part, leave it as it is."""
    from sweep.execution import runner
    from sweep.scheduling import survey
    from sweep.scheduling.signals import stop_on_signals
    from sweep.storage import merging
    from sweep.storage.outputs import check_replaceable

    hooks = hooks or runner.Hooks()
    with stop_on_signals() as received:
        jobs, part = expand(config), resolve_shard(shard)
        todo = grid.shard(jobs, part.index, part.count) if part else jobs
        where = store(config, out)
        if only_failed:
            todo = survey.only_failed(todo, where)
        if part is not None:
            hooks.notice(f"shard {part.index} of {part.count} (from {part.source}): "
                         f"{len(todo)} of {len(jobs)} job(s)")
        merged = part is None and not only_failed
        if merged:
            check_replaceable(where.output, config, jobs, force)
            _check_parts(where, jobs, force)
        width = preflight(config, todo, workers or shards.task_cpus(), merged)  # per kind
        if merged:
            # built once for the run and the merge: each pass over a grid rebuilds its jobs,
            # which is not free for a large grid
            todo = jobs = list(jobs)
        outcome = Outcome(runner.RunReport(), where, len(jobs), part, len(todo))
        try:
            outcome.report = runner.run(todo, where, workers=width, force=force, hooks=hooks)
            if merged and keep_current and _current(where, outcome.report):
                outcome.path = where.output
            elif merged:
                outcome.path = merging.merge(where, jobs)
        except (Interrupted, KeyboardInterrupt) as stop:
            raise _stopped(stop, received, where) from None
    return outcome


def _current(where: Store, report) -> bool:
    """Whether the results file already holds what a merge would write: nothing ran, no
    part is damaged, the file is this config's and no part is newer."""
    from sweep.storage.outputs import written_by

    if report.completed or report.failed or report.damaged or report.elsewhere:
        return False
    try:
        written = where.output.stat().st_mtime_ns
    except OSError:
        return False
    index = where.index()
    newest = max((h.mtime for h in index.known.values()), default=0)
    return (not index.damaged and newest < written
            and written_by(where.output)[0] == where.config_hash)


def resolve_shard(spec) -> shards.Shard | None:
    if isinstance(spec, tuple):
        return shards.resolve_shard(f"{spec[0]}/{spec[1]}")
    return shards.resolve_shard(spec)


def _stopped(stop: BaseException, received, where: Store) -> Interrupted:
    report = getattr(stop, "report", None)
    kept = (f"{report.completed} job(s) finished this run and are kept" if report is not None
            else "finished jobs are kept")
    return Interrupted(f"stopped by {received.name}: {kept} in {where.dir}; nothing partial "
                       "was written; run the same command again to resume",
                       received.signum, report)


def merge(config: Config, out: str | Path | None = None, allow_missing: bool = False,
          force: bool = False) -> xarray.Dataset:
    """Assemble every completed job into one dataset, write it to `out` (default
    output.path) block by block (`sweep merge`) and return it opened from there, lazily (as
    `run`). The parts are those beside `out`, as for `run(out=X)`. MissingJobs unless
    allow_missing (missing jobs are then NaN, status -1); StoreError if the parts folder
    holds another config's parts in place of this one's; ConfigError if the file at `out`
    holds another config's results, unless force (storage.outputs.check_replaceable)."""
    from sweep.analysis.results import open_results
    from sweep.scheduling import survey
    from sweep.scheduling.signals import stop_on_signals
    from sweep.storage import merging
    from sweep.storage.outputs import check_replaceable

    with stop_on_signals() as received:
        where, jobs = store(config, out), expand(config)
        target = where.output
        survey.check_not_edited(jobs, where)
        check_replaceable(target, config, jobs, force)
        preflight(config, jobs, 1, merged=True, warn=False)
        try:
            merging.merge(where, jobs, allow_missing=allow_missing, out=target)
        except KeyboardInterrupt:
            raise Interrupted(f"stopped by {received.name}: {target} was not written; "
                              "the parts are untouched", received.signum) from None
    return open_results(target, load=False)
