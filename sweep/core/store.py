"""Where results live: the dataset schema, atomic per-job parts, merge, provenance.

A run keeps one part file per finished job in `<output>.parts/<job id>.npz`, written to a
temporary name and renamed, so a killed run leaves only whole parts. Merging reads parts in
job order and reshapes them onto the grid's labelled dimensions.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import glob
import json
import math
import os
import platform
import shlex
import shutil
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import yaml

from sweep._version import __version__
from sweep.core.config import Config, clip
from sweep.core.coords import coordinates, int32, status_flags
from sweep.core.files import read_npz
from sweep.core.grid import Job, axes, expand
from sweep.core.locks import HOST, owner_tag, pid_alive
from sweep.errors import StoreError
from sweep.kernels.codes import (
    CLUSTERED,
    LAYER_SERIES,
    N_CLUSTERS,
    OBSERVABLES,
    SCALARS,
    SERIES,
    STATUS_FAILED,
    STATUS_MISSING,
    STATUS_NONFINITE,
    STATUS_OK,
)

if TYPE_CHECKING:  # the store reads and writes arrays; it never runs (or imports) a kernel
    from sweep.core.simulate import JobResult

TMP_STALE_AFTER = 3600.0  # seconds without a write before another run removes a temp file


class MissingJobs(StoreError):
    """Jobs without a result where a merge needs them all."""

    def __init__(self, missing: list[Job]):
        self.missing = missing
        super().__init__(f"{len(missing)} job(s) have no result: indices {indices(missing)}")


class JobsFailed(StoreError):
    """Some jobs raised; their parts record the error (status 2), the rest is written.
    failed: [(job, error message)]; dataset: the merged results (None for a shard, which
    writes parts only), so that a script can still look at what did finish."""

    def __init__(self, failed: list[tuple[Job, str]], dataset=None):
        self.failed, self.dataset = failed, dataset
        super().__init__(f"{len(failed)} job(s) failed: indices "
                         f"{indices([job for job, _ in failed])}; the first: {failed[0][1]}; "
                         "`sweep run --only-failed` retries them")


def indices(jobs: list[Job], shown: int = 20) -> str:
    """Job indices for one line: '0, 3, 7', or the first `shown` then ' and N more'."""
    listed = ", ".join(str(j.index) for j in jobs[:shown])
    return listed + (f" and {len(jobs) - shown} more" if len(jobs) > shown else "")


@dataclass(frozen=True)
class Part:
    """One finished (or failed) job as read back from disk."""

    observables: np.ndarray | None
    status: int
    wall_seconds: float
    positions: np.ndarray | None
    meta: dict

    @property
    def failed(self) -> bool:
        """The job raised: the part records its error, not a result."""
        return self.status == STATUS_FAILED


def part_of(result: JobResult) -> Part:
    """What reading back the part Store.write(job, result) wrote gives (meta aside): the same
    arrays, so a merge from it is bit-identical to one from disk."""
    return Part(result.observables, int(result.status), float(result.wall_seconds),
                result.positions, {})


def beside(output: str | Path, suffix: str) -> Path:
    """The folder `<output stem>.<suffix>` next to a results file (parts, job scripts)."""
    output = Path(output)
    return output.with_name(f"{output.stem}.{suffix}")


def parts_dir(output: str | Path) -> Path:
    return beside(output, "parts")


class Store:
    """Per-job parts of one config's run, next to its results file: `output`, or the
    config's output.path. Built from the config, so that every part records the hash of the
    config that wrote it and a merge lays the parts on that config's own axes."""

    def __init__(self, config: Config, output: str | Path | None = None):
        self.config = config
        self.config_hash = config.hash
        self.output = Path(config.output.path if output is None else output)
        self.dir = parts_dir(self.output)

    def path(self, job: Job) -> Path:
        return self.dir / f"{job.id}.npz"

    def read(self, job: Job) -> Part | None:
        """The job's part, None if there is none; StoreError if it is damaged or foreign
        (a part is read only as far as its headers match the job: a claimed huge shape, a
        FIFO or a folder in its place are damaged, never read)."""
        path = self.path(job)
        try:
            f = read_npz(path, part_members(job))
            meta = json.loads(str(f["meta"]))
            part = Part(f.get("observables"), int(f["status"]), float(f["wall_seconds"]),
                        f.get("positions"), meta)
        except FileNotFoundError:
            return None
        except PermissionError as err:
            raise StoreError(f"{path}: cannot read result part ({err.strerror})") from None
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError,
                RecursionError) as err:
            why = err.strerror if isinstance(err, OSError) and err.strerror else err
            raise StoreError(f"{path}: damaged result part ({why})") from None
        if not isinstance(meta, dict) or meta.get("job_id") != job.id:
            found = meta.get("job_id") if isinstance(meta, dict) else None
            raise StoreError(f"{path}: foreign result part (holds job {clip(found)}, not "
                             f"{job.id})")
        problem = _part_problem(part)
        if problem:
            raise StoreError(f"{path}: damaged result part ({problem})")
        return part

    def read_each(self, jobs: list[Job], known: dict[str, Part] | None = None,
                  ) -> Iterator[tuple[Job, Part | None, str]]:
        """(job, its part or None if there is none, '') per job, in order; a damaged or
        foreign part gives (job, None, the StoreError's message). known: parts already in
        memory by job id (runner.run(keep=True)), taken instead of reading the file."""
        for job in jobs:
            if known and job.id in known:
                yield job, known[job.id], ""
                continue
            try:
                yield job, self.read(job), ""
            except StoreError as err:
                yield job, None, str(err)

    def done(self, job: Job) -> bool:
        """A whole, matching part with a result (failed jobs are not done)."""
        try:
            part = self.read(job)
        except StoreError:
            return False
        return part is not None and not part.failed

    def write(self, job: Job, result: JobResult) -> Path:
        arrays = {"observables": result.observables, "status": np.int8(result.status),
                  "wall_seconds": np.float64(result.wall_seconds)}
        if result.positions is not None:
            arrays["positions"] = result.positions
        return self._write(job, arrays, {})

    def write_failure(self, job: Job, message: str, wall_seconds: float) -> Path:
        arrays = {"status": np.int8(STATUS_FAILED), "wall_seconds": np.float64(wall_seconds)}
        return self._write(job, arrays, {"error": message})

    def _write(self, job: Job, arrays: dict, extra: dict) -> Path:
        meta = {"job_id": job.id, "index": job.index, "config_hash": self.config_hash,
                "params": job.params, "sweep_version": __version__, **extra}
        final = self.path(job)
        tmp = self.dir / f".{job.id}.{owner_tag()}.tmp"
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                np.savez(f, meta=np.array(json.dumps(meta, default=str)), **arrays)
            _set_aside(final)
            os.replace(tmp, final)
        except OSError as err:
            raise StoreError(f"{self.dir}: cannot write result part ({_reason(err)})") from None
        finally:
            _discard(tmp)
        return final

    def prepare(self) -> None:
        """Fail early if the parts directory cannot be written; remove abandoned temp files."""
        if self.output.is_dir():
            raise StoreError(f"{self.output}: is a directory, expected a results file name")
        probe = self.dir / f".probe.{owner_tag()}.tmp"
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            probe.write_bytes(b"sweep")
        except OSError as err:
            raise StoreError(f"{self.dir}: cannot write results here ({_reason(err)})") from None
        finally:
            _discard(probe)
        remove_abandoned(self.dir)


