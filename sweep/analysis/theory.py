"""Theory curves to compare sweeps with: the equiangular (t, beta) boundary and kappa_c.

Pure NumPy (no SciPy): quadrature by Gauss-Legendre panels, Bessel-type sums in log space.

Equiangular ODE (docs/theory.md, result 2; Geshkovski, Letrouit, Polyanskiy, Rigollet,
arXiv 2312.10794): if every pairwise cosine equals rho,
    SA:  drho/dt = 2 e^{beta rho} (1 - rho) ((n-1) rho + 1) / (e^beta + (n-1) e^{beta rho})
    USA: drho/dt = (2/n) e^{beta rho} (1 - rho) ((n-1) rho + 1).
With u = -log(1 - rho) the right-hand side of du/dt = G(u) is bounded away from 0 and
infinity, so t(u) = int du / G is a smooth quadrature and never sees the stiffness of
rho -> 1. For d >> n a uniform start follows this curve from rho(0) = 0 (docs/theory.md,
result 3), so the boundary rho_beta(t) = 1 - eps is the high-dimensional limit of the measured one.

Noise threshold (docs/theory.md, result 5; Rigollet arXiv 2512.01868): for the unnormalized
drift with diffusion D = 1/kappa, the uniform state loses stability at
    kappa_c(beta, d) = beta / E_sigma[t e^{beta t}],  t = <x, e_1>, x uniform on S^{d-1}.
With nu = d/2 - 1, E[t e^{beta t}] = Gamma(nu + 1) sum_k (beta/2)^{2k+1} / (k! Gamma(k+nu+2)),
so kappa_c = d at beta = 0 and beta / I_1(beta) for d = 2.
"""

from __future__ import annotations

import math

import numpy as np

from sweep.core.config import ConfigError

MODELS = ("softmax", "unnormalized")
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)
_U_END = 37.0  # rho = 1 - e^-37 is 1 in float64


def _check(n: int, model: str, rho0: float = 0.0) -> None:
    if model not in MODELS:
        raise ConfigError(f"model: {model!r} is not one of {' | '.join(MODELS)}")
    if n < 2:
        raise ConfigError(f"n: the equiangular ODE needs n >= 2, got {n}")
    if not -1.0 / (n - 1) <= rho0 < 1.0:
        raise ConfigError(f"rho0: must lie in [-1/(n-1), 1), got {rho0}")


def rate(u: np.ndarray, n: int, beta: np.ndarray, model: str) -> np.ndarray:
    """du/dt for u = -log(1 - rho): the equiangular ODE divided by (1 - rho). Broadcasts."""
    rho = -np.expm1(-u)
    pairs = (n - 1) * rho + 1.0
    if model == "softmax":
        # e^{beta rho} / (e^beta + (n-1) e^{beta rho}), divided through to avoid overflow
        return 2.0 * pairs / (np.exp(beta * (1.0 - rho)) + (n - 1))
    with np.errstate(over="ignore"):
        return (2.0 / n) * np.exp(beta * rho) * pairs


def _panel_times(edges: np.ndarray, n: int, beta: np.ndarray, model: str) -> np.ndarray:
    """t(edges) - t(edges[0]) for each beta: [beta, edge], by 8-point Gauss-Legendre panels."""
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    nodes = mid[:, None] + half[:, None] * _NODES[None, :]          # [panel, 8]
    g = rate(nodes[None], n, beta[:, None, None], model)            # [beta, panel, 8]
    with np.errstate(divide="ignore"):
        panels = (half[None, :] * (_WEIGHTS / g).sum(axis=2))
    return np.concatenate([np.zeros((beta.size, 1)), np.cumsum(panels, axis=1)], axis=1)


def boundary_time(betas, n: int, model: str = "softmax", eps: float = 1e-3,
                  rho0: float = 0.0, panels: int = 400) -> np.ndarray:
    """t*(beta): the time at which rho_beta reaches 1 - eps from rho0. betas: [m] -> [m]."""
    _check(n, model, rho0)
    if not 0.0 < eps < 1.0:
        raise ConfigError(f"eps: must lie in (0, 1), got {eps}")
    beta = np.atleast_1d(np.asarray(betas, dtype=float))
    u0, u1 = -math.log1p(-rho0), -math.log(eps)
    if u1 <= u0:
        return np.zeros(beta.size)
    return _panel_times(np.linspace(u0, u1, panels + 1), n, beta, model)[:, -1]


