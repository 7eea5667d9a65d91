"""Euclidean space (model.space: euclidean, docs/models.md): the unnormalised flow
dx_i/dt = sum_j P_ij V x_j of Geshkovski, Letrouit, Polyanskiy, Rigollet, arXiv 2305.05465,
integrated as y = exp(-c t) x. Against the NumPy reference, against the paper's theorems
on small cases, and the config rules and ids around it."""

import numpy as np
import pytest
from scipy.spatial import ConvexHull

import reference as ref
import sweep
from helpers import run_kernel
from sweep.config.schema import Model, id_fields
from sweep.errors import ConfigError
from sweep.execution.kernel import kernel_plan
from sweep.execution.simulate import growth_rate
from sweep.kernels.codes import COLUMN

_R = np.random.default_rng(7)
V2 = np.array([[1.0, 0.3], [0.0, 0.35]])  # eigenvalues 1 (simple, top) and 0.35
M2 = _R.standard_normal((2, 3, 3)) / np.sqrt(3)

CASES = {
    "identity": (dict(beta=1.0), 3),
    "beta-heads": (dict(beta=0.5, heads=2, head_beta=[0.5, 2.0]), 3),
    "matrices": (dict(beta=1.0, qk=M2[0], v=M2[1] + np.eye(3)), 3),
    "causal": (dict(beta=2.0, mask="causal"), 3),
    "top-eigenvalue": (dict(beta=1.0, v=V2), 2),
}


def _run(model, x0, method="rk4", dt=0.05, stride=10, n_saves=13, trajectory=False):
    rate = growth_rate("euclidean", model.get("v"))
    full = dict(attention="softmax", **model, space="euclidean", rate=rate)
    return run_kernel(x0, method=method, dt=dt, stride=stride, n_saves=n_saves,
                      trajectory=trajectory, model=full), rate


