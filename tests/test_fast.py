"""The fast kernels (expfast; fast: serial rows; blocked: BLAS products) against the NumPy
reference, and the choice between them (sweep.execution.kernel)."""

import os
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import reference as ref
from helpers import allocations, assert_matches_reference
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.execution import kernel as plans
from sweep.execution import runner, simulate
from sweep.execution.states import uniform
from sweep.kernels import blocked, methods
from sweep.kernels.blocked import TILE, Blocked, Symmetric, integrate_blocked
from sweep.kernels.codes import COLUMN as C
from sweep.kernels.codes import METHOD_CODES, OBSERVABLES, RECORDS
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import dynamics
from sweep.kernels.rows import integrate_rows
from sweep.kernels.sphere import add_scaled, axpy
from sweep.numerics._jit import jit_fast, jit_fma
from sweep.numerics.expfast import exp1, exp_inplace, expv_inplace, weight
from sweep.observables.records import SAVE_CLOSE, SAVE_COUNTS, SAVE_PAIRS
from sweep.storage.store import Store

# (9, 12) and (12, 9): the four-row Gram blocks from d = 8, with an overlapping last block,
# odd d; (3, 9): fewer tokens than a block
PATHS = ["rows", "blocked", "symmetric"]
CASES = [(7, 3, 0.0), (16, 4, 1.5), (9, 12, 8.0), (5, 2, 30.0), (12, 9, 4.0), (3, 9, 2.0)]
METHODS = list(METHOD_CODES)


def run(path, x0, kind="softmax", beta=1.0, method="euler", dt=0.05, stride=3, n_saves=4,
        eps=0.05, dtype=np.float64, trajectory=False, **threads):
    """(status, observables, final x, traj) from one fast path."""
    x = np.array(x0, dtype=dtype)
    obs = np.full((n_saves, len(OBSERVABLES)), np.nan)
    traj = np.zeros((n_saves if trajectory else 0,) + x.shape, dtype=dtype)
    status, _ = kernel(path)(x, float(beta), kind == "softmax", METHOD_CODES[method], dt, stride,
                             eps, obs, traj, np.zeros(1, dtype=np.int64), **threads)
    return status, obs, x, traj


def kernel(path):
    """rows; blocked: tile by tile; symmetric: blocked keeping the upper half of W."""
    if path == "rows":
        return integrate_rows
    return lambda *args, **kw: integrate_blocked(*args, **kw, symmetric=path == "symmetric")


@jit_fast
def exp_in_reassociating_loop(a):
    """exp1 inlined into a loop compiled with reassociation (as fast.py and blocked.py do),
    with a sum that needs it to vectorise."""
    total = 0.0
    for j in range(a.shape[0]):
        a[j] = exp1(a[j])
        total += a[j]
    return total


@pytest.mark.parametrize("apply", [exp_inplace, exp_in_reassociating_loop])
def test_exp_matches_numpy_to_two_ulp(apply):
    # inside a reassociating caller exp1 keeps its own flags: were (y log2e + ROUND) - ROUND
    # folded to y log2e, k would not be an integer and the results would be far off
    a = np.concatenate([np.linspace(-700, 708, 200_001), [0.0, -1e-300, 1e-17, np.log(2)]])
    got = a.copy()
    apply(got)
    want = np.exp(a)
    assert np.all(np.abs(got - want) <= 2 * np.spacing(want))


def test_vector_exp_gives_the_bits_of_exp1():
    """expfast.expv (simd.py's f64xn, WIDTH lanes) against exp1, over the clamped range and
    beyond it, the softmax weights' range, and NaN and the infinities."""
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.uniform(-760, 720, 200_000), rng.uniform(-20, 0, 200_000),
                        [np.nan, np.inf, -np.inf, 0.0, -0.0, 708.0, -700.0, 1e-300]])
    want, got = a.copy(), a.copy()
    exp_inplace(want)
    expv_inplace(got)
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def test_exp_clamps_below_to_a_negligible_weight():
    got = np.array([-750.0, -1e4])
    exp_inplace(got)
    assert np.all((got > 0) & (got < 1e-300))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_add_scaled_is_axpy_in_place_to_the_bit(dtype):
    rng = np.random.default_rng(8)
    x, y = (rng.standard_normal((300, 7)).astype(dtype) for _ in range(2))
    want, got = np.empty_like(x), x.copy()
    axpy(want, x, 0.05, y)
    add_scaled(got, 0.05, y)
    np.testing.assert_array_equal(got, want)


