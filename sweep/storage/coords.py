"""The coordinates of a results file as CF wants them: grid values as labels (head_beta lists
as exact text), int32 integers, long names, and the flag attributes of `status`."""

from __future__ import annotations

import numpy as np

from sweep.kernels.codes import AXIS_NAMES, LAYER_NAME, STATUS_MEANINGS, TIME_NAME


def status_flags() -> dict:
    """CF flag attributes of `status`: its codes (int8, as the variable) and their names."""
    codes = sorted(STATUS_MEANINGS)
    return {"flag_values": np.array(codes, dtype=np.int8),
            "flag_meanings": " ".join(STATUS_MEANINGS[c] for c in codes)}


def number_text(value: float) -> str:
    """The shortest text that reads back as exactly this float ('6', '0.1', '1e-20')."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def label(value) -> str:
    """A grid value as a coordinate label: head_beta lists as exact numbers joined by commas
    (values that differ anywhere get different labels), per-layer qk / v specs joined by
    commas, anything else as its text."""
    if isinstance(value, tuple):
        return ",".join(b if isinstance(b, str) else number_text(b) for b in value)
    return str(value)


def coordinates(grid, record: tuple[str, np.ndarray]) -> dict:
    """record: ("time", the save grid) or ("layer", 0..L) of a layer model."""
    name, t = record
    long_name = TIME_NAME if name == "time" else LAYER_NAME
    coords = {name: (name, int32(np.asarray(t)), {"long_name": long_name, "units": "1"})}
    for axis in grid:
        for key, vals in zip(axis.keys, axis.values):
            attrs = {"long_name": AXIS_NAMES.get(key, key), "units": "1"}
            if axis.log and key == axis.name:
                attrs["spacing"] = "log"
            if any(isinstance(v, tuple) for v in vals):  # head_beta lists label as text
                vals = [label(v) for v in vals]
            coords[key] = (axis.name, int32(np.asarray(vals)), attrs)
    return coords


def int32(values: np.ndarray) -> np.ndarray:
    """Integer coordinates as int32 (CF's integer type) when they fit, as grid values do."""
    if values.dtype.kind in "iu" and values.size and \
            np.iinfo(np.int32).min <= values.min() and values.max() <= np.iinfo(np.int32).max:
        return values.astype(np.int32)
    return values
