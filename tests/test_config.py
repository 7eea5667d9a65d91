"""Config loading, overrides and every kind of bad input: exit 2, one line naming the key."""

import textwrap

import pytest
import yaml
from typer.testing import CliRunner

from sweep.cli import app
from sweep.config import schema as config
from sweep.config import yamltext
from sweep.config.grid import axes, expand

GOOD = {
    "name": "t",
    "model": {"attention": "softmax", "beta": 1.0, "d": 3, "n": 8},
    "init": {"kind": "uniform"},
    "integrate": {"method": "euler", "dt": 0.1, "t_max": 1.0, "save_every": 0.5},
    "grid": {"beta": [0.0, 2.0], "seed": {"range": [0, 2]}},
}


def write(tmp_path, cfg, name="c.yaml"):
    path = tmp_path / name
    path.write_text(cfg if isinstance(cfg, str) else yaml.safe_dump(cfg, sort_keys=False))
    return path


def plan(path, *extra):
    return CliRunner().invoke(app, ["plan", str(path), *extra])


def mutate(path, value):
    cfg = yaml.safe_load(yaml.safe_dump(GOOD, sort_keys=False))
    node = cfg
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
    return cfg


BAD = [
    ("model.beta", -1.0, "model.beta"),
    ("model.beta", "hot", "model.beta"),
    ("model.beta", float("nan"), "model.beta"),
    ("model.d", 1, "model.d"),
    ("model.d", 3.5, "model.d"),
    ("model.n", 0, "model.n"),
    ("model.n", True, "model.n"),
    ("model.attention", "sigmoid", "model.attention"),
    ("model.temperature", 1.0, "model.temperature"),
    ("integrate.dt", 0.0, "integrate.dt"),
    ("integrate.dt", -0.1, "integrate.dt"),
    ("integrate.save_every", 0.25, "integrate.save_every"),
    ("integrate.t_max", 1.25, "integrate.t_max"),
    ("integrate.method", "leapfrog", "integrate.method"),
    ("integrate.dtype", "float16", "integrate.dtype"),
    ("integrate.cluster_eps", 0.0, "integrate.cluster_eps"),
    ("init.kind", "gaussian-blob", "init.kind"),
    ("init.overlap", 1.0, "init.overlap"),
    ("init.jitter", -0.5, "init.jitter"),
    ("output.positions", "all", "output.positions"),
    ("grid.beta", [1.0, -2.0], "grid.beta[1]"),
    ("grid.beta", [], "grid.beta"),
    ("grid.beta", [1.0, 1.0], "grid.beta"),
    ("grid.beta", {"linspace": [0, 1]}, "grid.beta.linspace"),
    ("grid.beta", {"geomspace": [1, 2, 3]}, "grid.beta"),
    ("grid.beta", 2.0, "grid.beta"),
    ("grid.d", {"linspace": [2, 8, 4]}, "grid.d[0]"),
    ("grid.d", [1, 3], "grid.d[0]"),
    ("grid.temperature", [1, 2], "grid.temperature"),
    ("grid.seed", [-1], "grid.seed[0]"),
    ("grid.seed", {"range": [3, 3]}, "grid.seed.range"),
    ("grid.zip", [{"n": [4, 8], "dt": [0.1]}], "grid.zip[0].dt"),
    ("grid.zip", {"n": [4]}, "grid.zip"),
    ("name", "", "name"),
    ("name", None, "name"),
    ("colour", "red", "colour"),
]


@pytest.mark.parametrize("key,value,named", BAD, ids=[f"{k}={v!r}" for k, v, _ in BAD])
def test_bad_input_is_refused_at_plan_time(tmp_path, key, value, named):
    result = plan(write(tmp_path, mutate(key, value)))
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert named in line


def test_combination_errors_name_the_grid_point(tmp_path):
    cfg = mutate("init.kind", "orthonormal")
    cfg["grid"] = {"n": [2, 8], "d": [4]}
    del cfg["model"]["n"]
    result = plan(write(tmp_path, cfg))
    assert result.exit_code == 2
    assert "init.kind" in result.output and "n=8" in result.output


