"""How often the mean-over-heads energy falls along multi-head softmax dynamics.

With symmetric Q_h^T K_h = V_h the unnormalized (USA) multi-head model is a gradient flow of
the mean of the heads' energies, so that energy never falls; under softmax each head divides
by its own Z_i^h and the radial shadow terms (arXiv 2605.04279) can make it fall. Prints, per
case, the save intervals with a fall, the runs with at least one, and the largest relative
fall. RK4 with dt = 0.01, so a fall is the dynamics, not the integrator.
"""

from __future__ import annotations

import numpy as np

from sweep.execution import states
from sweep.kernels.codes import METHOD_CODES, OBSERVABLES
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import dynamics

ENERGY = OBSERVABLES.index("energy")


def energy_series(model: dict, x0: np.ndarray, saves: int = 300) -> np.ndarray:
    obs = np.full((saves, len(OBSERVABLES)), np.nan)
    integrate(x0.copy(), dynamics(**model), METHOD_CODES["rk4"], 0.01, 2, 1e-3, obs,
              np.zeros((0,) + x0.shape), np.zeros(1, dtype=np.int64))
    return obs[:, ENERGY]


def case(kind: str, heads: int, matrices: bool, spread: bool, runs: int = 20,
         n: int = 12, d: int = 3) -> tuple[int, int, int, float]:
    falls = total = hit = 0
    worst = 0.0
    for seed in range(runs):
        rng = np.random.default_rng(1000 + seed)
        m = rng.standard_normal((heads, d, d)) / np.sqrt(d)
        m = (m + m.transpose(0, 2, 1)) / 2 if matrices else None
        betas = list(rng.uniform(0.5, 3.0, heads)) if spread else [1.5] * heads
        model = dict(attention=kind, beta=1.0, heads=heads, head_beta=betas, qk=m, v=m)
        e = energy_series(model, states.uniform(n, d, rng))
        fall = -np.diff(e) / np.abs(e[1:])
        falls += int((fall > 1e-12).sum())
        total += fall.size
        hit += int((fall > 1e-12).any())
        worst = max(worst, float(fall.max()))
    return falls, total, hit, worst


def main() -> None:
    print("attention     heads  Q^TK=V     betas   falls/intervals  runs hit  max rel fall")
    for kind in ("unnormalized", "softmax"):
        for heads, matrices, spread in [(1, True, False), (2, False, True), (2, True, False),
                                        (2, True, True), (4, True, True)]:
            falls, total, hit, worst = case(kind, heads, matrices, spread)
            print(f"{kind:13s} {heads:5d}  {'sym rand' if matrices else 'identity':9s}"
                  f"  {'spread' if spread else 'equal':6s}  {falls:5d}/{total:<9d}"
                  f"  {hit:3d}/20   {worst:.2e}")


if __name__ == "__main__":
    main()
