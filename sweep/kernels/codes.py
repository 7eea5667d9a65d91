"""Names and integer codes shared by Python and the kernels: no Numba here, so configs,
plans and the results schema can use them without compiling anything.

Variants are chosen in Python and passed down as these codes; kernels branch on them once per
row, never inside the loop over partners.
"""

from __future__ import annotations

import math

# integrators (kernels/general/integrators.py, rows.py, blocked.py; docs/integrators.md):
# euler x <- normalize(x + dt P_x v), layer x <- normalize(x + dt v), rk4 and heun on P_x v
EULER = 0
RK4 = 1
LAYER = 2
HEUN = 3
METHOD_CODES = {"euler": EULER, "rk4": RK4, "layer": LAYER, "heun": HEUN}
# per method: its stability interval on a real decay (sweep.execution.stability: the stable
# step is this over the relaxation rate; the layer step is stable for any), the velocities a
# step evaluates and the stage states it writes (sweep.execution.kernel: flops and memory)
STABILITY_INTERVAL = {"euler": 2.0, "rk4": 2.785, "layer": math.inf, "heun": 2.0}
EVALUATIONS = {"euler": 1, "rk4": 4, "layer": 1, "heun": 2}
STAGES_WRITTEN = {"euler": 1, "rk4": 5, "layer": 1, "heun": 3}

# the blocked fast path (blocked.py): rows per BLAS call, fixed so that results never depend
# on the thread count; and the sizes at which it keeps the whole n x n weight matrix
# (Symmetric: n = 5792 in float64, 8192 in float32) instead of one [TILE, n] tile per thread.
# NumPy backs large arrays with transparent huge pages (2 MiB) that span whole rows, so the
# whole matrix counts as resident although Symmetric writes only its upper half (measured:
# 546 MiB at n = 8192). From four tiles up only: with fewer, the two phases' tiles are too
# few and too uneven to share over threads (n = 512 on two threads: 1.38 ms a velocity
# against Blocked's 0.78).
TILE = 256
SYMMETRIC_MAX_BYTES = 256 * 2**20
SYMMETRIC_MIN_N = 4 * TILE
# kernels/lanes.py: systems of up to LANES_MAX_D dimensions run LANES to a block, one per SIMD
# lane (in a batch of at least LANES_MIN; fewer run one at a time, by the same arithmetic)
LANES, LANES_MIN, LANES_MAX_D = 64, 32, 8

# what an integration returns (drive.integrate and the fast paths alike)
OK = 0
NONFINITE = 1
STOPPED = 3

# attention models and masks (kernels/general/model.py)
SOFTMAX = 0
UNNORMALIZED = 1
RELU = 2
HARDMAX = 3

ATTENTION_CODES = {"softmax": SOFTMAX, "unnormalized": UNNORMALIZED, "relu": RELU,
                   "hardmax": HARDMAX}

DENSE = 0
CAUSAL = 1
WINDOW = 2
TOPK = 3
GROUPS = 4
LEADERS = 5

MASK_CODES = {"dense": DENSE, "causal": CAUSAL, "window": WINDOW, "topk": TOPK,
              "groups": GROUPS, "leaders": LEADERS}
PARAMETRIC_MASKS = ("window", "topk", "groups", "leaders")


def parse_mask(text: str) -> tuple[int, int]:
    """'dense' | 'causal' | 'window:W' | 'topk:K' | 'groups:G' | 'leaders:L' -> (code, param).

    ValueError (with a message fit for a config error) on anything else.
    """
    name, sep, param = str(text).partition(":")
    if name not in MASK_CODES:
        raise ValueError(f"{text!r} is not one of dense | causal | window:W | topk:K | "
                         "groups:G | leaders:L")
    if (name in PARAMETRIC_MASKS) != bool(sep):
        raise ValueError(f"{text!r}: {name} takes " + ("an integer, as in "
                         f"{name}:4" if name in PARAMETRIC_MASKS else "no parameter"))
    if not sep:
        return MASK_CODES[name], 0
    try:
        value = int(param)
    except ValueError:
        raise ValueError(f"{text!r}: {param!r} is not an integer") from None
    if value < (0 if name == "window" else 1):
        raise ValueError(f"{text!r}: the parameter must be >= {0 if name == 'window' else 1}")
    return MASK_CODES[name], value


