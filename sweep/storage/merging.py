"""The merge: every job's part laid onto the grid's labelled dimensions and written as one
netCDF4 file, block by block as the parts are read.

A block is a run of consecutive jobs in job (C) order, taken so that it is a hyperslab of
every variable: one index along the leading grid axes, a range along one axis, whole along
the rest. A block holds at most MERGE_BLOCK_BYTES of results (one job at least), so the merge
holds one block, the parts being read and a chunk or two per variable (netcdf.BlockWriter),
whatever the number of jobs. A job's t_cluster and max_clusters come from its own series, so
every block is complete on its own, and the file is the one the whole dataset, assembled in
memory and written by xarray, would give, bit for bit.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sweep.config.grid import Axis, Job, axes, expand
from sweep.config.schema import Config
from sweep.errors import StoreError
from sweep.kernels.codes import LAYER_SERIES, SCALARS, SERIES, STATUS_MISSING
from sweep.observables import cosines
from sweep.storage import MERGE_BLOCK_BYTES
from sweep.storage.coords import coordinates, status_flags
from sweep.storage.netcdf import BlockWriter, provenance
from sweep.storage.store import Store, columns, indices, save_times

# scalars summarising a series, by the series they need (dropped where it is not recorded)
SUMMARISED = {"t_cluster": "clustered_fraction", "max_clusters": "n_clusters"}


class MissingJobs(StoreError):
    """Jobs without a result where a merge needs them all."""

    def __init__(self, missing: list[Job]):
        self.missing = missing
        super().__init__(f"{len(missing)} job(s) have no result: indices {indices(missing)}")


@dataclass(frozen=True)
class Layout:
    """What the merged dataset holds, known before any part is read."""

    grid: list[Axis]
    record: str                        # "time", or "layer" for layer models
    t: np.ndarray                      # the record axis: every job's save grid, or 0..L
    series: tuple[str, ...]            # the columns of observables (output.observables)
    scalars: tuple[str, ...]           # one number per job, in SCALARS' order
    positions: tuple[int, ...] | None  # one job's: (n, d) or (rows, n, d); None: not kept
    bins: int = 0                      # cosine_hist's bins (output.hist_bins); 0: none

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.grid)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.grid)

    def variables(self) -> dict[str, tuple[tuple[str, ...], tuple[int, ...], type, dict]]:
        """name -> (dims, shape, dtype, attrs) of each data variable, in the file's order."""
        dims, shape, rows = self.dims, self.shape, (self.t.size,)
        out = {name: (dims + (self.record,), shape + rows, np.float64,
                      _attrs({**SERIES, **LAYER_SERIES}[name])) for name in self.series}
        for name in self.scalars:
            status = name == "status"  # int8, with its CF flag attributes
            out[name] = (dims, shape, np.int8 if status else np.float64,
                         {**_attrs(SCALARS[name]), **(status_flags() if status else {})})
        if self.positions is not None:
            what = "hidden states h" if self.record == "layer" else "token positions on the sphere"
            steps = (self.record,) if len(self.positions) == 3 else ()  # a trajectory
            on = dims + steps + ("token", "component")
            out["positions"] = (on, shape + self.positions, np.float64,
                                {"long_name": what, "units": "1"})
        if self.bins:
            out[cosines.NAME] = (dims + (self.record, "bin"), shape + rows + (self.bins,),
                                 np.float64, cosines.FLOW_ATTRS)
        return out

    def coordinates(self) -> dict:
        """The grid's, the record axis' and, with histograms, the bins' (cosines.coordinates)."""
        return {**coordinates(self.grid, (self.record, self.t)),
                **(cosines.coordinates(self.bins) if self.bins else {})}

    def job_bytes(self) -> int:
        """The bytes of one job's results across every variable."""
        ndim = len(self.grid)
        return sum(math.prod(shape[ndim:]) * np.dtype(dtype).itemsize
                   for _, shape, dtype, _ in self.variables().values())


def layout(config: Config, jobs: list[Job]) -> Layout:
    """The merged dataset of `jobs`, the config's jobs (ValueError if they are not)."""
    grid = axes(config)
    if len(jobs) != math.prod(len(a) for a in grid):
        raise ValueError(f"merge: {len(jobs)} jobs for a grid of "
                         f"{math.prod(len(a) for a in grid)} points: not this config's jobs")
    record, t = _record_axis(jobs)
    names = columns(jobs[0], config.output.columns)
    scalars = tuple(s for s in SCALARS if s not in SUMMARISED or SUMMARISED[s] in names)
    positions = None
    if config.output.positions != "none" and not {"n", "d"} & {a.name for a in grid}:
        n, d = jobs[0].model.n, jobs[0].model.d
        positions = (t.size, n, d) if config.output.positions == "trajectory" else (n, d)
    return Layout(grid, record, t, names, scalars, positions, config.output.hist_bins)


def merge(store: Store, jobs: list[Job] | None = None, allow_missing: bool = False,
          command: str | None = None, out: str | Path | None = None,
          block_bytes: int = MERGE_BLOCK_BYTES) -> Path:
    """Every job's part as one labelled dataset, written to `out` (default: the store's
    output) in blocks of at most `block_bytes`; returns its path. jobs: the store's config's
    jobs (expanded here if not given). MissingJobs unless allow_missing (missing jobs are then
    NaN, status -1); a StoreError naming the first damaged part; either leaves no file. The
    file is opened with the first block to write, and once a merge is refused the remaining
    parts are only read, to count every damaged one."""
    config = store.config
    jobs = list(expand(config) if jobs is None else jobs)  # built once: each is rebuilt
    lay = layout(config, jobs)
    out = Path(store.output if out is None else out)
    parts, missing, damaged, rows = store.read_each(jobs), [], [], {}
    with contextlib.ExitStack() as stack:
        file = None
        for region in blocks(lay.shape, lay.job_bytes(), block_bytes):
            values = _block(lay, parts, region, rows, missing, damaged)
            if not (damaged or missing and not allow_missing):  # refused: only read on
                file = file or stack.enter_context(BlockWriter(
                    out, lay.variables(), lay.coordinates(),
                    provenance(config, command)))
                file.write(region, values)
            del values  # before the next block is made: one in memory, not two
        _refuse(damaged, missing, allow_missing)
        return file.commit()


