"""A seeded campaign of bad inputs and faults: mutations of valid configs, --set strings,
scheduler variables, input arrays, damaged parts, model folders and results files.

Each case is a function of a fresh folder that writes what the case needs there and returns
the command line (and environment) to run; tests/test_campaign.py runs every case through
the CLI and checks the promise of the README: no traceback, exit code 0, 1, 2 or 130, and a
refusal in one line on stderr. Everything is drawn from random.Random(seed), so a failing
case is found again by its category and number.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

TINY = {"name": "c", "model": {"d": 4, "n": 3},  # rows: a part per job
        "integrate": {"dt": 0.1, "t_max": 0.2, "save_every": 0.1},
        "grid": {"beta": [0.0, 1.0], "seed": {"range": [0, 2]}}}
BASES = [TINY,
         {"name": "z", "model": {"d": 3, "n": 4, "heads": 2, "head_beta": [1.0, 2.0],
                                 "mask": "window:1"},
          "init": {"kind": "clusters", "clusters": 2},
          "grid": {"zip": [{"n": [4, 5], "dt": [0.1, 0.05]}], "attention": ["softmax", "relu"]},
          "integrate": {"t_max": 0.5, "save_every": 0.5}, "output": {"positions": "final"}}]

BAD_VALUES = [None, True, -1, 0, 10**30, 1e308, -1e-300, "x", "", "[/b]", "[bold]x[/]",
              ":smile:", "a\tb", "\u00b2", "\u0663", "1e3", [], [1, 2], {"a": 1}, [[[]]], "~/x",
              "x" * 5000, {"linspace": [0, 1, 10**7]}, {"range": [0, 10**9]}, {"range": [0]},
              [0.5, 0.5], "window:99", "topk:0", "gaussian", "m.npy", "../../etc/passwd"]
WORDS = ["beta", "d", "n", "heads", "head_beta", "mask", "qk", "v", "ffn", "noise", "kind",
         "path", "dt", "t_max", "save_every", "dtype", "method", "seed", "zip", "model.beta",
         "init.kind", "foo", "", "\u00b2", "[/b]", "x" * 300]
OUTPUTS = ["~/x.nc", ".", "..", "out/", "x.parts", "r.jobs", "a[/b] [word].nc", "a b $(x).nc",
           "r.nc", "sub/dir/r.nc", "/proc/r.nc", ":smile:.nc"]


def bomb(levels: int = 10, width: int = 9) -> str:
    """A flow list that expands to width^levels numbers."""
    text = f"&l0 [{', '.join(['1'] * width)}]"
    for i in range(1, levels):
        text = f"&l{i} [{text}, {', '.join([f'*l{i - 1}'] * (width - 1))}]"
    return text


YAML_VALUES = ["1", "-1", "1e3", "1E5", "nan", ".inf", "[1, 2]", "[]", "{}", "~", "null", "yes",
               "{linspace: [0, 1, 5]}", "{linspace: [0, 1, 1e9]}", "{range: [0, 99999999999]}",
               "{logspace: [-300, 300, 3]}", "[/b]", "'[/b]'", '"[word] x"', ":smile:", "\u00b2",
               "\u0663", "!!python/object/apply:os.system [ls]", "&a [*a]", "{<<: {d: 2}, n: 3}",
               "0x10", "1_000", "[" * 2000 + "]" * 2000, "{a: " * 1500 + "1" + "}" * 1500,
               bomb(), "'" + "x" * 10000 + "'", "[softmax, relu]", "{a: 1, a: 2}", "- 1\n- 2",
               "[0.0, 1.0, 1.0]", "gaussian", "window:1", "causal", "float32", "rk4"]
KEYS = ["model.beta", "model.d", "model.n", "model.heads", "model.head_beta", "model.mask",
        "model.qk", "model.attention", "model.noise", "init.kind", "init.path", "integrate.dt",
        "integrate.t_max", "integrate.save_every", "integrate.method", "integrate.dtype",
        "grid.beta", "grid.seed", "grid.zip", "grid.n", "grid.head_beta", "output.path",
        "output.positions", "name", ".model", "model.", "model..beta", "foo", "model.foo",
        "model.beta.x", "grid", "", "\u00b2", "[/b]", "k" * 500, "model"]
SCHEDULER_VALUES = ["0", "1", "3", "-1", "", " 2 ", "\u00b2", "\u0663", "1_0", "2.0", "0x1",
                    "99999999999999999999", "abc", "1/2", "0/0", "5/4", " 1 / 2 ", "undefined"]
SCHEDULER_NAMES = ["SWEEP_SHARD", "SWEEP_SHARDS", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN",
                   "SLURM_ARRAY_TASK_COUNT", "SGE_TASK_ID", "SGE_TASK_FIRST", "SGE_TASK_LAST",
                   "SGE_TASK_STEPSIZE", "PBS_ARRAY_INDEX", "LSB_JOBINDEX", "SLURM_CPUS_PER_TASK",
                   "NCPUS", "NSLOTS", "LSB_DJOB_NUMPROC"]


@dataclass
class Case:
    category: str
    number: int
    make: Callable[[Path], tuple[list, dict | None]]  # folder -> (sweep arguments, env)

    def __str__(self) -> str:
        return f"{self.category} #{self.number}"


# ---------------------------------------------------------------- config files

def _mutated_config(rng: random.Random) -> dict:
    raw = json.loads(json.dumps(rng.choice(BASES)))
    for _ in range(rng.randint(1, 3)):
        what = rng.random()
        section = rng.choice(["model", "init", "integrate", "grid", "output"])
        if what < 0.45:
            _mapping(raw, section)[rng.choice(WORDS)] = rng.choice(BAD_VALUES)
        elif what < 0.6:
            raw[section] = rng.choice(BAD_VALUES)
        elif what < 0.7:
            _mapping(raw, "output")["path"] = rng.choice(OUTPUTS)
        elif what < 0.8:
            raw[rng.choice(["name", "extra", "Model"])] = rng.choice(BAD_VALUES)
        elif what < 0.9 and raw:
            raw.pop(rng.choice(list(raw)), None)
        else:
            _mapping(raw, "grid")[rng.choice(WORDS)] = rng.choice(BAD_VALUES)
    return raw


def _mapping(raw: dict, key: str) -> dict:
    if not isinstance(raw.get(key), dict):
        raw[key] = {}
    return raw[key]


def _raw_text(rng: random.Random, text: str) -> bytes:
    """A config's text damaged the way files are: cut, spliced, mis-encoded."""
    kind = rng.randrange(10)
    if kind == 0:
        return text[: rng.randrange(len(text))].encode()
    if kind == 1:
        at = rng.randrange(len(text))
        return (text[:at] + rng.choice(["\t", ":", "- ", "{", "&x ", "*x", "\x00", "?"])
                + text[at:]).encode()
    if kind == 2:
        return text.encode() + b"\xff\xfe\x80"
    if kind == 3:
        key = rng.choice(["model:\n  head_beta", "model:\n  beta", "grid:\n  beta", "name"])
        return f"{text}\n{key}: {bomb(rng.randint(3, 12))}\n".encode()
    if kind == 4:
        return f"name: c\nmodel: {'[' * 2000}{']' * 2000}\n".encode()
    if kind == 5:
        return (b"name: c\nmodel: &m {d: 2, n: 3}\ninit: {<<: {kind: uniform}, jitter: 0.1}\n"
                b"integrate: {<<: {dt: 0.1}, t_max: 0.2, save_every: 0.1}\n")
    if kind == 6:
        return rng.choice([b"", b"null", b"[]", b"42", b"\xef\xbb\xbfname: c\n",
                           b"--- !!python/object/apply:os.system [ls]\n"])
    if kind == 7:
        lines = text.splitlines()
        at = rng.randrange(len(lines))
        return "\n".join(lines[: at + 1] + lines[at:]).encode()  # a line twice
    if kind == 8:
        return ('{"name": "c", "model": ' + "[" * 3000 + "]" * 3000 + "}").encode()
    return text.replace("name: c", "name: \"[/b] c\"").encode()


