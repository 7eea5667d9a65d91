"""Property-based checks over generated configs (hypothesis).

Valid configs plan without error and expand to the product of their axis lengths; a valid
config with one mutation (a wrong type, a negative size, an unknown key, a huge value) is
refused by `sweep plan` with exit 2 and one line naming the key, never a traceback.
"""

import math

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from helpers import spelled_out_id
from sweep.cli import app
from sweep.config import schema as config
from sweep.config.grid import expand

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

distinct_floats = st.lists(st.floats(0.0, 20.0, allow_nan=False), min_size=1, max_size=4,
                           unique=True)
distinct_ints = st.lists(st.integers(2, 8), min_size=1, max_size=3, unique=True)


@st.composite
def axis(draw, name):
    """(declaration, length) for one grid axis."""
    if name == "beta":
        form = draw(st.sampled_from(["list", "linspace", "logspace"]))
        if form == "list":
            values = draw(distinct_floats)
            return values, len(values)
        num = draw(st.integers(1, 6))
        low = draw(st.floats(0.0, 1.0)) if form == "linspace" else draw(st.integers(-2, 0))
        high = low + draw(st.floats(0.5, 5.0)) if form == "linspace" else low + 1
        return {form: [low, high, num]}, num
    if name == "seed":
        start, count = draw(st.integers(0, 100)), draw(st.integers(1, 5))
        return {"range": [start, start + count]}, count
    values = draw(distinct_ints)
    return values, len(values)


@st.composite
def valid_configs(draw):
    """(raw config mapping, expected job count)."""
    dt = draw(st.sampled_from([0.05, 0.1, 0.2, 0.25]))
    save_every = dt * draw(st.integers(1, 4))
    raw = {
        "name": draw(st.from_regex(r"[a-z][a-z0-9_-]{0,11}", fullmatch=True)),
        "model": {"attention": draw(st.sampled_from(["softmax", "unnormalized"])),
                  "beta": draw(st.floats(0.0, 20.0)), "d": draw(st.integers(2, 8)),
                  "n": draw(st.integers(1, 8))},
        "init": {"kind": "uniform", "jitter": draw(st.floats(0.0, 1.0))},
        "integrate": {"method": draw(st.sampled_from(["euler", "layer", "rk4"])), "dt": dt,
                      "save_every": save_every, "t_max": save_every * draw(st.integers(1, 5)),
                      "dtype": draw(st.sampled_from(["float64", "float32"]))},
        "output": {"positions": draw(st.sampled_from(["none", "final", "trajectory"]))},
        "grid": {},
    }
    count = 1
    for name in draw(st.lists(st.sampled_from(["beta", "d", "n", "seed"]), unique=True,
                              max_size=4)):
        raw["grid"][name], size = draw(axis(name))
        raw["model"].pop(name, None)  # a swept key set in its section too is refused
        count *= size
    if draw(st.booleans()):
        size = draw(st.integers(1, 3))
        raw["grid"]["zip"] = [{"jitter": [0.1 * (i + 1) for i in range(size)],
                               "cluster_eps": [1e-3 * (i + 1) for i in range(size)]}]
        raw["init"].pop("jitter")
        count *= size
    return raw, count


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("configs")


def plan(folder, raw):
    path = folder / "c.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return CliRunner().invoke(app, ["plan", str(path)])


@SETTINGS
@given(valid_configs())
def test_valid_configs_plan_and_expand_to_the_product_of_axes(folder, case):
    raw, count = case
    cfg = config.from_dict(yaml.safe_load(yaml.safe_dump(raw)))
    jobs = expand(cfg)
    assert len(jobs) == count
    assert [j.index for j in jobs] == list(range(count))
    assert len({j.id for j in jobs}) == count
    assert [j.id for j in jobs] == [spelled_out_id(j, cfg.output.positions) for j in jobs]
    result = plan(folder, raw)
    assert result.exit_code == 0, result.output
    assert f"{count} job(s)" in result.output


KEYS = {"model": ["attention", "beta", "d", "n"], "init": ["kind", "jitter"],
        "integrate": ["method", "dt", "save_every", "t_max", "dtype"],
        "output": ["positions", "path"]}
KEY_PATHS = [f"{s}.{k}" for s, keys in KEYS.items() for k in keys]


