"""The public code of arXiv 2312.10794 (github borjanG/2023-transformers-rotf,
`phase-diagrams.py`: PyTorch, every start of one beta in one batch) on its own phase diagram,
timed as benchmarks/targets.py times `sweep run`: one process, wall and peak resident memory
(GNU time), pinned to one core (taskset -c 0, and OMP_NUM_THREADS=1, which torch obeys).

Its code is not part of this repository. Point SWEEP_REFERENCE_CODE (or the first argument) at
a checkout of it and SWEEP_REFERENCE_PYTHON (or --python) at a python with torch, numpy,
matplotlib and tqdm. The checkout is never edited: the script runs from a copy in a temporary
folder with these substitutions (each must occur as often as listed, so a changed script stops
here instead of running something else):
  ON_CPU        '.to('cuda')' everywhere -> 'cpu' (it is written for a GPU);
  NO_PLOT       its closing `plot_pickle(...)` -> `pass`: the plot turns on matplotlib's
                text.usetex, so without a LaTeX installation it dies after writing its results
                (and `sweep run` does not plot either);
  DRAWN_STARTS  only for the same-starts check (--compare): its random starts
                torch.randn(batch, ntokens, dmodel) -> sweep's, read from a .npy file.
The run: --use_softmax (then t_max = 30), d = 2, n = 32, --batch 128 starts, 90 betas in
linspace(0.1, 9, 90), step 0.1. It writes, in its working folder, ds_<date>_<salt>.log (its
stdout) and ds_<date>_<salt>.pkl (a pickle: its args, betas_list, times_list =
linspace(0, 30, 200), density_tensor [betas, 200], the probability of clustering at each
checkpoint, and cluster_tensor, zeros without --cluster_sizes); as a user runs it, also
ds_<...>_log.pdf and ds_<...>_linear.pdf.

Usage: python benchmarks/reference_code.py [CHECKOUT] [--python PY] [--repeat K] [--betas B]
       [--compare]   (prints JSON; --compare adds both checks against `sweep run`)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_sweep import ROOT, WARM, process  # noqa: E402

SCRIPT = "phase-diagrams.py"
CONFIG = ROOT / "configs" / "phase-glpr-reference.yaml"
STARTS, DT, N = 128, 0.1, 32
# (text of the reference script, its replacement, how often it occurs)
ON_CPU = ("'cuda'", "'cpu'", 13)
NO_PLOT = ("plot_pickle(fname_prefix + '.pkl');", "pass;  # plot skipped (benchmark copy)", 1)
DRAWN_STARTS = ("torch.randn(batch, ntokens, dmodel, requires_grad=False)",
                "torch.from_numpy(np.load({path!r}))", 1)
PINNED = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def located(checkout: str | None = None, python: str | None = None) -> tuple[Path, str] | None:
    """(reference checkout, python with torch) from the arguments or SWEEP_REFERENCE_CODE and
    SWEEP_REFERENCE_PYTHON (default python3); None when no checkout is named."""
    checkout = checkout or os.environ.get("SWEEP_REFERENCE_CODE")
    if not checkout:
        return None
    path = Path(os.path.abspath(Path(checkout).expanduser()))
    if not (path / SCRIPT).is_file():
        sys.exit(f"{path}: no {SCRIPT} here (SWEEP_REFERENCE_CODE names a checkout of "
                 "github borjanG/2023-transformers-rotf)")
    python = python or os.environ.get("SWEEP_REFERENCE_PYTHON", "python3")
    # it runs in a temporary folder: a relative path to a venv's python (not resolved: the
    # venv is in the link) becomes absolute
    return path, os.path.abspath(python) if os.sep in python else python


def patched_copy(checkout: Path, folder: Path, starts: Path | None = None) -> Path:
    """folder/phase-diagrams.py: the reference script with ON_CPU and NO_PLOT substituted, and
    DRAWN_STARTS (its starts read from the [starts, n, d] array in `starts`) if given."""
    text = (checkout / SCRIPT).read_text()
    subs = [ON_CPU, NO_PLOT]
    if starts is not None:
        subs.append((DRAWN_STARTS[0], DRAWN_STARTS[1].format(path=str(starts)), 1))
    for old, new, count in subs:
        if text.count(old) != count:
            sys.exit(f"{checkout / SCRIPT}: {old!r} occurs {text.count(old)} times, not "
                     f"{count}: not the script this benchmark was written for")
        text = text.replace(old, new)
    copy = folder / SCRIPT
    copy.write_text(text)
    return copy


def run(script: Path, python: str, betas: tuple[float, float, int] = (0.1, 9.0, 90),
        starts: int = STARTS) -> dict:
    """One run of a patched copy on linspace(*betas) x starts, in the copy's (empty) folder,
    pinned to one core: targets.py's keys (wall_s, peak_mib, cpu_s), the load average around
    it and the sizes of what it wrote, by suffix."""
    lo, hi, count = betas
    args = ["--use_softmax", "--dmodel", "2", "--ntokens", str(N), "--batch", str(starts),
            "--betamin", repr(lo), "--betamax", repr(hi), "--betas", str(count),
            "--step", str(DT), "--disable_tqdm"]
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    load = os.getloadavg()[0]
    timed = process([*pin, python, script.name, *args], cwd=script.parent,
                    env={**WARM, **PINNED})  # the bytecode cache on, as for sweep
    wrote = {p.suffix: p.stat().st_size for p in script.parent.glob("ds_*")}
    return {"jobs": count * starts, "betas": count, "starts": starts, **timed,
            "pinned": " ".join(pin + [f"{k}={v}" for k, v in PINNED.items()]),
            "load_before": load, "load_after": os.getloadavg()[0], "wrote_bytes": wrote}


def clustering(python: str, folder: Path) -> dict[str, np.ndarray]:
    """betas_list, times_list and density_tensor of the reference's pickle in folder (its
    python unpickles it: the arrays are torch tensors)."""
    (pkl,) = folder.glob("ds_*.pkl")
    npz = folder / "clustering.npz"
    code = ("import pickle, sys, numpy as np; r = pickle.load(open(sys.argv[1], 'rb')); "
            "np.savez(sys.argv[2], **{k: r[k].numpy() for k in "
            "('betas_list', 'times_list', 'density_tensor')})")
    subprocess.run([python, "-c", code, str(pkl), str(npz)], check=True)
    with np.load(npz) as arrays:
        return {k: arrays[k] for k in arrays.files}


def checkpoint_steps(marks: np.ndarray, dt: float = DT) -> np.ndarray:
    """The step whose state the reference records at each checkpoint time in marks: the first
    whose clock (a running float sum of dt, compared after each step) reaches it."""
    clock = np.add.accumulate(np.full(int(np.ceil(marks[-1] / dt)) + 2, dt))
    return np.searchsorted(clock, marks, side="left") + 1


def sweep_clustering(results: Path, ref: dict) -> np.ndarray:
    """[beta, seed, checkpoint] clustered_fraction of a `sweep run` of CONFIG (a save every
    step, so save k is step k) at the reference's checkpoints and betas."""
    steps = checkpoint_steps(ref["times_list"])
    with xr.open_dataset(results) as ds:
        cf = ds.clustered_fraction.transpose("beta", "seed", "time")
        if not (np.allclose(ds.beta, ref["betas_list"], rtol=0, atol=1e-12)
                and np.allclose(ds.time[steps], steps * DT, rtol=0, atol=1e-9)):
            raise ValueError(f"{results}: not the reference's betas and checkpoints")
        return cf.values[:, :, steps]