def _reason(err: OSError) -> str:
    return err.strerror or type(err).__name__


def _set_aside(path: Path) -> None:
    """A folder where a part belongs is damage a rename cannot replace: move it aside (its
    contents kept, under a name no reader looks for) so that the part can be written."""
    if path.is_dir() and not path.is_symlink():
        os.rename(path, path.with_name(f"{path.name}.{owner_tag()}.damaged"))


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


def remove_abandoned(directory: Path, pattern: str = ".*.tmp") -> list[Path]:
    """Delete temp files left by killed writers: a dead pid on this host, or long untouched.

    Temp names end in `.<host>.<pid>.<thread>.tmp` (see locks.owner_tag); hosts may contain dots.
    """
    removed = []
    now = time.time()
    for tmp in directory.glob(pattern):
        fields = tmp.name.split(".")
        try:
            mine = ".".join(fields[:-3]).endswith(f".{HOST}")
            dead = mine and not pid_alive(int(fields[-3]))
            if dead or now - tmp.stat().st_mtime > TMP_STALE_AFTER:
                tmp.unlink()
                removed.append(tmp)
        except (OSError, ValueError):
            continue
    return removed


def _part_problem(part: Part) -> str:
    """Why a part whose arrays have the job's shapes cannot be its result, or ''."""
    if part.status not in (STATUS_OK, STATUS_NONFINITE, STATUS_FAILED):
        return f"status {part.status}"
    if not part.failed and part.observables is None:
        return "no observables"
    return ""