NOT_FILES = (os.mkfifo, lambda p: p.symlink_to("/dev/zero"), Path.mkdir)


def not_a_file(rng: random.Random, path: Path) -> Path:
    """path made a FIFO (a reader waits forever), a link to /dev/zero (never ends) or a
    folder, in place of a file."""
    if os.path.lexists(path):
        path.unlink()
    rng.choice(NOT_FILES)(path)
    return path


def config_case(rng: random.Random) -> Callable:
    kind, raw = rng.random(), _mutated_config(rng)
    commands = [["plan"]] * 17 + [["plan", "--json"], ["run"], ["status"]]
    command = rng.choice(commands)
    if command == ["run"]:  # a tiny sweep whose only flaw is its text: the run stays short
        raw = {**TINY, "name": rng.choice(["c", "[/b]", "x y"]),
               "output": {"path": rng.choice(OUTPUTS)}}

    def make(folder: Path):
        path = folder / "c.yaml"
        if kind < 0.6 or command == ["run"]:
            path.write_text(yaml.safe_dump(raw, allow_unicode=True))
        elif kind < 0.92:
            path.write_bytes(_raw_text(rng, yaml.safe_dump(raw)))
        elif kind < 0.97:
            not_a_file(rng, path)
        return [*command[:1], path, *command[1:]], None
    return make


