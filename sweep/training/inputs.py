"""What a task is asked on: the inputs of each step, the token labels and the centres they
name.

Two kinds of input:
    init.kind: clusters  k centres c_1..c_k (the job's own, drawn as its start draws them),
                         token i near c_{y_i}, y_i = i mod k; every step draws a fresh batch
                         of such inputs (sweep.training.tasks.draws);
    init.kind: file      the file's tokens (the job's start, e.g. a text's layer 0 saved by
                         `sweep probe --save-embeddings`), the same at every step: a step's
                         samples differ only by their noise. The labels y_i come from
                         `training.labels` (an integer .npy of n entries, e.g. the sentence
                         of each token, `sweep probe --save-labels`), and c_k is the unit
                         mean of the tokens labelled k at the input.
Either way the task `labels` asks token i to end at c_{y_i}.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sweep.config.inputs import read_array, resolve
from sweep.errors import ConfigError
from sweep.execution.simulate import initial_state
from sweep.training import tasks


@dataclass(frozen=True)
class Inputs:
    """centres [k, d]; labels [n] in 0..k-1; tokens [n, d]: the fixed inputs of a file
    start, or None (each step draws its inputs around the centres)."""

    centres: np.ndarray
    labels: np.ndarray
    tokens: np.ndarray | None = None

    def draws(self, job, seed: int, step: int, batch: int):
        """(x0 [batch, n, d], xi [batch, layers, n, d]) of one step: a file's tokens are
        the same every step, and its noise is drawn from the generator alone."""
        if self.tokens is None:
            return tasks.draws(job, seed, step, batch, self.centres)
        m = job.model
        rng = np.random.default_rng([seed, job.seed, step])
        x0 = np.broadcast_to(self.tokens, (batch,) + self.tokens.shape).copy()
        return x0, rng.standard_normal((batch, m.layers, m.n, m.d))


def of(job, training) -> Inputs:
    """The inputs of a job under its training settings (labels read and checked)."""
    if job.init.kind != "file":
        return Inputs(tasks.centres(job), np.arange(job.model.n) % job.init.clusters)
    x = initial_state(job)
    x = x / np.linalg.norm(x, axis=-1, keepdims=True)
    if training.labels is None:
        return Inputs(x.mean(axis=0, keepdims=True) / np.linalg.norm(x.mean(axis=0)),
                      np.zeros(job.model.n, dtype=np.int64), x)
    y = labels(training.labels, job)[0]
    sums = np.stack([x[y == k].sum(axis=0) for k in range(int(y.max()) + 1)])
    return Inputs(sums / np.linalg.norm(sums, axis=-1, keepdims=True), y, x)


def labels(text: str, job) -> tuple[np.ndarray, str]:
    """(labels [n] int64, content digest) of training.labels; ConfigError naming the key for
    a file that is not n integers covering 0..k-1 (every label used)."""
    n = job.model.n

    def shape_ok(shape: tuple) -> str:
        return "" if shape == (n,) else f"shape {shape}, expected ({n},): one label per token"

    array, digest = read_array("training.labels", text, job.source, None, shape_ok)
    where = f"training.labels: {resolve(text, job.source)}"
    if not np.array_equal(array, np.round(array)) or array.min() < 0:
        raise ConfigError(f"{where}: labels must be integers >= 0")
    y = array.astype(np.int64)
    missing = sorted(set(range(int(y.max()) + 1)) - set(y.tolist()))
    if missing:
        raise ConfigError(f"{where}: labels 0..{int(y.max())} must each be used; "
                          f"{missing[0]} is not")
    return y, digest


def label_cosines(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[layers, 2]: per layer of unit tokens x [layers, n, d], the mean cosine <x_i, x_j> over
    the pairs of different labels (between) and over the pairs i != j of one label (within,
    NaN if no label has two tokens)."""
    x = x / np.linalg.norm(x, axis=-1, keepdims=True)
    g = x @ x.transpose(0, 2, 1)
    same = y[:, None] == y[None, :]
    within = same & ~np.eye(len(y), dtype=bool)
    between = g[:, ~same].mean(axis=-1) if (~same).any() else np.full(len(x), np.nan)
    inside = g[:, within].mean(axis=-1) if within.any() else np.full(len(x), np.nan)
    return np.stack([between, inside], axis=-1)