def part_members(job: Job) -> dict[str, tuple[str, list[tuple]]]:
    """What each array of a job's part may be: (dtype kinds, shapes)."""
    saves, n, d = len(_times(job)), job.model.n, job.model.d  # saves, or layers 0..L
    return {"meta": ("U", [()]), "status": ("iu", [()]), "wall_seconds": ("f", [()]),
            "observables": ("f", [(saves, len(columns(job)))]),
            "positions": ("f", [(n, d), (saves, n, d)])}


# ---------------------------------------------------------------- merge

def merge(store: Store, jobs: list[Job] | None = None, allow_missing: bool = False,
          command: str | None = None, known: dict[str, Part] | None = None):
    """All jobs' parts as one labelled dataset. MissingJobs unless allow_missing.
    jobs: the store's config's jobs (expanded here if not given); known: parts already in
    memory by job id (RunReport.parts); the others are read."""
    import xarray as xr

    config = store.config
    grid = axes(config)
    dims = tuple(a.name for a in grid)
    shape = tuple(len(a) for a in grid)
    jobs = expand(config) if jobs is None else jobs
    if len(jobs) != math.prod(shape):
        raise ValueError(f"merge: {len(jobs)} jobs for a grid of {math.prod(shape)} points: "
                         "not this config's jobs")
    parts = read_all(jobs, store, known)
    missing = [job for job, p in zip(jobs, parts) if p is None]
    if missing and not allow_missing:
        raise MissingJobs(missing)
    record, t = _record_axis(jobs)
    names = columns(jobs[0])
    series = np.full((len(jobs), t.size, len(names)), np.nan)
    scalars = {name: np.full(len(jobs), np.nan) for name in SCALARS}
    scalars["status"] = np.full(len(jobs), STATUS_MISSING, dtype=np.int8)
    for k, (job, part) in enumerate(zip(jobs, parts)):
        if part is None:
            continue
        scalars["status"][k] = part.status
        scalars["wall_seconds"][k] = part.wall_seconds
        if part.observables is None:
            continue
        rows = np.searchsorted(t, _times(job))
        obs = part.observables
        series[k, rows] = obs
        scalars["t_cluster"][k] = t_cluster(t[rows], obs[:, CLUSTERED])
        scalars["max_clusters"][k] = max_clusters(obs[:, N_CLUSTERS])
    data = {}
    for c, name in enumerate(names):
        data[name] = (dims + (record,), series[:, :, c].reshape(shape + (t.size,)),
                      _attrs({**SERIES, **LAYER_SERIES}[name]))
    for name, values in scalars.items():
        data[name] = (dims, values.reshape(shape), _attrs(SCALARS[name]))
    data["status"][2].update(status_flags())
    positions = _positions(config, jobs, parts, dims, shape, (record, t))
    if positions is not None:
        data["positions"] = positions
    # Built once from arrays placed by job index: no xarray concat/merge/combine, so the
    # result never depends on their join/compat defaults, which xarray is changing.
    ds = xr.Dataset(data, coords=coordinates(grid, (record, t)))
    ds.attrs.update(provenance(config, command))
    return ds


def read_all(jobs: list[Job], store: Store,
             known: dict[str, Part] | None = None) -> list[Part | None]:
    """Every job's part (None where missing); StoreError naming the first damaged one."""
    parts, damaged = [], []
    for _, part, error in store.read_each(jobs, known):
        parts.append(part)
        if error:
            damaged.append(error)
    if damaged:
        more = f"; {len(damaged)} damaged or foreign part(s) in all" if len(damaged) > 1 else ""
        raise StoreError(f"{damaged[0]}{more}; `sweep run` recomputes them")
    return parts


def _attrs(meta: tuple[str, str]) -> dict:
    return {"long_name": meta[0], "units": meta[1]}


def _times(job: Job) -> np.ndarray:
    """A job's rows of observables, rounded so that grids built from different save_every
    values share their common times: the save grid 0, save_every, ..., t_max of a flow, the
    layers 0..L of a layer model."""
    if job.model.layers is not None:
        return np.arange(job.model.layers + 1)
    return np.round(np.arange(job.integrate.n_saves) * job.integrate.save_every, 12)


def columns(job: Job) -> tuple[str, ...]:
    """The names of a job's columns of observables (a layer model adds LAYER_SERIES)."""
    return OBSERVABLES + (tuple(LAYER_SERIES) if job.model.layers is not None else ())


