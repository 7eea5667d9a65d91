"""The parameters of the velocity field, as one tuple Numba can type.

Variants are integer codes chosen in Python; kernels branch on them once per row, never
inside the loop over partners j, so one compiled kernel per dtype serves every model.
"""

from typing import NamedTuple

SOFTMAX = 0
UNNORMALIZED = 1

ATTENTION_CODES = {"softmax": SOFTMAX, "unnormalized": UNNORMALIZED}


class Dynamics(NamedTuple):
    """attention: one of the codes above; beta: inverse temperature (>= 0)."""

    attention: int
    beta: float


def dynamics(attention: str, beta: float) -> Dynamics:
    return Dynamics(ATTENTION_CODES[attention], float(beta))
