"""Part files, each the results of one batch of jobs, and the index that finds a job in them.

A run writes one part per batch (runner.py) as `<output stem>.parts/<name>.npz`, to a
temporary name then renamed, so a killed run leaves only whole parts. A part holds, for its
B jobs in order: ids [B], status [B] int8, wall_seconds [B], observables [B, n_saves, K]
(the K series of output.observables; NaN for a failed job), positions [B, n, d] or
[B, n_saves, n, d] when kept, cosine_hist [B, n_saves, bins] with output.hist_bins, meta
(JSON: the config hash, the version, each failed job's error) and checksum: zlib.crc32 over
every other array (name, dtype, shape, bytes),
checked whenever a part is read whole (index, status, resume, merge); a part that fails it
is damaged. Parts written before checksums existed have none and are read as before (the
zip's CRC-32 of each member still catches bytes flipped on disk). Its name is the job id
for one job, else `<first id>.<digest of every id>`: the name says what the part holds (one
under another name is foreign), and a batch's lock (locks.py) and part share it.

The index (`index.cache` in the same folder) keeps each part's size, mtime and headers (ids,
status, errors), so that resume, `status` and `merge` place every job without opening every
part. An entry is trusted while its file keeps that size and mtime, else the part is read
again; a job in several parts (a forced rerun) is taken from the newest. It is a cache,
rewritten whole (atomically) by a command that read something new: deleting it loses nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sweep.config.files import open_regular, read_npz
from sweep.config.schema import clip, digest
from sweep.errors import StoreError
from sweep.kernels.codes import STATUS_FAILED, STATUS_NONFINITE, STATUS_OK
from sweep.storage.locks import HOST, owner_tag, pid_alive

INDEX = "index.cache"
# what each array of a part may be: (dtype kinds, shapes), None standing for any length
HEADERS = {"meta": ("U", [()]), "ids": ("U", [(None,)]), "status": ("iu", [(None,)]),
           "wall_seconds": ("f", [(None,)]), "observables": ("f", [(None,) * 3]),
           "positions": ("f", [(None,) * 3, (None,) * 4]), "checksum": ("u", [()]),
           "cosine_hist": ("f", [(None,) * 3])}
# (zipfile raises NotImplementedError for a damaged header's flag bits, e.g. bit 5)
_READ_ERRORS = (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError,
                RecursionError, NotImplementedError)


def part_name(ids: list[str] | tuple[str, ...]) -> str:
    """The file stem of the part (and the lock) of the batch of jobs `ids`, in order."""
    return ids[0] if len(ids) == 1 else f"{ids[0]}.{digest(','.join(ids), 12)}"


@dataclass(frozen=True)
class Header:
    """What the index keeps of one part: its jobs, their status and errors, its stat."""

    ids: tuple[str, ...]
    status: np.ndarray  # [B] int8
    errors: dict[str, str]
    size: int
    mtime: int


def read_header(path: Path) -> Header:
    """A part's headers; StoreError if it is damaged or foreign (headers are checked before
    any data is read: a claimed huge shape, a FIFO or a folder in its place are damaged)."""
    try:
        f = read_npz(path, HEADERS)
        meta, ids = json.loads(str(f["meta"])), tuple(str(i) for i in f["ids"])
        status = f["status"].astype(np.int8)
        st = os.stat(path)
        problem = _mismatch(f, len(ids), status) or unverified(f)
    except PermissionError as err:
        raise StoreError(f"{path}: cannot read result part ({err.strerror})") from None
    except _READ_ERRORS as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise StoreError(f"{path}: damaged result part ({why})") from None
    if not isinstance(meta, dict) or problem:
        raise StoreError(f"{path}: damaged result part ({problem or 'meta'})")
    stem = path.name.removesuffix(".npz")
    if part_name(ids) != stem:
        raise StoreError(f"{path}: foreign result part (holds job {clip(ids[0])}, not "
                         f"{clip(stem.partition('.')[0])})")
    bad = set(status.tolist()) - {STATUS_OK, STATUS_NONFINITE, STATUS_FAILED}
    if bad:
        raise StoreError(f"{path}: damaged result part (status {min(bad)})")
    errors = meta.get("errors", {})
    return Header(ids, status, errors if isinstance(errors, dict) else {}, st.st_size,
                  st.st_mtime_ns)


def _mismatch(found: dict, count: int, status: np.ndarray) -> str:
    """Why the arrays of a part of `count` jobs do not fit together, or ''."""
    for name in ("status", "wall_seconds", "observables", "positions", "cosine_hist"):
        shape = found[name].shape if name in found else None
        if shape is not None and shape[0] != count:
            return f"{name} of shape {shape} for {count} job(s)"
    if "wall_seconds" not in found:
        return "no wall_seconds"
    if "observables" not in found and (status != STATUS_FAILED).any():
        return "no observables"
    return ""


def checksum(arrays: dict) -> int:
    """zlib.crc32 over every array of a part but its checksum, in name order: each one's
    name, dtype, shape and bytes (so a changed value, shape or header is caught)."""
    crc = 0
    for name in sorted(set(arrays) - {"checksum"}):
        a = np.asarray(arrays[name])
        crc = zlib.crc32(f"{name}:{a.dtype.str}:{a.shape}:".encode(), crc)
        crc = zlib.crc32(np.ascontiguousarray(a).tobytes(), crc)
    return crc


def unverified(arrays: dict) -> str:
    """'checksum mismatch' if a part's arrays do not give the checksum it records, else ''
    (a part without one, from before checksums, is taken as it is)."""
    if "checksum" in arrays and int(arrays["checksum"]) != checksum(arrays):
        return "checksum mismatch"
    return ""


def write_part(directory: Path, ids: list[str], arrays: dict, meta: dict) -> Header:
    """Write a part atomically (StoreError if the folder cannot take it); its Header."""
    name = part_name(ids)
    final, tmp = directory / f"{name}.npz", directory / f".{name}.{owner_tag()}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        members = {"meta": np.array(json.dumps(meta, default=str)), "ids": np.array(ids),
                   **arrays}
        with open(tmp, "wb") as f:
            np.savez(f, **members, checksum=np.array(checksum(members), np.uint32))
        set_aside(final)
        os.replace(tmp, final)
        st = os.stat(final)
    except OSError as err:
        raise StoreError(f"{directory}: cannot write result part ({reason(err)})") from None
    finally:
        discard(tmp)
    return Header(tuple(ids), np.asarray(arrays["status"], np.int8),
                  meta.get("errors", {}), st.st_size, st.st_mtime_ns)


def reason(err: OSError) -> str:
    return err.strerror or type(err).__name__


def set_aside(path: Path, always: bool = False) -> None:
    """Move a part file aside under a name no reader looks for, its contents kept: a folder
    where a part belongs (damage a rename cannot replace), or with `always` whatever lies
    there (a damaged part about to be recomputed)."""
    if always and os.path.lexists(path) or path.is_dir() and not path.is_symlink():
        os.rename(path, path.with_name(f"{path.name}.{owner_tag()}.damaged"))


def discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


class PartIndex:
    """Where each job's result lies among the parts of one folder (see the module docstring).

    refresh() looks at the folder again; then jobs: job id -> (part name, row), damaged:
    part name -> why it cannot be read, and lost: job id -> why, for jobs whose only part
    (as last read whole) is damaged now."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.known: dict[str, Header] = {}  # every header read whole, by part name
        self.jobs: dict[str, tuple[str, int]] = {}
        self.damaged: dict[str, str] = {}
        self.lost: dict[str, str] = {}
        self._loaded = self._changed = False
        self._seen: list | None = None

    def refresh(self) -> PartIndex:
        if not self._loaded:
            self.known, self._loaded = load_index(self.dir / INDEX), True
        listing = _listing(self.dir)
        if listing == self._seen:
            return self  # nothing changed since the last look
        good, self.damaged, self._seen = {}, {}, listing
        for name, size, mtime in listing:
            header = self.known.get(name)
            if header is None or (header.size, header.mtime) != (size, mtime):
                try:
                    header = self.known[name] = read_header(self.dir / f"{name}.npz")
                    self._changed = True
                except StoreError as err:
                    self.damaged[name] = str(err)
                    continue
            good[name] = header
        for name in set(self.known) - set(good) - set(self.damaged):
            del self.known[name]  # removed since
            self._changed = True
        self._place(good)
        return self

    def add(self, header: Header) -> None:
        """A part this process just wrote."""
        name = part_name(header.ids)
        self.known[name], self._changed = header, True
        self.damaged.pop(name, None)
        for row, job_id in enumerate(header.ids):
            self.jobs[job_id] = (name, row)
            self.lost.pop(job_id, None)

    def status(self, job_id: str) -> tuple[int | None, str]:
        """(the job's status, its error if it failed), or (None, why it is damaged or '')."""
        where = self.jobs.get(job_id)
        if where is None:
            return None, self.lost.get(job_id, "")
        header = self.known[where[0]]
        return int(header.status[where[1]]), header.errors.get(job_id, "")

    def _place(self, good: dict[str, Header]) -> None:
        self.jobs = {}
        for name in sorted(good, key=lambda n: (good[n].mtime, n)):  # the newest wins
            self.jobs.update((job_id, (name, row)) for row, job_id in enumerate(good[name].ids))
        self.lost = {}
        for name, why in self.damaged.items():
            held = self.known[name].ids if name in self.known else (name.partition(".")[0],)
            self.lost.update((i, why) for i in held if i not in self.jobs)

    def damaged_holding(self, ids: set[str]) -> list[str]:
        """The damaged parts that held (as last read whole, or by name) one of `ids`."""
        return [name for name in self.damaged if not ids.isdisjoint(
            self.known[name].ids if name in self.known else (name.partition(".")[0],))]

    def save(self) -> None:
        """Rewrite the index if this process read or wrote a part it did not list; a folder
        that cannot take it only costs the next command some reading."""
        if self._changed and self.known:
            with contextlib.suppress(OSError):
                save_index(self.dir / INDEX, self.known)
            self._changed = False