def t_cluster(t: np.ndarray, clustered: np.ndarray) -> float:
    """First recorded time (layer) with clustered fraction >= 1/2; NaN if never."""
    hit = np.flatnonzero(clustered >= 0.5)
    return float(t[hit[0]]) if hit.size else np.nan


def max_clusters(n_clusters: np.ndarray) -> float:
    """Max of the cluster count over saved times (layers) t > 0 (NaN if none is finite)."""
    later = n_clusters[1:]
    return float(np.nanmax(later)) if np.isfinite(later).any() else np.nan


def _record_axis(jobs: list[Job]) -> tuple[str, np.ndarray]:
    """("time", the union of every job's save grid: one grid unless t_max or save_every is
    swept), or ("layer", 0..the deepest model's L) for layer models."""
    if jobs[0].model.layers is not None:
        return "layer", np.arange(max(j.model.layers for j in jobs) + 1)
    grids = {(j.integrate.save_every, j.integrate.n_saves): j for j in jobs}
    return "time", np.unique(np.concatenate([_times(j) for j in grids.values()]))


def _positions(config, jobs, parts, dims, shape, record: tuple[str, np.ndarray]):
    if config.output.positions == "none" or {"n", "d"} & set(dims):
        return None
    t = record[1]
    n, d = jobs[0].model.n, jobs[0].model.d
    traj = config.output.positions == "trajectory"
    extra = (t.size, n, d) if traj else (n, d)
    out = np.full((len(jobs),) + extra, np.nan)
    for k, part in enumerate(parts):
        if part is not None and part.positions is not None:
            out[k, : part.positions.shape[0]] = part.positions
    names = dims + ((record[0],) if traj else ()) + ("token", "component")
    what = "hidden states h" if record[0] == "layer" else "token positions on the sphere"
    return names, out.reshape(shape + extra), {"long_name": what, "units": "1"}


def provenance(config: Config, command: str | None = None) -> dict:
    attrs = environment(f"sweep results: {config.name}", command)
    # where the file is written is no part of what it holds: `run --out X` and `merge --set
    # output.path=X` of the same parts give the same dataset
    recorded = config.to_dict()
    recorded["output"].pop("path")
    attrs.update(sweep_config=yaml.safe_dump(recorded, sort_keys=False),
                 sweep_config_hash=config.hash)
    return attrs


def environment(title: str, command: str | None = None) -> dict:
    """The global attributes every sweep dataset carries: CF, title, history, versions."""
    import netCDF4
    import xarray

    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    command = command or shlex.join(["sweep", *sys.argv[1:]])
    return {
        "Conventions": "CF-1.8",
        "title": title,
        "source": f"sweep {__version__}",
        "history": f"{now}: {command}",
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "numba_version": metadata.version("numba"),  # without importing it (0.3 s)
        "xarray_version": xarray.__version__,
        "netcdf4_version": netCDF4.__version__,
    }


def cf_ready(ds):
    """ds as CF wants it on disk: global Conventions and history (stamped now where the
    dataset has none, e.g. a theory curve), int32 integer coordinates, and coordinates
    without _FillValue (a coordinate has no missing values). A shallow copy."""
    ds = ds.copy(deep=False)
    ds.attrs = {**environment(str(ds.attrs.get("title", "sweep dataset"))), **ds.attrs}
    ints = {name: ds[name].astype(int32(ds[name].values).dtype) for name in ds.coords
            if ds[name].dtype.kind in "iu"}
    ds = ds.assign_coords(ints)
    encoding = {name: {"_FillValue": None} for name in ds.coords}
    return ds, encoding


def write_dataset(ds, path: str | Path) -> Path:
    """Write netCDF4 atomically (temporary file, then rename); StoreError names the file."""
    path = Path(path)
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, expected a results file name")
    tmp = path.with_name(f".{path.name}.{owner_tag()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_abandoned(path.parent, f".{glob.escape(path.name)}.*.tmp")
        tmp.open("wb").close()  # a folder we may not write says so here, with its errno
    except OSError as err:
        raise StoreError(f"{path}: cannot write results ({_reason(err)})") from None
    try:
        ds, encoding = cf_ready(ds)
        ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=encoding)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # netCDF4 reports HDF5 failures as RuntimeError
        reason = _reason(err) if isinstance(err, OSError) else str(err)
        with contextlib.suppress(OSError):
            if shutil.disk_usage(path.parent).free < ds.nbytes:  # HDF5 hides ENOSPC
                reason = f"No space left on device; {reason}"
        raise StoreError(f"{path}: cannot write results ({reason})") from None
    finally:
        _discard(tmp)
    return path
