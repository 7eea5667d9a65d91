"""`python -m sweep`: the command line (array tasks run it so, with the interpreter that
submitted them)."""

from sweep.cli import main

main()
