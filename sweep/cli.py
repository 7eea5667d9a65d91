"""The `sweep` command line: thin commands that parse, call one library function and print.

This is the only module that prints or exits. User mistakes become one line on stderr and
exit code 2; failed jobs exit 1; Ctrl-C exits 130.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
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

from sweep import __version__
from sweep.config import Config, ConfigError, load
from sweep.grid import axes, expand, shard
from sweep.runner import Hooks, Interrupted, RunReport, default_workers, run
from sweep.signals import stop_on_signals
from sweep.store import Store, StoreError, merge, write_dataset

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Phase-diagram sweeper for self-attention particle dynamics.")
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

ConfigArg = Annotated[Path, typer.Argument(help="YAML config file.", show_default=False)]
SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", help="Override a config key by dotted path, YAML-typed: --set model.beta=2.5")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", help="Results path (default: output.path of the config).")]


def fail(message: str, code: int = 2) -> typer.Exit:
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    err.print(f"[bold red]error:[/] {escape(first)}", soft_wrap=True)  # one line, always
    return typer.Exit(code)


@contextlib.contextmanager
def user_errors():
    """Turn domain errors into one line on stderr and the SPEC's exit codes."""
    try:
        yield
    except ConfigError as e:
        raise fail(str(e), 2) from None
    except StoreError as e:
        raise fail(str(e), 1) from None


def _version(value: bool) -> None:
    if value:
        out.print(f"sweep {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version.")] = False):
    """Phase-diagram sweeper for self-attention particle dynamics."""


def _load(config: Path, sets: list[str] | None) -> Config:
    return load(config, sets or [])


def _output(cfg: Config, path: Path | None) -> Path:
    return Path(path) if path is not None else Path(cfg.output.path)


# ---------------------------------------------------------------- plan

@app.command()
def plan(config: ConfigArg, sets: SetOpt = None,
         as_json: Annotated[bool, typer.Option("--json", help="One JSON object per job.")]
         = False):
    """Validate the config, expand the grid, print axes, job count and cost estimate."""
    with user_errors():
        cfg = _load(config, sets)
        jobs = expand(cfg)
        workers = _preflight(cfg, jobs, default_workers(), merged=True)
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
    from sweep.simulate import estimate
    cost = estimate(jobs)
    out.print(f"steps per job: {jobs[0].integrate.n_steps}  |  work: {cost.gflop:.3g} GFLOP  "
              f"|  peak memory per job: {cost.peak_mib:.3g} MiB  |  estimated time: "
              f"{cost.seconds:.3g} s on one core")
    if workers < min(default_workers(), len(jobs)):
        out.print(f"memory: at most {workers} job(s) fit at once; `run` uses {workers} worker(s)")
    out.print(f"output: {_output(cfg, None)}")


def _summary(values: tuple) -> str:
    shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    return ", ".join(shown) if len(shown) <= 6 else ", ".join(shown[:3] + ["..."] + shown[-2:])


# ---------------------------------------------------------------- run and merge

@app.command("run")
def run_cmd(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
            shard_spec: Annotated[str | None, typer.Option(
                "--shard", help="Run shard I of K (0-based), written as I/K.")] = None,
            workers: Annotated[int | None, typer.Option(
                "--workers", min=1, help="Jobs run at once (default: CPUs available).")] = None,
            force: Annotated[bool, typer.Option(
                "--force", help="Recompute jobs that are already complete.")] = False):
    """Run every job (or one shard), skipping those already complete, then merge.

    Ctrl-C, SIGTERM and SIGUSR1 stop cleanly (exit 130, 143, 138): finished jobs are kept;
    run the same command again to resume. Runs sharing an output split the jobs between them.
    """
    with user_errors(), stop_on_signals() as received:
        cfg = _load(config, sets)
        jobs = expand(cfg)
        part = _parse_shard(shard_spec)
        todo = shard(jobs, *part) if part else jobs
        store = Store(_output(cfg, path), cfg.hash)
        workers = _preflight(cfg, todo, workers or default_workers(), merged=part is None)
        try:
            report = _run_with_progress(todo, store, cfg, workers, force)
            _print_report(report, store)
            if part is None:
                target = write_dataset(merge(cfg, jobs, store), store.output)
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
    from sweep import resources, stability

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


def _parse_shard(spec: str | None) -> tuple[int, int] | None:
    if spec is None:
        return None
    i, sep, k = spec.partition("/")
    if not sep or not i.strip().isdigit() or not k.strip().isdigit():
        raise ConfigError(f"--shard {spec}: expected I/K with integers, e.g. 0/4")
    i, k = int(i), int(k)
    if k < 1 or i >= k:
        raise ConfigError(f"--shard {spec}: need 0 <= I < K")
    return i, k


def _run_with_progress(jobs, store, cfg, workers, force) -> RunReport:
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
                   hooks=Hooks(start=start, job_done=job_done, notice=notice))


def _hint(job) -> str:
    from sweep.stability import job_hint

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
        _preflight(cfg, jobs, 1, merged=True, warn=False)
        try:
            ds = merge(cfg, jobs, store, allow_missing=allow_missing)
            out.print(f"results: {write_dataset(ds, store.output)}")
        except KeyboardInterrupt:
            err.print(f"stopped by {received.name}: {store.output} was not written; the parts "
                      "are untouched.", soft_wrap=True)
            raise typer.Exit(received.exit_code) from None


# ---------------------------------------------------------------- show

@app.command()
def show(results: Annotated[Path, typer.Argument(help="A results .nc file.")]):
    """What a results file holds: axes, variables, config, provenance."""
    import xarray as xr

    if not results.is_file():
        raise fail(f"{results}: no such results file")
    try:
        ds = xr.open_dataset(results)
    except (OSError, ValueError) as e:
        raise fail(f"{results}: not a readable netCDF file ({e})") from None
    with ds:
        out.print(f"[bold]{results}[/]  {ds.attrs.get('title', '')}")
        table = Table(title="axes")
        for col in ("dimension", "size", "values"):
            table.add_column(col)
        for dim, size in ds.sizes.items():
            vals = tuple(ds[dim].values.tolist()) if dim in ds.coords else ()
            table.add_row(dim, str(size), _summary(vals))
        out.print(table)
        table = Table(title="variables")
        for col in ("name", "dimensions", "units", "description"):
            table.add_column(col)
        for name, var in ds.data_vars.items():
            table.add_row(name, ", ".join(var.dims), str(var.attrs.get("units", "")),
                          str(var.attrs.get("long_name", "")))
        out.print(table)
        if "status" in ds:
            counts = {int(s): int((ds.status == s).sum()) for s in set(ds.status.values.ravel())}
            out.print(f"status counts: {counts}")
        for key in ("source", "history", "sweep_config_hash", "python_version",
                    "numpy_version", "numba_version", "xarray_version"):
            if key in ds.attrs:
                out.print(f"{key}: {ds.attrs[key]}")
        if "sweep_config" in ds.attrs:
            out.print("config:")
            out.print(ds.attrs["sweep_config"].rstrip(), markup=False)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