def rho_curve(times, betas, n: int, model: str = "softmax", rho0: float = 0.0,
              panels: int = 2000) -> np.ndarray:
    """rho_beta(t) on a time grid: [time, beta]. Cubic Hermite inversion of t(u)."""
    _check(n, model, rho0)
    t = np.asarray(times, dtype=float)
    beta = np.atleast_1d(np.asarray(betas, dtype=float))
    edges = np.linspace(-math.log1p(-rho0), _U_END, panels + 1)
    tu = _panel_times(edges, n, beta, model)                        # [beta, edge]
    out = np.empty((t.size, beta.size))
    for b in range(beta.size):
        u = _hermite_inverse(t, tu[b], edges, rate(edges, n, beta[b], model))
        out[:, b] = _newton(u, t, tu[b], edges, n, beta[b], model)
    return -np.expm1(-out)


def _newton(u, t, tk, uk, n, beta, model, steps=2):
    """Polish u(t) with Newton on t(u) = t, t(u) by one Gauss-Legendre panel from a node."""
    for _ in range(steps):
        k = np.clip(np.searchsorted(uk, u, side="right") - 1, 0, uk.size - 2)
        half = 0.5 * (u - uk[k])
        nodes = (uk[k] + half)[:, None] + half[:, None] * _NODES[None, :]
        t_of_u = tk[k] + half * (_WEIGHTS / rate(nodes, n, beta, model)).sum(axis=1)
        u = np.where(u < uk[-1], u - (t_of_u - t) * rate(u, n, beta, model), u)
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


def equiangular(n: int, model: str, eps: float, betas, times, rho0: float = 0.0):
    """The equiangular prediction as a dataset over (time, beta).

    Variables: `t_boundary` [beta], the time t*(beta) where rho reaches 1 - eps (the curve to
    overlay on a measured (t, beta) diagram); `rho` [time, beta]; `clustered` [time, beta],
    the 0/1 indicator rho >= 1 - eps, i.e. the clustered fraction of a d -> infinity sweep.
    """
    import xarray as xr

    beta = np.atleast_1d(np.asarray(betas, dtype=float))
    t = np.asarray(times, dtype=float)
    rho = rho_curve(t, beta, n, model, rho0)
    label = {"long_name": "inverse temperature beta", "units": "1"}
    return xr.Dataset(
        {"t_boundary": ("beta", boundary_time(beta, n, model, eps, rho0),
                        {"long_name": f"time at which rho reaches 1 - {eps:g}", "units": "1"}),
         "rho": (("time", "beta"), rho, {"long_name": "equiangular pairwise cosine",
                                          "units": "1"}),
         "clustered": (("time", "beta"), (rho >= 1.0 - eps).astype(float),
                       {"long_name": f"indicator rho >= 1 - {eps:g}", "units": "1"})},
        coords={"beta": ("beta", beta, label),
                "time": ("time", t, {"long_name": "time", "units": "1"})},
        attrs={"title": f"equiangular ODE boundary, n = {n}, {model}",
               "theory": "equiangular", "n": n, "model": model, "eps": eps, "rho0": rho0})


# ---------------------------------------------------------------- noise threshold

def _log_mean_t_exp(beta: float, d: float) -> float:
    """log E_sigma[t e^{beta t}] on S^{d-1} (beta > 0), summed in log space."""
    nu = d / 2.0 - 1.0
    terms = int(2 * beta + 10 * math.sqrt(beta) + 60)
    k = np.arange(terms, dtype=float)
    logs = np.array([math.lgamma(nu + 1) - math.lgamma(j + 1) - math.lgamma(j + nu + 2)
                     for j in k])
    logs += (2 * k + 1) * math.log(beta / 2.0)
    top = logs.max()
    return top + math.log(np.exp(logs - top).sum())


def kappa_c(beta: float, d: float) -> float:
    """kappa_c(beta, d) = beta / E_sigma[t e^{beta t}] (= d at beta = 0)."""
    if d < 2:
        raise ConfigError(f"d: must be >= 2, got {d}")
    if beta < 0 or not math.isfinite(beta):
        raise ConfigError(f"beta: must be finite and >= 0, got {beta}")
    if beta == 0:
        return float(d)
    return math.exp(math.log(beta) - _log_mean_t_exp(beta, d))


def kappa_c_dataset(dims, betas):
    """kappa_c and the critical noise D_c = 1 / kappa_c over (d, beta)."""
    import xarray as xr

    d = np.atleast_1d(np.asarray(dims, dtype=float))
    beta = np.atleast_1d(np.asarray(betas, dtype=float))
    k = np.array([[kappa_c(b, dd) for b in beta] for dd in d])
    return xr.Dataset(
        {"kappa_c": (("d", "beta"), k, {"long_name": "critical coupling kappa_c", "units": "1"}),
         "noise_c": (("d", "beta"), 1.0 / k, {"long_name": "critical noise D_c = 1/kappa_c",
                                              "units": "1"})},
        coords={"d": ("d", d, {"long_name": "dimension d", "units": "1"}),
                "beta": ("beta", beta, {"long_name": "inverse temperature beta", "units": "1"})},
        attrs={"title": "noise threshold of the unnormalized model", "theory": "kappa-c"})
