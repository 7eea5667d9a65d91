"""The tasks (our choices: the paper's task and read-out are not published) and the draws
of each training step.

Inputs are the job's start distribution, `init.kind: clusters`: k centres c_1..c_k (the job's
own, drawn as its start draws them), token i near c_{i mod k}. Two tasks are per token, the
read-out of token i being its direction at the output and its target t_i
    labels: c_{y_i}, y_i = i mod k (the token's label as a point of the sphere): the output
            must keep the k clusters apart;
    mean:   unit(sum_j x_j^0), the same for every token: the output may collapse;
with the loss the mean over tokens of 1 - <x_i^L, t_i> (= |x_i^L - t_i|^2 / 2). Three are on
the output distribution (our reconstruction of a loss on the final token distribution), per
sample, then the batch mean:
    spread:  |m|^2, m = (1/n) sum_i x_i^L: the output should not end clustered;
    energy:  E_beta = (1 / (2 beta n^2)) sum_ij exp(beta <x_i^L, x_j^L>), the interaction
             energy attention increases (beta: the model's);
    entropy: -H, H = -(1/n) sum_i log((1/n) sum_j exp(beta (<x_i^L, x_j^L> - 1))), the
             kernel-density (pairwise) entropy of the output at concentration beta.
Each loss comes with its gradient on x^L (the start of the backward pass). A geometric
regulariser (`training.regularizer`, weight `training.mu`) adds mu sum_{l=1}^{L-1} R(x^l)
over the intermediate layers' tokens, R = E_beta (`energy`) or the mean cosine
(1 / (n (n - 1))) sum_{i != j} <x_i, x_j> (`cosine`); `l2` adds none (the L2 penalty alone).

Common random numbers: the draws of step s (inputs and the noise xi of every layer) depend
on (training.seed, the job's seed, s) alone, so every lambda, D, task and learning rate of a
sweep sees the same ones.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from sweep.execution import states
from sweep.execution.simulate import start_rng

PER_TOKEN = ("labels", "mean")
DISTRIBUTION = ("spread", "energy", "entropy")
TASKS = PER_TOKEN + DISTRIBUTION


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


def targets(task: str, x0: np.ndarray, c: np.ndarray, labels: np.ndarray | None = None
            ) -> np.ndarray:
    """[..., n, d] unit targets t_i for inputs x0 [..., n, d] (a per-token task); labels
    [n]: the y_i of `labels` (default i mod k)."""
    if task == "labels":
        y = np.arange(x0.shape[-2]) % len(c) if labels is None else labels
        return np.broadcast_to(c[y], x0.shape)
    mean = x0.sum(axis=-2, keepdims=True)
    return np.broadcast_to(mean / np.linalg.norm(mean, axis=-1, keepdims=True), x0.shape)


def task_loss(x: np.ndarray, t: np.ndarray) -> float:
    """Mean over tokens (and samples) of 1 - <x_i, t_i>."""
    return float(np.mean(1.0 - np.sum(x * t, axis=-1)))


def readout(task: str, x0: np.ndarray, c: np.ndarray, beta: float,
            labels: np.ndarray | None = None):
    """The task's loss of the output x [B, n, d] for inputs x0: a function x -> (loss, its
    gradient on x); labels as in targets."""
    if task in PER_TOKEN:
        return partial(alignment, t=targets(task, x0, c, labels))
    return partial(LOSSES[task], beta=beta)


def alignment(x: np.ndarray, t: np.ndarray):
    """Per-token: mean_i (1 - <x_i, t_i>)."""
    count = x.shape[0] * x.shape[1]
    return float(np.sum(1.0 - np.sum(x * t, axis=-1)) / count), -t / count


def spread(x: np.ndarray, beta: float):
    """Batch mean of |m|^2, m the sample's mean token."""
    batch, n = x.shape[:2]
    m = x.mean(axis=1, keepdims=True)
    return float(np.sum(m * m) / batch), np.broadcast_to(2.0 * m / (batch * n), x.shape)


def energy(x: np.ndarray, beta: float):
    """Batch mean of E_beta = (1 / (2 beta n^2)) sum_ij exp(beta <x_i, x_j>)."""
    batch, n = x.shape[:2]
    k = np.exp(beta * (x @ x.transpose(0, 2, 1)))
    return float(k.sum() / (2.0 * beta * n * n * batch)), (k @ x) / (n * n * batch)


def entropy(x: np.ndarray, beta: float):
    """Batch mean of -H, H = -(1/n) sum_i log((1/n) sum_j exp(beta (<x_i, x_j> - 1)))."""
    batch, n = x.shape[:2]
    k = np.exp(beta * (x @ x.transpose(0, 2, 1) - 1.0))
    s = k.sum(axis=-1, keepdims=True)
    c = beta * k / (s * n * batch)
    return float(np.sum(np.log(s / n)) / (n * batch)), (c + c.transpose(0, 2, 1)) @ x


def mean_cosine(x: np.ndarray, beta: float):
    """Batch mean of (1 / (n (n - 1))) sum_{i != j} <x_i, x_j>."""
    batch, n = x.shape[:2]
    total = x.sum(axis=1, keepdims=True)
    scale = 1.0 / (n * (n - 1) * batch)
    value = (np.sum(total * total) - np.sum(x * x)) * scale
    return float(value), 2.0 * scale * (total - x)


LOSSES = {"spread": spread, "energy": energy, "entropy": entropy}
REGULARIZERS = ("l2", "energy", "cosine")
_GEOMETRIC = {"energy": energy, "cosine": mean_cosine}


def regularizer(kind: str, mu: float, beta: float):
    """The geometric penalty of one intermediate layer's tokens x [B, n, d]: x -> (mu
    E_beta(x) or mu times their mean cosine, its gradient on x); None for l2 (the penalty
    lambda sum_l |W_l|^2 alone) or mu = 0."""
    if kind == "l2" or mu == 0:
        return None

    def penalty(x):
        value, grad = _GEOMETRIC[kind](x, beta)
        return mu * value, mu * grad
    return penalty
