"""Job-array and merge scripts for a scheduler, and their submission.

`sweep submit` writes two scripts into `<output>.jobs/`: an array whose task I runs
`sweep run` on shard I of K (parts only), and a merge job that runs `sweep merge` once every
task has succeeded (`afterok`). For a training config both run `sweep train` (its tasks on
their shards, the merge job without one). Nothing stays running on the login node.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sweep.config.schema import clip
from sweep.numerics import cache
from sweep.scheduling.requests import Request, directives
from sweep.scheduling.shards import SchedulerError
from sweep.scheduling.survey import array_spec
from sweep.storage.store import beside

# Seconds before the time limit at which SLURM sends SIGUSR1 (LSF: minutes, rounded up), so a
# task stops cleanly (jobs in flight are abandoned, finished parts kept) instead of being
# killed mid-write.
SIGNAL_LEAD = 120


@dataclass(frozen=True)
class Scheduler:
    """One scheduler's directives and commands; the script writers below read only these.

    Templates take {name}, {log}, {workdir}, {range} (first-last in the scheduler's own
    numbering), {throttle}, {parallel} and {id}; a template naming {parallel} or {throttle}
    is dropped or left empty without --parallel. Paths are filled in quoted: for the shell in
    script lines and printed commands (shlex), for the scheduler in directives (directive).
    """

    name: str
    submit: tuple[str, ...]          # the command that submits a script (+ options)
    suffix: str                      # of the two script files
    prefix: str                      # of a directive line
    head: tuple[str, ...]            # directives of both scripts (job name excepted)
    job_name: str                    # the merge job's name directive
    array: tuple[str, ...]           # the array script's name and array directives
    array_log: str
    merge_log: str
    first: int                       # the array's first index: shard I is index I + first
    depend: tuple[str, ...]          # submit options making the merge wait for the array
    job_id: str                      # regular expression: group 1 is the id in the answer
    rerun: str                       # how to resubmit the shards {range} of an array
    body: tuple[str, ...] = ()       # lines before the command (after the exports)
    signal: tuple[str, ...] = ()     # the warning-signal directives, unless the user gave
    signal_opts: tuple[str, ...] = ()  # ... an option starting with one of these
    stdin: bool = False              # the script goes on stdin (bsub reads #BSUB only there)
    min_array: int = 1               # fewer tasks: one plain job running SWEEP_SHARD=0/1
    lists: bool = True               # an array range may be a list such as 0-2,5
    run: str = "exec {cmd}"          # how the script runs sweep


SLURM = Scheduler(
    name="slurm", submit=("sbatch", "--parsable"), suffix="sbatch", prefix="#SBATCH",
    head=("--output={log}", "--chdir={workdir}"), job_name="--job-name={name}",
    array=("--job-name={name}", "--array={range}{throttle}"),
    array_log="array-%A_%a.out", merge_log="merge-%j.out", first=0,
    depend=("--dependency=afterok:{id}",), job_id=r"^([^;\s]+)",
    rerun="sbatch --array={range} {script}",
    # The array's task ids are the shard numbers, also when a subset is resubmitted
    # (sbatch --array=1,4 ...), where SLURM_ARRAY_TASK_MIN would shift them.
    body=('export SWEEP_SHARD="${{SLURM_ARRAY_TASK_ID}}/${{SWEEP_SHARDS}}"',),
    signal=(f"--signal=B:USR1@{SIGNAL_LEAD}",), signal_opts=("--signal",))

# PBS Pro: no working-directory directive (jobs start in $HOME), arrays of >= 2 subjobs,
# `%P` (max_run_subjobs) since PBS Pro 2020; SIGTERM, then SIGKILL, at the walltime.
PBS = Scheduler(
    name="pbs", submit=("qsub",), suffix="pbs", prefix="#PBS",
    head=("-j oe", "-o {log}"), job_name="-N {name}", array=("-N {name}", "-J {range}{throttle}"),
    array_log="array-^array_index^.out", merge_log="merge.out", first=0,
    depend=("-W", "depend=afterok:{id}"), job_id=r"^(\S+)", rerun="qsub -J {range} {script}",
    body=("cd {workdir}",), min_array=2, lists=False)

# LSF: -wa/-wt send SIGUSR1 before the run limit; -ti cancels the merge when the array fails
# (done() could never be satisfied, the merge would pend forever).
LSF = Scheduler(
    name="lsf", submit=("bsub",), suffix="lsf", prefix="#BSUB",
    head=("-o {log}", "-cwd {workdir}"), job_name="-J {name}",
    array=('-J "{name}[{range}]{throttle}"',), array_log="array-%J_%I.out",
    merge_log="merge-%J.out", first=1, depend=("-w", "done({id})", "-ti"),
    job_id=r"Job <(\d+)>", rerun='bsub -J "{name}[{range}]" < {script}',
    signal=("-wa USR1", f"-wt {-(-SIGNAL_LEAD // 60)}"), signal_opts=("-wa", "-wt"),
    stdin=True)

# SGE: -hold_jid waits for the array to end, not to succeed; a task that exits 100 is put in
# an error state that keeps its dependants on hold, so a failed job (exit 1) exits 100. The
# shell ignores SIGUSR1 (sent to the whole job at s_rt) so only sweep acts on it. The shard
# comes from SGE_TASK_ID, since a resubmitted subset (qsub -t 3) shifts SGE_TASK_FIRST.
SGE = Scheduler(
    name="sge", submit=("qsub", "-terse"), suffix="sge", prefix="#$",
    head=("-S /bin/bash", "-j y", "-o {log}", "-wd {workdir}"), job_name="-N {name}",
    array=("-N {name}", "-t {range}", "-tc {parallel}"),
    array_log="array-$JOB_ID.$TASK_ID.out", merge_log="merge-$JOB_ID.out", first=1,
    depend=("-hold_jid", "{id}"), job_id=r"^(\d+)", rerun="qsub -t {range} {script}",
    body=('export SWEEP_SHARD="$((SGE_TASK_ID - 1))/${{SWEEP_SHARDS}}"',), lists=False,
    run="trap '' USR1\n{cmd} || status=$?\nexit $(( ${status:-0} == 1 ? 100 : ${status:-0} ))")

SCHEDULERS = {s.name: s for s in (SLURM, PBS, LSF, SGE)}


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
    scheduler: Scheduler = SLURM
    command: str = "run"          # or "train": the tasks of a training config (sweep train)
    env_lines: tuple[str, ...] = ()  # shell lines before sweep runs (module load, source)
    requests: tuple[Request, ...] = ()  # CPUs and memory: (the array's tasks, the merge job)

    @property
    def jobs_dir(self) -> Path:
        return jobs_dir(self.output)

    @property
    def logs(self) -> Path:
        return self.jobs_dir / "logs"

    @property
    def scripts(self) -> tuple[Path, Path]:
        """The array script and the merge script."""
        return script_paths(self.output, self.scheduler)

    @property
    def is_array(self) -> bool:
        return self.shards >= self.scheduler.min_array

    def sweep(self, command: str, *extra: str) -> list[str]:
        """The command line a task execs: this interpreter, so the task gets this install."""
        args = [sys.executable, "-m", "sweep", command, str(self.config)]
        for s in self.sets:
            args += ["--set", s]
        return args + [*extra]


def jobs_dir(output: str | Path) -> Path:
    return beside(output, "jobs")


def script_paths(output: str | Path, scheduler: Scheduler) -> tuple[Path, Path]:
    return tuple(jobs_dir(output) / f"{kind}.{scheduler.suffix}" for kind in ("array", "merge"))


def make_plan(name: str, config: Path, sets: list[str], output: Path, shards: int,
              parallel: int | None = None, workers: int | None = None,
              scheduler_args: list[str] | None = None, scheduler: str = "slurm",
              command: str = "run", env_lines: list[str] | None = None,
              requests: tuple[Request, Request] | tuple = ()) -> Plan:
    if scheduler not in SCHEDULERS:
        raise SchedulerError(f"--scheduler {scheduler}: one of {' | '.join(SCHEDULERS)}")
    for arg in scheduler_args or []:
        if "\n" in arg or not arg.startswith("-"):
            raise SchedulerError(f"--scheduler-arg {arg!r}: expected one option such as "
                                 "--time=02:00:00 (SLURM) or '-l walltime=02:00:00' (PBS)")
    for line in env_lines or []:
        if "\n" in line or "\r" in line or not line.strip():
            raise SchedulerError(f"--env-line {line!r}: expected one shell line such as "
                                 "'module load python/3.11'")
    cwd = Path.cwd()
    return Plan(name, (cwd / config).resolve(), tuple(sets), (cwd / output).resolve(), shards,
                parallel, workers, tuple(scheduler_args or ()), cwd, cache.directory().resolve(),
                SCHEDULERS[scheduler], command, tuple(env_lines or ()), tuple(requests))


def _fill(template: str, plan: Plan, quote=shlex.quote, **more: object) -> str:
    """The template with the plan's values; `quote` quotes the paths (workdir, log)."""
    s = plan.scheduler
    throttle = f"%{plan.parallel}" if plan.parallel else ""
    last = s.first + plan.shards - 1
    paths = {k: quote(str(v)) for k, v in {"workdir": plan.workdir, **more}.items()
             if k in ("workdir", "log")}
    return template.format(**{**more, **paths}, throttle=throttle, parallel=plan.parallel,
                           range=_span(s.first, last))


