"""Write the table of the latest benchmarks/results/targets-*.json (benchmarks/targets.py)
into docs/performance.md, between its `<!-- targets -->` and `<!-- /targets -->` lines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import machine  # benchmarks/ (the folder of this script, or put on sys.path by its importer)

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- targets -->", "<!-- /targets -->"


def rows(r: dict) -> list[tuple[str, str, str]]:
    """(measure, target, measured) for each target of one targets-*.json."""
    ref, tiny, small, plan = r["reference"], r["tiny"], r["small"], r["plan"]
    return [
        (f"reference phase diagram, {ref['jobs']} jobs, `sweep run` on one worker: wall"
         f"{_median_of(ref)}", "", f"{ref['wall_s']:.1f} s"),
        ("the same workload in batched NumPy, same run", "", f"{ref['numpy_s']:.1f} s"),
        ("ratio NumPy / `sweep run`", ">= 25", f"{ref['speedup_vs_numpy']:.1f}"),
        *exp_rows(ref),
        ("peak memory of that run", "<= 300 MB", f"{ref['peak_mib']:.0f} MiB"),
        ("its results file", "<= 111 MB", f"{ref['output_mb']:.1f} MB"),
        *code_rows(r),
        *jax_rows(r),
        (f"{small['jobs']} jobs of {tuple(small['shape'])} x {small['steps']} steps, one "
         "worker: time per job in the kernels", "", f"{small['kernel_ms_per_job']:.2f} ms"),
        *outside_rows(small),
        *jax_small_rows(r),
        ("the fixed cost of a run (start-up, warm-up, merge, exit: the config cut to one job)",
         "<= 0.8 s", f"{small['fixed_s']:.2f} s"),
        *cold_rows(r),
        (f"{tiny['jobs']} tiny jobs (n 4, d 2, 2 steps): part files", "<= 2,000",
         f"{tiny['part_files']}"),
        ("the first run", "", f"{tiny['first_run']['wall_s']:.1f} s"),
        ("a fully skipped rerun", "<= 5 s", f"{tiny['skipped_rerun']['wall_s']:.1f} s"),
        ("`sweep status`", "<= 5 s", f"{tiny['status']['wall_s']:.1f} s"),
        ("`sweep merge`", "<= 20 s", f"{tiny['merge']['wall_s']:.1f} s"),
        (f"`sweep plan` of {plan['jobs']} jobs: wall", "<= 30 s", f"{plan['wall_s']:.1f} s"),
        ("its peak memory", "<= 500 MB", f"{plan['peak_mib']:.0f} MiB"),
        *lanes_rows(r),
        *large_rows(r),
    ]


def cold_rows(r: dict) -> list[tuple[str, str, str]]:
    """`sweep compile configs/demo.yaml` into an empty compile cache (JSONs before it have
    none)."""
    what = "cold compile of the demo's kernels (`sweep compile configs/demo.yaml`, empty cache)"
    if "cold_compile" not in r:
        return not_measured({}, what)
    cold = r["cold_compile"]
    return [(f"{what}: wall", "<= 20 s", f"{cold['wall_s']:.1f} s (CPU {cold['cpu_s']:.1f} s)")]


def not_measured(entry: dict, what: str) -> list[tuple[str, str, str]]:
    return [(what, "", f"not measured in this run ({entry.get('why', 'not in this JSON')})")]


def _median_of(run: dict) -> str:
    """' (median of K runs)' for an entry that ran K times (JSONs before that ran once)."""
    return f" (median of {len(run['walls_s'])} runs)" if len(run.get("walls_s", ())) > 1 else ""


def _in_turn(jax: dict) -> str:
    pairs = jax.get("pairs", 1)
    return (f" (each side's run of median wall of {pairs}, the two sides run in turn)"
            if pairs > 1 else "")


def _jax_times(j: dict) -> str:
    return (f"{j['wall_s']:.1f} s ({j['compile_s']:.2f} s compiling, {j['steady_s']:.1f} s "
            f"steady; CPU {j['cpu_s']:.1f} s)")


def _cpu(run: dict) -> str:
    return f"{run['wall_s']:.1f} s (CPU {run['cpu_s']:.1f} s)"


def jax_rows(r: dict) -> list[tuple[str, str, str]]:
    """The JAX peer on the reference workload (benchmarks/jax_targets.py), one core each and
    two cores each; a JSON without it, or a run without jax, says it was not measured."""
    jax = r.get("jax", {"measured": False})
    if not jax["measured"]:
        return not_measured(jax, "JAX (jit, vmap, lax.scan, float64) on the same workload")
    one, two, agree = jax["one_core"], jax["two_cores"], jax["one_core"]["agreement"]
    return [
        ("JAX (jit, vmap in chunks of 128, lax.scan, float64) on the same workload, one core each "
         f"(`{jax['pinned']}`): wall (compile, steady call){_in_turn(jax)}", "",
         _jax_times(one["jax"])),
        ("`sweep run --workers 1` beside it, same core: wall", "", _cpu(one["sweep"])),
        ("ratio JAX / `sweep run`, one core each: end to end", ">= 3",
         f"{one['ratio']['end_to_end']:.2f}"),
        ("ratio JAX's steady call / `sweep run` (compile and start-up included)", ">= 3",
         f"{one['ratio']['steady']:.2f}"),
        ("two cores each: JAX wall (compile, steady call); `sweep run --workers 2`", "",
         f"{_jax_times(two['jax'])}; {_cpu(two['sweep'])}"),
        ("ratio JAX / `sweep run`, two cores each: end to end", ">= 4",
         f"{two['ratio']['end_to_end']:.2f}"),
        ("`sweep run`: two workers on two cores against one worker on one", ">= 1.8",
         f"{jax['workers_speedup']:.2f}"),
        ("JAX from sweep's starts: (system, save) cells whose counts of clustered pairs "
         "differ from `sweep run`'s", "", f"{agree['cells_differing']} of {agree['cells']} "
         f"(the largest by {agree['max_pairs_differing']} pairs)"),
    ]


def jax_small_rows(r: dict) -> list[tuple[str, str, str]]:
    """The JAX peer on the `small` entry's jobs (their Euler steps, no observables)."""
    jax = r.get("jax_small", {"measured": False})
    if not jax["measured"]:
        return not_measured(jax, "JAX on those jobs")
    return [
        ("JAX on those jobs' Euler steps (no observables), one core: wall (compile, steady "
         "call)", "", _jax_times(jax["jax"])),
        ("ratio JAX / `sweep run` of them (one worker): end to end; steady call / time in "
         "the kernels", "", f"{jax['ratio']['end_to_end']:.2f}; {jax['ratio']['steady']:.2f}"),
    ]


