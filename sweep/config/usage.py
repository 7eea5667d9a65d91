"""Which settings a grid uses: a section value an axis overrides is that axis's default
(`sweep plan` lists them); a `--set` no grid point uses, or a key another key leaves unused
everywhere, is refused."""

from __future__ import annotations

from sweep.config.schema import Config, show
from sweep.errors import ConfigError

# Keys that another key's value leaves unused: (section, key) -> (the deciding key, which of
# its values leave it unused, why). Sweeping such a key only repeats identical jobs.
UNUSED_WHEN = {
    ("model", "beta"): ("model.head_beta", lambda v: v is not None,
                        "each head takes its beta from model.head_beta"),
    ("init", "overlap"): ("init.kind", lambda v: v != "equiangular",
                          "only init.kind: equiangular reads it"),
    ("init", "clusters"): ("init.kind", lambda v: v != "clusters",
                           "only init.kind: clusters reads it"),
    ("init", "spread"): ("init.kind", lambda v: v != "clusters",
                         "only init.kind: clusters reads it"),
}


def overridden(config: Config, grid: list) -> list[str]:
    """The section values an axis overrides, as `model.n = 8 overridden by grid.n`: a value
    in a file is the default of its axis (commenting the axis out restores it)."""
    return [f"{s}.{k} = {show(getattr(getattr(config, s), k))} overridden by grid.{a.name}"
            for a in grid for k, s in zip(a.keys, a.sections) if f"{s}.{k}" in config.given]


def check_used(config: Config, grid: list) -> None:
    """Refuse settings no grid point uses: a `--set` of a section value that an axis of the
    same key overrides, and a key that another key leaves unused at every grid point."""
    swept = {(s, k): vals for a in grid for k, s, vals in zip(a.keys, a.sections, a.values)}
    typed = {item.partition("=")[0].strip() for item in config.overrides}
    for section, key in swept:
        if f"{section}.{key}" in typed:
            raise ConfigError(
                f"{section}.{key}: {show(getattr(getattr(config, section), key))} from --set is "
                f"never used, grid.{key} sweeps {key}; to fix {key} drop the axis "
                f"(--set grid.{key}=null), or sweep other values with --set grid.{key}=[...]")
    for (section, key), (decider, unused, why) in UNUSED_WHEN.items():
        where = f"grid.{key}" if (section, key) in swept else f"{section}.{key}"
        if (section, key) not in swept and where not in config.given:
            continue
        dsec, dkey = decider.split(".")
        values = swept.get((dsec, dkey), (getattr(getattr(config, dsec), dkey),))
        if all(unused(v) for v in values):
            raise ConfigError(f"{where}: never used here, {why} ({decider}: "
                              f"{show(values[0])}); drop {where}")