@pytest.mark.parametrize("text,named", [
    ("name: [unclosed\n", "c.yaml"),
    ("- just\n- a list\n", "c.yaml"),
    ("name: x\nmodel: 3\n", "model"),
    ("name: !!python/object/apply:os.system ['echo hi']\n", "c.yaml"),
])
def test_malformed_yaml(tmp_path, text, named):
    result = plan(write(tmp_path, text))
    assert result.exit_code == 2 and named in result.output
    assert "Traceback" not in result.output


def test_missing_config_file(tmp_path):
    result = plan(tmp_path / "nope.yaml")
    assert result.exit_code == 2 and "nope.yaml" in result.output


def test_set_overrides_by_dotted_path_yaml_typed(tmp_path):
    path = write(tmp_path, GOOD)
    cfg = config.load(path, ["model.d=4", "grid.beta={linspace: [0, 8, 33]}",
                             "integrate.dt=0.05"])
    assert cfg.model.d == 4 and cfg.integrate.dt == 0.05
    assert len(axes(cfg)[0]) == 33
    fixed = config.load(path, ["model.beta=2.5", "grid.beta=null"])
    assert fixed.model.beta == 2.5 and [a.name for a in axes(fixed)] == ["seed"]


@pytest.mark.parametrize("sets,named", [
    # a section value that an axis of the same key overrides at every grid point
    (["model.beta=2.5"], ("model.beta", "grid.beta", "--set grid.beta=null")),
    (["model.beta=1.0"], ("model.beta", "grid.beta")),  # --set always means it
    # a key that another key leaves unused at every grid point
    (["model.heads=2", "model.head_beta=[1, 3]"], ("grid.beta", "model.head_beta")),
    (["grid.beta=null", "model.beta=3", "model.heads=2", "model.head_beta=[1, 3]"],
     ("model.beta", "model.head_beta")),
    (["grid.overlap=[0.1, 0.2]"], ("grid.overlap", "init.kind")),
    (["init.spread=0.5"], ("init.spread", "init.kind")),
])
def test_settings_no_grid_point_uses_are_refused_at_plan_time(tmp_path, sets, named):
    result = plan(write(tmp_path, GOOD), *sum((["--set", s] for s in sets), []))
    assert result.exit_code == 2, result.output
    line, = result.output.strip().splitlines()
    assert all(word in line for word in named), line


def test_a_default_written_out_or_a_key_used_somewhere_is_fine(tmp_path):
    cfg = mutate("model.beta", 1.0)  # GOOD sweeps beta and states the default beta: 1.0
    assert plan(write(tmp_path, cfg)).exit_code == 0
    cfg["grid"] = {"kind": ["uniform", "equiangular"], "overlap": [0.0, 0.2], "n": [3],
                   "d": [8]}
    del cfg["model"]["n"], cfg["model"]["d"], cfg["init"]["kind"]
    assert plan(write(tmp_path, cfg)).exit_code == 0, plan(write(tmp_path, cfg)).output


def test_a_section_value_an_axis_sweeps_is_the_default_the_axis_overrides(tmp_path):
    cfg = mutate("model.beta", 2.5)
    cfg["model"]["n"] = 8
    cfg["grid"]["n"] = [4, 6]
    path = write(tmp_path, cfg)
    result = plan(path)
    assert result.exit_code == 0, result.output
    assert "model.beta = 2.5 overridden by grid.beta" in result.output
    assert "model.n = 8 overridden by grid.n" in result.output
    jobs = expand(config.load(path))
    assert {(j.model.beta, j.model.n) for j in jobs} == {(b, n) for b in (0.0, 2.0) for n in (4, 6)}
    without = expand(config.load(path, ["grid.beta=null"]))  # the axis commented out
    assert {j.model.beta for j in without} == {2.5} and {j.model.n for j in without} == {4, 6}
    assert plan(path, "--json").exit_code == 0
    typed = plan(path, "--set", "model.n=5")  # typed now, and it would do nothing
    assert typed.exit_code == 2 and typed.output.count("\n") == 1
    assert "model.n: 5 from --set is never used, grid.n sweeps n" in typed.output