def lanes_rows(r: dict) -> list[tuple[str, str, str]]:
    """(32, 3) x 256: `lanes` (what `sweep run` picks there) against NumPy's batched step,
    the exp ceiling and JAX, steady state (JSONs before it have none)."""
    what = "(32, 3) x 256 float64, `lanes` kernel"
    if "lanes_small" not in r:
        return not_measured({}, what)
    by = {row["impl"]: row for row in r["lanes_small"]["rows"]}
    ours, jax = by["lanes"], by.get("jax")
    out = [(f"{what}, Euler steps, observables at both ends: system-steps/s, x NumPy, x exp "
            "ceiling (n^2 exps a step at the kernels' exp rate on every core; lanes "
            "makes n (n + 1) / 2)", ">= 0.6 of the exp ceiling",
            f"{ours['steps_per_s']:.3g}, {ours['vs_numpy']:.1f}, {_share(ours['vs_ceiling'])}")]
    if jax is not None:
        out.append(("ratio `lanes` / JAX there, steady (JAX compiling "
                    f"{jax['compile_s']:.2f} s apart)", "",
                    f"{ours['steps_per_s'] / jax['steps_per_s']:.2f}"))
    return out


def large_rows(r: dict) -> list[tuple[str, str, str]]:
    """(2048, 128) x 1: `symmetric` (what `sweep run` picks there) against NumPy's batched
    step, the gemm ceiling and JAX, steady state (benchmarks/run.py's rows)."""
    if "large" not in r:
        return not_measured({}, "(2048, 128) x 1, `symmetric` kernel")
    by = {(row["dtype"], row["impl"]): row for row in r["large"]["rows"]}
    f64, f32 = by[("float64", "symmetric")], by[("float32", "symmetric")]
    return [*_large(f64, by.get(("float64", "jax")), ">= 2.5 x NumPy, >= 0.85 of the ceiling"),
            *_close(by.get(("float64", "symmetric-close")), by.get(("float64", "jax"))),
            *_large(f32, by.get(("float32", "jax")), ""),
            *_close(by.get(("float32", "symmetric-close")), by.get(("float32", "jax"))),
            ("(2048, 128) float32 / float64, `symmetric`", ">= 1.7",
             f"{f32['steps_per_s'] / f64['steps_per_s']:.2f}")]


