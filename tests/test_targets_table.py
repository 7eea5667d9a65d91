"""docs/performance.md: its targets table is the one benchmarks/targets_table.py renders from
the newest committed benchmarks/results/targets-*.json (no number pasted by hand)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
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