def agreement(ref: dict, results: Path, other: Path) -> dict:
    """The reference's probability of clustering p_r against sweep's p_s (the seed mean of
    clustered_fraction of `results`) at each (beta, checkpoint), each from its own 128
    starts, beside the same difference between p_s and a sweep of other starts (`other`),
    which is what sampling alone gives. A per-start fraction of clustered pairs is no 0/1 draw
    (its variance lies far below p (1 - p)) and is heavy-tailed (one start in 128 that has not
    merged yet), so this empirical null stands in for a binomial or normal error."""
    p_r = ref["density_tensor"]
    p_s, p_o = (sweep_clustering(path, ref).mean(axis=1) for path in (results, other))
    diff, null = np.abs(p_r - p_s), np.abs(p_o - p_s)
    return {"cells": int(diff.size), "mean_abs_diff": float(diff.mean()),
            "max_abs_diff": float(diff.max()), "null_mean_abs_diff": float(null.mean()),
            "null_max_abs_diff": float(null.max())}


def sweep_run(out: Path, *sets: str) -> dict:
    """`sweep run` of CONFIG (one worker) with --set overrides, into out."""
    args = [a for s in sets for a in ("--set", s)]
    return process([sys.executable, "-m", "sweep", "run", str(CONFIG), *args, "--workers", "1",
                    "--out", str(out)])


