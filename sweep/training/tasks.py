"""The two tasks (our choices: the paper's task and read-out are not published) and the
draws of each training step.

Inputs are the job's start distribution, `init.kind: clusters`: k centres c_1..c_k (the job's
own, drawn as its start draws them), token i near c_{i mod k}. The read-out of token i is its
direction at the output, and the target t_i is
    labels: c_{y_i}, y_i = i mod k (the token's label as a point of the sphere): the output
            must keep the k clusters apart;
    mean:   unit(sum_j x_j^0), the same for every token: the output may collapse.
The task loss is the mean over tokens of 1 - <x_i^L, t_i> (= |x_i^L - t_i|^2 / 2).

Common random numbers: the draws of step s (inputs and the noise xi of every layer) depend
on (training.seed, the job's seed, s) alone, so every lambda, D, task and learning rate of a
sweep sees the same ones.
"""

from __future__ import annotations

import numpy as np

from sweep.execution import states
from sweep.execution.simulate import start_rng

TASKS = ("labels", "mean")


def centres(job) -> np.ndarray:
    """[k, d]: the centres of the job's start, the first draw states.clusters makes from the
    start's generator, so the start (simulate.initial_state) is a sample of the task."""
    return states.uniform(job.init.clusters, job.model.d, start_rng(job))


def draws(job, seed: int, step: int, batch: int, c: np.ndarray):
    """(x0 [batch, n, d] inputs, xi [batch, layers, n, d] standard Gaussians) of one step."""
    m = job.model
    rng = np.random.default_rng([seed, job.seed, step])
    x0 = np.stack([states.around(c, m.n, job.init.spread, rng) for _ in range(batch)])
    return x0, rng.standard_normal((batch, m.layers, m.n, m.d))


def targets(task: str, x0: np.ndarray, c: np.ndarray) -> np.ndarray:
    """[..., n, d] unit targets t_i for inputs x0 [..., n, d]."""
    if task == "labels":
        return np.broadcast_to(c[np.arange(x0.shape[-2]) % len(c)], x0.shape)
    mean = x0.sum(axis=-2, keepdims=True)
    return np.broadcast_to(mean / np.linalg.norm(mean, axis=-1, keepdims=True), x0.shape)


def task_loss(x: np.ndarray, t: np.ndarray) -> float:
    """Mean over tokens (and samples) of 1 - <x_i, t_i>."""
    return float(np.mean(1.0 - np.sum(x * t, axis=-1)))
