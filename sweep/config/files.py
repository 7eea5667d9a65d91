"""Reading files a user names: regular files only.

A FIFO blocks the reader until someone writes to it, `/dev/zero` never ends, and a directory
cannot be read at all; each would hang a command or exhaust its memory instead of failing
with a line naming the file. Every config, input array, result part and model file is opened
here, without blocking, and refused unless it is a regular file.
"""

from __future__ import annotations

import errno
import math
import os
import stat
import zipfile
from pathlib import Path
from typing import BinaryIO

import numpy as np

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


class NotRegularFile(OSError):
    """A path that names a directory, FIFO, device or socket; strerror says which."""


def open_regular(path: str | Path) -> BinaryIO:
    """The file opened for binary reading; NotRegularFile unless it is a regular file.

    O_NONBLOCK makes opening a FIFO return at once (a plain open waits for a writer); it is
    cleared again before any read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise NotRegularFile(errno.EINVAL, f"{kind}, not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, limit: int | None = None) -> bytes:
    """All bytes of a regular file; NotRegularFile otherwise, OSError(EFBIG) past `limit`."""
    with open_regular(path) as f:
        if limit is not None and os.fstat(f.fileno()).st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        return f.read()


def npy_header(f: BinaryIO) -> tuple[tuple, bool, np.dtype]:
    """(shape, Fortran order, dtype) from an .npy stream, left at the first data byte;
    ValueError if it is not one. Nothing is allocated from what the header claims."""
    version = np.lib.format.read_magic(f)
    readers = {(1, 0): np.lib.format.read_array_header_1_0,
               (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise ValueError(f".npy format version {version[0]}.{version[1]} is not supported")
    return readers[version](f)


MAX_TEXT_BYTES = 2**20  # a text array (a part's meta) holds parameters and error messages
MAX_ROWS = 2**16  # jobs in one part file (a batch; runner.MAX_BATCH is far smaller)


def _fits(shape: tuple, want: tuple) -> bool:
    """shape matches want, where None in want stands for any length up to MAX_ROWS."""
    return len(shape) == len(want) and all(
        w == s if w is not None else 0 < s <= MAX_ROWS for s, w in zip(shape, want))


def read_npz(path: Path, members: dict[str, tuple[str, list[tuple]]],
             shapes_only: frozenset = frozenset()) -> dict[str, np.ndarray | tuple]:
    """The arrays of an .npz written by np.savez, each header checked against `members`
    {name: (dtype kinds, shapes; None: any length up to MAX_ROWS)} before its data is read
    (others are skipped); for the names in `shapes_only`, the checked shape instead of the
    data (which must be all there). ValueError saying what is wrong. A regular file only
    (open_regular)."""
    arrays = {}
    with open_regular(path) as f, zipfile.ZipFile(f) as archive:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if name not in members:
                continue
            with archive.open(info) as member:
                shape, fortran, dtype = _checked_header(member, name, *members[name])
                count = math.prod(shape)
                if name in shapes_only:
                    if info.file_size - member.tell() < count * dtype.itemsize:
                        raise ValueError(f"{name} cut short")
                    arrays[name] = shape
                    continue
                data = member.read(count * dtype.itemsize)
            if len(data) < count * dtype.itemsize:
                raise ValueError(f"{name} cut short")
            order = "F" if fortran else "C"
            arrays[name] = np.frombuffer(data, dtype, count).reshape(shape, order=order)
    return arrays


def _checked_header(member: BinaryIO, name: str, kinds: str, shapes: list[tuple]):
    shape, fortran, dtype = npy_header(member)
    if dtype.hasobject or dtype.kind not in kinds:
        raise ValueError(f"{name} of dtype {dtype}")
    if not any(_fits(shape, want) for want in shapes):
        raise ValueError(f"{name} of shape {shape}, expected "
                         + " or ".join(str(s) for s in shapes))
    if dtype.kind in "US" and math.prod(shape) * dtype.itemsize > MAX_TEXT_BYTES:
        raise ValueError(f"{name} of {math.prod(shape) * dtype.itemsize} bytes of text")
    return shape, fortran, dtype
