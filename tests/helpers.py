"""Small helpers shared by the tests: run the compiled kernel on one state, compare results."""

from __future__ import annotations

import numpy as np

from sweep.kernels.codes import METHOD_CODES, OBSERVABLES
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import dynamics

# A small sweep (12 jobs of 6 tokens) for the shard, status and submit tests; d = 4 runs
# as rows, a part file per job at this count (lanes would take 8 jobs to a part).
SMALL = {
    "name": "small",
    "model": {"attention": "softmax", "d": 4, "n": 6},
    "integrate": {"method": "euler", "dt": 0.1, "t_max": 2.0, "save_every": 0.5},
    "grid": {"beta": [0.0, 1.0, 4.0], "seed": {"range": [0, 2]}},
}


def run_kernel(x0, kind="softmax", beta=1.0, method="euler", dt=0.1, stride=1, n_saves=2,
               eps=1e-3, dtype=np.float64, trajectory=False, model=None):
    """(status, observables [n_saves, 8], final x, traj) from the compiled kernel.

    model: keyword arguments of sweep.kernels.dynamics (overrides kind and beta)."""
    dyn = dynamics(kind, beta) if model is None else dynamics(**model)
    x = np.array(x0, dtype=dtype, copy=True)
    obs = np.full((n_saves, len(OBSERVABLES)), np.nan)
    traj = np.zeros((n_saves if trajectory else 0,) + x.shape, dtype=dtype)
    status, _ = integrate(x, dyn, METHOD_CODES[method], dt, stride, eps, obs,
                          traj, np.zeros(1, dtype=np.int64))
    return status, obs, x, traj


def allocations(script, *args):
    """The JSON that script (Python source) prints, run in a child process with Numba's
    allocation counter (rtsys.get_allocation_stats) switched on."""
    import json
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", script, *map(str, args)],
                         env={**os.environ, "NUMBA_NRT_STATS": "1"}, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def kernel_velocity(x, dyn):
    """The compiled velocity field P_{x_i}(v_i) at x: [n, d] under the model dyn."""
    from sweep.kernels.general.attention import velocity
    from sweep.kernels.general.workspace import workspace

    out = np.empty_like(x)
    velocity(x, dyn, METHOD_CODES["euler"], out, workspace(x, dyn), 1.0)
    return out


# ---------------------------------------------------------------- a tiny BERT on disk

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "token", "##s", "cluster", "##ed",
              ",", ".", "!", "hello", "world", "a", "b", "##b"]


def write_safetensors(path, tensors):
    """The safetensors layout: u64 header length, JSON header, raw little-endian data."""
    import json
    import struct

    codes = {"<f4": "F32", "<f8": "F64", "<i8": "I64"}
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": codes[a.dtype.str.replace("=", "<")], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def tiny_tensors(d=8, heads=2, layers=2, ffn=16, positions=24, seed=0):
    """Randomly initialised float32 weights with the names of Hugging Face's BertModel."""
    rng = np.random.default_rng(seed)

    def r(*shape, scale=0.5):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    t = {"embeddings.word_embeddings.weight": r(len(TINY_VOCAB), d),
         "embeddings.position_embeddings.weight": r(positions, d),
         "embeddings.token_type_embeddings.weight": r(2, d),
         "embeddings.LayerNorm.weight": 1 + r(d, scale=0.1), "embeddings.LayerNorm.bias": r(d),
         "embeddings.position_ids": np.arange(positions, dtype=np.int64)[None]}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name, shape in (("attention.self.query", (d, d)), ("attention.self.key", (d, d)),
                            ("attention.self.value", (d, d)), ("attention.output.dense", (d, d)),
                            ("intermediate.dense", (ffn, d)), ("output.dense", (d, ffn))):
            t[p + name + ".weight"], t[p + name + ".bias"] = r(*shape), r(shape[0])
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + name + ".weight"], t[p + name + ".bias"] = 1 + r(d, scale=0.1), r(d)
    return t


