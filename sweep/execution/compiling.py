"""The warm-up: the kernel variants a run calls, compiled (or loaded from the cache) before its
workers start, cold ones side by side, a process each, on the CPUs the run may use.

Numba compiles under one lock per process, so a run whose jobs call several variants that the
compile cache does not hold (the demo: lanes-float64 and rows-float64) would compile them one
after the other. `warm_up` compiles the costliest here and has up to one variant per further
CPU compiled `elsewhere`: a process each, compiling its variant into a folder of its own; when
this process is done, it copies into the compile cache each function a child compiled that the
cache does not hold yet (`adopt`), and the children's variants then load from the cache.

No two processes write one cache file: a function compiled by two processes into one cache at
once can leave the index of one naming the data file of the other, and a crash when it loads;
which is also why the workers never compile. A copied file is written under a temporary name
and renamed, as Numba writes its own. A child that fails or is stopped leaves nothing in the
cache, and its variant then compiles here, as if it had never started.

What a child compiles that this process compiles too (the save's observables, shared by the
batched paths) is compiled twice: CPU time for wall time, on CPUs the run is about to use.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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
    if cold:
        compiling(cold, cold_compile_seconds(cold, processes))
    with elsewhere([kernels[name] for name in apart]):
        for name in here:
            PATHS[kernels[name].strategy].warm(kernels[name])
            cache.mark(name)
    for name, kernel in kernels.items():  # the warm ones, and those compiled apart: loaded
        if name not in here:
            PATHS[kernel.strategy].warm(kernel)
            cache.mark(name)
    return cold


@contextmanager
def elsewhere(plans: list[KernelPlan]) -> Iterator[None]:
    """Compile `plans` in child processes while the body runs; on leaving it, wait for them
    and adopt into the cache what each that succeeded compiled (killed if the body raises)."""
    children: list[tuple[subprocess.Popen, Path]] = []
    try:
        for plan in plans:
            folder = Path(tempfile.mkdtemp(prefix="sweep-compile-"))
            children.append((subprocess.Popen(
                [sys.executable, "-m", __name__, plan.strategy.name, plan.dtype,
                 str(int(plan.symmetric)), plan.method],
                env={**os.environ, "NUMBA_CACHE_DIR": str(folder)}, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), folder))
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


def adopt(source: Path, target: Path) -> list[Path]:
    """Copy into the cache `target` every function cached in `source` that `target` does not
    hold (its data files, then its index), never replacing a file of target; returns the
    indexes copied."""
    copied = []
    for index in sorted(source.rglob("*.nbi")):
        into = target / index.relative_to(source)
        if into.exists():
            continue
        into.parent.mkdir(parents=True, exist_ok=True)
        stem = glob.escape(index.name[: -len(".nbi")])
        for data in sorted(index.parent.glob(f"{stem}.*.nbc")):
            _place(data, into.parent / data.name)
        _place(index, into)
        copied.append(into)
    return copied


def _place(source: Path, target: Path) -> None:
    """source copied to target whole or not at all (a temporary name, then renamed)."""
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    shutil.copyfile(source, part)
    os.replace(part, target)


def _compile(strategy: str, dtype: str, symmetric: str, method: str) -> None:
    """The child: compile one variant into NUMBA_CACHE_DIR."""
    from sweep.execution.simulate import PATHS

    plan = KernelPlan(STRATEGIES[strategy], dtype, symmetric=symmetric == "1", method=method)
    PATHS[plan.strategy].warm(plan)


if __name__ == "__main__":
    _compile(*sys.argv[1:])
