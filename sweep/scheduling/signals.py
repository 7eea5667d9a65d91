"""Stop signals: Ctrl-C, and the SIGTERM / SIGUSR1 that schedulers send before a kill.

Each becomes a KeyboardInterrupt in the main thread, which the runner turns into a clean stop
(running jobs end at their next step, finished parts stay, nothing half-written is kept).
"""

from __future__ import annotations

import contextlib
import signal

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGUSR1")
                     if hasattr(signal, name))


class Received:
    """Which stop signal arrived (None if none), and the exit code it calls for."""

    def __init__(self) -> None:
        self.signum: int | None = None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else "SIGINT"

    @property
    def exit_code(self) -> int:
        # 130 for Ctrl-C as the shell reports it; 128 + N for the others (143 for SIGTERM)
        return 128 + (self.signum or signal.SIGINT)


@contextlib.contextmanager
def stop_on_signals():
    """While active, every stop signal raises KeyboardInterrupt; yields the `Received`."""
    received = Received()

    def handler(signum, frame):
        received.signum = signum
        raise KeyboardInterrupt

    try:
        previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    except ValueError:  # not the main thread (e.g. inside a test runner's worker): leave as is
        yield received
        return
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
