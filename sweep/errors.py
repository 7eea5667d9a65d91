"""What can go wrong, by what the user does about it: one exception class per exit code.

Every error sweep raises on purpose is a `SweepError` whose str() is one line naming the
offending key, file or job: the line the command line prints. The command line maps the
classes to exit codes in one place (`sweep.cli.exit_code`):

    ConfigError   2    a mistake in what was asked: config, option, input or results file
    StoreError    1    a failed job, or results that cannot be read or written
    Interrupted   130  a stop signal (128 + its number: 143 for SIGTERM, 138 for SIGUSR1)

Subclasses say more and keep their class's exit code: SchedulerError and ModelError (2),
MissingJobs and JobsFailed (1). Warnings (SweepWarning) go through Python's
warnings module, which the command line prints as `warning: ...`. This module imports
nothing of sweep: every layer may raise these.
"""

from __future__ import annotations

import signal


class SweepError(Exception):
    """Base of the errors sweep raises on purpose; str() is one line."""


class ConfigError(SweepError, ValueError):
    """A mistake in a config, an option or an input; str() names the key or file."""


class SweepWarning(UserWarning):
    """Something that will not stop a run but changes what it gives: a step size too large
    to be stable, fewer jobs at once than asked because memory is short."""


class StoreError(SweepError):
    """A problem with result files or a job; str() names the file or the jobs."""


class Interrupted(SweepError):
    """A stop signal ended the run; finished jobs are kept. report: the runner's RunReport
    (None when the stop came outside the runner); signum: which signal (None: Ctrl-C)."""

    def __init__(self, message: str, signum: int | None = None, report=None):
        self.signum, self.report = signum or signal.SIGINT, report
        super().__init__(message)

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name
