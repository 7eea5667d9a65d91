"""Gradient descent on the FFN matrices: plain (W <- W - lr g) or Adam (Kingma and Ba 2015,
beta_1 = 0.9, beta_2 = 0.999, eps = 1e-8, bias-corrected), one batch of fresh draws per step
(sweep.training.tasks). Deterministic: the draws are seeded and the arithmetic is serial
NumPy, so a step's result depends only on the job and the training settings.
"""

from __future__ import annotations

import numpy as np

from sweep.training import backprop, inputs, tasks

ADAM = (0.9, 0.999, 1e-8)


def initial(kind: str, scale: float, w0: np.ndarray, seed: int, job_seed: int) -> np.ndarray:
    """The matrices training starts from, like w0 [L, d, c] (the job's own FFN): `model` w0
    itself; `zero`; or scale times, per layer from the draws of (seed, job_seed), `gaussian`
    entries N(0, 1/c), `orthogonal` (orthonormal rows or columns: the Q of a Gaussian's QR,
    signs fixed), `antisymmetric` (G - G^T) / sqrt(2 d), a skew matrix: exp(W) rotates the
    tokens apart."""
    if kind == "model":
        return w0.copy()
    if kind == "zero":
        return np.zeros_like(w0)
    rng = np.random.default_rng([seed, job_seed, 1, 7919])  # apart from every step's draws
    g = rng.standard_normal(w0.shape)
    if kind == "gaussian":
        return scale * g / np.sqrt(w0.shape[-1])
    if kind == "antisymmetric":
        return scale * (g - g.transpose(0, 2, 1)) / np.sqrt(2.0 * w0.shape[-1])
    tall = w0.shape[-2] >= w0.shape[-1]
    q, r = np.linalg.qr(g if tall else g.transpose(0, 2, 1))
    q = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[:, None, :]
    return scale * (q if tall else q.transpose(0, 2, 1))


def checkpoint_steps(steps: int, count: int) -> np.ndarray:
    """`count` distinct steps from 0 (before training) to `steps` (after), evenly spread."""
    return np.unique(np.round(np.linspace(0, steps, count)).astype(np.int64))


def adam(w, g, state, lr: float):
    """One Adam update of w (a new array); state: (m, v, t), updated in place."""
    b1, b2, eps = ADAM
    m, v, t = state
    m *= b1
    m += (1.0 - b1) * g
    v *= b2
    v += (1.0 - b2) * g * g
    t[0] += 1
    m_hat, v_hat = m / (1.0 - b1 ** t[0]), v / (1.0 - b2 ** t[0])
    return w - lr * m_hat / (np.sqrt(v_hat) + eps)


def train(job, training, atts, w0: np.ndarray):
    """(ws [checkpoints, L, d, d], loss [steps]): loss[s] is the objective on step s's batch
    before its update; ws[c] the matrices after checkpoint_steps(...)[c] steps."""
    m = job.model
    given = inputs.of(job, training)
    marks = checkpoint_steps(training.steps, training.checkpoints)
    w, state = w0.copy(), (np.zeros_like(w0), np.zeros_like(w0), [0])
    kept, loss = [w.copy()] if marks[0] == 0 else [], np.empty(training.steps)
    reg = tasks.regularizer(training.regularizer, training.mu, m.beta)
    for s in range(training.steps):
        x0, xi = given.draws(job, training.seed, s, training.batch)
        t = tasks.readout(training.task, x0, given.centres, m.beta, given.labels)
        loss[s], g = backprop.objective(w, x0, xi, t, atts, m.alpha, m.noise, training.lam,
                                        reg)
        w = adam(w, g, state, training.lr) if training.optimizer == "adam" \
            else w - training.lr * g
        if s + 1 in marks:
            kept.append(w.copy())
    return np.stack(kept), loss
