"""Where results live: the parts of a run, by job.

A run keeps one part file per batch of finished jobs in `<output>.parts/` (sweep.storage.parts:
written whole or not at all, found through an index); the merge (sweep.storage.merging) reads
them in job order onto the grid's labelled dimensions.
"""

from __future__ import annotations

import collections
import contextlib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sweep._version import __version__
from sweep.config.files import read_npz
from sweep.config.grid import Job
from sweep.config.schema import Config
from sweep.errors import StoreError
from sweep.kernels.codes import OBSERVABLES, STATUS_FAILED
from sweep.storage.locks import owner_tag
from sweep.storage.outputs import dangling
from sweep.storage.parts import (
    HEADERS,
    Header,
    PartIndex,
    discard,
    part_name,
    read_header,
    reason,
    remove_abandoned,
    set_aside,
    unverified,
    write_part,
)

if TYPE_CHECKING:  # the store reads and writes arrays; it never runs (or imports) a kernel
    from sweep.execution.simulate import JobResult


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
    cosine_hist: np.ndarray | None = None  # [n_saves, bins] with output.hist_bins

    @property
    def failed(self) -> bool:
        """The job raised: the part records its error, not a result."""
        return self.status == STATUS_FAILED


def beside(output: str | Path, suffix: str) -> Path:
    """The folder `<output stem>.<suffix>` next to a results file (parts, job scripts)."""
    output = Path(output)
    return output.with_name(f"{output.stem}.{suffix}")


def parts_dir(output: str | Path) -> Path:
    return beside(output, "parts")


class Store:
    """The parts of one config's run, next to its results file: `output`, or the config's
    output.path. Built from the config, so that every part records the hash of the config
    that wrote it and a merge lays the parts on that config's own axes. Parts hold batches
    of jobs (sweep.storage.parts); every method here speaks of jobs."""

    def __init__(self, config: Config, output: str | Path | None = None):
        self.config = config
        self.config_hash = config.hash
        self.output = Path(config.output.path if output is None else output)
        self.dir = parts_dir(self.output)
        self._index = PartIndex(self.dir)
        self._kept: dict[str, tuple[tuple[int, int], dict]] | None = None

    def keep_written(self, on: bool = True) -> None:
        """From now on, hold the arrays of the parts this store writes, so that read_each
        takes them from memory, not from their files (refine reads each round back at
        once); on=False forgets them. Restarting forgets those held before."""
        self._kept = {} if on else None

    def index(self) -> PartIndex:
        """The index of the parts folder as it is now."""
        return self._index.refresh()

    def path(self, job: Job) -> Path:
        """The part holding the job's result, or where a part of it alone would be."""
        where = self.index().jobs.get(job.id)
        return self.dir / f"{where[0] if where else job.id}.npz"

    def holds(self, jobs: list[Job]) -> bool:
        """Whether the part of exactly this batch exists with no failed job: another run
        sharing the output computed it (a look at one file, not the whole folder)."""
        try:
            header = read_header(self.dir / f"{part_name([j.id for j in jobs])}.npz")
        except StoreError:
            return False
        return bool((header.status != STATUS_FAILED).all())

    def read(self, job: Job) -> Part | None:
        """The job's part, None if there is none; StoreError if it is damaged or foreign."""
        (_, part, error), = self.read_each([job])
        if error:
            raise StoreError(error)
        return part

    def read_each(self, jobs: list[Job]) -> Iterator[tuple[Job, Part | None, str]]:
        """(job, its part or None if there is none, '') per job, in order, each part file
        read once and held until its last job is taken; a damaged or foreign part gives
        (job, None, the StoreError's message)."""
        index = self.index()
        wanted = collections.Counter(index.jobs[j.id][0] for j in jobs if j.id in index.jobs)
        loaded: dict[str, dict | str] = {}
        for job in jobs:
            if job.id not in index.jobs:
                yield job, None, index.lost.get(job.id, "")
                continue
            name, row = index.jobs[job.id]
            if name not in loaded:
                loaded[name] = self._held(name, index.known[name]) or self._load(
                    name, index.known[name], job)
            arrays, wanted[name] = loaded[name], wanted[name] - 1
            if not wanted[name]:
                del loaded[name]  # every job it holds has been taken
            if isinstance(arrays, str):
                yield job, None, arrays
            else:
                yield job, _row(arrays, row, index.known[name], job.id), ""

    def _held(self, name: str, header: Header) -> dict | None:
        """The arrays this store wrote as the part `name`, if it holds them and the file is
        still the one it wrote."""
        kept = (self._kept or {}).get(name)
        return kept[1] if kept and kept[0] == (header.size, header.mtime) else None

    def _load(self, name: str, header: Header, job: Job) -> dict | str:
        """A part's arrays, checked against its headers and the job's shapes; or why not."""
        path = self.dir / f"{name}.npz"
        try:
            arrays = read_npz(path, part_members(job, len(header.ids), self.config.output.columns,
                                                 self.config.output.hist_bins))
        except PermissionError as err:
            return f"{path}: cannot read result part ({err.strerror})"
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as err:
            why = err.strerror if isinstance(err, OSError) and err.strerror else err
            return f"{path}: damaged result part ({why})"
        if tuple(str(i) for i in arrays.get("ids", ())) != header.ids:
            return f"{path}: damaged result part (changed while read)"
        if unverified(arrays):
            return f"{path}: damaged result part ({unverified(arrays)})"
        return arrays

    def done(self, job: Job) -> bool:
        """A whole, matching part with a result (failed jobs are not done)."""
        status, _ = self.index().status(job.id)
        return status is not None and status != STATUS_FAILED

    def write_batch(self, jobs: list[Job], results: list[JobResult | str],
                    seconds: list[float]) -> Path:
        """One part for a batch: each job's JobResult, or the error message it failed with
        (seconds: the wall time of each failed one)."""
        failed = {k: r for k, r in enumerate(results) if isinstance(r, str)}
        ok = [r for r in results if not isinstance(r, str)]
        arrays = {"status": np.array([STATUS_FAILED if k in failed else r.status
                                      for k, r in enumerate(results)], np.int8),
                  "wall_seconds": np.array([seconds[k] if k in failed else r.wall_seconds
                                            for k, r in enumerate(results)])}
        if ok:
            arrays["observables"] = _stacked([None if k in failed else r.observables
                                              for k, r in enumerate(results)])
        for name in ("positions", "cosine_hist"):
            if ok and getattr(ok[0], name) is not None:
                arrays[name] = _stacked([None if k in failed else getattr(r, name)
                                         for k, r in enumerate(results)])
        meta = {"config_hash": self.config_hash, "sweep_version": __version__,
                "indices": [j.index for j in jobs],
                "errors": {jobs[k].id: message for k, message in failed.items()}}
        header = write_part(self.dir, [j.id for j in jobs], arrays, meta)
        self._index.add(header)
        if self._kept is not None:  # one key per part: safe from the runner's threads
            self._kept[part_name(header.ids)] = ((header.size, header.mtime), arrays)
        return self.dir / f"{part_name(header.ids)}.npz"

    def write(self, job: Job, result: JobResult) -> Path:
        return self.write_batch([job], [result], [result.wall_seconds])

    def write_failure(self, job: Job, message: str, wall_seconds: float) -> Path:
        return self.write_batch([job], [message], [wall_seconds])

    def save_index(self) -> None:
        """Record what this process learnt of the parts, for the next command."""
        self._index.save()

    def prepare(self) -> None:
        """Fail early if the parts directory cannot be written; remove abandoned temp files."""
        if self.output.is_dir():
            raise StoreError(f"{self.output}: is a directory, expected a results file name")
        probe = self.dir / f".probe.{owner_tag()}.tmp"
        dangling(self.dir, "--out")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            probe.write_bytes(b"sweep")
        except OSError as err:
            raise StoreError(f"{self.dir}: cannot write results here ({reason(err)})") from None
        finally:
            discard(probe)
        remove_abandoned(self.dir)

    def set_aside_damaged(self, jobs: list[Job]) -> None:
        """Move the damaged parts that held some of `jobs` out of the way of the run that
        recomputes them (their contents kept, under a name no reader looks for)."""
        for name in self.index().damaged_holding({job.id for job in jobs}):
            with contextlib.suppress(OSError):
                set_aside(self.dir / f"{name}.npz", always=True)


