"""Progress of a run as the runner's hooks: a live bar on a terminal, plain lines in a log.

A log file (SLURM output, `> log 2>&1`) cannot show a bar that redraws itself; there a line
`name: done/total job(s) (p%), r jobs/s, eta h:mm:ss` is written at every tenth of the jobs
and at least every 30 s, so a long run's log shows it is alive and when it will end. Failed
and non-finite jobs are reported one line each in both.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from sweep.execution.runner import Hooks

LOG_EVERY = 30.0  # seconds between two progress lines in a log at most
LOG_STEP = 0.1    # ... and a line at every tenth of the jobs


class LogLines:
    """Progress lines for a log: call the hooks, read the lines `write` was given."""

    def __init__(self, name: str, write: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic):
        self.name, self.write, self.clock = name, write, clock
        self.total = self.done = self.next_mark = 0
        self.t0 = self.last = clock()

    def start(self, todo: int, skipped: int) -> None:
        self.total, self.done = todo, 0
        self.t0 = self.last = self.clock()
        self.next_mark = self._next_mark()

    def job_done(self, job, outcome) -> None:
        self.done += 1
        if self.done >= self.next_mark:
            self.next_mark = self._next_mark()
            self._line()
        else:
            self.tick()

    def tick(self) -> None:
        if self.total and self.clock() - self.last >= LOG_EVERY:
            self._line()

    def _next_mark(self) -> int:
        """The first job count past `done` that completes a tenth of the jobs."""
        tenths = round(1 / LOG_STEP)
        k = self.done * tenths // max(self.total, 1) + 1
        return -(-k * self.total // tenths)

    def _line(self) -> None:
        now = self.clock()
        self.last = now
        rate = self.done / (now - self.t0) if now > self.t0 else 0.0
        eta = clock_time((self.total - self.done) / rate) if rate > 0 else "unknown"
        self.write(f"{self.name}: {self.done}/{self.total} job(s) "
                   f"({100 * self.done / self.total:.0f}%), {rate:.3g} jobs/s, eta {eta}")


def clock_time(seconds: float) -> str:
    """h:mm:ss."""
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


@contextlib.contextmanager
def run_hooks(console: Console, name: str, describe: Callable) -> Iterator[Hooks]:
    """Hooks drawing a run's progress on `console`: a bar on a terminal, lines in a log.
    describe(job, outcome) -> the line for a failed or non-finite job, or None."""
    def say(message: str) -> None:
        console.print(message, markup=False, soft_wrap=True, highlight=False)

    if not console.is_terminal:
        lines = LogLines(name, say)
        yield Hooks(start=_skipped(say, lines.start), compiling=compiling(say),
                    job_done=_reported(say, describe, lines.job_done), notice=say,
                    tick=lines.tick)
        return
    columns = (TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
               MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(name, total=None)

        def say_above(message: str) -> None:
            bar.console.print(message, markup=False, soft_wrap=True, highlight=False)

        yield Hooks(start=_skipped(say_above, lambda todo, _: bar.update(task, total=todo)),
                    compiling=compiling(say_above),
                    job_done=_reported(say_above, describe, lambda *_: bar.advance(task)),
                    notice=say_above)


def _skipped(say, then):
    def start(todo: int, skipped: int) -> None:
        if skipped:
            say(f"{skipped} job(s) already complete, skipped")
        then(todo, skipped)
    return start


def compiling(say):
    """The hook that says which kernels compile, for about how long, before they do."""
    def say_compiling(variants: list[str], seconds: float) -> None:
        from sweep.numerics import cache

        say(f"compiling kernels {', '.join(variants)} (about {seconds:.0f} s, once: they "
            f"are cached in {cache.directory()})")
    return say_compiling


def _reported(say, describe, then):
    def job_done(job, outcome) -> None:
        then(job, outcome)
        line = describe(job, outcome)
        if line:
            say(line)
    return job_done
