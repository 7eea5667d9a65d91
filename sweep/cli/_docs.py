"""docs/cli.md, generated from the Typer app: `python -m sweep.cli._docs` (`make docs`).

tests/test_docs.py checks that the page in the repository is what this writes, so the
reference never drifts from the commands.
"""

from __future__ import annotations

import html
import sys
from pathlib import Path

import click
import typer
from typer.cli import get_docs_for_click
from typer.core import MARKUP_MODE_KEY

PAGE = Path(__file__).parents[2] / "docs" / "cli.md"
INTRO = """\
Every command and option, generated from the command line itself (`make docs`; a test
checks that this page is current). The Python functions behind the commands:
[python.md](python.md). Exit codes: 0 success, 1 a failed job or unreadable or unwritable
results, 2 a mistake in a config or an option, 130 / 143 / 138 stopped by Ctrl-C / SIGTERM /
SIGUSR1 (finished jobs are kept; the same command resumes).
"""


def text() -> str:
    from sweep.cli import app

    command = typer.main.get_command(app)
    ctx = typer.Context(command, info_name="sweep")
    ctx.obj = {MARKUP_MODE_KEY: app.rich_markup_mode}
    with click.Context(command, info_name="sweep"):
        body = get_docs_for_click(obj=command, ctx=ctx, name="sweep", title="sweep commands")
    title, _, rest = html.unescape(body).strip().partition("\n")
    return f"{title}\n\n{INTRO}{rest}\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else PAGE
    target.write_text(text())
    print(f"wrote {target}")
