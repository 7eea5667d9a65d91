"""Names and integer codes shared by Python and the kernels: no Numba here, so configs,
plans and the results schema can use them without compiling anything.

Variants are chosen in Python and passed down as these codes; kernels branch on them once per
row, never inside the loop over partners.
"""

from __future__ import annotations

# integrators (kernels/general/integrators.py, rows.py, blocked.py)
EULER = 0
RK4 = 1
METHOD_CODES = {"euler": EULER, "rk4": RK4}

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


# columns of the observables every integration records
OBSERVABLES = (
    "order_parameter",
    "mean_cosine",
    "min_cosine",
    "clustered_fraction",
    "n_clusters",
    "largest_cluster",
    "energy",
    "attention_entropy",
)
N_OBS = len(OBSERVABLES)
CLUSTERED = OBSERVABLES.index("clustered_fraction")
N_CLUSTERS = OBSERVABLES.index("n_clusters")