def tiny_model_dir(path, heads=2, **shape):
    """A model directory (config.json, model.safetensors, tokenizer.json) for
    sweep.pretrained.bert."""
    import json

    t = tiny_tensors(heads=heads, **shape)
    path.mkdir(parents=True, exist_ok=True)
    write_safetensors(path / "model.safetensors", t)
    d = t["embeddings.word_embeddings.weight"].shape[1]
    layers = sum(k.endswith("attention.self.query.weight") for k in t)
    cfg = {"hidden_size": d, "num_attention_heads": heads, "num_hidden_layers": layers,
           "layer_norm_eps": 1e-12, "model_type": "bert"}
    (path / "config.json").write_text(json.dumps(cfg))
    special = [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
               {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]
    added = [{"id": TINY_VOCAB.index(t), "content": t, "special": True, "normalized": False}
             for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]")]
    tok = {"truncation": {"max_length": 4}, "padding": {"strategy": {"Fixed": 12}},
           "added_tokens": added,
           "normalizer": {"type": "BertNormalizer", "clean_text": True,
                          "handle_chinese_chars": True, "strip_accents": None,
                          "lowercase": True},
           "pre_tokenizer": {"type": "BertPreTokenizer"},
           "post_processor": {"type": "TemplateProcessing", "single": special},
           "model": {"type": "WordPiece", "unk_token": "[UNK]",
                     "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                     "vocab": {w: i for i, w in enumerate(TINY_VOCAB)}}}
    (path / "tokenizer.json").write_text(json.dumps(tok))
    return path, t


def assert_same_results(a, b):
    """Two results datasets agree value for value (NaN where NaN) and come from one config;
    wall_seconds is the one variable allowed to differ."""
    a, b = a.drop_vars("wall_seconds"), b.drop_vars("wall_seconds")
    assert set(a.data_vars) == set(b.data_vars) and dict(a.sizes) == dict(b.sizes)
    for name in a.variables:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    assert a.attrs["sweep_config_hash"] == b.attrs["sweep_config_hash"]


def assert_matches_reference(obs, x, want_obs, want_x, tol=1e-12):
    """Final state to tol absolute; observables to tol relative (absolute below 1)."""
    np.testing.assert_allclose(x, want_x, rtol=0, atol=tol)
    scale = np.maximum(1.0, np.abs(want_obs))
    np.testing.assert_array_less(np.abs(obs - want_obs), tol * scale)


def invoke(*args, env=None):
    """The `sweep` command line in-process: invoke("run", path, "--workers", 2)."""
    from typer.testing import CliRunner

    from sweep.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def load(path):
    """A results file, read fully and closed."""
    import xarray as xr

    with xr.open_dataset(path) as ds:
        return ds.load()


def merged(store, jobs=None, **options):
    """The dataset sweep.storage.merging.merge writes for the store (to its output), read."""
    from sweep.storage.merging import merge

    return load(merge(store, jobs, **options))


def values(path):
    """A results file without what legitimately differs between runs (times, command)."""
    ds = load(path).drop_vars("wall_seconds")
    ds.attrs.pop("history")
    return ds


def spelled_out_id(job, positions):
    """A job's id by its definition: the stable hash of its resolved sections (the keys
    added later left out at their defaults), seed, output positions and input digests
    (sweep.config.grid assembles it from pieces)."""
    from sweep.config.schema import id_fields, stable_hash

    fields = {s: id_fields(getattr(job, s)) for s in ("model", "init", "integrate")}
    files = {"files": job.digests} if job.digests else {}
    return stable_hash({**fields, "seed": job.seed, "positions": positions, **files})


def per_job(simulate_one):
    """A stand-in for runner.simulate_batch that runs simulate_one(job, positions, stop,
    kernel=...) job by job, giving a job's exception in its place as simulate_batch does
    (Stopped ends the batch)."""
    from sweep.execution.simulate import Stopped

    def simulate_batch(jobs, positions="none", stop=None, kernel=None, **columns):
        out = []
        for job in jobs:
            try:
                out.append(simulate_one(job, positions, stop, kernel=kernel, **columns))
            except Stopped:
                raise
            except Exception as err:  # noqa: BLE001 - as simulate_batch reports it
                out.append(err)
        return out

    return simulate_batch
