"""Commands for trained transformers: probe (a text through a model's layers) and extract
(its attention matrices for the `qk:` and `v:` config keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sweep.cli import app, fail, out, user_errors
from sweep.core.store import write_dataset

ModelOpt = Annotated[str, typer.Option(
    "--model", help="minilm (all-MiniLM-L6-v2; `make models` installs it) or a directory "
                    "with config.json, model.safetensors and tokenizer.json.")]


@app.command("probe")
def probe_cmd(text: Annotated[Path, typer.Option(
                  "--text", help="UTF-8 text file, run as one sequence (no truncation).",
                  show_default=False)],
              model: ModelOpt = "minilm",
              path: Annotated[Path | None, typer.Option(
                  "-o", "--out", help="Dataset path (default: results/probe-<text>.nc).")]
              = None,
              beta: Annotated[float, typer.Option(
                  min=0.0, help="beta of the identity-attention energy and entropy.")] = 1.0,
              cluster_eps: Annotated[float, typer.Option(
                  min=0.0, help="Pairs with cosine > 1 - eps count as clustered.")] = 1e-3,
              threshold: Annotated[float, typer.Option(
                  min=-1.0, max=1.0, help="Cosine threshold of the coarse_* clusters.")]
              = 0.9,
              save_embeddings: Annotated[Path | None, typer.Option(
                  "--save-embeddings", help="Also save the model's layer 0 for the text "
                  "(n, d) float64 .npy, unnormalised: the start (init.kind: file) of a layer "
                  "model that is this model.")] = None):
    """A trained transformer's tokens through the simulations' observables, layer by layer."""
    from sweep.trained import bert, probe

    if not text.is_file():
        raise fail(f"{text}: no such text file")
    with user_errors():
        words = text.read_text(encoding="utf-8", errors="replace")
        loaded = bert.load(model)
        ds = probe.probe(loaded, words, beta, cluster_eps, threshold, str(text))
        target = write_dataset(ds, path or Path("results") / f"probe-{text.stem}.nc")
        if save_embeddings is not None:
            _save_npy(save_embeddings, probe.embeddings(loaded, words))
    table = Table(title=f"{ds.attrs['model']}: {ds.attrs['n_tokens']} tokens")
    names = ("mean_cosine", "clustered_fraction", "coarse_n_clusters", "pc1_share")
    for col in ("layer",) + names:
        table.add_column(col)
    for layer in ds.layer.values:
        table.add_row(str(layer), *(f"{float(ds[n].sel(layer=layer)):.4g}" for n in names))
    out.print(table)
    out.print(f"results: {target}")
    if save_embeddings is not None:
        out.print(f"layer 0 ({ds.attrs['n_tokens']}, {ds.attrs['d']}): {save_embeddings}")


def _save_npy(path: Path, array) -> None:
    """np.save, a failure to write being the user's one-line error (exit 1)."""
    import numpy as np

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            np.save(f, array)
    except OSError as err:
        raise fail(f"{path}: cannot write ({err.strerror or type(err).__name__})",
                   code=1) from None


@app.command("extract")
def extract_cmd(directory: Annotated[Path, typer.Option(
                    "-o", "--out", help="Directory for the .npy files and index.json.",
                    show_default=False)],
                model: ModelOpt = "minilm",
                controls: Annotated[bool, typer.Option(
                    "--controls", help="Also write norm-matched Gaussian matrices "
                                       "(layer<l>_qk_gaussian.npy, layer<l>_v_gaussian.npy; "
                                       "with --full also the FFN's, and index-gaussian.json)."
                )] = False,
                full: Annotated[bool, typer.Option(
                    "--full", help="Every weight a layer model needs to be the model "
                                   "(model.weights: DIR): float64 matrices, biases, LayerNorm "
                                   "gains and biases, FFN weights (docs/layers.md).")] = False):
    """Each layer's attention as .npy files of shape (heads, d, d) for the `qk:` and `v:` keys."""
    from sweep.trained import bert, probe
    from sweep.trained import full as whole

    with user_errors():
        if full:
            index = whole.extract_full(bert.load(model), directory, controls)
            out.print(f"{index['layers']} layer(s) x {index['heads']} head(s), d = "
                      f"{index['d']}: a weights folder for model.weights in {directory} "
                      f"(index.json{', index-gaussian.json' if controls else ''})")
            return
        index = probe.extract(bert.load(model), directory, controls)
    out.print(f"{index['layers']} layer(s) x {index['heads']} head(s), d = {index['d']}: "
              f"layer<l>_qk.npy and layer<l>_v.npy, each {index['files'][0]['shape']}, "
              f"in {directory} (see index.json)")
