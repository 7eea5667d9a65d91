"""Results files on disk: netCDF4 written atomically, CF-ready (conventions, history,
int32 coordinates, no fill values on coordinates) and compressed in chunks along the job
axes, with the provenance every dataset carries (the config, its hash, the versions).

A dataset in memory is written by xarray (write_dataset); the merged results, which may not
fit in memory, region by region (BlockWriter) with netCDF4 directly: xarray writes a netCDF
file only whole (its region writes are zarr's, deferred writes need dask)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import glob
import math
import os
import platform
import shlex
import shutil
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import numpy as np
import yaml

from sweep._version import __version__
from sweep.config.schema import Config
from sweep.errors import StoreError
from sweep.storage.coords import int32
from sweep.storage.locks import owner_tag
from sweep.storage.parts import discard, reason, remove_abandoned


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
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    command = command or shlex.join(["sweep", *sys.argv[1:]])
    return {"Conventions": "CF-1.8", "title": title, "source": f"sweep {__version__}",
            "history": f"{now}: {command}", **_versions()}


@functools.lru_cache(maxsize=1)
def _versions() -> dict:
    """The versions a dataset records (looked up once: each lookup reads package metadata)."""
    import netCDF4

    return {
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "numba_version": metadata.version("numba"),  # without importing it (slow)
        "xarray_version": metadata.version("xarray"),  # without importing it (slow)
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
    encoding.update((name, compressed(ds[name].shape, ds[name].dtype))
                    for name in ds.data_vars
                    if ds[name].ndim and ds[name].dtype.kind in "fiu")
    return ds, encoding


CHUNK_BYTES = 2**20  # one chunk of a compressed variable, about


def compressed(shape: tuple[int, ...], dtype) -> dict:
    """netCDF4 encoding for one variable: zlib (level 1, byte shuffle; lossless) in chunks
    whole along its last axes (time, tokens) and cut along the leading (job) axes, so that
    reading one grid point or one time series touches a few chunks. Series of a phase diagram
    are smooth and runs of NaN are common: they shrink to a fraction of their size. Only the
    first axis not yet whole is cut, so a chunk holds consecutive jobs (in C order). Level 1
    rather than 4: on these series higher levels shrink files only a little more and take
    about twice as long (benchmarks/HISTORY.md)."""
    chunks, size = list(shape), np.dtype(dtype).itemsize
    for k in range(len(chunks)):  # from the first axis: halve until a chunk is small enough
        while chunks[k] > 1 and size * math.prod(chunks) > CHUNK_BYTES:
            chunks[k] = -(-chunks[k] // 2)
    return {"zlib": True, "complevel": 1, "shuffle": True,
            "chunksizes": tuple(max(c, 1) for c in chunks)}


def write_dataset(ds, path: str | Path) -> Path:
    """Write netCDF4 atomically (temporary file, then rename); StoreError names the file."""
    path = Path(path)
    tmp = _temporary(path)
    try:
        ds, encoding = cf_ready(ds)
        with _writing(path, ds.nbytes):
            ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=encoding)
            os.replace(tmp, path)
    finally:
        discard(tmp)
    return path


def _temporary(path: Path) -> Path:
    """The empty temporary file beside `path` that a results file is written to, then renamed
    from (a folder we may not write says so here, with its errno); temporary files that
    killed writers left there are removed."""
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, expected a results file name")
    tmp = path.with_name(f".{path.name}.{owner_tag()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_abandoned(path.parent, f".{glob.escape(path.name)}.*.tmp")
        tmp.open("wb").close()
    except OSError as err:
        raise StoreError(f"{path}: cannot write results ({reason(err)})") from None
    return tmp


@contextlib.contextmanager
def _writing(path: Path, nbytes: int) -> Iterator[None]:
    """A failed write of `path` as a StoreError naming it. netCDF4 reports HDF5 failures as
    RuntimeError, and HDF5 hides ENOSPC: a disk with less than `nbytes` free says so."""
    try:
        yield
    except (OSError, RuntimeError) as err:
        why = reason(err) if isinstance(err, OSError) else str(err)
        with contextlib.suppress(OSError):
            if shutil.disk_usage(path.parent).free < nbytes:
                why = f"No space left on device; {why}"
        raise StoreError(f"{path}: cannot write results ({why})") from None


CACHE_CHUNKS = 2  # chunks each variable's HDF5 cache holds while a file is written in blocks


class BlockWriter:
    """A results file written in regions (hyperslabs), as write_dataset would write the whole
    dataset: the same dimensions, variables, chunks, fill values and attributes, bit for bit.

    variables: name -> (dims, shape, dtype, attrs) of the data variables, in the file's order;
    coords: name -> (dim, values, attrs), as sweep.storage.coords.coordinates gives them; attrs:
    the global attributes. Used as a `with` block: entering it makes every variable and
    writes the coordinates, write() fills one region of each data variable, commit() renames
    the finished file into place; leaving the block without commit() leaves nothing. The
    coordinates are encoded exactly as write_dataset encodes them (text labels, int32, no
    fill value: tests/test_merging.py compares the files bit for bit).

    A region's values are held only until written: netCDF4 compresses each chunk as it leaves
    its variable's cache, which is kept to CACHE_CHUNKS chunks. compressed()'s chunks hold
    consecutive jobs, so regions of consecutive jobs written in order leave at most one chunk
    per variable unfinished between them: none is compressed twice."""

    def __init__(self, path: str | Path, variables: dict, coords: dict, attrs: dict):
        self.path, self.variables, self.coords, self.attrs = Path(path), variables, coords, attrs
        self.nbytes = sum(math.prod(shape) * np.dtype(dtype).itemsize
                          for _, shape, dtype, _ in variables.values())
        self.nc = None

    def __enter__(self) -> BlockWriter:
        import netCDF4

        self.tmp = _temporary(self.path)
        self.side = self.tmp.with_name(f".{self.path.name}.coords.{owner_tag()}.tmp")
        try:
            with _writing(self.path, self.nbytes):
                self.nc = netCDF4.Dataset(self.tmp, "w", format="NETCDF4")
                self._define()
                self._copy_coordinates()
                self.nc.setncatts(self.attrs)
        except BaseException:
            self.__exit__()
            raise
        return self

    def write(self, region: tuple[slice, ...], values: dict[str, np.ndarray]) -> None:
        """values[name]: the region of variable `name` (the region's shape, then its own
        trailing axes)."""
        with _writing(self.path, self.nbytes):
            for name, block in values.items():
                self.nc[name][region] = block

    def commit(self) -> Path:
        with _writing(self.path, self.nbytes):
            self.nc.close()
            self.nc = None
            os.replace(self.tmp, self.path)
        return self.path

    def __exit__(self, *exc) -> None:
        if self.nc is not None:
            with contextlib.suppress(OSError, RuntimeError):
                self.nc.close()
            self.nc = None
        discard(self.tmp)
        discard(self.side)

    def _define(self) -> None:
        """Dimensions in the order of first use, then the data variables: the layout xarray
        gives a dataset whose data variables come before its coordinates."""
        sizes = {}
        for dims, shape, _, _ in self.variables.values():
            sizes.update(zip(dims, shape))
        for dims, values, _ in self.coords.values():  # a coordinate's own (bin_bounds' nv)
            sizes.update({k: v for k, v in zip(_dims(dims), np.shape(values)) if k not in sizes})
        for dim, size in sizes.items():
            self.nc.createDimension(dim, size)
        extra = [name for name, (dim, _, _) in self.coords.items() if name != dim]
        for name, (dims, shape, dtype, attrs) in self.variables.items():
            dtype, encoding = np.dtype(dtype), compressed(shape, dtype)
            var = self.nc.createVariable(name, dtype, dims, **encoding,
                                         fill_value=np.nan if dtype.kind == "f" else None)
            on = sorted(c for c in extra if self.coords[c][0] in dims)  # xarray's CF rule
            var.setncatts({**attrs, **({"coordinates": " ".join(on)} if on else {})})
            chunk = math.prod(encoding["chunksizes"]) * dtype.itemsize
            var.set_var_chunk_cache(size=CACHE_CHUNKS * chunk)

    def _copy_coordinates(self) -> None:
        """The coordinate variables as xarray writes them: numbers (int32 where they fit,
        coords.int32) and text labels (variable-length strings) directly, each with its
        attributes and no fill value; any other kind through xarray, into a small side file
        and copied from there: importing xarray (and pandas) is a large share of a short
        run's start-up."""
        kinds = {name: np.asarray(values).dtype.kind for name, (_, values, _) in
                 self.coords.items()}
        if set(kinds.values()) <= set("iufU"):
            # in xarray's order: cf_ready's assign_coords moves the integer ones last
            for name in sorted(self.coords, key=lambda name: kinds[name] in "iu"):
                dim, values, attrs = self.coords[name]
                values = np.asarray(values)
                text = values.dtype.kind == "U"
                var = self.nc.createVariable(name, str if text else values.dtype, _dims(dim))
                var.setncatts(attrs)
                var[...] = values.astype(object) if text else values
            return
        import netCDF4
        import xarray as xr

        ds, encoding = cf_ready(xr.Dataset(coords=self.coords))
        ds.to_netcdf(self.side, engine="netcdf4", format="NETCDF4", encoding=encoding)
        with netCDF4.Dataset(self.side) as src:
            src.set_auto_maskandscale(False)  # the values as stored
            for name, var in src.variables.items():
                attrs = {k: var.getncattr(k) for k in var.ncattrs()}
                copy = self.nc.createVariable(name, var.datatype, var.dimensions,
                                              fill_value=attrs.pop("_FillValue", None))
                copy.setncatts(attrs)
                copy.set_auto_maskandscale(False)
                copy[...] = var[...]


def _dims(dim: str | tuple[str, ...]) -> tuple[str, ...]:
    """A coordinate's dimensions: its one name, or a tuple of them (bin_bounds: bin, nv)."""
    return dim if isinstance(dim, tuple) else (dim,)
