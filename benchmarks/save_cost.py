"""What one save (every observable at a recorded time) costs on the fast paths, one thread.

    python benchmarks/save_cost.py [--repeats R] PATH:N:D:STATE ...
    PATH: rows | blocked | symmetric;  STATE: scattered (a uniform start: no groups) |
    clustered (8 tight clusters and 1/8 of the tokens alone: the resolved pass runs)

Times the save itself, as the time loops call it (rows: the Gram matrix, its weights and
gramobs.observe_weighted, in one compiled loop; blocked: Blocked/Symmetric.observe), in R
batches; prints one JSON line per case with the least and the median microseconds per save
over the batches (the least is the one a loaded machine disturbed least). Runs against any
version of the kernels since their split into rows.py and gramobs.py, so two checkouts can
be timed in turn.
"""

import argparse
import inspect
import json
import statistics
import time

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from sweep.execution.states import uniform
from sweep.kernels import blocked, gramobs, rows
from sweep.kernels.codes import OBSERVABLES

RESOLVED = "grp" in inspect.signature(gramobs.observe_weighted.py_func).parameters


def start(n, d, state, rng):
    x = uniform(n, d, rng)
    if state == "clustered":
        alone = n // 8
        x[alone:] = uniform(8, d, rng)[rng.integers(0, 8, n - alone)]
        x[alone:] += 1e-5 * rng.standard_normal((n - alone, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


if RESOLVED:
    from sweep.observables.groups import groups_scratch

    @numba.njit
    def observe_rows(x, g, e, beta, eps, out, table, acc, extra):
        gramobs.observe_weighted(x, g, e, beta, 1.0, eps, out, table, acc, *extra)
else:
    @numba.njit
    def observe_rows(x, g, e, beta, eps, out, table, acc, extra):
        gramobs.observe_weighted(x, g, e, beta, 1.0, eps, out, table, acc)


@numba.njit
def rows_saves(x, xt, g, e, beta, eps, out, table, acc, extra, times):
    for _ in range(times):
        rows.gram(xt, g, 1.0, 0.0)
        rows.weights(g, e, beta, 1.0)
        observe_rows(x, g, e, beta, eps, out, table, acc, extra)


def rows_batch(x, times):
    n, d = x.shape
    extra = (np.empty(n, dtype=np.int64), groups_scratch(n, d)) if RESOLVED else ()
    args = (x, np.ascontiguousarray(x.T), np.empty((n, n)), np.empty((n, n)), 4.0, 1e-3,
            np.empty(len(OBSERVABLES)), np.empty((n, 6 if RESOLVED else 4)), np.empty((4, n)),
            extra)
    rows_saves(*args, 1)
    t0 = time.perf_counter()
    rows_saves(*args, times)
    return time.perf_counter() - t0


def blocked_batch(x, times, symmetric):
    work = (blocked.Symmetric if symmetric else blocked.Blocked)(x, 4.0, True)
    out = np.empty(len(OBSERVABLES))
    work.observe(x, 1e-3, out)
    t0 = time.perf_counter()
    for _ in range(times):
        work.observe(x, 1e-3, out)
    return time.perf_counter() - t0


def save_cost(path, n, d, state, repeats):
    x = start(n, d, state, np.random.default_rng(0))
    times = max(1, int(2e7 / (n * n * (d + 50))))
    batch = (lambda: rows_batch(x, times)) if path == "rows" else (
        lambda: blocked_batch(x, times, path == "symmetric"))
    per = [batch() / times * 1e6 for _ in range(repeats)]
    return {"path": path, "n": n, "d": d, "state": state, "least_us": round(min(per), 2),
            "median_us": round(statistics.median(per), 2), "saves": times * repeats}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    with threadpool_limits(1, user_api="blas"):
        for case in args.cases:
            path, n, d, state = case.split(":")
            print(json.dumps(save_cost(path, int(n), int(d), state, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
