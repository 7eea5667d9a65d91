"""Expand a config's grid into jobs: deterministic order, stable ids, shards.

Axes form a Cartesian product in the order they are declared; a `zip` group is one axis whose
keys vary together (one dimension, named after its first key). Job `index` is the C-order
position in that product, so results reshape straight into the labelled array.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from sweep.config import inputs, weights
from sweep.config.layer_keys import check_layers
from sweep.config.rules import check_job
from sweep.config.schema import (
    SECTIONS,
    Config,
    check_value,
    clip,
    digest,
    field_rule,
    id_fields,
    make_rule,
    show,
    stable_json,
)
from sweep.config.usage import check_used
from sweep.config.yamltext import suggest
from sweep.errors import ConfigError

MAX_JOBS = 1_000_000  # grid points one config may hold; split larger sweeps into configs
SEED_RULE = make_rule(int, low=0)

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


@dataclass(frozen=True, slots=True)  # slots: a shard of a large sweep holds many of these
class Job:
    index: int
    id: str
    params: dict[str, Any]  # short name -> value, for every swept key
    model: Any
    init: Any
    integrate: Any
    seed: int
    source: Path | None = None  # the config file: input paths resolve relative to it
    digests: dict[str, str] = field(default_factory=dict)  # input key -> content, in the id

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
        raise ConfigError(f"{where}: {show(name)} is not a sweepable key")
    owners = [s for s in SECTIONS if name in _keys(s)]
    if len(owners) == 1:
        return owners[0], name
    if owners:
        raise ConfigError(f"{where}: {show(name)} is ambiguous, write one of "
                          + ", ".join(f"{s}.{name}" for s in owners))
    keys = [k for section in SECTIONS for k in _keys(section)] + ["seed"]
    raise ConfigError(f"{where}: unknown axis {show(name)} ({suggest(name, keys)}a key "
                      "of model, init or integrate, or seed)")


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
                raise ConfigError(f"{where}.range: {show(args)} is empty")
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
        at = f"{where}.{clip(name)}"
        section, key = resolve(str(name), at)
        vals, is_log = axis_values(spec, at)
        vals = _checked(section, key, vals, at, distinct=False)
        if values and len(vals) != len(values[0]):
            raise ConfigError(f"{at}: has {len(vals)} values, but "
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
        at = f"grid.{clip(name)}"
        section, key = resolve(name, at)
        vals, log = axis_values(spec, at)
        out.append(Axis((key,), (section,), (_checked(section, key, vals, at),), log))
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


# ---------------------------------------------------------------- jobs

def expand(config: Config) -> Jobs:
    """Every grid point as a Job, in C order of the axes; every combination is checked."""
    grid = axes(config)
    count = math.prod(len(a) for a in grid)
    if count > MAX_JOBS:
        raise ConfigError(f"grid: {count} jobs is more than the {MAX_JOBS} one config may hold;"
                          " split the sweep into several configs")
    jobs = Jobs(config, grid)
    jobs.check()
    return jobs


class Jobs(Sequence):
    """The jobs of a grid in C order of its axes, each built when it is asked for.

    A grid holds its axes and the distinct sections they make, never one object per job, so
    a million-job plan stays small. Job i is rebuilt from its position (equal each time); its
    id hashes the canonical JSON of its sections, seed, positions and input digests, put
    together from pieces serialised once per distinct section (config.stable_json composes).
    """

    def __init__(self, config: Config, grid: list[Axis]):
        self.config, self.axes = config, grid
        self.shape = tuple(len(a) for a in grid)
        self._strides = tuple(math.prod(self.shape[k + 1:]) for k in range(len(grid)))
        self._base = {s: getattr(config, s) for s in SECTIONS}
        self._touch = {s: tuple(k for k, a in enumerate(grid) if s in a.sections)
                       for s in SECTIONS}  # the axes that set a key of each section
        # axes that change no section (a plain seed axis), or the start only (init)
        self._seeds = {k for k, a in enumerate(grid) if a.keys == ("seed",)}
        self._starts = {k for k, a in enumerate(grid) if set(a.sections) <= {None, "init"}}
        self._fixed = {"positions": json.dumps(config.output.positions)}
        if config.output.observables != "all":  # a part holds only these series
            self._fixed["observables"] = json.dumps(list(config.output.observables))
        labels = {k: json.dumps(k) + ":" for k in [*SECTIONS, "seed", *self._fixed, "files"]}
        self._order = {False: [(k, labels[k]) for k in sorted(set(labels) - {"files"})],
                       True: sorted(labels.items())}  # pieces in sorted order, with files
        self._digests: dict[tuple[str, str], str] = {}  # (key, path text) -> at plan time
        self._columns = [tuple(zip(a.keys, a.values)) for a in grid]
        self._section = functools.lru_cache(maxsize=4096)(self._build)

    def __len__(self) -> int:
        return math.prod(self.shape)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = operator.index(index)
        index += len(self) if index < 0 else 0
        if not 0 <= index < len(self):
            raise IndexError(f"job {index} of {len(self)}")
        return self._job(index, tuple(index // s % n for s, n in zip(self._strides, self.shape)))

    def __iter__(self) -> Iterator[Job]:
        for index, position in enumerate(itertools.product(*map(range, self.shape))):
            yield self._job(index, position)

    def kinds(self) -> Iterator[tuple[Job, int]]:
        """(job, how many jobs it stands for) for what depends on the model and integrate
        sections alone (memory, cost, stability): the jobs at the first value of every axis
        that changes only the seed or the start, each standing for all those values."""
        count = math.prod(self.shape[k] for k in self._starts)
        for index, position in self._firsts(self._starts):
            yield self._job(index, position), count

    def check(self) -> None:
        """Every rule and input file of every grid point (ConfigError naming the first bad
        point, the first seed standing for the others); records each input file's digest."""
        kinds = set()  # each point's model kind (sweep.config.kinds): a sweep holds one
        for index, position in self._firsts(self._seeds):
            model, init, integ = (self._section(s, self._at(s, position))[0]
                                  for s in ("model", "init", "integrate"))
            try:
                check_point(model, init, integ)
            except ConfigError:
                check_point(model, init, integ, self._where(index, position))  # names it
                raise
            kinds.add(model.kind)
            named = files(model, init)
            for seed in self._seeds_to_check(position, "init.path" in named):
                found = inputs.check(model, init, seed, self.config.source)
                found.update(weights.check(model, self.config.source))
                for key, text in named.items():
                    self._digests.setdefault((key, text), found[key])
        if len(kinds) > 1:
            raise ConfigError("model.layers: a sweep holds flows or layer models, not both (one "
                              "records over time, the other over layer)")
        if self.config.output.hist_bins and any(k.stacked for k in kinds):
            raise ConfigError("output.hist_bins: the cosine histograms over time are of flows; "
                              "a layer model's per layer: `sweep probe --bins`")

    def _firsts(self, pinned: set[int]) -> Iterator[tuple[int, tuple]]:
        """(index, position) in order of the grid points at the first value of the axes
        `pinned`."""
        ranges = [range(1) if k in pinned else range(n) for k, n in enumerate(self.shape)]
        for position in itertools.product(*ranges):
            yield sum(i * s for i, s in zip(position, self._strides)), position

    def _seeds_to_check(self, position: tuple, per_seed: bool) -> list[int]:
        """The seeds of the first-seed job at `position`: all of a plain seed axis when the
        start is read from a file (its slice per seed is checked), else that job's own."""
        if per_seed and self._seeds:
            return list(self.axes[min(self._seeds)].values[0])
        return [self._params(position)["seed"]]

    def _at(self, section: str, position: tuple) -> tuple:
        return tuple([position[k] for k in self._touch[section]])

    def _build(self, section: str, at: tuple):
        """(section object, its stable_json) at the positions `at` of the axes touching it."""
        changes = {}
        for k, i in zip(self._touch[section], at):
            axis = self.axes[k]
            for key, owner, values in zip(axis.keys, axis.sections, axis.values):
                if owner == section:
                    changes[key] = values[i]
        obj = replace(self._base[section], **changes)
        return obj, stable_json(id_fields(obj))

    def _params(self, position: tuple) -> dict[str, Any]:
        return {key: values[i] for columns, i in zip(self._columns, position)
                for key, values in columns}

    def _where(self, index: int, position: tuple) -> str:
        params = self._params(position)
        return f"grid point {index}: " + ", ".join(f"{k}={v}" for k, v in params.items())

    def _job(self, index: int, position) -> Job:
        objects, pieces = {}, dict(self._fixed)
        for s in SECTIONS:
            objects[s], pieces[s] = self._section(s, self._at(s, position))
        params = self._params(position)
        pieces["seed"] = str(params["seed"])  # an int (SEED_RULE): its JSON
        digests = ({key: self._digests[key, text] for key, text in
                    files(objects["model"], objects["init"]).items()}
                   if self._digests else {})
        if digests:
            pieces["files"] = stable_json(digests)
        text = ",".join([label + pieces[k] for k, label in self._order[bool(digests)]])
        return Job(index, digest("{" + text + "}"), params, objects["model"], objects["init"],
                   objects["integrate"], params["seed"], self.config.source, digests)


