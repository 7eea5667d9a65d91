"""The `sweep` command line: thin commands that parse, call one library function and print.

This package is the only place that prints or exits. User mistakes become one line on stderr
and exit code 2; failed jobs exit 1; Ctrl-C exits 130. Here: the Typer app, the consoles,
the error mapping and the options several commands share; the commands live in
sweeping (plan, run, merge), scheduling (status, submit, compile), analysis (show,
threshold, plot, theory) and models (probe, extract), each registering on `app`.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from sweep import __version__
from sweep.core.config import Config, ConfigError, clip, load, output_path
from sweep.core.store import StoreError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Phase-diagram sweeper for self-attention particle dynamics.")
# Paths, names, config values and results attributes are user text, printed as they are:
# neither console reads Rich markup or emoji codes, so `[b]` or `:x:` in a path stays there,
# and a line is never broken to the terminal's width (a path stays whole for copy and
# paste; tables still fit the width). Styles are given as arguments (Text, style=).
out = Console(highlight=False, markup=False, emoji=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, markup=False, emoji=False, soft_wrap=True)
MESSAGE_WIDTH = 1000  # an error line quotes values shortened already; this is the backstop

# readable=False: Click's own check of an unreadable file prints a five-line usage box; the
# commands' readers report it in one line naming the file, like every other read error.
ConfigArg = Annotated[Path, typer.Argument(help="YAML config file.", show_default=False,
                                           readable=False)]
SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", help="Override a config key by dotted path, YAML-typed: --set model.beta=2.5")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", help="Results path (default: output.path of the config).", readable=False)]


def fail(message: str, code: int = 2) -> typer.Exit:
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    err.print(Text.assemble(("error:", "bold red"), " ", clip(first, MESSAGE_WIDTH)))
    return typer.Exit(code)


@contextlib.contextmanager
def user_errors():
    """Turn domain errors into one line on stderr and the SPEC's exit codes."""
    try:
        yield
    except ConfigError as e:
        raise fail(str(e), 2) from None
    except StoreError as e:
        raise fail(str(e), 1) from None


def _version(value: bool) -> None:
    if value:
        out.print(f"sweep {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version.")] = False):
    """Phase-diagram sweeper for self-attention particle dynamics."""


def _load(config: Path, sets: list[str] | None) -> Config:
    return load(config, sets or [])


def _output(cfg: Config, path: Path | None) -> Path:
    """--out if given (checked like output.path), else the config's output.path."""
    return Path(output_path(str(path), "--out") if path is not None else cfg.output.path)


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
