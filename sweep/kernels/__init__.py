"""Numba kernels: sphere geometry, attention velocities, integrators, observables.

Knows nothing of configs, xarray or files: arrays in, arrays out.
"""

from sweep.kernels.drive import NONFINITE, OK, STOPPED, integrate
from sweep.kernels.integrators import METHOD_CODES
from sweep.kernels.model import ATTENTION_CODES, Dynamics, dynamics
from sweep.kernels.observables import NAMES as OBSERVABLES

__all__ = [
    "ATTENTION_CODES",
    "METHOD_CODES",
    "NONFINITE",
    "OBSERVABLES",
    "OK",
    "STOPPED",
    "Dynamics",
    "dynamics",
    "integrate",
]
