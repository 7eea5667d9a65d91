"""Write the table of kernel strategies into docs/performance.md, between its
`<!-- strategies -->` and `<!-- /strategies -->` lines, from the Strategy records of
sweep/execution/kernel.py and the sizes its choice reads (tests/test_performance_doc.py checks
that the page holds what this writes, and that each row's rule is the one kernel_plan applies).

Usage: python benchmarks/strategies_table.py  (`make docs`)
"""

from __future__ import annotations

import sys
from pathlib import Path

from sweep.execution import kernel
from sweep.kernels.codes import LANES, SYMMETRIC_MAX_BYTES, SYMMETRIC_MIN_N, TILE

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- strategies -->", "<!-- /strategies -->"
PLAIN = ("one head, identity `qk` and `v` (or `v: qk`), `mask: dense`, no noise, `ffn: none`, "
         f"softmax beta dt^2 <= {kernel.FAST_SOFTMAX_MAX_BETA_DT2:g} or unnormalized "
         f"beta (1 + dt^2) <= {kernel.FAST_UNNORMALIZED_MAX_BETA:g} (effective beta)")
WHEN = {
    "lanes": f"plain, n < {kernel.BLOCKED_MIN_N}, d <= {kernel.LANES_MAX_D}",
    "rows": f"plain, n < {kernel.BLOCKED_MIN_N}, d > {kernel.LANES_MAX_D}",
    "blocked": (f"plain, n >= {kernel.BLOCKED_MIN_N}; `symmetric` (whole n x n weights) from "
                f"n = {SYMMETRIC_MIN_N} while n^2 x itemsize <= "
                f"{SYMMETRIC_MAX_BYTES // 2**20} MiB, else tile by tile"),
    "general": "any other flow (several heads, matrices, masks, noise, ffn, large exponents)",
    "layers": ("a layer model (`model.layers`), unless it runs as a flow (docs/layers.md) "
               "that is plain: then that flow's kernel"),
}
HOW = {
    "lanes": f"a batch's systems side by side, one per SIMD lane, {LANES} to a block",
    "rows": "one serial compiled call per system, tokens as structure of arrays",
    "blocked": f"BLAS products on row tiles of {TILE}, the tiles of one job shared over threads",
    "general": "the model-zoo kernels (kernels/general/), one job per call",
    "layers": "the general step and observables once per layer, blocks in NumPy",
}


def feeding(s: kernel.Strategy) -> str:
    """How the runner feeds a strategy, from its record."""
    parts = ["batched" if s.batched else "one job per call"]
    if s.min_batch:
        *more, least = s.min_batch
        floor = f"{least} (all there are, if fewer), however long the jobs"
        parts.append(f"at least {', else '.join(map(str, more))} jobs a batch where there are "
                     f"enough, else {floor}" if more else f"{floor} a batch")
    if s.shared:
        parts.append("a lone job shares its tiles over threads")
    return "; ".join(parts)


def table() -> str:
    rows = ["| strategy | chosen when | how it runs | fed by the runner | planning's rate "
            "(GFLOP/s, one core) | compile (s, empty cache) |", "|---|---|---|---|---|---|"]
    for name, s in kernel.STRATEGIES.items():
        extra = f" (+{kernel.SYMMETRIC_COMPILE_SECONDS:g} for `symmetric`)" if s.shared else ""
        extra += " + gramobs" if s.gramobs else ""
        rows.append(f"| `{name}` | {WHEN[name]} | {HOW[name]} | {feeding(s)} | "
                    f"{s.flops / 1e9:g} | {s.compile_seconds:g}{extra} |")
    rows.append(f"\n\"plain\": {PLAIN}. \"gramobs\": the save's observables these paths share "
                f"(observables/gramobs.py), about {kernel.GRAMOBS_COMPILE_SECONDS:g} s more, "
                "compiled once for all of them.")
    return "\n".join(rows)


def render(doc: str) -> str:
    head, _, rest = doc.partition(BEGIN + "\n")
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


if __name__ == "__main__":
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"{DOC}: no {BEGIN} ... {END} lines to write the table between")
    DOC.write_text(render(text))
    print(f"wrote the strategies table into {DOC}")
