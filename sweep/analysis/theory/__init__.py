"""What the papers predict, to compare sweeps with: NumPy only (SciPy checks it in tests).

- equiangular: the exact equiangular ODE (softmax, unnormalized, ReLU; several heads) and
  its (t, beta) boundary;
- noise: the noisy transition of the unnormalized model, kappa_c, Mun-Rosenzweig's K_# and
  beta*(d), above which the transition is discontinuous;
- modes: growth rates of the spherical-harmonic modes of the uniform state in any d;
- long_context: one attention layer on equiangular inputs at beta = gamma log n.
Each `sweep theory` command is one call of a function here that returns an xarray Dataset
(`equiangular`, `kappa_c_dataset`, `beta_star_dataset`, `modes`, `long_context`); the
functions under them return numbers and arrays. docs/theory.md states the equations.
"""

from sweep.analysis.theory.equiangular import (
    beta_grid,
    boundary_time,
    equiangular,
    rho_curve,
    time_grid,
)
from sweep.analysis.theory.long_context import long_context, long_context_limit, output_cosine
from sweep.analysis.theory.modes import fastest_mode, funk_hecke, growth_rates, modes
from sweep.analysis.theory.noise import (
    CONVENTION,
    beta_star,
    beta_star_dataset,
    k_sharp,
    kappa_c,
    kappa_c_dataset,
)

__all__ = [
    "CONVENTION", "beta_grid", "beta_star", "beta_star_dataset", "boundary_time", "equiangular",
    "fastest_mode", "funk_hecke", "growth_rates", "k_sharp", "kappa_c", "kappa_c_dataset",
    "long_context", "long_context_limit", "modes", "output_cosine", "rho_curve", "time_grid",
]
