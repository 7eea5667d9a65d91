"""Where compiled kernels are kept, and which of them a cache holds. No Numba here.

Numba writes what it compiles (`cache=True`, _jit.py) into NUMBA_CACHE_DIR. When that is
unset, sweep points it at one user cache directory, $XDG_CACHE_HOME/sweep/numba/KEY (else
~/.cache/sweep/numba/KEY), so `make`, a plain `sweep`, a notebook and the tasks of a job array
share one cache instead of each compiling for itself. `use_default` does it, from
sweep/numerics/__init__.py: before any compiled module imports Numba, which reads the variable
when it is imported. KEY (`source_key`) hashes the contents of the compiled folders' sources
and Numba's version: Numba checks only the file of each cached function, so a new version of
sweep whose kernels call moved or changed functions would otherwise load the old version's
machine code (or fail to unpickle it); under its own key it compiles afresh.

Numba cannot say what its cache holds without being imported (0.3 s), so the warm-up
(execution/compiling.warm_up) leaves a marker per compiled variant, stamped with the kernels' source
files (size and modification time, which is what Numba's own cache checks) and Numba's
version: `sweep plan` reads them to say whether the kernels must compile first.

Numba notices an edit to the file of a compiled function, not to the functions it calls from
other files: after editing a kernel, `python -m sweep.numerics.cache` (`make clean`) forgets
what this checkout compiled.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

# the compiled modules' folders: every file in them counts for the stamp
SOURCES = tuple(Path(__file__).parents[1] / name for name in ("kernels", "observables", "numerics"))


def default_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "sweep" / "numba" / source_key()


def source_key() -> str:
    """Changes whenever the text of a compiled module or Numba's version does (not its
    modification time: two checkouts of one commit share the key)."""
    digest = hashlib.sha256(f"{metadata.version('numba')}\n{sys.version}".encode())
    for path in sorted(p for folder in SOURCES for p in folder.rglob("*.py")):
        digest.update(path.relative_to(SOURCES[0].parent).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def use_default() -> Path:
    """Set NUMBA_CACHE_DIR to the default unless it is set; the cache directory in use."""
    os.environ.setdefault("NUMBA_CACHE_DIR", str(default_directory()))
    config = sys.modules.get("numba.core.config")
    if config is not None:  # Numba imported first (a notebook): have it read the variable
        config.reload_config()
    return directory()


def directory() -> Path:
    """The compile cache in use: NUMBA_CACHE_DIR, else the default."""
    return Path(os.environ.get("NUMBA_CACHE_DIR") or default_directory())


def stamp() -> str:
    """Changes whenever a kernel source file or Numba's version does."""
    files = sorted(p for folder in SOURCES for p in folder.rglob("*.py"))
    text = [metadata.version("numba"), sys.version]
    text += [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files]
    return hashlib.sha256("\n".join(text).encode()).hexdigest()[:16]


MARKERS = "sweep-compiled"  # the cache's folder of the warm-up's markers


def _marker(variant: str) -> Path:
    return directory() / MARKERS / f"{variant}.{stamp()}"


def holds(variant: str) -> bool:
    """Whether the cache holds `variant` (a KernelPlan.variant) compiled from these sources."""
    return _marker(variant).exists()


def held() -> list[str]:
    """The variants the cache holds compiled from these sources (those `holds` says)."""
    suffix = f".{stamp()}"
    return sorted(p.name[: -len(suffix)] for p in (directory() / MARKERS).glob(f"*{suffix}"))


def mark(variant: str) -> None:
    """Record that `variant` is compiled into the cache (best effort: a read-only cache
    still works, `sweep plan` then only cannot tell)."""
    marker = _marker(variant)
    if marker.exists():  # a warm run writes nothing into the cache
        return
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass


def forget() -> list[Path]:
    """Remove what this copy of the kernels compiled (Numba keeps one folder per source
    folder, named after it and the SHA-1 of its path) and the markers; the folders removed."""
    folders = [*SOURCES, *(p.parent for s in SOURCES for p in s.glob("*/__init__.py"))]
    names = [f"{f.name}_{hashlib.sha1(str(f.resolve()).encode()).hexdigest()}" for f in folders]
    gone = [directory() / name for name in names + [MARKERS]]
    for folder in gone:
        shutil.rmtree(folder, ignore_errors=True)
    return gone


if __name__ == "__main__":
    for folder in forget():
        print(f"removed {folder}")
