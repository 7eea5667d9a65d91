"""Layer models (docs/layers.md): the reductions to flows, the NumPy blocks against the
oracle, the long-context layer, per-layer parameters, components, and their results files."""

import numpy as np
import pytest
import yaml

import reference
from helpers import invoke, load
from sweep.analysis.theory import output_cosine
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.execution.kernel import kernel_plan
from sweep.execution.layers import params
from sweep.execution.layers.transformer import unit
from sweep.execution.simulate import simulate
from sweep.kernels.codes import N_OBS, OBSERVABLES

L, ALPHA = 12, 0.1
FLOW = {"method": "layer", "dt": ALPHA, "t_max": L * ALPHA, "save_every": ALPHA}


def job(model, init=None, integrate=None, source=None, grid=None):
    cfg = {"name": "l", "model": model, "init": init or {}, "integrate": integrate or {},
           "grid": grid or {}}
    return expand(config.from_dict(cfg, source=source))


def write(tmp_path, cfg, name="c.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


# ---------------------------------------------------------------- sphere layers are the flow

def _with_matrix(tmp_path):
    m = np.random.default_rng(3).standard_normal((2, 4, 4)) / 2
    np.save(tmp_path / "qk.npy", m)
    return str(tmp_path / "qk.npy")


SPHERE_MODELS = [
    {"heads": 2, "beta": 2.0},
    {"heads": 2, "qk": "FILE", "v": "qk"},
    {"heads": 2, "head_beta": [1.0, 6.0], "mask": "causal"},
    {"noise": 0.05, "beta": 3.0, "ffn": "FILE"},
    {"attention": "unnormalized", "beta": 0.5, "mask": "window:2", "beta_scale": "sqrt_d"},
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("extra", SPHERE_MODELS)
def test_identical_sphere_layers_are_layer_steps_bit_for_bit(tmp_path, extra, dtype):
    """layers: L, norm: sphere, alpha = dt, no FFN sublayer: the flow's integrate.method:
    layer for L steps, every observable and the final state bit for bit."""
    matrix = _with_matrix(tmp_path)
    if extra.get("ffn") == "FILE":
        np.save(tmp_path / "w.npy", np.load(matrix)[0])
        matrix = str(tmp_path / "w.npy")
    model = {"d": 4, "n": 9, **{k: matrix if v == "FILE" else v for k, v in extra.items()}}
    flow = simulate(job(model, integrate={**FLOW, "dtype": dtype})[0], "final")
    layers = simulate(job({**model, "layers": L, "alpha": ALPHA}, integrate={"dtype": dtype})[0],
                      "final")
    assert flow.observables.shape == (L + 1, N_OBS) and flow.positions.dtype == dtype
    np.testing.assert_array_equal(layers.observables[:, :N_OBS], flow.observables)
    np.testing.assert_array_equal(layers.positions, flow.positions)
    np.testing.assert_allclose(layers.observables[:, N_OBS], 1.0,  # token_norm
                               atol=10 * np.finfo(dtype).eps)


def test_the_reduction_through_the_command_line(tmp_path):
    """One head (the rows kernel) and two (the general step), float64 and float32."""
    base = {"name": "r", "model": {"d": 3, "n": 8, "beta": 4.0},
            "grid": {"heads": [1, 2], "dtype": ["float64", "float32"], "seed": [0, 1]}}
    flow = write(tmp_path, {**base, "integrate": FLOW, "output": {"path": str(tmp_path / "f.nc")}})
    stack = write(tmp_path, {**base, "model": {**base["model"], "layers": L, "alpha": ALPHA},
                             "output": {"path": str(tmp_path / "l.nc")}}, "l.yaml")
    assert invoke("run", flow).exit_code == 0
    result = invoke("run", stack)
    assert result.exit_code == 0, result.output
    f, s = load(tmp_path / "f.nc"), load(tmp_path / "l.nc")
    assert list(s.layer.values) == list(range(L + 1)) and "time" not in s.dims
    for name in OBSERVABLES:
        np.testing.assert_array_equal(s[name].values, f[name].values, err_msg=name)
    assert s.layer.attrs["long_name"].startswith("layer") and "token_norm" in s
    # clustering "time" of a layer model is its first clustered layer
    assert np.array_equal(s.t_cluster.values * ALPHA, f.t_cluster.values, equal_nan=True)


@pytest.mark.parametrize("model", [
    {"d": 3, "n": 16, "beta": 2.0},                                   # rows
    {"d": 4, "n": 40, "beta": 0.5, "v": "qk", "beta_scale": "log_n"},  # rows, v = M = I
    {"d": 3, "n": 300, "beta": 3.0},                                  # blocked, whole weights
    {"d": 3, "n": 24, "beta": 1.0, "attention": "unnormalized"},      # rows, USA
], ids=["rows", "rows-v-qk", "blocked", "rows-usa"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fast_flows_and_their_layer_models_are_one_run_bit_for_bit(model, dtype):
    """Identity one-head flows take a fast kernel (rows or blocked), which orders its sums
    unlike the general step: the layer model takes the flow's kernel plan and runs as that
    flow (sweep.execution.layers.flow), so the two agree bit for bit there too."""
    flow_job = job(model, integrate={**FLOW, "dtype": dtype})[0]
    layered = {**model, "layers": L, "alpha": ALPHA}
    stack_job = job(layered, integrate={"dtype": dtype})[0]
    per_layer = {**layered, "layer_beta": [model["beta"]] * L, "beta": 1.0}
    assert kernel_plan(stack_job) == kernel_plan(flow_job) != kernel_plan(job(per_layer)[0])
    flow = simulate(flow_job, "trajectory")
    layers = simulate(stack_job, "trajectory")
    np.testing.assert_array_equal(layers.observables[:, :N_OBS], flow.observables)
    np.testing.assert_array_equal(layers.positions, flow.positions)
    np.testing.assert_allclose(layers.observables[:, N_OBS], 1.0,  # token_norm
                               atol=10 * np.finfo(dtype).eps)


def test_the_general_sphere_layers_agree_with_the_fast_flow_to_rounding():
    """The same beta given per layer (layer_beta) is the per-layer general step, whose sums
    the fast rows kernel reorders (fastmath): agreement to rounding, not bit for bit."""
    model = {"d": 3, "n": 16}
    flow = simulate(job({**model, "beta": 2.0}, integrate=FLOW)[0], "final")
    layers = simulate(job({**model, "layers": L, "alpha": ALPHA, "layer_beta": [2.0] * L})[0],
                      "final")
    np.testing.assert_allclose(layers.positions, flow.positions, rtol=0, atol=1e-13)
    np.testing.assert_allclose(layers.observables[:, :N_OBS], flow.observables, rtol=1e-12,
                               atol=1e-13)


# ---------------------------------------------------------------- NumPy blocks, the oracle

NUMPY_MODELS = [
    {"norm": "post", "ffn": "mlp", "ffn_width": 6, "head_combine": "sum"},
    {"norm": "pre", "ffn": "mlp", "ffn_width": 6, "skip": 0.9},
    {"norm": "peri", "ffn": "linear", "alpha": 0.7},
    {"norm": "post", "norm_fn": "unit", "ffn": "linear", "layer_beta": [0.5, 2.0, 8.0]},
    {"norm": "pre", "norm_fn": "unit", "v": "qk", "beta_scale": "d"},
    {"norm": "sphere", "ffn": "mlp", "ffn_width": 3, "alpha": 0.3},
]


@pytest.mark.parametrize("extra", NUMPY_MODELS)
def test_blocks_and_observables_match_the_oracle(extra):
    model = {"d": 5, "n": 7, "heads": 2, "layers": 3, "qk": "gaussian", "v": "gaussian",
             **({} if "layer_beta" in extra else {"beta": 1.5}), **extra}
    j = job(model, grid={"seed": [4]})[0]
    result = simulate(j, "trajectory")
    blocks = params.blocks(j, _rng_of(j))  # the job's own parameters, for the oracle
    m = j.model
    h = result.positions[0]
    for layer, b in enumerate(blocks, start=1):
        h = reference.layer_block(h, b, m.norm, m.norm_fn, m.alpha, m.skip)
        np.testing.assert_allclose(result.positions[layer], h, rtol=0, atol=1e-12)
    for layer in range(m.layers + 1):
        reader = blocks[min(layer, m.layers - 1)]
        spec = {"beta": 0.0, "head_beta": list(reader.betas), "heads": 2,
                "qk": reader.qk if reader.qk is not None else "identity", "v": reader.v}
        want = reference.zoo_observables(unit(result.positions[layer]), spec, 1e-3)
        np.testing.assert_allclose(result.observables[layer, :N_OBS], want, rtol=1e-11,
                                   atol=1e-12)
        norms = np.linalg.norm(result.positions[layer], axis=1).mean()
        np.testing.assert_allclose(result.observables[layer, N_OBS], norms, rtol=1e-14)


def _rng_of(j):
    import functools

    from sweep.execution.simulate import _rng

    return functools.partial(_rng, j.seed)


def test_each_layer_draws_its_own_matrices_and_a_list_names_them(tmp_path):
    path = _with_matrix(tmp_path)
    drawn = params.blocks(j := job({"d": 4, "n": 5, "heads": 2, "layers": 3, "qk": "gaussian",
                                    "norm": "post"})[0], _rng_of(j))
    assert not np.allclose(drawn[0].qk, drawn[1].qk)
    listed = job({"d": 4, "n": 5, "heads": 2, "layers": 3, "norm": "post",
                  "qk": ["identity", path, "gaussian"]}, source=tmp_path / "c.yaml")[0]
    blocks = params.blocks(listed, _rng_of(listed))
    assert blocks[0].qk is None and np.array_equal(blocks[1].qk, np.load(path))
    assert blocks[2].qk.shape == (2, 4, 4)
    ds = _merged(tmp_path, {"d": 4, "n": 5, "heads": 2, "layers": 3, "norm": "post"},
                 {"qk": [["identity", path, "gaussian"], "identity"]})
    assert list(ds.qk.values) == [f"identity,{path},gaussian", "identity"]


def _merged(tmp_path, model, grid, init=None):
    path = write(tmp_path, {"name": "m", "model": model, "init": init or {}, "grid": grid,
                            "output": {"path": str(tmp_path / "m.nc")}}, "m.yaml")
    result = invoke("run", path, "--workers", 2)
    assert result.exit_code == 0, result.output
    return load(tmp_path / "m.nc")


def test_per_layer_betas_and_their_scale():
    m = config.from_dict({"name": "b", "model": {"d": 4, "n": 8, "heads": 2, "layers": 3,
                                                 "layer_beta": [1.0, 2.0, 3.0],
                                                 "beta_scale": "log_n"}}).model
    np.testing.assert_allclose(params.layer_betas(m),
                               np.log(8) * np.array([[1, 1], [2, 2], [3, 3]]))


def test_layers_of_several_depths_share_one_layer_axis(tmp_path):
    ds = _merged(tmp_path, {"d": 3, "n": 6, "norm": "post"}, {"layers": [1, 3]})
    assert list(ds.layer.values) == [0, 1, 2, 3]
    assert np.isnan(ds.mean_cosine.sel(layers=1).values[0, 2:]).all()
    assert np.isfinite(ds.mean_cosine.sel(layers=3).values).all()


def test_shards_of_a_layer_sweep_merge_to_the_unsharded_dataset(tmp_path):
    cfg = {"name": "s", "model": {"d": 4, "n": 6, "layers": 4, "norm": "pre", "ffn": "mlp",
                                  "qk": "gaussian"},
           "grid": {"components": ["full", "no_ffn"], "seed": [0, 1, 2]}}
    whole = write(tmp_path, {**cfg, "output": {"path": str(tmp_path / "w.nc")}}, "w.yaml")
    parts = write(tmp_path, {**cfg, "output": {"path": str(tmp_path / "p.nc")}}, "p.yaml")
    assert invoke("run", whole, "--workers", 2).exit_code == 0
    for i in range(2):
        assert invoke("run", parts, "--shard", f"{i}/2").exit_code == 0
    assert invoke("merge", parts).exit_code == 0
    a, b = load(tmp_path / "w.nc"), load(tmp_path / "p.nc")
    for name in OBSERVABLES + ("token_norm",):
        assert np.array_equal(a[name].values, b[name].values, equal_nan=True), name


# ---------------------------------------------------------------- long context (THEORY 7)

@pytest.mark.physics
def test_one_layer_at_beta_gamma_log_n_gives_the_long_context_cosines(tmp_path):
    """n = 1024, rho = 0.5, beta = gamma log n (beta_scale: log_n), no residual (skip 0):
    the output cosine is 0.9991, 0.8003, 0.5154 for gamma = 1, 2, 3 (2512.01868), the exact
    finite-n value of `sweep theory long-context` to 1e-10."""
    n = 1024
    ds = _merged(tmp_path, {"d": n + 1, "n": n, "layers": 1, "norm": "post",
                            "norm_fn": "unit", "skip": 0.0, "beta_scale": "log_n"},
                 {"beta": [1.0, 2.0, 3.0]}, {"kind": "equiangular", "overlap": 0.5})
    cos = ds.mean_cosine.isel(seed=0)
    np.testing.assert_allclose(cos.sel(layer=0), 0.5, atol=1e-12)
    np.testing.assert_allclose(cos.sel(layer=1), [0.9991, 0.8003, 0.5154], atol=1e-4)
    want = output_cosine(n, 0.5, [1.0, 2.0, 3.0])  # sweep theory long-context
    np.testing.assert_allclose(cos.sel(layer=1), want, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ds.min_cosine.isel(seed=0).sel(layer=1), want, atol=1e-10)


def test_a_blow_up_is_status_1_and_a_stop_abandons_the_job():
    from sweep.execution.simulate import Stopped

    blown = simulate(job({"d": 3, "n": 5, "layers": 3, "norm": "pre", "alpha": 1e308,
                          "skip": 1e308})[0])
    assert blown.status == 1
    assert np.isfinite(blown.observables[0, :2]).all() and np.isnan(blown.observables[1:]).all()
    with pytest.raises(Stopped):
        simulate(job({"d": 3, "n": 5, "layers": 3})[0], stop=np.ones(1, dtype=np.int64))
