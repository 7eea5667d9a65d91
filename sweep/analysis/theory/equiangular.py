"""The equiangular ODE: the exact solution when every pairwise cosine equals rho.

Geshkovski, Letrouit, Polyanskiy, Rigollet (arXiv 2312.10794), with identity matrices:
    SA:   drho/dt = 2 e^{beta rho} (1 - rho) ((n-1) rho + 1) / (e^beta + (n-1) e^{beta rho})
    USA:  drho/dt = (2/n) e^{beta rho} (1 - rho) ((n-1) rho + 1)
    ReLU: drho/dt = (2 beta / n) rho_+ (1 - rho) ((n-1) rho + 1)
(ReLU weights max(0, beta rho) / n: rho = 0 is a fixed point, below it the others' weights
vanish, and time scales as 1/beta, so beta t* does not depend on beta.) With several heads
sweep averages the heads' velocities, so drho/dt is the mean over heads of the one-head
right-hand side at each beta_h. For d >> n a uniform start follows the curve from rho(0) = 0,
so rho_beta(t) = 1 - eps is the high-dimensional limit of a measured (t, beta) boundary.

Numerics: with u = -log(1 - rho) the right-hand side of du/dt = G(u) is bounded away from 0
and infinity (off a fixed point), so t(u) = int du / G is a smooth quadrature (8-point
Gauss-Legendre panels) that never sees the stiffness of rho -> 1 (rate 2 e^beta for USA);
rho(t) inverts t(u) by cubic Hermite interpolation polished with two Newton steps.

Array shapes: `betas` is [m] (one head) or [m, h] (h heads per row); results are [m] or
[time, m].
"""

from __future__ import annotations

import math

import numpy as np

from sweep.analysis.theory.datasets import dataset, values, var
from sweep.errors import ConfigError

MODELS = ("softmax", "unnormalized", "relu")
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)
_U_END = 37.0  # rho = 1 - e^-37 is 1 in float64


def _check(n: int, model: str, rho0: float = 0.0) -> None:
    if model not in MODELS:
        raise ConfigError(f"model: {model!r} is not one of {' | '.join(MODELS)}")
    if n < 2:
        raise ConfigError(f"n: the equiangular ODE needs n >= 2, got {n}")
    if not -1.0 / (n - 1) <= rho0 < 1.0:
        raise ConfigError(f"rho0: must lie in [-1/(n-1), 1), got {rho0}")


def _rows(betas) -> np.ndarray:
    """betas as [m, h]: one row of head betas per grid point."""
    b = np.asarray(betas, dtype=float)
    return b.reshape(-1, 1) if b.ndim <= 1 else b


def rate(u, n: int, heads, model: str) -> np.ndarray:
    """du/dt for u = -log(1 - rho): the right-hand side over (1 - rho), mean over heads.

    u: [...]; heads: the betas of the heads, [h] (or broadcasting as [..., h]) -> [...]."""
    rho = -np.expm1(-np.asarray(u, dtype=float))[..., None]
    beta = np.asarray(heads, dtype=float)
    pairs = (n - 1) * rho + 1.0
    if model == "softmax":
        # e^{beta rho} / (e^beta + (n-1) e^{beta rho}), divided through to avoid overflow
        g = 2.0 * pairs / (np.exp(beta * (1.0 - rho)) + (n - 1))
    elif model == "relu":
        g = (2.0 / n) * beta * np.maximum(rho, 0.0) * pairs
    else:
        with np.errstate(over="ignore"):
            g = (2.0 / n) * np.exp(beta * rho) * pairs
    return g.mean(axis=-1)


def _times(edges: np.ndarray, n: int, heads: np.ndarray, model: str) -> np.ndarray:
    """t(edges) - t(edges[0]) for one row of head betas, by Gauss-Legendre panels."""
    half = 0.5 * np.diff(edges)
    nodes = (0.5 * (edges[1:] + edges[:-1]))[:, None] + half[:, None] * _NODES  # [panel, 8]
    with np.errstate(divide="ignore"):
        panels = half * (_WEIGHTS / rate(nodes, n, heads, model)).sum(axis=1)
    return np.concatenate([[0.0], np.cumsum(panels)])


def _stuck(u0: float, n: int, heads: np.ndarray, model: str) -> bool:
    """rho0 is a fixed point (ReLU at rho <= 0, or the simplex rho = -1/(n-1))."""
    return bool(rate(u0, n, heads, model) == 0.0)


def boundary_time(betas, n: int, model: str = "softmax", eps: float = 1e-3,
                  rho0: float = 0.0, panels: int = 400) -> np.ndarray:
    """t*: the time at which rho reaches 1 - eps from rho0 (inf from a fixed point).

    betas: [m] or [m, h] (module docstring) -> [m]."""
    _check(n, model, rho0)
    if not 0.0 < eps < 1.0:
        raise ConfigError(f"eps: must lie in (0, 1), got {eps}")
    u0, u1 = -math.log1p(-rho0), -math.log(eps)
    out = []
    for heads in _rows(betas):
        if u1 <= u0:
            out.append(0.0)
        elif _stuck(u0, n, heads, model):
            out.append(math.inf)
        else:
            out.append(_times(np.linspace(u0, u1, panels + 1), n, heads, model)[-1])
    return np.array(out)


