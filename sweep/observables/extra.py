"""The observables that are functions of the tokens x: [n, d] alone (a record with a
`kernel`, records.py), computed by every path at every save that computes everything.

`standalone(x, out)` writes each of them into its column: out[column] = kernel(x,
*parameters). It is assembled here, at import, from the records: one link per observable,
each a closure over its kernel, column and parameters that Numba inlines into its caller
(gramobs.observe_weighted, kernels.general.observables.observe, and `compute` for the blocked
path's Python), so a path's compiled save holds the calls as if written there and adding an
observable of x touches no path.
"""

import importlib

import numba

from sweep.numerics._jit import jit, jit_link
from sweep.observables.records import STANDALONE


@jit_link
def _nothing(x, out):
    pass


def _kernel(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _link(kernel, column: int, parameters: tuple, rest):
    @jit_link
    def link(x, out):
        out[column] = kernel(x, *parameters)
        rest(x, out)

    return link


def _assemble(records) -> numba.core.registry.CPUDispatcher:
    chain = _nothing
    for r in reversed(records):
        chain = _link(_kernel(r.kernel), r.column, tuple(r.parameters), chain)
    return chain


standalone = _assemble(STANDALONE)


@jit
def compute(x, out):
    """standalone(x, out), as one compiled call (for the blocked path's Python)."""
    standalone(x, out)
