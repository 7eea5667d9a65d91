"""Results files on disk: netCDF4 written atomically, CF-ready (conventions, history,
int32 coordinates, no fill values on coordinates) and compressed in chunks along the job
axes, with the provenance every dataset carries (the config, its hash, the versions)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import glob
import math
import os
import platform
import shlex
import shutil
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import yaml

from sweep._version import __version__
from sweep.core.config import Config
from sweep.core.coords import int32
from sweep.core.locks import owner_tag
from sweep.core.parts import discard, reason, remove_abandoned
from sweep.errors import StoreError


def provenance(config: Config, command: str | None = None) -> dict:
    attrs = environment(f"sweep results: {config.name}", command)
    # where the file is written is no part of what it holds: `run --out X` and `merge --set
    # output.path=X` of the same parts give the same dataset
    recorded = config.to_dict()
    recorded["output"].pop("path")
    attrs.update(sweep_config=yaml.safe_dump(recorded, sort_keys=False),
                 sweep_config_hash=config.hash)
    return attrs


def environment(title: str, command: str | None = None) -> dict:
    """The global attributes every sweep dataset carries: CF, title, history, versions."""
    import netCDF4
    import xarray

    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    command = command or shlex.join(["sweep", *sys.argv[1:]])
    return {
        "Conventions": "CF-1.8",
        "title": title,
        "source": f"sweep {__version__}",
        "history": f"{now}: {command}",
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "numba_version": metadata.version("numba"),  # without importing it (0.3 s)
        "xarray_version": xarray.__version__,
        "netcdf4_version": netCDF4.__version__,
    }


def cf_ready(ds):
    """ds as CF wants it on disk: global Conventions and history (stamped now where the
    dataset has none, e.g. a theory curve), int32 integer coordinates, and coordinates
    without _FillValue (a coordinate has no missing values). A shallow copy."""
    ds = ds.copy(deep=False)
    ds.attrs = {**environment(str(ds.attrs.get("title", "sweep dataset"))), **ds.attrs}
    ints = {name: ds[name].astype(int32(ds[name].values).dtype) for name in ds.coords
            if ds[name].dtype.kind in "iu"}
    ds = ds.assign_coords(ints)
    encoding = {name: {"_FillValue": None} for name in ds.coords}
    encoding.update((name, compressed(ds[name])) for name in ds.data_vars
                    if ds[name].ndim and ds[name].dtype.kind in "fiu")
    return ds, encoding


CHUNK_BYTES = 2**20  # one chunk of a compressed variable, about


def compressed(var) -> dict:
    """netCDF4 encoding for one variable: zlib (level 4, byte shuffle; lossless) in chunks
    whole along its last axes (time, tokens) and cut along the leading (job) axes, so that
    reading one grid point or one time series touches a few chunks. Series of a phase diagram
    are smooth and runs of NaN are common: they shrink to a fraction of their size."""
    chunks, size = list(var.shape), var.dtype.itemsize
    for k in range(len(chunks)):  # from the first axis: halve until a chunk is small enough
        while chunks[k] > 1 and size * math.prod(chunks) > CHUNK_BYTES:
            chunks[k] = -(-chunks[k] // 2)
    return {"zlib": True, "complevel": 4, "shuffle": True,
            "chunksizes": tuple(max(c, 1) for c in chunks)}


def write_dataset(ds, path: str | Path) -> Path:
    """Write netCDF4 atomically (temporary file, then rename); StoreError names the file."""
    path = Path(path)
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, expected a results file name")
    tmp = path.with_name(f".{path.name}.{owner_tag()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_abandoned(path.parent, f".{glob.escape(path.name)}.*.tmp")
        tmp.open("wb").close()  # a folder we may not write says so here, with its errno
    except OSError as err:
        raise StoreError(f"{path}: cannot write results ({reason(err)})") from None
    try:
        ds, encoding = cf_ready(ds)
        ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=encoding)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # netCDF4 reports HDF5 failures as RuntimeError
        why = reason(err) if isinstance(err, OSError) else str(err)
        with contextlib.suppress(OSError):
            if shutil.disk_usage(path.parent).free < ds.nbytes:  # HDF5 hides ENOSPC
                why = f"No space left on device; {why}"
        raise StoreError(f"{path}: cannot write results ({why})") from None
    finally:
        discard(tmp)
    return path
