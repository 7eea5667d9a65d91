"""What every compiled module of sweep shares: _jit (Numba's options, set in one place), expfast
(a vectorising exp), simd (four float64 lanes as one Numba value) and cache (where compiled
kernels are kept: no Numba). Importing this package points Numba at the compile cache before
any module here imports Numba.
"""

from sweep.numerics import cache

cache.use_default()