@jit_fma
def weights_of(g, beta, c, out):
    """out[j] = weight(g[j], beta, c), as blocked.exp_block calls it."""
    for j in range(g.shape[0]):
        out[j] = weight(g[j], beta, c)


def test_a_weight_is_exp1_in_float64_and_within_one_float32_ulp_in_float32():
    """expfast.weight: the bits of exp1(beta (g - c)) for a float64 g; for a float32 g, exp1f
    of the float32 argument, within one ulp of float32 of the exact exponential of that
    argument, clamped below to a negligible positive weight, NaN kept (a blow-up)."""
    rng = np.random.default_rng(4)
    g = np.concatenate([rng.uniform(-1, 1, 100_000), [1.0, -1.0, 0.0]])
    got, want = np.empty_like(g), 7.5 * (g - 1.0)
    weights_of(g, 7.5, 1.0, got)
    exp_inplace(want)
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
    a = np.concatenate([np.linspace(-86, 88, 400_001), rng.uniform(-20, 0, 100_000),
                        [0.0, np.log(2)]]).astype(np.float32)
    got32 = np.empty_like(a)
    weights_of(a, 1.0, 0.0, got32)
    exact = np.exp(a.astype(np.float64))
    assert np.all(np.abs(got32 - exact) <= np.spacing(exact.astype(np.float32)))
    edge = np.array([-100.0, -1e4, np.nan, 1.0], dtype=np.float32)
    weights_of(edge, 1.0, 0.0, out := np.empty_like(edge))
    assert np.all((out[:2] > 0) & (out[:2] < 1e-37)) and np.isnan(out[2])
    assert out[3] == np.float32(np.e)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["softmax", "unnormalized"])
@pytest.mark.parametrize("n,d,beta", CASES)
def test_fast_paths_match_reference(path, kind, method, n, d, beta):
    x0 = uniform(n, d, np.random.default_rng(n + d))
    dt = 0.05 if kind == "softmax" else 0.05 * np.exp(-beta)
    status, obs, x, _ = run(path, x0, kind, beta, method, dt)
    want_obs, want_x = ref.trajectory(x0, kind, beta, method, dt, 3, 4, 0.05)
    assert status == 0
    assert_matches_reference(obs, x, want_obs, want_x)


@pytest.mark.parametrize("path", ["blocked", "symmetric"])
@pytest.mark.parametrize("method", METHODS)
def test_unnormalized_weights_count_every_token_not_the_tile(path, method):
    # 1/n with n the system's tokens: two row tiles (256 + 44), each row scaled alike
    x0 = uniform(TILE + 44, 5, np.random.default_rng(9))
    dt = 0.05 * np.exp(-2.0)
    with threadpool_limits(1, user_api="blas"):
        status, obs, x, _ = run(path, x0, "unnormalized", 2.0, method, dt)
    want_obs, want_x = ref.trajectory(x0, "unnormalized", 2.0, method, dt, 3, 4, 0.05)
    assert status == 0
    assert_matches_reference(obs, x, want_obs, want_x)


@pytest.mark.parametrize("path", ["blocked", "symmetric"])
@pytest.mark.parametrize("method", ["rk4", "layer"])
def test_blocked_does_not_depend_on_threads(path, method):
    x0 = uniform(300, 24, np.random.default_rng(1))  # two row tiles: 256 + 44
    kw = dict(beta=3.0, method=method, stride=2, n_saves=2)
    with threadpool_limits(1, user_api="blas"):
        want = run(path, x0, **kw)
        got = run(path, x0, **kw, threads=3)
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("path", ["blocked", "symmetric"])
def test_blocked_clusters_span_tiles_and_threads(path):
    # four tight clusters shuffled over three row tiles: each thread's union-find forest sees
    # a share of the close pairs, and the merged forest must give the reference's clusters
    rng = np.random.default_rng(5)
    x0 = uniform(4, 3, rng)[rng.integers(0, 4, 600)] + 1e-3 * rng.standard_normal((600, 3))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    kw = dict(beta=1.0, stride=2, n_saves=2)
    with threadpool_limits(1, user_api="blas"):
        _, obs, x, _ = run(path, x0, **kw)
        got = run(path, x0, **kw, threads=3)
    np.testing.assert_array_equal(got[1], obs)
    np.testing.assert_array_equal(got[2], x)
    want_obs, want_x = ref.trajectory(x0, "softmax", 1.0, "euler", 0.05, 2, 2, 0.05)
    assert_matches_reference(obs, x, want_obs, want_x)
    assert obs[0, OBSERVABLES.index("n_clusters")] == 4


