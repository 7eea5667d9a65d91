"""docs/performance.md: its targets table is the one benchmarks/targets_table.py renders from
the newest committed benchmarks/results/targets-*.json (no number pasted by hand)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import machine  # noqa: E402
import targets_table  # noqa: E402


def test_the_doc_holds_the_table_of_the_newest_targets_json():
    latest = max((targets_table.ROOT / "benchmarks" / "results").glob("targets-*.json"))
    body = targets_table.table(json.loads(latest.read_text()),
                               latest.relative_to(targets_table.ROOT).as_posix())
    doc = targets_table.DOC.read_text()
    assert f"{targets_table.BEGIN}\n{body}\n{targets_table.END}" in doc


def test_an_overhead_lost_in_noise_is_not_shown_as_met():
    latest = max((targets_table.ROOT / "benchmarks" / "results").glob("targets-*.json"))
    r = json.loads(latest.read_text())
    r["small"]["overhead_ms_per_job"] = 0.0
    row = [v for m, _, v in targets_table.rows(r) if m.startswith("time per job outside")]
    assert row == ["not resolved: within the noise of the fixed cost"]


def newest() -> dict:
    return json.loads(max((targets_table.ROOT / "benchmarks" / "results")
                          .glob("targets-*.json")).read_text())


def test_a_json_without_the_reference_code_says_it_was_not_measured():
    absent, unset = newest(), newest()
    absent.pop("reference_code", None)
    unset["reference_code"] = {"measured": False, "why": "SWEEP_REFERENCE_CODE not set"}
    for r in (absent, unset):
        rows = targets_table.rows(r)
        shown = [v for m, _, v in rows if m.startswith("the reference code")]
        assert shown == ["not measured in this run (SWEEP_REFERENCE_CODE not set)"]
        assert not any("reference code /" in m for m, _, _ in rows)


def test_the_reference_code_rows_show_its_run_beside_sweeps():
    r = newest()
    r["reference_code"] = {"measured": True, "wall_s": 104.26, "peak_mib": 281.4,
                           "sweep_speedup": 104.26 / r["reference"]["wall_s"],
                           "agreement": {"cells": 18000, "mean_abs_diff": 0.00832,
                                         "max_abs_diff": 0.1009, "null_mean_abs_diff": 0.00797,
                                         "null_max_abs_diff": 0.0643},
                           "same_starts": {"betas": [1.0, 9.0, 5], "cells": 1000,
                                           "pairs_per_cell": 126976, "cells_differing": 2,
                                           "max_pairs_differing": 1}}
    rows = targets_table.rows(r)
    measures = [m for m, _, _ in rows]
    at = measures.index("its results file") + 1  # right after sweep's own reference rows
    assert [v for _, _, v in rows[at:at + 5]] == [
        "104.3 s", f"{104.26 / r['reference']['wall_s']:.1f}",
        f"281 MiB (`sweep run`: {r['reference']['peak_mib'] / 281.4:.2f}x that)",
        "0.0083, 0.101 (0.0080, 0.064)", "2 of 1000 (the largest by 1 of 126976 pairs)"]
    assert rows[at + 1][1] == ">= 10" and "18000 (beta, t) cells" in rows[at + 3][0]


def test_the_exp_share_and_the_worker_share_come_from_the_json_when_it_has_them():
    r = newest()
    assert not any("exponentials" in m for m, _, _ in targets_table.rows(r)) or \
        "exp_per_s" in r["reference"]
    r["reference"].update(exps=3.54e9, exp_per_s=0.8e9,
                          exp_ceiling_share=3.54e9 / 0.8e9 / r["reference"]["wall_s"])
    r["small"]["worker_share_outside"] = 0.04
    rows = {m: (t, v) for m, t, v in targets_table.rows(r)}
    exp = [v for m, (_, v) in rows.items() if "exponentials" in m]
    assert exp == [f"{100 * 3.54e9 / 0.8e9 / r['reference']['wall_s']:.0f}%"]
    worker = [tv for m, tv in rows.items() if m.startswith("share of worker time outside")]
    assert worker == [("<= 10%", "4%")]


def _jax_entry(r: dict) -> dict:
    one = {"jax": {"wall_s": 20.0, "compile_s": 0.5, "steady_s": 16.0, "cpu_s": 19.5},
           "sweep": {"wall_s": 5.0, "cpu_s": 4.9}, "agreement": {"cells": 100, "cells_differing": 0,
                                                   "max_pairs_differing": 0}}
    two = {"jax": {"wall_s": 24.0, "compile_s": 0.6, "steady_s": 19.0, "cpu_s": 40.0},
           "sweep": {"wall_s": 3.0, "cpu_s": 5.8}}
    for side in (one, two):
        side["ratio"] = {"end_to_end": side["jax"]["wall_s"] / side["sweep"]["wall_s"],
                         "steady": side["jax"]["steady_s"] / side["sweep"]["wall_s"]}
    return {"measured": True, "betas": 90, "pinned": "taskset -c 0", "one_core": one,
            "two_cores": two, "workers_speedup": 5.0 / 3.0}


def test_the_jax_rows_show_both_sides_and_the_ratios_against_their_targets():
    r = newest()
    r["jax"] = _jax_entry(r)
    shown = {m: (t, v) for m, t, v in targets_table.rows(r)}
    assert shown["ratio JAX / `sweep run`, one core each: end to end"] == (">= 3", "4.00")
    assert shown["ratio JAX / `sweep run`, two cores each: end to end"] == (">= 4", "8.00")
    assert shown["`sweep run`: two workers on two cores against one worker on one"] == (
        ">= 1.8", "1.67")
    assert shown["`sweep run --workers 1` beside it, same core: wall"] == ("", "5.0 s (CPU 4.9 s)")
    assert any(v == "20.0 s (0.50 s compiling, 16.0 s steady; CPU 19.5 s)"
               for _, v in shown.values())


def test_a_json_or_a_run_without_jax_says_so_in_each_jax_row():
    for r in (newest(), newest()):
        r["jax"] = r["jax_small"] = {"measured": False, "why": "jax not installed"}
        rows = targets_table.rows(r)
        jax = [v for m, _, v in rows if m.startswith("JAX")]
        assert jax == ["not measured in this run (jax not installed)"] * 2
        assert not any("ratio JAX" in m for m, _, _ in rows)


def test_the_large_rows_give_the_ratios_of_the_symmetric_kernel():
    r = newest()
    row = {"n": 2048, "d": 128, "systems": 1}
    r["large"] = {"rows": [
        {**row, "dtype": "float64", "impl": "symmetric", "steps_per_s": 50.0, "vs_numpy": 2.4,
         "vs_ceiling": 0.9}, {**row, "dtype": "float64", "impl": "jax", "steps_per_s": 20.0,
                              "vs_numpy": 1.0, "vs_ceiling": 0.4, "compile_s": 0.25},
        {**row, "dtype": "float32", "impl": "symmetric", "steps_per_s": 90.0, "vs_numpy": 3.0,
         "vs_ceiling": 0.95},
        {**row, "dtype": "float64", "impl": "symmetric-close", "steps_per_s": 55.0,
         "vs_numpy": 2.6, "vs_ceiling": 0.8}]}
    shown = {m: (t, v) for m, t, v in targets_table.rows(r)}
    close = [m for m in shown if m.startswith("the same, ")]
    assert [shown[m] for m in close] == [("", "55.0, 2.60, 0.80")] and "float64" in close[0]
    assert shown["ratio of that / JAX, float64, steady"] == ("", "2.75")
    assert shown["(2048, 128) float32 / float64, `symmetric`"] == (">= 1.7", "1.80")
    assert shown["ratio `symmetric` / JAX, float64, steady (JAX compiling 0.25 s apart)"] == (
        "", "2.50")
    assert shown["JAX at (2048, 128) float32"] == ("", "not measured (jax not installed)")


def test_the_cold_compile_row_shows_the_wall_against_its_target_or_says_not_measured():
    absent, measured = newest(), newest()
    absent.pop("cold_compile", None)
    measured["cold_compile"] = {"variants": ["lanes-float64"], "wall_s": 12.34, "cpu_s": 11.0,
                                "peak_mib": 300.0}
    rows = {m: (t, v) for m, t, v in targets_table.rows(measured) if m.startswith("cold compile")}
    assert list(rows.values()) == [("<= 20 s", "12.3 s (CPU 11.0 s)")]
    shown = [v for m, _, v in targets_table.rows(absent) if m.startswith("cold compile")]
    assert shown == ["not measured in this run (not in this JSON)"]


def test_the_lanes_row_holds_the_exp_ceiling_target_or_says_it_was_not_measured():
    r = newest()
    r.pop("lanes_small", None)
    shown = [v for m, _, v in targets_table.rows(r) if m.startswith("(32, 3) x 256")]
    assert shown == ["not measured in this run (not in this JSON)"]
    r["lanes_small"] = {"rows": [
        {"impl": "numpy", "steps_per_s": 1.4e5, "vs_numpy": 1.0, "vs_ceiling": 0.06},
        {"impl": "jax", "steps_per_s": 4e5, "vs_numpy": 2.9, "vs_ceiling": 0.16,
         "compile_s": 0.125},
        {"impl": "lanes", "steps_per_s": 2.2e6, "vs_numpy": 15.7, "vs_ceiling": 0.89}]}
    rows = [(t, v) for m, t, v in targets_table.rows(r) if "(32, 3) x 256" in m
            or "`lanes` / JAX" in m]
    assert rows == [(">= 0.6 of the exp ceiling", "2.2e+06, 15.7, 0.89"), ("", "5.50")]


def test_the_peer_runs_alternate_and_each_side_reports_its_median_run():
    import jax_targets

    order = []

    def side(name, walls):
        left = iter(walls)

        def run():
            order.append(name)
            return {"wall_s": next(left), "which": name}
        return run

    got = jax_targets.paired(side("sweep", [5.0, 3.0, 4.0]), side("jax", [10.0, 12.0, 11.0]))
    assert order == ["sweep", "jax"] * 3
    assert (got["sweep"]["wall_s"], got["jax"]["wall_s"]) == (4.0, 11.0)
    assert got["sweep"]["walls_s"] == [5.0, 3.0, 4.0]
    assert jax_targets.median_run([{"wall_s": 2.0}, {"wall_s": 1.0}])["wall_s"] == 1.0


CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx2 fma avx512f avx512dq

processor\t: 1
cpu family\t: 26
model name\t: another
flags\t\t: fpu
"""


