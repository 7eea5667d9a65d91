"""span_dimension (observables/span.py): the numerical rank of the tokens' matrix, against
numpy.linalg.matrix_rank at the record's tolerance, on every path and through `sweep run`."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import reference as ref
from sweep.kernels.blocked import integrate_blocked
from sweep.kernels.codes import COLUMN, METHOD_CODES, N_OBS, OK, RECORDS, SAVE_ALL
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import dynamics
from sweep.kernels.lanes import integrate_lanes
from sweep.kernels.rows import integrate_rows
from sweep.observables.span import second_moment, span_dimension

RTOL, = next(r for r in RECORDS if r.name == "span_dimension").parameters


def jittered(centres, counts, rng, jitter=1e-9):
    """counts[k] tokens at unit centre k, each moved by `jitter` (far below RTOL) and
    renormalised, shuffled: a state whose numerical rank is that of the centres."""
    x = np.repeat(np.asarray(centres, float), counts, axis=0)
    x = ref.normalize(x + jitter * rng.standard_normal(x.shape))
    return x[rng.permutation(len(x))]


def cases():
    rng = np.random.default_rng(5)
    e = np.eye(6)
    yield "uniform", ref.normalize(rng.standard_normal((20, 5)))
    yield "fewer tokens than dimensions", ref.normalize(rng.standard_normal((4, 7)))
    yield "one cluster", jittered(e[:1, :4], [16], rng)
    yield "two clusters", jittered(ref.normalize(rng.standard_normal((2, 4))), [7, 9], rng)
    yield "antipodal pair", jittered([e[0, :3], -e[0, :3]], [1, 1], rng, jitter=0.0)
    yield "antipodal pairs on two axes", jittered([e[0, :3], -e[0, :3], e[1, :3], -e[1, :3]],
                                                  [3, 2, 4, 1], rng)
    yield "three clusters in d = 8", jittered(ref.normalize(rng.standard_normal((3, 8))),
                                              [5, 5, 6], rng)
    yield "one token", ref.normalize(rng.standard_normal((1, 3)))


CASES = list(cases())
IDS = [name for name, _ in CASES]


def numpy_rank(x):
    return int(np.linalg.matrix_rank(np.asarray(x, np.float64), rtol=RTOL))


@pytest.mark.parametrize("x", [x for _, x in CASES], ids=IDS)
def test_kernel_is_numpys_matrix_rank(x):
    want = numpy_rank(x)
    assert span_dimension(x, RTOL) == want
    assert span_dimension(x.astype(np.float32), RTOL) == want
    assert span_dimension(np.ascontiguousarray(x.T), RTOL) == want  # the other matrix: x x^T


def test_the_cases_cover_rank_deficient_states():
    ranks = {name: numpy_rank(x) for name, x in CASES}
    assert ranks["one cluster"] == 1 and ranks["antipodal pair"] == 1
    assert ranks["two clusters"] == 2 and ranks["antipodal pairs on two axes"] == 2
    assert ranks["three clusters in d = 8"] == 3 and ranks["fewer tokens than dimensions"] == 4


def test_threshold_is_relative_to_the_largest_singular_value():
    s = np.array([1.0, 0.5, 2 * RTOL, RTOL / 2])
    q = np.linalg.qr(np.random.default_rng(1).standard_normal((8, 4)))[0]
    for scale in (1e-6, 1.0, 1e6):
        x = scale * q * s  # singular values scale * s
        assert span_dimension(x, RTOL) == 3 == numpy_rank(x)
    assert span_dimension(np.zeros((3, 2)), RTOL) == 0


def first_save(path, x):
    """The observables of x: [n, d] as `path` records them at a job's first save."""
    obs = np.full((1, 1, N_OBS), np.nan)
    traj = np.zeros((1, 0) + x.shape)
    stop = np.zeros(1, dtype=np.int64)
    args = (METHOD_CODES["euler"], 0.1, 1, 1e-3, obs[0], traj[0], stop)
    if path == "general":
        integrate(x.copy(), dynamics("softmax", 1.0), *args)
    elif path == "rows":
        integrate_rows(x.copy(), 1.0, True, *args)
    elif path == "lanes":
        one, status = np.ones(1), np.zeros(1, dtype=np.int64)
        code = integrate_lanes(x[None].copy(), one, True, METHOD_CODES["euler"], one * 0.1, 1,
                               one * 1e-3, obs, traj, stop, status, status.copy(), SAVE_ALL)
        assert code == OK
    else:
        with threadpool_limits(1, user_api="blas"):
            integrate_blocked(x.copy(), 1.0, True, *args, symmetric=path == "symmetric")
    return obs[0, 0]


