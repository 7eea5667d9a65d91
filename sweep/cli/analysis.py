"""Commands that read results: show, threshold, plot, and the theory curves to compare with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table
from rich.text import Text

from sweep import api
from sweep.analysis.results import threshold_rows
from sweep.analysis.thresholds import DIRECTIONS
from sweep.cli import JsonOpt, _summary, app, choices, fail, out, user_errors
from sweep.config.schema import clip


@app.command()
def show(results: Annotated[Path, typer.Argument(help="A results .nc file.", metavar="RESULTS",
                                                 readable=False)]):
    """What a results file holds: axes, variables, config, provenance."""
    with user_errors():
        ds = api.open_results(results, load=False)
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
                out.print(f"{key}: {ds.attrs[key]}", markup=False, soft_wrap=True)
        if "sweep_config" in ds.attrs:  # text in a file sweep wrote; anything in a crafted one
            recorded = ds.attrs["sweep_config"]
            text = recorded if isinstance(recorded, str) else f"(not text: {recorded!r})"
            out.print("config:")
            out.print(clip(text.rstrip(), 100_000), markup=False, soft_wrap=True)


# ---------------------------------------------------------------- analysis: threshold, plot

ResultsArg = Annotated[Path, typer.Argument(help="A results .nc file (from sweep run/merge).",
                                            show_default=False, metavar="RESULTS",
                                            readable=False)]
VarOpt = Annotated[str, typer.Option("--var", metavar="VAR", show_default=False,
                                     help="The variable, e.g. clustered_fraction.")]
TimeOpt = Annotated[str | None, typer.Option(
    "--time", metavar="T", help="A saved time, final (default), all (keep time as an axis), "
    "or a reduction over time per run: max, min, mean, plateau.")]
Direction = choices("Direction", DIRECTIONS)
FileOut = Annotated[Path | None, typer.Option("-o", "--output", metavar="FILE.nc",
                                              help="netCDF file to write.", readable=False)]
AlongOpt = Annotated[str, typer.Option(
    "--along", help="Axis to follow: time, or layer in a sweep probe dataset.")]


@app.command("threshold")
def threshold_cmd(
        results: ResultsArg, var: VarOpt,
        along: Annotated[str, typer.Option("--along", metavar="AXIS",
                                           help="Axis to cross along.")] = "beta",
        level: Annotated[float, typer.Option("--level", metavar="LEVEL",
                                             help="Level to cross.")] = 0.5,
        time: TimeOpt = None, output: FileOut = None,
        bootstrap: Annotated[int, typer.Option(
            "--bootstrap", min=0, metavar="N", help="Resamples of the seeds for the 95% "
            "interval when there are too many to enumerate (up to 9 seeds the bootstrap is "
            "exact); 0: no interval.")] = 2000,
        seed: Annotated[int, typer.Option("--seed", metavar="SEED",
                                          help="Seed of the resampling.")] = 0,
        direction: Annotated[Direction, typer.Option(
            "--direction", help="Crossings counted: either way, upward or downward.")] = "any",
        as_json: JsonOpt = False):
    """Where the seed-mean VAR first crosses LEVEL along an axis, with a bootstrap interval.

    One row per point of the other axes; NaN where it never crosses. `--json` prints one
    JSON object per point (its coordinates, threshold, low, high; null for NaN).
    """
    with user_errors():
        th = api.threshold(results, var, along, level, time, bootstrap, seed,
                           Direction(direction).value, out=output)
    if as_json:
        for record in _records(th):
            print(json.dumps({k: (None if v != v else v) for k, v in record.items()}))
        return
    _print_threshold(th)
    if output is not None:
        out.print(f"threshold: {output}", markup=False, soft_wrap=True)


def _records(th) -> list[dict]:
    """One dict per point of the threshold's axes: coordinates, threshold, low, high."""
    names = {"threshold": "threshold", "threshold_low": "low", "threshold_high": "high"}
    dims = list(th.threshold.dims)
    rows = th.to_dataframe().reset_index().to_dict("records") if dims else [
        {k: float(th[k]) for k in names}]
    return [{**{d: _plain(r[d]) for d in dims}, **{v: float(r[k]) for k, v in names.items()}}
            for r in rows]


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def _print_threshold(th, rows: int = 40) -> None:
    out.print(f"{th.attrs['along']} where the seed-mean {th.attrs['var']} crosses "
              f"{th.attrs['level']:g} (time: {th.attrs['time']}, {th.attrs['seeds']} seed(s), "
              f"bootstrap: {th.attrs['bootstrap']})", markup=False, soft_wrap=True)
    dims = list(th.threshold.dims)
    table = Table()
    for col in dims + ["threshold", "95% interval"]:
        table.add_column(col, justify="right")
    for rec in (found := threshold_rows(th))[:rows]:
        table.add_row(*rec)
    out.print(table)
    if len(found) > rows:
        out.print(f"... {len(found) - rows} more row(s); -o FILE keeps them all, --json "
                  "prints them")
    never = int(th.threshold.isnull().sum())
    if never:
        out.print(f"{never} point(s) never cross (NaN)")


