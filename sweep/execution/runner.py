"""Run jobs in parallel, skip completed ones, report progress through callbacks.

Parallelism is at one level only: each batch of jobs (`batches`: jobs of one shape, integrated
by one compiled call and written as one part) runs a serial, GIL-free kernel on its own
thread; "blocked" jobs (sweep.execution.kernel: large n), when too few to fill the threads, run
after the others, one at a time, sharing their row tiles over all the threads. BLAS is held to one
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

from sweep.config.grid import Job
from sweep.errors import Interrupted, StoreError
from sweep.execution.compiling import warm_up
from sweep.execution.kernel import KernelPlan, job_flop, job_memory, kernel_plan
from sweep.execution.outcomes import Done, JobOutcome
from sweep.execution.resources import BATCH_BYTES, available_cpus
from sweep.execution.simulate import Stopped, simulate_batch
from sweep.kernels.codes import STATUS_FAILED, STATUS_NONFINITE
from sweep.storage.locks import JobLocks
from sweep.storage.parts import part_name
from sweep.storage.store import Store

_OK, _NONFINITE = JobOutcome(Done.OK), JobOutcome(Done.NONFINITE)
_ELSEWHERE, _CANCELLED, _BUSY = (JobOutcome(d) for d in (Done.ELSEWHERE, Done.CANCELLED,
                                                           Done.BUSY))


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
    busy: list[float] = field(default_factory=list)    # seconds each batch held its worker
    inside: list[float] = field(default_factory=list)  # ... of which in simulate_batch

    @property
    def kernel_share(self) -> float | None:
        """The share of the workers' time spent integrating (drawing starts and the compiled
        calls), the rest being batching, part files and locks; None if nothing ran."""
        return sum(self.inside) / sum(self.busy) if sum(self.busy) > 0 else None


@dataclass
class Hooks:
    """Progress callbacks; the runner never prints. compiling(variants, seconds) before
    kernels not known to be cached compile (for about that long); start(jobs to run,
    skipped) once they are; job_done(job, outcome) per job (a JobOutcome: OK, NONFINITE,
    FAILED or ELSEWHERE); notice(message); tick() every half second while jobs run (every
    WAIT_POLL s while waiting for another run), so that a hook can keep time."""

    start: Callable[[int, int], None] = lambda todo, skipped: None
    compiling: Callable[[list[str], float], None] = lambda variants, seconds: None
    job_done: Callable[[Job, JobOutcome], None] = lambda job, outcome: None
    notice: Callable[[str], None] = lambda message: None
    tick: Callable[[], None] = lambda: None


WAIT_POLL = 2.0  # seconds between looks at jobs another run holds
WAIT_NOTICE = 60.0  # seconds between the lines saying what a waiting run waits for
MAX_BATCH = 256  # jobs in one compiled call and one part file
BATCH_SECONDS = 1.0  # nominal work in a batch (lanes: a block at least): about what a kill -9 loses
BATCHES_PER_THREAD = 16  # at least, where there are enough jobs: threads end together
LANES_BATCHES_PER_THREAD = 4  # ... and for lanes, of min_batch jobs at least, if there are


def batch_key(job: Job) -> tuple:
    """What jobs of one batch share: everything the compiled call's types and shapes depend
    on (their seeds, betas, time steps and cluster thresholds may differ)."""
    m, integ = job.model, job.integrate
    return (kernel_plan(job), m.n, m.d, m.attention, m.layers, integ.method, integ.n_saves,
            integ.save_stride)


def batches(todo: list[Job], width: int, positions: str = "none",
            size: int | None = None, bins: int = 0) -> list[list[Job]]:
    """`todo` cut into batches of one batch_key, in job order; size: at most that many jobs
    each (default: batch_size). The batches change no result, only how the work is cut."""
    groups: dict[tuple, list[Job]] = {}
    for job in todo:
        groups.setdefault(batch_key(job), []).append(job)
    out = []
    for jobs in groups.values():
        b = size or batch_size(jobs[0], len(jobs), width, positions, bins)
        out += [jobs[i:i + b] for i in range(0, len(jobs), b)]
    return sorted(out, key=lambda batch: batch[0].index)


def batch_size(job: Job, count: int, width: int, positions: str, bins: int = 0) -> int:
    """Jobs per batch for `count` jobs like `job` on `width` threads: at most MAX_BATCH,
    BATCH_SECONDS of nominal work and BATCH_BYTES of memory, and small enough that every
    thread gets BATCHES_PER_THREAD batches; one for blocked jobs (large already). Jobs that
    run as lanes (kernels/lanes.py) come the first of their strategy's min_batch sizes to a
    batch at least where every thread still gets LANES_BATCHES_PER_THREAD such batches, and
    fewer come the smallest of those sizes to a batch (not one each): a block of lanes is
    padded to the vector width, so one system takes about as long as a vector's width of them
    (8 float64 with AVX-512) and a smaller batch shortens neither a thread's work nor what a
    kill loses."""
    plan = kernel_plan(job)
    if plan.strategy.shared:
        return 1
    seconds = job_flop(job) / plan.strategy.flops
    held = sum(job_memory(job, positions, bins).values())
    block = min(plan.strategy.min_batch, default=1)
    least = next((b for b in plan.strategy.min_batch
                  if count >= LANES_BATCHES_PER_THREAD * b * width), block)
    return max(1, min(MAX_BATCH, max(block, int(BATCH_SECONDS / max(seconds, 1e-9))),
                      BATCH_BYTES // max(held, 1),
                      max(least, count // (BATCHES_PER_THREAD * width))))


def pending(jobs: list[Job], store: Store, force: bool = False,
            damaged: list[str] | None = None) -> list[Job]:
    """Jobs without a whole result (from the parts' index); why the parts of those that
    had one are damaged or foreign is noted in `damaged`, once per part."""
    if force:
        return list(jobs)
    index = store.index()
    todo = [job for job in jobs if index.status(job.id)[0] in (None, STATUS_FAILED)]
    if damaged is not None:
        damaged += list(dict.fromkeys(index.lost[j.id] for j in todo if j.id in index.lost))
    return todo


def run(jobs: list[Job], store: Store, *, workers: int | None = None, force: bool = False,
        hooks: Hooks | None = None, batch: int | None = None) -> RunReport:
    """Run every job of the store's config not already complete (`jobs`: all of them or a
    shard); raise Interrupted on Ctrl-C after cleaning up.

    Jobs run in batches (`batches`; batch: at most that many jobs each), one part file and
    one lock each (sweep.storage.locks), so runs sharing an output split the work; batches
    another run holds are waited for. StoreError if the output cannot be written.
    """
    hooks = hooks or Hooks()
    t0 = time.perf_counter()
    store.prepare()
    positions = store.config.output.positions
    todo, report = _triage(jobs, store, force, hooks)
    stop = np.zeros(1, dtype=np.int64)

    def one(group: list[Job], kernel: KernelPlan) -> list[JobOutcome]:
        if stop[0]:
            return [_CANCELLED] * len(group)
        t = time.perf_counter()
        name = part_name([j.id for j in group])
        if not _lock(locks, name, store):
            return [_BUSY] * len(group)
        try:
            if not force and store.holds(group):
                return [_ELSEWHERE] * len(group)
            return _compute(group, store, positions, stop, kernel, report.inside)
        finally:
            locks.release(name)
            report.busy.append(time.perf_counter() - t)  # list.append: one at a time

    width = workers or available_cpus()
    with JobLocks(store.dir) as locks, threadpool_limits(1, user_api="blas"):
        try:
            work = batches(todo, width, positions, batch, store.config.output.hist_bins)
            _compile([b[0] for b in work], hooks, width)  # a batch's jobs share their kernel
            hooks.start(len(todo), report.skipped)
            for group, size, threads in _stages(work, width):
                with ThreadPoolExecutor(max_workers=size) as pool:
                    _drain(pool, lambda b, t=threads: one(b, kernel_plan(b[0]).on(t)),
                           group, stop, report, hooks, locks, store)
        except KeyboardInterrupt:
            report.seconds = time.perf_counter() - t0
            raise Interrupted(f"interrupted after {report.completed} job(s)",
                              report=report) from None
        finally:
            store.save_index()
    report.seconds = time.perf_counter() - t0
    return report


def _compile(todo: list[Job], hooks: Hooks, width: int) -> None:
    """Compile (or load) the kernels of `todo` once, before any worker starts, cold ones side
    by side on the run's `width` CPUs."""
    if todo:
        warm_up(todo, hooks.compiling, min(width, available_cpus()))


