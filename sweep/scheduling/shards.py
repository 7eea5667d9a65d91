"""Which shard this process runs (--shard, SWEEP_SHARD or a scheduler's array variables), and
the CPUs its task was given.

Every step stays a file-in, file-out command: an array task runs `sweep run` on its shard
(parts only), a merge job runs `sweep merge`; nothing long-lived drives them. Jobs go to
shards round-robin by index (`sweep.config.grid.shard`), so shard I of K is jobs I, I + K, ...
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from sweep.config.grid import check_shard
from sweep.config.schema import clip
from sweep.errors import ConfigError
from sweep.execution.resources import available_cpus


class SchedulerError(ConfigError):
    """The scheduler refused a submission, or is not installed; str() says which."""


@dataclass(frozen=True)
class Shard:
    index: int   # I, 0-based
    count: int   # K
    source: str  # "--shard", "SWEEP_SHARD", "SLURM", "SGE", "PBS", "LSF"


# ---------------------------------------------------------------- shard from the environment

def integer(text: str) -> int | None:
    """The ASCII decimal integer `text` (sign and surrounding spaces allowed), else None.
    str.isdigit() and int() accept other digits (superscript two, Arabic-Indic numerals,
    1_000); a scheduler's variables never hold them, so they are mistakes to report."""
    text = text.strip()
    digits = text[1:] if text[:1] in "+-" else text
    return int(text) if digits.isascii() and digits.isdigit() else None


def parse_shard(spec: str, where: str = "--shard") -> tuple[int, int]:
    """'I/K' -> (I, K) with 0 <= I < K."""
    i, sep, k = spec.partition("/")
    i, k = integer(i), integer(k)
    if not sep or i is None or k is None:
        raise ConfigError(f"{where} {clip(spec)}: expected I/K with integers, e.g. 0/4")
    check_shard(i, k, f"{where} {clip(spec)}")
    return i, k


def _ints(env: Mapping[str, str], names: tuple[str, ...], scheduler: str) -> list[int] | None:
    """The named variables as integers; None if none is set; an error if only some are."""
    present = [n for n in names if env.get(n, "").strip()]
    if not present:
        return None
    if len(present) < len(names):
        missing = ", ".join(n for n in names if n not in present)
        raise ConfigError(f"{scheduler} array variables incomplete: {', '.join(present)} set "
                          f"but {missing} not; pass --shard I/K or set SWEEP_SHARD=I/K")
    values = [integer(env[n]) for n in names]
    if None in values:
        shown = ", ".join(f"{n}={clip(env[n], 20)}" for n in names)
        raise ConfigError(f"{scheduler} array variables are not integers: {shown}")
    return values


def _checked(i: int, k: int, scheduler: str, names: str) -> tuple[int, int]:
    check_shard(i, k, f"{scheduler} array variables ({names})",
                "; submit the array as 0..K-1 without gaps, or set SWEEP_SHARD=I/K")
    return i, k


def _shards_from(env: Mapping[str, str], scheduler: str, index_var: str) -> int:
    if not env.get("SWEEP_SHARDS", "").strip():
        raise ConfigError(f"{scheduler} array task ({index_var} set) but SWEEP_SHARDS is not: "
                          "export SWEEP_SHARDS=K (sweep submit writes it into its scripts)")
    count = integer(env["SWEEP_SHARDS"])
    if count is None:
        raise ConfigError(f"SWEEP_SHARDS={clip(env['SWEEP_SHARDS'])}: expected an integer")
    return count


def _slurm(env) -> tuple[int, int] | None:
    names = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_COUNT")
    v = _ints(env, names, "SLURM")
    return None if v is None else _checked(v[0] - v[1], v[2], "SLURM", ", ".join(names))


def _sge(env) -> tuple[int, int] | None:
    names = ("SGE_TASK_ID", "SGE_TASK_FIRST", "SGE_TASK_LAST", "SGE_TASK_STEPSIZE")
    if env.get("SGE_TASK_ID", "").strip() == "undefined":  # SGE sets this outside arrays
        return None
    v = _ints(env, names, "SGE")
    if v is None:
        return None
    task, first, last, step = v
    if step < 1 or (task - first) % step:
        raise ConfigError(f"SGE array variables inconsistent: {', '.join(names)} = {v}")
    return _checked((task - first) // step, (last - first) // step + 1, "SGE", ", ".join(names))


def _one_index(env, var: str, scheduler: str, offset: int) -> tuple[int, int] | None:
    v = _ints(env, (var,), scheduler)
    if v is None:
        return None
    return _checked(v[0] - offset, _shards_from(env, scheduler, var), scheduler,
                    f"{var} and SWEEP_SHARDS")


def shard_from_env(env: Mapping[str, str] | None = None) -> Shard | None:
    """The shard this process is in, from SWEEP_SHARD or a scheduler's array variables.

    Precedence: SWEEP_SHARD=I/K; SLURM (I = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN,
    K = SLURM_ARRAY_TASK_COUNT); SGE (I = (SGE_TASK_ID - SGE_TASK_FIRST) / SGE_TASK_STEPSIZE,
    K = (SGE_TASK_LAST - SGE_TASK_FIRST) / SGE_TASK_STEPSIZE + 1); PBS Pro (I = PBS_ARRAY_INDEX)
    and LSF (I = LSB_JOBINDEX - 1), both with K = SWEEP_SHARDS. None outside any array; an
    incomplete or inconsistent set of variables is a ConfigError, never a guess.
    """
    env = os.environ if env is None else env
    if env.get("SWEEP_SHARD", "").strip():
        return Shard(*parse_shard(env["SWEEP_SHARD"].strip(), "SWEEP_SHARD="), "SWEEP_SHARD")
    readers = (("SLURM", _slurm), ("SGE", _sge),
               ("PBS", lambda e: _one_index(e, "PBS_ARRAY_INDEX", "PBS", 0)),
               ("LSF", lambda e: _one_index(e, "LSB_JOBINDEX", "LSF", 1)))
    for name, read in readers:
        found = read(env)
        if found is not None:
            return Shard(*found, name)
    return None


def resolve_shard(spec: str | None, env: Mapping[str, str] | None = None) -> Shard | None:
    """--shard I/K if given, else the environment's shard (None: the whole sweep)."""
    if spec is not None:
        return Shard(*parse_shard(spec), "--shard")
    return shard_from_env(env)


def task_cpus(env: Mapping[str, str] | None = None) -> int:
    """The CPUs this task was given: its affinity mask, capped by the scheduler's count.

    The affinity mask is exact where the scheduler binds tasks to cores; the per-task count
    (SLURM_CPUS_PER_TASK, NCPUS on PBS, NSLOTS on SGE, LSB_DJOB_NUMPROC on LSF) covers
    schedulers that allocate without binding, where the mask is the whole node.
    """
    env = os.environ if env is None else env
    cpus = available_cpus()
    for var in ("SLURM_CPUS_PER_TASK", "NCPUS", "NSLOTS", "LSB_DJOB_NUMPROC"):
        text = env.get(var, "").strip()
        if not text:
            continue
        value = integer(text)
        if value is None or value < 1:
            raise ConfigError(f"{var}={clip(text)}: expected a positive integer (the CPUs "
                              "the scheduler gave this task)")
        return min(cpus, value)
    return cpus
