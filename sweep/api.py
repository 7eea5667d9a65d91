"""The Python API: what `import sweep` gives, and what every `sweep` command calls.

    cfg = sweep.load("configs/demo.yaml", set=["grid.seed={range: [0, 2]}"])
    plan = sweep.plan(cfg)              # jobs, axes, cost; nothing runs
    ds = sweep.run(cfg)                 # the files and bits of `sweep run`
    th = sweep.threshold(ds, "clustered_fraction", along="time")
    sweep.plot(ds, "clustered_fraction", "demo.png", x="beta", y="time", threshold=th)

Each function is the library call behind one command; the command only parses its options
and prints what comes back. Errors are the exceptions of sweep.errors, whose message is the
line the command prints. The pieces (a config, its jobs, its store) are made here from the
config, never passed in separately, so a script cannot pair results with the wrong config.
Loading and planning import neither Numba nor xarray; running and analysing import them
when called.
"""

from __future__ import annotations

import copy
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.config import schema as _config
from sweep.config.grid import Axis, Job, axes, expand
from sweep.config.grid import shard as _shard_jobs
from sweep.config.schema import Config
from sweep.config.yamltext import apply_overrides
from sweep.errors import ConfigError, Interrupted, SweepWarning
from sweep.execution.kernel import Cost, KernelPlan, cold_compile_seconds, estimate, variants
from sweep.kernels import cache
from sweep.scheduling import shards as _shards

if TYPE_CHECKING:
    import xarray

    from sweep.execution.runner import Hooks, RunReport
    from sweep.scheduling.status import Survey
    from sweep.storage.store import Store


# ---------------------------------------------------------------- configs and plans

def load(source: str | Path | dict, set: list[str] | tuple[str, ...] = ()) -> Config:
    """A validated Config from a YAML file or a mapping, with `--set` style overrides
    ("model.beta=2.5", YAML-typed). ConfigError names the offending key or file. A mapping's
    relative input paths resolve against the working directory, a file's against the file."""
    if isinstance(source, dict):
        raw = apply_overrides(copy.deepcopy(source), list(set))
        return _config.from_dict(raw, overrides=tuple(set))
    return _config.load(source, list(set))


@dataclass(frozen=True)
class Plan:
    """What running a config will do, before anything runs."""

    config: Config
    jobs: list[Job]
    axes: list[Axis]
    cost: Cost
    kernels: dict[str, KernelPlan]  # the compiled variants the jobs call, by name
    cold: list[str]                 # the variants the compile cache does not hold yet
    workers: int                    # jobs at once: this task's CPUs, or fewer if memory says
    output: Path

    @property
    def compile_seconds(self) -> float:
        """About how long the cold variants take to compile (once, then they are cached)."""
        return cold_compile_seconds(self.cold)


def plan(config: Config, out: str | Path | None = None, workers: int | None = None) -> Plan:
    """Expand the grid and cost it: jobs, axes, flops, memory, time, kernels to compile.
    ConfigError if the grid is invalid or one job (or the merged dataset) cannot fit in
    memory; a SweepWarning per unstable step size and when fewer jobs fit at once."""
    jobs = expand(config)
    width = preflight(config, jobs, workers or _shards.task_cpus(), merged=True)
    kernels = variants(jobs)
    return Plan(config, jobs, axes(config), estimate(jobs, config.output.positions), kernels,
                [name for name in kernels if not cache.holds(name)], width,
                _output(config, out))


def preflight(config: Config, jobs: list[Job], workers: int, merged: bool,
              warn: bool = True) -> int:
    """Refuse what cannot fit in memory (ConfigError); warn about unstable steps; return
    how many of `workers` jobs fit in memory at once."""
    from sweep.execution import resources, stability

    need = resources.need(jobs, config.output.positions, workers, merged)
    available = resources.available_memory()
    resources.check(need, available)  # before any warning: a refused config says one line
    for line in stability.warnings(jobs) if warn else ():
        warnings.warn(line, SweepWarning, stacklevel=3)
    fit = resources.workers_that_fit(need, available)
    if fit < need.workers:
        warnings.warn(f"memory: at most {fit} job(s) fit at once, not {need.workers}: each "
                      f"needs {need.per_job / 2**30:.3g} GiB of the {available / 2**30:.3g} "
                      f"GiB available; running {fit} at once", SweepWarning, stacklevel=3)
    return fit


