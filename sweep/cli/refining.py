"""The command that locates a level crossing adaptively: refine (rounds of ordinary jobs)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sweep import api
from sweep.analysis.thresholds import DIRECTIONS
from sweep.cli import ConfigArg, SetOpt, _load, app, choices, err, out, user_errors
from sweep.cli.sweeping import _job_line
from sweep.errors import ConfigError

Direction = choices("RefineDirection", DIRECTIONS)


# how a job array runs the rounds (sweep submit --refine)
ShardOpt = Annotated[str | None, typer.Option(
    "--shard", metavar="I/K", help="Run shard I of K of each round; stops at a round other "
    "shards still owe jobs of (run it again once they are done).")]
RoundOpt = Annotated[int | None, typer.Option(
    "--round", min=0, metavar="R", help="Run round R alone (its shard), the rounds before it "
    "read from the parts, then stop: a task of one round's job array (sweep submit --refine).")]
QUESTION = ("var", "level", "along", "tol", "budget", "seeds_per_point", "time", "direction")


@app.command("refine")
def refine_cmd(
        config: ConfigArg,
        var: Annotated[str, typer.Option("--var", metavar="VAR", show_default=False,
                                         help="The variable, e.g. clustered_fraction.")],
        level: Annotated[float, typer.Option("--level", metavar="LEVEL",
                                             help="Level to cross.")] = 0.5,
        along: Annotated[str, typer.Option("--along", metavar="AXIS",
                                           help="Grid axis to locate the crossing along.")]
        = "beta",
        tol: Annotated[str, typer.Option(
            "--tol", metavar="T", help="Widest final bracket: a number (absolute, in units of the "
            "axis) or a percentage of the bracket's centre (2%).")] = "0.1",
        budget: Annotated[int | None, typer.Option(
            "--budget", min=1, metavar="N", help="At most N jobs in all; the rounds stop before "
            "one that would pass it.")] = None,
        seeds_per_point: Annotated[int | None, typer.Option(
            "--seeds-per-point", min=1, metavar="K", help="Seeds a new point starts with "
            "(default: max(2, a quarter of the config's seeds)).")] = None,
        time: Annotated[str | None, typer.Option(
            "--time", metavar="T", help="A saved time, final (default), or a reduction over time "
            "per run: max, min, mean, plateau.")] = None,
        direction: Annotated[Direction, typer.Option(
            "--direction", help="Crossings counted: either way, upward or downward.")] = "any",
        sets: SetOpt = None,
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", metavar="FILE.nc", readable=False, help="Where the refinement is "
            "written (default: <output.path stem>.refine.nc).")] = None,
        workers: Annotated[int | None, typer.Option(
            "--workers", min=1, metavar="N", help="Jobs run at once.")] = None,
        shard: ShardOpt = None, round_: RoundOpt = None):
    """Locate where the seed-mean VAR first crosses LEVEL along AXIS, per point of the other
    axes, to a bracket of width T, by rounds of jobs (docs/refine.md).

    Starts from the config's values of AXIS with a few seeds each, then adds midpoints of
    the bracket that crosses, and seeds where it is noisy and at the ends of the final
    bracket. Jobs go to the config's parts folder, as `sweep run`'s: a rerun (after Ctrl-C, a
    full run, or other shards) computes no job twice and resumes at the same round.
    """
    from sweep.cli.progress import run_hooks

    with user_errors():
        cfg = _load(config, sets)
        with run_hooks(err, cfg.name, _job_line) as hooks:
            done = api.refine_rounds(cfg, var, level, along, tol, budget, seeds_per_point,
                                     time, Direction(direction).value, output, workers, shard,
                                     hooks, round_)
    if done.dataset is None:
        out.print(done.waiting, markup=False, soft_wrap=True)
        return
    _print_refinement(done)


def _print_refinement(done) -> None:
    ds = done.dataset
    out.print(f"{ds.attrs['along']} where the seed-mean {ds.attrs['var']} crosses "
              f"{ds.attrs['level']:g} (tolerance {ds.attrs['tolerance']}, time "
              f"{ds.attrs['time']}, {ds.attrs['seeds']} seed(s))", markup=False,
              soft_wrap=True)
    dims = list(ds.threshold.dims)
    table = Table()
    for col in dims + ["threshold", "95% interval", "bracket", "points", "settled"]:
        table.add_column(col, justify="right")
    flat = ds[["threshold", "threshold_low", "threshold_high", "bracket_low", "bracket_high",
               "points", "settled"]].stack(line=dims) if dims else None
    rows = flat.line.size if flat is not None else 1
    for k in range(rows):
        one = flat.isel(line=k) if flat is not None else ds
        table.add_row(*[str(one[d].item()) for d in dims],
                      f"{float(one.threshold):.4g}",
                      f"[{float(one.threshold_low):.4g}, {float(one.threshold_high):.4g}]",
                      f"[{float(one.bracket_low):.4g}, {float(one.bracket_high):.4g}]",
                      str(int(one.points)), "yes" if int(one.settled) else "no")
    out.print(table)
    budget = "; stopped by --budget" if done.stopped_by_budget else ""
    out.print(f"{done.jobs} job(s) in {done.rounds} round(s) ({', '.join(map(str, done.per_round))}"
              f"), {done.computed} computed now, {done.seconds:.1f} s, "
              f"{100 * done.overhead:.1f}% planning and reading{budget}", markup=False,
              soft_wrap=True)
    out.print(f"refinement: {done.path}", markup=False, soft_wrap=True)


def refine_keywords(config: Path, text: str) -> dict:
    """`sweep submit --refine 'OPTIONS'`: the question's options, parsed as `sweep refine`
    parses them, as refine_rounds' keywords; ConfigError naming what is wrong."""
    command = typer.main.get_command(app).commands["refine"]
    try:
        params = command.make_context("refine", [str(config), *shlex.split(text)]).params
    except Exception as err:  # Typer's Click: a usage error; shlex: ValueError
        if not (hasattr(err, "format_message") or isinstance(err, ValueError)):
            raise
        why = err.format_message() if hasattr(err, "format_message") else err
        raise ConfigError(f"--refine {text!r}: {why}") from None
    extra = [k for k in ("sets", "output", "workers", "shard", "round_") if params.get(k)]
    if extra:
        raise ConfigError(f"--refine {text!r}: only the question's options ("
                          f"{', '.join('--' + k.replace('_', '-') for k in QUESTION)}); "
                          "sweep submit's own options give the rest")
    found = {k: params[k] for k in QUESTION}
    found["direction"] = Direction(found["direction"]).value
    return found