@pytest.mark.parametrize("path", ["general", "rows", "lanes", "blocked", "symmetric"])
def test_every_path_records_numpys_rank(path):
    for name, x in CASES:
        if path == "lanes" and x.shape[1] > 8:
            continue
        assert first_save(path, x)[COLUMN.span_dimension] == numpy_rank(x), name


def test_blocked_tiles_agree_on_a_large_state():
    """More tokens than one tile (codes.TILE): the second-moment matrix over every tile."""
    rng = np.random.default_rng(2)
    x = jittered(ref.normalize(rng.standard_normal((3, 5))), [200, 150, 170], rng)
    for path in ("general", "rows", "blocked", "symmetric"):
        assert first_save(path, x)[COLUMN.span_dimension] == 3 == numpy_rank(x), path


def test_sweep_run_records_it(tmp_path):
    import sweep
    from sweep.execution.simulate import initial_state

    cfg = sweep.load({"name": "span", "model": {"attention": "softmax", "d": 4, "n": 24},
                      "init": {"kind": "clusters", "clusters": 2, "spread": 0.0},
                      "integrate": {"method": "euler", "dt": 0.1, "t_max": 1.0,
                                    "save_every": 0.5},
                      "grid": {"beta": [1.0], "d": [3, 12], "seed": {"range": [0, 2]}},
                      "output": {"path": str(tmp_path / "span.nc")}})
    ds = sweep.run(cfg, workers=1)
    assert ds.span_dimension.attrs["long_name"] == \
        next(r for r in RECORDS if r.name == "span_dimension").long_name
    for job in sweep.plan(cfg).jobs:
        got = ds.span_dimension.sel(d=job.model.d, seed=job.seed, beta=1.0)
        assert got.isel(time=0) == numpy_rank(initial_state(job)) == 2
        assert ((got >= 1) & (got <= job.model.d)).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,d", [(3, 2), (8, 8), (13, 5), (130, 64)])
def test_second_moment_sums_the_rows_in_order(n, d, dtype):
    """x^T x eight rows a pass, each entry's sum still taken row by row: the bits of adding
    the rows' outer products one after another (in float64); symmetric to the bit, as
    tridiagonalize's reflections take it to be."""
    x = np.random.default_rng(n + d).standard_normal((n, d)).astype(dtype)
    want = np.zeros((d, d))
    for row in x:
        want += np.outer(row.astype(np.float64), row)
    got = np.empty((d, d))
    second_moment(x, got)
    np.testing.assert_array_equal(got, want)
    assert got.tobytes() == got.T.copy().tobytes()


@pytest.mark.parametrize("m", [3, 9, 64])
def test_a_reflection_keeps_a_symmetric_matrix_symmetric_to_the_bit(m):
    """reflect forms a v from a's rows j (a[j, i] for a[i, j]): the same sums as from its
    rows i only if a is symmetric to the bit, which second_moment gives and each reflection
    keeps (the same two products added either way round)."""
    from sweep.observables.span import reflect

    rng = np.random.default_rng(m)
    b = rng.standard_normal((m, m))
    a = b + b.T
    v, p = rng.standard_normal(m), np.empty(m)
    for lo in range(1, m - 1):
        reflect(a, lo, v, p, 2.0 / (v[lo:] @ v[lo:]))
        assert a.tobytes() == a.T.copy().tobytes()