_PLAIN = re.compile(r"[\w@%+=:,./^$-]*", re.ASCII)


def directive(value: str) -> str:
    """A path as a directive's argument: as it is if plain, else in double quotes, which
    sbatch, qsub (PBS, SGE) and bsub all read as one argument, spaces, $ and # included
    (directives are never run by a shell). A double quote, backslash or newline in it has
    no spelling every scheduler reads alike, and is refused."""
    if any(c in value for c in '"\\\n'):
        raise SchedulerError(f"{clip(value)}: a path with a double quote, backslash or "
                             "newline cannot be written into job-script directives")
    return value if _PLAIN.fullmatch(value) else f'"{value}"'


def job_name(name: str) -> str:
    """A config name as a job name: schedulers take letters, digits and _.- (PBS refuses
    spaces), so anything else becomes _."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"sweep-{name}")


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def array_script(plan: Plan, command: list[str] | None = None) -> str:
    """The array script: task I runs shard I of K (see the scheduler's `rerun` for a subset)
    of `command` (default: the plan's run, or train)."""
    s, name = plan.scheduler, job_name(plan.name)
    if plan.is_array:
        array = [t for t in s.array if plan.parallel or "{parallel}" not in t]
        shard = [f"export SWEEP_SHARDS={plan.shards}", *s.body]
    else:  # too few tasks for this scheduler's arrays: one plain job runs the only shard
        array = [s.job_name]
        shard = [f"export SWEEP_SHARD=0/{plan.shards}",
                 *(line for line in s.body if "SHARD" not in line)]
    if not any(a.startswith(s.signal_opts) for a in plan.scheduler_args if s.signal_opts):
        array += s.signal
    workers = ("--workers", str(plan.workers)) if plan.workers else ()
    run = command or (plan.sweep("train", "-o", str(plan.output.parent))
                      if plan.command == "train"
                      else plan.sweep("run", "--out", str(plan.output), *workers))
    log = s.array_log if plan.is_array else s.merge_log.replace("merge", "array")
    return script(plan, array, f"{plan.logs}/{log}", name, shard, run, kind=0)


def merge_script(plan: Plan) -> str:
    """The merge script; submitted with the scheduler's `depend` options on the array."""
    s = plan.scheduler
    merge = (plan.sweep("train", "-o", str(plan.output.parent)) if plan.command == "train"
             else plan.sweep("merge", "--set", f"output.path={json.dumps(str(plan.output))}"))
    return script(plan, [s.job_name], f"{plan.logs}/{s.merge_log}",
                  f"{job_name(plan.name)}-merge", [], merge, run="exec {cmd}", kind=1)


def script(plan: Plan, first: list[str], log: str, name: str, body: list[str],
           command: list[str], run: str | None = None, kind: int = 0) -> str:
    """A job script: the directives `first` and the scheduler's, the CPUs and memory of
    plan.requests[kind] (0 an array task, 1 a merge or driver job), the environment, `body`,
    then `command` run as `run` says (default: the scheduler's way)."""
    s = plan.scheduler
    made = [_fill(d, plan, directive, name=name, log=log) for d in [*first, *s.head]]
    if plan.requests:  # CPUs and memory, unless a --scheduler-arg asks for them
        made += directives(s.name, plan.requests[kind], plan.scheduler_args)
    lines = ["#!/bin/bash", *(f"{s.prefix} {d}" for d in made + [*plan.scheduler_args]),
             "set -eu", *plan.env_lines, "",
             *(_fill(line, plan) for line in body if line.startswith("export")),
             f"export NUMBA_CACHE_DIR={shlex.quote(str(plan.numba_cache))}",
             *(_fill(line, plan) for line in body if not line.startswith("export")),
             (run or s.run).replace("{cmd}", shlex.join(command))]
    return "\n".join(lines) + "\n"


def write_scripts(plan: Plan) -> tuple[Path, Path]:
    """Write both scripts (and the log directory: schedulers fail silently without it)."""
    plan.logs.mkdir(parents=True, exist_ok=True)
    for path, text in zip(plan.scripts, (array_script(plan), merge_script(plan))):
        path.write_text(text)
        path.chmod(0o755)
    return plan.scripts


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


def _need(scheduler: Scheduler) -> None:
    if shutil.which(scheduler.submit[0]) is None:
        raise SchedulerError(f"{scheduler.submit[0]} not found: is {scheduler.name.upper()} "
                             "installed here? (--dry-run prints the scripts without submitting)")



def send_pair(s, array: Path, then: Path, recover: str) -> tuple[str, str]:
    """Submit `array`, then `then` waiting for it to succeed: their ids. If the second is
    refused, SchedulerError with `recover` (how to finish by hand; {id}: the array's id)."""
    array_id = send(s, array)
    try:
        return array_id, send(s, then, *(d.format(id=array_id) for d in s.depend))
    except SchedulerError as err:
        raise SchedulerError(f"{err} ({recover.replace('{id}', array_id)})") from None


def send(scheduler: Scheduler, script: Path, *options: str) -> str:
    """Submit one script; its job id as the scheduler's dependency options want it."""
    argv = [*scheduler.submit, *options] + ([] if scheduler.stdin else [str(script)])
    with open(script) as stdin:
        done = subprocess.run(argv, stdin=stdin if scheduler.stdin else subprocess.DEVNULL,
                              capture_output=True, text=True)
    if done.returncode != 0:
        raise SchedulerError(f"{argv[0]} {script} refused: {_last_line(done.stderr)}")
    found = re.search(scheduler.job_id, done.stdout.strip(), re.MULTILINE)
    if found is None:
        raise SchedulerError(f"{argv[0]} {script}: no job id in its answer "
                             f"{_last_line(done.stdout)!r}")
    return found.group(1)


def submit(plan: Plan, config_hash: str) -> tuple[str, str]:
    """Compile, write, submit the array and its merge job; (array id, merge id)."""
    s = plan.scheduler
    _need(s)
    compile_kernels(plan)
    array, merge = write_scripts(plan)
    array_id, merge_id = send_pair(s, array, merge, "array job {id} is submitted; cancel it "
                                   f"or submit {merge} yourself")
    record = {"scheduler": s.name, "shards": plan.shards, "array_job": array_id,
              "merge_job": merge_id, "job_name": job_name(plan.name),
              "config_hash": config_hash,
              "submitted": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    (plan.jobs_dir / "submitted.json").write_text(json.dumps(record, indent=1) + "\n")
    return array_id, merge_id


def submit_lines(plan: Plan, paths: tuple[Path, Path] | None = None) -> list[str]:
    """The commands `sweep submit` runs for the plan's scripts (or `paths`): the array, then
    the merge job (or driver) with the options that make it wait for the array to succeed."""
    s, (array, merge) = plan.scheduler, paths or plan.scripts
    options = s.submit[1:]
    depend = [shlex.quote(d.format(id="ARRAY_ID")) for d in s.depend]
    return [_command(s, array, *options), _command(s, merge, *options, *depend)]


def rerun_lines(record: dict, shards: list[int], output: str | Path) -> list[str]:
    """The commands that resubmit shards (0-based) of the array `record` describes, then
    the merge job after them."""
    s = _recorded(record)
    k, (script, merge) = record["shards"], script_paths(output, s)
    then = _command(s, merge, *(d.format(id="<that job>") for d in s.depend))
    if k < s.min_array:
        return [_command(s, script), then]
    ids = [i + s.first for i in shards]
    runs = [array_spec(ids)] if s.lists else array_spec(ids).split(",")
    lines = []
    for run in runs:
        if run.isdigit() and s.min_array > 1:  # widen by a neighbour (its done jobs skip)
            i = int(run)
            run = _span(i, i + 1) if i + 1 < s.first + k else _span(i - 1, i)
        lines.append(s.rerun.format(range=run, script=shlex.quote(str(script)),
                                    name=record.get("job_name", "")))
    return lines + [then]


def rerun_script(record: dict, output: str | Path) -> Path:
    """The array script the recorded submission wrote."""
    return script_paths(output, _recorded(record))[0]


def _recorded(record: dict) -> Scheduler:
    return SCHEDULERS.get(record.get("scheduler", "slurm"), SLURM)


def _command(s: Scheduler, script: Path, *options: str) -> str:
    args = " ".join([s.submit[0], *options])
    script = shlex.quote(str(script))
    return f"{args} < {script}" if s.stdin else f"{args} {script}"


def submitted(output: str | Path) -> dict | None:
    """The record of the last submission for this output, if any."""
    try:
        return json.loads((jobs_dir(output) / "submitted.json").read_text())
    except (OSError, ValueError):
        return None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"
