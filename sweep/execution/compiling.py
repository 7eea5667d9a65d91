"""The warm-up: the kernel variants a run calls, compiled (or loaded from the cache) before its
workers start, cold ones side by side, a process each, on the CPUs the run may use.

Numba compiles under one lock per process, so a run whose jobs call several variants that the
compile cache does not hold (the demo: lanes-float64 and rows-float64) would compile them one
after the other. `warm_up` compiles the costliest here and has up to one variant per further
CPU compiled `elsewhere`: a process each, compiling its variant into a folder of its own; when
this process is done, it copies into the compile cache each function a child compiled that the
cache does not hold yet (`adopt`), and the children's variants then load from the cache.

What the variants share is compiled once where it can be. The observables of x alone
(observables/extra.py: a third of a cold batched variant) go first to the first child, for
the dtypes of the variants compiled here (a child of their own where no variant goes
apart): this process, when it comes to them, waits for them and loads them. The batched
variants (lanes, rows) are passed the functions of their saves (gramobs.saves) by address
(numerics/passing.py), so a variant's kernel compiles without them: those functions compile
here for the dtypes of the variants compiled here, and a child whose variant has such a
dtype compiles its kernel alone (Path.prepare), which this process then calls with the
functions it compiled. And while they compile, this process and its children each copy in,
at every function they start to compile, what the others have cached meanwhile (`Sharing`).
A function two processes compile at once is compiled twice: CPU time for wall time, on CPUs
the run is about to use.

No two processes write one cache file: a function compiled by two processes into one cache at
once can leave the index of one naming the data file of the other, and a crash when it loads;
which is also why the workers never compile. A copied file is written under a temporary name
and renamed, as Numba writes its own, and an index is read before its data files are copied,
so that it names none not copied; one whose data files are not all written yet (Numba writes
a new function's index first) is copied later. A child that fails or is stopped leaves in the
cache at most whole functions it had cached before (copied in as they came), and what else it
would have compiled then compiles here, as if it had never started.
Numba's events (numba.core.event), which `Sharing` listens to, tell it when a function is
about to compile or load; without them it would copy nothing early, and compile the rest here.
"""

from __future__ import annotations

import io
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from sweep.config.grid import Job
from sweep.execution.kernel import (
    STRATEGIES,
    KernelPlan,
    cold_compile_seconds,
    compile_split,
    variants,
)
from sweep.numerics import cache

ALONE = "alone"  # a child's unit: the observables of x alone for one dtype ("alone:float64")
POLL = 0.05  # seconds between two looks for what the other processes have cached


def warm_up(jobs: list[Job], compiling=lambda variants, seconds: None,
            processes: int = 1) -> list[str]:
    """Compile (or load from the cache) exactly the kernel variants `jobs` call, before
    workers start: many threads or tasks compiling into one cache at once can crash it.
    Cold variants compile side by side on up to `processes` CPUs (kernel.compile_split).
    compiling(names, seconds) is called first if some are not known to be cached, with about
    how long they take; returns those names (KernelPlan.variant)."""
    # simulate (and with it Numba) is imported here, as the runner imports it, not a module
    # deeper: Python 3.11 runs Numba's import-time set-up of its type conversions at that
    # depth, and one depth there made each of its thousands of calls map and unmap a 16 KiB
    # chunk of Python's frame stack (+0.08 s to every warm run: benchmarks/HISTORY.md)
    from sweep.execution.simulate import PATHS

    kernels = variants(jobs)
    cold = [name for name in kernels if not cache.holds(name)]
    here, apart = compile_split(cold, processes)
    alone = _alone([kernels[name].dtype for name in here]) if processes > 1 else []
    # the saves' functions a batched variant is passed compile here for the dtypes of those
    # compiled here: a child's variant of such a dtype compiles its kernel alone
    saved = {kernels[name].dtype for name in here if PATHS[kernels[name].strategy].prepare}
    if cold:
        compiling(cold, cold_compile_seconds(cold, processes))
    with elsewhere([kernels[name] for name in apart], alone, saved):
        for name in here:
            PATHS[kernels[name].strategy].warm(kernels[name])
            cache.mark(name)
    for name, kernel in kernels.items():  # the warm ones, and those compiled apart: loaded
        if name not in here:
            PATHS[kernel.strategy].warm(kernel)
            cache.mark(name)
    return cold