def wrong_type_for(key):
    numeric = key.split(".")[1] in {"beta", "d", "n", "jitter", "dt", "save_every", "t_max"}
    texts = st.sampled_from(["fast", "", "1e", "[1]"])
    others = st.sampled_from([[1, 2], {"a": 1}, True, None])
    return st.one_of(texts, others) if numeric else st.one_of(st.integers(), st.floats(),
                                                               others)


@st.composite
def mutations(draw):
    """(mutated raw config, text the error line must contain or None)."""
    raw, _ = draw(valid_configs())
    kind = draw(st.sampled_from(["type", "negative", "unknown", "huge", "grid", "section"]))
    if kind == "section":
        section = draw(st.sampled_from(["model", "init", "integrate", "output", "grid"]))
        raw[section] = draw(st.sampled_from([3, "softmax", [1, 2], True]))
        return raw, section
    if kind == "type":
        key = draw(st.sampled_from(KEY_PATHS))
        section, name = key.split(".")
        raw[section][name] = draw(wrong_type_for(key))
        return raw, key
    if kind == "negative":
        key = draw(st.sampled_from(["model.n", "model.d", "integrate.dt", "model.beta",
                                    "init.jitter", "integrate.t_max"]))
        section, name = key.split(".")
        raw[section][name] = -draw(st.integers(1, 10**6))
        return raw, key
    if kind == "unknown":
        section = draw(st.sampled_from([None, "model", "init", "integrate", "output"]))
        name = draw(st.from_regex(r"[a-z]{3,10}", fullmatch=True))
        known = config.TOP_KEYS if section is None else KEYS[section] + ["overlap",
                                                                           "cluster_eps"]
        if name in known:
            name += "_x"
        (raw if section is None else raw[section])[name] = 1
        return raw, name if section is None else f"{section}.{name}"
    if kind == "huge":
        raw["grid"] = {}  # a lone huge value, so that it is what the error names
        key, value = draw(st.sampled_from([
            ("model.n", 10**13), ("model.d", 10**14), ("model.n", 2**70), ("model.beta", 1e400),
            ("integrate.dt", 1e-300), ("integrate.t_max", 1e300)]))
        section, name = key.split(".")
        raw[section][name] = value
        return raw, key
    huge = draw(st.sampled_from([
        {"beta": {"linspace": [0, 1, 10**12]}}, {"seed": {"range": [0, 10**15]}},
        {"beta": {"logspace": [0, 400, 3]}}, {"beta": [1.0, 1.0]}, {"beta": []},
        {"seed": {"range": [0, 2**80]}}, {"n": [0, 4]},
        {"beta": {"linspace": [0, 1, 2000]}, "seed": {"range": [0, 1000]}}]))
    raw["grid"] = huge
    return raw, "grid"


@SETTINGS
@given(mutations())
def test_mutated_configs_exit_2_with_one_line(folder, case):
    raw, named = case
    result = plan(folder, raw)
    assert result.exit_code == 2, (raw, result.output)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    line = result.output.strip()
    assert "\n" not in line and line.startswith("error: ") and "Traceback" not in line
    assert named in line, line


def test_product_count_matches_math_prod_for_a_known_grid():
    raw = {"name": "x", "grid": {"beta": {"linspace": [0, 1, 7]}, "d": [2, 3],
                                 "seed": {"range": [0, 5]}}}
    assert len(expand(config.from_dict(raw))) == math.prod([7, 2, 5])


override_keys = st.sampled_from(KEY_PATHS + ["grid.beta", "grid.seed", "grid.zip", "name",
                                             "model", "grid", "model.beta.x", "x.y.z", ""])
override_values = st.one_of(
    st.sampled_from(["2.5", "-1", "0", "1e400", "null", "[1, 2]", "{linspace: [0, 1, 3]}",
                     "{range: [0, 3]}", "[]", "{a: 1}", "'[unclosed", "softmax", "rk4", "yes"]),
    st.text(max_size=12))


@SETTINGS
@given(st.lists(st.tuples(override_keys, override_values), max_size=3))
def test_any_set_override_plans_or_exits_2_with_one_line(folder, overrides):
    path = folder / "base.yaml"
    path.write_text(yaml.safe_dump({"name": "base", "grid": {"beta": [0.0, 1.0]}}))
    args = ["plan", str(path)]
    for key, value in overrides:
        args += ["--set", f"{key}={value}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 2), (overrides, result.output)
    assert isinstance(result.exception, (SystemExit, type(None))), repr(result.exception)
    if result.exit_code == 2:
        line = result.output.strip()
        assert "\n" not in line and line.startswith("error: ") and "Traceback" not in line
