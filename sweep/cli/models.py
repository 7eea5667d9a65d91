"""Commands for trained transformers: probe (a text through a model's layers) and extract
(its attention matrices for the `qk:` and `v:` config keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sweep import api
from sweep.cli import app, out, user_errors

ModelOpt = Annotated[str, typer.Option(
    "--model", metavar="minilm|DIR", help="minilm (all-MiniLM-L6-v2; `make models` installs "
    "it) or a directory with config.json, model.safetensors and tokenizer.json.")]

BinsOpt = Annotated[int, typer.Option(
    min=1, metavar="BINS", help="Bins over [-1, 1] of each layer's histogram of pairwise "
    "cosines (cosine_hist, a density).")]


def _also_save(flag: str, what: str):
    """An option naming a .npy file the probe also writes, holding `what`."""
    return Annotated[Path | None, typer.Option(flag, metavar="FILE.npy", help=f"Also save {what}.")]


@app.command("probe")
def probe_cmd(
        text: Annotated[Path, typer.Option(
            "--text", metavar="FILE", show_default=False,
            help="UTF-8 text file, run as one sequence (no truncation).",
            readable=False)],
        model: ModelOpt = "minilm",
        path: Annotated[Path | None, typer.Option(
            "-o", "--out", metavar="FILE.nc",
            help="Dataset path (default: results/probe-TEXT.nc).", readable=False)] = None,
        beta: Annotated[float, typer.Option(
            min=0.0, metavar="BETA",
            help="beta of the identity-attention energy and entropy.")] = 1.0,
        cluster_eps: Annotated[float, typer.Option(
            min=0.0, metavar="EPS",
            help="Pairs with cosine > 1 - eps count as clustered.")] = 1e-3,
        project: Annotated[int | None, typer.Option(
            "--project", min=1, metavar="K", show_default=False,
            help="Also every cluster observable of each layer's tokens on their top K "
            "principal components, centred and renormalised (projected_<name>).")] = None,
        threshold: Annotated[float, typer.Option(
            min=-1.0, max=1.0, metavar="COSINE",
            help="Cosine threshold of the coarse_* clusters.")] = 0.9,
        bins: BinsOpt = 40,
        save_embeddings: _also_save(
            "--save-embeddings", "the model's layer 0 for the text ((n, d) float64, "
            "unnormalised): the start (init.kind: file) of a layer model that is this model")
        = None,
        save_labels: _also_save(
            "--save-labels", "each token's line of the text ((n,) int64; [CLS] with the first, "
            "[SEP] with the last): one sentence a line, the training.labels of sweep train")
        = None):
    """A trained transformer's tokens through the simulations' observables, layer by layer."""
    with user_errors():
        ds = api.probe(text, model, path, beta, cluster_eps, threshold, project=project,
                       save_embeddings=save_embeddings, save_labels=save_labels, bins=bins)
    table = Table(title=f"{ds.attrs['model']}: {ds.attrs['n_tokens']} tokens")
    names = ("mean_cosine", "clustered_fraction", "coarse_n_clusters", "pc1_share")
    for col in ("layer",) + names:
        table.add_column(col)
    for layer in ds.layer.values:
        table.add_row(str(layer), *(f"{float(ds[n].sel(layer=layer)):.4g}" for n in names))
    out.print(table)
    target = path or Path("results") / f"probe-{text.stem}.nc"
    out.print(f"results: {target}", markup=False, soft_wrap=True)
    if save_embeddings is not None:
        out.print(f"layer 0 ({ds.attrs['n_tokens']}, {ds.attrs['d']}): {save_embeddings}",
                  markup=False, soft_wrap=True)
    if save_labels is not None:
        out.print(f"labels ({ds.attrs['n_tokens']},): {save_labels}", markup=False,
                  soft_wrap=True)


@app.command("extract")
def extract_cmd(directory: Annotated[Path, typer.Option(
                    "-o", "--out", metavar="DIR", show_default=False,
                    help="Directory for the .npy files and index.json.", readable=False)],
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
    with user_errors():
        index = api.extract(directory, model, controls, full)
    if full:
        out.print(f"{index['layers']} layer(s) x {index['heads']} head(s), d = {index['d']}: a "
                  f"weights folder for model.weights in {directory} (index.json"
                  f"{', index-gaussian.json' if controls else ''})", markup=False,
                  soft_wrap=True)
        return
    out.print(f"{index['layers']} layer(s) x {index['heads']} head(s), d = {index['d']}: "
              f"layer<l>_qk.npy and layer<l>_v.npy, each {index['files'][0]['shape']}, "
              f"in {directory} (see index.json)", markup=False, soft_wrap=True)
