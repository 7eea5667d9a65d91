"""What each job-array task and the merge job ask their scheduler for: CPUs and memory.

A task runs `workers` jobs at once, so it asks for that many CPUs and for the memory of that
many running jobs plus the interpreter with its libraries (RESIDENT_BASE_MIB) and the Job
objects of its shard; the merge job asks for one CPU and the merge's block and parts
(sweep.execution.resources.need). A `--scheduler-arg` that already asks for CPUs or memory
replaces the matching request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sweep.scheduling.shards import SchedulerError

# What a `sweep run` process holds before its jobs: Python, NumPy, Numba and its LLVM, the
# netCDF library, the loaded kernels (about 0.85 GiB resident while compiling; the tasks
# only load what `sweep submit` compiled).
RESIDENT_BASE_MIB = 1024
ROUND_MIB = 256  # requests rounded up to this, so that they read as 1.25G, 1.5G, ...
# SGE's h_vmem limits address space, not resident memory: the libraries map about 1 GiB
# more than they touch, and each worker thread its stack and malloc arena.
VIRTUAL_EXTRA_MIB, VIRTUAL_PER_CPU_MIB = 1024, 64


@dataclass(frozen=True)
class Request:
    """One script's CPUs and memory (MiB for the whole job)."""

    cpus: int
    memory_mib: int

    def describe(self) -> str:
        return f"{self.cpus} CPU(s), {self.memory_mib / 1024:.3g} GiB"


def memory_mib(need_bytes: int) -> int:
    """The interpreter's base plus `need_bytes`, rounded up to ROUND_MIB."""
    mib = RESIDENT_BASE_MIB + -(-need_bytes // 2**20)
    return -(-mib // ROUND_MIB) * ROUND_MIB


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", re.IGNORECASE)
_UNIT_MIB = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024**2}


def parse_memory(text: str) -> int:
    """'4G', '4096M', '1.5GiB', '512' (MiB) -> MiB; SchedulerError naming --mem otherwise."""
    found = _SIZE.fullmatch(text.strip())
    mib = float(found.group(1)) * _UNIT_MIB[found.group(2).lower()] if found else 0
    if mib < 1:
        raise SchedulerError(f"--mem {text!r}: expected a size such as 4G or 4096M "
                             "(memory per task)")
    return int(-(-mib // 1))


def directives(scheduler: str, request: Request, given: tuple[str, ...]) -> list[str]:
    """The request as the scheduler's directives (after its prefix), leaving out a CPU or
    memory request that one of the user's `given` options already makes."""
    cpus, mib = request.cpus, request.memory_mib
    asked = " ".join(given)
    if scheduler == "slurm":
        lines = [(f"--cpus-per-task={cpus}", r"(^| )(--cpus-per-task|-c ?\d)"),
                 (f"--mem={mib}M", r"(^| )--mem")]
    elif scheduler == "pbs":  # one chunk on one host: ncpus and mem together
        lines = [(f"-l select=1:ncpus={cpus}:mem={mib}mb", r"select=|ncpus|mem=")]
    elif scheduler == "lsf":  # memory per host, which for -n on one host is per task
        lines = [(f"-n {cpus}", r"(^| )-n\b"),
                 ('-R "span[hosts=1]"' if cpus > 1 else "", r"span\["),
                 (f'-R "rusage[mem={mib}MB]"', r"rusage\["), (f"-M {mib}MB", r"(^| )-M\b")]
    else:  # sge: address space per slot; the parallel environment's name is the site's
        virtual = mib + VIRTUAL_EXTRA_MIB + VIRTUAL_PER_CPU_MIB * cpus
        lines = [(f"-pe smp {cpus}" if cpus > 1 else "", r"(^| )-pe\b"),
                 (f"-l h_vmem={-(-virtual // cpus)}M", r"h_vmem")]
    return [line for line, mine in lines if line and not re.search(mine, asked)]
