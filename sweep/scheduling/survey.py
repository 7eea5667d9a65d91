"""What a sweep's parts folder holds: completed, missing, failed and damaged jobs, parts of
another config, and the shards of a K-task array to rerun."""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from sweep.config.files import read_npz
from sweep.config.grid import Job
from sweep.config.schema import clip
from sweep.errors import StoreError
from sweep.kernels.codes import STATUS_FAILED
from sweep.storage.store import Store


@dataclass
class Survey:
    """What the parts directory holds for one config's jobs."""

    jobs: list[Job]
    completed: list[Job] = field(default_factory=list)
    missing: list[Job] = field(default_factory=list)
    failed: list[tuple[Job, str]] = field(default_factory=list)   # (job, error)
    damaged: list[tuple[Job, str]] = field(default_factory=list)  # unreadable part, rerun it
    strays: list[Path] = field(default_factory=list)  # parts of no job of this config

    def rerun(self, k: int) -> list[int]:
        """Shards of K holding a job that is missing, failed or damaged."""
        todo = self.missing + [j for j, _ in self.failed] + [j for j, _ in self.damaged]
        return sorted({j.index % k for j in todo})


def survey(jobs: list[Job], store: Store) -> Survey:
    """Every job's state from the parts' index, without reading their results."""
    jobs, index = list(jobs), store.index()  # built once: each Job is rebuilt when asked for
    out = Survey(jobs, strays=stray_parts(jobs, store))
    for job in jobs:
        status, error = index.status(job.id)
        if status is None:
            (out.damaged.append((job, error)) if error else out.missing.append(job))
        elif status == STATUS_FAILED:
            out.failed.append((job, error or "unknown error"))
        else:
            out.completed.append(job)
    return out


def only_failed(jobs: list[Job], store: Store) -> list[Job]:
    """The jobs whose part records a failure (status 2); missing jobs are left alone."""
    index = store.index()
    return [job for job in jobs if index.status(job.id)[0] == STATUS_FAILED]


def stray_parts(jobs: list[Job], store: Store) -> list[Path]:
    """Part files in the store that hold no job of this config (a damaged one: by its name)."""
    index = store.index()
    ids = {job.id for job in jobs}
    names = [n for n, h in index.known.items()
             if n not in index.damaged and ids.isdisjoint(h.ids)]
    names += [n for n in index.damaged if n.partition(".")[0] not in ids]
    return sorted(store.dir / f"{n}.npz" for n in names)


def part_config_hash(path: Path) -> str:
    """The config hash a part was written under ('?' when unreadable)."""
    try:
        meta = json.loads(str(read_npz(path, {"meta": ("U", [()])})["meta"]))
        return clip(str(meta.get("config_hash", "?")), 20)
    except (OSError, ValueError, KeyError, AttributeError, RecursionError, zipfile.BadZipFile):
        return "?"


def check_not_edited(jobs: list[Job], store: Store) -> None:
    """Refuse to merge when jobs are missing while parts of another config lie in the store.

    A part is valid for its job whatever config wrote it: the job id hashes every parameter
    that decides the job's numbers, so extending or trimming a grid reuses results. But jobs
    of this config missing next to parts of no job of it means the config (or a --set) changed
    between run and merge; merging would silently mix or drop a campaign, even with
    --allow-missing.
    """
    strays = stray_parts(jobs, store)
    if not strays:
        return
    placed = store.index().jobs
    missing = [j for j in jobs if j.id not in placed]
    if not missing:
        return
    hashes = sorted({part_config_hash(p) for p in strays[:50]})
    ours = store.config_hash
    raise StoreError(f"{store.dir}: {len(missing)} job(s) of this config (hash {ours}) have no "
                     f"result, and {len(strays)} part(s) come from a different config (hash "
                     f"{', '.join(hashes)}): the config changed after the run; merge with the "
                     "config that wrote them, or run this one")


def array_spec(shards: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8' (the form sbatch --array and qsub -J take)."""
    runs: list[list[int]] = []
    for s in sorted(set(shards)):
        if runs and s == runs[-1][1] + 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def merged_state(path: Path, config_hash: str) -> str:
    """One line on the merged dataset at `path`: not written yet, or which config it holds."""
    if not path.is_file():
        return f"merged dataset: {path} not written yet (sweep merge writes it)"
    try:
        import netCDF4

        with netCDF4.Dataset(path) as ds:
            found = getattr(ds, "sweep_config_hash", None)
    except OSError as err:
        return f"merged dataset: {path} is not readable ({err})"
    same = "this config" if found == config_hash else f"another config (hash {found})"
    return f"merged dataset: {path}, of {same}"