def test_the_table_names_the_machine_its_json_records():
    """A targets JSON records its machine (benchmarks/machine.py: the first processor of
    /proc/cpuinfo, its ISA, the BLAS), and the table's first line names it; an older JSON
    without it names none."""
    assert machine.cpuinfo(CPUINFO) == {"cpu": "AMD EPYC", "cpu_family": "25",
                                        "cpu_model": "17", "isa": ["avx2", "fma", "avx512f"]}
    r = newest()
    r["machine"] = {**machine.cpuinfo(CPUINFO), "blas": {
        "internal_api": "openblas", "version": "0.3.31", "architecture": "SkylakeX"}}
    first = targets_table.table(r, "t.json").splitlines()[0]
    assert (", 2 cores on AMD EPYC (family 25, model 17; avx2 fma avx512f), OpenBLAS 0.3.31 "
            "(SkylakeX kernels), load average") in first
    r.pop("machine")
    assert " on " not in targets_table.table(r, "t.json").splitlines()[0]


def test_a_share_above_one_says_the_ceiling_read_low():
    r = newest()
    r["lanes_small"]["rows"] = [dict(row, vs_ceiling=1.17) if row["impl"] == "lanes" else row
                                for row in r["lanes_small"]["rows"]]
    shown = [v for m, _, v in targets_table.rows(r) if m.startswith("(32, 3) x 256")]
    assert shown[0].endswith("1.17 (above 1: the ceiling read low in this run)")
    r["lanes_small"]["rows"] = [dict(row, vs_ceiling=0.69) for row in r["lanes_small"]["rows"]]
    assert [v for m, _, v in targets_table.rows(r) if m.startswith("(32, 3) x 256")][0] \
        .endswith(", 0.69")


def test_the_shares_are_taken_against_the_best_of_two_ceilings():
    """targets.ceilings_again: a ceiling measured low once (the other core busy) is replaced
    by the higher of its two readings, and every row's share is taken against that."""
    import run
    import targets

    low = {"gemm_1t_gflops_float64": 49.0, "gemm_all_gflops_float64": 88.0,
           "gemm_1t_gflops_float32": 90.0, "gemm_all_gflops_float32": 160.0,
           "exp_per_s": 1.9e9}
    high = dict(low, exp_per_s=2.9e9, gemm_all_gflops_float64=80.0)
    best = targets.best_ceilings(low, high)
    assert best["exp_per_s"] == 2.9e9 and best["gemm_all_gflops_float64"] == 88.0
    row = {"n": 32, "d": 3, "dtype": "float64", "steps_per_s": 2.18e6, "vs_ceiling": 1.17}
    run.against([row], best, 2)
    assert row["vs_ceiling"] == 2.18e6 / (2.9e9 / 32**2)  # the exp binds at (32, 3)