def _listing(directory: Path) -> list[tuple[str, int, int]]:
    """(part name, size, mtime in ns) of every part file (dot-files are temporary)."""
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as err:  # unreadable (another user's, chmod 000): say so, list nothing
        raise StoreError(f"{directory}: cannot read the parts folder ({reason(err)}); its "
                         "owner can open it (chmod u+rx), or give another --out") from None
    out = []
    for entry in entries:
        if entry.name.endswith(".npz") and not entry.name.startswith("."):
            with contextlib.suppress(OSError):
                st = entry.stat()
                out.append((entry.name.removesuffix(".npz"), st.st_size, st.st_mtime_ns))
    return sorted(out)


def save_index(path: Path, known: dict[str, Header]) -> None:
    names = sorted(known)
    headers = [known[n] for n in names]
    arrays = {"names": np.array(names), "ids": np.array([i for h in headers for i in h.ids]),
              "counts": np.array([len(h.ids) for h in headers], np.int64),
              "sizes": np.array([h.size for h in headers], np.int64),
              "mtimes": np.array([h.mtime for h in headers], np.int64),
              "status": np.concatenate([h.status for h in headers]).astype(np.int8),
              "errors": np.array(json.dumps({n: h.errors for n, h in zip(names, headers)
                                             if h.errors}))}
    tmp = path.with_name(f".{path.name}.{owner_tag()}.tmp")
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    finally:
        discard(tmp)


def load_index(path: Path) -> dict[str, Header]:
    """The headers an index file records; {} if there is none or it cannot be read."""
    try:
        with open_regular(path) as stream:
            f = dict(np.load(stream, allow_pickle=False))
        names, counts, ids = f["names"], f["counts"], f["ids"]
        sizes, mtimes, status = f["sizes"], f["mtimes"], f["status"]
        errors = json.loads(str(f["errors"]))
        ends = np.cumsum(counts)
        if len(ends) != len(names) or len(ids) != len(status) or \
                len(ends) and ends[-1] != len(ids):
            return {}
    except _READ_ERRORS:
        return {}
    out = {}
    for k, name in enumerate(names.tolist()):
        a, b = int(ends[k] - counts[k]), int(ends[k])
        out[name] = Header(tuple(ids[a:b].tolist()), status[a:b], errors.get(name, {}),
                           int(sizes[k]), int(mtimes[k]))
    return out


TMP_STALE_AFTER = 3600.0  # seconds without a write before another run removes a temp file


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
