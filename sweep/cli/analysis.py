"""Commands that read results: show, threshold, plot, and the theory curves to compare with."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from sweep.cli import _summary, app, fail, out, user_errors
from sweep.core.store import write_dataset


@app.command()
def show(results: Annotated[Path, typer.Argument(help="A results .nc file.", readable=False)]):
    """What a results file holds: axes, variables, config, provenance."""
    from sweep.analysis.results import open_results

    with user_errors():
        ds = open_results(results, load=False)
    with ds:
        out.print(Text.assemble((str(results), "bold"), "  ", str(ds.attrs.get("title", ""))))
        table = Table(title="axes")
        for col in ("dimension", "size", "values"):
            table.add_column(col)
        for dim, size in ds.sizes.items():
            vals = tuple(ds[dim].values.tolist()) if dim in ds.coords else ()
            table.add_row(dim, str(size), _summary(vals))
        out.print(table)
        table = Table(title="variables")
        for col in ("name", "dimensions", "units", "description"):
            table.add_column(col)
        for name, var in ds.data_vars.items():
            table.add_row(name, ", ".join(var.dims), str(var.attrs.get("units", "")),
                          str(var.attrs.get("long_name", "")))
        out.print(table)
        if "status" in ds:
            counts = {int(s): int((ds.status == s).sum()) for s in set(ds.status.values.ravel())}
            out.print(f"status counts: {counts}")
        for key in ("source", "history", "sweep_config_hash", "python_version",
                    "numpy_version", "numba_version", "xarray_version"):
            if key in ds.attrs:
                out.print(f"{key}: {ds.attrs[key]}")
        if "sweep_config" in ds.attrs:
            out.print("config:")
            out.print(str(ds.attrs["sweep_config"]).rstrip())


# ---------------------------------------------------------------- analysis: threshold, plot

ResultsArg = Annotated[Path, typer.Argument(help="A results .nc file (from sweep run/merge).",
                                            show_default=False, readable=False)]
VarOpt = Annotated[str, typer.Option("--var", help="The variable, e.g. clustered_fraction.",
                                     show_default=False)]
TimeOpt = Annotated[str | None, typer.Option(
    "--time", help="A saved time, final (default), all (keep time as an axis), or a "
                   "reduction over time per run: max | min | mean | plateau.")]
FileOut = Annotated[Path | None, typer.Option("-o", "--output", help="netCDF file to write.",
                                              readable=False)]


@app.command("threshold")
def threshold_cmd(
        results: ResultsArg, var: VarOpt,
        along: Annotated[str, typer.Option("--along", help="Axis to cross along.")] = "beta",
        level: Annotated[float, typer.Option("--level", help="Level to cross.")] = 0.5,
        time: TimeOpt = None, output: FileOut = None,
        bootstrap: Annotated[int, typer.Option(
            "--bootstrap", min=0, help="Resamples of the seeds for the 95% interval.")] = 1000,
        seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
        direction: Annotated[str, typer.Option(
            "--direction", help="Crossings counted: any | up | down.")] = "any"):
    """Where the seed-mean VAR first crosses LEVEL along an axis, with a bootstrap interval."""
    from sweep.analysis.results import open_results
    from sweep.analysis.thresholds import threshold as locate

    if output is not None and _same_file(output, results):
        raise fail(f"-o {output}: is the results file being read; write the threshold to "
                   "another file")
    with user_errors():
        ds = open_results(results)
        th = locate(ds, var, along, level, time, bootstrap, seed, direction)
        path = write_dataset(th, output) if output is not None else None
    _print_threshold(th)
    if path is not None:
        out.print(f"threshold: {path}")


def _print_threshold(th, rows: int = 40) -> None:
    out.print(f"{th.attrs['along']} where the seed-mean {th.attrs['var']} crosses "
              f"{th.attrs['level']:g} (time: {th.attrs['time']}, {th.attrs['seeds']} seed(s))")
    dims = list(th.threshold.dims)
    table = Table()
    for col in dims + ["threshold", "95% interval"]:
        table.add_column(col, justify="right")
    flat = th.to_dataframe().reset_index().to_dict("records") if dims else [
        {k: float(th[k]) for k in ("threshold", "threshold_low", "threshold_high")}]
    found = [r for r in flat if r["threshold"] == r["threshold"]]
    for rec in found[:rows]:
        table.add_row(*[f"{rec[d]:g}" for d in dims], f"{rec['threshold']:.4g}",
                      f"[{rec['threshold_low']:.4g}, {rec['threshold_high']:.4g}]")
    out.print(table)
    if len(found) > rows:
        out.print(f"... {len(found) - rows} more row(s); -o FILE keeps them all")
    if len(found) < len(flat):
        out.print(f"{len(flat) - len(found)} point(s) never cross (NaN)")


@app.command("plot")
def plot_cmd(
        results: ResultsArg, var: VarOpt,
        x: Annotated[str, typer.Option("--x", help="Horizontal axis.")] = "beta",
        y: Annotated[str | None, typer.Option(
            "--y", help="Vertical axis of a heatmap (without it: lines of VAR against x).")]
        = None, time: TimeOpt = None,
        sel: Annotated[list[str] | None, typer.Option(
            "--sel", help="Fix an axis at its nearest grid value: --sel d=128.")] = None,
        lines: Annotated[str | None, typer.Option(
            "--lines", help="Line plot: one line per value of this axis (a few are picked).")]
        = None,
        threshold: Annotated[Path | None, typer.Option(
            "--threshold", help="A sweep threshold file to draw with its interval.",
            readable=False)] = None,
        theory: Annotated[Path | None, typer.Option(
            "--theory", help="A sweep theory file to overlay (equiangular or kappa-c).",
            readable=False)]
        = None,
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", help="Figure file: .png, .pdf or .svg (default: "
                                   "figures/<results>-<var>.png).", readable=False)] = None):
    """Phase diagram (heatmap, threshold and theory overlaid) or line plot of VAR."""
    from sweep.analysis import plots
    from sweep.analysis.results import open_results, parse_selection

    with user_errors():
        ds = open_results(results)
        extra = {k: open_results(p) for k, p in
                 (("threshold", threshold), ("theory", theory)) if p is not None}
        path = output or Path("figures") / f"{results.stem}-{var}.png"
        try:
            done = plots.plot(ds, var, path, x=x, y=y, time=time,
                              selection=parse_selection(sel), series=lines, **extra)
        except OSError as err:
            raise fail(f"{path}: cannot write the figure ({err.strerror or err})", 1) from None
    out.print(f"figure: {done}")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or a.exists() and os.path.samefile(a, b)
    except OSError:
        return False


# ---------------------------------------------------------------- theory

theory_app = typer.Typer(no_args_is_help=True, help="Theory curves to compare sweeps with.")
app.add_typer(theory_app, name="theory")


@theory_app.command("equiangular")
def theory_equiangular(
        n: Annotated[int, typer.Option("--n", min=2, help="Tokens.")] = 32,
        model: Annotated[str, typer.Option(
            "--model", help="softmax | unnormalized.")] = "softmax",
        eps: Annotated[float, typer.Option("--eps", help="Boundary at rho = 1 - eps.")] = 1e-3,
        beta: Annotated[tuple[float, float, int], typer.Option(
            "--beta", help="Betas as START STOP NUM (linspace).")] = (0.0, 9.0, 91),
        t_max: Annotated[float, typer.Option("--t-max", help="Last time of rho(t).")] = 30.0,
        save_every: Annotated[float, typer.Option(
            "--save-every", help="Time step of the rho(t) grid.")] = 0.5,
        rho0: Annotated[float, typer.Option("--rho0", help="Initial cosine.")] = 0.0,
        output: FileOut = None):
    """The equiangular-ODE (t, beta) boundary: t*(beta) where rho_beta(t) = 1 - eps."""
    import numpy as np

    from sweep.analysis import theory

    if beta[2] < 1 or t_max <= 0 or save_every <= 0:
        raise fail("--beta NUM, --t-max and --save-every must be positive")
    betas = np.linspace(*beta)
    times = np.arange(round(t_max / save_every) + 1) * save_every
    with user_errors():
        ds = theory.equiangular(n, model, eps, betas, times, rho0)
        path = write_dataset(ds, output) if output is not None else None
    out.print(f"equiangular ODE, n = {n}, {model}: time t* at which rho = 1 - {eps:g}")
    table = Table()
    table.add_column("beta", justify="right")
    table.add_column("t*", justify="right")
    step = max(1, betas.size // 20)
    for b, t in zip(betas[::step], ds.t_boundary.values[::step]):
        table.add_row(f"{b:g}", f"{t:.5g}")
    out.print(table)
    if path is not None:
        out.print(f"theory: {path}")


@theory_app.command("kappa-c")
def theory_kappa_c(
        d: Annotated[list[float], typer.Option("--d", help="Dimension(s), repeatable.")],
        beta: Annotated[list[float], typer.Option("--beta", help="Beta(s), repeatable.")],
        output: FileOut = None):
    """Noise threshold kappa_c = beta / E[t e^(beta t)] of the unnormalized model."""
    from sweep.analysis import theory

    with user_errors():
        ds = theory.kappa_c_dataset(d, beta)
        path = write_dataset(ds, output) if output is not None else None
    out.print("kappa_c(beta, d) of the unnormalized model; noise threshold D_c = 1 / kappa_c")
    table = Table()
    for col in ("d", "beta", "kappa_c", "D_c"):
        table.add_column(col, justify="right")
    for dd in ds.d.values:
        for b in ds.beta.values:
            k = float(ds.kappa_c.sel(d=dd, beta=b))
            table.add_row(f"{dd:g}", f"{b:g}", f"{k:.8g}", f"{1 / k:.8g}" if k else "inf")
    out.print(table)
    if path is not None:
        out.print(f"theory: {path}")
