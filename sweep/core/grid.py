"""Expand a config's grid into jobs: deterministic order, stable ids, shards.

Axes form a Cartesian product in the order they are declared; a `zip` group is one axis whose
keys vary together (one dimension, named after its first key). Job `index` is the C-order
position in that product, so results reshape straight into the labelled array.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from sweep.core import inputs, weights
from sweep.core.config import (
    SECTIONS,
    Config,
    ConfigError,
    check_job,
    check_value,
    field_rule,
    make_rule,
    show,
    stable_hash,
)
from sweep.core.layer_keys import check_layers

MAX_JOBS = 1_000_000  # grid points one config may hold; split larger sweeps into configs
SEED_RULE = make_rule(int, low=0)

# Keys that another key's value leaves unused: (section, key) -> (the deciding key, which of
# its values leave it unused, why). Sweeping such a key only repeats identical jobs.
UNUSED_WHEN = {
    ("model", "beta"): ("model.head_beta", lambda v: v is not None,
                        "each head takes its beta from model.head_beta"),
    ("init", "overlap"): ("init.kind", lambda v: v != "equiangular",
                          "only init.kind: equiangular reads it"),
    ("init", "clusters"): ("init.kind", lambda v: v != "clusters",
                           "only init.kind: clusters reads it"),
    ("init", "spread"): ("init.kind", lambda v: v != "clusters",
                         "only init.kind: clusters reads it"),
}


@dataclass(frozen=True)
class Axis:
    """One dimension of the results. keys[k] takes values[k][i] at position i."""

    keys: tuple[str, ...]            # short names; keys[0] names the dimension
    sections: tuple[str | None, ...]  # "model" | "init" | "integrate" | None for seed
    values: tuple[tuple, ...]
    log: bool = False                # declared with logspace (threshold interpolates in log)

    @property
    def name(self) -> str:
        return self.keys[0]

    def __len__(self) -> int:
        return len(self.values[0])


@dataclass(frozen=True)
class Job:
    index: int
    id: str
    params: dict[str, Any]  # short name -> value, for every swept key
    model: Any
    init: Any
    integrate: Any
    seed: int
    source: Path | None = None  # the config file: input paths resolve relative to it

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params.items())


# ---------------------------------------------------------------- axis declarations

def resolve(name: str, where: str) -> tuple[str | None, str]:
    """Axis name -> (section, key). Short names must be unique across sections."""
    if name == "seed":
        return None, "seed"
    if "." in name:
        section, _, key = name.partition(".")
        if section in SECTIONS and key in _keys(section):
            return section, key
        raise ConfigError(f"{where}: {name!r} is not a sweepable key")
    owners = [s for s in SECTIONS if name in _keys(s)]
    if len(owners) == 1:
        return owners[0], name
    if owners:
        raise ConfigError(f"{where}: {name!r} is ambiguous, write one of "
                          + ", ".join(f"{s}.{name}" for s in owners))
    raise ConfigError(f"{where}: unknown axis {name!r} (a key of model, init or integrate, "
                      "or seed)")


def _keys(section: str) -> tuple[str, ...]:
    return tuple(SECTIONS[section].__dataclass_fields__)


def axis_values(spec: Any, where: str) -> tuple[list, bool]:
    """A value declaration -> (list of values, declared as logspace)."""
    if isinstance(spec, list):
        if not spec:
            raise ConfigError(f"{where}: an axis needs at least one value")
        return spec, False
    if isinstance(spec, dict) and len(spec) == 1:
        (form, args), = spec.items()
        if form in ("linspace", "logspace"):
            a, b, num = _args(args, 3, where, form)
            if not isinstance(num, int) or isinstance(num, bool) or num < 1:
                raise ConfigError(f"{where}.{form}: num must be a positive integer, got "
                                  f"{show(num)}")
            if num > MAX_JOBS:
                raise ConfigError(f"{where}.{form}: num {num} is more than the {MAX_JOBS} "
                                  "values a grid may hold")
            for v in (a, b):
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not abs(v) < 1e300:
                    raise ConfigError(f"{where}.{form}: expected finite numbers, got {show(v)}")
            fn = np.linspace if form == "linspace" else np.logspace
            with np.errstate(over="ignore"):  # an overflow is reported by check_value
                return [float(v) for v in fn(a, b, num)], form == "logspace"
        if form == "range":
            args = _args(args, (2, 3), where, form)
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in args):
                raise ConfigError(f"{where}.range: expected integers, got {show(args)}")
            if len(args) == 3 and args[2] == 0:
                raise ConfigError(f"{where}.range: step must not be 0")
            if not all(abs(v) < 2**62 for v in args) or len(range(*args)) > MAX_JOBS:
                raise ConfigError(f"{where}.range: {show(args)} holds more than the {MAX_JOBS} "
                                  "values a grid may hold")
            values = list(range(*args))
            if not values:
                raise ConfigError(f"{where}.range: {args!r} is empty")
            return values, False
    raise ConfigError(f"{where}: expected a list, or one of {{linspace|logspace|range: [...]}},"
                      f" got {show(spec)}")


def _args(args: Any, count, where: str, form: str) -> list:
    counts = count if isinstance(count, tuple) else (count,)
    if not isinstance(args, list) or len(args) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise ConfigError(f"{where}.{form}: expected a list of {want} values, got "
                          f"{show(args)}")
    return args


def _checked(section: str | None, key: str, values: list, where: str,
             distinct: bool = True) -> tuple:
    """The values checked against the key's rule (`where[i]` names a bad one)."""
    rule = SEED_RULE if section is None else field_rule(section, key)
    clean = tuple(check_value(f"{where}[{i}]", v, rule) for i, v in enumerate(values))
    if distinct and len(set(clean)) != len(clean):
        raise ConfigError(f"{where}: values must be distinct, got {show(list(clean))}")
    return clean


