"""The `sweep` command line: thin commands that parse, call one library function and print.

Every command is one call into sweep.api (the functions `import sweep` gives); this package
holds no logic a script would need. It is the only place that prints or exits: the errors of
sweep.errors become one line on stderr and the exit code `exit_code` gives (2 a mistake in
what was asked, 1 a failed job or unusable results, 128 + N a stop signal: 130 for Ctrl-C),
SweepWarnings a `warning:` line. Here: the Typer app, the consoles, that mapping and the
options several commands share; the commands live in sweeping (plan, run, merge),
scheduling (status, submit, compile), analysis (show, threshold, plot, theory) and models
(probe, extract), each registering on `app`.
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
from rich.markup import escape

from sweep._version import __version__
from sweep.core.config import Config, load
from sweep.errors import ConfigError, Interrupted, SweepError, SweepWarning

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode="markdown",
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Phase-diagram sweeper for self-attention particle dynamics.")


LOG_WIDTH = 1000


def _console(stderr: bool = False) -> Console:
    """On a terminal, its width; in a log (SLURM output, `> log 2>&1`), lines as long as they
    are: a path or a hash is never cut at column 80."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console.width = LOG_WIDTH
    return console


out = _console()
err = _console(stderr=True)

ConfigArg = Annotated[Path, typer.Argument(help="YAML config file.", show_default=False,
                                           metavar="CONFIG")]
SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=VALUE",
    help="Override a config key by dotted path, YAML-typed: `--set model.beta=2.5` "
         "(repeatable).")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", metavar="PATH", help="Results file (default: output.path of the config); the "
                                  "parts go beside it, in <out>.parts/.")]
MergedOpt = Annotated[Path | None, typer.Option(
    "--out", metavar="PATH", help="Where the merged dataset is written (default: "
    "output.path). The parts are always those beside output.path: after `run --out X`, pass "
    "--set output.path=X.")]
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
    err.print(f"[bold red]error:[/] {escape(first)}", soft_wrap=True)  # one line, always
    return typer.Exit(code)


def _warn(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, SweepWarning):
        err.print(f"[yellow]warning:[/] {escape(str(message))}", soft_wrap=True)
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
            err.print(escape(str(e)), soft_wrap=True)
            raise typer.Exit(exit_code(e)) from None
        except SweepError as e:
            raise fail(str(e), exit_code(e)) from None


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
    return load(config, sets or [])


def _summary(values: tuple) -> str:
    shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    return ", ".join(shown) if len(shown) <= 6 else ", ".join(shown[:3] + ["..."] + shown[-2:])


def main() -> None:
    # Numba, xarray and pandas leave a few 10^5 objects that live until exit. Freezing them
    # spares the cyclic GC from walking them again in every full collection, and above all
    # in those the interpreter runs at exit: 0.3 s of a 1.2 s warm `sweep run` on the
    # reference machine (docs/performance.md). Nothing is lost: atexit handlers still run,
    # files are closed where they are written, and the OS takes back the memory.
    gc.freeze()
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    finally:
        gc.freeze()


# Registration happens on import; this order is the order of `sweep --help`.
from sweep.cli import sweeping, scheduling, analysis, models  # noqa: E402, F401, I001