# ---------------------------------------------------------------- --set strings

def set_case(rng: random.Random) -> Callable:
    sets = []
    for _ in range(rng.randint(1, 3)):
        key, value = rng.choice(KEYS), rng.choice(YAML_VALUES)
        sets += ["--set", rng.choice([f"{key}={value}", f"{key}{value}", f" {key} = {value}"])]

    def make(folder: Path):
        path = folder / "c.yaml"
        path.write_text(yaml.safe_dump(rng.choice(BASES)))
        return ["plan", path, *sets], None
    return make


# ---------------------------------------------------------------- scheduler variables

def scheduler_case(rng: random.Random, shared: Path) -> Callable:
    env = {rng.choice(SCHEDULER_NAMES): rng.choice(SCHEDULER_VALUES)
           for _ in range(rng.randint(1, 4))}
    if "SWEEP_SHARD" in env and rng.random() < 0.6:
        env["SWEEP_SHARD"] = f"{rng.choice(SCHEDULER_VALUES)}/{rng.choice(SCHEDULER_VALUES)}"
    shard = (["--shard", f"{rng.choice(SCHEDULER_VALUES)}/{rng.choice(SCHEDULER_VALUES)}"]
             if rng.random() < 0.2 else [])
    command = rng.choice(["run", "run", "plan", "status"])

    def make(folder: Path):
        out = ["--out", shared / "r.nc"] if command != "plan" else []
        return [command, shared / "c.yaml", *out, *(shard if command == "run" else [])], env
    return make


# ---------------------------------------------------------------- input arrays

def _npy_bytes(array) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def cut_or_flipped(rng: random.Random, data: bytes) -> bytes:
    """data cut short at a random byte, or with one random byte changed."""
    at = rng.randrange(len(data))
    return data[:at] if rng.random() < 0.5 else data[:at] + rng.randbytes(1) + data[at + 1:]


def _bad_array(rng: random.Random, good: np.ndarray, path: Path) -> None:
    data = _npy_bytes(good)
    kind = rng.randrange(14)
    if kind in (0, 1):
        path.write_bytes(cut_or_flipped(rng, data))
    elif kind == 2:
        path.write_bytes(data + rng.randbytes(rng.randint(1, 64)))
    elif kind == 3:
        np.savez(path.with_suffix(".npz"), a=good)
        path.with_suffix(".npz").rename(path)
    elif kind == 4:
        with open(path, "wb") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False,
                                                     "shape": (10**6, 10**6)})
    elif kind == 5:
        path.write_bytes(_npy_bytes(rng.choice([good + 1j, good.astype(str),
                                                np.array([object()] * good.size), good[0],
                                                np.full(good.shape, np.nan), good.T.copy(),
                                                np.zeros((0,) + good.shape)])))
    elif kind in (6, 7):
        not_a_file(rng, path)
    elif kind in (8, 9):
        path.write_bytes(b"")
    elif kind == 10:
        path.write_bytes(_npy_bytes(good.astype(">f4")))  # valid: another byte order
    elif kind == 11:
        path.write_bytes(_npy_bytes(np.asfortranarray(np.stack([good, good]))))
    else:
        path.write_bytes(rng.randbytes(rng.randint(0, 300)))


