"""Arrays named in a config: `.npy` matrices (`model.qk`, `model.v`, `model.ffn`) and the
start of `init.kind: file` (`init.path`).

Paths resolve relative to the config file. Shapes are checked per job at plan time (d, n,
heads may be swept), and a job's id includes the SHA-256 of every file it reads, so editing
a file's content makes its jobs new jobs. A job that loads a file checks the digest of the
very bytes it computes from against the one in its id: a file edited while a sweep runs fails
the jobs that would have read it, instead of saving its numbers under the old file's id.

Only regular files are read, and the `.npy` header (shape, dtype) is checked against the
shapes a job can take before the data is: a header claiming a huge shape, an `.npz` archive,
an empty file, a FIFO or a device is refused in one line. Loads are cached by
(path, size, mtime).
"""

from __future__ import annotations

import functools
import hashlib
import io
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from sweep.config.files import npy_header, open_regular
from sweep.errors import ConfigError

HEADER_BYTES = 16384  # an .npy header is 128 bytes or a little more; numpy allows 10,000


def resolve(text: str, source: Path | None) -> Path:
    """A path named in the config: relative ones resolve from the config's folder (not the
    working directory), so a config and its .npy files move together."""
    path = Path(text).expanduser()
    if not path.is_absolute() and source is not None:
        path = Path(source).parent / path
    return path


def read_array(key: str, text: str, source: Path | None, digest: str | None = None,
         shape_ok: Callable[[tuple], str] | None = None) -> tuple[np.ndarray, str]:
    """(array as float64, content digest); ConfigError naming `key` if it is unusable.

    digest: the one a job's id holds; other bytes are an error. shape_ok: shape -> '' or
    why the shape is wrong, asked of the header before the data is read."""
    path = resolve(text, source)
    try:
        stat = path.stat()
        version = (str(path), stat.st_size, stat.st_mtime_ns)
        problem = shape_ok(_header(*version)[0]) if shape_ok is not None else ""
        if not problem:
            array, found, finite = _read(*version)
    except FileNotFoundError:
        raise ConfigError(f"{key}: {path}: no such file") from None
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise ConfigError(f"{key}: {path}: not a readable .npy array ({reason})") from None
    if problem:
        raise ConfigError(f"{key}: {path}: {problem}")
    if digest is not None and found != digest:
        raise ConfigError(f"{key}: {path}: changed since this sweep was planned (content "
                          f"{found}, planned with {digest}); its jobs are left to the next "
                          "run, which plans them with the file as it is then")
    if not finite:
        raise ConfigError(f"{key}: {path}: holds non-finite values")
    return array, found


def _parse_header(f) -> tuple[tuple, bool, np.dtype]:
    """(shape, Fortran order, dtype) of the .npy stream f, left at the first data byte."""
    magic = f.read(6)
    if not magic:
        raise ValueError("an empty file")
    if magic.startswith(b"PK"):
        raise ValueError("an .npz archive, not one .npy array")
    f.seek(0)
    shape, fortran, dtype = npy_header(f)
    if dtype.hasobject or dtype.kind not in "fiu":
        raise ValueError(f"dtype {dtype} is not real numbers")
    return shape, fortran, dtype


@functools.lru_cache(maxsize=256)
def _header(path: str, size: int, mtime_ns: int) -> tuple[tuple, bool, np.dtype]:
    with open_regular(path) as f:
        return _parse_header(io.BytesIO(f.read(HEADER_BYTES)))


@functools.lru_cache(maxsize=64)
def _read(path: str, size: int, mtime_ns: int) -> tuple[np.ndarray, str, bool]:
    """(float64 array, digest, whether all of it is finite), once per file version: a job's
    check and its loads read the same file several times. Array and digest come from one
    read of the file, so the digest is that of the numbers returned."""
    with open_regular(path) as f:
        head = f.read(HEADER_BYTES)
        stream = io.BytesIO(head)
        shape, fortran, dtype = _parse_header(stream)
        count = math.prod(shape)
        want = stream.tell() + count * dtype.itemsize
        data = head + f.read(max(0, want - len(head) + 1))  # one byte more tells of a tail
    if len(data) != want:
        what = "shorter" if len(data) < want else "longer"
        raise ValueError(f"{len(data)} bytes, {what} than its header's shape {shape} of "
                         f"{dtype} needs")
    array = np.frombuffer(data, dtype, count, want - count * dtype.itemsize)
    array = array.reshape(shape, order="F" if fortran else "C").astype(np.float64)
    array.setflags(write=False)
    return array, hashlib.sha256(data).hexdigest()[:16], bool(np.isfinite(array).all())


def _shapes(shapes: list[tuple]) -> Callable[[tuple], str]:
    def check(shape: tuple) -> str:
        if shape in shapes:
            return ""
        return f"shape {shape}, expected {' or '.join(str(s) for s in shapes)}"
    return check


def matrix(key: str, text: str, source: Path | None, d: int, heads: int,
           digest: str | None = None) -> np.ndarray:
    """A `.npy` matrix spec as [heads, d, d]; a (d, d) file serves every head."""
    shapes = [(d, d)] + ([(heads, d, d)] if key != "model.ffn" else [])
    array, _ = read_array(key, text, source, digest, _shapes(shapes))
    return np.broadcast_to(array, (heads, d, d)) if key != "model.ffn" else array


def start(text: str, source: Path | None, n: int, d: int, seed: int,
          digest: str | None = None, unit: bool = True) -> np.ndarray:
    """init.path as [n, d] unit rows: the file itself, or slice `seed` of a (seeds, n, d) file.
    unit=False: the rows as they are (a layer model's hidden states)."""
    where = f"init.path: {resolve(text, source)}"

    def shape_ok(shape: tuple) -> str:
        if shape == (n, d) or len(shape) == 3 and shape[1:] == (n, d) and seed < shape[0]:
            return ""
        if len(shape) == 3 and shape[1:] == (n, d):
            return f"holds {shape[0]} start(s), no seed {seed}"
        return f"shape {shape}, expected ({n}, {d}) or (seeds, {n}, {d})"

    array, _ = read_array("init.path", text, source, digest, shape_ok)
    x = array if array.shape == (n, d) else array[seed]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ConfigError(f"{where}: a token is the zero vector")
    return x / norms if unit else x


def files(model, init) -> dict[str, str]:
    """key -> path text of every input file a job reads."""
    named = {"model.qk": model.qk, "model.v": model.v, "model.ffn": model.ffn}
    out = {}
    for key, spec in named.items():
        per_layer = isinstance(spec, tuple)  # one spec per layer: model.qk[0], ...
        for i, text in enumerate(spec if per_layer else (spec,)):
            if text.endswith(".npy"):
                out[f"{key}[{i}]" if per_layer else key] = text
    if init.kind == "file":
        out["init.path"] = init.path
    return out


def check(model, init, seed: int, source: Path | None) -> dict[str, str]:
    """Check every input file of a job (ConfigError naming the key); key -> content digest."""
    digests = {}
    for key, text in files(model, init).items():
        if key == "init.path":
            start(text, source, model.n, model.d, seed)
        else:
            matrix(key, text, source, model.d, model.heads)
        digests[key] = read_array(key, text, source)[1]  # cached: the check above read the file
    return digests