@pytest.mark.parametrize("text,value", [("1e-3", 1e-3), ("1E5", 1e5), ("-2e-1", -0.2),
                                        ("5e+2", 500.0), (".5e1", 5.0), ("2", 2), ("2.5", 2.5)])
def test_numbers_as_physicists_write_them(tmp_path, text, value):
    assert yamltext.parse_yaml(text) == value and type(yamltext.parse_yaml(text)) is type(value)
    path = write(tmp_path, f"name: t\ngrid:\n  jitter: [{text.lstrip('-')}]\n")
    assert config.load(path).grid["jitter"] == [abs(value)]
    cfg = config.load(path, [f"model.noise={text.lstrip('-')}", "integrate.cluster_eps=1e-2"])
    assert cfg.model.noise == abs(value) and cfg.integrate.cluster_eps == 0.01


@pytest.mark.parametrize("text", [".inf", "-.inf", ".nan", "1e400"])
def test_non_finite_numbers_stay_refused_naming_the_key(tmp_path, text):
    result = plan(write(tmp_path, GOOD), "--set", f"model.noise={text}")
    assert result.exit_code == 2 and "model.noise" in result.output
    assert "finite" in result.output or ">=" in result.output, result.output


@pytest.mark.parametrize("item,named", [("model.beta", "model.beta"),
                                         ("model.beta.x=1", "model.beta"),
                                         ("model.d=two", "model.d")])
def test_bad_overrides(tmp_path, item, named):
    result = plan(write(tmp_path, GOOD), "--set", item)
    assert result.exit_code == 2 and named in result.output


def test_defaults_fill_everything_not_given(tmp_path):
    cfg = config.load(write(tmp_path, "name: tiny\n"))
    assert cfg.model.attention == "softmax" and cfg.integrate.dt == 0.1
    assert cfg.output.path == "results/tiny.nc"
    assert len(expand(cfg)) == 1


def test_config_objects_are_frozen(tmp_path):
    cfg = config.load(write(tmp_path, GOOD))
    with pytest.raises(AttributeError):
        cfg.model.beta = 3.0


def test_example_in_readme_shape_parses(tmp_path):
    text = textwrap.dedent("""
        name: condensation
        model: {attention: softmax, beta: 1.0, d: 3, n: 32}
        init: {kind: uniform, overlap: 0.0, jitter: 0.0}
        integrate: {method: euler, dt: 0.1, t_max: 30.0, save_every: 0.5,
                    cluster_eps: 1.0e-3, dtype: float64}
        grid:
          beta: {linspace: [0.1, 9.0, 90]}
          d: [2, 3, 8]
          seed: {range: [0, 16]}
          zip:
            - {n: [32, 128], dt: [0.1, 0.05]}
        output: {path: results/condensation.nc, positions: none}
    """)
    cfg = config.load(write(tmp_path, text))
    grid = axes(cfg)
    assert [a.name for a in grid] == ["beta", "d", "seed", "n"]
    assert [len(a) for a in grid] == [90, 3, 16, 2]


@pytest.mark.parametrize("item,line", [
    ("model.bta=2", "model.bta: unknown key (did you mean 'beta'? allowed: attention, beta"),
    ("model.attention=sofmax", "'sofmax' is not one of softmax | unnormalized | relu | "
                               "hardmax; did you mean 'softmax'?"),
    ("grid.bta=[1]", "grid.bta: unknown axis 'bta' (did you mean 'beta'? a key of model"),
    ("modle.n=3", "modle: unknown top-level key (did you mean 'model'? allowed: name"),
    ("model.zz=3", "model.zz: unknown key (allowed: attention"),  # nothing close: no guess
])
def test_unknown_keys_and_values_suggest_the_closest(tmp_path, item, line):
    result = plan(write(tmp_path, GOOD), "--set", item)
    assert result.exit_code == 2 and line in result.output, result.output
    assert result.output.count("\n") == 1
