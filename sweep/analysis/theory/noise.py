"""The noisy transition of the unnormalized (USA) model: kappa_c, K_# and beta*(d).

Convention (sweep's, the one the kernels integrate; Rigollet arXiv 2512.01868):
    dX_i = P_{X_i}(v_i) dt + sqrt(2 D) dB_i,  D = 1/kappa,
i.e. the Fokker-Planck equation d_t rho = D Lap rho - div(rho P v[rho]), so D is the
`model.noise` of a config. The uniform state loses stability (its degree-1 mode grows) at
    kappa_c(beta, d) = beta / E_sigma[t e^{beta t}],  t = <x, e_1>, x uniform on S^{d-1},
with E_sigma[t e^{beta t}] = Gamma(d/2) (2/beta)^{d/2-1} I_{d/2}(beta): kappa_c = d at
beta = 0 and beta / I_1(beta) on the circle.

Mun and Rosenzweig (arXiv 2606.05140) state the same threshold as
    K_#^(d)(beta) = beta^{d/2} / (2^{d/2} Gamma(d/2) I_{d/2}(beta)) = kappa_c / 2:
their coupling K weighs the same interaction against a diffusion 1/(2K), ours against
D = 1/kappa: a time-scale convention (one unit of their diffusion time is two of ours), so
the same physical state has kappa = 2K. sweep keeps its own because D_c = 1/kappa_c is then
directly the `model.noise` at which a sweep's uniform start stops staying uniform.

They also prove the transition continuous for beta <= beta*(d), the root of
I_{d/2+1}(beta) / I_{d/2}(beta) = 1/d, and discontinuous above, where the true transition
comes before kappa_c (the uniform state is metastable: hysteresis between uniform and
clustered starts; configs/hysteresis.yaml).
"""

from __future__ import annotations

import math

import numpy as np

from sweep.analysis.theory.bessel import log_iv, ratio_root
from sweep.analysis.theory.datasets import dataset, values, var
from sweep.errors import ConfigError

CONVENTION = ("dX = P_X(v) dt + sqrt(2 D) dB with D = 1/kappa; Mun-Rosenzweig's "
              "K_# = kappa_c / 2 (their coupling K is kappa / 2: a time-scale convention)")


# where the log-space Bessel series is accurate (sweep/analysis/theory/bessel.py) and cheap
MAX_D, MAX_BETA = 1e6, 1e4


def _check(beta: float, d: float) -> None:
    if not 2 <= d <= MAX_D:
        raise ConfigError(f"d: must be in [2, {MAX_D:g}], got {d:g}")
    if not 0 <= beta <= MAX_BETA:
        raise ConfigError(f"beta: must be in [0, {MAX_BETA:g}] (where the Bessel series "
                          f"is accurate), got {beta:g}")


def _finite(log_value, beta: float, d: float) -> float:
    """exp(log_value()), or a ConfigError where float64 cannot hold a step of it."""
    try:
        value = math.exp(log_value())
    except (OverflowError, ValueError):
        value = math.nan
    if not 0 < value < math.inf:
        raise ConfigError(f"d, beta: at d = {d:g}, beta = {beta:g} the threshold is past "
                          "what float64 holds (it overflows or underflows); give smaller values")
    return value


def _log_i_half_d(beta: float, d: float) -> float:
    return float(log_iv(d / 2.0, beta)[0])


def kappa_c(beta: float, d: float) -> float:
    """kappa_c(beta, d) = beta / E_sigma[t e^{beta t}] in sweep's convention (d at beta = 0)."""
    _check(beta, d)
    if beta == 0:
        return float(d)
    return _finite(lambda: math.log(beta) - math.lgamma(d / 2.0)
                   - (d / 2.0 - 1.0) * math.log(2.0 / beta) - _log_i_half_d(beta, d), beta, d)


def k_sharp(beta: float, d: float) -> float:
    """Mun-Rosenzweig's K_#^(d)(beta) = beta^{d/2} / (2^{d/2} Gamma(d/2) I_{d/2}(beta)), in
    their convention (= kappa_c / 2; d / 2 at beta = 0)."""
    _check(beta, d)
    if beta == 0:
        return d / 2.0
    h = d / 2.0
    return _finite(lambda: h * math.log(beta / 2.0) - math.lgamma(h) - _log_i_half_d(beta, d),
                   beta, d)


def beta_star(d: float) -> float:
    """beta*(d): the root of I_{d/2+1}(beta) / I_{d/2}(beta) = 1/d. Above it the noisy
    transition is discontinuous (Mun and Rosenzweig, arXiv 2606.05140). Decreases from
    2.4469 (d = 2) toward 1 as d grows."""
    _check(0.0, d)
    return ratio_root(d / 2.0, 1.0 / d)


def kappa_c_dataset(dims, betas):
    """kappa_c, D_c = 1 / kappa_c, Mun-Rosenzweig's K_# and the kind of transition over
    (d, beta); beta*(d) over d."""
    d = values("d", dims, low=2.0)
    beta = values("beta", betas)
    k = np.array([[kappa_c(b, dd) for b in beta] for dd in d])
    sharp = np.array([[k_sharp(b, dd) for b in beta] for dd in d])
    star = np.array([beta_star(dd) for dd in d])
    return dataset(
        "noise threshold of the unnormalized model", "kappa-c",
        {"kappa_c": var(("d", "beta"), k, "critical coupling kappa_c (D = 1/kappa)"),
         "noise_c": var(("d", "beta"), 1.0 / k, "critical noise D_c = 1/kappa_c"),
         "k_sharp": var(("d", "beta"), sharp, "Mun-Rosenzweig threshold K_# = kappa_c / 2"),
         "discontinuous": var(("d", "beta"), (beta[None, :] > star[:, None]).astype(np.int8),
                              "1 where beta > beta*(d): the transition is first order"),
         "beta_star": var("d", star, "beta*(d): I_{d/2+1}/I_{d/2} = 1/d")},
        {"d": var("d", d, "dimension d"), "beta": var("beta", beta, "inverse temperature beta")},
        convention=CONVENTION)


def beta_star_dataset(dims):
    """beta*(d) over d, with kappa_c and D_c there (where the transition turns first order)."""
    d = values("d", dims, low=2.0)
    star = np.array([beta_star(dd) for dd in d])
    k = np.array([kappa_c(b, dd) for b, dd in zip(star, d)])
    return dataset(
        "beta above which the noisy transition is discontinuous", "beta-star",
        {"beta_star": var("d", star, "beta*(d): I_{d/2+1}/I_{d/2} = 1/d"),
         "kappa_c": var("d", k, "kappa_c at beta*(d)"),
         "noise_c": var("d", 1.0 / k, "D_c = 1/kappa_c at beta*(d)")},
        {"d": var("d", d, "dimension d")}, convention=CONVENTION)