def _large(ours: dict, jax: dict | None, target: str) -> list[tuple[str, str, str]]:
    dtype = ours["dtype"]
    row = (f"(2048, 128) x 1 {dtype}, `symmetric` kernel: system-steps/s, x NumPy, x gemm "
           "ceiling", target, _rates(ours))
    if jax is None:
        return [row, (f"JAX at (2048, 128) {dtype}", "", "not measured (jax not installed)")]
    return [row, (f"ratio `symmetric` / JAX, {dtype}, steady (JAX compiling "
                  f"{jax['compile_s']:.2f} s apart)", "", _per(ours, jax))]


def _close(ours: dict | None, jax: dict | None) -> list[tuple[str, str, str]]:
    """The same kernel saving the clustered fraction only (JSONs before it have none): the
    work nearest NumPy's and JAX's steps, which save nothing."""
    if ours is None:
        return []
    dtype = ours["dtype"]
    out = [(f"the same, {dtype}, its two saves of the clustered fraction only (the peers' "
            "steps save nothing): system-steps/s, x NumPy, x gemm ceiling", "", _rates(ours))]
    if jax is not None:
        out.append((f"ratio of that / JAX, {dtype}, steady", "", _per(ours, jax)))
    return out


def _rates(ours: dict) -> str:
    """A large row's system-steps/s, and its ratios to NumPy and to the gemm ceiling."""
    return f"{ours['steps_per_s']:.1f}, {ours['vs_numpy']:.2f}, {_share(ours['vs_ceiling'])}"


def _share(share: float) -> str:
    """A share of a ceiling; above 1 the ceiling was measured low, and the share says nothing
    of a target."""
    return f"{share:.2f}" + (" (above 1: the ceiling read low in this run)" if share > 1 else "")


def _per(ours: dict, jax: dict) -> str:
    return f"{ours['steps_per_s'] / jax['steps_per_s']:.2f}"


def exp_rows(ref: dict) -> list[tuple[str, str, str]]:
    """The share of that wall the workload's exponentials alone would take at the kernels'
    exp rate on one core, measured in the same run (JSONs before it have none)."""
    if "exp_per_s" not in ref:
        return []
    return [(f"its {ref['exps']:.3g} exponentials at the kernels' exp rate on one core "
             f"({ref['exp_per_s'] / 1e9:.2f} G/s, same run): share of that wall", "",
             f"{100 * ref['exp_ceiling_share']:.0f}%")]


