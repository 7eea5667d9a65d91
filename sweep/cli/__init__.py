"""The `sweep` command line: thin commands that parse, call one library function and print.

Every command is one call into sweep.api (the functions `import sweep` gives); this package
holds no logic a script would need. It is the only place that prints or exits: the errors of
sweep.errors become one line on stderr and the exit code `exit_code` gives (2 a mistake in
what was asked, 1 a failed job or unusable results, 128 + N a stop signal: 130 for Ctrl-C),
SweepWarnings a `warning:` line. Here: the Typer app, the consoles, that mapping and the
options several commands share; the commands live in sweeping (plan, run, merge),
scheduling (status, submit, compile), analysis (show, threshold, plot, theory), plateaus
(plateaus) and models (probe, extract), each registering on `app`.
"""

from __future__ import annotations

import contextlib
import enum
import gc
import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from sweep._version import __version__
from sweep.config.schema import Config, TrainingConfig, clip
from sweep.errors import ConfigError, Interrupted, SweepError, SweepWarning


def _flags_without_type(option_class) -> None:
    """A flag takes no value, so its help row shows no type: Typer 0.2x prints `<bool>` after
    `--force` and `--help`, which reads as if the flag wanted one."""
    shown = getattr(option_class, "display_type_rich", None)
    if shown is not None:
        def display_type_rich(self, ctx):
            return None if self.is_flag else shown(self, ctx)
        option_class.display_type_rich = display_type_rich


_flags_without_type(typer.core.TyperOption)
# Click's exceptions, wherever this Typer takes Click from (its own copy since 0.2x)
click = sys.modules[typer.BadParameter.__module__]


class _OneLineGroup(typer.core.TyperGroup):
    """Click's usage errors (a bad option value, an unknown option, a missing argument) as
    one `error:` line naming the option and exit 2, like every other mistake, instead of a
    usage box; `sweep CMD` alone still prints its help."""

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except click.NoArgsIsHelpError as e:
            e.show()
            sys.exit(e.exit_code)
        except click.UsageError as e:
            fail(_usage_line(e), e.exit_code)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            fail(e.format_message(), e.exit_code)
            sys.exit(e.exit_code)
        except typer.Abort:
            _stopped("interrupted")
            sys.exit(130)
        sys.exit(code if isinstance(code, int) else 0)


def _usage_line(e) -> str:
    """`--workers: Input should be ... (sweep run -h)`: the option first, as config errors
    name their key first."""
    text = e.format_message().removeprefix("Value error, ").rstrip(".")
    param = getattr(e, "param", None)
    if isinstance(e, click.BadParameter) and e.message and param is not None and param.opts:
        text = f"{max(param.opts, key=len)}: {e.message.removeprefix('Value error, ')}"
        text = text.rstrip(".")
    return text + (f" ({e.ctx.command_path} -h)" if e.ctx and e.ctx.parent else "")


app = typer.Typer(cls=_OneLineGroup, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode="markdown",
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Phase-diagram sweeper for self-attention particle dynamics.")


LOG_WIDTH = 1000
MESSAGE_WIDTH = 1000  # an error line quotes values shortened already; this is the backstop


def _console(stderr: bool = False) -> Console:
    """On a terminal, its width; in a log (SLURM output, `> log 2>&1`), lines as long as they
    are: a path or a hash is never cut at column 80 (soft_wrap: a line is never broken by
    Rich, tables still fit the width). Paths, names, config values and results attributes are
    user text, printed as they are: the consoles read neither Rich markup nor emoji codes, so
    `[b]` or `:x:` in a path stays there; styles are given as arguments (Text, style=)."""
    console = Console(stderr=stderr, highlight=False, markup=False, emoji=False,
                      soft_wrap=True)
    if not console.is_terminal:
        console.width = LOG_WIDTH
    return console


out = _console()
err = _console(stderr=True)

# readable=False: Click's own check of an unreadable file prints a five-line usage box; the
# commands' readers report it in one line naming the file, like every other read error.
ConfigArg = Annotated[Path, typer.Argument(help="YAML config file.", show_default=False,
                                           metavar="CONFIG", readable=False)]
SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=VALUE",
    help="Override a config key by dotted path, YAML-typed: `--set model.beta=2.5` "
         "(repeatable).")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", metavar="PATH", help="Results file (default: output.path of the config); the "
                                  "parts go beside it, in <out>.parts/.", readable=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON instead of tables.")]


