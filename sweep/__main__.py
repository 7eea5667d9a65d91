"""The `sweep` command and `python -m sweep` (array tasks run it so, with the interpreter
that submitted them).

Ctrl-C is caught here, before anything heavy is imported: importing the command line (Typer,
Rich, NumPy, Numba) takes most of the first second, and a KeyboardInterrupt raised while it
does would otherwise end in a traceback instead of exit 130 and one line.
"""

import sys


def main() -> None:
    try:
        from sweep.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
