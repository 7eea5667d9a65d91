"""What became of a job when the runner gave it its turn: a small record the runner reports
to the progress hooks and counts, instead of strings both ends would parse. Imports nothing
heavy, so the command line can name the outcomes without loading the kernels."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Done(enum.Enum):
    """How a job's turn ended: integrated (OK, NONFINITE: status 0 or 1, written), FAILED
    (an error, written as status 2), ELSEWHERE (another run sharing the output wrote it),
    CANCELLED (the run stopped first), BUSY (another run holds its batch's lock: retried)."""

    OK = "ok"
    NONFINITE = "nonfinite"
    FAILED = "failed"
    ELSEWHERE = "elsewhere"
    CANCELLED = "cancelled"
    BUSY = "busy"


@dataclass(frozen=True)
class JobOutcome:
    """A job's outcome as the runner reports it to the hooks; error: why it FAILED."""

    done: Done
    error: str = ""

    def __str__(self) -> str:
        return f"failed: {self.error}" if self.done is Done.FAILED else self.done.value