def _output(config: Config, out: str | Path | None) -> Path:
    """out if given (`~` expanded, checked like output.path), else the config's output.path."""
    return Path(config.output.path if out is None else _config.output_path(str(out), "--out"))


def store(config: Config, out: str | Path | None = None) -> Store:
    """The parts folder of a config's results (sweep.storage.store.Store), made from it."""
    from sweep.storage.store import Store

    return Store(config, _output(config, out))


# ---------------------------------------------------------------- running

@dataclass
class Outcome:
    """What `execute` did: the runner's report, and the merged results file unless a shard."""

    report: RunReport
    store: Store
    total: int                      # jobs of the config
    shard: _shards.Shard | None
    todo: int                       # jobs this call was to run (the shard's, or failed ones)
    path: Path | None = None        # the results file written (or found current)


def run(config: Config, out: str | Path | None = None, workers: int | None = None,
        shard: str | tuple[int, int] | None = None, force: bool = False,
        hooks: Hooks | None = None) -> xarray.Dataset | None:
    """Run every job not already complete, then merge and write the results: the files and
    bits of `sweep run`. Returns the results opened from the file written, lazily (variables
    are read when used; `with` closes the file), None for a shard (which writes parts only).

    out: the results file (default output.path); workers: jobs at once (default: this task's
    CPUs); shard: "I/K" or (I, K) to run jobs I, I + K, ... only (default: from SWEEP_SHARD
    or a scheduler's array variables, as the command); force: recompute complete jobs.
    JobsFailed (a StoreError) if some jobs raised: it carries the dataset all the same.
    Interrupted on Ctrl-C or a stop signal, after keeping every finished job.
    """
    from sweep.storage.store import JobsFailed

    outcome = execute(config, out, workers, shard, force, hooks=hooks)
    dataset = None if outcome.path is None else open(outcome.path, load=False)
    if outcome.report.failed:
        raise JobsFailed(outcome.report.failed, dataset)
    return dataset


def execute(config: Config, out: str | Path | None = None, workers: int | None = None,
            shard: str | tuple[int, int] | None = None, force: bool = False,
            only_failed: bool = False, hooks: Hooks | None = None,
            keep_current: bool = False) -> Outcome:
    """`run`, reporting instead of raising for failed jobs (what `sweep run` prints).
    only_failed: retry only the jobs whose part records a failure (parts only).
    keep_current: when nothing was left to run and the results file is this config's and
    newer than every part, leave it as it is."""
    from sweep.execution import runner
    from sweep.scheduling import status
    from sweep.scheduling.signals import stop_on_signals
    from sweep.storage.merging import merge
    from sweep.storage.outputs import check_replaceable

    hooks = hooks or runner.Hooks()
    with stop_on_signals() as received:
        jobs, part = expand(config), _shard(shard)
        todo = _shard_jobs(jobs, part.index, part.count) if part else jobs
        where = store(config, out)
        if only_failed:
            todo = status.only_failed(todo, where)
        if part is not None:
            hooks.notice(f"shard {part.index} of {part.count} (from {part.source}): "
                         f"{len(todo)} of {len(jobs)} job(s)")
        merged = part is None and not only_failed
        if merged:
            check_replaceable(where.output, config, jobs, force)
        width = preflight(config, todo, workers or _shards.task_cpus(), merged)  # per kind
        if merged:
            # built once for the run and the merge: each pass over a grid rebuilds its jobs
            # (0.15 s for the 11,520 of configs/phase-glpr-reference.yaml)
            todo = jobs = list(jobs)
        outcome = Outcome(runner.RunReport(), where, len(jobs), part, len(todo))
        try:
            outcome.report = runner.run(todo, where, workers=width, force=force, hooks=hooks)
            if merged and keep_current and _current(where, outcome.report):
                outcome.path = where.output
            elif merged:
                outcome.path = merge(where, jobs)
        except (Interrupted, KeyboardInterrupt) as stop:
            raise _stopped(stop, received, where) from None
    return outcome


def _current(where: Store, report) -> bool:
    """Whether the results file already holds what a merge would write: nothing ran, no
    part is damaged, the file is this config's and no part is newer."""
    from sweep.storage.outputs import written_by

    if report.completed or report.failed or report.damaged or report.elsewhere:
        return False
    try:
        written = where.output.stat().st_mtime_ns
    except OSError:
        return False
    index = where.index()
    newest = max((h.mtime for h in index.known.values()), default=0)
    return (not index.damaged and newest < written
            and written_by(where.output)[0] == where.config_hash)


