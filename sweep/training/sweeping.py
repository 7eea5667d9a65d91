"""`sweep train`: every point of the grid (training axes x the layer-model jobs) trained and
observed, in C order, into one dataset.

Each point trains from the job's own FFN matrices (ffn: gaussian or a file; none: zero), or
those `training.init` draws, and
is observed at every checkpoint by the layer-model run itself (simulate.simulate_layers,
the code `sweep run` calls) with the checkpoint's matrices in place of the drawn ones; where
training changed none, that is the config's own run, so with lr = 0 every checkpoint is the
untrained `sweep run` of the same config bit for bit. The grid is run here, serially (BLAS
held to one thread): not through the runner and its parts, so it is not sharded or resumed.
"""

from __future__ import annotations

import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from sweep.config.files import read_npz
from sweep.config.schema import stable_hash
from sweep.errors import ConfigError
from sweep.execution.layers.transformer import unit
from sweep.execution.simulate import initial_state, layer_blocks, simulate_layers
from sweep.kernels.codes import LAYER_SERIES, SERIES
from sweep.storage.coords import coordinates
from sweep.storage.merging import max_clusters, t_cluster
from sweep.storage.netcdf import provenance
from sweep.storage.parts import write_part
from sweep.training import backprop, inputs, optimise, settings, tasks

COLUMNS = {**SERIES, **LAYER_SERIES}
EXTRA = {
    "loss": ("objective on the step's batch before its update: the task loss + lambda "
             "sum_l |W_l|^2", "1"),
    "eval_loss": ("task loss of the observed run's output (mean_i (1 - <x_i^L, t_i>), or "
                  "the output distribution's loss: spread, energy, entropy)", "1"),
    "ffn_weight": ("trained FFN matrix W_l of block l (v_i += W_l x_i, or the output matrix "
                   "W_2 of ffn: mlp)", "1"),
    "between_cosine": ("mean cosine <x_i, x_j> over the token pairs of different labels "
                       "(training.labels, or i mod k for a clusters start)", "1"),
    "within_cosine": ("mean cosine <x_i, x_j> over the token pairs i != j of one label", "1"),
    "status": ("worst job status over the checkpoints (0 ok, 1 non-finite)", "1"),
}
NOT_SWEPT = ("layers", "d")  # they change the shape of the trained parameters


def fixed_parts(blocks) -> list[backprop.Fixed]:
    """Each block's attention and, with ffn: mlp, its features W1 (fixed in training)."""
    return [backprop.Fixed(b.betas, b.qk, b.v, None if b.ffn is None else b.ffn.w)
            for b in blocks]


def initial_ffn(blocks, d: int) -> np.ndarray:
    """[L, d, d] each block's in-step FFN matrix (zero where it has none), or [L, d, m] its
    MLP's output matrices W2 (ffn: mlp)."""
    if blocks[0].ffn is not None:
        return np.stack([b.ffn.w2 for b in blocks])
    return np.stack([np.zeros((d, d)) if b.step_ffn is None else b.step_ffn for b in blocks])


def with_ffn(blocks, ws: np.ndarray, w0: np.ndarray) -> tuple | None:
    """The blocks with trained matrices, a matrix left unchanged keeping its block as drawn;
    None if training changed none (the run is then the config's own, whatever kernel it
    takes)."""
    if np.array_equal(ws, w0):
        return None
    return tuple(b if np.array_equal(w, w_0) else _trained(b, np.ascontiguousarray(w))
                 for b, w, w_0 in zip(blocks, ws, w0))


def _trained(b, w: np.ndarray):
    return replace(b, step_ffn=w) if b.ffn is None else replace(b, ffn=replace(b.ffn, w2=w))


def train_point(job, training) -> dict:
    """One point: its arrays (obs [C, L + 1, columns], loss [steps], ffn_weight [C, L, d, d],
    eval_loss [C], status)."""
    blocks = layer_blocks(job)
    w0 = initial_ffn(blocks, job.model.d)
    start_w = optimise.initial(training.init, training.init_scale, w0, training.seed, job.seed)
    ws, loss = optimise.train(job, training, fixed_parts(blocks), start_w)
    start = initial_state(job)
    given = inputs.of(job, training)
    loss_of = tasks.readout(training.task, start[None], given.centres, job.model.beta,
                            given.labels)
    obs, evals, pairs, status = [], [], [], 0
    for w in ws:
        result = simulate_layers(job, "trajectory", blocks=with_ffn(blocks, w, w0))
        obs.append(result.observables)
        evals.append(loss_of(unit(result.positions[-1])[None])[0])
        pairs.append(inputs.label_cosines(result.positions.astype(np.float64), given.labels))
        status = max(status, result.status)
    return {"obs": np.stack(obs), "loss": loss, "ffn_weight": ws,
            "eval_loss": np.array(evals), "label_cosine": np.stack(pairs), "status": status}


def run(tc: settings.TrainConfig, command: str | None = None, parts: Path | None = None,
        shard: tuple[int, int] | None = None) -> tuple[xr.Dataset | None, int, int]:
    """Every point trained and observed: (the dataset (docs/training.md), points of this
    call, of which read from parts). With `parts`, points found there are read, not trained,
    and new ones are kept there; with `shard` (I, K), only points I, I + K, ... are trained
    and nothing is assembled (None)."""
    jobs = settings.jobs(tc)
    for axis in jobs.axes:
        if axis.name in NOT_SWEPT:
            raise ConfigError(f"grid.{axis.name}: sweep train does not sweep "
                                       f"{axis.name} (one shape of trained parameters)")
    grid = [(job, training) for _, training in tc.points() for job in jobs]
    mine = range(len(grid)) if shard is None else range(shard[0], len(grid), shard[1])
    with threadpool_limits(1, user_api="blas"):
        kept = [_kept(parts, *grid[i]) for i in mine]
    points, reused = [p for p, _ in kept], sum(r for _, r in kept)
    ds = None if shard is not None else dataset(tc, jobs, points, command)
    return ds, len(points), reused


