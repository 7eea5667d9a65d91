"""Brownian motion on the sphere, Euler-Maruyama with projection (docs/theory.md, "Dynamics"):

    x <- normalise(x + dt v + sqrt(2 D dt) P_x(xi)),  xi standard Gaussian in R^d.

The Gaussians come from a counter-based generator: normal number c of a job is a pure
function of (key, c), with c = (step, token, component). So the draws are reproducible per
job whatever thread, shard or resume history ran it, and no generator state is shared
between threads (NumPy's global state would be). The mixer is SplitMix64 (Steele, Lea,
Flood 2014), which passes BigCrush; two uniforms per normal via Box-Muller.
"""

import numpy as np

from sweep.kernels.general.attention import frozen
from sweep.kernels.sphere import project_row
from sweep.numerics._jit import jit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TWO_PI = 2.0 * np.pi


@jit
def splitmix(key, counter):
    """The SplitMix64 output for state key + (counter + 1) * golden (uint64 arithmetic)."""
    z = np.uint64(key) + (np.uint64(counter) + np.uint64(1)) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@jit
def uniform(key, counter):
    """A double in [0, 1) from the top 53 bits."""
    return float(splitmix(key, counter) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@jit
def normal(key, c):
    """Standard normal number c of the stream `key` (Box-Muller, 1 - u keeps log finite)."""
    r = np.sqrt(-2.0 * np.log(1.0 - uniform(key, 2 * c)))
    return r * np.cos(_TWO_PI * uniform(key, 2 * c + 1))


@jit
def add_noise(x, k, dyn, dt, tick, xi):
    """k[i] += sqrt(2 D / dt) P_{x_i}(xi_i), so that x + dt k is the Euler-Maruyama update.

    x, k: [n, d]; tick: the step number, which with (i, component) indexes the stream;
    xi: [d] float64 scratch.
    """
    n, d = x.shape
    scale = np.sqrt(2.0 * dyn.noise / dt)
    for i in range(n):
        if frozen(i, dyn):
            continue
        for c in range(d):
            xi[c] = normal(dyn.noise_key, (tick * n + i) * d + c)
        project_row(x[i], xi, 1.0)
        for c in range(d):
            k[i, c] += scale * xi[c]