def blocks(shape: tuple[int, ...], job_bytes: int, budget: int) -> Iterator[tuple[slice, ...]]:
    """Regions of the grid `shape` covering it in job order, each a run of consecutive jobs
    of at most `budget` bytes (one job at least): whole along the axes after some axis k
    (the first whose trailing axes fit), a range along k, one index along those before."""
    fit = max(1, budget // max(job_bytes, 1))
    k = next(k for k in range(len(shape)) if math.prod(shape[k + 1:]) <= fit)
    step = min(shape[k], fit // math.prod(shape[k + 1:]))
    whole = tuple(slice(0, size) for size in shape[k + 1:])
    for outer in itertools.product(*map(range, shape[:k])):
        for a in range(0, shape[k], step):
            yield (tuple(slice(i, i + 1) for i in outer)
                   + (slice(a, min(a + step, shape[k])),) + whole)


def _block(lay: Layout, parts: Iterator, region: tuple[slice, ...], rows: dict,
           missing: list[Job], damaged: list[str]) -> dict[str, np.ndarray]:
    """The values of every variable over `region`, from the next parts of `parts`
    (Store.read_each, in job order); jobs without a part are added to `missing`, why damaged
    ones are to `damaged`. rows: a job's rows on the time axis, by save grid (kept between
    blocks)."""
    size = tuple(s.stop - s.start for s in region)
    count, t = math.prod(size), lay.t
    series = np.full((count, t.size, len(lay.series)), np.nan)
    scalars = {"status": np.full(count, STATUS_MISSING, dtype=np.int8),
               "wall_seconds": np.full(count, np.nan)}
    positions = None if lay.positions is None else np.full((count,) + lay.positions, np.nan)
    hist = np.full((count, t.size, lay.bins), np.nan) if lay.bins else None
    for k, (job, part, error) in enumerate(itertools.islice(parts, count)):
        if part is None:
            (damaged.append(error) if error else missing.append(job))
            continue
        scalars["status"][k], scalars["wall_seconds"][k] = part.status, part.wall_seconds
        if part.observables is not None:
            grid_key = (job.model.layers, job.integrate.save_every, job.integrate.n_saves)
            if grid_key not in rows:
                rows[grid_key] = np.searchsorted(t, save_times(job))
            series[k, rows[grid_key]] = part.observables
            if hist is not None and part.cosine_hist is not None:
                hist[k, rows[grid_key]] = part.cosine_hist
        if positions is not None and part.positions is not None:
            positions[k, : part.positions.shape[0]] = part.positions
    values = {name: series[:, :, c] for c, name in enumerate(lay.series)}
    if "t_cluster" in lay.scalars:
        values["t_cluster"] = t_cluster(t, values["clustered_fraction"])
    if "max_clusters" in lay.scalars:
        values["max_clusters"] = max_clusters(values["n_clusters"])
    values.update(scalars, **({} if positions is None else {"positions": positions}),
                  **({} if hist is None else {cosines.NAME: hist}))
    return {name: v.reshape(size + v.shape[1:]) for name, v in values.items()}


def _refuse(damaged: list[str], missing: list[Job], allow_missing: bool) -> None:
    """StoreError naming the first damaged part, else MissingJobs unless allowed."""
    if damaged:
        more = f"; {len(damaged)} damaged or foreign part(s) in all" if len(damaged) > 1 else ""
        raise StoreError(f"{damaged[0]}{more}; `sweep run` recomputes them")
    if missing and not allow_missing:
        raise MissingJobs(missing)


def _attrs(meta: tuple[str, str]) -> dict:
    return {"long_name": meta[0], "units": meta[1]}


def t_cluster(t: np.ndarray, clustered: np.ndarray) -> np.ndarray:
    """First recorded time (layer) with clustered fraction >= 1/2 (NaN if never), along the
    last axis of clustered: [..., t.size] (NaN where a job recorded nothing)."""
    hit = clustered >= 0.5
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(axis=-1), t[first], np.nan)


def max_clusters(n_clusters: np.ndarray) -> np.ndarray:
    """Max of the cluster count over saved times (layers) t > 0 (NaN if none is finite),
    along the last axis of n_clusters: [..., n_time], time 0 first."""
    later = n_clusters[..., 1:]
    finite = np.isfinite(later).any(axis=-1)
    return np.where(finite, np.max(np.where(np.isnan(later), -np.inf, later), axis=-1,
                                   initial=-np.inf), np.nan)


def _record_axis(jobs: list[Job]) -> tuple[str, np.ndarray]:
    """("time", the union of every job's save grid: one grid unless t_max or save_every is
    swept), or ("layer", 0..the deepest model's L) for layer models."""
    kind = jobs[0].model.kind  # one for every job (sweep.config.grid checks it)
    if kind.stacked:
        return kind.series_dim, np.arange(max(j.model.layers for j in jobs) + 1)
    grids = {(j.integrate.save_every, j.integrate.n_saves): j for j in jobs}
    return kind.series_dim, np.unique(np.concatenate([save_times(j) for j in grids.values()]))