@pytest.mark.parametrize("method", ["euler", "heun", "rk4"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_matches_the_numpy_reference(case, method):
    """The compiled euclidean flow (every beta times exp(2 c t), minus c y, no projection,
    no normalisation) and its observables equal the plain NumPy integrator's."""
    model, d = CASES[case]
    x0 = np.random.default_rng(1).standard_normal((7, d))
    (status, obs, x, _), rate = _run(model, x0, method=method, dt=0.05, stride=4, n_saves=6)
    ref_model = {k: v for k, v in model.items()}
    want_obs, want_x = ref.space_trajectory(x0, ref_model, method, 0.05, 4, 6, 1e-3, rate)
    assert status == 0
    np.testing.assert_allclose(x, want_x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(obs, want_obs, rtol=1e-12, atol=1e-12)  # NaN where NaN


def test_growth_rate_is_one_for_identity_and_the_top_eigenvalue_otherwise():
    assert growth_rate("euclidean", None) == 1.0
    assert growth_rate("euclidean", V2[None]) == pytest.approx(1.0, abs=1e-15)
    assert growth_rate("euclidean", -np.eye(2)[None]) == 0.0
    assert growth_rate("sphere", None) == 0.0


def _distinct(points, rtol=1e-3):
    """One representative per group of points closer than rtol times the largest norm."""
    reach = rtol * np.linalg.norm(points, axis=1).max()
    kept = []
    for p in points:
        if all(np.linalg.norm(p - q) > reach for q in kept):
            kept.append(p)
    return np.array(kept)


def _vertices(points):
    """Indices of the vertices of the convex hull of points, in the affine span they fill
    (qhull needs a full-dimensional set: three points in R^3 span a triangle)."""
    centred = points - points.mean(axis=0)
    _, sigma, frame = np.linalg.svd(centred)
    rank = int((sigma > 1e-9 * sigma[0]).sum()) if len(points) > 1 else 0
    if rank + 1 == len(points):  # affinely independent: a simplex, every point a vertex
        return set(range(len(points)))
    coords = centred @ frame[:rank].T
    if rank == 1:
        return {int(np.argmin(coords)), int(np.argmax(coords))}
    return {int(i) for i in ConvexHull(coords).vertices}


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_identity_value_tokens_end_on_the_vertices_of_a_polytope(d, seed):
    """The polytope theorem of 2305.05465 (V = I, Q^T K positive definite, here = I): the rescaled
    tokens z_i = exp(-t) x_i converge, to 0 or to a point of the boundary of a convex polytope
    K, which lies inside the initial tokens' hull (the hull of z never grows: dz_i/dt is a
    convex combination of z_j - z_i); in the paper's experiments, and here, to K's vertices.
    So: every limit point lies in conv z(0), is a vertex of the hull of the limit points, and
    n_points counts them."""
    n = 12 if d == 2 else 16
    x0 = np.random.default_rng(seed).standard_normal((n, d))
    (status, obs, z, traj), _ = _run({"beta": 1.0}, x0, n_saves=21, trajectory=True)
    assert status == 0
    hull0 = ConvexHull(x0)
    scale = np.abs(x0).max()
    assert (hull0.equations[:, :-1] @ z.T + hull0.equations[:, -1:] <= 1e-9 * scale).all()
    volumes = [ConvexHull(y).volume for y in traj]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(volumes, volumes[1:]))
    limits = _distinct(z)
    assert 1 < len(limits) < n  # some tokens merged, more than one vertex survives
    assert _vertices(limits) == set(range(len(limits)))
    assert obs[-1, COLUMN.n_points] == len(limits)
    # the tokens sit at their limit: a further run moves none by n_points' tolerance
    (_, _, z2, _), _ = _run({"beta": 1.0}, x0, n_saves=29)
    assert np.abs(z2 - z).max() < 1e-3 * scale


def test_vertices_that_lead_from_the_start_stay_put_at_large_beta():
    """At large beta the attention is near hardmax from t = 0: a hull vertex x_i that is the
    strict maximiser of <x_i, x_j> over j is a leader, and tokens end at the leaders; so the
    limit points are the initial leaders (to the tolerance) and no other point."""
    x0 = np.random.default_rng(5).standard_normal((10, 2))
    leaders = [i for i in range(10) if np.argmax(x0 @ x0[i]) == i]
    (status, obs, z, _), _ = _run({"beta": 40.0}, x0, dt=0.01, stride=50, n_saves=25)
    limits = _distinct(z)
    assert status == 0 and len(limits) == len(leaders) == obs[-1, COLUMN.n_points]
    for p in limits:
        assert min(np.linalg.norm(p - x0[i]) for i in leaders) < 1e-3 * np.abs(x0).max()


@pytest.mark.parametrize("d", [2, 3])
def test_simple_top_eigenvalue_tokens_approach_at_most_three_hyperplanes(d):
    """The hyperplane theorem of 2305.05465 (V with a simple positive top eigenvalue
    lambda_1, right and left eigenvectors phi, psi; <Q phi, K phi> > 0, here Q^T K = I):
    the rescaled tokens z_i = exp(-t V) x_i approach at most three parallel hyperplanes
    {<psi, z> = a}. With c = lambda_1, <psi, y_i> = <psi, z_i>, so the coordinates
    a_i = <psi, y_i> take at most 3 values in the limit; and the part of y_i off the top
    eigenline decays like exp(-(lambda_1 - lambda_2) t): the x_i turn toward +-phi."""
    rng = np.random.default_rng(3 + d)
    s = np.eye(d) + 0.4 * rng.standard_normal((d, d))
    lam = np.array([1.0, 0.5, 0.2][:d])
    v = s @ np.diag(lam) @ np.linalg.inv(s)  # not symmetric; eigenvectors: columns of s
    phi, psi = s[:, 0], np.linalg.inv(s)[0]  # <psi, phi> = 1
    x0 = rng.standard_normal((14, d))
    (status, _, y, traj), rate = _run({"beta": 1.0, "v": v}, x0, n_saves=25, trajectory=True)
    assert status == 0 and rate == pytest.approx(1.0, abs=1e-12)
    a = y @ psi
    levels = _distinct(a[:, None])
    assert 1 <= len(levels) <= 3
    off = lambda y: np.linalg.norm(y - np.outer(y @ psi, phi), axis=1)  # noqa: E731
    early, late = off(traj[12]).max(), off(traj[24]).max()  # t = 6 and t = 12
    assert late < early * np.exp(-(lam[0] - lam[1]) * 6.0) * 1.5
    assert late < 0.1 * np.abs(a).max()


def test_observables_are_of_the_directions_and_nan_where_they_mean_the_sphere():
    """Cosines and clusters of y_i / |y_i|, so scaling the tokens changes none of them;
    energy, attention_entropy and inter_attention NaN; span_dimension and n_points of y."""
    y = np.random.default_rng(2).standard_normal((6, 3))
    y[3] = 2.5 * y[1]  # one direction twice, at two distinct positions
    model = dict(attention="softmax", beta=1.0, space="euclidean", rate=1.0)
    _, one, _, _ = run_kernel(y, model=model, n_saves=1)
    _, three, _, _ = run_kernel(3.0 * y, model=model, n_saves=1)
    np.testing.assert_array_equal(np.isnan(one), np.isnan(three))
    np.testing.assert_allclose(one, three, rtol=1e-13)
    u = y / np.linalg.norm(y, axis=1, keepdims=True)
    np.testing.assert_allclose(one[0, COLUMN.mean_cosine], ref.observables(u, "softmax", 1.0,
                               1e-3)[COLUMN.mean_cosine], rtol=1e-13)
    assert one[0, COLUMN.n_clusters] == 5 and one[0, COLUMN.n_points] == 6
    for name in ("energy", "attention_entropy", "inter_attention"):
        assert np.isnan(one[0, getattr(COLUMN, name)])


# ---------------------------------------------------------------- config

BASE = {"name": "e", "model": {"d": 2, "n": 6, "space": "euclidean"},
        "init": {"kind": "gaussian"},
        "integrate": {"method": "euler", "dt": 0.1, "t_max": 1.0, "save_every": 0.5}}


def _config(**sections):
    raw = {k: dict(v) if isinstance(v, dict) else v for k, v in BASE.items()}
    for section, values in sections.items():
        raw[section] = {**raw[section], **values}
    if "layers" in raw["model"]:  # a layer stack has no clock
        del raw["integrate"]
    return sweep.load(raw)


@pytest.mark.parametrize("section, values, key", [
    ("model", {"layers": 2}, "model.layers"),
    ("model", {"attention": "hardmax"}, "model.attention"),
    ("model", {"noise": 0.1}, "model.noise"),
    ("model", {"mask": "leaders:2"}, "model.mask"),
    ("model", {"ffn": "gaussian"}, "model.ffn"),
    ("integrate", {"method": "layer"}, "integrate.method"),
    ("integrate", {"t_max": 400.0, "save_every": 1.0}, "integrate.t_max"),
    ("model", {"space": "sphere"}, "init.kind"),
    ("model", {"space": "flat"}, "model.space"),
])
def test_bad_combinations_are_one_line_config_errors_naming_the_key(section, values, key):
    with pytest.raises(ConfigError) as caught:
        sweep.plan(_config(**{section: values}))
    message = str(caught.value)
    assert message.startswith(f"{key}: ") and "\n" not in message


def test_space_stays_out_of_ids_at_its_default_and_euclidean_takes_the_general_path():
    assert "space" not in id_fields(Model())
    assert id_fields(Model(space="euclidean"))["space"] == "euclidean"
    plain = sweep.load({"name": "s", "model": {"d": 3, "n": 8}})
    named = sweep.load({"name": "s", "model": {"d": 3, "n": 8, "space": "sphere"}})
    assert [j.id for j in sweep.plan(plain).jobs] == [j.id for j in sweep.plan(named).jobs]
    sphere_job = sweep.plan(plain).jobs[0]
    assert kernel_plan(sphere_job).strategy.name == "lanes"
    euclid = sweep.plan(_config(model={"d": 3, "n": 8}, init={"kind": "uniform"})).jobs[0]
    assert kernel_plan(euclid).strategy.name == "general"
    masked = sweep.plan(sweep.load({"name": "s", "model": {"d": 3, "n": 8, "mask": "causal"}}))
    assert kernel_plan(euclid).variant == kernel_plan(masked.jobs[0]).variant  # no new one


def test_float32_follows_float64():
    """The same kernels in single precision, within float32's reach of float64."""
    x0 = np.random.default_rng(4).standard_normal((8, 3))
    model = dict(attention="softmax", beta=1.0, space="euclidean", rate=1.0)
    runs = [run_kernel(x0, method="rk4", dt=0.05, stride=10, n_saves=5, dtype=dtype,
                       model=model) for dtype in (np.float64, np.float32)]
    (s64, o64, x64, _), (s32, o32, x32, _) = runs
    assert s64 == s32 == 0 and x32.dtype == np.float32
    np.testing.assert_allclose(x32, x64, atol=1e-5)
    np.testing.assert_allclose(o32[:, COLUMN.mean_cosine], o64[:, COLUMN.mean_cosine],
                               atol=1e-5)


def test_a_gaussian_start_keeps_its_norms_and_its_jitter_is_not_renormalised():
    from sweep.execution.simulate import initial_state

    job = sweep.plan(_config(init={"jitter": 0.5})).jobs[0]
    x = initial_state(job)
    assert not np.allclose(np.linalg.norm(x, axis=1), 1.0)
    sphere = sweep.plan(sweep.load({"name": "s", "model": {"d": 2, "n": 6},
                                    "init": {"jitter": 0.5}})).jobs[0]
    np.testing.assert_allclose(np.linalg.norm(initial_state(sphere), axis=1), 1.0)


def test_the_published_sidecar_says_what_docs_models_md_says_of_it():
    """docs/models.md, "Euclidean space": in every run the limits lie in the start's hull
    and are the vertices of their own hull; K is a strict sub-polytope (fewer limit points
    than start vertices, by median); more limits sit at a start vertex as beta grows."""
    import json
    from pathlib import Path

    facts = json.loads((Path(__file__).resolve().parent.parent / "figures"
                        / "euclidean-polytope.json").read_text())
    rows = facts["rows"]
    assert all(r["inside"] == r["vertices"] == r["seeds"] for r in rows)
    assert all(r["n_points"]["median"] < r["start_vertices"] for r in rows)
    stayed = [r["at_start_vertices"] for r in rows]
    assert stayed == sorted(stayed) and stayed[-1] > stayed[0]


@pytest.mark.parametrize("path", ["general", "rows", "lanes", "blocked", "symmetric"])
def test_every_path_records_the_references_n_points_on_the_sphere(path):
    """n_points is a record of x alone: every path writes the reference's count (on the
    sphere, clusters at |x_i - x_j| <= 1e-3), whether tokens coincide or not."""
    from test_span import CASES, first_save

    for name, x in CASES:
        if path == "lanes" and x.shape[1] > 8:
            continue
        assert first_save(path, x)[COLUMN.n_points] == ref.points_count(x), name
    assert {ref.points_count(x) for _, x in CASES} >= {1, 2, 3, 20}
