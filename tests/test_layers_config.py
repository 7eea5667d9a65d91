"""Layer-model keys and beta_scale: each valid where it applies, refused in one line where
it does not, and the effective beta what reaches the kernels."""

import math

import numpy as np
import pytest
import yaml

from helpers import invoke
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.execution.simulate import initial_state, job_dynamics, simulate

LAYERS = {"layers": 3, "d": 4, "n": 6}


def plan(tmp_path, model, init=None, integrate=None, grid=None):
    cfg = {"name": "c", "model": model, "init": init or {}, "integrate": integrate or {},
           "grid": grid or {}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return invoke("plan", path)


REFUSED = [
    ({"d": 4, "n": 6, "alpha": 0.5}, {}, {}, "model.alpha: only layer models"),
    ({"d": 4, "n": 6, "norm": "post"}, {}, {}, "model.norm: only layer models"),
    ({"d": 4, "n": 6, "ffn": "mlp"}, {}, {}, "model.ffn: mlp is a layer model's"),
    ({"d": 4, "n": 6, "qk": ["identity"]}, {}, {}, "model.qk: a list gives one matrix"),
    (LAYERS, {}, {"dt": 0.05}, "integrate.dt: a layer model has no clock"),
    (LAYERS, {}, {"method": "rk4"}, "integrate.method: a layer model has no clock"),
    ({**LAYERS, "norm": "post"}, {}, {"dtype": "float32"},
     "integrate.dtype: norm: post layers compute in float64"),
    ({**LAYERS, "layer_beta": [1.0, 2.0]}, {}, {}, "model.layer_beta: 2 value(s) for layers=3"),
    ({**LAYERS, "layer_beta": [1, 2, 3], "heads": 3, "head_beta": [1, 2, 3]}, {}, {},
     "model.layer_beta: give layer_beta or head_beta"),
    ({**LAYERS, "qk": ["identity", "gaussian"]}, {}, {}, "model.qk: 2 value(s) for layers=3"),
    ({**LAYERS, "beta": 2.0, "layer_beta": [1, 2, 3]}, {}, {}, "model.beta: never used here"),
    ({**LAYERS, "ffn_width": 8}, {}, {}, "model.ffn_width: only ffn: mlp"),
    ({**LAYERS, "skip": 0.5}, {}, {}, "model.skip: norm: sphere is the kernels' step"),
    ({**LAYERS, "head_combine": "sum"}, {}, {}, "model.head_combine: norm: sphere"),
    ({**LAYERS, "norm": "post", "mask": "causal"}, {}, {}, "model.mask: norm: post layers"),
    ({**LAYERS, "norm": "pre", "attention": "relu"}, {}, {}, "model.attention: norm: pre"),
    ({**LAYERS, "norm": "peri", "noise": 0.1}, {}, {}, "model.noise: norm: peri"),
    ({**LAYERS, "norm": "post", "ffn": "gaussian"}, {}, {}, "model.ffn: gaussian is the in-step"),
    ({**LAYERS, "components": "no_ffn"}, {}, {}, "model.components: no_ffn changes nothing"),
    ({**LAYERS, "norm": "post", "components": "no_ln_gain"}, {}, {},
     "model.components: no_ln_gain changes nothing"),
    ({**LAYERS, "components": "no_attention"}, {}, {}, "model.components: 'no_attention'"),
    ({**LAYERS, "components": "full+no_ffn"}, {}, {}, "model.components: 'full+no_ffn'"),
    ({**LAYERS, "beta_scale": "n"}, {}, {}, "model.beta_scale: 'n' is not one of"),
    ({**LAYERS, "norm": "post", "weights": "nowhere"}, {}, {}, "model.weights: "),
    ({**LAYERS, "norm": "post", "weights": "w", "qk": "gaussian"}, {}, {},
     "model.qk: the weights folder supplies"),
    ({**LAYERS, "norm": "post"}, {"kind": "file", "path": "x.npy", "jitter": 0.1}, {},
     "init.jitter: norm: post takes the file's rows"),
]


@pytest.mark.parametrize("model, init, integrate, message", REFUSED)
def test_keys_that_do_not_apply_are_refused_in_one_line(tmp_path, model, init, integrate,
                                                        message):
    np.save(tmp_path / "x.npy", np.ones((6, 4)))
    result = plan(tmp_path, model, init, integrate)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output
    assert "Traceback" not in result.output


def test_a_sweep_of_flows_and_layer_models_is_refused(tmp_path):
    result = plan(tmp_path, {"d": 4, "n": 6}, grid={"layers": [None, 2]})
    assert result.exit_code == 2 and "model.layers: a sweep holds flows or layer models" \
        in result.output


def test_a_layer_model_plans_with_its_cost(tmp_path):
    result = plan(tmp_path, {**LAYERS, "norm": "post", "ffn": "mlp"},
                  grid={"components": ["full", "no_ffn", "identity_ffn+v_identity"]})
    assert result.exit_code == 0, result.output
    assert "components" in result.output and "3 job" in result.output
    assert "layers per job: 3" in result.output


# ---------------------------------------------------------------- beta_scale

FACTORS = {"none": 1.0, "d": 8.0, "sqrt_d": math.sqrt(8.0), "log_n": math.log(12.0)}


def _job(model, integrate=None):
    cfg = {"name": "b", "model": {"d": 8, "n": 12, **model},
           "integrate": {"dt": 0.1, "t_max": 1.0, "save_every": 0.5} if integrate is None
           else integrate}
    return expand(config.from_dict(cfg))[0]


@pytest.mark.parametrize("scale", FACTORS)
@pytest.mark.parametrize("extra", [{}, {"heads": 2}, {"heads": 2, "head_beta": [0.5, 2.0]}])
def test_beta_scale_is_the_beta_the_kernels_get(scale, extra):
    """beta x factor reaches every path (the fast rows kernel for one identity head, the
    general one otherwise): a run equals the run at the effective beta, bit for bit."""
    beta = {} if "head_beta" in extra else {"beta": 1.5}  # head_beta replaces beta
    scaled = _job({**beta, "beta_scale": scale, **extra})
    f = FACTORS[scale]
    plain = {**extra, **{k: v * f for k, v in beta.items()}}
    if "head_beta" in extra:
        plain["head_beta"] = [b * f for b in extra["head_beta"]]
    direct = _job(plain)
    np.testing.assert_array_equal(job_dynamics(scaled).betas, job_dynamics(direct).betas)
    assert np.array_equal(simulate(scaled).observables, simulate(direct).observables,
                          equal_nan=True)
    assert scaled.id != _job({**beta, **extra}).id or scale == "none"


def test_beta_scale_is_a_sweepable_axis_and_part_of_the_job_id():
    cfg = config.from_dict({"name": "s", "model": {"d": 8, "n": 12},
                            "grid": {"beta_scale": ["none", "d", "log_n"]}})
    jobs = expand(cfg)
    assert len({j.id for j in jobs}) == 3
    assert [j.model.beta_factor for j in jobs] == [1.0, 8.0, math.log(12.0)]


def test_layer_models_scale_their_betas_too():
    a = _job({"layers": 2, "beta": 2.0, "beta_scale": "sqrt_d", "heads": 2}, {})
    b = _job({"layers": 2, "beta": 2.0 * math.sqrt(8.0), "heads": 2}, {})
    assert np.array_equal(simulate(a).observables, simulate(b).observables, equal_nan=True)


# ---------------------------------------------------------------- the start of a layer model

def test_a_file_start_keeps_its_rows_for_layernorm_placements(tmp_path):
    rows = np.random.default_rng(0).standard_normal((6, 4)) * 3
    np.save(tmp_path / "x.npy", rows)
    for norm, want in (("post", rows), ("pre", rows), ("sphere", rows / np.linalg.norm(
            rows, axis=1, keepdims=True))):
        cfg = {"name": "f", "model": {**LAYERS, "norm": norm},
               "init": {"kind": "file", "path": "x.npy"}}
        job = expand(config.from_dict(cfg, source=tmp_path / "c.yaml"))[0]
        np.testing.assert_allclose(initial_state(job), want, rtol=1e-15)
    flow = {"name": "f", "model": {"d": 4, "n": 6}, "init": {"kind": "file", "path": "x.npy"}}
    job = expand(config.from_dict(flow, source=tmp_path / "c.yaml"))[0]
    np.testing.assert_allclose(np.linalg.norm(initial_state(job), axis=1), 1.0)


def test_the_model_kind_is_decided_by_model_layers_and_states_what_differs():
    from sweep.config.kinds import DYNAMICS, LAYER_STACK
    from sweep.kernels.codes import LAYER_SERIES
    from sweep.storage.store import columns, save_times

    flow = config.Model(d=4, n=6)
    stack = config.Model(**LAYERS)
    assert flow.kind is DYNAMICS and stack.kind is LAYER_STACK
    assert (flow.kind.series_dim, stack.kind.series_dim) == ("time", "layer")
    assert flow.kind.clock and not stack.kind.clock
    integ = config.Integrate(t_max=1.0, save_every=0.25)
    assert flow.kind.record_values(flow, integ).tolist() == [0, 0.25, 0.5, 0.75, 1.0]
    assert stack.kind.record_values(stack, integ).tolist() == [0, 1, 2, 3]
    cfg = {"name": "k", "model": LAYERS, "init": {}, "integrate": {}, "grid": {}}
    job = next(iter(expand(config.from_dict(cfg))))
    assert columns(job, ("order_parameter",)) == ("order_parameter", *LAYER_SERIES)
    assert save_times(job).tolist() == [0, 1, 2, 3]