# The results schema, declared once: every variable a results file holds, as
# name: (long_name, units). SERIES are the columns each integration records, in this order,
# over (axes..., time); SCALARS are per job, over the axes only.
SERIES = {
    "order_parameter": ("order parameter |(1/n) sum_i x_i|", "1"),
    "mean_cosine": ("mean pairwise cosine <x_i, x_j> over i != j", "1"),
    "min_cosine": ("minimum pairwise cosine over i != j", "1"),
    "clustered_fraction": ("fraction of pairs i != j with cosine > 1 - cluster_eps", "1"),
    "n_clusters": ("number of clusters (components of the cosine > 1 - eps graph)", "1"),
    "largest_cluster": ("size of the largest cluster as a fraction of n", "1"),
    "energy": ("interaction energy E_beta = sum_ij exp(beta <x_i,x_j>) / (2 beta n^2)", "1"),
    # in nats; not units = "nat", which UDUNITS reads as nano-atmospheres
    "attention_entropy": ("mean Shannon entropy of the attention rows, in nats", "1"),
    # resolved by cluster (kernels/groups.py): clusters as above; a group is one of >= 2 tokens
    "n_groups": ("number of clusters of at least 2 tokens (groups)", "1"),
    "singleton_fraction": ("fraction of tokens in no group (clusters of one token)", "1"),
    "overlap_gap": ("mean cosine over pairs within a group minus the largest mean cosine "
                    "between two groups (NaN with fewer than 2 groups)", "1"),
    "inter_attention": ("mean over tokens and heads of the attention weight on tokens "
                        "outside the token's cluster", "1"),
    "silhouette": ("mean silhouette of the tokens in groups, cosine distance 1 - <x_i, x_j>, "
                   "groups only (NaN with fewer than 2 groups)", "1"),
}
OBSERVABLES = tuple(SERIES)
# what a layer model records beside SERIES, over (axes..., layer)
LAYER_SERIES = {
    "token_norm": ("mean Euclidean norm of the hidden states h_i (the observables use "
                   "h_i / |h_i|)", "1"),
}
N_OBS = len(OBSERVABLES)
# How much a save of the lanes and rows paths computes (gramobs.observe_pairs): the order
# parameter and the clustered fraction (CLOSE), with the cosines (COUNTS), with the clusters'
# union-find too (PAIRS: all that the Gram matrix alone gives), or everything (ALL).
SAVE_CLOSE, SAVE_COUNTS, SAVE_PAIRS, SAVE_ALL = 0, 1, 2, 3


def save_level(columns: tuple[str, ...]) -> int:
    """The least a save must compute to record the series `columns`."""
    for level, covered in ((SAVE_CLOSE, (0, 3)), (SAVE_COUNTS, (0, 1, 2, 3)),
                           (SAVE_PAIRS, range(6))):
        if set(columns) <= {OBSERVABLES[k] for k in covered}:
            return level
    return SAVE_ALL
CLUSTERED = OBSERVABLES.index("clustered_fraction")
N_CLUSTERS = OBSERVABLES.index("n_clusters")
ENERGY, ENTROPY = OBSERVABLES.index("energy"), OBSERVABLES.index("attention_entropy")
# the cluster-resolved columns, in this order (groups.resolve fills them)
N_GROUPS, SINGLETONS, OVERLAP_GAP, INTER_ATTENTION, SILHOUETTE = (
    OBSERVABLES.index(k) for k in ("n_groups", "singleton_fraction", "overlap_gap",
                                   "inter_attention", "silhouette"))

# a job's status in a results file (`status`)
STATUS_OK, STATUS_NONFINITE, STATUS_FAILED, STATUS_MISSING = 0, 1, 2, -1
STATUS_MEANINGS = {STATUS_OK: "ok", STATUS_NONFINITE: "non_finite", STATUS_FAILED: "failed",
                   STATUS_MISSING: "missing"}
SCALARS = {
    "t_cluster": ("first recorded time with clustered_fraction >= 1/2 (NaN if never)", "1"),
    "max_clusters": ("maximum of n_clusters over saved times t > 0", "1"),
    "status": ("job status (flag_values, flag_meanings)", "1"),
    "wall_seconds": ("wall-clock time spent on the job", "s"),
}

# where each variable can lie (a band drawn around a seed mean is clipped to it); "n": the
# token count of the run, "log n": its logarithm
RANGES = {"order_parameter": (0.0, 1.0), "mean_cosine": (-1.0, 1.0), "min_cosine": (-1.0, 1.0),
          "clustered_fraction": (0.0, 1.0), "n_clusters": (1.0, "n"),
          "largest_cluster": (0.0, 1.0), "attention_entropy": (0.0, "log n"),
          "max_clusters": (1.0, "n"), "t_cluster": (0.0, None),
          "n_groups": (0.0, "n"), "singleton_fraction": (0.0, 1.0), "overlap_gap": (-2.0, 2.0),
          "inter_attention": (0.0, 1.0), "silhouette": (-1.0, 1.0)}

# the long names of the coordinates of grid axes (other axes are named by their key)
TIME_NAME = "dimensionless time"
LAYER_NAME = "layer (0 = the input, l = after block l)"
AXIS_NAMES = {"beta": "inverse temperature beta", "d": "dimension d", "n": "number of tokens n",
              "heads": "number of heads", "head_beta": "inverse temperature of each head",
              "seed": "random seed", "noise": "diffusion constant D", "dt": "time step dt",
              "overlap": "initial pairwise cosine", "attention": "attention model",
              "qk": "score matrix Q^T K", "v": "value matrix V", "mask": "attention mask",
              "cluster_eps": "cluster threshold eps", "dtype": "floating-point type"}