def code_rows(r: dict) -> list[tuple[str, str, str]]:
    """The reference code (benchmarks/reference_code.py) on the same workload, in the same
    run; a JSON without it, or a run without SWEEP_REFERENCE_CODE, says it was not measured."""
    code, ref = r.get("reference_code", {"measured": False}), r["reference"]
    if not code["measured"]:
        return [("the reference code (arXiv 2312.10794, PyTorch) on the same workload", "",
                 "not measured in this run (SWEEP_REFERENCE_CODE not set)")]
    agree, same = code["agreement"], code["same_starts"]
    return [
        ("the reference code (arXiv 2312.10794, PyTorch CPU) on the same workload, one core: "
         "wall", "", f"{code['wall_s']:.1f} s"),
        ("ratio reference code / `sweep run`", ">= 10", f"{code['sweep_speedup']:.1f}"),
        ("its peak memory", "", f"{code['peak_mib']:.0f} MiB "
         f"(`sweep run`: {ref['peak_mib'] / code['peak_mib']:.2f}x that)"),
        (f"its probability of clustering against `sweep run`'s, {agree['cells']} (beta, t) "
         "cells from other starts: mean and largest difference (sweep against itself on "
         "seeds 128-255)", "", f"{agree['mean_abs_diff']:.4f}, {agree['max_abs_diff']:.3f} "
         f"({agree['null_mean_abs_diff']:.4f}, {agree['null_max_abs_diff']:.3f})"),
        (f"the same from sweep's starts ({same['betas'][2]} betas x 128 seeds): cells whose "
         "counts of clustered pairs differ", "", f"{same['cells_differing']} of "
         f"{same['cells']} (the largest by {same['max_pairs_differing']} of "
         f"{same['pairs_per_cell']} pairs)"),
    ]


def outside_rows(small: dict) -> list[tuple[str, str, str]]:
    """Worker time outside the kernels: as the run timed its workers (batching, part files,
    locks: `sweep run` prints the share), where the JSON has it; and from wall times, the
    fixed cost of a run (a one-job run) subtracted, which the noise of that cost can hide."""
    by_wall = ("time per job outside them from wall times, beyond the fixed cost of a run",
               "" if "worker_share_outside" in small else "<= 10%",
               f"{small['overhead_ms_per_job']:.2f} ms ({100 * outside(small):.0f}%)"
               if small["overhead_ms_per_job"] > 0 else
               "not resolved: within the noise of the fixed cost")
    if "worker_share_outside" not in small:
        return [by_wall]
    return [("share of worker time outside the kernels, as the run timed its workers",
             "<= 10%", f"{100 * small['worker_share_outside']:.0f}%"), by_wall]


def outside(small: dict) -> float:
    """The share of a job's worker time spent outside the kernels, the fixed cost aside."""
    per_job = small["kernel_ms_per_job"] + small["overhead_ms_per_job"]
    return small["overhead_ms_per_job"] / per_job if per_job > 0 else 0.0


def table(r: dict, source: str) -> str:
    on = f" on {machine.label(r['machine'])}" if "machine" in r else ""
    lines = [f"From `{source}` ({r['when']}, {r['cores']} cores{on}, load average "
             f"{r['load_before']:.1f} before and {r['load_after']:.1f} after"
             f"{'; Python bytecode cached' if r.get('bytecode_cache') else ''}"
             f"{'; --quick: a tenth of each size' if r['quick'] else ''}):", "",
             "| | target | measured |", "|---|---|---|"]
    lines += [f"| {m} | {t} | {v} |" for m, t, v in rows(r)]
    return "\n".join(lines)


def main() -> None:
    latest = max((ROOT / "benchmarks" / "results").glob("targets-*.json"))
    text = DOC.read_text()
    head, _, rest = text.partition(BEGIN + "\n")
    _, _, tail = rest.partition(END)
    if not rest:
        sys.exit(f"{DOC}: no {BEGIN} line")
    body = table(json.loads(latest.read_text()), latest.relative_to(ROOT).as_posix())
    DOC.write_text(f"{head}{BEGIN}\n{body}\n{END}{tail}")


if __name__ == "__main__":
    main()
