"""The table of results variables in docs/results.md, generated from the records:
`python -m sweep.observables._docs` (`make docs`) rewrites it between its marker comments;
tests/test_records.py checks that the page holds what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sweep.observables.records import RECORDS, SCALAR_RECORDS, Variable

PAGE = Path(__file__).parents[2] / "docs" / "results.md"
BEGIN = "<!-- variables: generated from sweep/observables/records.py -->"
END = "<!-- /variables -->"
POSITIONS = ("| `positions` | axes, [time], token, component | when `output.positions` asks and "
             "n, d are not swept |")
HISTOGRAM = ("| `cosine_hist`, `bin_bounds` | axes, time, bin | with `output.hist_bins: B` > 0 "
             "(flows): at each save, the fraction of the pairs i < j whose cosine <x_i, x_j> "
             "lies in each of B equal bins over [-1, 1] (each row sums to 1; the coordinate "
             "`bin`: the centres, `bin_bounds` [bin, nv]: the edges) |")


def rows(records: tuple[Variable, ...], over: str) -> list[str]:
    """One row per meaning: records that share it (mean and min cosine) share a row."""
    out, names = [], {}
    for r in records:
        names.setdefault(r.meaning or r.long_name, []).append(f"`{r.name}`")
    for meaning, listed in names.items():
        out.append(f"| {', '.join(listed)} | {over} | {meaning} |")
    return out


def table() -> str:
    """The table, marker comments included."""
    lines = [BEGIN, "| variable | over | meaning |", "|---|---|---|"]
    lines += rows(RECORDS, "axes, time") + rows(SCALAR_RECORDS, "axes")
    lines += [POSITIONS, HISTOGRAM, END]
    return "\n".join(lines)


def page(text: str) -> str:
    """text (docs/results.md) with the table between the markers replaced by table()."""
    head, begin, rest = text.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"{PAGE.name}: no {BEGIN} ... {END} markers")
    return head + table() + tail


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else PAGE
    target.write_text(page(target.read_text()))
    print(f"wrote {target}")
