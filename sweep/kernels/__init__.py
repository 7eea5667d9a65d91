"""Numba kernels, the integrators, time loop and layouts: arrays in, arrays out; nothing of
configs, xarray or files.

codes (no Numba: names, integer codes and the results schema from sweep/observables'
records), general/ (every model: attention, masks, noise, integrators, the observables of
its attention weights, one job's time loop), rows (one small system, identity matrices, in one
serial call), lanes (many small systems, one per SIMD lane; lanestep its primitives), blocked
(one large system, BLAS on row tiles), and what the paths share: methods (each integrator
once), timeloop (the save/step/stop loop), sphere. The observables themselves are
sweep/observables', the primitives sweep/numerics'. Import the module you need; importing
this package compiles nothing.
"""
