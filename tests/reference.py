"""Plain NumPy oracle: obviously-correct, slow versions of every kernel.

Each function states the equation it computes; the compiled kernels must agree to 1e-12.
"""

from __future__ import annotations

import numpy as np


def normalize(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def attention(x, attention, beta):
    """[n, n] weights: softmax A_ij, or exp(beta <x_i,x_j>) / n (unnormalized)."""
    s = beta * (x @ x.T)
    if attention == "softmax":
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return np.exp(s) / x.shape[0]


def velocity(x, attention_kind, beta):
    """P_{x_i}(sum_j w_ij x_j) with P_x(y) = y - <x, y> x."""
    v = attention(x, attention_kind, beta) @ x
    return v - np.sum(x * v, axis=1, keepdims=True) * x


def euler_step(x, kind, beta, dt):
    return normalize(x + dt * velocity(x, kind, beta))


def rk4_step(x, kind, beta, dt):
    k1 = velocity(x, kind, beta)
    k2 = velocity(x + 0.5 * dt * k1, kind, beta)
    k3 = velocity(x + 0.5 * dt * k2, kind, beta)
    k4 = velocity(x + dt * k3, kind, beta)
    return normalize(x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4))


def components(adjacency):
    """Connected component sizes of a boolean graph (depth-first search)."""
    n = adjacency.shape[0]
    seen, sizes = np.zeros(n, bool), []
    for s in range(n):
        if seen[s]:
            continue
        stack, size = [s], 0
        seen[s] = True
        while stack:
            i = stack.pop()
            size += 1
            for j in np.flatnonzero(adjacency[i] & ~seen):
                seen[j] = True
                stack.append(j)
        sizes.append(size)
    return sizes


def observables(x, kind, beta, eps):
    """The SPEC observables, in the kernel's column order."""
    n = x.shape[0]
    g = x @ x.T
    off = ~np.eye(n, dtype=bool)
    sizes = components((g > 1 - eps) & off)
    a = attention(x, kind, beta)
    p = a / a.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1).mean()
    energy = g.sum() / (2 * n * n) if beta == 0 else np.exp(beta * g).sum() / (2 * beta * n * n)
    pairs = g[off]
    return np.array([
        np.linalg.norm(x.mean(axis=0)),
        pairs.mean() if n > 1 else np.nan,
        pairs.min() if n > 1 else np.nan,
        (pairs > 1 - eps).mean() if n > 1 else np.nan,
        len(sizes),
        max(sizes) / n,
        energy,
        entropy,
    ])


def trajectory(x, kind, beta, method, dt, stride, n_saves, eps):
    """Observables at each save and the final state, stepping exactly like the kernel."""
    step = euler_step if method == "euler" else rk4_step
    obs = [observables(x, kind, beta, eps)]
    for _ in range(n_saves - 1):
        for _ in range(stride):
            x = step(x, kind, beta, dt)
        obs.append(observables(x, kind, beta, eps))
    return np.array(obs), x


def equiangular_rhs(rho, n, beta, kind):
    """d rho / dt for an equiangular configuration (THEORY item 2)."""
    e = np.exp(beta * rho)
    if kind == "softmax":
        return 2 * e * (1 - rho) * ((n - 1) * rho + 1) / (np.exp(beta) + (n - 1) * e)
    return 2 / n * e * (1 - rho) * ((n - 1) * rho + 1)


def equiangular_rho(t, n, beta, kind, rho0=0.0, h=1e-3):
    """rho(t) by RK4 on the scalar ODE with a fine step, at the times t (ascending)."""
    out, rho, now = [], rho0, 0.0
    f = lambda r: equiangular_rhs(r, n, beta, kind)  # noqa: E731
    for target in np.atleast_1d(t):
        while now < target - 1e-12:
            s = min(h, target - now)
            k1 = f(rho)
            k2 = f(rho + s / 2 * k1)
            k3 = f(rho + s / 2 * k2)
            k4 = f(rho + s * k3)
            rho += s / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            now += s
        out.append(rho)
    return np.array(out)


def bert_forward(t, ids, heads, eps):
    """Hidden states [layers + 1, n, d] and attention [layers, heads, n, n] of a post-LN BERT,
    from its raw tensors `t` (Hugging Face names), one head and one token at a time."""
    import math

    def ln(x, p):
        mu, var = x.mean(), x.var()
        return (x - mu) / math.sqrt(var + eps) * t[p + "weight"] + t[p + "bias"]

    def lin(x, p):
        return t[p + "weight"] @ x + t[p + "bias"]

    n = len(ids)
    x = [ln(t["embeddings.word_embeddings.weight"][ids[i]]
            + t["embeddings.position_embeddings.weight"][i]
            + t["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm.")
         for i in range(n)]
    hidden, attn, layer = [np.array(x)], [], 0
    while f"encoder.layer.{layer}.attention.self.query.weight" in t:
        p = f"encoder.layer.{layer}."
        q = [lin(xi, p + "attention.self.query.") for xi in x]
        k = [lin(xi, p + "attention.self.key.") for xi in x]
        v = [lin(xi, p + "attention.self.value.") for xi in x]
        dh = len(q[0]) // heads
        w = np.zeros((heads, n, n))
        ctx = [np.zeros(len(q[0])) for _ in range(n)]
        for h in range(heads):
            cols = slice(h * dh, (h + 1) * dh)
            for i in range(n):
                s = np.array([q[i][cols] @ k[j][cols] / math.sqrt(dh) for j in range(n)])
                w[h, i] = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                ctx[i][cols] = sum(w[h, i, j] * v[j][cols] for j in range(n))
        a = [ln(x[i] + lin(ctx[i], p + "attention.output.dense."),
                p + "attention.output.LayerNorm.") for i in range(n)]
        gelu = [np.array([0.5 * u * (1 + math.erf(u / math.sqrt(2)))
                          for u in lin(ai, p + "intermediate.dense.")]) for ai in a]
        x = [ln(a[i] + lin(gelu[i], p + "output.dense."), p + "output.LayerNorm.")
             for i in range(n)]
        hidden.append(np.array(x))
        attn.append(w)
        layer += 1
    return np.array(hidden), np.array(attn)


def pc1_share(x):
    """Largest eigenvalue of the covariance of x over its trace."""
    ev = np.linalg.eigvalsh(np.cov(x.T))
    return ev[-1] / ev.sum()
