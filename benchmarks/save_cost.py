"""What one save costs on the fast paths for one system, at a save level, with a velocity for
scale.

    python benchmarks/save_cost.py [--repeats R] [--threads T] [--dtype float32]
        PATH:N:D:STATE[:LEVEL] ...
    PATH: rows | blocked | symmetric;  STATE: scattered (a uniform start: no groups) |
    clustered (8 tight clusters and 1/8 of the tokens alone: the resolved pass runs);
    LEVEL: all (default) | pairs | counts | close (codes.save_level: what output.observables
    asks a save for; rows: all only); --dtype: the state's (blocked only)

Times the save as the time loops call it (rows: the Gram matrix, its weights and
gramobs.observe_weighted in one compiled loop, one thread; blocked: Blocked/Symmetric.observe
on T threads, BLAS on one each, as the runner runs a lone large job), R batches; prints one
JSON line per case with the least and the median microseconds per save over the batches (the
least is the one a loaded machine disturbed least), and a velocity's (blocked only).
"""

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from sweep.execution.states import uniform
from sweep.kernels import blocked, rows
from sweep.kernels.codes import OBSERVABLES, SAVE_ALL, SAVE_CLOSE, SAVE_COUNTS, SAVE_PAIRS
from sweep.observables import gramobs
from sweep.observables.groups import groups_scratch

LEVELS = {"all": SAVE_ALL, "pairs": SAVE_PAIRS, "counts": SAVE_COUNTS, "close": SAVE_CLOSE}
BETA, EPS = 4.0, 1e-3


def start(n, d, state, rng):
    x = uniform(n, d, rng)
    if state == "clustered":
        alone = n // 8
        x[alone:] = uniform(8, d, rng)[rng.integers(0, 8, n - alone)]
        x[alone:] += 1e-5 * rng.standard_normal((n - alone, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@numba.njit
def rows_saves(x, xt, g, e, out, table, acc, parent, grp, times):
    for _ in range(times):
        rows.gram(xt, g, 1.0, 0.0)
        rows.weights(g, e, BETA, 1.0)
        gramobs.observe_weighted(x, g, e, BETA, 1.0, EPS, out, table, acc, parent, grp)


def rows_batch(x, times):
    n, d = x.shape
    args = (x, np.ascontiguousarray(x.T), np.empty((n, n)), np.empty((n, n)),
            np.empty(len(OBSERVABLES)), np.empty((n, 6)), np.empty((4, n)),
            np.empty(n, dtype=np.int64), groups_scratch(n, d))
    rows_saves(*args, 1)
    t0 = time.perf_counter()
    rows_saves(*args, times)
    return time.perf_counter() - t0


def blocked_batches(x, times, symmetric, level, threads, repeats):
    """(seconds of `times` saves, seconds of `times` velocities), `repeats` times each."""
    with ThreadPoolExecutor(threads) if threads > 1 else nullcontext() as pool:
        work = (blocked.Symmetric if symmetric else blocked.Blocked)(x, BETA, True, pool,
                                                                       threads)
        out, v = np.empty(len(OBSERVABLES)), np.empty_like(x)
        save = lambda: work.observe(x, EPS, out, level=level)  # noqa: E731
        velocity = lambda: work.velocity(x, v)  # noqa: E731
        return [[_timed(fn, times) for _ in range(repeats)] for fn in (save, velocity)]


def _timed(fn, times):
    fn()
    t0 = time.perf_counter()
    for _ in range(times):
        fn()
    return time.perf_counter() - t0


def save_cost(case, repeats, threads, dtype="float64"):
    path, n, d, state, *level = case.split(":")
    n, d, level = int(n), int(d), level[0] if level else "all"
    x = start(n, d, state, np.random.default_rng(0)).astype(dtype)
    times = max(1, int(2e7 / (n * n * (d + 50))))
    out = {"path": path, "n": n, "d": d, "state": state, "level": level, "dtype": dtype}
    if path == "rows":
        if level != "all" or dtype != "float64":
            raise SystemExit(f"{case}: the rows save is timed at level all in float64 only")
        per = [rows_batch(x, times) / times * 1e6 for _ in range(repeats)]
        return {**out, "threads": 1, **_us("", per), "saves": times * repeats}
    saves, velocities = blocked_batches(x, times, path == "symmetric", LEVELS[level], threads,
                                        repeats)
    return {**out, "threads": threads, **_us("", [s / times * 1e6 for s in saves]),
            **_us("velocity_", [s / times * 1e6 for s in velocities]), "saves": times * repeats}


def _us(prefix, per):
    return {f"{prefix}least_us": round(min(per), 2),
            f"{prefix}median_us": round(statistics.median(per), 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    args = parser.parse_args()
    with threadpool_limits(1, user_api="blas"):
        for case in args.cases:
            print(json.dumps(save_cost(case, args.repeats, args.threads, args.dtype)),
                  flush=True)


if __name__ == "__main__":
    main()
