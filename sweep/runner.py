"""Run jobs in parallel, skip completed ones, report progress through callbacks.

Parallelism is at one level only: each job runs a serial, GIL-free kernel on its own thread;
"blocked" jobs (simulate.strategy: large n), when too few to fill the threads, run after the
others, one at a time, sharing their row tiles over all the threads. BLAS is held to one
thread: its results change in the last bit with its thread count (a run would depend on
--workers), and on a shared machine its spinning threads stalled (README "Performance").
The driver sequences stages; the store decides every I/O; the caller's hooks draw progress.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from sweep.grid import Job
from sweep.simulate import STATUS_NONFINITE, Stopped, simulate, strategy, warm_up_jobs
from sweep.store import Store


class Interrupted(Exception):
    """The run was stopped (Ctrl-C); finished jobs are on disk."""

    def __init__(self, report: RunReport):
        self.report = report
        super().__init__(f"interrupted after {report.completed} job(s)")


@dataclass
class RunReport:
    total: int = 0
    skipped: int = 0           # already complete before this run
    completed: int = 0         # finished now, status 0 or 1
    nonfinite: list[Job] = field(default_factory=list)
    failed: list[tuple[Job, str]] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class Hooks:
    """Progress callbacks; the runner never prints."""

    start: Callable[[int, int], None] = lambda todo, skipped: None
    job_done: Callable[[Job, str], None] = lambda job, outcome: None


def default_workers() -> int:
    """The CPUs this process may use (the task's allocation on a cluster)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def pending(jobs: list[Job], store: Store, force: bool = False) -> list[Job]:
    return list(jobs) if force else [j for j in jobs if not store.done(j)]


def run(jobs: list[Job], store: Store, *, positions: str = "none", workers: int | None = None,
        force: bool = False, hooks: Hooks | None = None) -> RunReport:
    """Run every job not already complete; raise Interrupted on Ctrl-C after cleaning up."""
    hooks = hooks or Hooks()
    t0 = time.perf_counter()
    todo = pending(jobs, store, force)
    report = RunReport(total=len(jobs), skipped=len(jobs) - len(todo))
    hooks.start(len(todo), report.skipped)
    if todo:
        warm_up_jobs(todo)
    stop = np.zeros(1, dtype=np.int64)
    width = workers or default_workers()
    wide = [j for j in todo if strategy(j) == "blocked"]
    wide = wide if len(wide) < width else []  # enough of them to fill the threads side by side

    def one(job: Job) -> str:
        if stop[0]:
            return "cancelled"
        t = time.perf_counter()
        try:
            result = simulate(job, positions, stop, threads=width if job in wide else 1)
        except Stopped:
            return "cancelled"
        except Exception as err:  # noqa: BLE001 - a failed job is recorded, the sweep goes on
            store.write_failure(job, f"{type(err).__name__}: {err}", time.perf_counter() - t)
            return f"failed: {type(err).__name__}: {err}"
        store.write(job, result)
        return "nonfinite" if result.status == STATUS_NONFINITE else "ok"

    with ThreadPoolExecutor(max_workers=width) as pool, ThreadPoolExecutor(1) as solo, \
            threadpool_limits(1, user_api="blas"):
        futures = {pool.submit(one, job): job for job in todo if job not in wide}
        narrow = list(futures)
        futures.update({solo.submit(_after, narrow, one, job): job for job in wide})
        try:
            _collect(futures, report, hooks)
        except KeyboardInterrupt:
            stop[0] = 1
            for f in futures:
                f.cancel()
            wait(futures)
            report.seconds = time.perf_counter() - t0
            raise Interrupted(report) from None
    report.seconds = time.perf_counter() - t0
    return report


def _after(earlier: list, one: Callable[[Job], str], job: Job) -> str:
    """Run job once the earlier futures are done, so its threads have the machine."""
    wait(earlier)
    return one(job)


def _collect(futures: dict, report: RunReport, hooks: Hooks) -> None:
    remaining = set(futures)
    while remaining:
        done, remaining = wait(remaining, timeout=0.5, return_when=FIRST_COMPLETED)
        for f in done:
            job, outcome = futures[f], f.result()
            if outcome == "cancelled":
                continue
            if outcome.startswith("failed"):
                report.failed.append((job, outcome.partition(": ")[2]))
            else:
                report.completed += 1
                if outcome == "nonfinite":
                    report.nonfinite.append(job)
            hooks.job_done(job, outcome)