@app.command("plot")
def plot_cmd(
        results: ResultsArg, var: VarOpt,
        x: Annotated[str, typer.Option("--x", metavar="AXIS", help="Horizontal axis.")]
        = "beta",
        y: Annotated[str | None, typer.Option(
            "--y", metavar="AXIS",
            help="Vertical axis of a heatmap (without it: lines of VAR against x).")]
        = None, time: TimeOpt = None,
        sel: Annotated[list[str] | None, typer.Option(
            "--sel", metavar="AXIS=VALUE",
            help="Fix an axis at one of its grid values: --sel d=128, --sel "
                 "head_beta=1,1,11,11 (a value not on the grid is an error; repeatable).")]
        = None,
        lines: Annotated[str | None, typer.Option(
            "--lines", metavar="AXIS",
            help="Line plot: one line per value of this axis (at most 7: more are thinned "
            "evenly, and the console and legend say which are drawn).")] = None,
        threshold: Annotated[Path | None, typer.Option(
            "--threshold", metavar="FILE.nc",
            help="A sweep threshold file to draw with its interval.", readable=False)] = None,
        theory: Annotated[Path | None, typer.Option(
            "--theory", metavar="FILE.nc",
            help="A sweep theory file to overlay (equiangular or kappa-c).",
            readable=False)] = None,
        refined: Annotated[Path | None, typer.Option(
            "--refined", metavar="FILE.nc", help="A sweep refine file: its samples and "
            "thresholds drawn over the heatmap.", readable=False)] = None,
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", metavar="FILE", help="Figure file: .png, .pdf or .svg "
            "(default: figures/RESULTS-VAR.png).", readable=False)] = None,
        numbers: Annotated[Path | None, typer.Option(
            "--numbers", metavar="FILE.json", help="Also write the numbers the figure shows "
            "as JSON (curves, bands, counts, threshold points, deviations from theory).",
            readable=False)] = None,
        log_x: Annotated[bool, typer.Option(
            "--log-x", help="The horizontal axis on a log scale (geometric grids such as "
            "d = 2, 3, 8, 32; a declared logspace is one already).")] = False,
        log_y: Annotated[bool, typer.Option(
            "--log-y", help="The vertical axis on a log scale: a heatmap's y, or a line "
            "plot's values (those <= 0 left out).")] = False):
    """Phase diagram (heatmap, threshold and theory overlaid) or line plot of VAR."""
    from sweep.analysis.results import parse_selection

    with user_errors():
        done = api.plot(results, var, output, x=x, y=y, time=time, sel=parse_selection(sel),
                        lines=lines, threshold=threshold, theory=theory, numbers=numbers,
                        refined=refined, log_x=log_x, log_y=log_y)
    out.print(f"figure: {done}", markup=False, soft_wrap=True)
    if numbers is not None:
        out.print(f"numbers: {numbers}", markup=False, soft_wrap=True)


# ---------------------------------------------------------------- theory

theory_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown",
                         help="Theory curves to compare sweeps with.")
app.add_typer(theory_app, name="theory")

DimsOpt = Annotated[list[float], typer.Option("--d", help="Dimension(s), repeatable.",
                                              show_default=False)]
BetasOpt = Annotated[list[float], typer.Option("--beta", help="Beta(s), repeatable.",
                                               show_default=False)]


def _table(header: list[str], rows) -> None:
    table = Table()
    for col in header:
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(*row)
    out.print(table)


def _written(ds) -> None:
    if "source" in ds.encoding:
        out.print(f"theory: {ds.encoding['source']}")


def _head_betas(given: list[str] | None) -> list[tuple[float, ...]] | None:
    if not given:
        return None
    try:
        return [tuple(float(b) for b in text.split(",")) for text in given]
    except ValueError:
        raise fail(f"--head-beta: expected numbers separated by commas, got "
                   f"{' '.join(given)!r}") from None


