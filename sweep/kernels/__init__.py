"""Numba kernels: arrays in, arrays out; nothing of configs, xarray or files.

codes (no Numba: names and integer codes), general/ (every model: attention, masks, noise,
integrators, observables, one job's time loop), rows (one small system, identity matrices,
in one serial call), blocked (one large system, BLAS on row tiles), and what the fast paths
share: gramobs (observables from a Gram matrix), expfast (a vectorising exp), sphere, summary.
Import the module you need; importing this package compiles nothing.
"""
