"""Growth rates of the modes of the uniform state on S^{d-1}: which cluster count nucleates.

Mean field: d_t rho + div(rho P v[rho]) = D Lap rho, with (K rho)(x) = int e^{beta <x,y>}
rho(dy) and P_x v = grad_S (K rho) / beta (USA) or grad_S log(K rho) / beta (SA). Around
the uniform measure sigma, rho = sigma (1 + f) with f a spherical harmonic Y_k of degree k:
- Funk-Hecke: K(sigma Y_k) = lambda_k Y_k, with
      lambda_k(beta) = Gamma(d/2) (2/beta)^{d/2-1} I_{k+d/2-1}(beta)
  (lambda_0 = E_sigma[e^{beta t}], lambda_1 = E_sigma[t e^{beta t}]);
- Laplace-Beltrami: Lap Y_k = -k (k+d-2) Y_k.
So d_t f = -Lap(K(sigma f)) / (beta [lambda_0 for SA]) + D Lap f, and mode k grows at
    SA:  g_k = k (k+d-2) (lambda_k / (beta lambda_0) - D)
            = k (k+d-2) (I_{k+d/2-1}(beta) / (beta I_{d/2-1}(beta)) - D),
    USA: g_k = k (k+d-2) (lambda_k / beta - D).
On the circle (d = 2) these are k^2 I_k(beta) / (beta I_0(beta)) and k^2 I_k(beta) / beta
(Bruno, Pasqualotto, Agazzi, arXiv 2410.23228); without noise both models have the same
fastest mode, argmax_k k (k+d-2) I_{k+d/2-1}(beta) (k = 3 at d = 2, beta = 5). For USA, g_1 = 0
at D = lambda_1 / beta = 1 / kappa_c: the noise threshold (noise.py) is the degree-1 mode.

Which modes to scan: for k >= 2 beta the ratio g_{k+1} / g_k is below 1 (I_{nu+1} / I_nu <
beta / (2 nu + 1) <= 1/4 there, and the polynomial factor is at most 4), so the fastest mode
lies in k = 1 .. ceil(2 beta) + 1; the default scan goes to ceil(2 beta) + 8.
"""

from __future__ import annotations

import math

import numpy as np

from sweep.analysis.theory.bessel import log_iv
from sweep.analysis.theory.datasets import dataset, values, var
from sweep.errors import ConfigError

MODELS = ("softmax", "unnormalized")


def _check(d: float, beta: float, model: str) -> None:
    if model not in MODELS:
        raise ConfigError(f"model: {model!r} is not one of {' | '.join(MODELS)}")
    if not d >= 2 or not math.isfinite(d):
        raise ConfigError(f"d: must be >= 2, got {d}")
    if not beta > 0 or not math.isfinite(beta):
        raise ConfigError(f"beta: must be finite and > 0 (at beta = 0 no mode but k = 1 "
                          f"moves), got {beta}")


def funk_hecke(k, d: float, beta: float) -> np.ndarray:
    """lambda_k: the eigenvalue of f -> int e^{beta <x,y>} f(y) sigma(dy) on spherical
    harmonics of degree k on S^{d-1} (sigma uniform, of mass 1). k: [m] -> [m]."""
    nu = d / 2.0 - 1.0
    k = np.atleast_1d(np.asarray(k, dtype=float))
    with np.errstate(over="ignore"):
        return np.exp(math.lgamma(d / 2.0) + nu * math.log(2.0 / beta) + log_iv(k + nu, beta))


def growth_rates(k, d: float, beta: float, model: str = "softmax",
                 noise: float = 0.0) -> np.ndarray:
    """g_k, the growth rate of the degree-k mode around the uniform state (module
    docstring). k: [m] -> [m]."""
    _check(d, beta, model)
    k = np.atleast_1d(np.asarray(k, dtype=float))
    nu = d / 2.0 - 1.0
    if model == "softmax":  # lambda_k / lambda_0: the Gamma and power prefactors cancel
        per_beta = np.exp(log_iv(k + nu, beta) - log_iv(nu, beta)[0]) / beta
    else:
        with np.errstate(over="ignore"):
            per_beta = funk_hecke(k, d, beta) / beta
    return k * (k + d - 2.0) * (per_beta - noise)


def _scan(beta: float) -> np.ndarray:
    return np.arange(1, math.ceil(2.0 * beta) + 9)


def fastest_mode(d: float, beta: float, model: str = "softmax",
                 noise: float = 0.0) -> tuple[int, float]:
    """(k, g_k) of the fastest-growing mode k >= 1 (the largest g_k, even if negative)."""
    k = _scan(beta)
    g = growth_rates(k, d, beta, model, noise)
    best = int(np.argmax(g))
    return int(k[best]), float(g[best])


def modes(dims, betas, model: str = "softmax", noise: float = 0.0, k_max: int | None = None):
    """Growth rates over (d, beta, k) for k = 1..k_max (default: enough for every beta of
    the grid), with the fastest mode and its rate over (d, beta)."""
    d = values("d", dims, low=2.0)
    beta = values("beta", betas, strict=True)
    noise = values("noise", noise)[0]
    k = np.arange(1, (k_max or _scan(beta.max())[-1]) + 1)
    if k.size == 0:
        raise ConfigError(f"k_max: must be >= 1, got {k_max}")
    g = np.array([[growth_rates(k, dd, b, model, noise) for b in beta] for dd in d])
    best = np.array([[fastest_mode(dd, b, model, noise) for b in beta] for dd in d])
    return dataset(
        f"growth rates of the modes of the uniform state, {model}", "modes",
        {"growth_rate": var(("d", "beta", "k"), g, "growth rate of the degree-k mode"),
         "fastest_mode": var(("d", "beta"), best[..., 0].astype(np.int32),
                             "degree of the fastest-growing mode"),
         "fastest_rate": var(("d", "beta"), best[..., 1], "growth rate of the fastest mode")},
        {"d": var("d", d, "dimension d"), "beta": var("beta", beta, "inverse temperature beta"),
         "k": var("k", k.astype(np.int32), "degree of the spherical harmonic")},
        model=model, noise=noise)