@pytest.mark.parametrize("path", ["blocked", "symmetric"])
@pytest.mark.parametrize("level", [SAVE_CLOSE, SAVE_COUNTS, SAVE_PAIRS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_blocked_save_below_save_all_keeps_the_full_saves_bits(path, level, dtype):
    """The columns up to the level are a full save's, bit for bit, the others NaN, and the
    steps (after saves that leave their weights for them: SAVE_CLOSE's own count leaves
    exp_block's) are the same."""
    rng = np.random.default_rng(6)
    x0 = uniform(4, 5, rng)[rng.integers(0, 4, 300)] + 1e-3 * rng.standard_normal((300, 5))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    kw = dict(beta=2.0, stride=2, n_saves=3, threads=2, dtype=dtype)
    with threadpool_limits(1, user_api="blas"):
        _, full, x, _ = run(path, x0, **kw)
        _, part, y, _ = run(path, x0, **kw, level=level)
    np.testing.assert_array_equal(y, x)
    kept = [r.column for r in RECORDS if r.level <= level]
    np.testing.assert_array_equal(part[:, kept], full[:, kept])
    assert np.isnan(np.delete(part, kept, axis=1)).all()
    assert not np.isnan(full).any() and full[0, C.clustered_fraction] > 0


def test_simulate_on_the_blocked_path_computes_to_the_columns_save_level(monkeypatch):
    """output.observables reaches the blocked path: a job recording the Gram matrix's columns
    skips the rest of a save (whose kernels are not called) and gets a full run's bits."""
    monkeypatch.setattr(plans, "BLOCKED_MIN_N", 8)
    job = jobs()[0]
    assert strategy(job) == "blocked"
    full = simulate.simulate(job, "final")
    calls = []
    monkeypatch.setattr(blocked, "compute", lambda *a: calls.append(a))
    columns = ("order_parameter", "clustered_fraction", "n_clusters")
    part = simulate.simulate(job, "final", columns=columns)
    assert calls == []
    np.testing.assert_array_equal(part.positions, full.positions)
    np.testing.assert_array_equal(part.observables,
                                  full.observables[:, [OBSERVABLES.index(c) for c in columns]])


def blocked_bytes(n, threads):
    work = Blocked(uniform(n, 4, np.random.default_rng(0)), 1.0, True, threads=threads)
    held = [a for v in vars(work).values() for a in (v if isinstance(v, tuple) else [v])]
    return sum(a.nbytes for a in held if isinstance(a, np.ndarray))


def test_blocked_scratch_is_linear_in_n_and_counted_by_job_bytes(monkeypatch):
    # a [TILE, n] tile of the Gram matrix per thread, never n x n (16x from n = 1000 to 4000)
    monkeypatch.setattr(plans, "SYMMETRIC_MAX_BYTES", 0)  # as a system too big for Symmetric
    small, large = blocked_bytes(1000, 1), blocked_bytes(4000, 1)
    assert large == pytest.approx(4 * small, rel=0.01)
    assert blocked_bytes(4000, 3) - large == pytest.approx(2 * TILE * 4000 * 8, rel=0.02)
    (job,) = jobs([1.0], n=4000, d=4)
    assert plans.kernel_plan(job) == plans.KernelPlan(plans.BLOCKED, "float64", symmetric=False)
    assert large <= plans.job_bytes(job) < 1.1 * large


def test_symmetric_computes_only_the_upper_tile_blocks():
    # half the Gram products and exponentials: nothing left of the diagonal blocks is written
    n = plans.SYMMETRIC_MIN_N + 40
    x = uniform(n, 6, np.random.default_rng(2))
    work = Symmetric(x, 2.0, True)
    work.w[:] = np.nan
    out = np.empty_like(x)
    work.velocity(x, out)
    for lo, hi in work.tiles:
        assert np.isfinite(work.w[lo:hi, lo:]).all()
        assert np.isnan(work.w[lo:hi, :lo]).all()
    np.testing.assert_allclose(out, ref.velocity(x, "softmax", 2.0), rtol=0, atol=1e-13)
    (job,) = jobs([1.0], n=n, d=6)
    assert plans.kernel_plan(job) == plans.KernelPlan(plans.BLOCKED, "float64", symmetric=True)
    assert plans.job_bytes(job) > work.w.nbytes


def clustered(n, d, rng):
    """Diffuse tokens with two tight clusters, one at each end (its close pairs span tiles)."""
    x = uniform(n, d, rng)
    x[:40] = x[0] + 1e-4 * rng.standard_normal((40, d))
    x[-300:] = x[-1] + 1e-4 * rng.standard_normal((300, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("kind, beta", [("softmax", 2.5), ("softmax", 0.0),
                                        ("unnormalized", 1.5)])
def test_symmetric_observables_from_the_upper_blocks(kind, beta):
    # three tiles, the last one partial: each row's statistics are gathered from its own
    # blocks right of the diagonal and from its column in every tile above it
    x = clustered(2 * TILE + 101, 5, np.random.default_rng(7))
    got, tiled = np.empty(len(OBSERVABLES)), np.empty(len(OBSERVABLES))
    with threadpool_limits(1, user_api="blas"):
        Symmetric(x, beta, kind == "softmax").observe(x, 0.05, got)
        Blocked(x, beta, kind == "softmax").observe(x, 0.05, tiled)
    want = ref.observables(x, kind, beta, 0.05)
    scale = np.maximum(1.0, np.abs(want))
    np.testing.assert_array_less(np.abs(got - want), 1e-12 * scale)
    np.testing.assert_allclose(got, tiled, rtol=1e-13, atol=1e-13)
    assert got[OBSERVABLES.index("n_clusters")] == tiled[OBSERVABLES.index("n_clusters")]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_positions_do_not_depend_on_how_often_a_run_saves(path, method, dtype):
    # a save in Symmetric leaves x's weights for the step that follows it; with or without
    # saves in between, the same steps give the same bits
    x0 = uniform(300 if path != "rows" else 40, 6, np.random.default_rng(4))
    kw = dict(beta=3.0, method=method, dtype=dtype)
    once = run(path, x0, stride=12, n_saves=2, **kw)
    often = run(path, x0, stride=1, n_saves=13, **kw)
    np.testing.assert_array_equal(often[2], once[2])
    np.testing.assert_array_equal(often[1][-1], once[1][-1])


def test_symmetric_step_after_a_save_reuses_its_weights(monkeypatch):
    x = uniform(2 * TILE + 10, 4, np.random.default_rng(6))
    fresh, kept = Symmetric(x, 2.0, True), Symmetric(x, 2.0, True)
    want, got = np.empty_like(x), np.empty_like(x)
    fresh.velocity(x, want)
    kept.observe(x, 0.05, np.empty(len(OBSERVABLES)), keep=True)
    calls = []
    monkeypatch.setattr(kept, "weights_tile", lambda *args: calls.append(args))
    kept.velocity(x, got)
    assert calls == []
    np.testing.assert_array_equal(got, want)
    kept.velocity(x, got)  # used once: the next velocity computes its own
    assert len(calls) == len(kept.tiles)


@pytest.mark.parametrize("kind", [Blocked, Symmetric])
@pytest.mark.parametrize("method", METHODS)
def test_blocked_step_loop_allocates_no_arrays(kind, method):
    # NumPy reports its buffers to tracemalloc: a temporary of one tile's products (256 x 24
    # doubles, 49 kB) in a step would show; only Python's small objects (closures) remain
    x = uniform(300, 24, np.random.default_rng(0))
    system = blocked.System(kind(x, 2.0, True), METHOD_CODES[method], 0.01, 1e-3)
    methods.step(system, x, 0)
    tracemalloc.start()
    for tick in range(1, 6):
        methods.step(system, x, tick)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16_000


# A kernel compiled in the process and the same kernel loaded from Numba's cache must give the
# same bits, or a run resumed after a kill would differ from a clean one. LLVM may reassociate
# inside functions compiled with reassoc, and a four-term sum there once compiled one way
# fresh and another way into the cache; a warm cache (a developer's) never shows it.
FRESH_OR_CACHED = """
import itertools
import sys
import numpy as np
from sweep.kernels.codes import OBSERVABLES
from sweep.kernels.blocked import integrate_blocked
from sweep.kernels.rows import integrate_rows
from sweep.execution.states import uniform
out = []
cases = ((12, 3, 0, integrate_rows, {}), (12, 9, 1, integrate_rows, {}),
         (12, 4, 2, integrate_rows, {}),
         (300, 5, 1, integrate_blocked, {"symmetric": False}),
         (300, 5, 2, integrate_blocked, {"symmetric": True}))
for (n, d, method, run, kw), grouped in itertools.product(cases, (False, True)):
    x = uniform(n, d, np.random.default_rng(0))
    if grouped:  # half the tokens in one group: the resolved observables' own passes run
        x[::2] = x[0] + 1e-5 * np.random.default_rng(1).standard_normal(x[::2].shape)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    obs = np.zeros((3, len(OBSERVABLES)))
    run(x, 2.0, True, method, 0.05, 2, 1e-3, obs, np.zeros((0, n, d)), np.zeros(1, np.int64),
        **kw)
    assert (obs[:, OBSERVABLES.index("n_groups")] > 0).all() == grouped
    out.append(np.concatenate([x.ravel(), obs.ravel()]))
np.save(sys.argv[1], np.concatenate(out))
"""


def test_fresh_and_cached_fast_kernels_agree_bit_for_bit(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    for name in ("fresh", "cached"):
        subprocess.run([sys.executable, "-c", FRESH_OR_CACHED, str(tmp_path / name)], env=env,
                       check=True, timeout=600)
    np.testing.assert_array_equal(np.load(tmp_path / "fresh.npy"),
                                  np.load(tmp_path / "cached.npy"))


# Numba counts its allocations when NUMBA_NRT_STATS is set before it is imported, hence a
# child process; the cached kernels load there, nothing compiles twice.
COUNT_ALLOCATIONS = """
import json, sys
import numpy as np
from numba.core.runtime import rtsys
from sweep.kernels.rows import integrate_rows
from sweep.kernels.codes import N_OBS
def count(method, stride):
    x = np.eye(12, 9)
    args = (x, 2.0, True, method, 0.01, stride, 1e-3, np.zeros((3, N_OBS)), np.zeros((0, 12, 9)),
            np.zeros(1, dtype=np.int64))
    integrate_rows(*args)
    before = rtsys.get_allocation_stats().alloc
    integrate_rows(*args)
    return rtsys.get_allocation_stats().alloc - before
print(json.dumps([[count(m, s) for s in (1, 40)] for m in map(int, sys.argv[1:])]))
"""


def test_rows_step_loop_allocates_nothing():
    # the same number of allocations for 2 and 80 steps: none of them is per step
    for few, many in allocations(COUNT_ALLOCATIONS, *METHOD_CODES.values()):
        assert few == many > 0


def general_kernel(x, beta, softmax, *args):
    return integrate(x, dynamics("softmax" if softmax else "unnormalized", beta), *args)


@pytest.mark.parametrize("kernel", [general_kernel, integrate_rows, integrate_blocked])
def test_stop_flag_is_polled_every_step(kernel):
    # a save interval of 10^9 steps would run for hours: only a per-step poll returns
    x0 = uniform(6, 3, np.random.default_rng(4))
    x, stop, obs = x0.copy(), np.zeros(1, dtype=np.int64), np.full((2, len(OBSERVABLES)), np.nan)
    args = (METHOD_CODES["euler"], 1e-3, 10**9, 1e-3, obs, np.zeros((0, 6, 3)), stop)
    result = []
    worker = threading.Thread(target=lambda: result.append(tuple(kernel(x, 1.0, True, *args))),
                              daemon=True)
    worker.start()
    deadline = time.monotonic() + 60
    while np.isnan(obs[0, C.inter_attention]) and time.monotonic() < deadline:
        time.sleep(1e-3)  # save 0 is recorded (its last column): the stepping is about to begin
    stop[0] = 1
    worker.join(60)
    assert result == [(3, 1)]
    # all of save 0 but the two columns that need 2 groups (six scattered tokens have none)
    assert np.isfinite(np.delete(obs[0], [C.overlap_gap, C.silhouette])).all()
    assert obs[0, C.n_groups] == 0 and np.isnan(obs[1]).all()


def test_runner_pins_blas_to_one_thread(tmp_path, monkeypatch):
    # multi-threaded BLAS changes last bits (seen at this size), so a run would depend on the
    # worker count; the runner holds it to one thread whatever --workers says
    monkeypatch.setattr(plans, "BLOCKED_MIN_N", 8)
    raw = {"name": "big", "model": {"n": 300, "d": 24, "beta": 3.0},
           "integrate": {"method": "rk4", "dt": 0.1, "t_max": 0.2, "save_every": 0.2},
           "grid": {"seed": [0, 1, 2]}}
    cfg = config.from_dict(raw)
    jobs = expand(cfg)
    with threadpool_limits(1, user_api="blas"):
        want = [simulate.simulate(job).observables for job in jobs]
    # three jobs on two threads run side by side; one job alone shares its tiles over both
    for k, (workers, count) in enumerate([(1, 3), (2, 3), (2, 1)]):
        store = Store(cfg, tmp_path / f"run{k}.nc")
        runner.run(jobs[:count], store, workers=workers)
        for job, obs in zip(jobs[:count], want):
            np.testing.assert_array_equal(store.read(job).observables, obs)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", METHODS)
def test_float32_tracks_float64(path, method):
    x0 = uniform(12, 5, np.random.default_rng(3))
    _, obs64, x64, _ = run(path, x0, beta=2.0, method=method, stride=4, n_saves=6)
    status, obs32, x32, _ = run(path, x0, beta=2.0, method=method, stride=4, n_saves=6,
                                dtype=np.float32)
    assert status == 0 and x32.dtype == np.float32
    np.testing.assert_allclose(x32, x64, atol=1e-5)
    np.testing.assert_allclose(obs32[:, :4], obs64[:, :4], atol=1e-5)
    np.testing.assert_allclose(obs32[:, 6:8], obs64[:, 6:8], rtol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_huge_beta_softmax_stays_on_the_sphere(path):
    x0 = uniform(10, 3, np.random.default_rng(1))
    status, obs, x, _ = run(path, x0, beta=1e3, dt=0.1, stride=5, n_saves=3)
    assert status == 0 and np.isfinite(x).all() and np.isfinite(obs[:, :6]).all()
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)


@pytest.mark.parametrize("path", PATHS)
def test_trajectory_and_stop_flag(path):
    x0 = uniform(5, 3, np.random.default_rng(2))
    status, _, x, traj = run(path, x0, stride=2, n_saves=4, trajectory=True)
    np.testing.assert_array_equal(traj[0], x0)
    np.testing.assert_array_equal(traj[-1], x)
    obs = np.full((4, len(OBSERVABLES)), np.nan)
    status, saved = kernel(path)(x0.copy(), 1.0, True, 0, 0.05, 2, 1e-3, obs,
                           np.zeros((0, 5, 3)), np.ones(1, dtype=np.int64))
    assert (status, saved) == (3, 1) and np.isnan(obs[1:]).all()


def jobs(betas=(0.0, 2.0), **model):
    raw = {"name": "t", "model": {"n": 8, "d": 3, **model},
           "integrate": {"method": "rk4", "dt": 0.1, "t_max": 1.0, "save_every": 0.5},
           "grid": {"beta": list(betas)}}
    return expand(config.from_dict(raw))


def strategy(job):
    return plans.kernel_plan(job).strategy.name


def test_strategy_follows_size_and_model(monkeypatch):
    assert [strategy(j) for j in jobs()] == ["lanes", "lanes"]  # d <= LANES_MAX_D
    assert [strategy(j) for j in jobs(d=4)] == ["rows", "rows"]
    assert [strategy(j) for j in jobs(d=9)] == ["rows", "rows"]
    # beyond these, the fast kernels' exponent range would clamp: the general path runs
    assert [strategy(j) for j in jobs([200.0, 1e3], attention="unnormalized")] == [
        "lanes", "general"]
    assert [strategy(j) for j in jobs([1e3, 1e5])] == ["lanes", "general"]
    monkeypatch.setattr(plans, "BLOCKED_MIN_N", 8)
    assert [strategy(j) for j in jobs()] == ["blocked", "blocked"]


@pytest.mark.parametrize("min_n", [8, 10_000])
def test_simulate_fast_equals_general_path(monkeypatch, min_n):
    monkeypatch.setattr(plans, "BLOCKED_MIN_N", min_n)
    for job in jobs():
        fast = simulate.simulate(job, "final")
        monkeypatch.setattr(plans, "fast_path_covers", lambda model, integ: False)
        general = simulate.simulate(job, "final")
        monkeypatch.undo()
        monkeypatch.setattr(plans, "BLOCKED_MIN_N", min_n)
        np.testing.assert_allclose(fast.positions, general.positions, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fast.observables, general.observables, rtol=1e-12, atol=1e-12)
