"""Names and integer codes shared by Python and the kernels: no Numba here, so configs,
plans and the results schema can use them without compiling anything.

Variants are chosen in Python and passed down as these codes; kernels branch on them once per
row, never inside the loop over partners.
"""

from __future__ import annotations

import math

from sweep.observables.records import (  # noqa: F401 - the schema's names, re-exported
    COLUMN,
    N_OBS,
    OBSERVABLES,
    RECORDS,
    RESOLVED,
    SAVE_ALL,
    SAVE_CLOSE,
    SAVE_COUNTS,
    SAVE_PAIRS,
    SCALAR_RECORDS,
    columns_at,
    save_level,
)

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
# (Symmetric) instead of one [TILE, n] tile per thread. NumPy backs large arrays with
# transparent huge pages (2 MiB) that span whole rows, so the whole matrix counts as resident
# although Symmetric writes only its upper half. From four tiles up only: with fewer, the two
# phases' tiles are too few and too uneven to share over threads, and Blocked is faster.
TILE = 256
SYMMETRIC_MAX_BYTES = 256 * 2**20
SYMMETRIC_MIN_N = 4 * TILE
# kernels/lanes.py: systems of 2 to LANES_MAX_D dimensions (model.d >= 2) run LANES to a block,
# one per SIMD lane (a block padded to the vector width: fewer systems cost what that many do);
# the runner makes batches of LANES_BATCH where there are enough (blocks of 16 took 1.8 times
# as long per system as blocks of 32 at (32, 8)), else of LANES_MIN (or all there are)
LANES, LANES_MIN, LANES_BATCH, LANES_MAX_D = 64, 8, 32, 3

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

# where the tokens live (model.space; kernels/general/integrators.py): on the unit sphere, or
# in R^d unnormalised and tracked as y = exp(-rate t) x (docs/models.md, "Euclidean space")
SPHERE = 0
EUCLIDEAN = 1
SPACE_CODES = {"sphere": SPHERE, "euclidean": EUCLIDEAN}


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


# The results schema: every variable a results file holds, as name: (long_name, units),
# from the records of sweep/observables/records.py. SERIES are the columns each integration
# records, in this order, over (axes..., time); SCALARS are per job, over the axes only.
SERIES = {r.name: (r.long_name, r.units) for r in RECORDS}
# what a layer model records beside SERIES, over (axes..., layer)
LAYER_SERIES = {
    "token_norm": ("mean Euclidean norm of the hidden states h_i (the observables use "
                   "h_i / |h_i|)", "1"),
}

# a job's status in a results file (`status`)
STATUS_OK, STATUS_NONFINITE, STATUS_FAILED, STATUS_MISSING = 0, 1, 2, -1
STATUS_MEANINGS = {STATUS_OK: "ok", STATUS_NONFINITE: "non_finite", STATUS_FAILED: "failed",
                   STATUS_MISSING: "missing"}
SCALARS = {r.name: (r.long_name, r.units) for r in SCALAR_RECORDS}

# where each variable can lie (a band drawn around a seed mean is clipped to it); "n": the
# token count of the run, "log n": its logarithm
RANGES = {r.name: r.range for r in RECORDS + SCALAR_RECORDS if r.range is not None}

# the long names of the coordinates of grid axes (other axes are named by their key)
TIME_NAME = "dimensionless time"
LAYER_NAME = "layer (0 = the input, l = after block l)"
AXIS_NAMES = {"beta": "inverse temperature beta", "d": "dimension d", "n": "number of tokens n",
              "heads": "number of heads", "head_beta": "inverse temperature of each head",
              "seed": "random seed", "noise": "diffusion constant D", "dt": "time step dt",
              "overlap": "initial pairwise cosine", "attention": "attention model",
              "qk": "score matrix Q^T K", "v": "value matrix V", "mask": "attention mask",
              "cluster_eps": "cluster threshold eps", "dtype": "floating-point type"}
