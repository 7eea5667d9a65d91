"""One attention layer on long equiangular contexts (Rigollet, arXiv 2512.01868).

Inputs y_1..y_n with <y_i, y_j> = rho (i != j); one softmax layer at beta = gamma log n,
    x_i' = normalise(sum_j A_ij y_j),  A_ij = e^{beta <y_i, y_j>} / sum_k e^{beta <y_i, y_k>}
(no residual). A puts p = e^beta / Z on the token itself and q = e^{beta rho} / Z on each
other, so x_i' is proportional to s y_i + S_i with S_i = sum_{j != i} y_j and
s = p / q = e^{beta (1 - rho)} = n^{gamma (1 - rho)}; the outputs are equiangular again, of
cosine (exact for every finite n, from the Gram matrix (1 - rho) I + rho 1 1^T)
    rho' = (s^2 rho + 2 s (1 + (n-2) rho) + (n-2) + ((n-1)^2 - (n-2)) rho)
           / (s^2 + 2 s (n-1) rho + (n-1) (1 + (n-2) rho)),
evaluated in w = 1/s and a = (n - 1) w (no overflow as n grows). As n -> infinity, with
gamma_c = 1/(1 - rho): rho' -> 1 for gamma < gamma_c (each token sees the crowd),
4 rho / (1 + 3 rho) at gamma = gamma_c (s = n: itself and the crowd weigh the same), and
rho for gamma > gamma_c (each token sees itself).
"""

from __future__ import annotations

import numpy as np

from sweep.analysis.theory.datasets import dataset, values, var
from sweep.errors import ConfigError


def output_cosine(n, rho, gamma) -> np.ndarray:
    """rho' of one layer at beta = gamma log n (module docstring). Broadcasts n, rho, gamma."""
    n, rho, gamma = (np.asarray(a, dtype=float) for a in (n, rho, gamma))
    if np.any(n < 2) or np.any(gamma < 0) or np.any(rho > 1) or np.any(rho * (n - 1) < -1):
        raise ConfigError("long-context: needs n >= 2, gamma >= 0 and -1/(n-1) <= rho <= 1")
    with np.errstate(over="ignore"):
        w = np.exp(-gamma * np.log(n) * (1.0 - rho))    # 1/s; 0 once s overflows
    a, gap = w * (n - 1.0), 1.0 - rho                    # the crowd's weight against the self
    top = rho + 2.0 * w * gap + 2.0 * a * rho + w * (a - w) * gap + a * a * rho
    bottom = 1.0 + 2.0 * a * rho + w * a * gap + a * a * rho
    return top / bottom


def long_context_limit(rho, gamma) -> np.ndarray:
    """The n -> infinity limit of output_cosine: 1, 4 rho / (1 + 3 rho) or rho as gamma is
    below, at (to 1e-12) or above gamma_c = 1 / (1 - rho). Broadcasts."""
    rho, gamma = np.asarray(rho, dtype=float), np.asarray(gamma, dtype=float)
    with np.errstate(divide="ignore"):
        gamma_c = 1.0 / (1.0 - rho)
    at = np.isclose(gamma, gamma_c, rtol=1e-12, atol=0.0)
    return np.where(at, 4.0 * rho / (1.0 + 3.0 * rho), np.where(gamma < gamma_c, 1.0, rho))


def long_context(ns, rhos, gammas):
    """output_cosine over (n, rho, gamma), with beta = gamma log n, the limit and gamma_c."""
    n = values("n", ns, low=2.0)
    rho = values("rho", rhos, low=-1.0)
    gamma = values("gamma", gammas)
    if np.any(n != np.round(n)):
        raise ConfigError(f"n: must be whole numbers, got {n[n != np.round(n)][0]:g}")
    out = output_cosine(n[:, None, None], rho[None, :, None], gamma[None, None, :])
    return dataset(
        "one attention layer on equiangular inputs at beta = gamma log n", "long-context",
        {"output_cosine": var(("n", "rho", "gamma"), out, "cosine between outputs"),
         "beta": var(("n", "gamma"), gamma[None, :] * np.log(n)[:, None],
                     "inverse temperature beta = gamma log n"),
         "limit": var(("rho", "gamma"), long_context_limit(rho[:, None], gamma[None, :]),
                      "limit of the output cosine as n -> infinity"),
         "gamma_c": var("rho", 1.0 / (1.0 - rho), "critical gamma_c = 1 / (1 - rho)")},
        {"n": var("n", n.astype(np.int64), "tokens n"),
         "rho": var("rho", rho, "cosine between inputs"),
         "gamma": var("gamma", gamma, "gamma = beta / log n")})
