"""Commands for a cluster: status (what is missing, which shards to rerun), submit (a job
array plus a merge job) and compile (the kernel cache the array tasks share)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from sweep.cli import ConfigArg, OutOpt, SetOpt, _load, _output, app, err, out, user_errors
from sweep.core.grid import expand
from sweep.core.store import Store, indices
from sweep.scheduling import status as parts
from sweep.scheduling import submit as scheduler


@app.command()
def status(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
           shards: Annotated[int | None, typer.Option(
               "--shards", min=1, help="K of the job array, for the list of shards to rerun "
               "(default: K of the last `sweep submit`).")] = None):
    """Completed, missing and failed jobs, and the shards to rerun (exit 0 when it could tell)."""
    with user_errors():
        cfg = _load(config, sets)
        store = Store(_output(cfg, path), cfg.hash)
        found = parts.survey(expand(cfg), store)
    damaged = f", {len(found.damaged)} damaged" if found.damaged else ""
    out.print(f"{cfg.name}: {len(found.jobs)} job(s): {len(found.completed)} completed, "
              f"{len(found.missing)} missing, {len(found.failed)} failed{damaged} "
              f"(config hash {cfg.hash}, parts in {store.dir})")
    if found.missing:
        out.print(f"missing: {indices(found.missing)}")
    for kind, listed in (("failed", found.failed), ("damaged", found.damaged)):
        for job, error in listed[:20]:
            out.print(f"{kind}: job {job.index} ({job.describe()}): {error}")
    if found.strays:
        out.print(f"{len(found.strays)} part(s) belong to no job of this config (another "
                  "config or grid wrote them)")
    _print_rerun(found, shards, store, config)


def _print_rerun(found: parts.Survey, shards: int | None, store: Store, config: Path) -> None:
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
    spec = parts.array_spec(rerun)
    out.print(f"shards to rerun (K={k}): --array={spec}")
    if record.get("shards") == k and scheduler.rerun_script(record, store.output).is_file():
        *lines, then = scheduler.rerun_lines(record, rerun, store.output)
        for line in lines:
            print(f"  {line}")
        print(f"  then: {then} (or sweep merge {config} once it is done)")


@app.command("submit")
def submit_cmd(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
               shards: Annotated[int, typer.Option(
                   "--shards", min=1, help="K: array tasks; task I runs jobs I, I + K, ...")]
               = ...,
               parallel: Annotated[int | None, typer.Option(
                   "--parallel", min=1, help="P: at most this many tasks at once (%P, -tc P).")]
               = None,
               scheduler_name: Annotated[str, typer.Option(
                   "--scheduler", help="Which scheduler's scripts to write and submit with: slurm "
                   "(sbatch) | pbs (PBS Pro, qsub) | lsf (bsub) | sge (Grid Engine, qsub).")]
               = "slurm",
               dry_run: Annotated[bool, typer.Option(
                   "--dry-run", help="Print the scripts; write and submit nothing.")] = False,
               scheduler_args: Annotated[list[str] | None, typer.Option(
                   "--scheduler-arg", help="An option for both scripts, written after the "
                   "scheduler's directive prefix, e.g. --scheduler-arg=--time=02:00:00 (slurm) "
                   "or --scheduler-arg='-l walltime=02:00:00' (pbs) (repeatable).")] = None,
               workers: Annotated[int | None, typer.Option(
                   "--workers", min=1, help="Jobs at once in each task (default: its CPUs).")]
               = None):
    """Write a job-array script plus a merge job that waits for the whole array to succeed,
    and submit both (sbatch, qsub or bsub; scripts in <output>.jobs/).

    The kernels are compiled once into NUMBA_CACHE_DIR (default <output>.jobs/numba-cache)
    before the array starts; on a shared file system every task then only reads that cache.
    """
    with user_errors():
        cfg = _load(config, sets)
        n_jobs = len(expand(cfg))
        plan = scheduler.make_plan(cfg.name, config, sets or [], _output(cfg, path), shards,
                                   parallel, workers, scheduler_args, scheduler_name)
        if shards > n_jobs:
            err.print(f"note: {shards} shards for {n_jobs} job(s); shards {n_jobs} to "
                      f"{shards - 1} have nothing to do")
        if dry_run:
            texts = scheduler.array_script(plan), scheduler.merge_script(plan)
            for script, text in zip(plan.scripts, texts):
                print(f"# ---- {script}\n{text}")
            return
        array_id, merge_id = scheduler.submit(plan, cfg.hash)
    out.print(f"array job {array_id}: {shards} task(s) over {n_jobs} job(s), logs in "
              f"{plan.logs}")
    out.print(f"merge job {merge_id}: runs when every task succeeded, writes {plan.output}")
    out.print(f"follow with: sweep status {config}" + "".join(f" --set {s}" for s in sets or []))


@app.command("compile")
def compile_cmd(config: ConfigArg, sets: SetOpt = None):
    """Compile the kernels a config needs into NUMBA_CACHE_DIR (run before many tasks start)."""
    from sweep.core.simulate import warm_up

    with user_errors():
        dtypes = {job.integrate.dtype for job in expand(_load(config, sets))}
    warm_up(dtypes)
    cache = os.environ.get("NUMBA_CACHE_DIR") or "Numba's default cache"
    out.print(f"kernels compiled ({', '.join(sorted(dtypes))}) into {cache}")
