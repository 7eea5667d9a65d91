"""Config inputs beyond plain type and range checks: YAML safety, paths, odd files."""

import yaml
from typer.testing import CliRunner

from sweep.cli import app
from sweep.core import config, inputs


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
