"""Reading files a user names: regular files only.

A FIFO blocks the reader until someone writes to it, `/dev/zero` never ends, and a directory
cannot be read at all; each would hang a command or exhaust its memory instead of failing
with a line naming the file. Every config, input array, result part and model file is opened
here, without blocking, and refused unless it is a regular file.
"""

from __future__ import annotations

import errno
import os
import stat
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
