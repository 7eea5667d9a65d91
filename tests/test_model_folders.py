"""Malformed model folders for `sweep probe` and `sweep extract`: every damaged file is one
line naming the file (and the tensor or setting), exit 2, before any weight is used."""

import json
import os
import struct

import numpy as np
import pytest

from helpers import invoke, tiny_model_dir, tiny_tensors, write_safetensors
from sweep.pretrained import bert


@pytest.fixture
def folder(tmp_path):
    path, _ = tiny_model_dir(tmp_path / "model")
    (tmp_path / "t.txt").write_text("hello the world")
    return path


def refused(folder, *, command="probe"):
    """The one line `sweep probe` (or extract) gives for this model folder."""
    out = folder.parent / ("x.nc" if command == "probe" else "matrices")
    args = ["--text", folder.parent / "t.txt"] if command == "probe" else []
    result = invoke(command, *args, "--model", folder, "-o", out)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def raw_safetensors(path, header, data=b""):
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


@pytest.mark.parametrize("header,word", [
    ([], "the header is a JSON list, not an object"),
    (3, "the header is a JSON int, not an object"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}, "lists of integers >= 0"),
    ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, "within the 8 data bytes"),
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, "do not hold shape [3]"),
    ({"w": {"dtype": "Q9", "shape": [2], "data_offsets": [0, 8]}}, "tensor w: no dtype of"),
    ({"w": [1, 2]}, "tensor w: no dtype"),
])
def test_malformed_safetensors_headers(folder, header, word):
    raw_safetensors(folder / "model.safetensors", header, b"\0" * 8)
    line = refused(folder)
    assert f"{folder / 'model.safetensors'}: not a readable safetensors file" in line
    assert word in line


def test_negative_offsets_never_read_the_header_as_weights(tmp_path):
    """A tensor at data_offsets [-n, 0] would be the header's own bytes."""
    raw_safetensors(tmp_path / "m.safetensors",
                    {"w": {"dtype": "U8", "shape": [4], "data_offsets": [-4, 0]}}, b"data")
    with pytest.raises(bert.ModelError, match="data_offsets"):
        bert.read_safetensors(tmp_path / "m.safetensors")
    (tmp_path / "big.safetensors").write_bytes(struct.pack("<Q", 2**40) + b"{}")
    with pytest.raises(bert.ModelError, match="a header of 1099511627776 bytes"):
        bert.read_safetensors(tmp_path / "big.safetensors")


@pytest.mark.parametrize("change,word", [
    ({"num_attention_heads": 0}, "num_attention_heads must be an integer >= 1, got 0"),
    ({"num_attention_heads": 3}, "num_attention_heads 3 does not divide hidden_size 8"),
    ({"hidden_size": None}, "hidden_size must be an integer >= 1, got None"),
    ({"num_hidden_layers": True}, "num_hidden_layers must be an integer >= 0, got True"),
    ({"num_hidden_layers": 3}, "no tensor encoder.layer.2.attention.self.query.weight"),
    ({"hidden_size": 16}, "tensor embeddings.word_embeddings.weight has shape (17, 8), "
                          "expected (n, 16)"),
    ({"layer_norm_eps": -1}, "layer_norm_eps must be a number in (0, 1)"),
])
def test_config_json_is_checked_against_the_weights(folder, change, word):
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(change)
    (folder / "config.json").write_text(json.dumps(cfg))
    line = refused(folder)
    assert str(folder) in line and word in line


@pytest.mark.parametrize("text,word", [
    ("not json", "config.json: not readable JSON"), ("[1, 2]", "config.json: expected a JSON"),
    ("[" * 5000 + "]" * 5000, "config.json: not readable JSON"),
])
def test_unreadable_config_json(folder, text, word):
    (folder / "config.json").write_text(text)
    assert word in refused(folder)
    (folder / "config.json").unlink()
    os.mkfifo(folder / "config.json")  # never opened for a blocking read
    assert "config.json" in refused(folder)


def test_a_tensor_of_the_wrong_shape_is_named(folder):
    t = tiny_tensors()
    t["encoder.layer.1.attention.self.key.weight"] = np.zeros((8, 7), np.float32)
    write_safetensors(folder / "model.safetensors", t)
    line = refused(folder, command="extract")
    assert "tensor encoder.layer.1.attention.self.key.weight has shape (8, 7), expected (8, 8)" \
        in line


@pytest.mark.parametrize("edit,word", [
    (lambda t: "nope", "not readable JSON"),
    (lambda t: json.dumps({**t, "model": {"vocab": [1, 2]}}), "not a WordPiece tokenizer"),
    (lambda t: json.dumps({k: v for k, v in t.items() if k != "model"}), "KeyError: 'model'"),
    (lambda t: json.dumps({**t, "model": {**t["model"], "unk_token": "[NOPE]"}}),
     "special token [NOPE] not in the vocabulary"),
    (lambda t: json.dumps({**t, "model": {**t["model"], "vocab": {"[UNK]": 1, "[CLS]": 2,
                                                                  "[SEP]": 99, "[PAD]": 0}}}),
     "token id 99 beyond the 17 rows"),
])
def test_malformed_tokenizer_json(folder, edit, word):
    spec = json.loads((folder / "tokenizer.json").read_text())
    (folder / "tokenizer.json").write_text(edit(spec))
    line = refused(folder)
    assert "tokenizer.json" in line and word in line


def test_extract_onto_an_existing_file_is_refused(folder):
    (folder.parent / "matrices").write_text("a file, not a folder")
    line = refused(folder, command="extract")
    assert line.endswith("matrices: exists and is not a directory (extract writes a folder of "
                         ".npy files)")


def test_special_tokens_in_the_text_stay_one_token(folder):
    """As in Hugging Face's tokenizers (the reference): an added special token written in the
    text is matched exactly, before lower-casing, and kept whole."""
    tok = bert.open_model(str(folder)).tokenizer
    assert tok.tokens("hello [SEP] the [CLS]world") == [
        "[CLS]", "hello", "[SEP]", "the", "[CLS]", "world", "[SEP]"]
    assert tok.tokens("[cls]") == ["[CLS]"] + ["[UNK]"] * 3 + ["[SEP]"]  # [, cls, ]: no token
