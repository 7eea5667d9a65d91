"""`sweep plateaus`: the metastable plateaus of a saved series (the energy staircase) per run."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from sweep import api
from sweep.cli import _summary, app, out, user_errors
from sweep.cli.analysis import AlongOpt, FileOut, ResultsArg, VarOpt


@app.command("plateaus")
def plateaus_cmd(
        results: ResultsArg, var: VarOpt,
        along: AlongOpt = "time",
        tol: Annotated[float, typer.Option(
            "--rtol", "--tol", help="Flat where the relative change per unit of the axis is "
                                    "at most this.", min=0.0)] = 1e-3,
        min_duration: Annotated[float, typer.Option(
            "--min-duration", help="Shortest plateau counted, in units of the axis.",
            min=0.0)] = 0.0,
        output: FileOut = None):
    """Per grid point: plateaus of VAR (count, levels, durations) and the saddle times
    between them."""
    with user_errors():
        result = api.plateaus(results, var, along, tol, min_duration, output)
    _print_plateaus(result)
    if output is not None:
        out.print(f"plateaus: {output}")


def _print_plateaus(result, rows: int = 40) -> None:
    var, along = result.attrs["var"], result.attrs["along"]
    dims = list(result["count"].dims)
    stacked = result.stack(run=dims) if dims else result.expand_dims("run")
    table = Table(title=f"plateaus of {var} along {along} (relative rate <= "
                        f"{result.attrs['tol']:g} per unit {along})")
    for col in dims + ["count", "levels", f"durations ({along})", f"saddles ({along})"]:
        table.add_column(col, justify="right")
    total = stacked.sizes["run"]
    for k in range(min(total, rows)):
        run = stacked.isel(run=k)
        table.add_row(*[_summary((run[d].item(),)) for d in dims], str(int(run["count"])),
                      _listed(run.level.values), _listed(run.duration.values),
                      _listed(run.saddle_time.values))
    out.print(table)
    if total > rows:
        out.print(f"... {total - rows} more row(s); -o FILE keeps them all")


def _listed(values: np.ndarray) -> str:
    return ", ".join(f"{v:.4g}" for v in values if np.isfinite(v)) or "-"
