"""Peak memory of `sweep merge` on a trajectory sweep at one and eight times the jobs: the
merge writes the file in blocks of consecutive jobs as it reads the parts, so its peak stays
put while the results grow eightfold (before, it held every job's series and positions).

The sweep is the demo's dynamics with its trajectory kept (128 tokens in d = 3, 61 saves:
187 kB of positions a job) over 20 betas and 32 x SCALE seeds: 120 MB of results at one time
(two blocks of the merge, so that its peak is already the one of any larger sweep), 960 MB
at eight. Each size runs once (`sweep run`, which makes the parts), then `sweep merge` runs
`repeats` times, each a fresh process whose peak resident memory and wall time are recorded
as targets.py records them (cli_sweep.process: GNU time); the medians are reported, with the
sizes of the results in memory and on disk. Written as JSON to benchmarks/results/merge-*.json.
Usage: python benchmarks/merge_memory.py [repeats]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_sweep import process  # noqa: E402

SCALES = (1, 8)
SWEEP = {
    "name": "traj",
    "model": {"attention": "softmax", "n": 128, "d": 3},
    "integrate": {"method": "euler", "dt": 0.05, "t_max": 30.0, "save_every": 0.5},
    "output": {"positions": "trajectory"},
}


def sweep(*args: str) -> list[str]:
    return [sys.executable, "-m", "sweep", *args]


def measure(scale: int, folder: Path, repeats: int) -> dict:
    """Make the parts of the sweep at `scale`, then merge them `repeats` times."""
    raw = {**SWEEP, "grid": {"beta": {"linspace": [0.0, 9.5, 20]},
                             "seed": {"range": [0, 32 * scale]}},
           "output": {**SWEEP["output"], "path": str(folder / f"traj{scale}.nc")}}
    config = folder / f"traj{scale}.yaml"
    config.write_text(yaml.safe_dump(raw))
    subprocess.run(sweep("run", str(config)), check=True, stdout=subprocess.DEVNULL)
    peaks, walls = [], []
    for _ in range(repeats):
        merged = process(sweep("merge", str(config)))
        peaks.append(merged["peak_mib"])
        walls.append(merged["wall_s"])
    jobs = 20 * 32 * scale
    results = jobs * (61 * 128 * 3 + 61 * 13 + 4) * 8  # positions, series, scalars
    return {"scale": scale, "jobs": jobs, "results_MB": results / 1e6,
            "file_MB": Path(raw["output"]["path"]).stat().st_size / 1e6,
            "merge_peak_MiB": statistics.median(peaks), "merge_wall_s": statistics.median(walls),
            "peaks_MiB": peaks, "walls_s": walls}


def main(repeats: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(scale, Path(tmp), repeats) for scale in SCALES]
    for row in rows:
        print(f"x{row['scale']}: {row['jobs']} jobs, {row['results_MB']:.0f} MB of results, "
              f"file {row['file_MB']:.0f} MB: merge peak {row['merge_peak_MiB']:.0f} MiB, "
              f"wall {row['merge_wall_s']:.1f} s (median of {repeats})")
    out = Path(__file__).parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"merge-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps({"rows": rows, "time": time.strftime("%Y-%m-%dT%H:%M:%S")},
                               indent=2))
    print(f"written: {path}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