def _alone(dtypes: list[str]) -> list[str]:
    """Of `dtypes`, those whose observables of x alone a child should compile: all but those
    of a variant the cache holds ("path-dtype[-method]"), whose save called them."""
    cached = {name.split("-")[1] for name in cache.held()}
    return sorted(set(dtypes) - cached)


@contextmanager
def elsewhere(plans: list[KernelPlan], alone: Sequence[str] = (),
              saved: Collection[str] = ()) -> Iterator[None]:
    """Compile `plans` in child processes while the body runs, the first child compiling
    first the observables of x alone for the dtypes `alone` (a child of its own if no plans),
    a plan of a dtype in `saved` without the functions its kernel is passed (the body
    compiles those); the body shares with them what each has cached meanwhile (Sharing) and
    waits for those observables where it comes to them. On leaving, wait for the children
    and adopt into the cache what each that succeeded compiled (killed if the body
    raises)."""
    first = [f"{ALONE}:{dtype}" for dtype in alone]
    units = [[_unit(plan, plan.dtype in saved)] for plan in plans]
    if units:
        units[0] = first + units[0]
    elif first:
        units = [first]
    children: list[tuple[subprocess.Popen, Path]] = []
    # what the children copy from this process's cache: what it caches from now on (less a
    # minute, for a shared file system whose clock runs behind this machine's)
    since = time.time() - 60.0
    try:
        for unit in units:
            folder = Path(tempfile.mkdtemp(prefix="sweep-compile-"))
            children.append((subprocess.Popen(
                [sys.executable, "-m", __name__, str(cache.directory()), repr(since), *unit],
                env={**os.environ, "NUMBA_CACHE_DIR": str(folder)}, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), folder))
        with ExitStack() as scope:
            if children:
                first_child, first_folder = children[0]
                promised = {dtype: (_done(first_folder, f"{ALONE}:{dtype}"), first_child)
                            for dtype in alone}
                sharing = Sharing([folder for _, folder in children], cache.directory(),
                                  promised=promised)
                scope.enter_context(sharing.listening())
            yield
        for child, folder in children:
            if child.wait() == 0:
                adopt(folder, cache.directory())
    finally:
        for child, folder in children:
            if child.poll() is None:
                child.kill()
                child.wait()
            shutil.rmtree(folder, ignore_errors=True)


class Sharing:
    """Copies into the cache `target`, as this process compiles, each function cached since
    `since` in the folders `sources` that target does not hold: at most every POLL seconds,
    when Numba takes its compile lock (before it looks in the cache for a function). And
    where Numba starts to compile observables/extra.py's `standalone` for x of a dtype in
    `promised` ({dtype: (marker, child)}), it first waits for that child's marker (or its
    end), so that the observables of x alone load from what the child compiled."""

    def __init__(self, sources: list[Path], target: Path, since: float = 0.0,
                 promised: dict | None = None):
        self.sources, self.target, self.since = sources, target, since
        self.promised = dict(promised or {})
        self.seen: dict[Path, int | None] = {}  # a folder's modification time when read
        self.done: set[tuple[Path, str]] = set()  # the indexes looked at
        self.last = 0.0

    def pull(self, force: bool = False) -> None:
        """Adopt what the sources cached since the last look: a folder of a source is read
        again when its modification time has moved, or may yet move unseen (`force`, or
        modified within the last second: a file written in the same tick of the file
        system's clock as the last look leaves it as it was), and an index is looked at
        once. Best effort: what cannot be copied (a cache that cannot be written) compiles
        here, as it would have."""
        self.last = time.monotonic()
        for source in self.sources:
            for folder in (Path(e.path) for e in _entries(source) if e.is_dir()):
                mtime = _mtime(folder)
                if mtime is None or (not force and self.seen.get(folder) == mtime):
                    continue
                self.seen[folder] = mtime if mtime < time.time_ns() - 10**9 else None
                into = self.target / folder.relative_to(source)
                for name in (e.name for e in _entries(folder)):
                    if not name.endswith(".nbi") or (folder, name) in self.done:
                        continue
                    index = folder / name
                    if (into / name).exists() or not _newer(index, self.since):
                        self.done.add((folder, name))
                        continue
                    try:  # looked at again later while its data is not all written
                        if _copy_function(index, into / name):
                            self.done.add((folder, name))
                    except OSError:
                        self.done.add((folder, name))

    def wait_for(self, dtype: str) -> None:
        """Wait until the child that promised the observables of x alone for `dtype` has
        compiled them (or ended), then adopt them."""
        marker, child = self.promised.pop(dtype, (None, None))
        if marker is None:
            return
        while not marker.exists() and child.poll() is None:
            time.sleep(0.01)
        self.pull(force=True)

    @contextmanager
    def listening(self) -> Iterator[Sharing]:
        from numba.core import event

        from sweep.observables.extra import standalone

        sharing = self

        class Listener(event.Listener):
            def on_start(self, ev):
                if ev.kind == "numba:compile" and ev.data["dispatcher"] is standalone:
                    sharing.wait_for(str(ev.data["args"][0].dtype))
                elif time.monotonic() - sharing.last >= POLL:
                    sharing.pull()

            def on_end(self, ev):
                pass

        listener = Listener()
        with event.install_listener("numba:compiler_lock", listener), \
                event.install_listener("numba:compile", listener):
            yield self


