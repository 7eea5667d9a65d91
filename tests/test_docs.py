"""Pages of docs/ that hold code or are generated: they run, and they are current."""

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).parents[1] / "docs"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def blocks(page: Path) -> list[tuple[str, str | None]]:
    """(python source, the ```text block right after it or None), in page order."""
    found = BLOCK.findall(page.read_text())
    pairs = []
    for k, (kind, text) in enumerate(found):
        if kind == "python":
            after = found[k + 1] if k + 1 < len(found) else ("", "")
            pairs.append((text, after[1] if after[0] == "text" else None))
    return pairs


def test_the_python_walk_through_runs_as_written(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    steps = blocks(DOCS / "python.md")
    assert len(steps) >= 6
    for source, shown in steps:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(source, "docs/python.md", "exec"), namespace)  # noqa: S102
        if shown is not None:
            assert printed.getvalue() == shown, source
    assert (tmp_path / "results" / "walkthrough.nc").is_file()
    assert (tmp_path / "walkthrough.png").stat().st_size > 1000


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    readme = (DOCS.parent / "README.md").read_text()
    section = readme[readme.index("## From Python"):]
    source = BLOCK.search(section).group(2)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "demo.yaml").write_text((DOCS.parent / "configs" / "demo.yaml")
                                                    .read_text())
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(source, "README.md", "exec"), {})  # noqa: S102
    assert printed.getvalue().startswith("Cost(work ")
    assert (tmp_path / "results" / "demo-2seeds.nc").is_file()
    assert (tmp_path / "demo-2seeds.png").is_file()
