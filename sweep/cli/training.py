"""`sweep train`: a noisy layer model's parameter-linear FFN trained under L2 at every grid
point, observed layer by layer before and after (docs/training.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sweep import api
from sweep.cli import ConfigArg, SetOpt, app, out, user_errors


@app.command("train")
def train_cmd(config: ConfigArg, sets: SetOpt = None,
              folder: Annotated[Path | None, typer.Option(
                  "-o", "--out", metavar="DIR", help="Folder of the dataset <name>.nc "
                  "(default: the folder of output.path).", readable=False)] = None,
              shard: Annotated[str | None, typer.Option(
                  "--shard", metavar="I/K", help="Train shard I of K (0-based): points I, "
                  "I + K, ..., kept as parts; a run without it assembles them. Inside a job "
                  "array, taken from SWEEP_SHARD or the scheduler's array variables.",
                  show_default=False)] = None):
    """Train the FFN matrices W_l of a noisy layer model (attention fixed) by gradient
    descent on a task, under lambda sum_l |W_l|^2; per-layer observables before and after.

    The grid may sweep training keys (lambda, task, lr, optimizer, batch) beside the
    model's (noise, beta, seed, ...). Points run serially and deterministically; each
    finished one is kept in <name>.parts/ beside the dataset and skipped when the command
    runs again (resume), and a shard trains its own points only. The dataset holds the
    observables over (axes..., checkpoint, layer), the loss curves over step and the
    matrices over (checkpoint, block, row, column).
    """
    with user_errors():
        ds = api.train(config, folder, sets or [], shard=shard)
    if ds is None:
        out.print("shard done: its points are kept as parts; sweep train without --shard "
                  "assembles the dataset", markup=False, soft_wrap=True)
        return
    out.print(_summary(ds))
    if ds.encoding.get("reused"):
        points, reused = ds.encoding["points"], ds.encoding["reused"]
        out.print(f"resumed: {reused} of {points} point(s) read from {ds.encoding['parts']} "
                  f"(trained by an earlier run), {points - reused} trained now", markup=False,
                  soft_wrap=True)
    out.print(f"results: {ds.encoding['source']}", markup=False, soft_wrap=True)


def _summary(ds) -> Table:
    """Before and after training, per task when the grid sweeps tasks (their goals differ:
    one mean over both would say nothing), each a mean over the other axes."""
    tasks = [str(t) for t in ds.task.values] if "task" in ds.dims else [None]
    table = Table(title=f"{len(ds.checkpoint)} checkpoints, {ds.sizes['step']} steps; means "
                        f"over the other axes{', per task' if tasks[0] else ''}")
    for col in (["task"] if tasks[0] else []) + ["quantity", "before", "after"]:
        table.add_column(col)
    for task in tasks:
        part = ds.sel(task=task) if task else ds
        first, last = part.isel(checkpoint=0), part.isel(checkpoint=-1)
        for name in ("eval_loss", "order_parameter", "n_groups"):
            a, b = first[name], last[name]
            if "layer" in a.dims:
                a, b, name = a.isel(layer=-1), b.isel(layer=-1), f"{name} (last layer)"
            row = [f"{name}, mean", f"{float(a.mean()):.4g}", f"{float(b.mean()):.4g}"]
            table.add_row(*([task] if task else []), *row)
    return table
