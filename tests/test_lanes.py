"""The lanes kernel (kernels/lanes.py: one system per SIMD lane, for n < 256 and d up to
LANES_MAX_D): against the NumPy reference, and the same bits for a system
whatever batch, block or lane it runs in, and whatever the vector width (simd.WIDTH)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba.core.registry import cpu_target

import reference as ref
from helpers import assert_matches_reference
from sweep.kernels.codes import (
    LANES,
    LANES_MAX_D,
    LAYER,
    METHOD_CODES,
    NONFINITE,
    OBSERVABLES,
    OK,
    SAVE_ALL,
    SAVE_CLOSE,
    SAVE_COUNTS,
    SAVE_PAIRS,
    STOPPED,
)
from sweep.kernels.lanes import integrate_lanes, order_lanes
from sweep.kernels.lanestep import velocity
from sweep.numerics import simd
from sweep.observables.summary import order_parameter

CLOSE = [OBSERVABLES.index("order_parameter"), OBSERVABLES.index("clustered_fraction")]


def starts(count, n, d, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((count, n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def batch(x0, betas, method="layer", softmax=True, dt=0.1, stride=2, n_saves=6, eps=0.05,
          level=SAVE_ALL, dtype=np.float64, trajectory=False):
    """(status, obs, final x, traj, saves recorded) of integrate_lanes over the systems
    x0: [B, n, d]."""
    xs = np.array(x0, dtype=dtype)
    count = xs.shape[0]
    obs = np.full((count, n_saves, len(OBSERVABLES)), np.nan)
    traj = np.zeros((count, n_saves if trajectory else 0) + xs.shape[1:], dtype=dtype)
    status, saved = np.full(count, -1, dtype=np.int64), np.full(count, -1, dtype=np.int64)
    code = integrate_lanes(xs, np.asarray(betas, float), softmax, METHOD_CODES[method],
                           np.full(count, dt), stride, np.full(count, eps), obs, traj,
                           np.zeros(1, dtype=np.int64), status, saved, level)
    assert code == OK
    return status, obs, xs, traj, saved


@pytest.mark.parametrize("method", list(METHOD_CODES))
@pytest.mark.parametrize("kind", ["softmax", "unnormalized"])
@pytest.mark.parametrize("n, d", [(1, 2), (2, 3), (9, 2), (17, 3), (6, LANES_MAX_D)])
def test_every_lane_matches_the_reference(method, kind, n, d):
    betas = np.array([0.0, 0.7, 3.0, 6.5 if kind == "softmax" else 2.0, 1.3])
    x0 = starts(len(betas), n, d)
    status, obs, x, _, saved = batch(x0, betas, method, kind == "softmax", dt=0.05)
    assert (status == OK).all() and (saved == 6).all()
    for b, beta in enumerate(betas):
        want_obs, want_x = ref.trajectory(x0[b], kind, beta, method, 0.05, 2, 6, 0.05)
        assert_matches_reference(obs[b], x[b], want_obs, want_x, tol=1e-11)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("method", list(METHOD_CODES))
@pytest.mark.parametrize("level", [SAVE_CLOSE, SAVE_COUNTS, SAVE_PAIRS, SAVE_ALL])
@pytest.mark.parametrize("d", [2, 3])
def test_a_system_gets_the_same_bits_in_any_batch_block_or_lane(dtype, method, level, d):
    """Alone (a block of its own, padded to the vector width), in a batch below the vector
    width, and at two places of a batch of two blocks (35 and 36 lanes, padded to a multiple
    of simd.WIDTH: 36 or 40): the same observables, positions and final state, bit for bit."""
    count, n = LANES + 7, 12
    x0 = starts(count, n, d, seed=1)
    betas = np.linspace(0.5, 9.0, count)
    whole = batch(x0, betas, method, level=level, dtype=dtype, trajectory=True)
    assert (whole[0] == OK).all()
    for picks in ([0], [LANES + 5], [3, 40, 41, 70], list(range(5, 45))):
        part = batch(x0[picks], betas[picks], method, level=level, dtype=dtype,
                     trajectory=True)
        for got, want in zip(part, whole):
            np.testing.assert_array_equal(got, want[picks])


def test_a_save_of_the_close_pairs_alone_gives_the_bits_of_a_full_save():
    """The count inside the next step's pair loop and the order parameter across lanes are
    the full save's columns exactly; the other columns are left NaN."""
    x0, betas = starts(20, 32, 2, seed=2), np.linspace(0.1, 9.0, 20)
    full = batch(x0, betas, stride=1, n_saves=40, eps=1e-3)
    close = batch(x0, betas, stride=1, n_saves=40, eps=1e-3, level=SAVE_CLOSE)
    np.testing.assert_array_equal(close[1][:, :, CLOSE], full[1][:, :, CLOSE])
    np.testing.assert_array_equal(close[2], full[2])
    others = np.delete(close[1], CLOSE, axis=2)
    assert np.isnan(others).all()
    assert (full[1][:, -1, CLOSE[1]] > 0).any()  # some clustered: a count that could differ


def test_the_order_parameter_across_lanes_is_summary_order_parameter():
    X = np.ascontiguousarray(starts(9, 7, 3, seed=3).transpose(1, 2, 0))
    for values in (X, X.astype(np.float32).astype(np.float64)):
        r = np.empty(9)
        order_lanes(values, np.empty(9), r)
        want = [order_parameter(np.ascontiguousarray(values[:, :, b])) for b in range(9)]
        np.testing.assert_array_equal(r, want)


