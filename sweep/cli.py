"""The `sweep` command line: thin commands that parse, call one library function and print.

This is the only module that prints or exits. User mistakes become one line on stderr and
exit code 2; failed jobs exit 1; Ctrl-C exits 130.
"""

from __future__ import annotations

import contextlib
import json
import os
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

from sweep import __version__, cluster
from sweep import submit as scheduler
from sweep.config import Config, ConfigError, load
from sweep.grid import axes, expand, shard
from sweep.runner import Hooks, Interrupted, RunReport, run
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
        workers = _preflight(cfg, jobs, cluster.task_cpus(), merged=True)
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
    if workers < min(cluster.task_cpus(), len(jobs)):
        out.print(f"memory: at most {workers} job(s) fit at once; `run` uses {workers} worker(s)")
    out.print(f"output: {_output(cfg, None)}")


def _summary(values: tuple) -> str:
    shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    return ", ".join(shown) if len(shown) <= 6 else ", ".join(shown[:3] + ["..."] + shown[-2:])


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
        part = cluster.resolve_shard(shard_spec)
        todo = shard(jobs, part.index, part.count) if part else jobs
        store = Store(_output(cfg, path), cfg.hash)
        if failed_only:
            todo = cluster.only_failed(todo, store)
        if part is not None:
            err.print(f"shard {part.index} of {part.count} (from {part.source}): "
                      f"{len(todo)} of {len(jobs)} job(s)")
        merged = part is None and not failed_only
        workers = _preflight(cfg, todo, workers or cluster.task_cpus(), merged=merged)
        try:
            report = _run_with_progress(todo, store, cfg, workers, force)
            _print_report(report, store)
            if merged:
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
        cluster.check_not_edited(jobs, store)
        _preflight(cfg, jobs, 1, merged=True, warn=False)
        try:
            ds = merge(cfg, jobs, store, allow_missing=allow_missing)
            out.print(f"results: {write_dataset(ds, store.output)}")
        except KeyboardInterrupt:
            err.print(f"stopped by {received.name}: {store.output} was not written; the parts "
                      "are untouched.", soft_wrap=True)
            raise typer.Exit(received.exit_code) from None


# ---------------------------------------------------------------- cluster

@app.command()
def status(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
           shards: Annotated[int | None, typer.Option(
               "--shards", min=1, help="K of the job array, for the list of shards to rerun "
               "(default: K of the last `sweep submit`).")] = None):
    """Completed, missing and failed jobs, and the shards to rerun (exit 0 when it could tell)."""
    with user_errors():
        cfg = _load(config, sets)
        store = Store(_output(cfg, path), cfg.hash)
        found = cluster.survey(expand(cfg), store)
    damaged = f", {len(found.damaged)} damaged" if found.damaged else ""
    out.print(f"{cfg.name}: {len(found.jobs)} job(s): {len(found.completed)} completed, "
              f"{len(found.missing)} missing, {len(found.failed)} failed{damaged} "
              f"(config hash {cfg.hash}, parts in {store.dir})")
    if found.missing:
        out.print(f"missing: {_indices(found.missing)}")
    for kind, listed in (("failed", found.failed), ("damaged", found.damaged)):
        for job, error in listed[:20]:
            out.print(f"{kind}: job {job.index} ({job.describe()}): {error}", markup=False)
    if found.strays:
        out.print(f"{len(found.strays)} part(s) belong to no job of this config (another "
                  "config or grid wrote them)")
    _print_rerun(found, shards, store, config)


def _print_rerun(found: cluster.Survey, shards: int | None, store: Store, config: Path) -> None:
    """The shards of K to resubmit, and the sbatch lines when `sweep submit` wrote the array."""
    record = scheduler.submitted(store.output) or {}
    k = shards or record.get("shards")
    if k is None:
        if found.rerun(1):
            out.print("pass --shards K for the shards of a K-task array to rerun")
        return
    rerun = found.rerun(k)
    if not rerun:
        out.print(f"shards to rerun (K={k}): none")
        return
    spec = cluster.array_spec(rerun)
    out.print(f"shards to rerun (K={k}): --array={spec}")
    script = scheduler.jobs_dir(store.output) / "array.sbatch"
    if record.get("shards") == k and script.is_file():
        print(f"  sbatch --array={spec} {script}")
        print(f"  then: sbatch --dependency=afterok:<that job> {script.with_name('merge.sbatch')}"
              f" (or sweep merge {config} once it is done)")


def _indices(jobs) -> str:
    shown = ", ".join(str(j.index) for j in jobs[:20])
    return shown + (f" and {len(jobs) - 20} more" if len(jobs) > 20 else "")


