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


def project(x, v):
    """P_{x_i}(v_i) = v_i - <x_i, v_i> x_i for every row."""
    return v - np.sum(x * v, axis=1, keepdims=True) * x


def velocity(x, attention_kind, beta):
    """P_{x_i}(sum_j w_ij x_j) with P_x(y) = y - <x, y> x."""
    return project(x, attention(x, attention_kind, beta) @ x)


def euler_step(x, kind, beta, dt):
    return normalize(x + dt * velocity(x, kind, beta))


def layer_step(x, kind, beta, dt):
    """The reference code's step: the attention output added unprojected, then normalised."""
    return normalize(x + dt * attention(x, kind, beta) @ x)


def rk4_step(x, kind, beta, dt):
    k1 = velocity(x, kind, beta)
    k2 = velocity(x + 0.5 * dt * k1, kind, beta)
    k3 = velocity(x + 0.5 * dt * k2, kind, beta)
    k4 = velocity(x + dt * k3, kind, beta)
    return normalize(x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4))


def heun_step(x, kind, beta, dt):
    """Explicit trapezoid (improved Euler) on the projected field, then normalised."""
    k1 = velocity(x, kind, beta)
    k2 = velocity(x + dt * k1, kind, beta)
    return normalize(x + dt / 2 * (k1 + k2))


def pooled_clustering(positions, threshold=0.999):
    """arXiv 2312.10794's "probability of clustering": the ordered pairs i != j with
    <x_i, x_j> > threshold, counted over every start together, over all such pairs.
    positions: [..., starts, n, d] -> [...]."""
    g = np.einsum("...id,...jd->...ij", positions, positions)
    n = g.shape[-1]
    close = (g > threshold) & ~np.eye(n, dtype=bool)
    return close.sum(axis=(-3, -2, -1)) / (g.shape[-3] * n * (n - 1))


def checkpoint_steps(t_max, dt, count):
    """The step at which the reference code records each of its checkpoints
    linspace(0, t_max, count): the first step whose accumulated clock reaches it (the clock
    is a running float sum of dt, checked after each step)."""
    marks, steps, clock, step = np.linspace(0.0, t_max, count), [], 0.0, 0
    while len(steps) < count:
        clock += dt
        step += 1
        while len(steps) < count and clock >= marks[len(steps)]:
            steps.append(step)
    return np.array(steps)


def cluster_labels(adjacency):
    """[n] the connected component of each token of a boolean graph (depth-first search),
    numbered in order of each component's least token."""
    n = adjacency.shape[0]
    label = np.full(n, -1)
    count = 0
    for s in range(n):
        if label[s] >= 0:
            continue
        stack, label[s] = [s], count
        while stack:
            i = stack.pop()
            for j in np.flatnonzero(adjacency[i] & (label < 0)):
                label[j] = count
                stack.append(j)
        count += 1
    return label


def components(adjacency):
    """Connected component sizes of a boolean graph."""
    return list(np.bincount(cluster_labels(adjacency)))


def silhouette(x, labels):
    """Mean silhouette coefficient of the points x: [n, d] under labels: [n], with the cosine
    distance 1 - <x_i, x_j> / (|x_i| |x_j|), by its definition (Rousseeuw 1987) as
    scikit-learn's silhouette_score(x, labels, metric="cosine") takes it: distances clipped to
    [0, 2] with a zero diagonal, s_i = (b_i - a_i) / max(a_i, b_i), a_i the mean distance to
    the rest of i's cluster, b_i the least mean distance to another cluster, s_i = 0 for a
    cluster of one point. Checked once against scikit-learn 1.9.1 on 17 random clustered
    states (silhouettes 0.58 to 0.99): equal to 1.1e-16. scikit-learn is not a test
    dependency: it would bring a large package for these ten lines."""
    u = normalize(x)
    dist = np.clip(1.0 - u @ u.T, 0.0, 2.0)
    np.fill_diagonal(dist, 0.0)
    s = np.zeros(len(x))
    for i in range(len(x)):
        own = labels == labels[i]
        if own.sum() < 2:
            continue
        a = dist[i, own].sum() / (own.sum() - 1)
        b = min(dist[i, labels == k].mean() for k in np.unique(labels) if k != labels[i])
        s[i] = (b - a) / max(a, b) if max(a, b) > 0 else 0.0
    return s.mean()