def check_point(model, init, integ, where: str = "") -> None:
    """The rules of one grid point: a layer model's keys (layer_keys), then every job's."""
    check_layers(model, init, integ, f" ({where})" if where else "")
    check_job(model, init, integ, where)


def files(model, init) -> dict[str, str]:
    """key -> path text of every input a job reads: inputs.files, and a layer model's
    weights folder (digested whole by weights.check)."""
    named = inputs.files(model, init)
    if model.kind.stacked and model.weights is not None:
        named["model.weights"] = model.weights
    return named


def kinds(jobs) -> Iterator[tuple[Job, int]]:
    """(job, how many jobs it stands for) for what depends on a job's settings but not on
    its seed (memory, cost, stability): Jobs.kinds of a grid, each job once of a list."""
    return jobs.kinds() if isinstance(jobs, Jobs) else ((job, 1) for job in jobs)


def shard(jobs: list[Job], i: int, k: int) -> list[Job]:
    """Shard i of k (0-based): jobs assigned round-robin by index, so that every shard gets
    a share of every part of the grid."""
    check_shard(i, k, f"--shard {i}/{k}")
    if isinstance(jobs, Jobs):
        return jobs[i::k]
    return [job for job in jobs if job.index % k == i]


def check_shard(i: int, k: int, where: str, hint: str = "") -> None:
    """The one rule of a shard, wherever it was given: 0 <= I < K."""
    if k < 1 or not 0 <= i < k:
        raise ConfigError(f"{where}: shard {i} of {k} does not exist, need 0 <= I < K{hint}")
