"""Draw figures/trained-vs-random.png: simulations with identity, norm-matched Gaussian and
trained (all-MiniLM-L6-v2) attention matrices, beside the trained model's own layers.

    python figures/trained_vs_random.py SIMULATIONS.nc PROBE.nc OUT.png [NUMBERS.json]

SIMULATIONS.nc is `sweep run configs/trained-vs-random.yaml`; PROBE.nc is `sweep probe`.
The drawing is sweep.analysis.comparison.trained_vs_random.
"""

import sys

import xarray as xr

from sweep.analysis.comparison import trained_vs_random

if __name__ == "__main__":
    sim_path, probe_path, out = sys.argv[1:4]
    numbers = sys.argv[4] if len(sys.argv) > 4 else None
    with xr.open_dataset(sim_path) as sim, xr.open_dataset(probe_path) as probe:
        trained_vs_random(sim, probe, out, numbers)