def test_a_lane_that_blows_up_ends_alone():
    """A non-finite system is NONFINITE from the save that sees it, holds its state there,
    and leaves every other lane's bits as they are without it."""
    x0, betas = starts(20, 8, 2, seed=4), np.linspace(1.0, 5.0, 20)
    bad = x0.copy()
    bad[7, 3, 0] = np.nan
    status, obs, x, _, saved = batch(bad, betas)
    assert status[7] == NONFINITE and (np.delete(status, 7) == OK).all()
    assert saved[7] == 0 and (np.delete(saved, 7) == 6).all()
    assert np.isnan(obs[7]).all() and np.isnan(x[7, 3, 0])
    keep = np.delete(np.arange(20), 7)
    clean = batch(x0[keep], betas[keep])
    np.testing.assert_array_equal(obs[keep], clean[1])
    np.testing.assert_array_equal(x[keep], clean[2])


def test_a_stop_flag_stops_the_batch():
    xs = starts(30, 8, 2)
    obs = np.full((30, 4, len(OBSERVABLES)), np.nan)
    code = integrate_lanes(xs, np.ones(30), True, LAYER, np.full(30, 0.1), 1,
                           np.full(30, 0.05), obs, np.zeros((30, 0, 8, 2)),
                           np.ones(1, dtype=np.int64), np.zeros(30, dtype=np.int64),
                           np.zeros(30, dtype=np.int64), SAVE_ALL)
    assert code == STOPPED



@pytest.mark.parametrize("d", [1, 4])
def test_a_dimension_lanes_do_not_serve_ends_the_run(d):
    """The pair loops exist for d = 2 and 3 only (model.d is at least 2; from 4 jobs are
    planned onto rows.py): called with another d anyway, the kernel ends NONFINITE at the
    first save after a step, never with numbers."""
    from sweep.config import schema
    from sweep.config.grid import expand
    from sweep.execution.kernel import kernel_plan

    job = expand(schema.from_dict({"name": "c", "model": {"n": 8, "d": LANES_MAX_D + 1}}))[0]
    assert kernel_plan(job).path == "rows"
    xs = starts(3, 8, d)
    obs = np.full((3, 2, len(OBSERVABLES)), np.nan)
    status, saved = np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64)
    integrate_lanes(xs, np.ones(3), True, LAYER, np.full(3, 0.1), 1, np.full(3, 0.05), obs,
                    np.zeros((3, 0, 8, d)), np.zeros(1, dtype=np.int64), status, saved, SAVE_ALL)
    assert (status == NONFINITE).all() and (saved == 1).all()

# velocity_cases' velocities in a process whose Numba compiles without AVX-512 (every avx512
# feature off), so simd.WIDTH is 4 there; the arrays to argv[1] with that process's WIDTH.
FOUR_LANES = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from test_lanes import velocity_cases
from sweep.numerics import simd
np.savez(sys.argv[1], width=simd.WIDTH, **velocity_cases())
"""


def velocity_cases():
    """V and the close-pair counts of lanestep.velocity at d = 2 and 3 (the f64xn pair loops),
    softmax and unnormalized, layer and euler (projected), 24 lanes: betas up to 700, whose
    softmax exponents fall below exp's clamp, and every count of close pairs."""
    out, L = {}, 24
    beta = np.concatenate([np.linspace(0.0, 9.0, L - 2), [120.0, 700.0]])
    for d in (2, 3):
        X = np.ascontiguousarray(starts(L, 32, d, seed=5 + d).transpose(1, 2, 0))
        X[:, :, L // 2:] = X[:, :, :1] + 1e-3 * X[:, :, L // 2:]  # close pairs to count
        X /= np.sqrt((X * X).sum(axis=1, keepdims=True))
        eps1 = 1.0 - np.geomspace(1e-6, 0.5, L)
        for softmax in (True, False):
            for method in (LAYER, METHOD_CODES["euler"]):
                V, count = np.empty_like(X), np.zeros(L, dtype=np.int64)
                velocity(X, beta, 1.0 if softmax else 0.0, softmax, method, V,
                         np.empty((32, L)), np.empty(L), count, eps1, True)
                out[f"V{d}{softmax}{method}"], out[f"count{d}{softmax}{method}"] = V, count
    return out


def test_eight_lanes_give_the_bits_of_four(tmp_path):
    """The pair loops at this process's width (8 where Numba compiles for AVX-512) and at 4
    (a child compiling for this CPU less AVX-512, as on an AVX2 machine): every velocity and
    close-pair count bit for bit the same."""
    features = cpu_target.target_context.codegen().magic_tuple()[2].split(",")
    assert simd.WIDTH == (8 if "+avx512f" in features else 4)
    off = ",".join("-" + f[1:] if f.startswith(("+avx512", "+avx10", "+evex512")) else f
                   for f in features)
    path = tmp_path / "four.npz"
    subprocess.run([sys.executable, "-c", FOUR_LANES, str(path), str(Path(__file__).parent)],
                   env={**os.environ, "NUMBA_CPU_FEATURES": off}, check=True)
    four, ours = np.load(path), velocity_cases()
    assert four["width"] == 4
    assert (ours["count2True2"] > 0).any() and (ours["count2True2"] == 0).any()
    for name, got in ours.items():
        np.testing.assert_array_equal(got.view(np.uint64), four[name].view(np.uint64), name)
