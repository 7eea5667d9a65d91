"""Commands that sweep: plan, run (one shard or all, with progress) and merge."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from sweep.cli import (
    ConfigArg,
    OutOpt,
    SetOpt,
    _load,
    _output,
    _summary,
    app,
    err,
    out,
    user_errors,
)
from sweep.core.config import Config
from sweep.core.grid import axes, expand, shard
from sweep.core.runner import Hooks, Interrupted, RunReport, run
from sweep.core.simulate import estimate
from sweep.core.store import Store, merge, write_dataset
from sweep.scheduling import shards
from sweep.scheduling import status as parts
from sweep.scheduling.signals import stop_on_signals


@app.command()
def plan(config: ConfigArg, sets: SetOpt = None,
         as_json: Annotated[bool, typer.Option("--json", help="One JSON object per job.")]
         = False):
    """Validate the config, expand the grid, print axes, job count and cost estimate."""
    with user_errors():
        cfg = _load(config, sets)
        jobs = expand(cfg)
        cpus = shards.task_cpus()
        workers = _preflight(cfg, jobs, cpus, merged=True)
    if as_json:
        for job in jobs:
            print(json.dumps({"index": job.index, "id": job.id, "parameters": job.params}))
        return
    table = Table(title=f"{cfg.name}: {len(jobs)} job(s)")
    for col in ("axis", "size", "values"):
        table.add_column(col)
    for axis in axes(cfg):
        for key, vals in zip(axis.keys, axis.values):
            table.add_row(key, str(len(vals)), _summary(vals))
    out.print(table)
    cost = estimate(jobs, cfg.output.positions)
    depth = jobs[0].model.layers  # a layer model's steps are its layers
    steps = f"layers per job: {depth}" if depth is not None else \
        f"steps per job: {jobs[0].integrate.n_steps}"
    out.print(f"{steps}  |  work: {cost.gflop:.3g} GFLOP  "
              f"|  peak memory per job: {cost.peak_mib:.3g} MiB  |  estimated time: "
              f"{cost.seconds:.3g} s on one core")
    if workers < min(cpus, len(jobs)):
        out.print(f"memory: at most {workers} job(s) fit at once; `run` uses {workers} worker(s)")
    out.print(f"output: {_output(cfg, None)}")


# ---------------------------------------------------------------- run and merge

@app.command("run")
def run_cmd(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
            shard_spec: Annotated[str | None, typer.Option(
                "--shard", help="Run shard I of K (0-based), written as I/K. Inside a job "
                "array, taken from SWEEP_SHARD or the scheduler's array variables.")] = None,
            workers: Annotated[int | None, typer.Option(
                "--workers", min=1, help="Jobs run at once (default: the CPUs this task was "
                "given).")] = None,
            force: Annotated[bool, typer.Option(
                "--force", help="Recompute jobs that are already complete.")] = False,
            failed_only: Annotated[bool, typer.Option(
                "--only-failed", help="Retry only the jobs that failed (writes parts only).")]
            = False):
    """Run every job (or one shard), skipping those already complete, then merge.

    A shard (--shard, SWEEP_SHARD or a job array) writes its parts only; `sweep merge`
    assembles them. Ctrl-C, SIGTERM and SIGUSR1 stop cleanly (exit 130, 143, 138): finished
    jobs are kept; run the same command again to resume. Runs sharing an output split the jobs
    between them.
    """
    with user_errors(), stop_on_signals() as received:
        cfg = _load(config, sets)
        jobs = expand(cfg)
        part = shards.resolve_shard(shard_spec)
        todo = shard(jobs, part.index, part.count) if part else jobs
        store = Store(_output(cfg, path), cfg.hash)
        if failed_only:
            todo = parts.only_failed(todo, store)
        if part is not None:
            err.print(f"shard {part.index} of {part.count} (from {part.source}): "
                      f"{len(todo)} of {len(jobs)} job(s)")
        merged = part is None and not failed_only
        workers = _preflight(cfg, todo, workers or shards.task_cpus(), merged=merged)
        try:
            report = _run_with_progress(todo, store, cfg, workers, force, keep=merged)
            _print_report(report, store)
            if merged:
                ds = merge(cfg, jobs, store, known=report.parts)  # parts not kept are read
                target = write_dataset(ds, store.output)
                out.print(f"results: {target}")
        except (Interrupted, KeyboardInterrupt) as e:  # Ctrl-C, SIGTERM, SIGUSR1
            finished = f"{e.report.completed} job(s) finished this run and are kept" if \
                isinstance(e, Interrupted) else "finished jobs are kept"
            err.print(f"stopped by {received.name}: {finished} in {store.dir}; nothing partial "
                      "was written; run the same command again to resume.", soft_wrap=True)
            raise typer.Exit(received.exit_code) from None
    if report.failed:
        raise typer.Exit(1)


def _preflight(cfg: Config, jobs, workers: int, merged: bool, warn: bool = True) -> int:
    """Warn about unstable steps; refuse what cannot fit in memory; return workers that fit."""
    from sweep.core import resources, stability

    need = resources.need(jobs, cfg.output.positions, workers, merged)
    available = resources.available_memory()
    resources.check(need, available)  # before any warning: a refused config prints one line
    for line in stability.warnings(jobs) if warn else ():
        err.print(f"[yellow]warning:[/] {escape(line)}", soft_wrap=True)
    fit = resources.workers_that_fit(need, available)
    if fit < need.workers:
        err.print(f"memory: running {fit} job(s) at once, not {need.workers}: each needs "
                  f"{need.per_job / 2**30:.3g} GiB of the {available / 2**30:.3g} GiB available",
                  soft_wrap=True)
    return fit


def _run_with_progress(jobs, store, cfg, workers, force, keep=False) -> RunReport:
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task(cfg.name, total=None)

        def start(todo: int, skipped: int) -> None:
            if skipped:
                progress.console.print(f"{skipped} job(s) already complete, skipped")
            progress.update(task, total=todo)

        def job_done(job, outcome: str) -> None:
            progress.advance(task)
            if outcome.startswith("failed"):
                progress.console.print(f"[red]job {job.index} ({job.describe()}) "
                                       f"{escape(outcome)}", soft_wrap=True)
            elif outcome == "nonfinite":
                progress.console.print(f"job {job.index} ({job.describe()}) non-finite values "
                                       f"(status 1){_hint(job)}", markup=False, soft_wrap=True)

        def notice(message: str) -> None:
            progress.console.print(message, markup=False, soft_wrap=True)

        return run(jobs, store, positions=cfg.output.positions, workers=workers, force=force,
                   hooks=Hooks(start=start, job_done=job_done, notice=notice), keep=keep)


def _hint(job) -> str:
    from sweep.core.stability import job_hint

    hint = job_hint(job.model, job.integrate)
    return f"; {hint}" if hint else ""


def _print_report(report: RunReport, store: Store) -> None:
    rate = report.completed / report.seconds if report.seconds > 0 else 0.0
    out.print(f"{report.completed} job(s) run in {report.seconds:.1f} s ({rate:.1f} jobs/s), "
              f"{report.skipped} skipped, {len(report.failed)} failed, "
              f"{len(report.nonfinite)} non-finite; parts in {store.dir}")
    if report.elsewhere:
        out.print(f"{report.elsewhere} job(s) were computed by another run sharing this output")


@app.command("merge")
def merge_cmd(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
              allow_missing: Annotated[bool, typer.Option(
                  "--allow-missing", help="Fill jobs without results with NaN (status -1).")]
              = False):
    """Assemble all completed jobs into one dataset."""
    with user_errors(), stop_on_signals() as received:
        cfg = _load(config, sets)
        store = Store(_output(cfg, path), cfg.hash)
        jobs = expand(cfg)
        parts.check_not_edited(jobs, store)
        _preflight(cfg, jobs, 1, merged=True, warn=False)
        try:
            ds = merge(cfg, jobs, store, allow_missing=allow_missing)
            out.print(f"results: {write_dataset(ds, store.output)}")
        except KeyboardInterrupt:
            err.print(f"stopped by {received.name}: {store.output} was not written; the parts "
                      "are untouched.", soft_wrap=True)
            raise typer.Exit(received.exit_code) from None
