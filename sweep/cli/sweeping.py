"""Commands that sweep: plan, run (one shard or all, with progress) and merge."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from sweep import api
from sweep.cli import (
    ConfigArg,
    JsonOpt,
    OutOpt,
    SetOpt,
    _load,
    _summary,
    app,
    err,
    out,
    user_errors,
)
from sweep.execution.outcomes import Done, JobOutcome


@app.command()
def plan(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None, as_json: JsonOpt = False):
    """Validate the config, expand the grid, print axes, job count and cost estimate.

    Nothing runs. The time estimate is for one core at a nominal rate, and says when the
    kernels must first compile (once: they are cached). `--json` prints one JSON object per
    job (index, id, parameters).
    """
    with user_errors():
        p = api.plan(_load(config, sets), path)
    if as_json:
        for job in p.jobs:
            print(json.dumps({"index": job.index, "id": job.id, "parameters": job.params}))
        return
    table = Table(title=f"{p.config.name}: {len(p.jobs)} job(s)",
                  caption="\n".join(p.overridden) or None, caption_justify="left")
    for col in ("axis", "size", "values"):
        table.add_column(col)
    for axis in p.axes:
        for key, vals in zip(axis.keys, axis.values):
            table.add_row(key, str(len(vals)), _summary(vals))
    out.print(table)
    compiled = (f" + about {p.compile_seconds:.0f} s to compile {', '.join(p.cold)} first "
                "(once: then cached)" if p.cold else "")
    depth = p.jobs[0].model.layers  # a layer model's steps are its layers
    steps = f"layers per job: {depth}" if depth is not None else \
        f"steps per job: {p.jobs[0].integrate.n_steps}"
    out.print(f"{steps}  |  work: {p.cost.gflop:.3g} "
              f"GFLOP  |  peak memory per job: {p.cost.peak_mib:.3g} MiB  |  estimated time: "
              f"{p.cost.seconds:.3g} s on one core{compiled}", soft_wrap=True)
    out.print(f"kernels: {', '.join(p.kernels)}  |  at once: {p.workers} job(s)  |  output: "
              f"{p.output}", soft_wrap=True)


@app.command("run")
def run_cmd(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
            shard: Annotated[str | None, typer.Option(
                "--shard", metavar="I/K", help="Run shard I of K (0-based): jobs I, I + K, "
                "... Inside a job array, taken from SWEEP_SHARD or the scheduler's array "
                "variables.")] = None,
            workers: Annotated[int | None, typer.Option(
                "--workers", min=1, metavar="N", help="Jobs run at once (default: the CPUs "
                "this task was given).")] = None,
            force: Annotated[bool, typer.Option(
                "--force", help="Recompute jobs that are already complete, and replace an "
                "output that holds another config's results.")] = False,
            failed_only: Annotated[bool, typer.Option(
                "--only-failed", help="Retry only the jobs that failed (writes parts only).")]
            = False):
    """Run every job (or one shard), skipping those already complete, then merge.

    A shard (`--shard`, `SWEEP_SHARD` or a job array) writes its parts only; `sweep merge`
    assembles them. Ctrl-C, SIGTERM and SIGUSR1 stop cleanly (exit 130, 143, 138): finished
    jobs are kept; run the same command again to resume. Runs sharing an output split the
    jobs between them. In a log file, progress is a line at every tenth of the jobs and at
    least every 30 s.
    """
    from sweep.cli.progress import run_hooks

    with user_errors():
        cfg = _load(config, sets)
        with run_hooks(err, cfg.name, _job_line) as hooks:
            done = api.execute(cfg, path, workers, shard, force, failed_only, hooks,
                               keep_current=True)
    _print_report(done)
    if done.report.failed:
        raise typer.Exit(1)


def _job_line(job, outcome: JobOutcome) -> str | None:
    """The line a failed or non-finite job gets while the run goes on."""
    if outcome.done is Done.FAILED:
        return f"job {job.index} ({job.describe()}) {outcome}"
    if outcome.done is Done.NONFINITE:
        from sweep.execution.stability import job_hint

        hint = job_hint(job.model, job.integrate)
        return f"job {job.index} ({job.describe()}) non-finite values (status 1)" + \
            (f"; {hint}" if hint else "")
    return None


def _print_report(done: api.Outcome) -> None:
    report = done.report
    rate = report.completed / report.seconds if report.seconds > 0 else 0.0
    share, integrating = report.kernel_share, sum(report.inside)
    inside = (f"; kernel rate {report.completed / integrating:.3g} jobs/s per worker, "
              f"{100 * share:.0f}% of worker time integrating"
              if share is not None and integrating > 0 else "")
    out.print(f"{report.completed} job(s) run in {report.seconds:.1f} s (overall rate "
              f"{rate:.3g} jobs/s, start-up, warm-up and waits included{inside}), "
              f"{report.skipped} skipped, {len(report.failed)} failed, "
              f"{len(report.nonfinite)} non-finite; parts in {done.store.dir}", soft_wrap=True,
              markup=False)
    if report.elsewhere:
        out.print(f"{report.elsewhere} job(s) were computed by another run sharing this output")
    if done.path is not None:
        out.print(f"results: {done.path}", soft_wrap=True, markup=False)


@app.command("merge")
def merge_cmd(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
              allow_missing: Annotated[bool, typer.Option(
                  "--allow-missing", help="Fill jobs without results with NaN (status -1).")]
              = False,
              force: Annotated[bool, typer.Option(
                  "--force", help="Replace an output that holds another config's results.")]
              = False):
    """Assemble all completed jobs into one dataset (after the shards of a job array): the
    parts beside --out (default output.path), as `run --out` wrote them, into --out."""
    with user_errors():
        cfg = _load(config, sets)
        api.merge(cfg, path, allow_missing, force)
        target = api.store(cfg, path).output  # where merge wrote: --out, or output.path
    out.print(f"results: {target}", soft_wrap=True, markup=False)
