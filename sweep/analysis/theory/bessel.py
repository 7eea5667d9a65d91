"""Modified Bessel functions of the first kind, in log space, NumPy only.

    I_nu(x) = sum_k (x/2)^(2k + nu) / (k! Gamma(k + nu + 1)),   x > 0, nu > -1.

Every term is positive, so the sum taken in log space (log-sum-exp) neither cancels nor
overflows: log I_nu(x) is accurate to a few ulps of its size for x up to ~1e4, and ratios
I_{nu+1} / I_nu are differences of logs (the Riccati equation of the ratio, used for Newton
steps, is R' = 1 - R^2 - (2 nu + 1) R / x). SciPy stays a test dependency only: the tests
compare every value here with scipy.special.ive.
"""

from __future__ import annotations

import math

import numpy as np

_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _terms(x: float) -> int:
    # the terms peak near k = x/2 with width ~sqrt(x); beyond 2x + 10 sqrt(x) + 60 the rest
    # is below 1e-30 of the sum whatever nu >= 0
    return int(2.0 * x + 10.0 * math.sqrt(x) + 60.0)


def log_iv(nu, x: float) -> np.ndarray:
    """log I_nu(x) for orders nu: [m] (each > -1) at one x > 0 -> [m]."""
    nu = np.atleast_1d(np.asarray(nu, dtype=float))
    k = np.arange(_terms(x), dtype=float)[:, None]                        # [term, 1]
    logs = ((2.0 * k + nu) * math.log(x / 2.0) - _lgamma(k + 1.0).astype(float)
            - _lgamma(k + nu + 1.0).astype(float))                          # [term, m]
    top = logs.max(axis=0)
    return top + np.log(np.exp(logs - top).sum(axis=0))


def iv_ratio(nu: float, x: float) -> float:
    """I_{nu+1}(x) / I_nu(x) for x > 0: increases from 0 (x -> 0) to 1 (x -> infinity)."""
    lo, hi = log_iv([nu, nu + 1.0], x)
    return math.exp(hi - lo)


def ratio_root(nu: float, level: float) -> float:
    """The x > 0 where I_{nu+1}(x) / I_nu(x) = level, 0 < level < 1 (the root is unique:
    the ratio increases). Bisection on a doubling bracket, then Newton on the Riccati slope."""
    lo, hi = 0.0, 1.0
    while iv_ratio(nu, hi) < level:
        lo, hi = hi, 2.0 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if iv_ratio(nu, mid) < level else (lo, mid)
        if hi - lo < 1e-6 * hi:
            break
    x = 0.5 * (lo + hi)
    for _ in range(4):  # quadratic convergence from a 1e-6 bracket: 4 steps reach rounding
        r = iv_ratio(nu, x)
        x -= (r - level) / (1.0 - r * r - (2.0 * nu + 1.0) * r / x)
    return x