def input_case(rng: random.Random) -> Callable:
    key = rng.choice(["qk", "v", "ffn", "init"])
    command = rng.choice(["plan"] * 5 + ["run"])

    def make(folder: Path):
        raw = json.loads(json.dumps(TINY))
        start = np.random.default_rng(0).standard_normal((3, 2))
        if key == "init":
            raw["init"] = {"kind": "file", "path": "m.npy"}
        else:
            raw["model"][key] = "m.npy"
        _bad_array(rng, start if key == "init" else np.eye(2), folder / "m.npy")
        (folder / "c.yaml").write_text(yaml.safe_dump(raw))
        out = ["--out", folder / "r.nc"] if command == "run" else []
        return [command, folder / "c.yaml", *out], None
    return make


# ---------------------------------------------------------------- damaged parts

def _rewrite_member(path: Path, name: str, data: bytes | None) -> None:
    """The part with member `name` replaced by raw .npy bytes (or removed: None)."""
    with zipfile.ZipFile(path) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    if data is None:
        members.pop(f"{name}.npy", None)
    else:
        members[f"{name}.npy"] = data
    with zipfile.ZipFile(path, "w") as z:
        for member, content in members.items():
            z.writestr(member, content)


def _damage_part(rng: random.Random, path: Path, other: Path) -> None:
    data, kind = path.read_bytes(), rng.randrange(12)
    member = rng.choice(["meta", "observables", "status", "wall_seconds", "positions"])
    if kind in (0, 1):
        path.write_bytes(cut_or_flipped(rng, data))
    elif kind == 2:
        header = {"descr": rng.choice(["<f8", "<U5", "|i1", "<c16"]), "fortran_order": False,
                  "shape": rng.choice([(10**6, 10**6), (), (3, 8), (2**62,)])}
        import io

        buffer = io.BytesIO()
        np.lib.format.write_array_header_1_0(buffer, header)
        _rewrite_member(path, member, buffer.getvalue() + b"\0" * rng.randrange(64))
    elif kind == 3:
        value = rng.choice([np.full((3, 8), "x"), np.array([object()]), np.array(5.0),
                            np.zeros((3, 9)), np.array(json.dumps([1, 2])),
                            np.array("[" * 5000 + "]" * 5000), np.array('{"job_id": 7}'),
                            np.array("x" * 100)])
        _rewrite_member(path, member, _npy_bytes(value))
    elif kind == 4:
        _rewrite_member(path, member, None)
    elif kind in (5, 6, 7):
        not_a_file(rng, path)
    elif kind == 8:
        path.write_bytes(b"")
    elif kind == 9:
        shutil.copyfile(other, path)
    elif kind == 10:
        path.write_bytes(rng.randbytes(len(data)))
    else:
        (path.parent / f".{path.stem}.somehost.1.2.tmp").write_bytes(data[:10])  # a dead temp


def part_case(rng: random.Random, pristine: Path) -> Callable:
    command = rng.choice(["merge", "status", "run"])
    picks = rng.sample(range(4), rng.randint(1, 2))

    def make(folder: Path):
        shutil.copytree(pristine, folder, dirs_exist_ok=True)
        parts = sorted((folder / "r.parts").glob("*.npz"))
        for i in picks:
            _damage_part(rng, parts[i], parts[(i + 1) % len(parts)])
        return [command, folder / "c.yaml", "--out", folder / "r.nc"], None
    return make


# ---------------------------------------------------------------- model folders

def _safetensors_header(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + size]), raw[8 + size:]


