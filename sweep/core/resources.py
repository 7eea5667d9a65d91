"""Memory a run will need, and what the machine (or its cgroup allocation) offers: free
memory and the CPUs this process may use.

The kernels never hold an n x n matrix: attention, velocities and observables work one row at
a time with O(n) scratch, so a job needs O(n d) memory plus its saved series and, with
`output.positions: trajectory`, n_saves x n x d positions. The merged dataset holds every
job's series (and positions) at once, a few times over while it is assembled and written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sweep.core.config import ConfigError
from sweep.core.grid import Job
from sweep.core.kernel import job_bytes
from sweep.kernels.codes import OBSERVABLES

JOB_OBJECT_BYTES = 4096  # a Job and its parameters, held for every grid point
GiB = 2**30


@dataclass(frozen=True)
class Need:
    per_job: int      # bytes one running job holds (state, scratch, series, positions)
    workers: int      # jobs asked to run at once
    merged: int       # bytes to assemble and write the merged dataset (0 if not merged)
    culprit: str      # the config key that drives the larger need


def need(jobs: list[Job], positions: str, workers: int, merged: bool = True) -> Need:
    """Estimate the peak memory of running `jobs` on `workers` threads, then merging them."""
    if not jobs:
        return Need(0, 0, 0, "grid")
    largest = max(jobs, key=lambda j: job_bytes(j, positions))
    n, d = largest.model.n, largest.model.d
    holds = job_bytes(largest, positions)
    per_job = holds + 4 * n * d * 8  # + drawing the start
    saves = max(j.integrate.n_saves for j in jobs)
    series = len(jobs) * saves * len(OBSERVABLES) * 8
    pos = 0
    if positions != "none" and len({(j.model.n, j.model.d) for j in jobs}) == 1:
        pos = len(jobs) * (saves if positions == "trajectory" else 1) * n * d * 8
    # parts read back + the stacked array + one reshaped copy per variable while writing
    merged_bytes = 3 * series + 2 * pos + len(jobs) * JOB_OBJECT_BYTES if merged else 0
    workers = max(1, min(workers, len(jobs)))
    traj = holds - job_bytes(largest, "none")
    if merged_bytes > per_job:
        culprit = "output.positions" if 2 * pos > 3 * series else "grid"
    else:
        culprit = ("output.positions" if 2 * traj > per_job
                   else "model.d" if d > n else "model.n")
    return Need(per_job, workers, merged_bytes, culprit)


def available_cpus() -> int:
    """The CPUs this process may use (its affinity mask: a cluster task's allocation where
    the scheduler binds tasks to cores; sweep.scheduling.shards.task_cpus caps it further)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes this process may still allocate: MemAvailable, capped by a cgroup limit."""
    limits = [_meminfo_available(), _cgroup_free()]
    found = [x for x in limits if x is not None]
    return min(found) if found else None


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def _cgroup_free() -> int | None:
    """Limit minus usage of this process's cgroup (v2, else v1); None if unlimited."""
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            cap = Path(limit).read_text().strip()
            used = int(Path(usage).read_text().strip())
        except (OSError, ValueError):
            continue
        if cap.isdigit() and int(cap) < 2**60:
            return max(int(cap) - used, 0)
    return None


def check(need: Need, available: int | None) -> None:
    """ConfigError naming the likely culprit if one job or the merge cannot fit at all."""
    if available is None or max(need.per_job, need.merged) <= available:
        return
    raise ConfigError(
        f"{need.culprit}: this sweep needs about {max(need.per_job, need.merged) / GiB:.3g} GiB "
        f"of memory (one job {need.per_job / GiB:.3g} GiB, merged dataset "
        f"{need.merged / GiB:.3g} GiB), more than the {available / GiB:.3g} GiB available; "
        "use fewer tokens, saves or jobs, or output.positions: none")


def workers_that_fit(need: Need, available: int | None) -> int:
    """How many of the requested workers can hold a job in memory at once (at least 1)."""
    if available is None or need.per_job == 0:
        return need.workers
    return max(1, min(need.workers, available // need.per_job))
