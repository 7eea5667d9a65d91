"""Where a level crossing lies along one axis, located by rounds of points: what the next
round samples, from what the previous rounds gave. NumPy only; no job, file or xarray here
(sweep/api/refining.py runs the rounds; docs/refine.md).

Per combination of the other axes ("a line"), the sampled points of the axis each hold the
values of the first few of the config's seeds. A round looks at the first bracket of
neighbouring points whose seed-means cross the level (as `thresholds.crossing` does), and
asks for:
  - its midpoint (in log10 for a log-spaced axis; the nearest integer for an integer axis),
    with `seeds_per_point` seeds, while the bracket is wider than the tolerance;
  - more seeds at an end (twice as many, up to all the config's seeds) whose seed-mean is
    within two standard errors of the level (noisy: the crossing may lie elsewhere), and at
    both ends once the bracket is narrow enough, so that the threshold and its bootstrap
    interval come from every seed where it matters.
A line is settled when its bracket is narrow enough and both ends hold every seed, or when
no pair of points crosses. The plan depends only on the values, so the same values give the
same rounds, whatever ran them and how.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sweep.errors import ConfigError

NOISE = 2.0  # an end within this many standard errors of the level is noisy


@dataclass(frozen=True)
class Tolerance:
    """The bracket width wanted: absolute (in units of the axis), or relative to the
    bracket's centre (`value` a fraction: "2%" is 0.02)."""

    value: float
    relative: bool = False

    def met(self, a: float, b: float) -> bool:
        width = abs(b - a)
        if self.relative:
            return width <= self.value * abs(a + b) / 2.0
        return width <= self.value * (1 + 1e-12)

    def describe(self) -> str:
        return f"{self.value:.6g} relative" if self.relative else f"{self.value:.6g} absolute"


def tolerance(spec: float | str) -> Tolerance:
    """--tol: a positive number (absolute, in units of the axis) or a percentage ("2%",
    relative to the bracket's centre); ConfigError otherwise."""
    text = str(spec).strip()
    relative = text.endswith("%")
    try:
        value = float(text[:-1] if relative else text)
    except ValueError:
        raise ConfigError(f"--tol {spec!r}: expected a positive number or a percentage "
                          "such as 2%") from None
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"--tol {spec!r}: must be positive and finite")
    return Tolerance(value / 100.0 if relative else value, relative)


@dataclass(frozen=True)
class Rules:
    """How a refinement samples: the level, the tolerance, the crossing direction, the
    config's seeds (in order) and how many of them a new point gets."""

    level: float
    tol: Tolerance
    seeds: tuple[int, ...]
    per_point: int
    direction: str = "any"
    log: bool = False
    integer: bool = False


@dataclass(frozen=True)
class Line:
    """What a line holds so far: each sampled point's values, one per seed run there
    (the first len(values) of Rules.seeds)."""

    values: dict[float, np.ndarray]

    def xs(self) -> list[float]:
        return sorted(self.values)

    def means(self) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.array([np.nanmean(self.values[x]) if np.isfinite(self.values[x]).any()
                             else np.nan for x in self.xs()])


def bracket(line: Line, rules: Rules) -> tuple[float, float] | None:
    """The first pair of neighbouring points whose seed-means cross the level; None if
    none does."""
    xs, means = line.xs(), line.means()
    a, b = means[:-1] - rules.level, means[1:] - rules.level
    up, down = (a < 0) & (b >= 0), (a > 0) & (b <= 0)
    hit = {"up": up, "down": down, "any": up | down}[rules.direction]
    if rules.direction == "any" and len(means) and means[0] == rules.level:
        return (xs[0], xs[1]) if len(xs) > 1 else None
    if not hit.any():
        return None
    k = int(np.argmax(hit))
    return xs[k], xs[k + 1]


def requests(line: Line, rules: Rules) -> list[tuple[float, tuple[int, ...]]]:
    """What the next round runs on this line: (point, seeds) pairs; [] when settled."""
    ends = bracket(line, rules)
    if ends is None:
        return []
    mid = midpoint(*ends, rules)
    narrow = rules.tol.met(*ends) or _adjacent(ends, rules) or mid in ends
    out = []
    for x in ends:
        have = len(line.values[x])
        if have < len(rules.seeds) and (narrow or _noisy(line.values[x], rules.level)):
            out.append((x, rules.seeds[have:min(len(rules.seeds), 2 * have)]))
    if not narrow:
        out.append((mid, rules.seeds[:rules.per_point]))
    return sorted(out)


def midpoint(a: float, b: float, rules: Rules) -> float:
    if rules.integer:
        return int((a + b) // 2)
    if rules.log:
        return float(10.0 ** ((math.log10(a) + math.log10(b)) / 2.0))
    return float((a + b) / 2.0)


def _adjacent(ends: tuple[float, float], rules: Rules) -> bool:
    """An integer axis cannot be split finer than neighbouring integers."""
    return rules.integer and ends[1] - ends[0] <= 1


def _noisy(values: np.ndarray, level: float) -> bool:
    finite = values[np.isfinite(values)]
    if finite.size < 2:
        return True
    error = np.std(finite, ddof=1) / math.sqrt(finite.size)
    return bool(abs(finite.mean() - level) <= NOISE * error)


def first_round(xs: list[float], rules: Rules) -> list[tuple[float, tuple[int, ...]]]:
    """The coarse start of every line: the config's values of the axis, each with
    seeds_per_point seeds."""
    return [(x, rules.seeds[:rules.per_point]) for x in sorted(xs)]


def check_level(var: str, level: float, bounds: tuple[float, float] | None) -> None:
    """ConfigError for a level that is not finite, or outside where `var` can lie."""
    if not math.isfinite(level):
        raise ConfigError(f"--level {level}: must be a finite number")
    if bounds is not None and not bounds[0] <= level <= bounds[1]:
        raise ConfigError(f"--level {level:g}: {var} lies in [{bounds[0]:g}, {bounds[1]:g}], "
                          "so it never crosses that level")