def _stages(todo: list[list[Job]], width: int) -> list[tuple[list[list[Job]], int, int]]:
    """(batches, threads in the pool, threads per batch): one batch per thread, except
    "blocked" jobs (a batch of one each) too few to fill the threads, which run last, one
    at a time, on all of them."""
    blocked = [kernel_plan(b[0]).strategy.shared for b in todo]
    wide = [b for b, w in zip(todo, blocked) if w]
    if not wide or len(wide) >= width:
        return [(todo, width, 1)]
    narrow = [b for b, w in zip(todo, blocked) if not w]
    return [(narrow, width, 1), (wide, 1, width)]


def _drain(pool, one, todo: list[list[Job]], stop, report: RunReport, hooks: Hooks,
           locks: JobLocks, store: Store) -> None:
    """Run the batches `todo` to the end, waiting for those another run holds."""
    first = True
    while todo:
        busy = _pass(pool, one, todo, stop, report, hooks)
        if busy and first:
            hooks.notice(_waiting(busy, locks))
        todo, first = _await_others(busy, store, locks, report, hooks), False


def _waiting(busy: list[list[Job]], locks: JobLocks) -> str:
    held = locks.describe([part_name([j.id for j in b]) for b in busy])
    return f"waiting for {sum(map(len, busy))} job(s) another run is computing: {held}"