@app.command("submit")
def submit_cmd(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
               shards: Annotated[int, typer.Option(
                   "--shards", min=1, help="K: array tasks; task I runs jobs I, I + K, ...")]
               = ...,
               parallel: Annotated[int | None, typer.Option(
                   "--parallel", min=1, help="P: at most this many tasks at once (%P).")]
               = None,
               scheduler_name: Annotated[str, typer.Option(
                   "--scheduler", help="Which scheduler's scripts to write: slurm.")]
               = "slurm",
               dry_run: Annotated[bool, typer.Option(
                   "--dry-run", help="Print the scripts; write and submit nothing.")] = False,
               scheduler_args: Annotated[list[str] | None, typer.Option(
                   "--scheduler-arg", help="An option for both scripts, e.g. "
                   "--scheduler-arg=--time=02:00:00 (repeatable).")] = None,
               workers: Annotated[int | None, typer.Option(
                   "--workers", min=1, help="Jobs at once in each task (default: its CPUs).")]
               = None):
    """Write a job-array script plus a merge job (afterok) and submit both.

    The kernels are compiled once into NUMBA_CACHE_DIR (default <output>.jobs/numba-cache)
    before the array starts; on a shared file system every task then only reads that cache.
    """
    with user_errors():
        cfg = _load(config, sets)
        n_jobs = len(expand(cfg))
        if scheduler_name not in scheduler.SCHEDULERS:
            raise ConfigError(f"--scheduler {scheduler_name}: one of "
                              + " | ".join(scheduler.SCHEDULERS))
        plan = scheduler.make_plan(cfg.name, config, sets or [], _output(cfg, path), shards,
                                   parallel, workers, scheduler_args)
        if shards > n_jobs:
            err.print(f"note: {shards} shards for {n_jobs} job(s); shards {n_jobs} to "
                      f"{shards - 1} have nothing to do")
        if dry_run:
            for name, text in (("array.sbatch", scheduler.slurm_array(plan)),
                               ("merge.sbatch", scheduler.slurm_merge(plan))):
                print(f"# ---- {plan.jobs_dir / name}\n{text}")
            return
        array_id, merge_id = scheduler.submit(plan, cfg.hash)
    out.print(f"array job {array_id}: {shards} task(s) over {n_jobs} job(s), logs in "
              f"{plan.logs}", markup=False)
    out.print(f"merge job {merge_id}: runs when every task succeeded, writes {plan.output}",
              markup=False)
    out.print(f"follow with: sweep status {config}" + "".join(f" --set {s}" for s in sets or []),
              markup=False)


@app.command("compile")
def compile_cmd(config: ConfigArg, sets: SetOpt = None):
    """Compile the kernels a config needs into NUMBA_CACHE_DIR (run before many tasks start)."""
    from sweep.simulate import warm_up

    with user_errors():
        dtypes = {job.integrate.dtype for job in expand(_load(config, sets))}
    warm_up(dtypes)
    cache = os.environ.get("NUMBA_CACHE_DIR") or "Numba's default cache"
    out.print(f"kernels compiled ({', '.join(sorted(dtypes))}) into {cache}")


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


# ---------------------------------------------------------------- analysis: threshold, plot

ResultsArg = Annotated[Path, typer.Argument(help="A results .nc file (from sweep run/merge).",
                                            show_default=False)]
VarOpt = Annotated[str, typer.Option("--var", help="The variable, e.g. clustered_fraction.",
                                     show_default=False)]
TimeOpt = Annotated[str | None, typer.Option(
    "--time", help="A saved time, final (default), all (keep time as an axis), or a "
                   "reduction over time per run: max | min | mean | plateau.")]
FileOut = Annotated[Path | None, typer.Option("-o", "--output", help="netCDF file to write.")]


@app.command("threshold")
def threshold_cmd(
        results: ResultsArg, var: VarOpt,
        along: Annotated[str, typer.Option("--along", help="Axis to cross along.")] = "beta",
        level: Annotated[float, typer.Option("--level", help="Level to cross.")] = 0.5,
        time: TimeOpt = None, output: FileOut = None,
        bootstrap: Annotated[int, typer.Option(
            "--bootstrap", min=0, help="Resamples of the seeds for the 95% interval.")] = 1000,
        seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
        direction: Annotated[str, typer.Option(
            "--direction", help="Crossings counted: any | up | down.")] = "any"):
    """Where the seed-mean VAR first crosses LEVEL along an axis, with a bootstrap interval."""
    from sweep import analysis

    with user_errors():
        ds = analysis.open_results(results)
        th = analysis.threshold(ds, var, along, level, time, bootstrap, seed, direction)
        path = write_dataset(th, output) if output is not None else None
    _print_threshold(th)
    if path is not None:
        out.print(f"threshold: {path}")