def _zip_axis(group: Any, where: str) -> Axis:
    if not isinstance(group, dict) or not group:
        raise ConfigError(f"{where}: expected a mapping of axes that vary together")
    keys, sections, values, log = [], [], [], False
    for name, spec in group.items():
        section, key = resolve(str(name), f"{where}.{name}")
        vals, is_log = axis_values(spec, f"{where}.{name}")
        vals = _checked(section, key, vals, f"{where}.{name}", distinct=False)
        if values and len(vals) != len(values[0]):
            raise ConfigError(f"{where}.{name}: has {len(vals)} values, but "
                              f"{keys[0]} has {len(values[0])}")
        log = log or (is_log and not keys)
        keys.append(key)
        sections.append(section)
        values.append(vals)
    if len(set(values[0])) != len(values[0]):
        raise ConfigError(f"{where}.{keys[0]}: values must be distinct")
    return Axis(tuple(keys), tuple(sections), tuple(values), log)


def axes(config: Config) -> list[Axis]:
    """The grid's axes in declaration order, a `seed: [0]` axis appended if none is given."""
    out: list[Axis] = []
    for name, spec in config.grid.items():
        name = str(name)
        if spec is None:  # `--set grid.d=null` drops an axis
            continue
        if name == "zip":
            if not isinstance(spec, list):
                raise ConfigError("grid.zip: expected a list of groups")
            out += [_zip_axis(g, f"grid.zip[{i}]") for i, g in enumerate(spec)]
            continue
        section, key = resolve(name, f"grid.{name}")
        vals, log = axis_values(spec, f"grid.{name}")
        out.append(Axis((key,), (section,), (_checked(section, key, vals, f"grid.{name}"),),
                        log))
    seen: set[str] = set()
    for axis in out:
        for key in axis.keys:
            if key in seen:
                raise ConfigError(f"grid.{key}: swept twice")
            seen.add(key)
    if "seed" not in seen:
        out.append(Axis(("seed",), (None,), ((0,),)))
    check_used(config, out)
    return out


def check_used(config: Config, grid: list[Axis]) -> None:
    """Refuse settings no grid point uses: a section value that an axis of the same key
    overrides, and a key that another key leaves unused at every grid point."""
    swept = {(s, k): vals for a in grid for k, s, vals in zip(a.keys, a.sections, a.values)}
    for section, key in swept:
        if f"{section}.{key}" in config.given:
            value = getattr(getattr(config, section), key)
            raise ConfigError(
                f"{section}.{key}: {show(value)} is never used, grid.{key} sweeps {key}; to fix "
                f"{key} drop the axis (--set grid.{key}=null), or sweep other values with "
                f"--set grid.{key}=[...]")
    for (section, key), (decider, unused, why) in UNUSED_WHEN.items():
        where = f"grid.{key}" if (section, key) in swept else f"{section}.{key}"
        if (section, key) not in swept and where not in config.given:
            continue
        dsec, dkey = decider.split(".")
        values = swept.get((dsec, dkey), (getattr(getattr(config, dsec), dkey),))
        if all(unused(v) for v in values):
            raise ConfigError(f"{where}: never used here, {why} ({decider}: "
                              f"{show(values[0])}); drop {where}")


# ---------------------------------------------------------------- jobs

def expand(config: Config) -> list[Job]:
    """Every grid point as a Job, in C order of the axes; every combination is checked."""
    grid = axes(config)
    count = math.prod(len(a) for a in grid)
    if count > MAX_JOBS:
        raise ConfigError(f"grid: {count} jobs is more than the {MAX_JOBS} one config may hold;"
                          " split the sweep into several configs")
    base = {s: getattr(config, s) for s in SECTIONS}
    jobs = []
    for index, position in enumerate(itertools.product(*(range(len(a)) for a in grid))):
        sections, params, seed = dict(base), {}, 0
        for axis, i in zip(grid, position):
            for key, section, vals in zip(axis.keys, axis.sections, axis.values):
                params[key] = vals[i]
                if section is None:
                    seed = vals[i]
                else:
                    sections[section] = replace(sections[section], **{key: vals[i]})
        where = f"grid point {index}: " + ", ".join(f"{k}={v}" for k, v in params.items())
        check_layers(sections["model"], sections["init"], sections["integrate"], f" ({where})")
        check_job(sections["model"], sections["init"], sections["integrate"], where)
        digests = inputs.check(sections["model"], sections["init"], seed, config.source)
        digests.update(weights.check(sections["model"], config.source))
        job_id = stable_hash({**{s: asdict(o) for s, o in sections.items()}, "seed": seed,
                              "positions": config.output.positions,
                              **({"files": digests} if digests else {})})
        jobs.append(Job(index, job_id, params, seed=seed, source=config.source, **sections))
    if len({job.model.layers is None for job in jobs}) > 1:
        raise ConfigError("model.layers: a sweep holds flows or layer models, not both (one "
                          "records over time, the other over layer)")
    return jobs


def shard(jobs: list[Job], i: int, k: int) -> list[Job]:
    """Shard i of k (0-based): jobs assigned round-robin by index, so that every shard gets
    a share of every part of the grid."""
    check_shard(i, k, f"--shard {i}/{k}")
    return [job for job in jobs if job.index % k == i]


def check_shard(i: int, k: int, where: str, hint: str = "") -> None:
    """The one rule of a shard, wherever it was given: 0 <= I < K."""
    if k < 1 or not 0 <= i < k:
        raise ConfigError(f"{where}: shard {i} of {k} does not exist, need 0 <= I < K{hint}")
