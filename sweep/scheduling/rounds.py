"""`sweep submit --refine`: the rounds of a refinement on a scheduler, one job array per round,
each submitted by a driver job that runs when the array before it has succeeded.

A round's jobs are known only once the rounds before it are done, so nothing submits them
all at once. `sweep submit CONFIG --shards K --refine OPTIONS` (on the login node, then as
the driver job) reads the parts folder: when every round is done it writes the refinement
and stops; otherwise it writes into `<output>.jobs/` the array of the first round not done,
`round-R.<suffix>` (min(K, jobs left in it) tasks, task I running `sweep refine OPTIONS
--round R` on shard I of them: that round's share and nothing more), and the driver,
`refine-driver.<suffix>`, which runs the same `sweep submit` again; it submits the array,
then the driver with the scheduler's dependency on it (afterok). The driver needs the
scheduler's submit command on the compute nodes, as most clusters allow.
"""

from __future__ import annotations

import datetime as _dt
import json
import shlex
from dataclasses import replace

from sweep.scheduling.scripts import (
    Plan,
    array_script,
    compile_kernels,
    job_name,
    script,
    send_pair,
)


def refine_options(refine: dict) -> list[str]:
    """The `sweep refine` options of a refinement's keyword arguments (those of
    api.refine_rounds: var, level, along, tol, budget, seeds_per_point, time, direction)."""
    args = []
    for key, value in refine.items():
        if value is not None:
            args += [f"--{key.replace('_', '-')}", str(value)]
    return args


def round_paths(plan: Plan, round_: int):
    """The round's array script and the driver script."""
    suffix = plan.scheduler.suffix
    return (plan.jobs_dir / f"round-{round_}.{suffix}",
            plan.jobs_dir / f"refine-driver.{suffix}")


def round_script(plan: Plan, round_: int, options: list[str], out: str | None) -> str:
    """The array of one round: task I runs shard I of the plan's shards of round `round_`."""
    extra = ["-o", out] if out else []
    workers = ["--workers", str(plan.workers)] if plan.workers else []
    named = replace(plan, name=f"{plan.name}-round-{round_}")
    return array_script(named, named.sweep("refine", *options, "--round", str(round_),
                                           *extra, *workers))


def driver_script(plan: Plan, shards: int, options: list[str], submit_args: list[str]) -> str:
    """The driver: `sweep submit --refine` again, once the round's array has succeeded."""
    s = plan.scheduler
    command = plan.sweep("submit", "--shards", str(shards), "--scheduler", s.name,
                         *submit_args, "--refine", shlex.join(options))
    name = f"{job_name(plan.name)}-refine"
    return script(plan, [s.job_name], f"{plan.logs}/{s.merge_log.replace('merge', 'driver')}",
                  name, [], command, run="exec {cmd}", kind=1)


def submit_round(plan: Plan, round_: int, texts: dict, config_hash: str) -> tuple[str, str]:
    """Write the round's array and the driver, submit the array, then the driver on it;
    (array id, driver id). The kernels are compiled first, as for `sweep submit`."""
    s = plan.scheduler
    compile_kernels(plan)
    plan.logs.mkdir(parents=True, exist_ok=True)  # schedulers fail silently without it
    for path, text in texts.items():
        path.write_text(text)
        path.chmod(0o755)
    array, driver = texts
    array_id, driver_id = send_pair(s, array, driver, f"round {round_}'s array job {{id}} is "
                                    f"submitted; submit {driver} yourself once it has finished")
    record = {"scheduler": s.name, "round": round_, "shards": plan.shards,
              "array_job": array_id, "driver_job": driver_id, "config_hash": config_hash,
              "submitted": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    (plan.jobs_dir / "refine-submitted.json").write_text(json.dumps(record, indent=1) + "\n")
    return array_id, driver_id
