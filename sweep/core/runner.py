"""Run jobs in parallel, skip completed ones, report progress through callbacks.

Parallelism is at one level only: each job runs a serial, GIL-free kernel on its own thread;
"blocked" jobs (sweep.core.kernel: large n), when too few to fill the threads, run after the
others, one at a time, sharing their row tiles over all the threads. BLAS is held to one
thread: its results change in the last bit with its thread count (a run would depend on
--workers), and on a shared machine its spinning threads stalled (docs/performance.md).
The driver sequences stages; the store decides every I/O; the caller's hooks draw progress.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from sweep.core.grid import Job
from sweep.core.kernel import KernelPlan, kernel_plan
from sweep.core.locks import STALE_AFTER, JobLocks
from sweep.core.resources import available_cpus
from sweep.core.simulate import Stopped, simulate, warm_up
from sweep.core.store import Part, Store, part_of
from sweep.errors import Interrupted, StoreError
from sweep.kernels.codes import STATUS_NONFINITE


@dataclass
class RunReport:
    total: int = 0
    skipped: int = 0           # already complete before this run
    completed: int = 0         # finished now, status 0 or 1
    nonfinite: list[Job] = field(default_factory=list)
    failed: list[tuple[Job, str]] = field(default_factory=list)
    seconds: float = 0.0
    elsewhere: int = 0         # finished meanwhile by another run sharing the output
    damaged: list[str] = field(default_factory=list)  # unreadable parts, recomputed
    parts: dict[str, Part] = field(default_factory=dict)  # job id -> part, see run(keep=)


@dataclass
class Hooks:
    """Progress callbacks; the runner never prints. compiling(variants) before kernels not
    known to be cached compile; start(jobs to run, skipped) once they are; job_done(job,
    outcome) per job ("ok", "nonfinite", "failed: ...", "elsewhere"); notice(message);
    tick() every half second while jobs run (every WAIT_POLL s while waiting for another
    run), so that a hook can keep time."""

    start: Callable[[int, int], None] = lambda todo, skipped: None
    compiling: Callable[[list[str]], None] = lambda variants: None
    job_done: Callable[[Job, str], None] = lambda job, outcome: None
    notice: Callable[[str], None] = lambda message: None
    tick: Callable[[], None] = lambda: None


WAIT_POLL = 2.0  # seconds between looks at jobs another run holds


def pending(jobs: list[Job], store: Store, force: bool = False,
            damaged: list[str] | None = None, kept: dict[str, Part] | None = None) -> list[Job]:
    """Jobs without a whole result; a damaged or foreign part is noted in `damaged`, a
    whole one (by job id) in `kept`."""
    if force:
        return list(jobs)
    todo = []
    for job, part, error in store.read_each(jobs):
        if error and damaged is not None:
            damaged.append(error)
        if part is None or part.failed:
            todo.append(job)
        elif kept is not None:
            kept[job.id] = part
    return todo


def run(jobs: list[Job], store: Store, *, workers: int | None = None, force: bool = False,
        hooks: Hooks | None = None, keep: bool = False) -> RunReport:
    """Run every job of the store's config not already complete (`jobs`: all of them or a
    shard); raise Interrupted on Ctrl-C after cleaning up.

    Each job is computed under its lock (sweep.core.locks), so runs sharing an output split the
    work; jobs another run holds are waited for. StoreError if the output cannot be written.
    keep: put every part this run read or wrote in report.parts, for store.merge to use
    instead of reading each part again; only with output.positions "none": what is kept is
    each job's series ([n_saves, 8] float64), which the merge holds anyway, never positions.
    """
    hooks = hooks or Hooks()
    t0 = time.perf_counter()
    store.prepare()
    positions = store.config.output.positions
    keep = keep and positions == "none"
    todo, report = _triage(jobs, store, force, hooks, keep)
    kept = report.parts if keep else None
    stop = np.zeros(1, dtype=np.int64)

    def one(job: Job, kernel: KernelPlan) -> str:
        if stop[0]:
            return "cancelled"
        if not _lock(locks, job, store):
            return "busy"
        try:
            if not force and store.done(job):
                return "elsewhere"
            return _compute(job, store, positions, stop, kernel, kept)
        finally:
            locks.release(job.id)

    with JobLocks(store.dir) as locks, threadpool_limits(1, user_api="blas"):
        try:
            _compile(todo, hooks)
            hooks.start(len(todo), report.skipped)
            for group, size, threads in _stages(todo, workers or available_cpus()):
                with ThreadPoolExecutor(max_workers=size) as pool:
                    _drain(pool, lambda job, t=threads: one(job, kernel_plan(job).on(t)),
                           group, stop, report, hooks, locks, store)
        except KeyboardInterrupt:
            report.seconds = time.perf_counter() - t0
            raise Interrupted(f"interrupted after {report.completed} job(s)",
                              report=report) from None
    report.seconds = time.perf_counter() - t0
    return report


def _compile(todo: list[Job], hooks: Hooks) -> None:
    """Compile (or load) the kernels of `todo` once, before any worker starts."""
    if todo:
        warm_up(todo, hooks.compiling)


def _stages(todo: list[Job], width: int) -> list[tuple[list[Job], int, int]]:
    """(jobs, threads in the pool, threads per job): one job per thread, except "blocked"
    jobs too few to fill the threads, which run last, one at a time, on all of them."""
    blocked = [kernel_plan(j).strategy == "blocked" for j in todo]
    wide = [j for j, b in zip(todo, blocked) if b]
    if not wide or len(wide) >= width:
        return [(todo, width, 1)]
    narrow = [j for j, b in zip(todo, blocked) if not b]
    return [(narrow, width, 1), (wide, 1, width)]


def _drain(pool, one, todo: list[Job], stop, report: RunReport, hooks: Hooks,
           locks: JobLocks, store: Store) -> None:
    """Run `todo` to the end, waiting for the jobs another run holds."""
    first = True
    while todo:
        busy = _pass(pool, one, todo, stop, report, hooks)
        if busy and first:
            hooks.notice(_waiting(busy, locks))
        todo, first = _await_others(busy, store, locks, report, hooks), False


def _waiting(busy: list[Job], locks: JobLocks) -> str:
    owners = sorted({f"{o.get('host')} pid {o.get('pid')}" for o in
                     (locks.holder(j.id) for j in busy) if o})
    who = f" ({', '.join(owners[:3])}{', ...' if len(owners) > 3 else ''})" if owners else ""
    return (f"{len(busy)} job(s) are being computed by another run{who}; waiting for them "
            f"(a lock not refreshed for {STALE_AFTER:.0f} s is broken)")


def _lock(locks: JobLocks, job: Job, store: Store) -> bool:
    try:
        return locks.acquire(job.id)
    except OSError as err:
        raise StoreError(f"{store.dir}: cannot create a lock file "
                         f"({err.strerror or type(err).__name__})") from None


def _triage(jobs: list[Job], store: Store, force: bool, hooks: Hooks, keep: bool):
    """(jobs to run, a report counting those skipped); damaged parts are announced."""
    report = RunReport(total=len(jobs))
    todo = pending(jobs, store, force, report.damaged, report.parts if keep else None)
    report.skipped = len(jobs) - len(todo)
    for message in report.damaged:
        hooks.notice(f"recomputing {message}")
    return todo, report


def _compute(job: Job, store: Store, positions: str, stop: np.ndarray, kernel: KernelPlan,
             kept: dict[str, Part] | None) -> str:
    t = time.perf_counter()
    try:
        result = simulate(job, positions, stop, kernel=kernel)
    except Stopped:
        return "cancelled"
    except Exception as err:  # noqa: BLE001 - a failed job is recorded, the sweep goes on
        store.write_failure(job, f"{type(err).__name__}: {err}", time.perf_counter() - t)
        return f"failed: {type(err).__name__}: {err}"
    store.write(job, result)
    if kept is not None:
        kept[job.id] = part_of(result)
    return "nonfinite" if result.status == STATUS_NONFINITE else "ok"


def _pass(pool, one, todo: list[Job], stop, report: RunReport, hooks: Hooks) -> list[Job]:
    """Submit `todo`, collect outcomes; the jobs other runs hold come back."""
    finished = queue.SimpleQueue()  # futures as they finish: O(1) per job, unlike wait()
    futures = {pool.submit(one, job): job for job in todo}
    for f in futures:
        f.add_done_callback(finished.put)
    try:
        return _collect(futures, finished, report, hooks)
    except BaseException:
        # Ctrl-C, a stop signal or an unwritable store: running jobs stop at their next step
        # and nothing half-written is kept (parts are renamed into place whole).
        stop[0] = 1
        for f in futures:
            f.cancel()
        wait(futures)
        raise


def _await_others(busy: list[Job], store: Store, locks: JobLocks, report: RunReport,
                  hooks: Hooks) -> list[Job]:
    """Wait until another run finishes or abandons a job it holds; return those to run."""
    while busy:
        ready, still = [], []
        for job in busy:
            if locks.holder(job.id) is not None:
                still.append(job)
            elif store.done(job):
                report.elsewhere += 1
                hooks.job_done(job, "elsewhere")
            else:
                ready.append(job)
        if ready:
            return ready + still
        busy = still
        if busy:
            hooks.tick()
            time.sleep(WAIT_POLL)
    return []


def _collect(futures: dict, finished: queue.SimpleQueue, report: RunReport,
             hooks: Hooks) -> list[Job]:
    remaining, busy = len(futures), []
    while remaining:
        done = _finished(finished)
        hooks.tick()
        remaining -= len(done)
        for f in done:
            job, outcome = futures[f], f.result()
            if outcome == "cancelled":
                continue
            if outcome == "busy":
                busy.append(job)
                continue
            if outcome == "elsewhere":
                report.elsewhere += 1
            elif outcome.startswith("failed"):
                report.failed.append((job, outcome.partition(": ")[2]))
            else:
                report.completed += 1
                if outcome == "nonfinite":
                    report.nonfinite.append(job)
            hooks.job_done(job, outcome)
    return sorted(busy, key=lambda j: j.index)


def _finished(finished: queue.SimpleQueue) -> list:
    """The futures finished since the last call; none if half a second passes first (the
    caller's loop then lets signal handlers run)."""
    try:
        done = [finished.get(timeout=0.5)]
    except queue.Empty:
        return []
    while not finished.empty():
        done.append(finished.get())
    return done