def resolved(x, weights, eps):
    """The cluster-resolved observables (n_groups, singleton_fraction, overlap_gap,
    inter_attention, silhouette) of x: [n, d], clusters the components of cosine > 1 - eps,
    groups those of >= 2 tokens; weights: one [n, n] attention matrix per head (rows
    normalised here; a row without weight puts none outside)."""
    n = x.shape[0]
    g = x @ x.T
    label = cluster_labels((g > 1 - eps) & ~np.eye(n, dtype=bool))
    sizes = np.bincount(label)
    in_group = sizes[label] >= 2
    groups = [np.flatnonzero(label == k) for k in range(len(sizes)) if sizes[k] >= 2]
    gap = sil = np.nan
    if len(groups) >= 2:
        intra = np.concatenate([g[np.ix_(a, a)][~np.eye(len(a), dtype=bool)] for a in groups])
        inter = max(g[np.ix_(a, b)].mean() for a in groups for b in groups if a[0] != b[0])
        gap = intra.mean() - inter
        sil = silhouette(x[in_group], label[in_group])
    outside = label[:, None] != label[None, :]
    shares = []
    for w in weights:
        z = w.sum(axis=1, keepdims=True)
        p = np.divide(w, z, out=np.zeros_like(w), where=z > 0)
        shares.append((p * outside).sum(axis=1).mean())
    return np.array([len(groups), 1 - in_group.mean(), gap, np.mean(shares), sil])


def observables(x, kind, beta, eps):
    """The observables of docs/results.md, in the kernel's column order."""
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
    return np.concatenate([[
        np.linalg.norm(x.mean(axis=0)),
        pairs.mean() if n > 1 else np.nan,
        pairs.min() if n > 1 else np.nan,
        (pairs > 1 - eps).mean() if n > 1 else np.nan,
        len(sizes),
        max(sizes) / n,
        energy,
        entropy,
    ], resolved(x, [a], eps), [span_dimension(x), gram_rank(x), points_count(x)],
        eigen_fit(x)])


def eigen_fit(x, v=None):
    """(v_eigenvalue, v_eigen_residual) of x: [n, d] for the value matrices v: [h, d, d]
    (None: V = I): lambda = <X, V X> / |X|^2 and |V X - lambda X| / |X|, V their mean."""
    x = np.asarray(x, np.float64)
    if not x.any():
        return np.array([np.nan, np.nan])
    vx = x @ (np.eye(x.shape[1]) if v is None else np.mean(v, axis=0)).T
    lam = (x * vx).sum() / (x * x).sum()
    return np.array([lam, np.linalg.norm(vx - lam * x) / np.linalg.norm(x)])


def span_dimension(x):
    """The numerical rank of x: [n, d] at span_dimension's tolerance (its record)."""
    from sweep.observables.records import SPAN_RTOL

    return np.linalg.matrix_rank(np.asarray(x, np.float64), rtol=SPAN_RTOL)


def gram_rank(x):
    """numpy.linalg.matrix_rank of the 0/1 matrix [<x_i, x_j> > threshold] (gram_rank's
    record), at NumPy's default tolerance."""
    from sweep.observables.records import RECORDS

    threshold, = next(r for r in RECORDS if r.name == "gram_rank").parameters
    x = np.asarray(x, np.float64)
    return np.linalg.matrix_rank((x @ x.T > threshold).astype(np.float64))


def trajectory(x, kind, beta, method, dt, stride, n_saves, eps):
    """Observables at each save and the final state, stepping exactly like the kernel."""
    step = {"euler": euler_step, "layer": layer_step, "rk4": rk4_step,
            "heun": heun_step}[method]
    obs = [observables(x, kind, beta, eps)]
    for _ in range(n_saves - 1):
        for _ in range(stride):
            x = step(x, kind, beta, dt)
        obs.append(observables(x, kind, beta, eps))
    return np.array(obs), x