def _print_threshold(th, rows: int = 40) -> None:
    out.print(f"{th.attrs['along']} where the seed-mean {th.attrs['var']} crosses "
              f"{th.attrs['level']:g} (time: {th.attrs['time']}, {th.attrs['seeds']} seed(s))")
    dims = list(th.threshold.dims)
    table = Table()
    for col in dims + ["threshold", "95% interval"]:
        table.add_column(col, justify="right")
    flat = th.to_dataframe().reset_index().to_dict("records") if dims else [
        {k: float(th[k]) for k in ("threshold", "threshold_low", "threshold_high")}]
    found = [r for r in flat if r["threshold"] == r["threshold"]]
    for rec in found[:rows]:
        table.add_row(*[f"{rec[d]:g}" for d in dims], f"{rec['threshold']:.4g}",
                      f"[{rec['threshold_low']:.4g}, {rec['threshold_high']:.4g}]")
    out.print(table)
    if len(found) > rows:
        out.print(f"... {len(found) - rows} more row(s); -o FILE keeps them all")
    if len(found) < len(flat):
        out.print(f"{len(flat) - len(found)} point(s) never cross (NaN)")


@app.command("plot")
def plot_cmd(
        results: ResultsArg, var: VarOpt,
        x: Annotated[str, typer.Option("--x", help="Horizontal axis.")] = "beta",
        y: Annotated[str | None, typer.Option(
            "--y", help="Vertical axis of a heatmap (without it: lines of VAR against x).")]
        = None, time: TimeOpt = None,
        sel: Annotated[list[str] | None, typer.Option(
            "--sel", help="Fix an axis at its nearest grid value: --sel d=128.")] = None,
        lines: Annotated[str | None, typer.Option(
            "--lines", help="Line plot: one line per value of this axis (a few are picked).")]
        = None,
        threshold: Annotated[Path | None, typer.Option(
            "--threshold", help="A sweep threshold file to draw with its interval.")] = None,
        theory: Annotated[Path | None, typer.Option(
            "--theory", help="A sweep theory file to overlay (equiangular or kappa-c).")]
        = None,
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", help="Figure file: .png, .pdf or .svg (default: "
                                   "figures/<results>-<var>.png).")] = None):
    """Phase diagram (heatmap, threshold and theory overlaid) or line plot of VAR."""
    from sweep import analysis, plots

    with user_errors():
        ds = analysis.open_results(results)
        extra = {k: analysis.open_results(p) for k, p in
                 (("threshold", threshold), ("theory", theory)) if p is not None}
        path = output or Path("figures") / f"{results.stem}-{var}.png"
        done = plots.plot(ds, var, path, x=x, y=y, time=time,
                          selection=analysis.parse_selection(sel), series=lines, **extra)
    out.print(f"figure: {done}")


# ---------------------------------------------------------------- theory

theory_app = typer.Typer(no_args_is_help=True, help="Theory curves to compare sweeps with.")
app.add_typer(theory_app, name="theory")


