"""Pretrained transformers through the simulations' observables: the library behind `sweep
probe` and `extract` (sweep/cli/models.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sweep.errors import ConfigError

if TYPE_CHECKING:
    import xarray


def probe(text: str | Path, model: str = "minilm", out: str | Path | None = None,
          beta: float = 1.0, cluster_eps: float = 1e-3, threshold: float = 0.9,
          project: int | None = None,
          save_embeddings: str | Path | None = None,
          save_labels: str | Path | None = None, bins: int = 40) -> xarray.Dataset:
    """A text file through a trained transformer's layers, measured by the simulations'
    observables (`sweep probe`); written to `out` (default results/probe-<text>.nc).
    model: "minilm" (`make models`) or a directory with config.json, model.safetensors and
    tokenizer.json; project: K, every cluster observable also on each layer's tokens
    projected on their top K principal components; save_embeddings: also save the model's
    layer 0 for the text there, the start of a layer model that is the model; save_labels:
    also save each token's line of the text there (one sentence a line: the labels of
    `sweep train`'s task labels, docs/training.md); bins: of the per-layer histograms of
    the pairwise cosines (`cosine_hist`). Docs: docs/trained.md, docs/layers.md."""
    from sweep.config.files import read_bytes
    from sweep.pretrained import bert, probing
    from sweep.storage.netcdf import write_dataset

    text = Path(text)
    if not isinstance(bins, int) or bins < 1:
        raise ConfigError(f"--bins {bins}: the number of cosine bins must be an integer >= 1")
    if not text.is_file():
        raise ConfigError(f"{text}: no such text file")
    try:
        words = read_bytes(text).decode("utf-8", errors="replace")
    except OSError as err:
        raise ConfigError(f"{text}: cannot read ({err.strerror or err})") from None
    loaded = bert.open_model(model)
    ds = probing.probe(loaded, words, beta, cluster_eps, threshold, str(text),
                       project=project, bins=bins)
    write_dataset(ds, out if out is not None else Path("results") / f"probe-{text.stem}.nc")
    if save_embeddings is not None:
        probing.save_embeddings(loaded, words, Path(save_embeddings))
    if save_labels is not None:
        probing.save_array(probing.sentence_labels(loaded, words), Path(save_labels))
    return ds


def extract(directory: str | Path, model: str = "minilm", controls: bool = False,
            full: bool = False) -> dict:
    """Each layer's attention matrices as .npy files of shape (heads, d, d) for the `qk:` and
    `v:` config keys, and index.json (`sweep extract`); returns the index. full: every weight
    a layer model needs to be the model, a weights folder for `model.weights`
    (docs/layers.md)."""
    from sweep.pretrained import bert, folder, probing

    if full:
        return folder.extract_full(bert.open_model(model), Path(directory), controls)
    return probing.extract(bert.open_model(model), Path(directory), controls)