def _shard(spec) -> _shards.Shard | None:
    if isinstance(spec, tuple):
        return _shards.resolve_shard(f"{spec[0]}/{spec[1]}")
    return _shards.resolve_shard(spec)


def _stopped(stop: BaseException, received, where: Store) -> Interrupted:
    report = getattr(stop, "report", None)
    kept = (f"{report.completed} job(s) finished this run and are kept" if report is not None
            else "finished jobs are kept")
    return Interrupted(f"stopped by {received.name}: {kept} in {where.dir}; nothing partial "
                       "was written; run the same command again to resume",
                       received.signum, report)


def merge(config: Config, out: str | Path | None = None, allow_missing: bool = False,
          force: bool = False) -> xarray.Dataset:
    """Assemble every completed job into one dataset, write it to `out` (default
    output.path) block by block (`sweep merge`) and return it opened from there, lazily (as
    `run`). The parts are always those beside output.path (after `run(out=X)`, load the
    config with set=["output.path=X"]). MissingJobs unless allow_missing (missing jobs are
    then NaN, status -1); StoreError if the parts folder holds another config's parts in place
    of this one's; ConfigError if the file at `out` holds another config's results, unless
    force (core.outputs.check_replaceable)."""
    from sweep.scheduling import status
    from sweep.scheduling.signals import stop_on_signals
    from sweep.storage.merging import merge as assemble
    from sweep.storage.outputs import check_replaceable

    with stop_on_signals() as received:
        where, jobs, target = store(config), expand(config), _output(config, out)
        status.check_not_edited(jobs, where)
        check_replaceable(target, config, jobs, force)
        preflight(config, jobs, 1, merged=True, warn=False)
        try:
            assemble(where, jobs, allow_missing=allow_missing, out=target)
        except KeyboardInterrupt:
            raise Interrupted(f"stopped by {received.name}: {target} was not written; "
                              "the parts are untouched", received.signum) from None
    return open(target, load=False)


def compile(config: Config) -> list[str]:
    """Compile exactly the kernel variants the config's jobs call into the compile cache,
    before many tasks start at once; returns their names (KernelPlan.variant). A training
    config (load_training) compiles those its observed runs call."""
    from sweep.execution.simulate import warm_up

    jobs = expand(getattr(config, "config", config))
    warm_up(jobs)
    return list(variants(jobs))


# ---------------------------------------------------------------- on a cluster

@dataclass(frozen=True)
class Status:
    """What a config's parts folder holds, and what to resubmit."""

    config: Config
    store: Store
    survey: Survey
    shards: int | None          # K of the array the rerun list is for (None: not known)
    rerun: list[int]            # shards of K holding a job to redo
    array: str                  # those shards as an array range, e.g. "0-2,5"
    resubmit: list[str]         # the commands that resubmit them, then the merge
    merged: str = ""            # the merged dataset: not written yet, or which config it holds

    @property
    def complete(self) -> bool:
        s = self.survey
        return not (s.missing or s.failed or s.damaged)


def status(config: Config, out: str | Path | None = None,
           shards: int | None = None) -> Status:
    """Completed, missing, failed and damaged jobs, and the shards of a K-task array to
    rerun (K: `shards`, else that of the last `sweep submit` for this output). The parts are
    those beside output.path; `out` names the merged dataset to report on."""
    from sweep.scheduling import status as parts
    from sweep.scheduling import submit

    where = store(config)
    found = parts.survey(expand(config), where)
    record = submit.submitted(where.output) or {}
    k = shards or record.get("shards")
    rerun = found.rerun(k) if k else []
    lines = []
    if rerun and record.get("shards") == k and submit.rerun_script(record, where.output).is_file():
        lines = submit.rerun_lines(record, rerun, where.output)
    merged = parts.merged_state(_output(config, out), config.hash)
    return Status(config, where, found, k, rerun, parts.array_spec(rerun), lines, merged)


@dataclass(frozen=True)
class Submission:
    """A job array and its merge job: the scripts, and the ids the scheduler gave them."""

    scripts: dict[Path, str]        # the array script and the merge script, by path
    jobs: int                       # jobs of the config
    ids: tuple[str, str] | None     # (array id, merge id); None for a dry run
    plan: object                    # sweep.scheduling.submit.Plan: paths, logs, output


