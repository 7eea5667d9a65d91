"""Config text: YAML read as the loader wants it (a safe loader, unique keys, exponent floats
such as 1e-3, nesting and size limits), `--set KEY=VALUE` overrides, and values quoted short
in messages (a user's value may be a megabyte or an alias bomb)."""

from __future__ import annotations

import re
import reprlib
from pathlib import Path
from typing import Any

import yaml

from sweep.config.files import read_bytes
from sweep.errors import ConfigError


def _short_repr() -> reprlib.Repr:
    short = reprlib.Repr()
    short.maxlevel, short.maxlist, short.maxdict, short.maxstring = 3, 6, 4, 50
    return short


_SHORT = _short_repr()


def show(value: Any, width: int = 60) -> str:
    """repr(value) cut to `width` characters, so that a message stays one short line.

    reprlib bounds the work too: YAML aliases can nest a billion elements in a few lines."""
    return clip(_SHORT.repr(value), width)


def suggest(word: Any, options) -> str:
    """`did you mean 'beta'? ` for a close match among `options` (difflib), else ''."""
    import difflib

    close = difflib.get_close_matches(str(word)[:100], [str(o) for o in options], n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def clip(text: str, width: int = 60) -> str:
    """text cut to `width` characters (a key or name quoted in a message)."""
    text = str(text)
    return text if len(text) <= width else text[: width - 3] + "..."


NETCDF_MAGIC = (b"\x89HDF\r\n\x1a\n", b"CDF\x01", b"CDF\x02", b"CDF\x05")  # netCDF-4, classic
MAX_CONFIG_BYTES = 2**24  # a config is a page of text; this only stops a runaway file
_MERGE = "tag:yaml.org,2002:merge"


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.safe_load, except that a key given twice in one mapping is an error.

    Merge keys (`<<: *defaults`) are YAML's own; the keys they bring in may be overridden by
    the mapping's explicit keys, which are the ones checked here."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                again = key in seen
                seen.add(key)
            except TypeError:  # unhashable key: SafeLoader reports it
                continue
            if again:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {show(key)} appears twice", key_node.start_mark)
        return super().construct_mapping(node, deep)


# YAML 1.1 (PyYAML) reads 1e-3 and 1E5 as strings: its floats need a dot and a signed
# exponent. Physicists write them without, as YAML 1.2 allows; read them as floats here.
# Plain integers, 1.5, .inf and .nan keep their YAML 1.1 meaning (non-finite numbers are
# refused by check_value, naming the key).
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))

MAX_NESTING = 100  # a config nests a few levels; PyYAML's scanner is quadratic in depth


class _TooDeep(yaml.YAMLError):
    problem, problem_mark = f"nested too deeply (over {MAX_NESTING} levels)", None


def parse_yaml(text: str) -> Any:
    """YAML (or JSON) text -> plain data as the config loader reads it (unique keys, exponent
    floats); a SafeLoader, so it builds no objects. yaml.YAMLError on malformed text,
    including text nested too deeply to parse: brackets are counted first (PyYAML takes long
    to refuse deep nesting, and then by RecursionError)."""
    depth = deepest = 0
    for bracket in re.findall(r"[\[\]{}]", text):
        depth = depth + 1 if bracket in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    if deepest > MAX_NESTING:
        raise _TooDeep()
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except RecursionError:  # deep by indentation
        raise _TooDeep() from None


def read_yaml(path: str | Path) -> dict:
    path = Path(path)
    try:
        data = read_bytes(path, MAX_CONFIG_BYTES)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from None
    except UnicodeDecodeError:
        if data.startswith(NETCDF_MAGIC):
            raise ConfigError(f"{path}: a netCDF results file, not a config; `sweep show "
                              f"{path}` says what it holds, `sweep run` takes the YAML config "
                              "that made it") from None
        raise ConfigError(f"{path}: not a UTF-8 text file") from None
    try:
        raw = parse_yaml(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 1}:" if mark is not None else ""
        problem = getattr(err, "problem", None) or "malformed YAML"
        raise ConfigError(f"{path}:{line} {problem}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    return raw


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """Apply `KEY=VALUE` overrides (dotted path, YAML-typed value) to a raw config mapping."""
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {clip(item)}: expected KEY=VALUE")
        parts = key.split(".")
        if not all(part.strip() for part in parts):
            raise ConfigError(f"--set {clip(key)}: a key path with an empty part; expected "
                              "dotted names such as model.beta")
        try:
            value = parse_yaml(text)
        except yaml.YAMLError as err:
            why = getattr(err, "problem", None)
            raise ConfigError(f"--set {clip(key)}: value {show(text)} is not valid YAML"
                              + (f" ({why})" if why else "")) from None
        node = raw
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"--set {clip(key)}: {clip(part)} is not a section")
            node = child
        node[parts[-1]] = value
    return raw