@theory_app.command("equiangular")
def theory_equiangular(
        n: Annotated[int, typer.Option("--n", min=2, help="Tokens.")] = 32,
        model: Annotated[str, typer.Option(
            "--model", help="softmax | unnormalized | relu.")] = "softmax",
        eps: Annotated[float, typer.Option("--eps", help="Boundary at rho = 1 - eps.")] = 1e-3,
        beta: Annotated[tuple[float, float, int] | None, typer.Option(
            "--beta", help="Betas as START STOP NUM (linspace; default 0 9 91).",
            show_default=False)] = None,
        head_beta: Annotated[list[str] | None, typer.Option(
            "--head-beta", help="Instead of --beta: one beta per head, B1,B2,... (heads are "
                                "averaged); repeatable, one grid point each.")] = None,
        t_max: Annotated[float, typer.Option("--t-max", help="Last time of rho(t).")] = 30.0,
        save_every: Annotated[float, typer.Option(
            "--save-every", help="Time step of the rho(t) grid.")] = 0.5,
        rho0: Annotated[float, typer.Option("--rho0", help="Initial cosine.")] = 0.0,
        output: FileOut = None):
    """The equiangular-ODE (t, beta) boundary: t*(beta) where rho_beta(t) = 1 - eps."""
    heads = _head_betas(head_beta)
    with user_errors():
        ds = api.theory("equiangular", n, model, eps, beta, t_max, save_every, rho0, heads,
                        out=output)
    dim = ds.t_boundary.dims[0]
    out.print(f"equiangular ODE, n = {n}, {model}, rho(0) = {rho0:g}: time t* at which "
              f"rho = 1 - {eps:g}")
    step = max(1, ds.sizes[dim] // 20)
    rows = [(_value(b), f"{t:.5g}") for b, t in zip(ds[dim].values[::step],
                                                  ds.t_boundary.values[::step])]
    header = [dim, "t*"]
    if model == "relu":  # time scales as 1/beta: beta t* is the number to compare
        header.append("beta t*")
        rows = [(b, t, f"{float(b) * float(t):.5g}") for b, t in rows]
    _table(header, rows)
    _written(ds)


def _value(v) -> str:
    """A grid value as a table shows it: 1.05, not linspace's 1.0499999999999998."""
    return f"{v:.10g}" if isinstance(v, (float, np.floating)) else str(v)


@theory_app.command("kappa-c")
def theory_kappa_c(d: DimsOpt, beta: BetasOpt, output: FileOut = None):
    """Noise threshold kappa_c = beta / E[t e^(beta t)] of the unnormalized model."""
    with user_errors():
        ds = api.theory("kappa-c", d, beta, out=output)
    out.print("kappa_c(beta, d) of the unnormalized model; noise threshold D_c = 1 / kappa_c")
    from sweep.analysis.theory import CONVENTION

    out.print(f"convention: {CONVENTION}")
    rows = []
    for dd in ds.d.values:
        for b in ds.beta.values:
            p = ds.sel(d=dd, beta=b)
            k = float(p.kappa_c)
            kind = "discontinuous" if int(p.discontinuous) else "continuous"
            rows.append((f"{dd:g}", f"{b:g}", f"{k:.8g}", f"{1 / k:.8g}" if k else "inf",
                         f"{float(p.k_sharp):.8g}", f"{float(p.beta_star):.5g}", kind))
    _table(["d", "beta", "kappa_c", "D_c", "K_# (M-R)", "beta*", "transition"], rows)
    _written(ds)


@theory_app.command("beta-star")
def theory_beta_star(d: DimsOpt, output: FileOut = None):
    """beta*(d), above which the noisy transition is discontinuous (Mun-Rosenzweig)."""
    with user_errors():
        ds = api.theory("beta-star", d, out=output)
    out.print("beta*(d): I_{d/2+1}(beta) / I_{d/2}(beta) = 1/d; the noisy transition is "
              "continuous below it, discontinuous above (kappa_c is then not the transition)")
    _table(["d", "beta*", "kappa_c(beta*)", "D_c(beta*)"],
           [(f"{dd:g}", f"{b:.6g}", f"{k:.6g}", f"{1 / k:.6g}") for dd, b, k in
            zip(ds.d.values, ds.beta_star.values, ds.kappa_c.values)])
    _written(ds)


@theory_app.command("modes")
def theory_modes(
        d: DimsOpt, beta: BetasOpt,
        model: Annotated[str, typer.Option("--model", help="softmax | unnormalized.")]
        = "softmax",
        noise: Annotated[float, typer.Option("--noise", help="Diffusion D = 1/kappa.")] = 0.0,
        k_max: Annotated[int | None, typer.Option(
            "--k-max", min=1, help="Highest degree kept (default: past the fastest).")] = None,
        output: FileOut = None):
    """The fastest-growing spherical-harmonic mode of the uniform state (linearised)."""
    with user_errors():
        ds = api.theory("modes", d, beta, model, noise, k_max, out=output)
    out.print(f"growth rate g_k of the degree-k mode around the uniform state, {model}, "
              f"D = {noise:g}")
    shown = ds.k.values[:4]
    rows = []
    for dd in ds.d.values:
        for b in ds.beta.values:
            p = ds.sel(d=dd, beta=b)
            g = p.growth_rate.sel(k=shown).values
            rows.append((f"{dd:g}", f"{b:g}", str(int(p.fastest_mode)),
                         f"{float(p.fastest_rate):.5g}", *(f"{x:.4g}" for x in g)))
    _table(["d", "beta", "fastest k", "g_k", *(f"g_{k}" for k in shown)], rows)
    _written(ds)


@theory_app.command("long-context")
def theory_long_context(
        n: Annotated[list[int], typer.Option("--n", help="Tokens, repeatable.",
                                             show_default=False)],
        rho: Annotated[list[float], typer.Option("--rho", help="Input cosine(s), repeatable.",
                                                 show_default=False)],
        gamma: Annotated[list[float], typer.Option(
            "--gamma", help="beta = gamma log n, repeatable.", show_default=False)],
        output: FileOut = None):
    """One attention layer on equiangular inputs at beta = gamma log n: the output cosine."""
    with user_errors():
        ds = api.theory("long-context", n, rho, gamma, out=output)
    out.print("output cosine of one softmax layer (no residual) on equiangular inputs; "
              "limit n -> infinity: 1, 4 rho / (1 + 3 rho), rho for gamma <, =, > 1 / (1 - rho)")
    rows = []
    for nn in ds.n.values:
        for r in ds.rho.values:
            for g in ds.gamma.values:
                p = ds.sel(n=nn, rho=r, gamma=g)
                rows.append((str(nn), f"{r:g}", f"{g:g}", f"{float(p.beta):.5g}",
                             f"{float(p.output_cosine):.6g}", f"{float(p.limit):.6g}"))
    _table(["n", "rho", "gamma", "beta", "output cosine", "limit"], rows)
    _written(ds)


# ---------------------------------------------------------------- monotonicity

@app.command("monotone")
def monotone_cmd(
        results: ResultsArg, var: VarOpt,
        along: AlongOpt = "time",
        output: FileOut = None):
    """Per grid point: intervals where VAR fell (relative 1e-9), worst fall, first fall;
    the fall from the running peak and the escape depth (a fall of more than 0.1)."""
    from sweep.analysis.monotonicity import runs_that_fell

    with user_errors():
        result = api.monotone(results, var, along, output)
    _print_monotone(result, runs_that_fell(result)[0])
    if output is not None:
        out.print(f"monotone: {output}")


def _print_monotone(result, total: dict, rows: int = 40) -> None:
    var, along = result.attrs["var"], result.attrs["along"]
    dims = list(result.falls.dims)
    flat = result.to_dataframe().reset_index().to_dict("records") if dims else [
        {k: result[k].item() for k in result.data_vars}]
    fell = [r for r in flat if r["falls"] > 0]
    table = Table(title=f"where {var} fell along {along} (relative fall > "
                        f"{result.attrs['rtol']:g})")
    for col in dims + ["falls", "worst relative fall", f"first {along}"]:
        table.add_column(col, justify="right")
    for rec in fell[:rows]:
        table.add_row(*[_summary((rec[d],)) for d in dims],
                      f"{rec['falls']} of {rec['intervals']}", f"{rec['worst_fall']:.3g}",
                      f"{rec['first_fall']:g}")
    if fell:
        out.print(table)
    if len(fell) > rows:
        out.print(f"... {len(fell) - rows} more row(s); -o FILE keeps them all")
    out.print(f"{var} fell in {total['fell']} of {total['runs']} run(s)"
              + (f", worst relative fall {total['worst_fall']:.3g}" if total["fell"] else ""))
    escaped = int(result.escape_depth.notnull().sum())
    out.print(f"{var} fell by more than {result.attrs['escape_tol']:g} from its running peak "
              f"in {escaped} run(s) (escape_depth: the {along} of that peak)")