def _stacked(rows: list[np.ndarray | None]) -> np.ndarray:
    """[B, ...] from rows of one shape, NaN where a row is None (a failed job)."""
    shape, dtype = next((r.shape, r.dtype) for r in rows if r is not None)
    out = np.full((len(rows),) + shape, np.nan, dtype=dtype)
    for k, r in enumerate(rows):
        if r is not None:
            out[k] = r
    return out


def _row(arrays: dict, row: int, header: Header, job_id: str) -> Part:
    status = int(header.status[row])
    failed = status == STATUS_FAILED
    def taken(name: str) -> np.ndarray | None:
        return None if failed or name not in arrays else arrays[name][row]

    meta = {"error": header.errors.get(job_id, "unknown error")} if failed else {}
    return Part(taken("observables"), status, float(arrays["wall_seconds"][row]),
                taken("positions"), meta, taken("cosine_hist"))


def part_members(job: Job, count: int, chosen: tuple[str, ...] = OBSERVABLES, bins: int = 0,
                 ) -> dict[str, tuple[str, list[tuple]]]:
    """What each array of a part of `count` jobs shaped like `job`, recording the series
    `chosen` (output.columns) and histograms on `bins` bins, may be: (dtype kinds, shapes)."""
    saves, n, d = len(save_times(job)), job.model.n, job.model.d  # saves, or layers 0..L
    return {**HEADERS, "ids": ("U", [(count,)]), "status": ("iu", [(count,)]),
            "wall_seconds": ("f", [(count,)]),
            "observables": ("f", [(count, saves, len(columns(job, chosen)))]),
            "positions": ("f", [(count, n, d), (count, saves, n, d)]),
            "cosine_hist": ("f", [(count, saves, bins)])}


def save_times(job: Job) -> np.ndarray:
    """A job's rows of observables: its model kind's record values (sweep.config.kinds)."""
    return job.model.kind.record_values(job.model, job.integrate)


def columns(job: Job, chosen: tuple[str, ...] = OBSERVABLES) -> tuple[str, ...]:
    """The names of a job's columns of observables: the series `chosen` (output.columns),
    and after them its model kind's extra series (a layer model's LAYER_SERIES)."""
    return tuple(chosen) + job.model.kind.extra_series