def adopt(source: Path, target: Path) -> list[Path]:
    """Copy into the cache `target` every function cached whole in `source` that `target`
    does not hold (its data files, then its index), never replacing a file of target;
    returns the indexes copied."""
    copied = []
    for index in sorted(source.rglob("*.nbi")):
        into = target / index.relative_to(source)
        if not into.exists() and _copy_function(index, into):
            copied.append(into)
    return copied


def _copy_function(index: Path, into: Path) -> bool:
    """A cached function's index `index` and its data files, copied beside `into` (its
    index's new path), if each data file the index names is there: the index read first, so
    that it names no data file not copied. Numba writes a new function's index, then its
    data: an index read in between names a file not yet written, and nothing is copied
    (returns False)."""
    text = index.read_bytes()
    names = _data_names(text)
    if names is None or not all((index.parent / name).exists() for name in names):
        return False
    into.parent.mkdir(parents=True, exist_ok=True)
    for name in sorted(names):
        _place((index.parent / name).read_bytes(), into.parent / name)
    _place(text, into)
    return True


def _data_names(index: bytes) -> set[str] | None:
    """The data files a Numba cache index names (a pickled format version, then the pickled
    source stamp and {overload key: data file name}), or None if it cannot be read."""
    try:
        stream = io.BytesIO(index)
        pickle.load(stream)  # a cache this run's own processes wrote
        _, overloads = pickle.loads(stream.read())
        return set(overloads.values())
    except Exception:  # any index that cannot be read: not copied
        return None


def _place(data: bytes, target: Path) -> None:
    """data written to target whole or not at all (a temporary name, then renamed)."""
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    part.write_bytes(data)
    os.replace(part, target)


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        return list(os.scandir(folder))
    except OSError:
        return []


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _newer(path: Path, since: float) -> bool:
    mtime = _mtime(path)
    return mtime is not None and mtime >= since * 1e9


def _unit(plan: KernelPlan, kernel_only: bool = False) -> str:
    """A child's unit: `plan`, or its kernel without the functions it is passed."""
    return (f"{plan.strategy.name}:{plan.dtype}:{int(plan.symmetric)}:{plan.method}:"
            f"{int(kernel_only)}")


def _done(folder: Path, unit: str) -> Path:
    """The marker a child leaves in its folder once it has compiled `unit` (ALONE's)."""
    return folder / f"{unit.replace(':', '-')}.done"


def _compile(source: str, since: str, *units: str) -> None:
    """The child: compile `units` in order into NUMBA_CACHE_DIR, with what the parent's
    cache `source` holds since `since` copied in as they go; a marker after the observables
    of x alone (Sharing.wait_for)."""
    from sweep.execution.simulate import PATHS
    from sweep.observables.extra import warm

    folder = cache.directory()
    with Sharing([Path(source)], folder, float(since)).listening():
        for unit in units:
            name, dtype, *rest = unit.split(":")
            if name == ALONE:
                warm(dtype)
                _place(b"", _done(folder, unit))
            else:
                symmetric, method, kernel_only = rest
                plan = KernelPlan(STRATEGIES[name], dtype, symmetric=symmetric == "1",
                                  method=method)
                path = PATHS[plan.strategy]
                (path.prepare if kernel_only == "1" and path.prepare else path.warm)(plan)


if __name__ == "__main__":
    _compile(*sys.argv[1:])
