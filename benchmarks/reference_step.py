"""The comparison points: a plain vectorised NumPy step, and PyTorch's if it is installed.

One Euler step of softmax self-attention dynamics on the sphere, batched over systems:
x: [batch, n, d];  A = softmax_rows(beta x x^T);  v = A x;  x <- normalise(x + dt P_x(v)).
Written the way a careful NumPy user would (matmul over the batch, no Python loop over
tokens); it is what the kernels have to beat.
"""

from __future__ import annotations

import numpy as np


def numpy_steps(x: np.ndarray, beta: float, dt: float, steps: int) -> np.ndarray:
    x = x.copy()
    for _ in range(steps):
        s = beta * (x @ np.swapaxes(x, -1, -2))
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        v = s @ x
        v -= np.sum(x * v, axis=-1, keepdims=True) * x
        x += dt * v
        x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return x


def torch_steps_or_none():
    """The same step in PyTorch (CPU), or None when torch is not importable."""
    try:
        import torch
    except ImportError:
        return None

    def steps_fn(x: np.ndarray, beta: float, dt: float, steps: int) -> np.ndarray:
        t = torch.from_numpy(x.copy())
        with torch.no_grad():
            for _ in range(steps):
                a = torch.softmax(beta * (t @ t.transpose(-1, -2)), dim=-1)
                v = a @ t
                v -= (t * v).sum(dim=-1, keepdim=True) * t
                t += dt * v
                t /= t.norm(dim=-1, keepdim=True)
        return t.numpy()

    return steps_fn
