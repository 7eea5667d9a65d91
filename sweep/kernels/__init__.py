"""Numba kernels: arrays in, arrays out; nothing of configs, xarray or files.

codes (no Numba: names, integer codes and the results schema), cache (no Numba: where
compiled kernels are kept), general/ (every model: attention, masks, noise, integrators,
observables, one job's time loop), rows (one small system, identity matrices, in one serial
call), blocked (one large system, BLAS on row tiles), and what the fast paths share:
gramobs (observables from a Gram matrix), expfast (a vectorising exp), sphere, summary.
Import the module you need; importing this package compiles nothing, and points Numba at
the compile cache before any kernel module imports it.
"""

from sweep.kernels import cache

cache.use_default()