def same_starts(checkout: Path, python: str, tmp: Path, betas=(1.0, 9.0, 5)) -> dict:
    """The reference fed sweep's starts (seeds 0..127, shared by every beta) against sweep's
    run of CONFIG at linspace(*betas): the cells where the two statistics count a different
    number of a cell's 128 x 32 x 31 ordered pairs, and the largest such difference (their
    quotients differ by rounding alone when the counts agree)."""
    grid = f"grid.beta={{linspace: [{betas[0]}, {betas[1]}, {betas[2]}]}}"
    sweep_run(tmp / "starts.nc", "grid.beta=[1.0]", "integrate.t_max=0.1",
              "output.positions=trajectory")
    with xr.open_dataset(tmp / "starts.nc") as ds:
        x0 = ds.positions.isel(beta=0, time=0).transpose("seed", "token", "component").values
    np.save(tmp / "starts.npy", x0)
    sweep_run(tmp / "same.nc", grid)
    folder = tmp / "same-starts"
    folder.mkdir()
    run(patched_copy(checkout, folder, starts=tmp / "starts.npy"), python, betas)
    ref = clustering(python, folder)
    diff = np.abs(ref["density_tensor"] - sweep_clustering(tmp / "same.nc", ref).mean(axis=1))
    total = STARTS * N * (N - 1)
    pairs = np.rint(diff * total)  # both statistics are counts of pairs over that total
    return {"betas": list(betas), "cells": int(diff.size), "max_abs_diff": float(diff.max()),
            "pairs_per_cell": total, "cells_differing": int((pairs > 0).sum()),
            "max_pairs_differing": int(pairs.max())}


def other_starts(out: Path, betas: int) -> Path:
    """`sweep run` of the reference workload on seeds 128..255: the null of `agreement`."""
    sweep_run(out, f"grid.beta={{linspace: [0.1, 9.0, {betas}]}}", "grid.seed={range: [128, 256]}")
    return out


def measure(checkout: Path, python: str, folder: Path, betas: int = 90) -> dict:
    """One timed run of the reference workload (linspace(0.1, 9, betas) x 128 starts) in folder."""
    folder.mkdir()
    return run(patched_copy(checkout, folder), python, (0.1, 9.0, betas))


def entry(tmp: Path, betas: int, sweep: dict, results: Path) -> dict:
    """targets.py's `reference_code`: the reference on the workload of its `reference` entry
    (sweep, whose results file is `results`), sweep's speed-up over it, the agreement of the
    two statistics and the same-starts check; {"measured": False} without
    SWEEP_REFERENCE_CODE."""
    where = located()
    if where is None:
        return {"measured": False, "why": "SWEEP_REFERENCE_CODE not set"}
    timed = measure(*where, tmp / "reference-code", betas)
    other = other_starts(tmp / "other.nc", betas)
    return {"measured": True, **timed, "sweep_speedup": timed["wall_s"] / sweep["wall_s"],
            "agreement": agreement(clustering(where[1], tmp / "reference-code"), results, other),
            "same_starts": same_starts(*where, tmp)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", nargs="?", help="default: $SWEEP_REFERENCE_CODE")
    parser.add_argument("--python", help="a python with torch (default: "
                        "$SWEEP_REFERENCE_PYTHON, else python3)")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs, one after another")
    parser.add_argument("--betas", type=int, default=90, help="betas in linspace(0.1, 9, B)")
    parser.add_argument("--compare", action="store_true", help="also `sweep run` the same "
                        "workload and compare the statistics, then the same-starts check")
    args = parser.parse_args(argv)
    where = located(args.checkout, args.python)
    if where is None:
        sys.exit("no reference checkout: give its path or set SWEEP_REFERENCE_CODE")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runs = [measure(*where, tmp / f"run{i}", args.betas) for i in range(args.repeat)]
        result = {"reference_code": runs}
        if args.compare:
            grid = f"grid.beta={{linspace: [0.1, 9.0, {args.betas}]}}"
            result["sweep"] = sweep_run(tmp / "phase.nc", grid)
            ref = clustering(where[1], tmp / f"run{args.repeat - 1}")
            result["agreement"] = agreement(ref, tmp / "phase.nc",
                                            other_starts(tmp / "other.nc", args.betas))
            result["same_starts"] = same_starts(*where, tmp)
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
