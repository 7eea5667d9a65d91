"""Arrays named in a config: `.npy` matrices (`model.qk`, `model.v`, `model.ffn`) and the
start of `init.kind: file` (`init.path`).

Paths resolve relative to the config file. Shapes are checked per job at plan time (d, n,
heads may be swept), and a job's id includes the SHA-256 of every file it reads, so editing
a file's content makes its jobs new jobs. Loads are cached by (path, size, mtime).
"""

from __future__ import annotations

import functools
import hashlib
import io
from pathlib import Path

import numpy as np

from sweep.core.config import ConfigError


def resolve(text: str, source: Path | None) -> Path:
    """A path named in the config: relative ones resolve from the config's folder (not the
    working directory), so a config and its .npy files move together."""
    path = Path(text).expanduser()
    if not path.is_absolute() and source is not None:
        path = Path(source).parent / path
    return path


def load(key: str, text: str, source: Path | None) -> tuple[np.ndarray, str]:
    """(array as float64, content digest); ConfigError naming `key` if it is unusable."""
    path = resolve(text, source)
    try:
        stat = path.stat()
        array, digest, finite = _read(str(path), stat.st_size, stat.st_mtime_ns)
    except FileNotFoundError:
        raise ConfigError(f"{key}: {path}: no such file") from None
    except (OSError, ValueError) as err:
        raise ConfigError(f"{key}: {path}: not a readable .npy array ({err})") from None
    if not finite:
        raise ConfigError(f"{key}: {path}: holds non-finite values")
    return array, digest


@functools.lru_cache(maxsize=64)
def _read(path: str, size: int, mtime_ns: int) -> tuple[np.ndarray, str, bool]:
    """(float64 array, digest, whether all of it is finite), once per file version: a job's
    check and its loads read the same file several times."""
    data = Path(path).read_bytes()
    array = np.load(io.BytesIO(data), allow_pickle=False)
    if not np.issubdtype(array.dtype, np.number) or np.iscomplexobj(array):
        raise ValueError(f"dtype {array.dtype} is not real")
    array = array.astype(np.float64)
    array.setflags(write=False)
    return array, hashlib.sha256(data).hexdigest()[:16], bool(np.isfinite(array).all())


def matrix(key: str, text: str, source: Path | None, d: int, heads: int) -> np.ndarray:
    """A `.npy` matrix spec as [heads, d, d]; a (d, d) file serves every head."""
    array, _ = load(key, text, source)
    shapes = [(d, d)] + ([(heads, d, d)] if key != "model.ffn" else [])
    if array.shape not in shapes:
        want = " or ".join(str(s) for s in shapes)
        raise ConfigError(f"{key}: {resolve(text, source)}: shape {array.shape}, expected "
                          f"{want}")
    return np.broadcast_to(array, (heads, d, d)) if key != "model.ffn" else array


def start(text: str, source: Path | None, n: int, d: int, seed: int,
          unit: bool = True) -> np.ndarray:
    """init.path as [n, d] unit rows: the file itself, or slice `seed` of a (seeds, n, d) file.
    unit=False: the rows as they are (a layer model's hidden states)."""
    array, _ = load("init.path", text, source)
    where = f"init.path: {resolve(text, source)}"
    if array.shape == (n, d):
        x = array
    elif array.ndim == 3 and array.shape[1:] == (n, d):
        if seed >= array.shape[0]:
            raise ConfigError(f"{where}: holds {array.shape[0]} start(s), no seed {seed}")
        x = array[seed]
    else:
        raise ConfigError(f"{where}: shape {array.shape}, expected ({n}, {d}) or "
                          f"(seeds, {n}, {d})")
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
        digests[key] = load(key, text, source)[1]  # cached: the check above read the file
    return digests