def choices(name: str, values) -> type[enum.Enum]:
    """The library's names for an option as an Enum: Typer shows them in help and completes
    them, and refuses anything else before a command runs."""
    return enum.Enum(name, {v: v for v in values}, type=str)


def exit_code(error: SweepError) -> int:
    """The exit code of each class of sweep.errors, in one place."""
    if isinstance(error, Interrupted):
        return 128 + error.signum
    return 2 if isinstance(error, ConfigError) else 1


def fail(message: str, code: int = 2) -> typer.Exit:
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    err.print(Text.assemble(("error:", "bold red"), " ", clip(first, MESSAGE_WIDTH)))
    return typer.Exit(code)  # one line, always


def _warn(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, SweepWarning):
        err.print(Text.assemble(("warning:", "yellow"), " ", str(message)))
    else:
        _show_warning(message, category, filename, lineno, file, line)


_show_warning = warnings.showwarning


@contextlib.contextmanager
def user_errors():
    """sweep's errors as one line on stderr and their exit code; its warnings as lines."""
    with warnings.catch_warnings():
        warnings.showwarning = _warn
        warnings.simplefilter("always", SweepWarning)
        try:
            yield
        except Interrupted as e:
            _stopped(str(e))
            raise typer.Exit(exit_code(e)) from None
        except KeyboardInterrupt:  # Ctrl-C outside a run
            _stopped("interrupted")
            raise typer.Exit(130) from None
        except SweepError as e:
            raise fail(str(e), exit_code(e)) from None


_told: list[str] = []  # the stop lines printed: Typer turns Ctrl-C into a silent exit 130


def _stopped(line: str) -> None:
    err.print(line)
    _told.append(line)


def _version(value: bool) -> None:
    if value:
        out.print(f"sweep {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version.")] = False):
    """Phase-diagram sweeper for self-attention particle dynamics on the sphere.

    Each command is a function of `import sweep` (docs/python.md); every option of every
    command: docs/cli.md.
    """


def _load(config: Path, sets: list[str] | None) -> Config:
    from sweep import api

    return api.load(config, sets or [])


def _load_any(config: Path, sets: list[str] | None):
    """A run config, or a training config (compile and submit take either)."""
    try:
        return _load(config, sets)
    except TrainingConfig:
        from sweep import api

        return api.load_training(config, sets or [])


def _summary(values: tuple) -> str:
    shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    return ", ".join(shown) if len(shown) <= 6 else ", ".join(shown[:3] + ["..."] + shown[-2:])


def main() -> None:
    # Numba, xarray and pandas leave a few 10^5 objects that live until exit. Freezing them
    # spares the cyclic GC from walking them again in every full collection, and above all
    # in those the interpreter runs at exit, a sizeable part of a short warm `sweep run`
    # (benchmarks/HISTORY.md). Nothing is lost: atexit handlers still run,
    # files are closed where they are written, and the OS takes back the memory.
    gc.freeze()
    try:
        app()
    except KeyboardInterrupt:
        _stopped("interrupted")
        sys.exit(130)
    except SystemExit as done:  # Ctrl-C while Typer parses or prints: say so, in one line
        if done.code == 130 and not _told:
            _stopped("interrupted")
        raise
    finally:
        gc.freeze()


# Registration happens on import; this order is the order of `sweep --help`.
from sweep.cli import sweeping, refining, scheduling, analysis, plateaus  # noqa: E402, F401, I001
from sweep.cli import models, training  # noqa: E402, F401, I001
