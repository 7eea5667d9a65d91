"""Commands for a cluster: status (what is missing, which shards to rerun), submit (a job
array plus a merge job) and compile (the kernel cache the array tasks share)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from sweep import api
from sweep.cli import (
    ConfigArg,
    JsonOpt,
    OutOpt,
    SetOpt,
    _load,
    _load_any,
    app,
    choices,
    out,
    user_errors,
)
from sweep.cli.refining import refine_keywords
from sweep.scheduling.scripts import SCHEDULERS
from sweep.storage.store import indices

Scheduler = choices("Scheduler", SCHEDULERS)


@app.command()
def status(config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
           shards: Annotated[int | None, typer.Option(
               "--shards", min=1, metavar="K", help="K of the job array, for the list of "
               "shards to rerun (default: K of the last `sweep submit`).")] = None,
           as_json: JsonOpt = False):
    """Completed, missing and failed jobs, and the shards to rerun (exit 0 when it could tell).

    --out is the results file, the parts beside it, as for `run` and `merge`."""
    with user_errors():
        st = api.status(_load(config, sets), path, shards)
    if as_json:
        print(json.dumps(_status_record(st)))
        return
    found = st.survey
    damaged = f", {len(found.damaged)} damaged" if found.damaged else ""
    out.print(f"{st.config.name}: {len(found.jobs)} job(s): {len(found.completed)} completed, "
              f"{len(found.missing)} missing, {len(found.failed)} failed{damaged} "
              f"(config hash {st.config.hash}, parts in {st.store.dir})", markup=False,
              soft_wrap=True)
    if found.missing:
        out.print(f"missing: {indices(found.missing)}", soft_wrap=True)
    for kind, listed in (("failed", found.failed), ("damaged", found.damaged)):
        for job, error in listed[:20]:
            out.print(f"{kind}: job {job.index} ({job.describe()}): {error}", markup=False,
                      soft_wrap=True)
    if found.strays:
        out.print(f"{len(found.strays)} part(s) belong to no job of this config (another "
                  "config or grid wrote them)")
    out.print(st.merged, markup=False, soft_wrap=True)
    _print_rerun(st, config)


def _print_rerun(st: api.Status, config) -> None:
    """The shards of K to resubmit, and the commands when `sweep submit` wrote the array."""
    if st.shards is None:
        if not st.complete:
            out.print("pass --shards K for the shards of a K-task array to rerun")
        return
    if not st.rerun:
        out.print(f"shards to rerun (K={st.shards}): none")
        return
    out.print(f"shards to rerun (K={st.shards}): --array={st.array}")
    if st.resubmit:
        *lines, then = st.resubmit
        for line in lines:
            print(f"  {line}")
        print(f"  then: {then} (or sweep merge {config} once it is done)")


def _status_record(st: api.Status) -> dict:
    found = st.survey
    return {"name": st.config.name, "config_hash": st.config.hash, "parts": str(st.store.dir),
            "jobs": len(found.jobs), "completed": len(found.completed),
            "missing": [j.index for j in found.missing],
            "failed": [{"index": j.index, "error": e} for j, e in found.failed],
            "damaged": [{"index": j.index, "error": e} for j, e in found.damaged],
            "strays": len(found.strays), "shards": st.shards, "rerun": st.rerun,
            "resubmit": st.resubmit, "merged": st.merged}


# what each task asks the scheduler for
CpusOpt = Annotated[int | None, typer.Option(
    "--cpus", min=1, metavar="C", help="CPUs each task asks for (default: --workers, else 1); "
    "a --scheduler-arg asking for CPUs replaces it.")]
MemOpt = Annotated[str | None, typer.Option(
    "--mem", metavar="SIZE", help="Memory each task asks for, e.g. 4G or 4096M (default: what "
    "`sweep plan` says C running jobs need, plus the interpreter); a --scheduler-arg asking "
    "for memory replaces it.")]


@app.command("submit")
def submit_cmd(
        config: ConfigArg, sets: SetOpt = None, path: OutOpt = None,
        shards: Annotated[int, typer.Option(
            "--shards", min=1, metavar="K",
            help="Array tasks; task I runs jobs I, I + K, ...")] = ...,
        parallel: Annotated[int | None, typer.Option(
            "--parallel", min=1, metavar="P",
            help="At most this many tasks at once (%P, -tc P).")] = None,
        scheduler: Annotated[Scheduler, typer.Option(
            "--scheduler", help="Which scheduler's scripts to write and submit with: slurm "
            "(sbatch), pbs (PBS Pro, qsub), lsf (bsub), sge (Grid Engine, qsub).")] = "slurm",
        dry_run: Annotated[bool, typer.Option(
            "--dry-run", help="Print the scripts; write and submit nothing.")] = False,
        scheduler_args: Annotated[list[str] | None, typer.Option(
            "--scheduler-arg", metavar="ARG", help="An option for both scripts, written after the "
            "scheduler's directive prefix, e.g. `--scheduler-arg=--time=02:00:00` (slurm) or "
            "`--scheduler-arg='-l walltime=02:00:00'` (pbs) (repeatable).")] = None,
        workers: Annotated[int | None, typer.Option(
            "--workers", min=1, metavar="N",
            help="Jobs at once in each task (default: its CPUs).")] = None,
        cpus: CpusOpt = None, memory: MemOpt = None,
        refine: Annotated[str | None, typer.Option(
            "--refine", metavar="OPTIONS", help="Submit a refinement instead: the options of "
            "`sweep refine` as one string, e.g. `--refine '--var clustered_fraction --level 0.5 "
            "--along beta --tol 0.5'`; one array per round, each followed by a driver job that "
            "submits the next (--out: where the refinement is written).")] = None,
        env_lines: Annotated[list[str] | None, typer.Option(
            "--env-line", metavar="LINE", help="A shell line both scripts run before sweep, e.g. "
            "`--env-line 'module load python/3.11'` or `--env-line 'source ~/venv/bin/activate'` "
            "(repeatable).")] = None):
    """Write a job-array script plus a merge job that waits for the whole array to succeed,
    and submit both (sbatch, qsub or bsub; scripts in `<output>.jobs/`).

    The kernels the config's jobs call are compiled once into the compile cache
    (`NUMBA_CACHE_DIR`, default `~/.cache/sweep/numba`) before the array starts; on a shared
    file system every task then only reads that cache.
    """
    with user_errors():
        asked = refine_keywords(config, refine) if refine is not None else None
        done = api.submit(_load_any(config, sets), shards, path, parallel, workers,
                          Scheduler(scheduler).value, scheduler_args, dry_run, env_lines,
                          asked, cpus, memory)
    if done.round is not None:
        _print_rounds(done, dry_run)
    else:
        _print_submitted(done, config, sets, path, shards)


def _print_submitted(done, config: Path, sets: list[str] | None, path: Path | None,
                     shards: int) -> None:
    """What `sweep submit` wrote and submitted (or, dry, would submit), and how to follow it."""
    task, merge = done.plan.requests
    says = (f"each task asks for {task.describe()}, the merge job {merge.describe()} "
            "(--cpus, --mem or a --scheduler-arg change them)")
    if done.ids is None:
        print(f"# {says}")
        for script, text in done.scripts.items():
            print(f"# ---- {script}\n{text}")
        print("# ---- submitted with (ARRAY_ID: the id the first prints; the merge job waits "
              "for the array to succeed)")
        print("\n".join(done.commands))
        return
    out.print(f"array job {done.ids[0]}: {shards} task(s) over {done.jobs} job(s), logs in "
              f"{done.plan.logs}", markup=False, soft_wrap=True)
    out.print(f"merge job {done.ids[1]}: runs when every task succeeded, writes "
              f"{done.plan.output}", markup=False, soft_wrap=True)
    out.print(says, markup=False, soft_wrap=True)
    where = [] if path is None else [f"output.path={done.plan.output}"]
    out.print(f"follow with: sweep status {config}" + "".join(f" --set {s}" for s in
                                                              [*(sets or []), *where]),
              markup=False, soft_wrap=True)


def _said(message: str) -> None:
    out.print(message, markup=False, soft_wrap=True)


@app.command("compile")
def compile_cmd(config: ConfigArg, sets: SetOpt = None):
    """Compile the kernels the config's jobs call into the compile cache (before many tasks
    start at once: concurrent first compilation into one cache can crash), several variants
    side by side on this process's CPUs."""
    from sweep.cli.progress import compiling
    from sweep.numerics import cache

    with user_errors():
        compiled = api.compile_kernels(_load_any(config, sets), compiling(_said))
    out.print(f"kernels compiled ({', '.join(compiled)}) into {cache.directory()}",
              markup=False, soft_wrap=True)


def _print_rounds(done, dry_run: bool) -> None:
    """What `sweep submit --refine` did: the refinement written, or the round's array and
    its driver (printed with --dry-run)."""
    if done.refined is not None:
        out.print(f"every round is done ({done.round}): refinement {done.refined}",
                  markup=False, soft_wrap=True)
        return
    if dry_run:
        for script, text in done.scripts.items():
            print(f"# ---- {script}\n{text}")
        print(f"# ---- submitted with (ARRAY_ID: the id the first prints; the driver waits "
              f"for round {done.round} to succeed, then submits the next round)")
        print("\n".join(done.commands))
        return
    out.print(f"round {done.round}: array job {done.ids[0]}, {done.plan.shards} task(s) over "
              f"{done.jobs} job(s); driver job {done.ids[1]} submits the next round once it "
              f"has succeeded; logs in {done.plan.logs}", markup=False, soft_wrap=True)