def _damage_model(rng: random.Random, folder: Path) -> None:
    target = rng.choice(["model.safetensors", "config.json", "tokenizer.json"])
    path, kind = folder / target, rng.randrange(10)
    if kind == 0:
        not_a_file(rng, path)
    elif kind == 1:
        path.write_bytes(cut_or_flipped(rng, path.read_bytes()))
    elif target == "model.safetensors":
        header, data = _safetensors_header(path)
        name = rng.choice([k for k in header if k != "__metadata__"])
        field = rng.choice(["dtype", "shape", "data_offsets"])
        header[name][field] = rng.choice([-8, [-8, 0], [0, 10**12], [3], "F32", "Q", None,
                                          [1.5, 2], [[1]], [0, 2**40], [2**62, 2**62]])
        if rng.random() < 0.15:
            header = rng.choice([[], 3, "x", None])
        text = json.dumps(header).encode()
        size = len(text) if rng.random() < 0.9 else rng.choice([0, 2**40, len(text) + 9])
        path.write_bytes(struct.pack("<Q", size) + text + data)
    else:
        spec = json.loads(path.read_text())
        if rng.random() < 0.15:
            spec = rng.choice([[], "x", 3, None, {}])
        elif target == "config.json":
            spec[rng.choice(["hidden_size", "num_attention_heads", "num_hidden_layers",
                             "layer_norm_eps", "intermediate_size"])] = rng.choice(
                [0, -1, 3, 10**9, "8", None, True, 1.5, [], 7])
        else:
            part = rng.choice(["model", "normalizer", "post_processor", "added_tokens"])
            spec[part] = rng.choice([None, [], "x", 5, {"vocab": [1]}, {"type": "X"},
                                     {"single": [5]}, [{"content": 5, "special": True}],
                                     {"vocab": {"a": -1}}, {"lowercase": "no"}])
        path.write_text(json.dumps(spec) if rng.random() < 0.9 else "[" * 5000)


def model_case(rng: random.Random, pristine: Path) -> Callable:
    command, onto_file = rng.choice(["probe", "probe", "extract"]), rng.random() < 0.1

    def make(folder: Path):
        model = folder / "model"
        shutil.copytree(pristine, model)
        _damage_model(rng, model)
        (folder / "t.txt").write_text(rng.choice(["hello the world", "[CLS] a [SEP] b",
                                                  "", "\x00\ufffd", "the " * 30]))
        out = folder / ("x.nc" if command == "probe" else "m")
        if onto_file:
            out.write_text("a file")
        text = ["--text", folder / "t.txt"] if command == "probe" else []
        return [command, *text, "--model", model, "-o", out], None
    return make


# ---------------------------------------------------------------- results files

def results_case(rng: random.Random, pristine: Path) -> Callable:
    command = rng.choice(["show", "threshold", "plot"])
    damage = rng.randrange(6)

    def make(folder: Path):
        import netCDF4

        path = folder / "r.nc"
        shutil.copyfile(pristine / "r.nc", path)
        if damage == 0:
            with netCDF4.Dataset(path, "a") as ds:
                ds.history = "sweep run c.yaml --set grid.attention=[softmax,relu] [/x]"
                ds.title = "[bold]:smile: [/i]"
        elif damage == 1:
            path.write_bytes(path.read_bytes()[: rng.randrange(2000)])
        elif damage == 2:
            not_a_file(rng, path)
        (folder / "file").write_text("a file")
        outs = [path, "/proc/x.nc", folder / "file" / "x.nc", folder / "o.nc", folder]
        args = [command, path]
        if command != "show":
            args += ["--var", rng.choice(["clustered_fraction", "status", "nope", "t_cluster"])]
            args += ["--time", rng.choice(["final", "all", "max", "0.1", "-1", "nope", "nan"])]
        if command == "threshold":
            args += ["--along", rng.choice(["beta", "seed", "time", "nope"]), "-o",
                     rng.choice(outs)]
        if command == "plot":
            args += ["--x", rng.choice(["beta", "time", "seed", "nope"]),
                     "--y", rng.choice(["beta", "time", "seed", "nope"]),
                     "-o", rng.choice(["/proc/f.png", folder / "file" / "f.png", folder / "f.txt",
                                       folder / "f.png"])]
        return args, None
    return make


# ---------------------------------------------------------------- crafted files, misuse

def _crafted_config_attribute(path: Path, rng: random.Random) -> None:
    """A results file whose sweep_config is not the YAML text sweep writes."""
    import netCDF4

    with netCDF4.Dataset(path, "a") as ds:
        ds.delncattr("sweep_config")
        ds.setncattr("sweep_config", rng.choice([
            7, np.arange(5), np.array([1.5, 2.5]), "x" * 3_000_000, "[" * 5000, "- a\n- b",
            "name: c\nmodel: 3\n", "", "{model: {n: [1, 2]}}"]))