def submit(config: Config, shards: int, out: str | Path | None = None,
           parallel: int | None = None, workers: int | None = None,
           scheduler: str = "slurm", scheduler_args: list[str] | None = None,
           dry_run: bool = False) -> Submission:
    """Write a job-array script of `shards` tasks and a merge job for the config's file,
    compile its kernels into the compile cache, and submit both (`sweep submit`); with
    dry_run, only make the scripts. SchedulerError (a ConfigError) if the scheduler refuses."""
    from sweep.scheduling import submit as scripts

    training = not isinstance(config, Config)  # a training config: its tasks run sweep train
    if training:
        points = math.prod(len(a) for a in config.axes)
        config = config.config
        out = _training_output(config, out)
    if config.source is None:
        raise ConfigError("submit: the array's tasks read a config file; load one from a file")
    jobs = len(expand(config)) * (points if training else 1)
    if shards > jobs:
        warnings.warn(f"{shards} shards for {jobs} job(s); shards {jobs} to {shards - 1} have "
                      "nothing to do", SweepWarning, stacklevel=2)
    made = scripts.make_plan(config.name, config.source, list(config.overrides),
                             _output(config, out), shards, parallel, workers, scheduler_args,
                             scheduler, "train" if training else "run")
    texts = dict(zip(made.scripts, (scripts.array_script(made), scripts.merge_script(made))))
    ids = None if dry_run else scripts.submit(made, config.hash)
    return Submission(texts, jobs, ids, made)


# ---------------------------------------------------------------- results

def open(path: str | Path, load: bool = True) -> xarray.Dataset:
    """A results (or threshold, theory, probe) file; ConfigError if missing or unreadable.
    load=False leaves the variables on disk: close the dataset after use (`with`)."""
    from sweep.analysis.results import open_results

    return open_results(path, load=load)


def threshold(ds: xarray.Dataset | str | Path, var: str, along: str = "beta",
              level: float = 0.5, time: str | float | None = None, bootstrap: int = 2000,
              seed: int = 0, direction: str = "any",
              out: str | Path | None = None) -> xarray.Dataset:
    """Where the seed-mean `var` first crosses `level` along an axis, with a bootstrap
    interval, per point of the other axes (`sweep threshold`; out: also write it).
    ds: results or their file; time: a saved time, "final" (None), "all", or a reduction over
    time per run: "max", "min", "mean", "plateau"."""
    from sweep.analysis.thresholds import threshold as locate

    if out is not None and isinstance(ds, (str, Path)) and _same_file(Path(out), Path(ds)):
        raise ConfigError(f"-o {out}: is the results file being read; write the threshold "
                          "to another file")
    th = locate(_dataset(ds), var, along, level, time, bootstrap, seed, direction)
    if out is not None:
        from sweep.storage.netcdf import write_dataset

        write_dataset(th, out)
    return th


def monotone(ds: xarray.Dataset | str | Path, var: str, along: str = "time",
             out: str | Path | None = None) -> xarray.Dataset:
    """Per grid point, where `var` falls along `along` (time, or layer in a probe dataset)
    beyond rounding: `falls`, `intervals`, `worst_fall`, `first_fall` (`sweep monotone`; out:
    also write it). Docs: docs/analysis.md."""
    from sweep.analysis.monotone import monotone as falls

    result = falls(_dataset(ds), var, along)
    if out is not None:
        from sweep.storage.netcdf import write_dataset

        write_dataset(result, out)
    return result


def plot(ds: xarray.Dataset | str | Path, var: str, path: str | Path | None = None, *,
         x: str = "beta", y: str | None = None, time: str | float | None = None,
         sel: dict[str, float | str] | None = None, lines: str | None = None, threshold=None,
         theory=None, numbers: str | Path | None = None) -> Path:
    """A phase diagram of `var` over (x, y), with a threshold and a theory curve drawn on it,
    or lines of `var` against x (y None); saved to `path` (.png, .pdf, .svg; default
    figures/<results file>-<var>.png) and returned (`sweep plot`). sel: fix axes at one of
    their grid values (exactly; ConfigError naming the nearest otherwise); threshold, theory:
    datasets or their files; numbers: also write the numbers the figure shows (JSON)."""
    from sweep.analysis import plots

    if path is None:
        if not isinstance(ds, (str, Path)):
            raise ConfigError("plot: name the figure file (path=...) for a dataset in memory")
        path = Path("figures") / f"{Path(ds).stem}-{var}.png"
    extra = {k: _dataset(v) for k, v in (("threshold", threshold), ("theory", theory))
             if v is not None}
    try:
        return plots.plot(_dataset(ds), var, path, x=x, y=y, time=time, selection=sel or {},
                          series=lines, numbers_path=numbers, **extra)
    except OSError as err:  # an unwritable place for the figure
        from sweep.errors import StoreError

        raise StoreError(f"{path}: cannot write the figure ({err.strerror or err})") from None