@theory_app.command("equiangular")
def theory_equiangular(
        n: Annotated[int, typer.Option("--n", min=2, help="Tokens.")] = 32,
        model: Annotated[str, typer.Option(
            "--model", help="softmax | unnormalized.")] = "softmax",
        eps: Annotated[float, typer.Option("--eps", help="Boundary at rho = 1 - eps.")] = 1e-3,
        beta: Annotated[tuple[float, float, int], typer.Option(
            "--beta", help="Betas as START STOP NUM (linspace).")] = (0.0, 9.0, 91),
        t_max: Annotated[float, typer.Option("--t-max", help="Last time of rho(t).")] = 30.0,
        save_every: Annotated[float, typer.Option(
            "--save-every", help="Time step of the rho(t) grid.")] = 0.5,
        rho0: Annotated[float, typer.Option("--rho0", help="Initial cosine.")] = 0.0,
        output: FileOut = None):
    """The equiangular-ODE (t, beta) boundary: t*(beta) where rho_beta(t) = 1 - eps."""
    import numpy as np

    from sweep import theory

    if beta[2] < 1 or t_max <= 0 or save_every <= 0:
        raise fail("--beta NUM, --t-max and --save-every must be positive")
    betas = np.linspace(*beta)
    times = np.arange(round(t_max / save_every) + 1) * save_every
    with user_errors():
        ds = theory.equiangular(n, model, eps, betas, times, rho0)
        path = write_dataset(ds, output) if output is not None else None
    out.print(f"equiangular ODE, n = {n}, {model}: time t* at which rho = 1 - {eps:g}")
    table = Table()
    table.add_column("beta", justify="right")
    table.add_column("t*", justify="right")
    step = max(1, betas.size // 20)
    for b, t in zip(betas[::step], ds.t_boundary.values[::step]):
        table.add_row(f"{b:g}", f"{t:.5g}")
    out.print(table)
    if path is not None:
        out.print(f"theory: {path}")


@theory_app.command("kappa-c")
def theory_kappa_c(
        d: Annotated[list[float], typer.Option("--d", help="Dimension(s), repeatable.")],
        beta: Annotated[list[float], typer.Option("--beta", help="Beta(s), repeatable.")],
        output: FileOut = None):
    """Noise threshold kappa_c = beta / E[t e^(beta t)] of the unnormalized model."""
    from sweep import theory

    with user_errors():
        ds = theory.kappa_c_dataset(d, beta)
        path = write_dataset(ds, output) if output is not None else None
    out.print("kappa_c(beta, d) of the unnormalized model; noise threshold D_c = 1 / kappa_c")
    table = Table()
    for col in ("d", "beta", "kappa_c", "D_c"):
        table.add_column(col, justify="right")
    for dd in ds.d.values:
        for b in ds.beta.values:
            k = float(ds.kappa_c.sel(d=dd, beta=b))
            table.add_row(f"{dd:g}", f"{b:g}", f"{k:.8g}", f"{1 / k:.8g}" if k else "inf")
    out.print(table)
    if path is not None:
        out.print(f"theory: {path}")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


# ---------------------------------------------------------------- trained transformers

ModelOpt = Annotated[str, typer.Option(
    "--model", help="minilm (all-MiniLM-L6-v2; `make models` installs it) or a directory "
                    "with config.json, model.safetensors and tokenizer.json.")]


@app.command("probe")
def probe_cmd(text: Annotated[Path, typer.Option(
                  "--text", help="UTF-8 text file, run as one sequence (no truncation).",
                  show_default=False)],
              model: ModelOpt = "minilm",
              path: Annotated[Path | None, typer.Option(
                  "-o", "--out", help="Dataset path (default: results/probe-<text>.nc).")]
              = None,
              beta: Annotated[float, typer.Option(
                  min=0.0, help="beta of the identity-attention energy and entropy.")] = 1.0,
              cluster_eps: Annotated[float, typer.Option(
                  min=0.0, help="Pairs with cosine > 1 - eps count as clustered.")] = 1e-3,
              threshold: Annotated[float, typer.Option(
                  min=-1.0, max=1.0, help="Cosine threshold of the coarse_* clusters.")]
              = 0.9):
    """A trained transformer's tokens through the simulations' observables, layer by layer."""
    from sweep import bert, probe

    if not text.is_file():
        raise fail(f"{text}: no such text file")
    with user_errors():
        words = text.read_text(encoding="utf-8", errors="replace")
        ds = probe.probe(bert.load(model), words, beta, cluster_eps, threshold, str(text))
        target = write_dataset(ds, path or Path("results") / f"probe-{text.stem}.nc")
    table = Table(title=f"{ds.attrs['model']}: {ds.attrs['n_tokens']} tokens")
    names = ("mean_cosine", "clustered_fraction", "coarse_n_clusters", "pc1_share")
    for col in ("layer",) + names:
        table.add_column(col)
    for layer in ds.layer.values:
        table.add_row(str(layer), *(f"{float(ds[n].sel(layer=layer)):.4g}" for n in names))
    out.print(table)
    out.print(f"results: {target}")


@app.command("extract")
def extract_cmd(directory: Annotated[Path, typer.Option(
                    "-o", "--out", help="Directory for the .npy files and index.json.",
                    show_default=False)],
                model: ModelOpt = "minilm",
                controls: Annotated[bool, typer.Option(
                    "--controls", help="Also write norm-matched Gaussian matrices "
                                       "(layer<l>_qk_gaussian.npy, layer<l>_v_gaussian.npy).")]
                = False):
    """Each layer's attention as [heads, d, d] .npy files for the `qk:` and `v:` keys."""
    from sweep import bert, probe

    with user_errors():
        index = probe.extract(bert.load(model), directory, controls)
    out.print(f"{index['layers']} layer(s) x {index['heads']} head(s), d = {index['d']}: "
              f"layer<l>_qk.npy and layer<l>_v.npy, each {index['files'][0]['shape']}, "
              f"in {directory} (see index.json)")
