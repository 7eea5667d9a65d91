"""Config inputs beyond plain type and range checks: YAML safety, paths, odd files."""

import os

import pytest
import yaml
from typer.testing import CliRunner

from sweep.cli import app
from sweep.config import inputs
from sweep.config import schema as config


def plan(path, *extra):
    return CliRunner().invoke(app, ["plan", str(path), *extra])


def one_line(result, code=2):
    assert result.exit_code == code, result.output
    line = result.output.strip()
    assert "\n" not in line and line.startswith("error: ") and "Traceback" not in line
    return line


def test_a_key_given_twice_is_an_error_with_its_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: t\nmodel:\n  beta: 1.0\n  beta: 2.0\n")
    line = one_line(plan(path))
    assert "c.yaml: line 4" in line and "'beta' appears twice" in line


def test_yaml_tags_never_build_objects(tmp_path):
    marker = tmp_path / "touched"
    path = tmp_path / "c.yaml"
    path.write_text(f"name: !!python/object/apply:os.system ['touch {marker}']\n")
    assert "c.yaml" in one_line(plan(path))
    assert not marker.exists()


def test_binary_or_directory_config(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"name: \xff\xfe\x00 t\n")
    assert "not a UTF-8 text file" in one_line(plan(path))
    assert "cannot read" in one_line(plan(tmp_path))


def test_names_and_paths_with_control_characters(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "a\0b"}))
    assert one_line(plan(path)).startswith("error: name:")
    path.write_text(yaml.safe_dump({"name": "t", "output": {"path": "r\0.nc"}}))
    assert one_line(plan(path)).startswith("error: output.path:")


def test_huge_values_are_shown_cut_short(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "model": {"d": "x" * 10_000}}))
    line = one_line(plan(path))
    assert line.startswith("error: model.d: expected an integer") and len(line) < 200


def test_input_paths_resolve_from_the_config_folder(tmp_path):
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "c.yaml").write_text("name: t\n")
    cfg = config.load(folder / "c.yaml")
    assert inputs.resolve("w/qk.npy", cfg.source) == folder / "w" / "qk.npy"
    assert inputs.resolve(str(tmp_path / "abs.npy"), cfg.source) == tmp_path / "abs.npy"
    assert cfg.output.path == "results/t.nc"  # outputs stay relative to the working dir


def test_equiangular_start_with_zero_overlap_needs_n_le_d(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "init": {"kind": "equiangular"},
                                    "model": {"n": 5, "d": 3}}))
    assert one_line(plan(path)).startswith("error: init.kind: equiangular with overlap 0")


def test_alias_bombs_are_refused_without_expanding_them(tmp_path):
    lines = ["name: bomb", "model:", "  beta:", "    - &a0 [lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"    - &a{i} [{', '.join([f'*a{i - 1}'] * 7)}]" for i in range(1, 12)]
    path = tmp_path / "c.yaml"
    path.write_text("\n".join(lines) + "\n")  # 7^12 (1.4e10) strings once expanded
    line = one_line(plan(path))
    assert line.startswith("error: model.beta: expected a number") and len(line) < 200


def bomb(levels=10, width=9):
    """A YAML flow list that expands to width^levels numbers: levels anchors deep."""
    text = f"&l0 [{', '.join(['1'] * width)}]"
    for i in range(1, levels):
        text = f"&l{i} [{text}, {', '.join([f'*l{i - 1}'] * (width - 1))}]"
    return text


def test_an_alias_bomb_in_head_beta_is_refused_at_once(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(f"name: t\nmodel:\n  heads: 2\n  head_beta: {bomb()}\n")
    line = one_line(plan(path))  # 9^10 = 3.5e9 numbers: repr'd whole, it never ends
    assert line.startswith("error: model.head_beta: expected a non-empty list")
    assert len(line) < 200
    line = one_line(plan(path, "--set", f"model.head_beta={bomb()}"))
    assert line.startswith("error: model.head_beta:") and len(line) < 200


@pytest.mark.parametrize("text", ["[" * 2000 + "]" * 2000, "{a: " * 2000 + "1" + "}" * 2000])
def test_deeply_nested_yaml_json_or_set_value_is_one_line(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(f"name: t\nmodel: {text}\n")
    assert "c.yaml: nested too deeply" in one_line(plan(path))
    path.with_suffix(".json").write_text('{"name": "t", "model": ' + "[" * 2000 + "]" * 2000 + "}")
    assert "c.json: nested too deeply" in one_line(plan(path.with_suffix(".json")))
    path.write_text("name: t\n")
    line = one_line(plan(path, "--set", f"model.beta={text}"))
    assert line.startswith("error: --set model.beta: value") and "nested too deeply" in line


def test_yaml_merge_keys_are_supported_and_explicit_keys_win(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: t\nmodel: &m {d: 4, beta: 2.0}\n"
                    "init: {<<: {kind: clusters, clusters: 2}, clusters: 3}\n"
                    "grid:\n  zip:\n    - {<<: {n: [4, 6]}, dt: [0.1, 0.05]}\n")
    cfg = config.load(path)
    assert (cfg.model.d, cfg.init.kind, cfg.init.clusters) == (4, "clusters", 3)
    assert plan(path).exit_code == 0
    path.write_text("name: t\nmodel: {<<: {d: 4}, d: 5, d: 6}\n")  # explicit twice: an error
    assert "'d' appears twice" in one_line(plan(path))


def test_a_fifo_or_device_as_config_is_refused_without_reading(tmp_path):
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    assert one_line(plan(fifo)) == f"error: {fifo}: cannot read (a FIFO, not a regular file)"
    assert "a device, not a regular file" in one_line(plan("/dev/zero"))  # never ends


def test_unreadable_config_is_one_line_not_a_usage_box(tmp_path, monkeypatch):
    path = tmp_path / "c.yaml"
    path.write_text("name: t\n")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # what a non-owner sees
    assert plan(path).exit_code == 0  # Click does not judge readability ...
    real_open = os.open

    def refuse(name, *args, **kwargs):
        if str(name) == str(path):
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)  # ... the reader does, in one line
    assert one_line(plan(path)) == f"error: {path}: cannot read (Permission denied)"


def test_set_with_an_empty_key_part_names_it(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: t\n")
    for key in (".model", "model.", "model..beta"):
        line = one_line(plan(path, "--set", f"{key}=1"))
        assert line.startswith(f"error: --set {key}: a key path with an empty part")


@pytest.mark.parametrize("where,given,word", [
    (where, given, word) for where in ("output.path", "--out") for given, word in [
        (".", "is a directory"), ("..", "is a directory"), ("out/x.parts", "is the name of"),
        ("x.jobs", "is the name of the folder")]] + [("output.path", "out/", "is a directory")])
def test_output_paths_that_cannot_be_results_are_refused_at_plan_time(tmp_path, monkeypatch,
                                                                        where, given, word):
    """(--out loses a trailing slash to Click's Path.)"""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "model": {"n": 2, "d": 2}}))
    args = ("--set", f"output.path={given}") if where == "output.path" else ("--out", given)
    command = "plan" if where == "output.path" else "run"
    line = one_line(CliRunner().invoke(app, [command, str(path), *args]))
    assert line.startswith(f"error: {where}: {given} ") and word in line
    assert not list(tmp_path.glob("**/*.npz"))  # nothing computed


def test_output_path_expands_the_home_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "output": {"path": "~/x.nc"}}))
    assert config.load(path).output.path == str(tmp_path / "home" / "x.nc")
