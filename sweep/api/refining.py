"""Adaptive location of a level crossing along one axis, by rounds of ordinary jobs: the
library behind `sweep refine` (sweep/cli/refining.py; docs/refine.md).

Each round is a list of jobs of the config (the grid's other axes and seeds as they are, the
axis at the points the round samples), run by the runner into the config's own parts folder,
so parts, ids, resume, shards and workers are those of `sweep run`: a job a previous round,
a full `sweep run` or another shard computed is read, never computed twice. The rounds are
planned from the parts alone (sweep.analysis.refinement), so a killed refine replays the
finished rounds from disk and resumes at the same one.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import time as clock
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sweep.analysis.refinement import Line, Rules, check_level, first_round, requests, tolerance
from sweep.analysis.results import plateau, quiet
from sweep.api.sweeping import output, preflight, resolve_shard, store
from sweep.config.grid import Axis, Jobs, axes, expand
from sweep.config.schema import Config
from sweep.errors import ConfigError
from sweep.kernels.codes import RANGES
from sweep.scheduling import shards
from sweep.storage.merging import SUMMARISED, max_clusters, t_cluster
from sweep.storage.store import columns, save_times

if TYPE_CHECKING:
    import xarray

    from sweep.execution.runner import Hooks


@dataclass(frozen=True)
class Question:
    """What a refinement locates, checked against the config before anything runs."""

    var: str
    series: tuple[str, ...]  # the columns of a job's observables
    along: Axis
    others: list[Axis]
    rules: Rules
    time: str | float | None
    budget: int | None


@dataclass
class Refinement:
    """What `refine_rounds` did: the located thresholds and samples (None for a call that
    stopped at an unfinished round: a shard, a task of one round, a driver), the rounds and
    jobs, and where the wall time went."""

    dataset: xarray.Dataset | None = None
    path: Path | None = None
    rounds: int = 0                 # rounds complete (when stopped: the round it stopped at)
    jobs: int = 0
    computed: int = 0               # jobs computed by this call (the rest were read)
    seconds: float = 0.0            # in all
    stopped_by_budget: bool = False
    waiting: str = ""               # why it stopped before the end
    pending: int = 0                # ... and how many jobs of that round are not done yet
    per_round: list[int] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)  # seconds, by PHASES
    memory: int | None = None       # bytes available, read once, at the first round run

    @property
    def run_seconds(self) -> float:
        """Seconds in the runner (sweep.execution.runner.run), over every round."""
        return self.phases.get("runner", 0.0)

    @property
    def overhead(self) -> float:
        """Refine's own share of its wall time between rounds: planning them, building their
        jobs, their preflight and reading them back (BETWEEN); docs/refine.md."""
        spent = sum(self.phases.get(p, 0.0) for p in BETWEEN)
        return spent / self.seconds if self.seconds > 0 else 0.0

    @property
    def outside_runner(self) -> float:
        """The share of the wall time not in the runner: the overhead, the final dataset and
        its file, and the rest (loading, checking the question)."""
        return 1.0 - self.run_seconds / self.seconds if self.seconds > 0 else 0.0

    @contextlib.contextmanager
    def timed(self, phase: str):
        t0 = clock.perf_counter()
        try:
            yield
        finally:
            self.phases[phase] = self.phases.get(phase, 0.0) + clock.perf_counter() - t0


# reductions over time taken per job without xarray (plateau: the function at_time applies;
# max and min: exact, whatever the order); a mean or a saved time goes through at_time
EXACT = {"plateau": plateau, "max": np.nanmax, "min": np.nanmin}
PHASES = ("plan", "jobs", "preflight", "runner", "read", "dataset", "write")
BETWEEN = ("plan", "jobs", "preflight", "read")  # refine's own work between rounds


def question(config: Config, var: str, level: float, along: str, tol, budget: int | None,
             seeds_per_point: int | None, time, direction: str) -> Question:
    """The refinement asked for, or a one-line ConfigError naming what is wrong."""
    grid = axes(config)
    names = [a.name for a in grid]
    if along in ("seed", "time"):
        why = ("seeds are averaged" if along == "seed" else
               "every job saves every time: `sweep threshold --along time` reads it")
        raise ConfigError(f"--along {along}: not an axis to refine along ({why})")
    match = [a for a in grid if a.name == along]
    if not match:
        raise ConfigError(f"--along {along!r}: not an axis of the grid ({', '.join(names)})")
    axis = match[0]
    values = axis.values[0]
    if len(axis.keys) > 1 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                     for v in values):
        raise ConfigError(f"--along {along}: refine needs a numeric axis of one key")
    if len(values) < 2:
        raise ConfigError(f"--along {along}: needs at least 2 values to start from")
    job = expand(config)[0]
    series = columns(job, config.output.columns)
    known = series + tuple(s for s, need in SUMMARISED.items() if need in series)
    if var not in known:
        raise ConfigError(f"--var {var!r}: not a variable of these runs ({', '.join(known)})")
    if var in SUMMARISED and time not in (None, "final") or time == "all":
        raise ConfigError(f"--time {time}: refine needs one number per job"
                          + (f"; {var} is one already" if var in SUMMARISED else ""))
    check_level(var, level, _bounds(var, job.model.n))
    seeds = next(a for a in grid if a.name == "seed").values[0]
    per_point = max(2, len(seeds) // 4) if seeds_per_point is None else seeds_per_point
    if not 1 <= per_point <= len(seeds):
        raise ConfigError(f"--seeds-per-point {per_point}: must lie in 1..{len(seeds)}, the "
                          "config's seeds")
    if budget is not None and budget < 1:
        raise ConfigError(f"--budget {budget}: must be a positive number of jobs")
    rules = Rules(float(level), tolerance(tol), tuple(seeds), per_point, direction, axis.log,
                  all(isinstance(v, int) for v in values))
    others = [a for a in grid if a.name not in (along, "seed")]
    return Question(var, series, axis, others, rules, time, budget)


def _bounds(var: str, n: int) -> tuple[float, float] | None:
    if var in ("t_cluster",):
        return None
    low, high = RANGES.get("n_clusters" if var == "max_clusters" else var, (None, None))
    if low is None or not isinstance(high, (int, float)) and high != "n":
        return None
    return float(low), float(n if high == "n" else high)


def default_output(config: Config, out: str | Path | None = None) -> Path:
    """Where refine writes its dataset: `<results stem>.refine.nc` beside output.path."""
    if out is not None:
        return output(config, out)
    base = output(config, None)
    return base.with_name(f"{base.stem}.refine.nc")


def refine(config: Config, var: str, level: float = 0.5, along: str = "beta",
           tol: float | str = 0.1, budget: int | None = None,
           seeds_per_point: int | None = None, time: str | float | None = None,
           direction: str = "any", out: str | Path | None = None, workers: int | None = None,
           shard: str | tuple[int, int] | None = None,
           hooks: Hooks | None = None) -> xarray.Dataset | None:
    """Locate where the seed-mean `var` first crosses `level` along the grid axis `along`,
    per combination of the other axes, to a bracket no wider than `tol` (a number in units
    of the axis, or "2%" of the bracket's centre), by rounds of jobs (`sweep refine`).
    Starts from the config's values of the axis; seeds_per_point of its seeds at a new point
    (default max(2, seeds / 4)), all of them at the ends of the final bracket; budget: at
    most this many jobs in all. Returns the dataset written to `out` (default: <output.path
    stem>.refine.nc; docs/refine.md), None for a shard that left its round to the others."""
    return refine_rounds(config, var, level, along, tol, budget, seeds_per_point, time,
                         direction, out, workers, shard, hooks).dataset


def refine_rounds(config: Config, var: str, level: float = 0.5, along: str = "beta",
                  tol: float | str = 0.1, budget: int | None = None,
                  seeds_per_point: int | None = None, time=None, direction: str = "any",
                  out=None, workers: int | None = None, shard=None,
                  hooks: Hooks | None = None, only: int | None = None,
                  compute: bool = True) -> Refinement:
    """`refine`, reporting its rounds, jobs and wall time (what `sweep refine` prints).
    only: run round `only` alone (its shard), then stop, the rounds before it being read (a
    task of one round's job array); compute=False: run nothing, stop at the first round not
    done (`sweep submit --refine`'s driver)."""
    from sweep.analysis.refined import refined_dataset
    from sweep.execution import runner
    from sweep.scheduling.signals import stop_on_signals
    from sweep.storage.netcdf import write_dataset

    start = clock.perf_counter()
    ask = question(config, var, level, along, tol, budget, seeds_per_point, time, direction)
    hooks, part, target = hooks or runner.Hooks(), resolve_shard(shard), default_output(config,
                                                                                        out)
    where, done = store(config), Refinement()
    lines = {combo: Line({}) for combo in _combos(ask.others)}
    samples: list[tuple[tuple, float, int, int]] = []  # (combo, x, seed, round) per job
    with stop_on_signals():
        while wanted := _timed(done, "plan", _wanted, lines, ask, done.rounds):
            jobs = _timed(done, "jobs", _round_jobs, config, ask, wanted)
            if ask.budget is not None and done.jobs + len(jobs) > ask.budget:
                done.stopped_by_budget = True
                break
            runs = compute and only in (None, done.rounds)
            if not _run_round(jobs, where, part if runs else None, workers, hooks, done, runs):
                return _stopped(done, start)
            with done.timed("read"):
                _record(lines, samples, wanted, _read(where, jobs, ask), done.rounds)
            done.rounds, done.jobs = done.rounds + 1, done.jobs + len(jobs)
            done.per_round.append(len(jobs))
            if only is not None and done.rounds > only:
                return _stopped(done, start, f"round {only} is done")
    done.dataset = _timed(done, "dataset", refined_dataset, config, ask, lines, samples,
                          done.stopped_by_budget)
    done.path = _timed(done, "write", write_dataset, done.dataset, target)
    done.seconds = clock.perf_counter() - start
    return done


def _timed(done: Refinement, phase: str, call, *args):
    with done.timed(phase):
        return call(*args)


def _stopped(done: Refinement, start: float, why: str = "") -> Refinement:
    done.waiting = done.waiting or why
    done.seconds = clock.perf_counter() - start
    return done


def _record(lines: dict, samples: list, wanted: dict, values: list, round_: int) -> None:
    """Add a round's values to its lines, and its jobs to the samples."""
    for (combo, x, seeds), got in zip(_flat(wanted), values):
        held = lines[combo].values.get(x, np.empty(0))
        lines[combo].values[x] = np.concatenate([held, got])
        samples += [(combo, x, s, round_) for s in seeds]


def _combos(others: list[Axis]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(len(a)) for a in others)))


def _wanted(lines: dict, ask: Question, rounds: int) -> dict:
    """combo -> [(x, seeds)] the next round runs, {} when every line is settled."""
    if rounds == 0:
        return {c: first_round(list(ask.along.values[0]), ask.rules) for c in lines}
    plans = {c: requests(line, ask.rules) for c, line in lines.items()}
    return {c: plan for c, plan in plans.items() if plan}


def _flat(wanted: dict):
    """(combo, x, seeds) in the order the round's jobs are built."""
    for combo, plan in wanted.items():
        for x, seeds in plan:
            yield combo, x, seeds


def _round_jobs(config: Config, ask: Question, wanted: dict) -> list:
    """The round's jobs, in order: per (combo, point), its seeds; indexed 0.. in the round
    (shards split each round round-robin). Each is a job of a one-point grid of the config,
    so its id is the id the same point has in any grid."""
    jobs = []
    for combo, x, seeds in _flat(wanted):
        grid = [Axis(a.keys, a.sections, tuple((v[i],) for v in a.values), a.log)
                for a, i in zip(ask.others, combo)]
        along = ask.along
        grid += [Axis(along.keys, along.sections, ((x,),), along.log),
                 Axis(("seed",), (None,), (tuple(seeds),))]
        point = Jobs(config, grid)
        point.check()
        jobs += [replace(job, index=len(jobs) + k) for k, job in enumerate(point)]
    return jobs


def _run_round(jobs: list, where, part, workers, hooks, done: Refinement,
               runs: bool = True) -> bool:
    """Run the round's jobs not yet complete (a shard: its share; runs=False: none); False
    when some of them are still not done (other shards', or all of them when not run)."""
    from sweep.config.grid import shard as cut
    from sweep.execution import resources, runner
    from sweep.storage.store import JobsFailed

    if runs:
        todo = cut(jobs, part.index, part.count) if part else jobs
        with done.timed("preflight"):
            if done.memory is None:
                done.memory = resources.memory_limit()
            width = preflight(where.config, todo, workers or shards.task_cpus(), merged=False,
                              warn=not done.rounds, available=done.memory)
        where.keep_written()  # the round is read back at once: from memory, not its files
        with done.timed("runner"):
            report = runner.run(todo, where, workers=width, hooks=hooks)
        done.computed += report.completed
        if report.failed:
            raise JobsFailed(report.failed)
    missing = [job for job in jobs if not where.done(job)] if part or not runs else []
    if missing:
        done.pending = len(missing)
        owed = "of other shards " if runs else ""
        done.waiting = (f"round {done.rounds}: {len(missing)} job(s) {owed}are not done yet; "
                        "run refine again once they are")
        return False
    return True


def _read(where, jobs: list, ask: Question) -> list[np.ndarray]:
    """The value of `var` (at `time`) of each job of the round, grouped as the round's
    (combo, point) requests: one array per request, in seed order."""
    values = np.array([_value(job, part, ask) for job, part, _ in where.read_each(jobs)])
    groups = itertools.groupby(range(len(jobs)), key=lambda k: _point_key(jobs[k]))
    return [values[list(ks)] for _, ks in groups]


def _point_key(job) -> tuple:
    return tuple((k, v) for k, v in job.params.items() if k != "seed")


def _value(job, part, ask: Question) -> float:
    """One job's `var`, reduced over time as `time` says (NaN without a result)."""
    if part is None or part.observables is None:
        return math.nan
    t = save_times(job)
    series = {n: part.observables[:, c] for c, n in enumerate(ask.series)}
    if ask.var == "t_cluster":
        return float(t_cluster(t, series["clustered_fraction"]))
    if ask.var == "max_clusters":
        return float(max_clusters(series["n_clusters"]))
    if ask.time in (None, "final"):  # the last saved time, without an xarray per job
        return float(series[ask.var][-1])
    if ask.time in EXACT:  # the reductions at_time makes, as NumPy makes them: same bits
        with quiet():
            return float(EXACT[ask.time](series[ask.var]))
    import xarray as xr

    from sweep.analysis.results import at_time

    da = xr.DataArray(series[ask.var], dims=("time",), coords={"time": t}, name=ask.var)
    return float(at_time(da, ask.time))

