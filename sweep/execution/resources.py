"""Memory a run will need, and what the machine (or its cgroup allocation) offers: free
memory and the CPUs this process may use.

A job needs its kernel's scratch (sweep.execution.kernel.job_memory: O(n d) on the general path,
which works one row at a time, and the n x n matrices of the fast paths) plus its saved
series and, with `output.positions: trajectory`, n_saves x n x d positions. The merge
writes the dataset in blocks of consecutive jobs (sweep.storage.merging): it holds one block of
at most MERGE_BLOCK_BYTES (one job at least) and the part it is reading, whatever the size of
the whole; the file itself goes to disk. Every run also holds its Job objects (the job
list, their ids, the parts' index: JOB_OBJECT_BYTES each) and, per worker, the results of the
batch it is running (at most BATCH_BYTES). What the process may allocate is the least of free
memory, its cgroups' room and its address-space limit (RLIMIT_AS, `ulimit -v`) less what it
has mapped already.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

from sweep.config.grid import Job, kinds
from sweep.errors import ConfigError
from sweep.execution.kernel import job_memory
from sweep.kernels.codes import OBSERVABLES
from sweep.storage import MERGE_BLOCK_BYTES

JOB_OBJECT_BYTES = 4096  # a Job and its parameters, held for every grid point
BATCH_BYTES = 64 * 2**20  # what the jobs of one batch hold at most (kernel.job_memory)
GiB = 2**30


@dataclass(frozen=True)
class Need:
    per_job: int      # bytes one running job holds (state, scratch, series, positions)
    workers: int      # jobs asked to run at once
    merged: int       # bytes to merge the parts into one dataset (0 if not merged)
    job_culprit: str  # the config key that drives a job's need
    merge_culprit: str  # ... and the merged dataset's
    held: int = 0     # bytes of the Job objects, their ids and index entries (in `merged` too)
    batch: int = 0    # bytes one worker's batch holds (one job at least)

    @property
    def running(self) -> int:
        """The least a run holds: its jobs and one worker's batch."""
        return self.held + max(self.per_job, self.batch)


def need(jobs: list[Job], positions: str, workers: int, merged: bool = True,
         bins: int = 0) -> Need:
    """Estimate the peak memory of running `jobs` on `workers` threads, then merging them:
    a block of the merge and the parts it is read from, and every job's Job object.
    bins: output.hist_bins (a job's histograms, and their share of the merge)."""
    count, saves, shapes, parts, n, d, batch = 0, 0, set(), {}, 0, 0, 0
    for job, times in kinds(jobs):  # memory does not depend on a job's seed
        count += times
        saves = max(saves, job.integrate.n_saves)
        shapes.add((job.model.n, job.model.d))
        holds = job_memory(job, positions, bins)
        batch = max(batch, min(BATCH_BYTES, times * sum(holds.values())))
        if sum(holds.values()) > sum(parts.values()):
            parts, n, d = holds, job.model.n, job.model.d
    if not count:
        return Need(0, 0, 0, "grid", "grid")
    per_job = sum(parts.values()) + 4 * n * d * 8  # + drawing the start
    # one job's series, token_norm, scalars, histograms
    series = saves * (len(OBSERVABLES) + 1 + bins) * 8
    pos = 0
    if positions != "none" and len(shapes) == 1:
        pos = (saves if positions == "trajectory" else 1) * n * d * 8
    block = max(series + pos, min(count * (series + pos), MERGE_BLOCK_BYTES))
    # the block + the parts it is read from (a batch holds about as much)
    held = count * JOB_OBJECT_BYTES
    merged_bytes = 2 * block + held if merged else 0
    workers = max(1, min(workers, count))
    job_culprit = max(parts, key=parts.get)
    if job_culprit == "model.n" and d > n:
        job_culprit = "model.d"
    if held > per_job:
        job_culprit = "grid"
    merge_culprit = "grid" if held > series + pos else \
        "output.positions" if pos > series else "integrate.t_max"  # one job's results
    return Need(per_job, workers, merged_bytes, job_culprit, merge_culprit, held,
                max(batch, per_job))


def available_cpus() -> int:
    """The CPUs this process may use (its affinity mask: a cluster task's allocation where
    the scheduler binds tasks to cores; sweep.scheduling.shards.task_cpus caps it further)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes this process may still allocate: MemAvailable, capped by its cgroups' limits
    and by its address-space limit."""
    return memory_limit()[0]


def memory_limit() -> tuple[int | None, str]:
    """(bytes this process may still allocate, which limit says so, in words)."""
    limits = [(_meminfo_available(), ""), (cgroup_free(), " (its cgroup's limit)")]
    room = address_space_left()
    if room is not None:
        soft, used = room
        limits.append((soft - used, f" (the address-space limit, ulimit -v: {soft / GiB:.3g} "
                                    f"GiB, {used / GiB:.2g} GiB of it in use)"))
    found = [x for x in limits if x[0] is not None]
    return min(found, key=lambda x: x[0]) if found else (None, "")


