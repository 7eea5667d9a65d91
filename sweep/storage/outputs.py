"""Who wrote a results file: one config per file.

Two configs, or two `--set` variants, given one output would otherwise replace each other's
dataset without a word. A results file records its config and that config's hash
(store.provenance); a file may be replaced by the config that wrote it, or by one holding all
of its jobs (an extended grid), or on request (--force).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml

from sweep.config.grid import expand
from sweep.config.schema import Config, clip, from_dict
from sweep.config.yamltext import parse_yaml
from sweep.errors import ConfigError


def check_replaceable(path: str | Path, config: Config, jobs, force: bool = False) -> None:
    """ConfigError unless the results file at `path` may be replaced by this config's: it is
    absent, or this config's, or holds only jobs of this one (an extended grid), or force.
    Two configs, or two --set variants, given one output must not silently replace each
    other's dataset."""
    path = Path(path)
    if force or not os.path.lexists(path):
        return
    dangling(path, "--out")
    found, text = written_by(path)
    if found == config.hash or text is not None and _jobs_within(text, config, jobs):
        return
    what = (f"holds the results of another config (hash {clip(found, 40)})" if found else
            "exists and is not a sweep results file")
    raise ConfigError(f"{path}: {what}, not of this one (hash {config.hash}); give this "
                      "config its own file with --out (or output.path), or replace it with "
                      "--force")


def dangling(path: Path, what: str) -> None:
    """ConfigError if `path` is a symbolic link to nothing: say where it points."""
    if path.is_symlink() and not path.exists():
        raise ConfigError(f"{path}: a link to {clip(os.readlink(path), 200)}, which does not "
                          f"exist; remove the link or give another {what}")


def written_by(path: Path) -> tuple[str | None, str | None]:
    """(sweep_config_hash, sweep_config) of a results file; Nones if it is not one."""
    import netCDF4

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None, None
        with netCDF4.Dataset(path) as ds:
            found = [getattr(ds, k, None) for k in ("sweep_config_hash", "sweep_config")]
    except (OSError, RuntimeError, ValueError):
        return None, None
    return tuple(v if isinstance(v, str) else None for v in found)


def _jobs_within(text: str, config: Config, jobs) -> bool:
    """Whether every job of the config `text` (YAML, as results store it) is one of `jobs`:
    its dataset is then a part of the one that replaces it (input files resolve as for
    `config`)."""
    try:
        ids = {job.id for job in jobs}
        return all(job.id in ids for job in expand(from_dict(parse_yaml(text), config.source)))
    except (ConfigError, yaml.YAMLError, TypeError, AttributeError):
        return False