def _threshold_along_beta(results: Path, folder: Path, time: str | None) -> Path:
    from sweep import api

    out = folder / f"th-{time or 'final'}.nc"  # th-max.nc: taken over time, no time axis
    api.threshold(results, "clustered_fraction", along="beta", level=0.5, time=time,
                  bootstrap=20, out=out)
    return out


def _dangling(folder: Path, name: str) -> Path:
    link = folder / name
    link.symlink_to(folder / "nowhere" / name)
    return link


def misuse_case(rng: random.Random, pristine: Path) -> Callable:
    kind = rng.randrange(10)

    def make(folder: Path):
        shutil.copytree(pristine, folder, dirs_exist_ok=True)
        cfg, res = folder / "c.yaml", folder / "r.nc"
        if kind == 0:
            _crafted_config_attribute(res, rng)
            return rng.choice([["show", res], ["plot", res, "--var", "clustered_fraction",
                                                 "--x", "beta", "--y", "time", "-o",
                                                 folder / "f.png"]]), None
        if kind == 1:
            th = _threshold_along_beta(res, folder, rng.choice([None, "all", "max"]))
            return ["plot", res, "--var", "clustered_fraction", "--x", "beta", "--y", "time",
                    "--threshold", th, "-o", folder / "f.png"], None
        if kind == 2:
            return ["theory", "equiangular", "--n", "2", "--save-every",
                    rng.choice(["1e-300", "1e-12", "0", "-1", "nan", "inf"]),
                    "--t-max", rng.choice(["30", "1e300", "1e-300"])], None
        if kind == 3:
            big = ["1e308", "1e6", "1e5", "2", "0", "inf", "nan", "-1"]
            return ["theory", rng.choice(["kappa-c", "beta-star"]), "--d", rng.choice(big),
                    *(["--beta", rng.choice(big + ["1e4", "3e4"])] * (rng.random() < 0.8))
                    ], None
        if kind == 4:  # a parts folder that cannot be listed (chmod 000: refuses non-root)
            (folder / "r.parts").chmod(0)
            return [rng.choice(["merge", "status"]), cfg, "--set", f"output.path={res}"], None
        if kind == 5:
            return ["threshold", res, "--var", "clustered_fraction", "--level", "0.5",
                    "--direction", rng.choice(["sideways", "UP", "", "up,down"])], None
        if kind == 6:
            link = _dangling(folder, rng.choice(["o.nc", "o.parts"]))
            out = link if link.suffix == ".nc" else link.with_suffix(".nc")
            return ["run", cfg, "--out", out], None
        if kind == 7:
            return ["run", cfg, "--out", folder / "w.nc", "--workers",
                    rng.choice(["0", "-1", "x", "1.5", ""])], None
        if kind == 8:  # a second config into the first's output: disjoint or overlapping
            grid = rng.choice(["[5.0, 6.0]", "[0.0, 5.0]", "[0.0]"])
            return [rng.choice(["run", "merge"]), cfg, "--set", f"grid.beta={grid}", "--out",
                    res], None
        return rng.choice([["show", cfg], ["run", res], ["plan", res], ["status", res],
                           ["plot", cfg, "--var", "x", "--x", "beta"]]), None
    return make


CATEGORIES = {"config files": 330, "--set strings": 300, "scheduler variables": 120,
              "input arrays": 110, "damaged parts": 100, "model folders": 100,
              "results files": 60, "crafted files and misuse": 90}


def cases(seed: int, shared: Path, parts: Path, model: Path) -> list[Case]:
    """Every case of the campaign. shared: a finished tiny sweep (c.yaml, r.nc, r.parts)
    that scheduler cases rerun in place; parts: the same, copied per case to be damaged;
    model: a valid tiny model folder."""
    makers = {"config files": config_case, "--set strings": set_case,
              "scheduler variables": lambda rng: scheduler_case(rng, shared),
              "input arrays": input_case, "damaged parts": lambda rng: part_case(rng, parts),
              "model folders": lambda rng: model_case(rng, model),
              "results files": lambda rng: results_case(rng, parts),
              "crafted files and misuse": lambda rng: misuse_case(rng, parts)}
    # one generator per case, so that any case can be rebuilt alone from its number
    return [Case(category, i, makers[category](random.Random(f"{seed}/{category}/{i}")))
            for category, count in CATEGORIES.items() for i in range(count)]