def address_space_left(status: Path = Path("/proc/self/status")) -> tuple[int, int] | None:
    """(RLIMIT_AS soft limit, bytes mapped now: VmSize) when the limit is set, else None."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        sizes = [line.split()[1] for line in status.read_text().splitlines()
                 if line.startswith("VmSize:")]
        return soft, int(sizes[0]) * 1024
    except (OSError, ValueError, IndexError):
        return soft, 0


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


# (limit file, usage file) of the memory controller, cgroup v2 and v1
_CGROUP_FILES = {2: ("memory.max", "memory.current"),
                 1: ("memory.limit_in_bytes", "memory.usage_in_bytes")}
_UNLIMITED = 2**60  # v1 writes "no limit" as a page-rounded 2^63 - 1


def cgroup_free(proc: Path = Path("/proc/self"), root: Path = Path("/")) -> int | None:
    """Limit minus usage, the smallest over this process's own memory cgroup and every cgroup
    above it (a SLURM step's cgroup nests in its job's: .../job_N/step_M, each may be
    limited), for cgroup v2 and v1; None if no limit is found. proc and root: where
    /proc/self and / are (tests give a fake tree)."""
    free = []
    for version, directory, top in _memory_cgroups(proc, root):
        limit_name, usage_name = _CGROUP_FILES[version]
        while True:
            limit = _read_int(directory / limit_name)
            usage = _read_int(directory / usage_name)
            if limit is not None and usage is not None and limit < _UNLIMITED:
                free.append(max(limit - usage, 0))
            if directory == top or top not in directory.parents:
                break
            directory = directory.parent
    return min(free) if free else None


def _memory_cgroups(proc: Path, root: Path) -> list[tuple[int, Path, Path]]:
    """(version, this process's cgroup folder, the mount it lies under) per memory hierarchy.

    /proc/self/cgroup names the cgroup ("0::/path" on v2, "N:...memory...:/path" on v1);
    /proc/self/mountinfo says where that hierarchy is mounted and which of its paths is the
    mount's root (a container sees its own cgroup as "/")."""
    try:
        lines = (proc / "cgroup").read_text().splitlines()
    except OSError:
        return []
    mounts = _cgroup_mounts(proc)
    found = []
    for line in lines:
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        version = 2 if controllers == "" else 1 if "memory" in controllers.split(",") else 0
        if not version or not path.startswith("/"):
            continue
        mount, inside = mounts.get(version, (_DEFAULT_MOUNTS[version], "/"))
        top = root / mount.lstrip("/")
        relative = os.path.relpath(path, inside)
        found.append((version, top if relative == "." or relative.startswith("..")
                      else top / relative, top))
    return found


_DEFAULT_MOUNTS = {2: "/sys/fs/cgroup", 1: "/sys/fs/cgroup/memory"}


def _cgroup_mounts(proc: Path) -> dict[int, tuple[str, str]]:
    """version -> (mount point, the cgroup path mounted there) of the memory hierarchies."""
    mounts = {}
    try:
        lines = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return mounts
    for line in lines:
        fields, _, tail = line.partition(" - ")
        fields, tail = fields.split(), tail.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup2":
            mounts.setdefault(2, (fields[4], fields[3]))
        elif tail[0] == "cgroup" and "memory" in tail[2].split(","):
            mounts.setdefault(1, (fields[4], fields[3]))
    return mounts


def _read_int(path: Path) -> int | None:
    """A cgroup file's number; None if missing, unreadable or "max" (no limit)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isascii() and text.isdigit() else None


def check(need: Need, available: int | None, limit: str = "") -> None:
    """ConfigError naming the likely culprit if one job (with the run's jobs and one batch)
    or the merge cannot fit at all; `limit` says which limit `available` is."""
    peak = max(need.running, need.merged)
    if available is None or peak <= available:
        return
    culprit = need.job_culprit if need.running > available else need.merge_culprit
    jobs = f"{size(need.held)} for the jobs themselves, " if need.held else ""
    raise ConfigError(
        f"{culprit}: this sweep needs about {size(peak)} of memory ({jobs}one job "
        f"{size(need.per_job)}, merging {size(need.merged)}), more than the "
        f"{size(available)} available{limit}; {REMEDIES[culprit]}")


def size(count: int) -> str:
    """Bytes in GiB, or in MiB under 64 MiB (one job of a small sweep: 0.0027 MiB)."""
    return f"{count / GiB:.3g} GiB" if count >= 2**26 or count == 0 else \
        f"{count / 2**20:.3g} MiB"


REMEDIES = {"model.n": "use fewer tokens", "model.d": "use a smaller dimension",
            "model.heads": "use fewer heads",
            "integrate.t_max": "save fewer times (a shorter t_max or a larger save_every)",
            "output.positions": "use output.positions: final or none",
            "output.hist_bins": "use fewer output.hist_bins, or fewer tokens",
            "grid": "split the grid into several configs"}


def workers_that_fit(need: Need, available: int | None) -> int:
    """How many of the requested workers can hold a job in memory at once (at least 1)."""
    if available is None or need.per_job == 0:
        return need.workers
    room = available - need.held
    return max(1, min(need.workers, room // max(need.per_job, need.batch)))