# ---------------------------------------------------------------- trained transformers

def probe(text: str | Path, model: str = "minilm", out: str | Path | None = None,
          beta: float = 1.0, cluster_eps: float = 1e-3, threshold: float = 0.9,
          project: int | None = None,
          save_embeddings: str | Path | None = None) -> xarray.Dataset:
    """A text file through a trained transformer's layers, measured by the simulations'
    observables (`sweep probe`); written to `out` (default results/probe-<text>.nc).
    model: "minilm" (`make models`) or a directory with config.json, model.safetensors and
    tokenizer.json; project: K, every cluster observable also on each layer's tokens
    projected on their top K principal components; save_embeddings: also save the model's
    layer 0 for the text there, the start of a layer model that is the model. Docs:
    docs/trained.md, docs/layers.md."""
    from sweep.config.files import read_bytes
    from sweep.pretrained import bert
    from sweep.pretrained import probe as probing
    from sweep.storage.netcdf import write_dataset

    text = Path(text)
    if not text.is_file():
        raise ConfigError(f"{text}: no such text file")
    try:
        words = read_bytes(text).decode("utf-8", errors="replace")
    except OSError as err:
        raise ConfigError(f"{text}: cannot read ({err.strerror or err})") from None
    loaded = bert.load(model)
    ds = probing.probe(loaded, words, beta, cluster_eps, threshold, str(text),
                       project=project)
    write_dataset(ds, out if out is not None else Path("results") / f"probe-{text.stem}.nc")
    if save_embeddings is not None:
        probing.save_embeddings(loaded, words, Path(save_embeddings))
    return ds


def extract(directory: str | Path, model: str = "minilm", controls: bool = False,
            full: bool = False) -> dict:
    """Each layer's attention matrices as .npy files of shape (heads, d, d) for the `qk:` and
    `v:` config keys, and index.json (`sweep extract`); returns the index. full: every weight
    a layer model needs to be the model, a weights folder for `model.weights`
    (docs/layers.md)."""
    from sweep.pretrained import bert
    from sweep.pretrained import full as whole
    from sweep.pretrained import probe as probing

    if full:
        return whole.extract_full(bert.load(model), Path(directory), controls)
    return probing.extract(bert.load(model), Path(directory), controls)


# ---------------------------------------------------------------- training

def _training_output(config: Config, folder: str | Path | None) -> Path:
    """Where sweep train writes: FOLDER/<name>.nc (default: the folder of output.path)."""
    folder = Path(config.output.path).parent if folder is None else Path(folder)
    return folder / f"{config.name}.nc"


def load_training(source: str | Path, set: list[str] | tuple[str, ...] = ()):
    """A training config (`sweep train`'s: a layer model with a `training:` section), for
    train, compile and submit."""
    from sweep.training import settings

    return settings.load(source, list(set))


def train(source: str | Path | dict, out: str | Path | None = None,
          set: list[str] | tuple[str, ...] = (), command: str | None = None,
          shard=None) -> xarray.Dataset | None:
    """Train a noisy layer model's FFN matrices under L2 at every grid point (`sweep train`):
    the dataset of per-layer observables before and after, the loss curves and the trained
    matrices, written to OUT/<name>.nc (default: beside output.path). Finished points are
    kept in OUT/<name>.parts/ and skipped when run again; a shard ('I/K', or from the
    environment as for `run`) trains its points only and returns None. Docs:
    docs/training.md."""
    from sweep.storage.netcdf import write_dataset
    from sweep.storage.store import beside
    from sweep.training import settings, sweeping

    if isinstance(source, dict):
        raw = apply_overrides(copy.deepcopy(source), list(set))
        tc = settings.from_raw(raw, None, tuple(set))
    else:
        tc = settings.load(source, list(set))
    path = _training_output(tc.config, out)
    part = _shard(shard)
    ds = sweeping.run(tc, command, parts=beside(path, "parts"),
                      shard=None if part is None else (part.index, part.count))
    if ds is not None:
        ds.encoding["source"] = str(write_dataset(ds, path))
    return ds


def _dataset(ds):
    return open(ds) if isinstance(ds, (str, Path)) else ds


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or a.exists() and os.path.samefile(a, b)
    except OSError:
        return False