def rho_curve(times, betas, n: int, model: str = "softmax", rho0: float = 0.0,
              panels: int = 2000) -> np.ndarray:
    """rho(t) on a time grid: times [T], betas [m] or [m, h] -> [T, m]."""
    _check(n, model, rho0)
    t = np.asarray(times, dtype=float)
    u0 = -math.log1p(-rho0)
    edges = np.linspace(u0, _U_END, panels + 1)
    rows = _rows(betas)
    out = np.full((t.size, len(rows)), u0)
    for b, heads in enumerate(rows):
        if _stuck(u0, n, heads, model):
            continue
        tk = _times(edges, n, heads, model)
        u = _hermite_inverse(t, tk, edges, rate(edges, n, heads, model))
        out[:, b] = _newton(u, t, tk, edges, n, heads, model)
    return -np.expm1(-out)


def _newton(u, t, tk, uk, n, heads, model, steps=2):
    """Polish u(t) with Newton on t(u) = t, t(u) by one Gauss-Legendre panel from a node."""
    for _ in range(steps):
        k = np.clip(np.searchsorted(uk, u, side="right") - 1, 0, uk.size - 2)
        half = 0.5 * (u - uk[k])
        nodes = (uk[k] + half)[:, None] + half[:, None] * _NODES[None, :]
        t_of_u = tk[k] + half * (_WEIGHTS / rate(nodes, n, heads, model)).sum(axis=1)
        u = np.where(u < uk[-1], u - (t_of_u - t) * rate(u, n, heads, model), u)
    return u


def _hermite_inverse(t, tk, uk, gk):
    """u(t) from samples u_k = u(t_k) and du/dt = g_k, by cubic Hermite interpolation."""
    k = np.clip(np.searchsorted(tk, t, side="right") - 1, 0, tk.size - 2)
    h = tk[k + 1] - tk[k]
    s = np.where(h > 0, (t - tk[k]) / np.where(h > 0, h, 1.0), 0.0)
    h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
    h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
    u = h00 * uk[k] + h10 * h * gk[k] + h01 * uk[k + 1] + h11 * h * gk[k + 1]
    return np.where(t >= tk[-1], uk[-1], u)


# ---------------------------------------------------------------- the dataset behind the command

MAX_SAVES = 10**7  # time points of one theory curve: a finer grid is a mistake


def time_grid(t_max: float, save_every: float) -> np.ndarray:
    """0, save_every, ..., t_max (the last save at the multiple of save_every nearest t_max)."""
    t_max = values("t_max", t_max, strict=True)[0]
    step = values("save_every", save_every, strict=True)[0]
    count = t_max / step if t_max <= step * MAX_SAVES else math.inf
    if not count <= MAX_SAVES:  # inf, or more points than any curve needs
        raise ConfigError(f"save_every: {step:g} gives {count:.3g} points up to t_max "
                          f"{t_max:g}; at most {MAX_SAVES:.0e} (give a larger --save-every)")
    return np.arange(round(count) + 1) * step


def beta_grid(start: float, stop: float, num: int) -> np.ndarray:
    """numpy.linspace(start, stop, num) of betas >= 0, num >= 1."""
    if num < 1 or int(num) != num:
        raise ConfigError(f"beta: NUM must be a whole number >= 1, got {num}")
    return np.linspace(*values("beta", [start, stop]), int(num))


def _grid(beta, head_beta) -> tuple[str, list, np.ndarray, str]:
    """(dimension, rows of head betas, coordinate, long name) for a beta or head_beta grid."""
    if head_beta is None:
        b = beta_grid(*(beta if beta is not None else (0.0, 9.0, 91)))
        return "beta", list(b[:, None]), b, "inverse temperature beta"
    if beta is not None:
        raise ConfigError("beta and head_beta: give one (head_beta sets every head's beta)")
    rows = [values("head_beta", heads) for heads in head_beta]
    labels = np.array([",".join(f"{b:g}" for b in heads) for heads in rows])
    return "head_beta", rows, labels, "inverse temperatures of the heads, averaged"


def equiangular(n: int, model: str = "softmax", eps: float = 1e-3, beta=None,
                t_max: float = 30.0, save_every: float = 0.5, rho0: float = 0.0,
                head_beta=None):
    """The equiangular prediction as a dataset over (time, beta) or (time, head_beta).

    beta: (START, STOP, NUM) of a linspace of one-head betas (default (0, 9, 91));
    head_beta: instead, a list of head-beta sets, one grid point each ([[5, 7], [1, 11]]),
    labelled "5,7" as a sweep results file labels its head_beta axis. Times: 0, save_every,
    ..., t_max. Variables: `t_boundary`, the time t* at which rho reaches 1 - eps (the curve
    to overlay on a measured (t, beta) diagram; inf from a fixed point); `rho` [time, ...];
    `clustered` [time, ...], the 0/1 indicator rho >= 1 - eps (the clustered fraction of a
    d -> infinity sweep).
    """
    dim, rows, coord, name = _grid(beta, head_beta)
    t = time_grid(t_max, save_every)
    _check(n, model, rho0)
    t_star = np.concatenate([boundary_time(heads[None], n, model, eps, rho0) for heads in rows])
    rho = np.concatenate([rho_curve(t, heads[None], n, model, rho0) for heads in rows], axis=1)
    return dataset(
        f"equiangular ODE boundary, n = {n}, {model}", "equiangular",
        {"t_boundary": var(dim, t_star, f"time at which rho reaches 1 - {eps:g}"),
         "rho": var(("time", dim), rho, "equiangular pairwise cosine"),
         "clustered": var(("time", dim), (rho >= 1.0 - eps).astype(float),
                          f"indicator rho >= 1 - {eps:g}")},
        {dim: var(dim, coord, name), "time": var("time", t, "time")},
        n=n, model=model, eps=eps, rho0=rho0)
