"""The observables that are functions of the tokens x: [n, d] alone (a record with a
`kernel`, records.py), computed by every path at every save that computes everything.

`standalone(x, out)` writes each of them into its column: out[column] = kernel(x,
*parameters). It is assembled here, at import, from the records: one function whose body is
written from them, a line per observable in the records' order with its column and
parameters as literals, compiled into the function that calls it (gramobs.observe_weighted,
kernels.general.observables.observe), so a path's compiled save holds the calls as if written
there and adding an observable of x touches no path. (One function, not a chain of closures,
one per record: each closure was a compilation of its own, 1.7 s of a cold start for five.)
The blocked path, which saves from Python, calls the same kernels one by one instead
(`compute`), side by side on its threads.

It is cached like any kernel (compiled once, then loaded: by a variant's process from what a
child compiled, execution/compiling.py), as a function of this file named after a hash of its
generated body and of the kernels it calls: a changed record set is another function, never
the cached one of the records before. Not inlined, so each observable's own kernel keeps its
own options whatever its caller's fastmath.
"""

import hashlib
import importlib

import numba
import numpy as np

from sweep.numerics._jit import jit
from sweep.observables.records import STANDALONE


def _kernel(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


# (column, kernel, parameters) of each record with a kernel, in the records' order
CALLS = tuple((r.column, _kernel(r.kernel), r.parameters) for r in STANDALONE)


def _assemble(calls) -> numba.core.registry.CPUDispatcher:
    names = {"__name__": __name__}
    names.update((f"kernel{k}", kernel) for k, (_, kernel, _) in enumerate(calls))
    lines = [
        f"    out[{column}] = kernel{k}(x{''.join(f', {p!r}' for p in parameters)})"
        for k, (column, _, parameters) in enumerate(calls)
    ]
    body = "\n".join(lines or ["    pass"]) + "\n"
    kernels = "\n".join(f"{kernel.__module__}:{kernel.__name__}" for _, kernel, _ in calls)
    name = "standalone_" + hashlib.sha256((body + kernels).encode()).hexdigest()[:12]
    exec(compile(f"def {name}(x, out):\n{body}", __file__, "exec"), names)  # noqa: S102
    return jit(names[name])


standalone = _assemble(CALLS)


def compute(x, out, map=map) -> None:
    """What standalone(x, out) writes, each observable its own compiled call made by `map`,
    for the blocked path's Python: its pool's map runs them side by side (they release the
    GIL; each writes only its own column, so the numbers are standalone's whatever the
    threads)."""
    def one(call):
        column, kernel, parameters = call
        out[column] = kernel(x, *parameters)

    list(map(one, CALLS))


def warm(dtype: str) -> None:
    """Compile (or load) standalone's kernels for tokens of `dtype`, as every path's save
    calls them: x a C-contiguous [n, d] array (execution/compiling.py has them compiled
    apart)."""
    x = np.repeat(np.eye(2, dtype=np.dtype(dtype)), 2, axis=0)
    standalone(x, np.zeros(1 + max((column for column, _, _ in CALLS), default=0)))
