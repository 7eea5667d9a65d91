"""Training a layer model's FFN: the library behind `sweep train` (sweep/cli/training.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.api.sweeping import renamed_overrides, resolve_shard
from sweep.config.schema import Config
from sweep.config.yamltext import apply_overrides

if TYPE_CHECKING:
    import xarray


def training_output(config: Config, folder: str | Path | None) -> Path:
    """Where sweep train writes: FOLDER/<name>.nc (default: the folder of output.path)."""
    folder = Path(config.output.path).parent if folder is None else Path(folder)
    return folder / f"{config.name}.nc"


def load_training(source: str | Path, overrides: list[str] | tuple[str, ...] = (), *,
                  set: list[str] | tuple[str, ...] | None = None):
    """A training config (`sweep train`'s: a layer model with a `training:` section), for
    train, compile and submit. `set=`: the former name of `overrides` (deprecated)."""
    from sweep.training import settings

    return settings.load_training(source, renamed_overrides(overrides, set))


def train(source: str | Path | dict, out: str | Path | None = None,
          overrides: list[str] | tuple[str, ...] = (), command: str | None = None,
          shard=None, *, set: list[str] | tuple[str, ...] | None = None
          ) -> xarray.Dataset | None:
    """Train a noisy layer model's FFN matrices under L2 at every grid point (`sweep train`):
    the dataset of per-layer observables before and after, the loss curves and the trained
    matrices, written to OUT/<name>.nc (default: beside output.path). Finished points are
    kept in OUT/<name>.parts/ and skipped when run again; a shard ('I/K', or from the
    environment as for `run`) trains its points only and returns None. The dataset's
    encoding says how many points there are ("points") and how many of them were read
    back from the parts ("reused"). Docs: docs/training.md."""
    from sweep.storage.netcdf import write_dataset
    from sweep.storage.store import beside
    from sweep.training import settings, sweeping

    overrides = renamed_overrides(overrides, set)
    if isinstance(source, dict):
        raw = apply_overrides(copy.deepcopy(source), overrides)
        tc = settings.from_raw(raw, None, tuple(overrides))
    else:
        tc = settings.load_training(source, overrides)
    path = training_output(tc.config, out)
    part = resolve_shard(shard)
    ds, points, reused = sweeping.run(tc, command, parts=beside(path, "parts"),
                                      shard=None if part is None else (part.index, part.count))
    if ds is not None:
        ds = with_escape(ds)
        ds.encoding["source"] = str(write_dataset(ds, path))
        # how many points a rerun read back from the parts instead of training them
        ds.encoding.update(points=points, reused=reused, parts=str(beside(path, "parts")))
    return ds


def with_escape(ds: xarray.Dataset) -> xarray.Dataset:
    """The dataset with `peak_fall` and `escape_depth` (axes..., checkpoint): mean_cosine's
    fall from its running peak along layer, as `sweep monotone --along layer` measures it
    (sweep.analysis.monotonicity.escape)."""
    from sweep.analysis.monotonicity import monotone

    found = monotone(ds, "mean_cosine", along="layer")
    out = ds.assign(peak_fall=found.peak_fall, escape_depth=found.escape_depth)
    out.attrs["escape_tol"] = found.attrs["escape_tol"]
    return out.transpose(*ds.mean_cosine.dims[:-1], ...)