def point_id(job, training) -> str:
    """The part file's name: the job's id (model, init, integrate, inputs' digests) and every
    training setting of the point (with the labels file's content where it has one)."""
    if training.labels is None:
        return stable_hash([job.id, training.to_dict()])
    return stable_hash([job.id, training.to_dict(), inputs.labels(training.labels, job)[1]])


def _kept(parts: Path | None, job, training) -> tuple[dict, bool]:
    """(the point's arrays, whether read): from its part file if that holds them whole, else
    trained and kept (written as every part is: whole or not at all)."""
    if parts is None:
        return train_point(job, training), False
    path = parts / f"{point_id(job, training)}.npz"
    found = _read(path, _members(job, training))
    if found is not None:
        return found, True
    point = train_point(job, training)
    write_part(parts, [path.stem], point, {})
    return point, False


def _members(job, training) -> dict:
    """What a point's part holds: {name: (dtype kinds, [shape])}; None: any length (the FFN
    matrices' own sizes)."""
    c = len(optimise.checkpoint_steps(training.steps, training.checkpoints))
    layers = job.model.layers
    return {"obs": ("f", [(c, layers + 1, len(COLUMNS))]), "loss": ("f", [(training.steps,)]),
            "ffn_weight": ("f", [(c, layers, None, None)]), "eval_loss": ("f", [(c,)]),
            "label_cosine": ("f", [(c, layers + 1, 2)]),
            "status": ("iu", [()])}


def _read(path: Path, members: dict) -> dict | None:
    """A part's arrays if it is a regular file holding every array at its shape (headers
    checked before any data is read); None (train again) for a missing or damaged one."""
    try:
        found = read_npz(path, members)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    if set(found) != set(members):
        return None
    found["status"] = int(found["status"])
    return found


def dataset(tc, jobs, points: list[dict], command: str | None) -> xr.Dataset:
    grid = list(tc.axes) + list(jobs.axes)
    dims = [a.name for a in grid]
    shape = tuple(len(a) for a in grid)

    def stacked(key):
        return np.stack([p[key] for p in points]).reshape(shape + np.shape(points[0][key]))

    obs = stacked("obs")
    base = tc.config.model
    steps = optimise.checkpoint_steps(tc.training.steps, tc.training.checkpoints)
    data = {name: (dims + ["checkpoint", "layer"], obs[..., k], _attrs(meta))
            for k, (name, meta) in enumerate(COLUMNS.items())}
    data.update(_summaries(dims, obs, base.layers))
    data["loss"] = (dims + ["step"], stacked("loss"), _attrs(EXTRA["loss"]))
    data["eval_loss"] = (dims + ["checkpoint"], stacked("eval_loss"), _attrs(EXTRA["eval_loss"]))
    data["ffn_weight"] = (dims + ["checkpoint", "block", "row", "column"], stacked("ffn_weight"),
                          _attrs(EXTRA["ffn_weight"]))
    pairs = stacked("label_cosine")
    for k, name in enumerate(("between_cosine", "within_cosine")):
        data[name] = (dims + ["checkpoint", "layer"], pairs[..., k], _attrs(EXTRA[name]))
    data["status"] = (dims, stacked("status").astype(np.int8), _attrs(EXTRA["status"]))
    coords = coordinates(grid, ("layer", np.arange(base.layers + 1)))
    coords.update(checkpoint=("checkpoint", steps, _attrs(("training steps taken", "1"))),
                  step=("step", np.arange(tc.training.steps), _attrs(("training step", "1"))),
                  block=("block", np.arange(1, base.layers + 1), _attrs(("block l", "1"))))
    attrs = provenance(tc.config, command)
    attrs.update(title=f"sweep training: {tc.config.name}", sweep_training=tc.to_yaml())
    ds = xr.Dataset(data, coords=coords, attrs=attrs)
    order = [n for n in tc.order if n in dims] + [n for n in dims if n not in tc.order]
    return ds.transpose(*order, ...)


def _summaries(dims: list[str], obs: np.ndarray, layers: int) -> dict:
    """t_cluster and max_clusters over (axes..., checkpoint), as every layer-model dataset
    holds them (docs/layers.md): the first layer with clustered_fraction >= 1/2 (NaN if
    none), the largest n_clusters over layers >= 1."""
    names = list(COLUMNS)
    layer = np.arange(layers + 1, dtype=float)
    cf, nc = (obs[..., names.index(v)] for v in ("clustered_fraction", "n_clusters"))
    return {"t_cluster": (dims + ["checkpoint"], t_cluster(layer, cf), _attrs(SUMMARIES[0])),
            "max_clusters": (dims + ["checkpoint"], max_clusters(nc), _attrs(SUMMARIES[1]))}


SUMMARIES = (("first layer with clustered_fraction >= 1/2 (NaN if none)", "1"),
             ("maximum of n_clusters over layers >= 1", "1"))


def _attrs(meta: tuple[str, str]) -> dict:
    return {"long_name": meta[0], "units": meta[1]}
