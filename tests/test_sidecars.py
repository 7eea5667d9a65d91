"""The published numbers: README.md and docs/analysis.md quote runs only through the
committed sidecars (figures/*.json, figures/demo.*.txt), and a regenerated sidecar that
differs from the committed one is reported (`make check-figures` regenerates them)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "figures" / "sidecars.py"


def sidecars(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT)


def test_the_quoted_numbers_are_those_of_the_committed_sidecars():
    done = sidecars("prose", "--check", "README.md", "docs/analysis.md", "docs/trained.md",
                    "docs/models.md", "docs/training.md", "docs/refine.md")
    assert done.returncode == 0, done.stderr
    readme = (ROOT / "README.md").read_text()
    assert readme.count("<!-- sidecar: ") == 2 and "1.9 s (165.9 jobs/s)" not in readme


def test_a_hand_edited_number_in_the_docs_is_found(tmp_path):
    for name in ("README.md", "docs/analysis.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    docs = tmp_path / "docs" / "analysis.md"
    text = docs.read_text()
    start = text.index("<!-- sidecar: condensation-prose -->")
    docs.write_text(text[:start] + text[start:].replace("at d = 8", "at d = 9", 1))
    done = sidecars("prose", "--check", tmp_path / "README.md", docs)
    assert done.returncode == 1 and "analysis.md: generated numbers are stale" in done.stderr


def test_a_moved_number_fails_the_comparison(tmp_path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for path in (ROOT / "figures").glob("*.json"):
        shutil.copyfile(path, fresh / path.name)
    (fresh / "trained-vs-random.json").unlink(missing_ok=True)
    assert sidecars("compare", ROOT / "figures", fresh).returncode == 0
    shown = json.loads((fresh / "condensation.json").read_text())
    shown["panels"][0]["threshold"][2]["threshold"] += 1e-5
    (fresh / "condensation.json").write_text(json.dumps(shown))
    done = sidecars("compare", ROOT / "figures", fresh)
    assert done.returncode == 1 and "condensation.json: differs" in done.stderr
    assert "threshold" in done.stderr