def equiangular_rhs(rho, n, beta, kind):
    """d rho / dt for an equiangular configuration (docs/theory.md, result 2)."""
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


# ---------------------------------------------------------------- the model zoo
# A model is a dict of keyword arguments of sweep.kernels.general.model.dynamics: attention, beta,
# heads, head_beta, qk, v ([d, d] or [h, d, d] or None for identity), mask ("window:2"...),
# noise, noise_key, ffn ([d, d] or None).

def _per_head(m, heads, d):
    m = np.eye(d) if m is None else np.asarray(m, float)
    return np.broadcast_to(m, (heads, d, d))


def _parts(model, d):
    heads = model.get("heads", 1)
    betas = model.get("head_beta") or [model.get("beta", 1.0)] * heads
    qk, v = _per_head(model.get("qk"), heads, d), _per_head(model.get("v"), heads, d)
    name, _, param = model.get("mask", "dense").partition(":")
    return betas, qk, v, name, int(param or 0)


def allowed(n, name, param, scores):
    """[n, n] bool: may i attend to j (topk needs the row scores)."""
    i, j = np.indices((n, n))
    if name == "causal":
        return j <= i
    if name == "window":
        return np.abs(i - j) <= param
    if name == "groups":
        edges = [g * n // param for g in range(param + 1)]
        block = np.searchsorted(edges, np.arange(n), side="right") - 1
        return block[:, None] == block[None, :]
    if name == "leaders":
        return j < param
    if name == "topk":
        keep = np.zeros((n, n), bool)
        for r in range(n):
            keep[r, np.argsort(-scores[r], kind="stable")[:param]] = True
        return keep
    return np.ones((n, n), bool)


def head_weights(x, kind, beta, qk, mask_name, param):
    """[n, n] attention weights of one head, zero outside the mask."""
    n = x.shape[0]
    s = x @ qk @ x.T  # s_ij = <x_i, M x_j>
    ok = allowed(n, mask_name, param, s)
    if kind == "softmax":
        e = np.where(ok, np.exp(beta * (s - np.where(ok, s, -np.inf).max(1, keepdims=True))), 0)
        return e / e.sum(axis=1, keepdims=True)
    if kind == "unnormalized":
        return np.where(ok, np.exp(beta * s), 0.0) / n
    if kind == "relu":
        return np.where(ok, np.maximum(0.0, beta * s), 0.0) / n
    w = np.zeros((n, n))  # hardmax: the best allowed j != i
    cand = np.where(ok & ~np.eye(n, dtype=bool), s, -np.inf)
    for r in range(n):
        if np.isfinite(cand[r]).any():
            w[r, np.argmax(cand[r])] = 1.0
    return w


def _frozen(model, n):
    name, _, param = model.get("mask", "dense").partition(":")
    return np.arange(n) < (int(param) if name == "leaders" else 0)


def zoo_output(x, model):
    """v_i = mean_h sum_j W^h_ij V_h x_j + F x_i; leaders have output zero."""
    n, d = x.shape
    betas, qk, v, name, param = _parts(model, d)
    kind = model.get("attention", "softmax")
    heads = [head_weights(x, kind, b, m, name, param) @ (x @ vh.T)
             for b, m, vh in zip(betas, qk, v)]
    u = np.mean(heads, axis=0)
    if model.get("ffn") is not None:
        u = u + x @ np.asarray(model["ffn"]).T
    u[_frozen(model, n)] = 0.0
    return u


def zoo_velocity(x, model):
    """P_{x_i}(v_i) for the zoo's attention output v_i."""
    return project(x, zoo_output(x, model))


def _splitmix(key, counter):
    with np.errstate(over="ignore"):
        z = np.uint64(key) + (counter.astype(np.uint64) + np.uint64(1)) * np.uint64(
            0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def normals(key, tick, n, d):
    """[n, d] standard normals of step `tick`: SplitMix64 counters + Box-Muller."""
    c = (tick * n + np.arange(n)[:, None]) * d + np.arange(d)[None, :]
    u1 = (_splitmix(key, 2 * c) >> np.uint64(11)).astype(float) / 2.0**53
    u2 = (_splitmix(key, 2 * c + 1) >> np.uint64(11)).astype(float) / 2.0**53
    return np.sqrt(-2 * np.log(1 - u1)) * np.cos(2 * np.pi * u2)


def zoo_step(x, model, method, dt, tick):
    """One euler, layer, rk4 or heun step (noise: Euler-Maruyama, its increment projected);
    leaders are copied, not renormalised, so they never move at all."""
    f = lambda y: zoo_velocity(y, model)  # noqa: E731
    frozen = _frozen(model, x.shape[0])
    if method == "rk4":
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        y = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    elif method == "heun":
        k1 = f(x)
        y = x + dt / 2 * (k1 + f(x + dt * k1))
    else:  # euler steps along P_x(v), layer along v itself
        y = x + dt * (zoo_output(x, model) if method == "layer" else f(x))
    if model.get("noise", 0.0) > 0:
        xi = normals(model.get("noise_key", 0), tick, *x.shape)
        xi = xi - np.sum(x * xi, axis=1, keepdims=True) * x
        y = y + np.sqrt(2 * model["noise"] * dt) * np.where(frozen[:, None], 0.0, xi)
    return np.where(frozen[:, None], x, normalize(y))


def zoo_observables(x, model, eps):
    """The observables of docs/results.md; energy, entropy and inter_attention are means over
    heads."""
    n, d = x.shape
    betas, qk, _, name, param = _parts(model, d)
    base = observables(x, "softmax", 0.0, eps)
    energies, entropies, weights = [], [], []
    for b, m in zip(betas, qk):
        s = x @ m @ x.T
        energies.append(s.sum() / (2 * n * n) if b == 0 else
                        np.exp(b * s).sum() / (2 * b * n * n))
        w = head_weights(x, model.get("attention", "softmax"), b, m, name, param)
        weights.append(w)
        z = w.sum(axis=1, keepdims=True)
        p = np.divide(w, z, out=np.zeros_like(w), where=z > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            entropies.append(-np.where(p > 0, p * np.log(p), 0.0).sum(axis=1).mean())
    base[6], base[7] = np.mean(energies), np.mean(entropies)
    base[8:13] = resolved(x, weights, eps)
    base[16:18] = eigen_fit(x, _parts(model, d)[2])
    return base


def zoo_trajectory(x, model, method, dt, stride, n_saves, eps):
    """Observables at each save and the final state, stepping exactly like the kernel."""
    obs, tick = [zoo_observables(x, model, eps)], 0
    for _ in range(n_saves - 1):
        for _ in range(stride):
            x = zoo_step(x, model, method, dt, tick)
            tick += 1
        obs.append(zoo_observables(x, model, eps))
    return np.array(obs), x


def layer_norm_row(x, gain, bias, eps):
    """(x - mean) / sqrt(var + eps) * gain + bias for one token x: [d]."""
    import math

    y = (x - x.mean()) / math.sqrt(x.var() + eps)
    return y * (1.0 if gain is None else gain) + (0.0 if bias is None else bias)


def layer_block(h, blk, norm, norm_fn="layernorm", alpha=1.0, skip=1.0):
    """One layer-model block on h: [n, d] (docs/layers.md), one token and one head at a time.

    blk: a sweep.execution.layers.params.Block (matrices None = identity, vectors None = 0 or 1)."""
    import math

    n, d = h.shape

    def N(x, ln):
        if norm_fn == "unit":
            return x / np.linalg.norm(x)
        return layer_norm_row(x, ln[0], ln[1], blk.ln_eps)

    def attend(y):
        out = []
        for i in range(n):
            per_head = []
            for k, beta in enumerate(blk.betas):
                m = np.eye(d) if blk.qk is None else blk.qk[k]
                u = np.zeros(d) if blk.qk_bias is None else blk.qk_bias[k]
                v = np.eye(d) if blk.v is None else blk.v[k]
                s = np.array([beta * (y[i] @ m @ y[j] + u @ y[j]) for j in range(n)])
                w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                per_head.append(sum(w[j] * (v @ y[j]) for j in range(n)))
            total = sum(per_head) if blk.combine == "sum" else sum(per_head) / len(per_head)
            out.append(total + (0.0 if blk.v_bias is None else blk.v_bias))
        return out

    def ffn(y):
        f = blk.ffn
        if f.w2 is None:
            return [yi if f.w is None else f.w @ yi for yi in y]
        out = []
        for yi in y:
            a = f.w @ yi + (0.0 if f.b is None else f.b)
            g = np.array([0.5 * u * (1 + math.erf(u / math.sqrt(2))) for u in a])
            out.append(f.w2 @ g + (0.0 if f.b2 is None else f.b2))
        return out

    def sub(x, g, ln):
        if norm == "post":
            return [N(skip * xi + alpha * gi, ln) for xi, gi in zip(x, g(x))]
        if norm == "sphere":
            return [normalize(xi + alpha * gi) for xi, gi in zip(x, g(x))]
        g_in = g([N(xi, ln) for xi in x])
        if norm == "peri":
            g_in = [N(gi, (None, None)) for gi in g_in]
        return [skip * xi + alpha * gi for xi, gi in zip(x, g_in)]

    x = sub(list(h), attend, blk.ln1)
    if blk.ffn is not None:
        x = sub(x, ffn, blk.ln2)
    return np.array(x)


# ---------------------------------------------------------------- euclidean space

def points_count(x, rtol=1e-3):
    """n_points: components of the graph |x_i - x_j| <= rtol max_k |x_k|."""
    reach = rtol * np.linalg.norm(x, axis=1).max()
    dist = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=2)
    return len(components(dist <= reach))


def space_velocity(y, model, t, rate):
    """dy/dt for y = exp(-rate t) x in R^d: the attention output with every beta times
    exp(2 rate t), minus rate y (no projection)."""
    gain = np.exp(2.0 * rate * t)
    betas = _parts(model, y.shape[1])[0]
    return zoo_output(y, dict(model, head_beta=[b * gain for b in betas])) - rate * y


def space_step(y, model, method, dt, tick, rate):
    """One euler, rk4 or heun step of euclidean space's rescaled flow, at time tick dt."""
    t = tick * dt
    f = lambda z, late: space_velocity(z, model, t + late * dt, rate)  # noqa: E731
    if method == "rk4":
        k1 = f(y, 0.0)
        k2 = f(y + 0.5 * dt * k1, 0.5)
        k3 = f(y + 0.5 * dt * k2, 0.5)
        k4 = f(y + dt * k3, 1.0)
        return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    if method == "heun":
        k1 = f(y, 0.0)
        return y + dt / 2 * (k1 + f(y + dt * k1, 1.0))
    return y + dt * f(y, 0.0)


def space_observables(y, model, eps):
    """Euclidean space's observables: those of the directions (gram_rank too), energy,
    attention_entropy and inter_attention NaN, span_dimension, n_points and the eigenspace
    fit of y itself."""
    r = np.linalg.norm(y, axis=1, keepdims=True)
    u = np.divide(y, r, out=np.zeros_like(y), where=r > 0)
    out = zoo_observables(u, model, eps)
    out[6] = out[7] = out[11] = np.nan
    out[13], out[15] = span_dimension(y), points_count(y)
    out[16:18] = eigen_fit(y, _parts(model, y.shape[1])[2])
    return out


def space_trajectory(y, model, method, dt, stride, n_saves, eps, rate):
    """Observables at each save and the final rescaled state, stepping like the kernel."""
    obs, tick = [space_observables(y, model, eps)], 0
    for _ in range(n_saves - 1):
        for _ in range(stride):
            y = space_step(y, model, method, dt, tick, rate)
            tick += 1
        obs.append(space_observables(y, model, eps))
    return np.array(obs), y