def _lock(locks: JobLocks, name: str, store: Store) -> bool:
    try:
        return locks.acquire(name)
    except OSError as err:
        raise StoreError(f"{store.dir}: cannot create a lock file "
                         f"({err.strerror or type(err).__name__})") from None


def _triage(jobs: list[Job], store: Store, force: bool, hooks: Hooks):
    """(jobs to run, a report counting those skipped); damaged parts are announced, and
    moved aside (kept) for the run that recomputes their jobs."""
    report = RunReport(total=len(jobs))
    todo = pending(jobs, store, force, report.damaged)
    report.skipped = len(jobs) - len(todo)
    for message in report.damaged:
        hooks.notice(f"recomputing {message}")
    if report.damaged:
        store.set_aside_damaged(todo)
    return todo, report


def _compute(group: list[Job], store: Store, positions: str, stop: np.ndarray,
             kernel: KernelPlan, inside: list[float]) -> list[JobOutcome]:
    """Integrate a batch and write its part; each job's outcome. The seconds integrating
    go to `inside`."""
    t = time.perf_counter()
    try:
        results = simulate_batch(group, positions, stop, kernel=kernel,
                                 columns=store.config.output.columns,
                                 bins=store.config.output.hist_bins)
    except Stopped:
        return [_CANCELLED] * len(group)
    spent = time.perf_counter() - t  # not inside[-1]: another worker may append first
    inside.append(spent)
    share = spent / len(group)
    written = [f"{type(r).__name__}: {r}" if isinstance(r, Exception) else r for r in results]
    store.write_batch(group, written, [share] * len(group))
    return [JobOutcome(Done.FAILED, r) if isinstance(r, str) else
            _NONFINITE if r.status == STATUS_NONFINITE else _OK for r in written]


def _pass(pool, one, todo: list[list[Job]], stop, report: RunReport,
          hooks: Hooks) -> list[list[Job]]:
    """Submit the batches `todo`, collect outcomes; the batches other runs hold come back."""
    finished = queue.SimpleQueue()  # futures as they finish: O(1) per batch, unlike wait()
    futures = {pool.submit(one, batch): batch for batch in todo}
    for f in futures:
        f.add_done_callback(finished.put)
    try:
        return _collect(futures, finished, report, hooks)
    except BaseException:
        # Ctrl-C, a stop signal or an unwritable store: running batches stop at their next
        # step and nothing half-written is kept (parts are renamed into place whole).
        stop[0] = 1
        for f in futures:
            f.cancel()
        wait(futures)
        raise


def _await_others(busy: list[list[Job]], store: Store, locks: JobLocks, report: RunReport,
                  hooks: Hooks) -> list[list[Job]]:
    """Wait until another run finishes or abandons a batch it holds; return those to run."""
    told = time.monotonic()
    while busy:
        ready, still = [], []
        for batch in busy:
            if locks.holder(part_name([j.id for j in batch])) is not None:
                still.append(batch)
            elif store.holds(batch):
                report.elsewhere += len(batch)
                for job in batch:
                    hooks.job_done(job, _ELSEWHERE)
            else:
                ready.append(batch)
        if ready:
            return ready + still
        busy = still
        if busy:
            hooks.tick()
            time.sleep(WAIT_POLL)
            if time.monotonic() - told > WAIT_NOTICE:  # say it again: the wait may be long
                hooks.notice(_waiting(busy, locks))
                told = time.monotonic()
    return []


def _collect(futures: dict, finished: queue.SimpleQueue, report: RunReport,
             hooks: Hooks) -> list[list[Job]]:
    remaining, busy = len(futures), []
    while remaining:
        done = _finished(finished)
        hooks.tick()
        remaining -= len(done)
        for f in done:
            batch, outcomes = futures[f], f.result()
            if outcomes[0].done is Done.BUSY:
                busy.append(batch)
                continue
            for job, outcome in zip(batch, outcomes):
                _count(job, outcome, report, hooks)
    return sorted(busy, key=lambda b: b[0].index)


def _count(job: Job, outcome: JobOutcome, report: RunReport, hooks: Hooks) -> None:
    if outcome.done is Done.CANCELLED:
        return
    if outcome.done is Done.ELSEWHERE:
        report.elsewhere += 1
    elif outcome.done is Done.FAILED:
        report.failed.append((job, outcome.error))
    else:
        report.completed += 1
        if outcome.done is Done.NONFINITE:
            report.nonfinite.append(job)
    hooks.job_done(job, outcome)


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
